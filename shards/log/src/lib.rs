//! Partition log storage for Sluice.
//!
//! One [`Log`] per partition, in `<data_dir>/<topic>-<partition>/`, made of
//! segments `<base offset, 20 digits>.log` holding record batches v2 exactly
//! as Kafka stores them. All file I/O goes through glommio's `BufferedFile`
//! (io_uring, page cache) on the owning shard's executor; the log is shared
//! between that shard's tasks as `Rc<Log>`. See README.md for the layout and
//! the recovery rules.

mod batch;
mod config;
mod error;
mod file_io;
mod index;
mod loader;
mod log;
mod segment;
mod tail_cache;
mod waiters;

pub use config::{LogConfig, DEFAULT_MAX_MESSAGE_BYTES};
pub use error::LogError;
pub use log::{FetchDataInfo, Log, LogAppendInfo};

#[cfg(test)]
mod tests;
