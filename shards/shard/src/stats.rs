//! What a data shard reports when the metrics endpoint scrapes it (`ShardMessage::Stats`): the
//! figures that change shape with topics, partitions and groups, gathered on the shard's own
//! thread at scrape time rather than kept as shared atomics per topic. One snapshot per shard
//! per scrape; nothing here is touched per record.

/// One shard's figures at scrape time.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ShardStats {
    /// Every partition this shard hosts.
    pub partitions: Vec<PartitionStats>,
    /// Traffic counted on this shard since start, per topic (topics deleted since are dropped).
    pub topics: Vec<TopicTraffic>,
    /// The committed offsets of the groups this shard coordinates.
    pub group_offsets: Vec<GroupOffset>,
    /// Partitions of the whole cluster with no leader in this shard's metadata image (Kafka's
    /// OfflinePartitionsCount; every shard holds the same image).
    pub offline_partitions: u64,
    /// What the shard's page-cache window and file worker did since start (counts kept on the
    /// shard's thread, read at scrape time).
    pub page_cache: sluice_log::page_cache::WindowStats,
}

/// One hosted partition.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionStats {
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// Bytes of all its segments (Kafka's `kafka.log:type=Log,name=Size`).
    pub size_bytes: u64,
    /// First offset still in the log.
    pub log_start_offset: i64,
    /// Next offset to be assigned.
    pub log_end_offset: i64,
    /// The high watermark: what consumers can read (lag is measured against it).
    pub high_watermark: i64,
    /// This broker leads it.
    pub leader: bool,
    /// Led here with fewer in-sync replicas than replicas (Kafka's UnderReplicatedPartitions,
    /// counted by the leader). Never true until replication lands: with one replica the ISR is
    /// the replica set.
    pub under_replicated: bool,
}

/// Counters of one topic on one shard. Bytes in and messages in are counted by the shard that
/// appends (the partition's owner, as Kafka counts at the leader's append); bytes out by the
/// shard that answers the Fetch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TopicTraffic {
    /// Topic name.
    pub topic: String,
    /// Record-batch bytes appended.
    pub bytes_in: u64,
    /// Records appended (offsets assigned).
    pub messages_in: u64,
    /// Record-batch bytes returned to consumers.
    pub bytes_out: u64,
    /// Produce requests' partitions appended (Kafka's TotalProduceRequestsPerSec counts per
    /// topic and request; here per partition append).
    pub produce_appends: u64,
    /// Fetch responses' partitions returned.
    pub fetch_partitions: u64,
}

/// A group's committed offset for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOffset {
    /// Group id.
    pub group: String,
    /// Topic name.
    pub topic: String,
    /// Partition index.
    pub partition: i32,
    /// The committed offset.
    pub offset: i64,
}
