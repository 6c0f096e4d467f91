//! Errors of the log.

use std::path::PathBuf;

/// Everything that can go wrong in a partition log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("offset {offset} out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("invalid record batch at byte {position} of the append: {reason}")]
    InvalidBatch { position: usize, reason: String },
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    RecordBatchTooLarge { size: usize, max: u32 },
    #[error("timestamp {timestamp} of a record batch is out of range: it should be within [{low}, {high}]")]
    InvalidTimestamp { timestamp: i64, low: i64, high: i64 },
    #[error("append of {size} bytes does not fit a segment")]
    AppendTooLarge { size: usize },
    /// A write failed earlier; the log refuses appends so that the hole the
    /// failed write left is never followed by acknowledged data.
    #[error("log {0} failed after a write error; it must be reopened")]
    Failed(PathBuf),
    #[error("log {0} is closed")]
    Closed(PathBuf),
    /// A follower append whose first offset is below the log end offset (Kafka's
    /// `UnexpectedAppendOffsetException`): the batches overlap what the log already holds.
    #[error("unexpected append offset: first offset {got} is below the log end offset {expected}")]
    UnexpectedAppendOffset { expected: i64, got: i64 },
    /// A leader epoch entry the epoch cache refuses (a negative epoch or offset).
    #[error(transparent)]
    InvalidEpochEntry(#[from] crate::leader_epoch::InvalidEpochEntry),
    #[error("corrupt log data in {path} at byte {position}: {reason}")]
    Corrupt {
        path: PathBuf,
        position: u64,
        reason: String,
    },
}

impl LogError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: impl Into<std::io::Error>) -> Self {
        Self::Io {
            path: path.into(),
            source: source.into(),
        }
    }
}
