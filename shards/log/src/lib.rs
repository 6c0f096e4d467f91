//! Partition log storage for Sluice.
//!
//! One [`Log`] per partition, in `<data_dir>/<topic>-<partition>/`, made of
//! segments `<base offset, 20 digits>.log` holding record batches v2 exactly
//! as Kafka stores them, with Kafka's `.index`/`.timeindex` next to each. All file I/O runs on
//! the owning shard's thread through the page cache (`file_io.rs`: `pwrite`s, `preadv2`
//! without blocking, io_uring reads for what the page cache misses); the log is shared
//! between that shard's tasks as `Rc<Log>`. See README.md for the layout and
//! the recovery rules.

// Unsafe code only in `file_io.rs` and `page_cache.rs`: the system calls glommio does not
// offer.
#![deny(unsafe_code)]

mod batch;
mod checkpoint;
mod cleaner;
mod clock;
mod config;
mod error;
mod fetch_stamp;
#[allow(unsafe_code)]
mod file_io;
mod index;
mod leader_epoch;
mod loader;
mod log;
#[allow(unsafe_code)]
pub mod page_cache;
mod retention;
mod segment;
mod tail_cache;
mod waiters;

pub use cleaner::{CleanerConfig, CleanerStats, LogCleaner, LogToClean};
pub use clock::{Clock, SystemClock};
pub use config::{
    LogConfig, TimestampType, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_SEGMENT_INDEX_BYTES, SEVEN_DAYS_MS,
};
pub use error::LogError;
pub use fetch_stamp::{FetchStamp, QuietMark};
pub use file_io::copies as io_copies;
pub use leader_epoch::{
    EpochEntry, InvalidEpochEntry, LeaderEpochCheckpointFile, LeaderEpochFileCache,
    LEADER_EPOCH_CHECKPOINT_FILE, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET,
};
pub use log::{
    remove_deleted_dirs, AppendBatches, FetchDataInfo, Log, LogAppendInfo, Records,
    CLEANER_OFFSET_CHECKPOINT_FILE, DELETE_DIR_SUFFIX,
};

#[cfg(any(test, feature = "test-support"))]
#[allow(unsafe_code)]
pub mod test_dirs;
#[cfg(test)]
mod tests;
