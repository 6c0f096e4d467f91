//! Partitions hosted on one shard, and the shard's `ReplicaManager`.
//!
//! A `Partition` wraps the partition's log with what replication needs around it: the leader
//! epoch, the high watermark (today: the log's readable end, as the leader is the only replica),
//! and a way to wait for appends. Everything here lives on the shard that owns the partition and
//! is never touched by another thread: other shards reach it through shard messages.

#![forbid(unsafe_code)]

mod error;
mod partition;
pub mod producer_state;
mod replica_manager;
pub mod replication;
mod snapshot;
mod topic_config;

pub use error::ReplicaError;
pub use partition::{
    ActiveProducer, FetchPartitionData, FollowerFetchRequest, FollowerFetchResult,
    FollowerFetchState, OffsetAndTimestamp, Partition, PartitionLogDirInfo, ReadReplicaView, Role,
};
pub use producer_state::{
    ProducerStateEntry, ProducerStateError, ProducerStateManager, DEFAULT_PRODUCER_ID_EXPIRATION_MS,
};
pub use replica_manager::ReplicaManager;
pub use sluice_log::{LogAppendInfo, LogConfig};
pub use topic_config::log_config_with_overrides;

use sluice_protocol::codec::Uuid;

/// A partition, identified the way the broker routes it: by topic id, not name, so that a
/// topic deleted and re-created under the same name is never confused with the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicIdPartition {
    /// The topic's id.
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
}
