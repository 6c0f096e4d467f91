use sluice_log::LogError;

use crate::producer_state::ProducerStateError;

/// Why a partition operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// This shard hosts no such partition.
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The requested offset is outside the log.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        /// What was asked.
        offset: i64,
        /// First offset in the log.
        log_start_offset: i64,
        /// Next offset to be written.
        log_end_offset: i64,
    },
    /// A batch's timestamp lies outside `message.timestamp.before.max.ms` /
    /// `message.timestamp.after.max.ms` of the broker's time (CreateTime topics).
    #[error(transparent)]
    InvalidTimestamp(LogError),
    /// The log failed (disk error); the partition is unusable until restart.
    #[error("storage error: {0}")]
    Storage(LogError),
    /// An idempotent producer's batch was refused (stale epoch, sequence gap, bad sequence).
    #[error(transparent)]
    Producer(#[from] ProducerStateError),
    /// This broker does not lead the partition (or not yet: its role is being applied).
    #[error("not the leader of this partition")]
    NotLeaderOrFollower,
    /// A replication rule refused the request (leader epoch, min.insync.replicas, a fetch
    /// from a replica that is not one).
    #[error(transparent)]
    Replication(#[from] crate::replication::ReplicationError),
    /// acks=all: the records were appended, but the ISR shrank below min.insync.replicas
    /// before they were replicated.
    #[error("the ISR shrank below min.insync.replicas after the append")]
    NotEnoughReplicasAfterAppend,
    /// acks=all: the in-sync replicas did not all have the records within the request's
    /// timeout.
    #[error("the in-sync replicas did not replicate the records in time")]
    RequestTimedOut,
    /// The leader-epoch cache refused an epoch (it would go back in history).
    #[error("invalid leader epoch: {0}")]
    InvalidEpoch(String),
    /// A retried batch matched a first attempt that was still being written, and that write
    /// failed (the log stopped): the retry is not acknowledged.
    #[error("the first attempt of this retried batch failed")]
    DuplicateOfFailedAppend,
}

impl From<LogError> for ReplicaError {
    fn from(error: LogError) -> Self {
        match error {
            LogError::InvalidTimestamp { .. } => ReplicaError::InvalidTimestamp(error),
            other => ReplicaError::Storage(other),
        }
    }
}
