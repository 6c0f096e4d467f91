//! `Log`: one partition's log, owned by one shard.
//!
//! Concurrency model: the log lives on a single-threaded glommio executor and
//! is shared by that shard's tasks as `Rc<Log>`. Every append reserves its
//! offsets and file position synchronously, in call order; the writes then
//! complete in any order, and the readable end only advances over the
//! contiguous prefix of completed writes (the in-flight queue). A write error
//! fails the log, so the hole it leaves is never followed by acknowledged
//! data. No `RefCell` borrow is held across an `.await`.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tracing::{error, warn};

use crate::batch::{self, parse_header, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::loader::{sync_dir, write_clean_shutdown_marker, LogLoader};
use crate::segment::LogSegment;
use crate::tail_cache::TailCache;
use crate::waiters::Waiters;

/// Result of an append, as Kafka's `LogAppendInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
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
    config: LogConfig,
    state: RefCell<LogState>,
    pub(crate) waiters: RefCell<Waiters>,
}

/// Everything an append fixed synchronously, handed to its write task.
struct Reservation {
    seq: u64,
    segment: Rc<LogSegment>,
    /// The append rolled this segment and must create its file.
    creates_segment: bool,
    position: u64,
    buf: Vec<u8>,
    info: LogAppendInfo,
}

/// What the append path learns from a walk over the caller's batches.
struct AppendSummary {
    offsets: i64,
    max_timestamp: i64,
}

/// Header bytes read per I/O while looking for a batch in a segment.
const MIN_SCAN_READ_BYTES: u64 = 16 * 1024;
/// Cap on the data read ahead with the first scan read.
const MAX_SPECULATIVE_READ_BYTES: usize = 1 << 20;

impl Log {
    /// Opens or creates the log in `dir`, recovering it: every batch after
    /// the recovery point is checked (length, magic, CRC); a torn or corrupt
    /// tail is truncated away (one warning says how many bytes were cut).
    pub async fn open(dir: PathBuf, config: LogConfig) -> Result<Rc<Log>, LogError> {
        let loaded = LogLoader::new(&dir, &config).load().await?;
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
            recovery_point: end.offset,
            in_flight: VecDeque::with_capacity(64),
            in_flight_front_seq: 0,
            status: Status::Open,
            tail_cache: TailCache::new(config.tail_cache_bytes),
            flush_timer_armed: false,
        };
        Ok(Rc::new_cyclic(|me| Log {
            me: me.clone(),
            dir,
            config,
            state: RefCell::new(state),
            waiters: RefCell::new(Waiters::default()),
        }))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
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
            max_timestamp: -1,
        };
        let mut pos = 0;
        while pos < batches.len() {
            let header = self.check_batch(batches, pos)?;
            summary.offsets += header.offset_count();
            summary.max_timestamp = summary.max_timestamp.max(header.max_timestamp);
            pos += header.size;
        }
        if summary.offsets == 0 {
            return Err(invalid(0, "no record batch"));
        }
        Ok(summary)
    }

    fn check_batch(&self, batches: &[u8], pos: usize) -> Result<BatchHeader, LogError> {
        let rest = &batches[pos..];
        let header = parse_header(rest).map_err(|e| invalid(pos, &e.to_string()))?;
        if header.size < RECORD_BATCH_OVERHEAD || header.size > rest.len() {
            return Err(invalid(pos, "batch length exceeds the data"));
        }
        if header.size > self.config.max_message_bytes as usize {
            return Err(LogError::RecordBatchTooLarge {
                size: header.size,
                max: self.config.max_message_bytes,
            });
        }
        Ok(header)
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
        let (segment, creates_segment) =
            self.segment_for_append(&mut st, batches.len(), last_offset)?;
        let position = segment.size.get();
        let mut buf = batches.to_vec();
        self.patch_and_index(&mut buf, &segment, first_offset, position);
        segment.size.set(position + buf.len() as u64);
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
            log_start_offset: st.log_start_offset,
            bytes: buf.len(),
        };
        Ok(Reservation {
            seq,
            segment,
            creates_segment,
            position,
            buf,
            info,
        })
    }

    /// The active segment, or a newly rolled one when this append would push
    /// the active one past `segment_bytes` (or its relative offsets past
    /// `i32`, as Kafka). A segment that is still empty takes any append.
    fn segment_for_append(
        &self,
        st: &mut LogState,
        len: usize,
        last_offset: i64,
    ) -> Result<(Rc<LogSegment>, bool), LogError> {
        if len > i32::MAX as usize {
            return Err(LogError::AppendTooLarge { size: len });
        }
        let active = st
            .segments
            .last_key_value()
            .map(|(_, s)| s.clone())
            .ok_or_else(|| LogError::Failed(self.dir.clone()))?;
        let size = active.size.get();
        let full = size + len as u64 > self.config.effective_segment_bytes();
        let offsets_overflow = last_offset - active.base_offset > i32::MAX as i64;
        if size == 0 || (!full && !offsets_overflow) {
            // segment_bytes <= i32::MAX, so positions stay within u32.
            return Ok((active, false));
        }
        let base = st.log_end_offset;
        let rolled = Rc::new(LogSegment::rolling(base, &self.dir));
        st.segments.insert(base, rolled.clone());
        Ok((rolled, true))
    }

    /// Rewrites base offsets in the write buffer and feeds the segment index.
    fn patch_and_index(
        &self,
        buf: &mut [u8],
        segment: &LogSegment,
        first_offset: i64,
        position: u64,
    ) {
        let mut index = segment.index.borrow_mut();
        let mut offset = first_offset;
        let mut pos = 0usize;
        while pos < buf.len() {
            // Framing was checked by `summarize`; only offsets change here.
            let Ok(header) = parse_header(&buf[pos..]) else {
                unreachable!("batch framing changed after validation")
            };
            batch::set_base_offset(&mut buf[pos..], offset);
            let last = offset + i64::from(header.last_offset_delta);
            let relative = (last - segment.base_offset) as u32;
            let at = (position + pos as u64) as u32;
            index.on_batch(
                relative,
                at,
                header.size as u64,
                self.config.index_interval_bytes,
            );
            offset = last + 1;
            pos += header.size;
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
        let Some(found) = self.locate(&file, path, plan, start, max_bytes).await? else {
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

    /// Scans batch headers from the index position to the batch holding
    /// `start`; `None` if the segment's readable part has no batch at or
    /// after `start`. The first read also covers `max_bytes` past the index
    /// interval, so that it usually contains the data to return as well.
    async fn locate(
        &self,
        file: &glommio::io::BufferedFile,
        path: &Path,
        plan: &ReadPlan,
        start: i64,
        max_bytes: usize,
    ) -> Result<Option<Located>, LogError> {
        let scan_len = MIN_SCAN_READ_BYTES.max(2 * u64::from(self.config.index_interval_bytes));
        let mut chunk_len = scan_len + max_bytes.min(MAX_SPECULATIVE_READ_BYTES) as u64;
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
                if header.last_offset() >= start {
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
    // Flush, close, delete
    // ------------------------------------------------------------------

    /// fdatasyncs everything appended before this call (waiting for those
    /// writes to complete first) and advances the recovery point.
    pub async fn flush(&self) -> Result<(), LogError> {
        let target = self.log_end_offset();
        self.wait_readable(target - 1).await;
        if self.readable_end_offset() < target {
            return Err(self.stopped_error());
        }
        let recovery_point = self.recovery_point();
        let segments = self.segments_to_flush(target);
        for segment in &segments {
            let file = segment.file().await?;
            if let Err(e) = file.fdatasync().await {
                // After a failed fsync the page cache state is unknown
                // (fsyncgate): stop taking appends rather than guess.
                self.fail();
                return Err(LogError::io(&segment.path, e));
            }
        }
        // A segment rolled since the last flush also needs its directory
        // entry made durable (as Kafka's LocalLog.flush does).
        if segments.iter().any(|s| s.base_offset > recovery_point) {
            sync_dir(&self.dir).await?;
        }
        let mut st = self.state.borrow_mut();
        st.recovery_point = st.recovery_point.max(target);
        Ok(())
    }

    /// Segments holding offsets in `[recovery_point, target)`.
    fn segments_to_flush(&self, target: i64) -> Vec<Rc<LogSegment>> {
        let st = self.state.borrow();
        let from = st
            .segments
            .range(..=st.recovery_point)
            .next_back()
            .map_or(st.log_start_offset, |(&b, _)| b);
        st.segments
            .range(from..)
            .take_while(|(&b, _)| b < target || b == from)
            .map(|(_, s)| s.clone())
            .collect()
    }

    /// Kafka's `flush.messages` and `flush.ms`.
    async fn apply_flush_policy(&self) -> Result<(), LogError> {
        if let Some(every) = self.config.flush_messages {
            let unflushed = {
                let st = self.state.borrow();
                st.readable_end.offset - st.recovery_point
            };
            if unflushed as u64 >= every.max(1) {
                self.flush().await?;
            }
        }
        if let Some(ms) = self.config.flush_ms {
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

    /// Flushes, refuses further appends and writes the clean shutdown marker
    /// so that the next open skips CRC checks.
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

/// The write task of one append: creates the rolled segment file if this
/// append rolled it, writes the bytes, reports the outcome to the log.
async fn write_reserved(log: Rc<Log>, r: Reservation) -> Result<(), LogError> {
    let result = async {
        if r.creates_segment {
            r.segment.create_file().await?;
        }
        let file = r.segment.file().await?;
        write_all(&file, &r.segment.path, r.buf, r.position).await
    }
    .await;
    match &result {
        Ok(()) => log.complete_write(r.seq),
        Err(e) => {
            // The reservation stays incomplete forever, so the readable end
            // never passes the hole; failing the log stops further appends.
            error!(dir = %log.dir.display(), offset = r.info.first_offset, error = %e, "append write failed");
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
