//! The replication core of issue 16, sans-IO and not wired into `Partition` yet: what a
//! partition's leader and its followers decide, as Apache Kafka 4.4's `Partition` (high
//! watermark, ISR expand/shrink, min.insync.replicas), `Replica` (a follower's fetch state as
//! the leader sees it) and `AbstractFetcherThread` (truncation on a diverging epoch, KIP-101 /
//! KIP-279 / KIP-320) decide it.
//!
//! Nothing here does I/O, takes a lock or reads a clock: callers pass the log's offsets, its
//! `LeaderEpochFileCache` and `now_ms`, and get back decisions (records to read from, an offset
//! to truncate to, an `AlterPartition` request to send, a produce's outcome). The seeded
//! simulation (`sim.rs`, tests only) drives three replicas of an in-memory log (`mem_log.rs`)
//! through crashes, restarts, network partitions and quick leader changes with these rules.
//!
//! Not modelled yet (stated so nobody relies on it): eligible leader replicas (KIP-966 ELR),
//! fetch from follower, reassignment (adding/removing replicas), remote storage, and the log
//! start offset moving under the follower (retention); the simulation never deletes records.

mod follower;
mod leader;
#[cfg(test)]
mod mem_log;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;

pub use follower::{
    follower_high_watermark, offset_truncation_state, out_of_range_truncation, FetchRequest,
    OffsetTruncationState, OutOfRangeTruncation,
};
pub use leader::{
    AlterPartitionError, AlterPartitionRequest, FetchPosition, FollowerFetch, LeaderState,
    ProduceDecision, ReplicaState, ReplicationConfig, UNKNOWN_OFFSET,
};

use sluice_protocol::ErrorCode;

/// A broker (replica) id.
pub type BrokerId = i32;

/// What the controller says about a partition (Kafka's `PartitionRegistration`, the fields
/// replication needs): who leads in which epoch, the replicas and the in-sync set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionRegistration {
    /// The leader, `None` when no in-sync replica is alive (Kafka's `-1`).
    pub leader: Option<BrokerId>,
    /// Bumped at every leader election.
    pub leader_epoch: i32,
    /// Bumped at every change of the registration (ISR, leader).
    pub partition_epoch: i32,
    /// The assigned replicas.
    pub replicas: Vec<BrokerId>,
    /// The in-sync replicas.
    pub isr: Vec<BrokerId>,
}

/// Kafka's `EpochEndOffset` as Fetch v12+ returns it in `DivergingEpoch`: where the leader's
/// history of `epoch` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// The largest epoch ≤ the follower's last fetched epoch the leader knows.
    pub epoch: i32,
    /// Where that epoch ends on the leader.
    pub end_offset: i64,
}

/// Why a replication step was refused; `error_code` is what the broker answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationError {
    /// The request's leader epoch is older than this replica's (the sender is behind).
    #[error("leader epoch {request} is older than the current {current}")]
    FencedLeaderEpoch {
        /// The epoch in the request.
        request: i32,
        /// This replica's epoch.
        current: i32,
    },
    /// The request's leader epoch is newer than this replica's (this replica is behind).
    #[error("leader epoch {request} is newer than the current {current}")]
    UnknownLeaderEpoch {
        /// The epoch in the request.
        request: i32,
        /// This replica's epoch.
        current: i32,
    },
    /// This broker does not lead the partition, the fetcher is not one of its replicas, or the
    /// fetcher's broker epoch is stale (Kafka answers all three with NOT_LEADER_OR_FOLLOWER).
    #[error("not the leader, or not a replica of the partition: {0}")]
    NotLeaderOrFollower(&'static str),
    /// The fetch offset is outside the leader's log, or the end of the follower's last
    /// fetched epoch is unknown to the leader.
    #[error("fetch offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// The fetch offset.
        offset: i64,
        /// The leader's log start offset.
        log_start_offset: i64,
        /// The leader's log end offset.
        log_end_offset: i64,
    },
    /// acks=all with fewer in-sync replicas than `min.insync.replicas`: nothing is appended.
    #[error("the ISR has {isr} replicas, fewer than min.insync.replicas {min_insync_replicas}")]
    NotEnoughReplicas {
        /// The ISR size.
        isr: usize,
        /// The topic's `min.insync.replicas`.
        min_insync_replicas: usize,
    },
}

impl ReplicationError {
    /// The Kafka error code for a response.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::FencedLeaderEpoch { .. } => ErrorCode::FENCED_LEADER_EPOCH,
            Self::UnknownLeaderEpoch { .. } => ErrorCode::UNKNOWN_LEADER_EPOCH,
            Self::NotLeaderOrFollower(_) => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            Self::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            Self::NotEnoughReplicas { .. } => ErrorCode::NOT_ENOUGH_REPLICAS,
        }
    }
}
