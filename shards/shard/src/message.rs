//! The closed sets of messages executors send each other, one enum per receiver: a
//! [`ShardMessage`] goes only to a data shard, a [`ControllerMessage`] only to the controller
//! executor (the mesh carries each on its own channels, so a wrong pairing does not compile).
//! Each variant carries its own typed reply channel, so a reply can never be of the wrong kind.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_channel::oneshot;
use sluice_protocol::codec::Uuid;
use sluice_protocol::MemoryRecords;
use sluice_replica::{
    FetchPartitionData, LogAppendInfo, OffsetAndTimestamp, ReplicaError, TopicIdPartition,
};

use crate::MetadataImage;
use crate::{AlterConfigsWork, DeleteRecordsWork, DescribeLogDirsWork, DescribeProducersWork};

/// Where a reply goes back.
pub type Reply<T> = oneshot::Sender<T>;

/// A message only a data shard receives: work on the partitions it owns, its group
/// coordinator's work, connections handed over, metadata images and metrics scrapes.
pub enum ShardMessage {
    /// Append batches to partitions this shard owns.
    Produce(ProduceWork),
    /// Read from partitions this shard owns.
    Fetch(FetchWork),
    /// Resolve once any listed partition has data past the given offset, or at the deadline.
    WaitForAppend(WaitForAppendWork),
    /// Look offsets up by timestamp (or earliest/latest/max-timestamp).
    ListOffsets(ListOffsetsWork),
    /// Move partitions' log start offsets up (DeleteRecords).
    DeleteRecords(DeleteRecordsWork),
    /// Report partitions' log sizes (DescribeLogDirs).
    DescribeLogDirs(DescribeLogDirsWork),
    /// Report partitions' active producers (DescribeProducers).
    DescribeProducers(DescribeProducersWork),
    /// Work for the group coordinator of this shard.
    Group(crate::GroupWork),
    /// Serve this client connection from now on (its group's coordinator is here).
    AdoptConnection(ConnectionHandoff),
    /// Take this image, open the partitions it assigns here and drop the ones it no longer
    /// does; reply when done (sent by the broker agent on the controller executor).
    ApplyMetadata {
        /// The new image.
        image: Arc<MetadataImage>,
        /// Done.
        reply: Reply<()>,
    },
    /// Report partitions, per-topic traffic and committed group offsets for a metrics scrape
    /// (sent by the metrics endpoint on the controller executor).
    Stats {
        /// The snapshot.
        reply: Reply<crate::ShardStats>,
    },
}

/// A message only the controller executor receives: admin changes and questions the broker
/// agent forwards to the active controller.
pub enum ControllerMessage {
    /// Create topics.
    CreateTopics(CreateTopicsWork),
    /// Delete topics.
    DeleteTopics(DeleteTopicsWork),
    /// Add partitions to topics.
    CreatePartitions(CreatePartitionsWork),
    /// Allocate a block of producer ids for the sending shard.
    AllocateProducerIds(crate::AllocateProducerIdsWork),
    /// Alter topic configs.
    AlterConfigs(AlterConfigsWork),
    /// Describe the controller quorum (DescribeQuorum).
    DescribeQuorum(crate::DescribeQuorumWork),
    /// Change finalized feature levels (UpdateFeatures).
    UpdateFeatures(crate::UpdateFeaturesWork),
    /// Change a partition's ISR (AlterPartition), from the shard that leads it.
    AlterPartition(crate::AlterPartitionWork),
    /// Elect preferred or unclean leaders (ElectLeaders).
    ElectLeaders(crate::ElectLeadersWork),
    /// Start or cancel partition reassignments (AlterPartitionReassignments).
    AlterPartitionReassignments(crate::AlterReassignmentsWork),
    /// List partition reassignments in progress (ListPartitionReassignments).
    ListPartitionReassignments(crate::ListReassignmentsWork),
    /// Alter dynamic broker configs (the replication throttle rates).
    AlterBrokerConfigs(crate::AlterBrokerConfigsWork),
}

/// A client connection moved between shards at a request boundary: nothing of it is in flight,
/// every request before `buffered` has been answered, and `buffered` starts with a whole frame.
pub struct ConnectionHandoff {
    /// The socket; closed if the message is dropped (the client reconnects).
    pub socket: std::os::fd::OwnedFd,
    /// Bytes read from the socket and not yet handled, starting at a frame's size prefix.
    pub buffered: Bytes,
    /// Handed over right after the accept, before any request (placement, round-robin): the
    /// new shard serves it as one it accepted, so it may still follow its group later.
    pub placed: bool,
}

/// Validated batches for partitions of one shard.
pub struct ProduceWork {
    /// One entry per partition.
    pub partitions: Vec<ProducePartition>,
    /// Results in the same order.
    pub reply: Reply<Vec<Result<LogAppendInfo, ReplicaError>>>,
}

/// One partition of a produce.
#[derive(Clone, Debug)]
pub struct ProducePartition {
    /// The partition.
    pub tp: TopicIdPartition,
    /// The batches: the request frame's own bytes, which the log writes and caches without a
    /// copy when they are `Owned` (see [`MemoryRecords`]).
    pub records: MemoryRecords,
    /// The request's `acks`: -1 waits until the in-sync replicas have the records.
    pub required_acks: i16,
    /// The request's `timeout_ms`: how long acks=-1 waits for the in-sync replicas.
    pub timeout_ms: i32,
}

/// One partition of a fetch.
#[derive(Clone, Debug)]
pub struct FetchPartitionRequest {
    /// The partition.
    pub tp: TopicIdPartition,
    /// First offset wanted.
    pub fetch_offset: i64,
    /// Partition byte limit.
    pub max_bytes: usize,
    /// Return at least one whole batch even when larger than `max_bytes`.
    pub min_one_message: bool,
    /// The leader epoch the fetcher believes current (-1: it did not say).
    pub current_leader_epoch: i32,
    /// A follower's fetch (Kafka's `ReplicaState`), `None` for a consumer.
    pub replica: Option<ReplicaFetch>,
    /// Kafka's `FetchParams.fetchOnlyLeader`: a follower's fetch, or a consumer's without
    /// client metadata (before v11). Otherwise a follower serves the read too (KIP-392).
    pub fetch_only_leader: bool,
    /// KIP-392, on the leader: the replicas in the consumer's rack (`client.rack`), of which the
    /// leader may name the most caught-up as the preferred read replica instead of reading.
    /// Empty (no allocation) when the consumer has no rack, the leader is in it, or no
    /// `replica.selector.class` is set.
    pub read_replica_candidates: Vec<i32>,
}

/// What a follower's fetch adds to a partition's read: who it is and what its log holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaFetch {
    /// The follower's broker id.
    pub replica_id: i32,
    /// The follower's broker epoch (KIP-903; -1 when not sent).
    pub broker_epoch: i64,
    /// The epoch of the follower's last record, `None` when it has none (or before v12).
    pub last_fetched_epoch: Option<i32>,
    /// The follower's log start offset.
    pub log_start_offset: i64,
}

/// What a long-polling fetch waits for on a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// A consumer: the high watermark passes this offset.
    HighWatermarkBeyond(i64),
    /// A follower: the leader's log end passes this offset.
    LogEndBeyond(i64),
}

/// Reads for partitions of one shard.
pub struct FetchWork {
    /// The partitions, in response order.
    pub partitions: Vec<FetchPartitionRequest>,
    /// Results in the same order.
    pub reply: Reply<Vec<Result<FetchPartitionData, ReplicaError>>>,
}

/// A fetch waiting for data.
pub struct WaitForAppendWork {
    /// Partitions and what each one's fetch waits for.
    pub partitions: Vec<(TopicIdPartition, WaitFor)>,
    /// Give up at this time.
    pub deadline: Instant,
    /// Fired on the first append (or the deadline).
    pub reply: Reply<()>,
}

/// ListOffsets for partitions of one shard.
pub struct ListOffsetsWork {
    /// Partitions and the timestamp asked (-1 latest, -2 earliest, -3 max timestamp).
    pub partitions: Vec<(TopicIdPartition, i64)>,
    /// Results in the same order.
    pub reply: Reply<Vec<Result<Option<OffsetAndTimestamp>, ReplicaError>>>,
}

/// A topic to create.
#[derive(Clone, Debug)]
pub struct NewTopic {
    /// Name.
    pub name: String,
    /// Partitions (already resolved from -1 to the default).
    pub num_partitions: i32,
    /// Replication factor (already resolved from -1 to the default).
    pub replication_factor: i16,
    /// Topic config overrides.
    pub configs: Vec<(String, String)>,
    /// A manual assignment (CreateTopics' `Assignments`): the replicas of each partition, in
    /// partition order; `None` lets the controller place them.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// A created topic.
#[derive(Clone, Debug)]
pub struct CreatedTopic {
    /// Its new id.
    pub topic_id: Uuid,
    /// Partitions.
    pub num_partitions: i32,
    /// Replication factor.
    pub replication_factor: i16,
}

/// Controller work: create topics.
pub struct CreateTopicsWork {
    /// The topics.
    pub topics: Vec<NewTopic>,
    /// Only check, create nothing.
    pub validate_only: bool,
    /// One result per topic, in order.
    pub reply: Reply<Vec<Result<CreatedTopic, MetadataError>>>,
}

/// A topic to grow (CreatePartitions, KIP-195).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewPartitions {
    /// The topic's name.
    pub name: String,
    /// The partition count wanted: the total, not the increase.
    pub count: i32,
    /// The replicas of each new partition, in partition order; `None` lets the controller
    /// place them.
    pub assignments: Option<Vec<Vec<i32>>>,
}

/// Controller work: add partitions to topics.
pub struct CreatePartitionsWork {
    /// The topics.
    pub topics: Vec<NewPartitions>,
    /// Only check, change nothing.
    pub validate_only: bool,
    /// One result per topic, in order.
    pub reply: Reply<Vec<Result<(), MetadataError>>>,
}

/// A topic named by name or by id.
#[derive(Clone, Debug)]
pub enum TopicRef {
    /// By name.
    Name(String),
    /// By id.
    Id(Uuid),
}

/// A deleted topic.
#[derive(Clone, Debug)]
pub struct DeletedTopic {
    /// Its name.
    pub name: String,
    /// Its id.
    pub topic_id: Uuid,
}

/// Controller work: delete topics.
pub struct DeleteTopicsWork {
    /// The topics.
    pub topics: Vec<TopicRef>,
    /// One result per topic, in order.
    pub reply: Reply<Vec<Result<DeletedTopic, MetadataError>>>,
}

/// Why a metadata change was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MetadataError {
    /// The name is taken.
    #[error("topic '{0}' already exists")]
    TopicAlreadyExists(String),
    /// The name breaks Kafka's rules.
    #[error("invalid topic name: {0}")]
    InvalidTopic(String),
    /// Bad partition count.
    #[error("invalid number of partitions: {0}")]
    InvalidPartitions(String),
    /// Bad replication factor.
    #[error("invalid replication factor: {0}")]
    InvalidReplicationFactor(String),
    /// A manual replica assignment Kafka refuses (unknown or repeated brokers, wrong count).
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(String),
    /// Bad topic config.
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// No such topic.
    #[error("unknown topic")]
    UnknownTopicOrPartition,
    /// No topic with that id.
    #[error("unknown topic id")]
    UnknownTopicId,
    /// `delete.topic.enable` is false.
    #[error("topic deletion is disabled")]
    TopicDeletionDisabled,
    /// The metadata log could not be written.
    #[error("metadata storage error: {0}")]
    Storage(String),
    /// The controller is shutting down or unreachable.
    #[error("controller not available")]
    ControllerNotAvailable,
    /// A request Kafka refuses as malformed (duplicate keys, null values, unknown operations).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Another incarnation of this broker id is registered and its session has not expired
    /// (Kafka's DUPLICATE_BROKER_REGISTRATION).
    #[error("broker {0} is already registered by another incarnation")]
    DuplicateBrokerRegistration(i32),
    /// A feature level change Kafka's controller refuses (INVALID_UPDATE_VERSION), with its
    /// whole message.
    #[error("{0}")]
    InvalidUpdateVersion(String),
    /// A heartbeat with an epoch that is not the broker's current registration (Kafka's
    /// STALE_BROKER_EPOCH): the broker must register again.
    #[error("stale broker epoch")]
    StaleBrokerEpoch,
}
