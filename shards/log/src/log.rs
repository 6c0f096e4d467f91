//! `Log`: one partition's log, owned by one shard.
//!
//! Concurrency model: the log lives on a single-threaded glommio executor and
//! is shared by that shard's tasks as `Rc<Log>`. Every append reserves its
//! offsets and file position synchronously, in call order; the writes then
//! complete in any order, and the readable end only advances over the
//! contiguous prefix of completed writes (the in-flight queue). A write error
//! fails the log, so the hole it leaves is never followed by acknowledged
//! data. No `RefCell` borrow is held across an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use glommio::sync::Semaphore;
use tracing::{error, info, warn};

use crate::batch::{self, parse_header, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::checkpoint::{
    new_writer_id, write_checkpoint, LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE,
};
use crate::clock::{Clock, SystemClock};
use crate::config::{LogConfig, TimestampType};
use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::index::{OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES};
use crate::loader::{
    delete_segment_files, sync_dir, write_clean_shutdown_marker, LoadStats, LogLoader,
};
use crate::retention::{deletable_segments, RetentionCandidate};
use crate::segment::{IndexWrite, LogSegment};
use crate::tail_cache::TailCache;
use crate::waiters::Waiters;

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
    /// Serializes checkpoint file writes (one temp file per checkpoint).
    checkpoint_lock: Semaphore,
    checkpoint_writer: u64,
    /// Values the checkpoint files hold, so unchanged ones are not rewritten.
    checkpointed_recovery_point: Cell<Option<i64>>,
    checkpointed_log_start_offset: Cell<Option<i64>>,
    #[cfg_attr(not(test), allow(dead_code))]
    load_stats: LoadStats,
}

/// Everything an append fixed synchronously, handed to its write task.
struct Reservation {
    seq: u64,
    segment: Rc<LogSegment>,
    /// The append rolled this segment and must create its file.
    creates_segment: bool,
    position: u64,
    buf: Vec<u8>,
    /// Index entries this append added to `segment`.
    index_write: IndexWrite,
    /// When this append rolled: the previous segment and its final time
    /// index entry, written before this append completes.
    rolled_from: Option<(Rc<LogSegment>, IndexWrite)>,
    info: LogAppendInfo,
}

/// What the append path learns from a walk over the caller's batches.
#[derive(Clone, Copy)]
struct AppendSummary {
    offsets: i64,
    batches: usize,
    max_timestamp: i64,
}

/// Checks the framing and size of the batch at `pos` of the caller's batches.
fn check_batch(
    batches: &[u8],
    pos: usize,
    max_message_bytes: u32,
) -> Result<BatchHeader, LogError> {
    let rest = &batches[pos..];
    let header = parse_header(rest).map_err(|e| invalid(pos, &e.to_string()))?;
    if header.size < RECORD_BATCH_OVERHEAD || header.size > rest.len() {
        return Err(invalid(pos, "batch length exceeds the data"));
    }
    if header.size > max_message_bytes as usize {
        return Err(LogError::RecordBatchTooLarge {
            size: header.size,
            max: max_message_bytes,
        });
    }
    Ok(header)
}

/// Kafka's `LogValidator.validateTimestamp` for CreateTime, on the batch's first and largest
/// timestamps (the records inside are not decoded): a timestamp more than
/// `timestamp_before_max_ms` before or `timestamp_after_max_ms` after the broker's time is
/// refused. A batch without timestamps (-1) passes.
fn check_timestamps(header: &BatchHeader, now_ms: i64, config: &LogConfig) -> Result<(), LogError> {
    let low = now_ms.saturating_sub(config.timestamp_before_max_ms);
    let high = now_ms.saturating_add(config.timestamp_after_max_ms);
    for timestamp in [header.base_timestamp, header.max_timestamp] {
        if timestamp != NO_TIMESTAMP && !(low..=high).contains(&timestamp) {
            return Err(LogError::InvalidTimestamp {
                timestamp,
                low,
                high,
            });
        }
    }
    Ok(())
}

/// A batch's timestamp when it carries none.
const NO_TIMESTAMP: i64 = -1;

/// Header bytes read per I/O while looking for a batch in a segment.
const MIN_SCAN_READ_BYTES: u64 = 16 * 1024;
/// Cap on the data read ahead with the first scan read.
const MAX_SPECULATIVE_READ_BYTES: usize = 1 << 20;

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
        };
        let log = Rc::new_cyclic(|me| Log {
            me: me.clone(),
            dir,
            config: RefCell::new(config),
            clock,
            state: RefCell::new(state),
            waiters: RefCell::new(Waiters::default()),
            checkpoint_lock: Semaphore::new(1),
            checkpoint_writer: new_writer_id(),
            checkpointed_recovery_point: Cell::new(loaded.checkpointed_recovery_point),
            checkpointed_log_start_offset: Cell::new(loaded.checkpointed_log_start_offset),
            load_stats: loaded.stats,
        });
        log.checkpoint_log_start_offset().await?;
        log.checkpoint_recovery_point().await?;
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

    // ------------------------------------------------------------------
    // Append
    // ------------------------------------------------------------------

    /// Sets how many bytes of the newest appends this log keeps in memory (the shard divides
    /// its budget among its partitions, so the bound changes as partitions come and go).
    pub fn set_tail_cache_bytes(&self, bytes: usize) {
        self.state.borrow_mut().tail_cache.set_limit(bytes);
    }

    /// Appends `batches` (one or more concatenated v2 batches, validated by
    /// the caller), assigning consecutive offsets from the log end offset.
    /// Offsets are assigned before the first await, so concurrent callers get
    /// them in call order. Returns once these bytes and every earlier append
    /// are written (to the page cache; fsync per the flush policy). Dropping
    /// the future does not cancel the write.
    pub async fn append(&self, batches: &[u8]) -> Result<LogAppendInfo, LogError> {
        let summary = self.summarize(batches)?;
        let reservation = self.reserve(batches, &summary)?;
        let info = reservation.info;
        let this = self.me.upgrade().ok_or_else(|| self.stopped_error())?;
        // The write runs as its own task so that a caller dropping this
        // future cannot leave a reserved range unwritten (a hole).
        let written = glommio::spawn_local(write_reserved(this, reservation))
            .detach()
            .await;
        match written {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(e),
            None => return Err(LogError::Failed(self.dir.clone())),
        }
        // Acknowledge only once every earlier append is written too, so that
        // an acknowledged append never sits behind a hole.
        self.wait_readable(info.last_offset).await;
        if self.readable_end_offset() <= info.last_offset {
            return Err(self.stopped_error());
        }
        self.apply_flush_policy().await?;
        Ok(info)
    }

    /// Walks the caller's batches once (no allocation): checks framing and
    /// size, counts offsets.
    fn summarize(&self, batches: &[u8]) -> Result<AppendSummary, LogError> {
        let mut summary = AppendSummary {
            offsets: 0,
            batches: 0,
            max_timestamp: -1,
        };
        let config = self.config.borrow();
        let now_ms = self.clock.now_ms();
        let mut pos = 0;
        while pos < batches.len() {
            let header = check_batch(batches, pos, config.max_message_bytes)?;
            if config.timestamp_type == TimestampType::CreateTime {
                check_timestamps(&header, now_ms, &config)?;
            }
            summary.offsets += header.offset_count();
            summary.batches += 1;
            summary.max_timestamp = summary.max_timestamp.max(header.max_timestamp);
            pos += header.size;
        }
        if summary.offsets == 0 {
            return Err(invalid(0, "no record batch"));
        }
        Ok(summary)
    }

    /// Synchronous part of an append: assigns offsets and a file position,
    /// copies the batches once (patching base offsets), rolls if needed.
    fn reserve(&self, batches: &[u8], summary: &AppendSummary) -> Result<Reservation, LogError> {
        let mut st = self.state.borrow_mut();
        if st.status != Status::Open {
            return Err(self.error_for(st.status));
        }
        let first_offset = st.log_end_offset;
        let last_offset = first_offset + summary.offsets - 1;
        let now_ms = self.clock.now_ms();
        // LogAppendTime: the batches carry the broker's time from here on, for the roll
        // decision, the time index and the answer alike.
        let log_append_time_ms =
            (self.config.borrow().timestamp_type == TimestampType::LogAppendTime).then_some(now_ms);
        let summary = AppendSummary {
            max_timestamp: log_append_time_ms.unwrap_or(summary.max_timestamp),
            ..*summary
        };
        let (segment, rolled_from) =
            self.segment_for_append(&mut st, batches.len(), last_offset, &summary, now_ms)?;
        let creates_segment = rolled_from.is_some();
        let position = segment.size.get();
        let mut buf = batches.to_vec();
        let index_write = self.patch_and_index(
            &mut buf,
            &segment,
            first_offset,
            position,
            log_append_time_ms,
        );
        segment.size.set(position + buf.len() as u64);
        segment.last_modified_ms.set(now_ms);
        st.log_end_offset = last_offset + 1;
        if st.tail_cache.limit() > 0 {
            let cached = Bytes::copy_from_slice(&buf);
            st.tail_cache.push(first_offset, last_offset + 1, cached);
        }
        let seq = st.in_flight_front_seq + st.in_flight.len() as u64;
        st.in_flight.push_back(InFlight {
            end: LogPosition {
                offset: last_offset + 1,
                segment_base: segment.base_offset,
                position: segment.size.get(),
            },
            done: false,
        });
        let info = LogAppendInfo {
            first_offset,
            last_offset,
            max_timestamp: summary.max_timestamp,
            log_append_time_ms: log_append_time_ms.unwrap_or(NO_TIMESTAMP),
            log_start_offset: st.log_start_offset,
            bytes: buf.len(),
        };
        Ok(Reservation {
            seq,
            segment,
            creates_segment,
            position,
            buf,
            index_write,
            rolled_from,
            info,
        })
    }

    /// The active segment, or a newly rolled one (Kafka's `shouldRoll`): when
    /// this append would push the active one past `segment_bytes`, its
    /// relative offsets past `i32`, its `.index`/`.timeindex` past
    /// `segment_index_bytes`, or when its timestamp is `segment_ms` past the
    /// active segment's first batch (`now_ms` past its creation when batches
    /// carry no timestamps). A segment that is still empty takes any append.
    /// On a roll, also returns the previous segment with its final time index
    /// entry to write.
    #[allow(clippy::type_complexity)]
    fn segment_for_append(
        &self,
        st: &mut LogState,
        len: usize,
        last_offset: i64,
        summary: &AppendSummary,
        now_ms: i64,
    ) -> Result<(Rc<LogSegment>, Option<(Rc<LogSegment>, IndexWrite)>), LogError> {
        if len > i32::MAX as usize {
            return Err(LogError::AppendTooLarge { size: len });
        }
        let active = st
            .segments
            .last_key_value()
            .map(|(_, s)| s.clone())
            .ok_or_else(|| LogError::Failed(self.dir.clone()))?;
        let size = active.size.get();
        if size == 0 || !self.should_roll(&active, len, last_offset, summary, now_ms) {
            // segment_bytes <= i32::MAX, so positions stay within u32.
            return Ok((active, None));
        }
        let base = st.log_end_offset;
        let rolled = Rc::new(LogSegment::rolling(base, &self.dir, now_ms));
        st.segments.insert(base, rolled.clone());
        let final_entry = IndexWrite {
            offset: None,
            time: active.final_time_index_entry(),
        };
        active.final_index_pending.set(true);
        Ok((rolled, Some((active, final_entry))))
    }

    fn should_roll(
        &self,
        active: &LogSegment,
        len: usize,
        last_offset: i64,
        summary: &AppendSummary,
        now_ms: i64,
    ) -> bool {
        let config = self.config.borrow();
        let full = active.size.get() + len as u64 > config.effective_segment_bytes();
        let offsets_overflow = last_offset - active.base_offset > i32::MAX as i64;
        let index_full = active.offset_index.borrow().len() + summary.batches
            > config.max_offset_index_entries()
            || active.time_index.borrow().len() + summary.batches > config.max_time_index_entries();
        let time_due = config.segment_ms > 0 && {
            let waited = match active.rolling_based_timestamp.get() {
                Some(t) if t >= 0 => summary.max_timestamp.saturating_sub(t),
                _ => now_ms.saturating_sub(active.created_ms),
            };
            waited > config.segment_ms
        };
        full || offsets_overflow || index_full || time_due
    }

    /// Rewrites base offsets in the write buffer and feeds the segment's
    /// indexes; returns the index file bytes to append.
    fn patch_and_index(
        &self,
        buf: &mut [u8],
        segment: &LogSegment,
        first_offset: i64,
        position: u64,
        log_append_time_ms: Option<i64>,
    ) -> IndexWrite {
        let mut index = segment.offset_index.borrow_mut();
        let mut time = segment.time_index.borrow_mut();
        let (index_from, time_from) = (index.len(), time.len());
        let index_interval_bytes = self.config.borrow().index_interval_bytes;
        let mut offset = first_offset;
        let mut pos = 0usize;
        while pos < buf.len() {
            if let Some(now_ms) = log_append_time_ms {
                batch::stamp_log_append_time(&mut buf[pos..], now_ms);
            }
            // Framing was checked by `summarize`; only offsets (and the append time) change here.
            let Ok(header) = parse_header(&buf[pos..]) else {
                unreachable!("batch framing changed after validation")
            };
            batch::set_base_offset(&mut buf[pos..], offset);
            let last = offset + i64::from(header.last_offset_delta);
            let relative = (last - segment.base_offset) as u32;
            let at = (position + pos as u64) as u32;
            if at == 0 {
                segment
                    .rolling_based_timestamp
                    .set(Some(header.max_timestamp));
            }
            time.observe(header.max_timestamp, relative);
            if index.on_batch(relative, at, header.size as u64, index_interval_bytes) {
                time.maybe_append();
            }
            offset = last + 1;
            pos += header.size;
        }
        IndexWrite {
            offset: (index.len() > index_from).then(|| {
                (
                    (index_from * OFFSET_ENTRY_BYTES) as u64,
                    index.encode_from(index_from),
                )
            }),
            time: (time.len() > time_from).then(|| {
                (
                    (time_from * TIME_ENTRY_BYTES) as u64,
                    time.encode_from(time_from),
                )
            }),
        }
    }

    /// Records that the write of reservation `seq` completed; advances the
    /// readable end over the completed prefix and wakes waiters.
    fn complete_write(&self, seq: u64) {
        let wakers = {
            let mut st = self.state.borrow_mut();
            let i = (seq - st.in_flight_front_seq) as usize;
            st.in_flight[i].done = true;
            let before = st.readable_end.offset;
            while st.in_flight.front().is_some_and(|f| f.done) {
                if let Some(f) = st.in_flight.pop_front() {
                    assert!(
                        f.end.offset > st.readable_end.offset,
                        "readable end only grows"
                    );
                    st.readable_end = f.end;
                    st.in_flight_front_seq += 1;
                }
            }
            assert!(st.readable_end.offset <= st.log_end_offset);
            if st.readable_end.offset == before {
                return;
            }
            self.waiters.borrow_mut().take_ready(st.readable_end.offset)
        };
        wakers.into_iter().for_each(|w| w.wake());
    }

    // ------------------------------------------------------------------
    // Waiting
    // ------------------------------------------------------------------

    /// Resolves once `readable_end_offset() > beyond_offset`, or when the log
    /// stops advancing (failed, closed, deleted). For the fetch long-poll:
    /// race it against a timer, then re-check.
    pub async fn wait_for_append(&self, beyond_offset: i64) {
        WaitForAppend {
            log: self,
            beyond: beyond_offset,
            id: None,
        }
        .await
    }

    async fn wait_readable(&self, beyond_offset: i64) {
        self.wait_for_append(beyond_offset).await
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

    // ------------------------------------------------------------------
    // Read
    // ------------------------------------------------------------------

    /// Reads whole batches starting with the one holding `start_offset`, at
    /// most `max_bytes` (but one whole batch anyway if `min_one_message`),
    /// never past the readable end nor past `max_offset`.
    pub async fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        min_one_message: bool,
        max_offset: Option<i64>,
    ) -> Result<FetchDataInfo, LogError> {
        let limit = {
            let st = self.state.borrow();
            if start_offset < st.log_start_offset || start_offset > st.log_end_offset {
                return Err(LogError::OffsetOutOfRange {
                    offset: start_offset,
                    log_start_offset: st.log_start_offset,
                    log_end_offset: st.log_end_offset,
                });
            }
            let limit =
                max_offset.map_or(st.readable_end.offset, |m| m.min(st.readable_end.offset));
            if start_offset >= limit {
                return Ok(FetchDataInfo::new(Bytes::new()));
            }
            if let Some(hit) = st
                .tail_cache
                .read(start_offset, limit, max_bytes, min_one_message)
            {
                return Ok(FetchDataInfo::new(hit));
            }
            limit
        };
        let records = self
            .read_from_segments(start_offset, limit, max_bytes, min_one_message)
            .await?;
        Ok(FetchDataInfo::new(records))
    }

    /// File read path: the segment holding `start`, and the next ones if it
    /// holds no batch at or after `start`. Reads stay within one segment.
    async fn read_from_segments(
        &self,
        start: i64,
        limit: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<Bytes, LogError> {
        let mut from = start;
        while from < limit {
            let Some(plan) = self.plan_read(from) else {
                break;
            };
            let found = self
                .read_segment(&plan, from, limit, max_bytes, min_one)
                .await?;
            if let Some(records) = found {
                return Ok(records);
            }
            match plan.next_segment_base {
                Some(next) => from = next,
                None => break,
            }
        }
        Ok(Bytes::new())
    }

    /// Where to look for `offset`: its segment, the index position to scan
    /// from and the readable end of that segment.
    fn plan_read(&self, offset: i64) -> Option<ReadPlan> {
        let st = self.state.borrow();
        let (_, segment) = st.segments.range(..=offset).next_back()?;
        let next_segment_base = st
            .segments
            .range(segment.base_offset + 1..)
            .next()
            .map(|(&b, _)| b);
        Some(ReadPlan {
            scan_from: segment.index_lookup(offset),
            readable_size: readable_size(&st, segment),
            segment: segment.clone(),
            next_segment_base,
        })
    }

    async fn read_segment(
        &self,
        plan: &ReadPlan,
        start: i64,
        limit: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<Option<Bytes>, LogError> {
        let file = plan.segment.file().await?;
        let path = &plan.segment.path;
        let scan_extra = max_bytes.min(MAX_SPECULATIVE_READ_BYTES) as u64;
        let found = self
            .locate(&file, path, plan, scan_extra, |h| h.last_offset() >= start)
            .await?;
        let Some(found) = found else {
            return Ok(None);
        };
        let first = found.header;
        if first.last_offset() >= limit || (first.size > max_bytes && !min_one) {
            return Ok(Some(Bytes::new()));
        }
        let available = (plan.readable_size - found.position) as usize;
        let len = max_bytes.max(first.size).min(available);
        // The scan read usually holds the answer already; read again only
        // for what it does not cover.
        let data = if found.chunk.len() - found.chunk_offset >= len {
            found
                .chunk
                .slice(found.chunk_offset..found.chunk_offset + len)
        } else {
            read_exact(&file, path, found.position, len).await?
        };
        let end = batch::HeaderWalker::new(&data)
            .take_while(|(_, h)| h.last_offset() < limit)
            .last()
            .map_or(0, |(p, h)| p + h.size);
        assert!(end >= first.size, "the first batch is readable");
        Ok(Some(data.slice(..end)))
    }

    /// Scans batch headers from the index position to the first batch that
    /// satisfies `wanted` (for reads: the batch holding the start offset);
    /// `None` if the segment's readable part has none. The first read also
    /// covers `scan_extra` bytes past the index interval, so that it usually
    /// contains the data to return as well.
    async fn locate(
        &self,
        file: &glommio::io::BufferedFile,
        path: &Path,
        plan: &ReadPlan,
        scan_extra: u64,
        wanted: impl Fn(&BatchHeader) -> bool,
    ) -> Result<Option<Located>, LogError> {
        let scan_len =
            MIN_SCAN_READ_BYTES.max(2 * u64::from(self.config.borrow().index_interval_bytes));
        let mut chunk_len = scan_len + scan_extra;
        let mut pos = plan.scan_from;
        while pos < plan.readable_size {
            let len = chunk_len.min(plan.readable_size - pos) as usize;
            let chunk = read_exact(file, path, pos, len).await?;
            let mut off = 0usize;
            while off + RECORD_BATCH_OVERHEAD <= chunk.len() {
                let header = parse_header(&chunk[off..]).map_err(|e| LogError::Corrupt {
                    path: path.to_path_buf(),
                    position: pos + off as u64,
                    reason: e.to_string(),
                })?;
                if wanted(&header) {
                    return Ok(Some(Located {
                        position: pos + off as u64,
                        header,
                        chunk,
                        chunk_offset: off,
                    }));
                }
                off += header.size;
            }
            if off == 0 {
                return Err(LogError::Corrupt {
                    path: path.to_path_buf(),
                    position: pos,
                    reason: "readable data ends inside a batch header".into(),
                });
            }
            pos += off as u64;
            chunk_len = scan_len;
        }
        Ok(None)
    }

    /// Estimate of the bytes readable from `offset` to the readable end, for
    /// fetch `min_bytes` accounting. No I/O; rounds up to the index interval.
    pub fn readable_bytes_from(&self, offset: i64) -> u64 {
        let st = self.state.borrow();
        if offset >= st.readable_end.offset {
            return 0;
        }
        let Some((&base, first)) = st.segments.range(..=offset).next_back() else {
            return 0;
        };
        let skipped = first.index_lookup(offset);
        let total: u64 = st
            .segments
            .range(base..)
            .map(|(_, s)| readable_size(&st, s))
            .sum();
        total.saturating_sub(skipped)
    }

    // ------------------------------------------------------------------
    // Timestamp lookups
    // ------------------------------------------------------------------

    /// Kafka's `fetchOffsetByTimestamp` for a real timestamp, at batch
    /// granularity: the first readable batch (at or after the log start)
    /// whose max timestamp is at least `timestamp`, as (its base offset, but
    /// not below the log start offset; its max timestamp). Goes through the
    /// segments' largest timestamps, then the time index, the offset index
    /// and a short scan of the `.log`.
    pub async fn offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(i64, i64)>, LogError> {
        let (log_start, plans) = {
            let st = self.state.borrow();
            let plans: Vec<ReadPlan> = self
                .segments_from_log_start(&st)
                .into_iter()
                .filter(|s| s.time_index.borrow().max_timestamp >= timestamp)
                .map(|s| {
                    let from = s.base_offset + i64::from(s.time_index.borrow().lookup(timestamp));
                    self.plan_in(&st, &s, from.max(st.log_start_offset))
                })
                .collect();
            (st.log_start_offset, plans)
        };
        for plan in plans {
            let file = plan.segment.file().await?;
            let found = self
                .locate(&file, &plan.segment.path, &plan, 0, |h| {
                    h.max_timestamp >= timestamp && h.last_offset() >= log_start
                })
                .await?;
            if let Some(found) = found {
                let h = found.header;
                return Ok(Some((h.base_offset.max(log_start), h.max_timestamp)));
            }
        }
        Ok(None)
    }

    /// Kafka's `MAX_TIMESTAMP` lookup, at batch granularity: the largest
    /// timestamp in the log and the base offset (not below the log start) of
    /// the first readable batch holding it; `None` if no batch has a
    /// timestamp.
    pub async fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, LogError> {
        let (log_start, timestamp, last_offset, plan) = {
            let st = self.state.borrow();
            let mut best: Option<Rc<LogSegment>> = None;
            for s in self.segments_from_log_start(&st) {
                let max = s.time_index.borrow().max_timestamp;
                let better = match &best {
                    None => true,
                    Some(b) => max > b.time_index.borrow().max_timestamp,
                };
                if better {
                    best = Some(s);
                }
            }
            let Some(seg) = best else { return Ok(None) };
            let (timestamp, relative) = {
                let t = seg.time_index.borrow();
                (t.max_timestamp, t.offset_of_max_timestamp)
            };
            if timestamp < 0 {
                return Ok(None);
            }
            let last_offset = seg.base_offset + i64::from(relative);
            let plan = self.plan_in(&st, &seg, last_offset);
            (st.log_start_offset, timestamp, last_offset, plan)
        };
        let file = plan.segment.file().await?;
        let found = self
            .locate(&file, &plan.segment.path, &plan, 0, |h| {
                h.last_offset() >= last_offset
            })
            .await?;
        Ok(found.map(|f| (f.header.base_offset.max(log_start), timestamp)))
    }

    /// The segments holding offsets from the log start on, oldest first.
    fn segments_from_log_start(&self, st: &LogState) -> Vec<Rc<LogSegment>> {
        let from = st
            .segments
            .range(..=st.log_start_offset)
            .next_back()
            .map_or(st.log_start_offset, |(&b, _)| b);
        st.segments.range(from..).map(|(_, s)| s.clone()).collect()
    }

    /// Read plan within `segment` from the index position for `offset`.
    fn plan_in(&self, st: &LogState, segment: &Rc<LogSegment>, offset: i64) -> ReadPlan {
        ReadPlan {
            scan_from: segment.index_lookup(offset),
            readable_size: readable_size(st, segment),
            segment: segment.clone(),
            next_segment_base: None,
        }
    }

    // ------------------------------------------------------------------
    // Retention
    // ------------------------------------------------------------------

    /// One round of retention, for the shard's background timer: deletes at
    /// most `max_segments` whole closed segments from the front — those past
    /// `retention_ms` (largest timestamp older than `now_ms - retention_ms`),
    /// those `retention_bytes` allows dropping, and those wholly below the
    /// log start offset — oldest first, never the active segment nor one
    /// with writes in flight. Moves the log start offset to the first
    /// remaining segment (checkpointed). Returns the number deleted.
    pub async fn run_retention(&self, now_ms: i64, max_segments: usize) -> Result<usize, LogError> {
        let doomed = {
            let mut st = self.state.borrow_mut();
            if st.status != Status::Open {
                return Ok(0);
            }
            let candidates = retention_candidates(&st);
            let total: u64 = st.segments.values().map(|s| s.size.get()).sum();
            let n = deletable_segments(
                &candidates,
                total,
                st.log_start_offset,
                &self.config.borrow(),
                now_ms,
            )
            .min(max_segments);
            remove_front_segments(&mut st, n)
        };
        let n = doomed.len();
        self.finish_deletion(doomed, "retention").await?;
        Ok(n)
    }

    /// Kafka's DeleteRecords: moves the log start offset up to `offset`
    /// (reads below it get `OffsetOutOfRange`), checkpoints it, and deletes
    /// the closed segments wholly below it. `offset` may not pass the
    /// readable end. Returns the log start offset (Kafka's low watermark).
    pub async fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let (doomed, log_start) = {
            let mut st = self.state.borrow_mut();
            if st.status != Status::Open {
                return Err(self.error_for(st.status));
            }
            if offset < 0 || offset > st.readable_end.offset {
                return Err(LogError::OffsetOutOfRange {
                    offset,
                    log_start_offset: st.log_start_offset,
                    log_end_offset: st.log_end_offset,
                });
            }
            st.log_start_offset = st.log_start_offset.max(offset);
            let n = retention_candidates(&st)
                .iter()
                .take_while(|c| c.next_base <= st.log_start_offset)
                .count();
            let doomed = remove_front_segments(&mut st, n);
            (doomed, st.log_start_offset)
        };
        self.finish_deletion(doomed, "delete records").await?;
        Ok(log_start)
    }

    /// Checkpoints the log start offset, then unlinks the removed segments'
    /// files (a crash in between leaves segments below the log start, which
    /// the next retention round deletes).
    async fn finish_deletion(
        &self,
        doomed: Vec<Rc<LogSegment>>,
        reason: &str,
    ) -> Result<(), LogError> {
        self.checkpoint_log_start_offset().await?;
        if doomed.is_empty() {
            return Ok(());
        }
        let bytes: u64 = doomed.iter().map(|s| s.size.get()).sum();
        for seg in &doomed {
            seg.set_index_files(None);
            delete_segment_files(&self.dir, seg.base_offset).await?;
        }
        info!(dir = %self.dir.display(), segments = doomed.len(), bytes, reason,
            log_start_offset = self.log_start_offset(), "deleted log segments");
        Ok(())
    }

    // ------------------------------------------------------------------
    // Flush, checkpoints, close, delete
    // ------------------------------------------------------------------

    /// fdatasyncs everything appended before this call (waiting for those
    /// writes to complete first), with the segments' index files, advances
    /// the recovery point and checkpoints it.
    pub async fn flush(&self) -> Result<(), LogError> {
        self.flush_to(self.log_end_offset()).await
    }

    /// Flushes the offsets below `target` (Kafka's `flushUptoOffsetExclusive`).
    async fn flush_to(&self, target: i64) -> Result<(), LogError> {
        self.wait_readable(target - 1).await;
        if self.readable_end_offset() < target {
            return Err(self.stopped_error());
        }
        let recovery_point = self.recovery_point();
        let segments = self.segments_to_flush(target);
        // A closed segment's final time index entry is written by the
        // append that rolled past it: wait for that append too.
        let successors: Vec<Option<i64>> = segments.iter().map(|s| self.next_base(s)).collect();
        let pending = segments
            .iter()
            .zip(&successors)
            .filter(|(s, _)| s.final_index_pending.get())
            .filter_map(|(_, next)| *next)
            .max();
        if let Some(last) = pending {
            self.wait_readable(last).await;
            if self.readable_end_offset() <= last {
                return Err(self.stopped_error());
            }
        }
        for segment in &segments {
            let file = segment.file().await?;
            let synced = match file.fdatasync().await {
                Ok(()) => segment.sync_index_files().await,
                Err(e) => Err(LogError::io(&segment.path, e)),
            };
            if let Err(e) = synced {
                // After a failed fsync the page cache state is unknown
                // (fsyncgate): stop taking appends rather than guess.
                self.fail();
                return Err(e);
            }
        }
        // A segment rolled since the last flush also needs its directory
        // entry made durable (as Kafka's LocalLog.flush does).
        if segments.iter().any(|s| s.base_offset > recovery_point) {
            sync_dir(&self.dir).await?;
        }
        // A segment that was rolled while we synced may miss its final time
        // index entry on disk: keep it at or after the recovery point.
        let new_recovery_point = segments
            .iter()
            .zip(&successors)
            .find(|(s, before)| before.is_none() && self.next_base(s).is_some())
            .map_or(target, |(s, _)| s.base_offset.min(target));
        {
            let mut st = self.state.borrow_mut();
            st.recovery_point = st.recovery_point.max(new_recovery_point);
        }
        self.checkpoint_recovery_point().await
    }

    /// Base offset of the segment after `segment`, if it is not the last.
    fn next_base(&self, segment: &LogSegment) -> Option<i64> {
        self.state
            .borrow()
            .segments
            .range(segment.base_offset + 1..)
            .next()
            .map(|(&b, _)| b)
    }

    /// Segments holding offsets in `[recovery_point, target)`.
    fn segments_to_flush(&self, target: i64) -> Vec<Rc<LogSegment>> {
        let st = self.state.borrow();
        let Some(from) = st
            .segments
            .range(..=st.recovery_point)
            .next_back()
            .or_else(|| st.segments.first_key_value())
            .map(|(&b, _)| b)
        else {
            return Vec::new();
        };
        st.segments
            .range(from..)
            .take_while(|(&b, _)| b < target || b == from)
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// After a roll (Kafka schedules the same): flushes the previous
    /// segments, moving the recovery point to the new segment's base, and
    /// releases the previous segment's index file handles.
    async fn flush_rolled(&self, previous: Rc<LogSegment>, new_base: i64) {
        if self.state.borrow().status != Status::Open {
            return; // close() flushes everything itself
        }
        match self.flush_to(new_base).await {
            Ok(()) => previous.set_index_files(None),
            Err(e) if self.stopped() => {
                tracing::debug!(dir = %self.dir.display(), error = %e, "roll flush skipped")
            }
            Err(e) => warn!(dir = %self.dir.display(), error = %e, "flush after roll failed"),
        }
    }

    /// Writes the `recovery-point` checkpoint if it changed.
    async fn checkpoint_recovery_point(&self) -> Result<(), LogError> {
        self.checkpoint(
            RECOVERY_POINT_FILE,
            Self::recovery_point,
            &self.checkpointed_recovery_point,
        )
        .await
    }

    /// Writes the `log-start-offset` checkpoint if it changed.
    async fn checkpoint_log_start_offset(&self) -> Result<(), LogError> {
        self.checkpoint(
            LOG_START_OFFSET_FILE,
            Self::log_start_offset,
            &self.checkpointed_log_start_offset,
        )
        .await
    }

    /// Writes checkpoint `file` with `value` (read under the permit, so the newest value wins)
    /// unless `written` says it already holds it.
    async fn checkpoint(
        &self,
        file: &str,
        value: fn(&Log) -> i64,
        written: &Cell<Option<i64>>,
    ) -> Result<(), LogError> {
        let _permit = self.checkpoint_permit().await?;
        if self.state.borrow().status == Status::Deleted {
            return Ok(());
        }
        let value = value(self);
        if written.get() == Some(value) {
            return Ok(());
        }
        write_checkpoint(&self.dir, file, self.checkpoint_writer, value).await?;
        written.set(Some(value));
        Ok(())
    }

    async fn checkpoint_permit(&self) -> Result<glommio::sync::Permit<'_>, LogError> {
        self.checkpoint_lock
            .acquire_permit(1)
            .await
            .map_err(|e| LogError::io(&self.dir, std::io::Error::other(e.to_string())))
    }

    /// Kafka's `flush.messages` and `flush.ms`.
    async fn apply_flush_policy(&self) -> Result<(), LogError> {
        let (flush_messages, flush_ms) = {
            let config = self.config.borrow();
            (config.flush_messages, config.flush_ms)
        };
        if let Some(every) = flush_messages {
            let unflushed = {
                let st = self.state.borrow();
                st.readable_end.offset - st.recovery_point
            };
            if unflushed as u64 >= every.max(1) {
                self.flush().await?;
            }
        }
        if let Some(ms) = flush_ms {
            self.arm_flush_timer(ms);
        }
        Ok(())
    }

    /// At most one pending timer per log: data appended now is flushed
    /// within `ms`. Holds only a weak reference so a dropped log goes away.
    fn arm_flush_timer(&self, ms: u64) {
        {
            let mut st = self.state.borrow_mut();
            if st.flush_timer_armed || st.recovery_point >= st.readable_end.offset {
                return;
            }
            st.flush_timer_armed = true;
        }
        let weak = self.me.clone();
        glommio::spawn_local(async move {
            glommio::timer::sleep(Duration::from_millis(ms)).await;
            let Some(log) = weak.upgrade() else { return };
            log.state.borrow_mut().flush_timer_armed = false;
            if let Err(e) = log.flush().await {
                warn!(dir = %log.dir.display(), error = %e, "timed flush failed");
            }
        })
        .detach();
    }

    /// Flushes, refuses further appends, completes the active segment's time
    /// index and writes the clean shutdown marker, so that the next open
    /// loads the index files instead of scanning.
    pub async fn close(&self) -> Result<(), LogError> {
        {
            let mut st = self.state.borrow_mut();
            match st.status {
                Status::Open => st.status = Status::Closing,
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
            let write = IndexWrite {
                offset: None,
                time: active.final_time_index_entry(),
            };
            if !write.is_empty() {
                active.write_index(write).await?;
                active.sync_index_files().await?;
            }
        }
        let end = self.log_end_offset();
        write_clean_shutdown_marker(&self.dir, end).await?;
        self.set_stopped(Status::Closed);
        Ok(())
    }

    /// Removes the partition directory (DeleteTopics). The log refuses
    /// appends from now on; open files are unlinked, not waited for.
    pub async fn delete(&self) -> Result<(), LogError> {
        self.set_stopped(Status::Deleted);
        self.state.borrow_mut().tail_cache.clear();
        // No checkpoint write may recreate files while the tree goes away.
        let _permit = self.checkpoint_permit().await?;
        let dir = self.dir.clone();
        // Removing a directory tree is metadata work, not file I/O; glommio
        // has no rmdir, so it runs on glommio's blocking pool.
        glommio::executor()
            .spawn_blocking(move || std::fs::remove_dir_all(dir))
            .await
            .map_err(|e| LogError::io(&self.dir, e))
    }

    fn fail(&self) {
        error!(dir = %self.dir.display(), "log failed; appends are refused until it is reopened");
        self.set_stopped(Status::Failed);
    }

    fn set_stopped(&self, status: Status) {
        self.state.borrow_mut().status = status;
        let wakers = self.waiters.borrow_mut().take_all();
        wakers.into_iter().for_each(|w| w.wake());
    }
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

/// Closed segments retention may delete: fully written (before the segment
/// of the readable end, so never the active one), oldest first.
fn retention_candidates(st: &LogState) -> Vec<RetentionCandidate> {
    let limit = st.readable_end.segment_base;
    let bases: Vec<i64> = st.segments.keys().copied().collect();
    bases
        .windows(2)
        .take_while(|w| w[0] < limit)
        .map(|w| {
            let s = &st.segments[&w[0]];
            RetentionCandidate {
                size: s.size.get(),
                largest_timestamp: s.largest_timestamp(),
                next_base: w[1],
            }
        })
        .collect()
}

/// Removes the first `n` segments from the map and moves the log start
/// offset to the first remaining one.
fn remove_front_segments(st: &mut LogState, n: usize) -> Vec<Rc<LogSegment>> {
    let mut doomed = Vec::with_capacity(n);
    for _ in 0..n {
        if st.segments.len() <= 1 {
            break;
        }
        if let Some((_, s)) = st.segments.pop_first() {
            doomed.push(s);
        }
    }
    if let Some((&first, _)) = st.segments.first_key_value() {
        st.log_start_offset = st.log_start_offset.max(first);
    }
    doomed
}

/// The batch a read starts with, and the scan read it was found in.
struct Located {
    position: u64,
    header: BatchHeader,
    chunk: Bytes,
    /// Where the batch starts in `chunk` (its header is inside it).
    chunk_offset: usize,
}

struct ReadPlan {
    segment: Rc<LogSegment>,
    scan_from: u64,
    readable_size: u64,
    next_segment_base: Option<i64>,
}

fn invalid(position: usize, reason: &str) -> LogError {
    LogError::InvalidBatch {
        position,
        reason: reason.to_string(),
    }
}

/// The write task of one append: creates the rolled segment's files if this
/// append rolled it (and writes the previous segment's final time index
/// entry), writes the bytes and index entries, reports the outcome to the
/// log; after a roll, starts the flush of the previous segment.
async fn write_reserved(log: Rc<Log>, r: Reservation) -> Result<(), LogError> {
    let Reservation {
        seq,
        segment,
        creates_segment,
        position,
        buf,
        index_write,
        rolled_from,
        info,
    } = r;
    let previous = rolled_from.as_ref().map(|(p, _)| p.clone());
    let result = async {
        if creates_segment {
            segment.create_file().await?;
        }
        if let Some((previous, final_entry)) = rolled_from {
            previous.write_index(final_entry).await?;
            previous.final_index_pending.set(false);
        }
        let file = segment.file().await?;
        write_all(&file, &segment.path, buf, position).await?;
        segment.write_index(index_write).await
    }
    .await;
    match &result {
        Ok(()) => {
            log.complete_write(seq);
            if let Some(previous) = previous {
                let (log, base) = (log.clone(), segment.base_offset);
                glommio::spawn_local(async move { log.flush_rolled(previous, base).await })
                    .detach();
            }
        }
        Err(e) => {
            // The reservation stays incomplete forever, so the readable end
            // never passes the hole; failing the log stops further appends.
            error!(dir = %log.dir.display(), offset = info.first_offset, error = %e, "append write failed");
            log.fail();
        }
    }
    result
}

/// Future of `Log::wait_for_append`; unregisters itself when dropped.
struct WaitForAppend<'a> {
    log: &'a Log,
    beyond: i64,
    id: Option<u64>,
}

impl Future for WaitForAppend<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.log.readable_end_offset() > self.beyond || self.log.stopped() {
            if let Some(id) = self.id.take() {
                self.log.waiters.borrow_mut().remove(id);
            }
            return Poll::Ready(());
        }
        let beyond = self.beyond;
        let log = self.log;
        log.waiters
            .borrow_mut()
            .register(&mut self.id, beyond, cx.waker());
        Poll::Pending
    }
}

impl Drop for WaitForAppend<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.log.waiters.borrow_mut().remove(id);
        }
    }
}
