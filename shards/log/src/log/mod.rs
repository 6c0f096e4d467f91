//! `Log`: one partition's log, owned by one shard.
//!
//! Concurrency model: the log lives on a single-threaded glommio executor and
//! is shared by that shard's tasks as `Rc<Log>`. Every append reserves its
//! offsets and file position synchronously, in call order; the writes then
//! complete in any order, and the readable end only advances over the
//! contiguous prefix of completed writes (the in-flight queue). A write error
//! fails the log, so the hole it leaves is never followed by acknowledged
//! data. No `RefCell` borrow is held across an `.await`.
//!
//! The `impl Log` is split by concern, one child module each: `append` (reserve, roll,
//! write task, completion), `read` (reads, tail cache hits, segment scans, waiting for
//! appends), `timestamps` (offset-for-timestamp lookups), `log_start` (retention rounds and
//! DeleteRecords: moving the log start offset and deleting the segments below it), `flush`
//! (flush policy, fdatasync, recovery point) and `checkpoints` (the `recovery-point` and
//! `log-start-offset` files), `epochs` (the leader epoch cache and its checkpoint),
//! `high_watermark` (the high watermark and its waiters) and `truncate` (replication's
//! truncations: `truncate_to`, `truncate_fully_and_start_at`). This file holds the state,
//! open/close and the accessors.

mod append;
mod checkpoints;
mod clean;
mod epochs;
mod flush;
mod high_watermark;
mod log_start;
mod read;
mod timestamps;
mod truncate;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::task::Waker;

use bytes::Bytes;
use glommio::sync::Semaphore;
use sluice_protocol::FileRegion;
use tracing::error;

use crate::batch::parse_header;
use crate::checkpoint::{new_writer_id, read_checkpoint_bytes};
use crate::clock::{Clock, SystemClock};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::fetch_stamp::FetchStamp;
use crate::leader_epoch::{LeaderEpochCheckpointFile, LeaderEpochFileCache};
use crate::loader::{write_clean_shutdown_marker, LoadStats, LogLoader};
use crate::segment::LogSegment;
use crate::tail_cache::TailCache;
use crate::waiters::Waiters;

pub use append::AppendBatches;
pub use clean::CLEANER_OFFSET_CHECKPOINT_FILE;
pub(crate) use clean::{segment_paths, DELETED_SUFFIX, SWAP_SUFFIX};

/// Result of an append, as Kafka's `LogAppendInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// The broker time the batches were stamped with (LogAppendTime), else -1.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub bytes: usize,
}

/// Record data read for a response: bytes in memory, a region of a segment file the page
/// cache holds, or pieces of the tail cache, to be sent without a copy (see
/// [`Log::read_for_send`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Records {
    /// Whole batches in memory.
    Memory(Bytes),
    /// Whole batches in a segment file.
    File(FileRegion),
    /// Whole batches in memory in more than one piece, to be sent back to back: a read of the
    /// tail cache spanning appends, each piece an append's own bytes.
    Pieces(Vec<Bytes>),
}

impl Records {
    /// Bytes of record data.
    pub fn len(&self) -> usize {
        match self {
            Records::Memory(b) => b.len(),
            Records::File(f) => f.len(),
            Records::Pieces(pieces) => pieces.iter().map(Bytes::len).sum(),
        }
    }

    /// True when there is no record data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for Records {
    fn default() -> Records {
        Records::Memory(Bytes::new())
    }
}

impl From<Bytes> for Records {
    fn from(bytes: Bytes) -> Records {
        Records::Memory(bytes)
    }
}

/// Result of a read, as Kafka's `FetchDataInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDataInfo {
    /// Whole batches, concatenated, as stored.
    pub records: Bytes,
    /// Base offset of the first batch in `records`, if any.
    pub first_batch_offset: Option<i64>,
}

impl FetchDataInfo {
    fn new(records: Bytes) -> Self {
        let first_batch_offset = parse_header(&records).ok().map(|h| h.base_offset);
        Self {
            records,
            first_batch_offset,
        }
    }
}

/// A point in the log: an offset and the file position where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogPosition {
    offset: i64,
    segment_base: i64,
    position: u64,
}

/// An append whose bytes are reserved but maybe not written yet.
struct InFlight {
    end: LogPosition,
    done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Open,
    /// `close` is flushing: no new appends.
    Closing,
    Closed,
    Failed,
    Deleted,
}

struct LogState {
    segments: BTreeMap<i64, Rc<LogSegment>>,
    log_start_offset: i64,
    /// Next offset to assign (includes reserved, unwritten appends).
    log_end_offset: i64,
    /// End of the written prefix; reads stop here.
    readable_end: LogPosition,
    /// Offsets below are fdatasync'ed.
    recovery_point: i64,
    in_flight: VecDeque<InFlight>,
    /// Sequence number of `in_flight[0]`.
    in_flight_front_seq: u64,
    status: Status,
    tail_cache: TailCache,
    flush_timer_armed: bool,
    /// Offsets below are committed (replicated to the ISR); consumers read below it. Kept in
    /// [log start, readable end]; moves down only through truncation.
    high_watermark: i64,
    /// A truncation is running: appends (and other truncations, DeleteRecords, retention)
    /// wait for it.
    truncating: bool,
    /// How many truncations changed the log: a wait that began before one re-checks what it
    /// waited for (the offsets it expected may be gone).
    truncations: u64,
}

/// A partition log: segments of record batches v2 in `<dir>/`.
pub struct Log {
    me: Weak<Log>,
    dir: PathBuf,
    /// Replaced at run time by [`Log::update_config`]; read (never borrowed across an await)
    /// at the start of each append, roll check, read scan, flush-policy check and retention run.
    config: RefCell<LogConfig>,
    clock: Rc<dyn Clock>,
    state: RefCell<LogState>,
    pub(crate) waiters: RefCell<Waiters>,
    /// Tasks waiting for the high watermark to move up.
    hw_waiters: RefCell<Waiters>,
    /// Tasks waiting for a running truncation to end.
    truncation_waiters: RefCell<Vec<Waker>>,
    /// Kafka's `LeaderEpochFileCache`: leader epoch -> its first offset. Never borrowed across
    /// an `.await`.
    epoch_cache: RefCell<LeaderEpochFileCache>,
    epoch_checkpoint: LeaderEpochCheckpointFile,
    /// Bumped whenever `epoch_cache` changes; the version the checkpoint file holds.
    epoch_cache_version: Cell<u64>,
    epoch_checkpointed_version: Cell<u64>,
    /// Serializes checkpoint file writes (one temp file per checkpoint).
    checkpoint_lock: Semaphore,
    checkpoint_writer: u64,
    /// Values the checkpoint files hold, so unchanged ones are not rewritten.
    checkpointed_recovery_point: Cell<Option<i64>>,
    checkpointed_log_start_offset: Cell<Option<i64>>,
    #[cfg_attr(not(test), allow(dead_code))]
    load_stats: LoadStats,
    /// The cleaner's first dirty offset (`cleaner-offset-checkpoint`); `None`: the log start.
    first_dirty_offset: Cell<Option<i64>>,
    /// The earliest delete horizon the last clean left on a batch: once passed, the log is
    /// cleaned again to remove its tombstones.
    next_delete_horizon_ms: Cell<Option<i64>>,
    /// Moves with the high watermark, the log start offset and the status (and, through
    /// [`Log::fetch_stamp`], the partition's role): what a caught-up consumer's answer depends on.
    fetch_stamp: FetchStamp,
}

impl Log {
    /// Opens or creates the log in `dir`, recovering it: every batch after
    /// the recovery point is checked (length, magic, CRC); a torn or corrupt
    /// tail is truncated away (one warning says how many bytes were cut).
    pub async fn open(dir: PathBuf, config: LogConfig) -> Result<Rc<Log>, LogError> {
        Self::open_with_clock(dir, config, Rc::new(SystemClock)).await
    }

    /// [`Log::open`] with the clock used for time-based roll (tests fix it).
    pub async fn open_with_clock(
        dir: PathBuf,
        config: LogConfig,
        clock: Rc<dyn Clock>,
    ) -> Result<Rc<Log>, LogError> {
        let loaded = LogLoader::new(&dir, &config, clock.now_ms()).load().await?;
        let (&last_base, last) = loaded
            .segments
            .last_key_value()
            .ok_or_else(|| LogError::io(&dir, std::io::Error::other("no segment")))?;
        let end = LogPosition {
            offset: loaded.log_end_offset,
            segment_base: last_base,
            position: last.size.get(),
        };
        let epoch_checkpoint = LeaderEpochCheckpointFile::new(&dir);
        let on_disk = epoch_checkpoint.read().await?;
        let epoch_cache = recovered_epoch_cache(
            &on_disk,
            &loaded.scanned_epochs,
            loaded.log_start_offset,
            loaded.log_end_offset,
        )?;
        let epoch_cache_version = u64::from(epoch_cache != on_disk);
        let first_dirty_offset = read_checkpoint_bytes(&dir, CLEANER_OFFSET_CHECKPOINT_FILE, 4096)
            .await?
            .and_then(|b| clean::parse_cleaner_checkpoint(&b));
        let state = LogState {
            segments: loaded.segments,
            log_start_offset: loaded.log_start_offset,
            log_end_offset: end.offset,
            readable_end: end,
            recovery_point: loaded.recovery_point,
            in_flight: VecDeque::with_capacity(64),
            in_flight_front_seq: 0,
            status: Status::Open,
            tail_cache: TailCache::new(config.tail_cache_bytes),
            flush_timer_armed: false,
            high_watermark: loaded.log_start_offset,
            truncating: false,
            truncations: 0,
        };
        let log = Rc::new_cyclic(|me| Log {
            me: me.clone(),
            dir,
            config: RefCell::new(config),
            clock,
            state: RefCell::new(state),
            waiters: RefCell::new(Waiters::default()),
            hw_waiters: RefCell::new(Waiters::default()),
            truncation_waiters: RefCell::new(Vec::new()),
            epoch_cache: RefCell::new(epoch_cache),
            epoch_checkpoint,
            epoch_cache_version: Cell::new(epoch_cache_version),
            epoch_checkpointed_version: Cell::new(0),
            checkpoint_lock: Semaphore::new(1),
            checkpoint_writer: new_writer_id(),
            checkpointed_recovery_point: Cell::new(loaded.checkpointed_recovery_point),
            checkpointed_log_start_offset: Cell::new(loaded.checkpointed_log_start_offset),
            load_stats: loaded.stats,
            first_dirty_offset: Cell::new(first_dirty_offset),
            next_delete_horizon_ms: Cell::new(None),
            fetch_stamp: FetchStamp::default(),
        });
        log.checkpoint_log_start_offset().await?;
        log.checkpoint_recovery_point().await?;
        log.checkpoint_epoch_cache().await?;
        Ok(log)
    }

    /// What the loader did at open (tests).
    #[cfg(test)]
    pub(crate) fn load_stats(&self) -> LoadStats {
        self.load_stats
    }

    /// The segment with this base offset (tests).
    #[cfg(test)]
    pub(crate) fn segment(&self, base: i64) -> Option<Rc<LogSegment>> {
        self.state.borrow().segments.get(&base).cloned()
    }

    /// The tail cache's byte limit (tests).
    #[cfg(test)]
    pub(crate) fn tail_cache_limit(&self) -> usize {
        self.state.borrow().tail_cache.limit()
    }

    /// Base offsets of the segments, oldest first (tests).
    #[cfg(test)]
    pub(crate) fn segment_bases(&self) -> Vec<i64> {
        self.state.borrow().segments.keys().copied().collect()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The settings in force (a copy).
    pub fn config(&self) -> LogConfig {
        self.config.borrow().clone()
    }

    /// Replaces the settings at run time (a topic's configs altered), as Kafka's
    /// `updateConfig`: the next append, roll check, flush-policy check and retention run use
    /// the new values; existing segments and their indexes are not rewritten. The tail cache
    /// keeps its own limit (see [`Log::set_tail_cache_bytes`]); `config.tail_cache_bytes` is
    /// ignored. A `flush_ms` timer already armed still fires at its old time.
    pub fn update_config(&self, config: LogConfig) {
        let mut current = self.config.borrow_mut();
        let tail_cache_bytes = current.tail_cache_bytes;
        *current = LogConfig {
            tail_cache_bytes,
            ..config
        };
    }

    pub fn log_start_offset(&self) -> i64 {
        self.state.borrow().log_start_offset
    }

    /// Next offset to assign; includes appends still being written.
    pub fn log_end_offset(&self) -> i64 {
        self.state.borrow().log_end_offset
    }

    /// End of the data whose write has completed; reads never go past it.
    pub fn readable_end_offset(&self) -> i64 {
        self.state.borrow().readable_end.offset
    }

    /// Offsets below this are fdatasync'ed (Kafka's recovery point).
    pub fn recovery_point(&self) -> i64 {
        self.state.borrow().recovery_point
    }

    #[cfg(test)]
    pub(crate) fn is_segment_base(&self, offset: i64) -> bool {
        self.state.borrow().segments.contains_key(&offset)
    }

    /// Number of segments (for tests and metrics).
    pub fn segment_count(&self) -> usize {
        self.state.borrow().segments.len()
    }

    /// Bytes of the log's segments that are written (Kafka's `UnifiedLog.size`, which
    /// DescribeLogDirs and the `kafka.log:type=Log,name=Size` metric report): appends still
    /// being written are not counted yet. No I/O: each segment keeps its size.
    pub fn size_bytes(&self) -> u64 {
        let st = self.state.borrow();
        st.segments.values().map(|s| readable_size(&st, s)).sum()
    }

    /// Sets how many bytes of the newest appends this log keeps in memory (the shard divides
    /// its budget among its partitions, so the bound changes as partitions come and go).
    pub fn set_tail_cache_bytes(&self, bytes: usize) {
        self.state.borrow_mut().tail_cache.set_limit(bytes);
    }

    /// The log's fetch stamp (`fetch_stamp.rs`): the partition bumps it too, when its role or
    /// leader epoch changes.
    pub fn fetch_stamp(&self) -> &FetchStamp {
        &self.fetch_stamp
    }

    /// The error of a log that failed (a write or fsync error): it takes no appends any more,
    /// and a fetch on it must answer with that error instead of waiting on a log that will not
    /// move (a wait on a stopped log resolves at once: a long poll would spin on it).
    pub fn failure(&self) -> Option<LogError> {
        let status = self.state.borrow().status;
        matches!(status, Status::Failed).then(|| self.error_for(status))
    }

    fn stopped(&self) -> bool {
        matches!(
            self.state.borrow().status,
            Status::Failed | Status::Closed | Status::Deleted
        )
    }

    fn stopped_error(&self) -> LogError {
        self.error_for(self.state.borrow().status)
    }

    fn error_for(&self, status: Status) -> LogError {
        match status {
            Status::Failed | Status::Open => LogError::Failed(self.dir.clone()),
            Status::Closing | Status::Closed | Status::Deleted => {
                LogError::Closed(self.dir.clone())
            }
        }
    }

    /// Flushes, refuses further appends, completes the active segment's time
    /// index and writes the clean shutdown marker, so that the next open
    /// loads the index files instead of scanning.
    pub async fn close(&self) -> Result<(), LogError> {
        {
            let mut st = self.state.borrow_mut();
            match st.status {
                Status::Open => {
                    st.status = Status::Closing;
                    self.fetch_stamp.bump();
                }
                Status::Closed => return Ok(()),
                other => return Err(self.error_for(other)),
            }
        }
        self.flush().await?;
        let active = self
            .state
            .borrow()
            .segments
            .last_key_value()
            .map(|(_, s)| s.clone());
        if let Some(active) = active {
            // After the flush above (which wrote every pending entry): only the final one.
            if active.final_time_index_entry() {
                active.sync_index_files().await?;
            }
        }
        self.checkpoint_epoch_cache().await?;
        let end = self.log_end_offset();
        write_clean_shutdown_marker(&self.dir, end).await?;
        self.set_stopped(Status::Closed);
        Ok(())
    }

    /// Removes the partition directory (DeleteTopics, or a reassignment
    /// that moved the replica away). The log refuses appends from now on;
    /// open files are unlinked, not waited for. As Kafka's
    /// `LogManager.asyncDelete`, the directory is first renamed to
    /// `<name>.<unique>-delete` (made durable in its parent): a crash during
    /// the removal leaves a directory [`remove_deleted_dirs`] removes at the
    /// next start, never a partial partition directory that would be loaded
    /// again.
    pub async fn delete(&self) -> Result<(), LogError> {
        self.set_stopped(Status::Deleted);
        self.state.borrow_mut().tail_cache.clear();
        // No checkpoint write may recreate files while the tree goes away.
        let _permit = self.checkpoint_permit().await?;
        let dir = self.dir.clone();
        let doomed = deletion_dir(&dir);
        // Renames and removing a directory tree are metadata work, not file
        // I/O; glommio has neither, so they run on glommio's blocking pool.
        glommio::executor()
            .spawn_blocking(move || {
                std::fs::rename(&dir, &doomed)?;
                if let Some(parent) = dir.parent() {
                    std::fs::File::open(parent)?.sync_all()?;
                }
                std::fs::remove_dir_all(&doomed)
            })
            .await
            .map_err(|e| LogError::io(&self.dir, e))?;
        // Every file is unlinked: their blocks are freed by the shard's releaser, not in its
        // last close of each.
        for segment in self.state.borrow().segments.values() {
            segment.release_deleted();
        }
        Ok(())
    }

    fn fail(&self) {
        error!(dir = %self.dir.display(), "log failed; appends are refused until it is reopened");
        self.set_stopped(Status::Failed);
    }

    fn set_stopped(&self, status: Status) {
        self.state.borrow_mut().status = status;
        self.fetch_stamp.bump();
        let mut wakers = self.waiters.borrow_mut().take_all();
        wakers.extend(self.hw_waiters.borrow_mut().take_all());
        wakers.append(&mut self.truncation_waiters.borrow_mut());
        wakers.into_iter().for_each(|w| w.wake());
    }
}

/// The epoch cache a log opens with (Kafka's `LogLoader`): the checkpoint's entries without
/// those at or past the recovered log end (a crash may have cut the log below them), then
/// the new epochs the recovery scan met (a crash may have lost their checkpoint write), then
/// without what lies below the log start offset.
fn recovered_epoch_cache(
    on_disk: &LeaderEpochFileCache,
    scanned_epochs: &[(i32, i64)],
    log_start_offset: i64,
    log_end_offset: i64,
) -> Result<LeaderEpochFileCache, LogError> {
    let mut cache = on_disk.clone();
    cache.truncate_from_end(log_end_offset);
    for &(epoch, start_offset) in scanned_epochs {
        // `None < Some(_)`: into an empty cache, every epoch is new.
        if cache.latest_epoch() < Some(epoch) {
            cache.assign(epoch, start_offset)?;
        }
    }
    cache.truncate_from_start(log_start_offset);
    Ok(cache)
}

/// Bytes of `segment` that are written and readable.
fn readable_size(st: &LogState, segment: &LogSegment) -> u64 {
    let end = &st.readable_end;
    if segment.base_offset < end.segment_base {
        segment.size.get()
    } else if segment.base_offset == end.segment_base {
        end.position
    } else {
        0
    }
}

/// The suffix of a partition directory being deleted (Kafka's `-delete`).
pub const DELETE_DIR_SUFFIX: &str = "-delete";

/// Where `dir` goes while it is removed: `<name>.<unique>-delete` beside it,
/// unique so that a partition deleted twice (moved away, back, and away again
/// before the first removal ended) never collides.
fn deletion_dir(dir: &Path) -> PathBuf {
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.with_file_name(format!("{name}.{unique:x}{DELETE_DIR_SUFFIX}"))
}

/// Removes the partition directories under `root` whose deletion a crash
/// interrupted (named `...-delete`); returns how many. Run at start, before
/// any partition is opened.
pub fn remove_deleted_dirs(root: &Path) -> std::io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let doomed = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.ends_with(DELETE_DIR_SUFFIX));
        if doomed && entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}
