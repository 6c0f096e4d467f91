//! What every shard shares with every other: its identity, the metadata image with the shard
//! table, the closed sets of messages executors send each other (one per receiver), and the
//! meshes that carry them.
//!
//! A *shard* is one glommio executor pinned to a core. It owns a set of partitions and is the
//! only thread that touches their files. Any shard accepts connections and serves any request:
//! work on a partition owned elsewhere travels as a [`ShardMessage`] over a bounded channel, and
//! the reply returns on a oneshot; admin work for the controller executor travels as a
//! [`ControllerMessage`] on channels of its own. No lock guards the data path.

#![forbid(unsafe_code)]

mod alter_partition;
mod config_work;
mod elect_leaders;
mod group_work;
mod image;
mod mesh;
mod message;
mod partition_work;
mod producer_ids;
mod quorum_work;
mod reassignment;
mod signal;
mod stats;
mod watch;

pub use alter_partition::{AlterPartitionItem, AlterPartitionOutcome, AlterPartitionWork};
pub use config_work::{
    check_dynamic_broker_config, AlterBrokerConfigsWork, AlterConfigsWork, BrokerConfigChanges,
    ConfigChange, ConfigOp, TopicConfigChanges, DYNAMIC_BROKER_CONFIGS,
    DYNAMIC_BROKER_CONFIG_DEFAULT, FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE, REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
};
pub use elect_leaders::{
    ElectLeadersWork, ElectionOutcome, ElectionTopic, ELECTION_TYPE_PREFERRED,
    ELECTION_TYPE_UNCLEAN,
};
pub use group_work::{
    CommittedOffsets, DeleteGroupArgs, DescribeGroupArgs, GroupRequest, GroupWork, HeartbeatArgs,
    LeaveGroupArgs, ListGroupsArgs, OffsetDeleteArgs, OffsetFetchArgs, PartitionResults,
    PerItemResults, TopicPartitions,
};
pub use image::{BrokerImage, MetadataImage, PartitionImage, ShardTable, TopicImage};
pub use mesh::{
    ControllerEnvelope, ControllerReceivers, Envelope, MeshBuilders, MeshError, ShardEnvelope,
    ShardMesh, ShardReceivers, ShardSenders,
};
pub use message::{
    ConnectionHandoff, ControllerMessage, CreatePartitionsWork, CreateTopicsWork, CreatedTopic,
    DeleteTopicsWork, DeletedTopic, FetchPartitionRequest, FetchWork, ListOffsetsWork,
    MetadataError, NewPartitions, NewTopic, ProducePartition, ProduceWork, ReplicaFetch, Reply,
    ShardMessage, TopicRef, WaitFor, WaitForAppendWork,
};
pub use partition_work::{DeleteRecordsWork, DescribeLogDirsWork, DescribeProducersWork};
pub use producer_ids::{AllocateProducerIdsWork, ProducerIdBlock, PRODUCER_ID_BLOCK_SIZE};
pub use quorum_work::{
    advertised_features, check_feature_update, default_finalized_features, update_failed_message,
    DescribeQuorumWork, FeatureUpdate, QuorumEndpoint, QuorumInfo, QuorumReplica, SupportedFeature,
    UpdateFeaturesWork, UpgradeType, ELIGIBLE_LEADER_REPLICAS_VERSION,
    ELIGIBLE_LEADER_REPLICAS_VERSION_LEVEL, METADATA_VERSION, METADATA_VERSION_LEVEL,
    SUPPORTED_FEATURES,
};
pub use reassignment::{
    AlterReassignmentsWork, ListReassignmentsWork, OngoingReassignment, ReassignmentOutcome,
    ReassignmentQuery, ReassignmentTarget, ReassignmentTopic,
};
pub use signal::LocalSignal;
pub use stats::{GroupOffset, PartitionStats, ShardStats, TopicTraffic};
pub use watch::{LocalWatch, WaitBeyond};

/// Index of a shard (an executor) in this process. The controller executor, when it runs here,
/// is stamped as the index after the last data shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u16);

impl ShardId {
    /// As an index into per-shard arrays.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard-{}", self.0)
    }
}
