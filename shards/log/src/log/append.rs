//! Append: validating the caller's batches, reserving offsets and a file position in call
//! order, rolling the active segment, patching and indexing the batches, and the write task
//! whose completion advances the readable end over the contiguous prefix of written appends.

use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use sluice_protocol::FrameHold;
use tracing::error;

use super::{InFlight, Log, LogAppendInfo, LogPosition, LogState, Status};
use crate::batch::{self, check_crc, parse_header, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::config::{LogConfig, TimestampType};
use crate::error::LogError;
use crate::file_io::write_all;
use crate::leader_epoch::InvalidEpochEntry;
use crate::segment::LogSegment;
use crate::tail_cache::FileSpot;

/// Everything an append fixed synchronously, handed to its write task.
struct Reservation {
    seq: u64,
    segment: Rc<LogSegment>,
    /// The append rolled this segment and must create its file.
    creates_segment: bool,
    position: u64,
    /// The patched batches: written from here and, refcounted, held by the tail cache.
    buf: Bytes,
    /// When this append rolled: the previous segment, whose pending index entries (its final
    /// time index entry among them) are written before this append completes.
    rolled_from: Option<Rc<LogSegment>>,
    info: LogAppendInfo,
    /// The append changed the epoch cache: its checkpoint is written before the append returns.
    epochs_changed: bool,
}

/// The batches of an append, and who owns their bytes. The log patches base offsets and leader
/// epochs into the bytes it writes, and the tail cache keeps those same bytes: batches the
/// caller owns (a Produce request's records, split off the frame the connection read) are
/// patched where they are, written from there and cached, never copied in user space; borrowed
/// ones are copied once.
pub enum AppendBatches<'a> {
    /// The caller keeps these; the log copies them.
    Borrowed(&'a [u8]),
    /// The log takes these over and writes them as they are; the tail cache keeps them, and
    /// with them the hold on the request frame they were split off (if any).
    Owned(BytesMut, Option<Arc<FrameHold>>),
}

impl AppendBatches<'_> {
    /// The batches' bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            AppendBatches::Borrowed(b) => b,
            AppendBatches::Owned(b, _) => b,
        }
    }

    /// The first `len` bytes, writable: the owned buffer cut to `len`, or a copy (counted in
    /// `io_copies`).
    fn into_write_buffer(self, len: usize) -> (BytesMut, Option<Arc<FrameHold>>) {
        match self {
            AppendBatches::Owned(mut b, hold) => {
                b.truncate(len);
                (b, hold)
            }
            AppendBatches::Borrowed(b) => {
                let b = b.get(..len).unwrap_or(b);
                crate::file_io::copies::add_append_copy(b.len());
                (BytesMut::from(b), None)
            }
        }
    }
}

impl<'a> From<&'a [u8]> for AppendBatches<'a> {
    fn from(b: &'a [u8]) -> Self {
        AppendBatches::Borrowed(b)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for AppendBatches<'a> {
    fn from(b: &'a [u8; N]) -> Self {
        AppendBatches::Borrowed(b)
    }
}

impl<'a> From<&'a Vec<u8>> for AppendBatches<'a> {
    fn from(b: &'a Vec<u8>) -> Self {
        AppendBatches::Borrowed(b)
    }
}

impl<'a> From<&'a Bytes> for AppendBatches<'a> {
    fn from(b: &'a Bytes) -> Self {
        AppendBatches::Borrowed(b)
    }
}

impl From<BytesMut> for AppendBatches<'_> {
    fn from(b: BytesMut) -> Self {
        AppendBatches::Owned(b, None)
    }
}

/// Who appends, which decides what happens to the batches' offsets and leader epochs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AppendOrigin {
    /// `append`: offsets assigned from the log end offset, leader epochs kept as given.
    Client,
    /// `append_as_leader`: offsets assigned, every batch stamped with this leader epoch.
    Leader(i32),
    /// `append_as_follower`: offsets and leader epochs kept as the leader wrote them.
    Replication,
}

/// What the append path learns from a walk over the caller's batches.
#[derive(Clone, Copy)]
struct AppendSummary {
    offsets: i64,
    batches: usize,
    max_timestamp: i64,
    /// A follower append: the first batch's base offset and the last batch's last offset.
    replicated: Option<(i64, i64)>,
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

/// Kafka's checks of a follower append (`analyzeAndValidateRecords` for replication): whole
/// batches with valid framing and CRC, offsets strictly increasing from batch to batch.
/// The record size limit does not apply (Kafka's `ignoreRecordSize`): the leader took them.
/// A partial batch at the end (a fetch response cut by its size limit) is left out, as
/// Kafka's `trimInvalidBytes` does: `valid_bytes` says how much is appended.
fn summarize_replicated(batches: &[u8]) -> Result<(AppendSummary, usize), LogError> {
    let mut summary = AppendSummary {
        offsets: 0,
        batches: 0,
        max_timestamp: NO_TIMESTAMP,
        replicated: None,
    };
    let mut pos = 0;
    let mut range: Option<(i64, i64)> = None;
    while pos < batches.len() {
        let rest = &batches[pos..];
        let partial = rest.len() < RECORD_BATCH_OVERHEAD
            || parse_header(rest).is_ok_and(|h| h.size > rest.len());
        if partial && range.is_some() {
            break;
        }
        let header = check_batch(batches, pos, u32::MAX)?;
        check_crc(&batches[pos..pos + header.size]).map_err(|e| invalid(pos, &e.to_string()))?;
        range = match range {
            Some((_, last)) if header.base_offset <= last => {
                return Err(invalid(
                    pos,
                    &format!(
                        "offsets out of order: base offset {} after last offset {last}",
                        header.base_offset
                    ),
                ));
            }
            Some((first, _)) => Some((first, header.last_offset())),
            None => Some((header.base_offset, header.last_offset())),
        };
        summary.offsets += header.offset_count();
        summary.batches += 1;
        summary.max_timestamp = summary.max_timestamp.max(header.max_timestamp);
        pos += header.size;
    }
    let Some((first, last)) = range else {
        return Err(invalid(0, "no record batch"));
    };
    if first < 0 {
        return Err(invalid(0, "negative base offset"));
    }
    summary.replicated = Some((first, last));
    Ok((summary, pos))
}

fn invalid(position: usize, reason: &str) -> LogError {
    LogError::InvalidBatch {
        position,
        reason: reason.to_string(),
    }
}

impl Log {
    /// Appends `batches` (one or more concatenated v2 batches, validated by
    /// the caller), assigning consecutive offsets from the log end offset.
    /// Offsets are assigned before the first await, so concurrent callers get
    /// them in call order. Returns once these bytes and every earlier append
    /// are written (to the page cache; fsync per the flush policy). Dropping
    /// the future does not cancel the write. Leader epochs are kept as given.
    pub async fn append<'a>(
        &self,
        batches: impl Into<AppendBatches<'a>>,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_with(batches.into(), AppendOrigin::Client).await
    }

    /// Kafka's `appendAsLeader`: [`Log::append`], and every batch's `partitionLeaderEpoch`
    /// (outside the CRC) is stamped with `leader_epoch`; when `leader_epoch` is newer than
    /// the epoch cache's latest, it is recorded as starting at the append's first offset (and
    /// the checkpoint written before this returns).
    pub async fn append_as_leader<'a>(
        &self,
        batches: impl Into<AppendBatches<'a>>,
        leader_epoch: i32,
    ) -> Result<LogAppendInfo, LogError> {
        if leader_epoch < 0 {
            return Err(InvalidEpochEntry {
                epoch: leader_epoch,
                start_offset: self.log_end_offset(),
            }
            .into());
        }
        self.append_with(batches.into(), AppendOrigin::Leader(leader_epoch))
            .await
    }

    /// Kafka's `appendAsFollower`: the batches as read from the leader, offsets and leader
    /// epochs kept. Checked as Kafka does for replication: framing and CRC of every batch
    /// (not `max_message_bytes` nor timestamps: the leader accepted them), base offsets
    /// strictly after the previous batch's last offset (gaps allowed: a compacted leader),
    /// and the first at or past the log end offset (else `UnexpectedAppendOffset`). A
    /// partial batch at the end is left out (Kafka's `trimInvalidBytes`; `info.bytes` says
    /// what was appended). Each batch's epoch goes into the epoch cache (Kafka's
    /// `maybeAssignEpochStartOffset`). Returns when written, like [`Log::append`].
    pub async fn append_as_follower<'a>(
        &self,
        batches: impl Into<AppendBatches<'a>>,
    ) -> Result<LogAppendInfo, LogError> {
        self.append_with(batches.into(), AppendOrigin::Replication)
            .await
    }

    async fn append_with(
        &self,
        batches: AppendBatches<'_>,
        origin: AppendOrigin,
    ) -> Result<LogAppendInfo, LogError> {
        let (summary, valid_bytes) = match origin {
            AppendOrigin::Replication => summarize_replicated(batches.as_slice())?,
            AppendOrigin::Client | AppendOrigin::Leader(_) => {
                let all = batches.as_slice();
                (self.summarize(all)?, all.len())
            }
        };
        // The disk behind: wait in call order (ARCHITECTURE.md, "Appends wait for the file
        // worker").
        crate::page_cache::wait_for_file_worker().await;
        // Reserving right after this (no await in between) keeps call order when no
        // truncation runs.
        self.wait_while_truncating().await;
        let truncations = self.truncations();
        let reservation = self.reserve(batches, valid_bytes, &summary, origin)?;
        let info = reservation.info;
        let epochs_changed = reservation.epochs_changed;
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
        // an acknowledged append never sits behind a hole. (A truncation can only start
        // once every reserved append is written: if one came since, this append was
        // written and then cut, as in Kafka.)
        self.wait_readable(info.last_offset, truncations).await;
        if self.readable_end_offset() <= info.last_offset && self.truncations() == truncations {
            return Err(self.stopped_error());
        }
        if epochs_changed {
            self.checkpoint_epoch_cache().await?;
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
            replicated: None,
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

    /// Synchronous part of an append: assigns offsets and a file position (a follower's
    /// are checked instead), takes the first `len` bytes of the batches as the write buffer
    /// (copied once only when borrowed), patches base offsets and leader epochs into it, rolls
    /// if needed, feeds the epoch cache.
    fn reserve(
        &self,
        batches: AppendBatches<'_>,
        len: usize,
        summary: &AppendSummary,
        origin: AppendOrigin,
    ) -> Result<Reservation, LogError> {
        let mut st = self.state.borrow_mut();
        if st.status != Status::Open {
            return Err(self.error_for(st.status));
        }
        let (first_offset, last_offset) = match summary.replicated {
            Some((first, last)) => {
                if first < st.log_end_offset {
                    return Err(LogError::UnexpectedAppendOffset {
                        expected: st.log_end_offset,
                        got: first,
                    });
                }
                (first, last)
            }
            None => (st.log_end_offset, st.log_end_offset + summary.offsets - 1),
        };
        let now_ms = self.clock.now_ms();
        // LogAppendTime: the batches carry the broker's time from here on, for the roll
        // decision, the time index and the answer alike. A follower keeps the leader's.
        let log_append_time_ms = (origin != AppendOrigin::Replication
            && self.config.borrow().timestamp_type == TimestampType::LogAppendTime)
            .then_some(now_ms);
        let summary = AppendSummary {
            max_timestamp: log_append_time_ms.unwrap_or(summary.max_timestamp),
            ..*summary
        };
        let (segment, rolled_from) =
            self.segment_for_append(&mut st, len, first_offset, last_offset, &summary, now_ms)?;
        let creates_segment = rolled_from.is_some();
        let position = segment.size.get();
        let (mut buf, frame_hold) = batches.into_write_buffer(len);
        debug_assert_eq!(buf.len(), len);
        let epochs_changed = self.patch_and_index(
            &mut buf,
            &segment,
            first_offset,
            position,
            log_append_time_ms,
            origin,
        );
        if epochs_changed {
            self.epoch_cache_changed();
        }
        // No user-space copy of owned batches (one of borrowed ones, `into_write_buffer`): the
        // tail cache shares this buffer, and `pwrite` reads from it.
        let buf = buf.freeze();
        segment.size.set(position + buf.len() as u64);
        segment.last_modified_ms.set(now_ms);
        st.log_end_offset = last_offset + 1;
        if st.tail_cache.limit() > 0 {
            let spot = FileSpot {
                segment_base: segment.base_offset,
                position,
            };
            st.tail_cache
                .push(first_offset, last_offset + 1, buf.clone(), frame_hold, spot);
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
            rolled_from,
            info,
            epochs_changed,
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
    /// A follower's append may skip offsets: the new segment then starts at its first offset
    /// (Kafka rolls at it too), and an empty active segment whose relative offsets the
    /// append would overflow is rolled past as well.
    fn segment_for_append(
        &self,
        st: &mut LogState,
        len: usize,
        first_offset: i64,
        last_offset: i64,
        summary: &AppendSummary,
        now_ms: i64,
    ) -> Result<(Rc<LogSegment>, Option<Rc<LogSegment>>), LogError> {
        if len > i32::MAX as usize {
            return Err(LogError::AppendTooLarge { size: len });
        }
        let active = st
            .segments
            .last_key_value()
            .map(|(_, s)| s.clone())
            .ok_or_else(|| LogError::Failed(self.dir.clone()))?;
        let size = active.size.get();
        let offsets_fit = last_offset - active.base_offset <= i32::MAX as i64;
        if offsets_fit
            && (size == 0 || !self.should_roll(&active, len, last_offset, summary, now_ms))
        {
            // segment_bytes <= i32::MAX, so positions stay within u32.
            return Ok((active, None));
        }
        let base = first_offset;
        let rolled = Rc::new(LogSegment::rolling(base, &self.dir, now_ms));
        st.segments.insert(base, rolled.clone());
        active.final_time_index_entry();
        active.final_index_pending.set(true);
        Ok((rolled, Some(active)))
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
                _ => now_ms.saturating_sub(active.created_ms.get()),
            };
            waited > config.segment_ms
        };
        full || offsets_overflow || index_full || time_due
    }

    /// Rewrites base offsets (and a leader's epoch) in the write buffer, feeds the segment's
    /// indexes (in memory: [`LogSegment::write_index`] writes the files) and the epoch cache;
    /// returns whether the epoch cache changed.
    fn patch_and_index(
        &self,
        buf: &mut [u8],
        segment: &LogSegment,
        first_offset: i64,
        position: u64,
        log_append_time_ms: Option<i64>,
        origin: AppendOrigin,
    ) -> bool {
        let mut index = segment.offset_index.borrow_mut();
        let mut time = segment.time_index.borrow_mut();
        let mut epochs = self.epoch_cache.borrow_mut();
        let mut epochs_changed = false;
        if let AppendOrigin::Leader(epoch) = origin {
            // `None < Some(_)`: the first epoch of an empty cache is new.
            if epochs.latest_epoch() < Some(epoch) {
                // Checked non-negative by `append_as_leader`; offsets are too.
                epochs_changed |= epochs.assign(epoch, first_offset).unwrap_or(false);
            }
        }
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
            match origin {
                AppendOrigin::Client => batch::set_base_offset(&mut buf[pos..], offset),
                AppendOrigin::Leader(epoch) => {
                    batch::set_base_offset(&mut buf[pos..], offset);
                    batch::set_partition_leader_epoch(&mut buf[pos..], epoch);
                }
                AppendOrigin::Replication => {
                    offset = header.base_offset;
                    let epoch = header.partition_leader_epoch;
                    // Kafka's `maybeAssignEpochStartOffset` per batch; a batch without an
                    // epoch (written by a leader that did not stamp one) assigns nothing.
                    if epoch >= 0 {
                        epochs_changed |= epochs.assign(epoch, offset).unwrap_or(false);
                    }
                }
            }
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
        epochs_changed
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
        rolled_from,
        info,
        epochs_changed: _,
    } = r;
    let previous = rolled_from.clone();
    let result = async {
        if creates_segment {
            segment.create_file().await?;
        }
        if let Some(previous) = rolled_from {
            previous.write_index(true).await?;
            previous.final_index_pending.set(false);
        }
        let file = segment.file().await?;
        let len = buf.len() as u64;
        let mark = segment.page_cache_mark(&file)?;
        if let Some(mark) = &mark {
            let segment_bytes = log.config.borrow().effective_segment_bytes();
            mark.preallocate(position + len, segment_bytes);
        }
        write_all(&file, &segment.path, &buf, position).await?;
        if let Some(mark) = &mark {
            if crate::page_cache::window_bytes() > 0 {
                crate::page_cache::appended(mark, position + len, len);
            }
        }
        segment.write_index(false).await
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
