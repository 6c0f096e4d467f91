//! Replication's truncations (Kafka's `UnifiedLog.truncateTo` / `truncateFullyAndStartAt`,
//! `LocalLog.truncateTo`, `LogSegment.truncateTo`): a follower cuts the batches its leader
//! does not have, or drops its whole log to restart at the leader's log start.
//!
//! A truncation first stops new appends (they wait) and waits until every reserved append
//! is written, so no write lands in what it cuts. It then changes the in-memory state in one
//! synchronous step (segments, indexes, tail cache, log end, readable end, recovery point,
//! high watermark, epoch cache) and cuts the files after it, durably, before appends resume:
//! the recovery point checkpoint is lowered first, later segments are unlinked newest first,
//! the cut segment's `.log`, `.index` and `.timeindex` are truncated and fdatasync'ed, then
//! the directory is fsynced and the epoch checkpoint rewritten. A crash at any step leaves a
//! prefix of the old log (with an epoch cache that the next open truncates to its end).

use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use super::{Log, LogPosition, Status};
use crate::batch::{parse_header, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::error::LogError;
use crate::file_io::read_exact;
use crate::loader::{delete_segment_files, sync_dir};
use crate::segment::LogSegment;

/// Bytes read per I/O while walking the batches before the cut.
const WALK_READ_BYTES: u64 = 64 * 1024;

/// Where a segment is cut: what remains of it.
struct Cut {
    /// Bytes kept (the position of the first batch cut).
    position: u64,
    /// Offset after the last batch kept; `None` if the segment keeps no batch.
    end_offset: Option<i64>,
    /// (max timestamp, relative last offset) of the kept batches after the last offset
    /// index entry kept, for the time index.
    kept_tail: Vec<(i64, u32)>,
    /// Position of the last offset index entry kept (0 without one).
    walked_from: u64,
}

/// Holds the truncation flag; dropping it lets appends resume.
pub(super) struct TruncationGuard<'a> {
    log: &'a Log,
}

impl Drop for TruncationGuard<'_> {
    fn drop(&mut self) {
        self.log.state.borrow_mut().truncating = false;
        let wakers = std::mem::take(&mut *self.log.truncation_waiters.borrow_mut());
        wakers.into_iter().for_each(|w| w.wake());
    }
}

impl Log {
    /// Kafka's `UnifiedLog.truncateTo`: cuts the log so that `log_end_offset() <= offset`,
    /// whole batches (a batch holding `offset` goes), with the later segments, the index
    /// entries, the tail cache and the epoch entries from the new end on; lowers the
    /// recovery point, the high watermark (and the log start offset) to the new end. Waits
    /// for in-flight appends first; appends wait meanwhile. Returns whether it cut anything.
    /// With `offset` at or past the log end nothing is cut, but an epoch entry starting at
    /// the log end (an epoch assigned with no data written) is dropped, as Kafka does.
    /// An `offset` below the first segment is `truncate_fully_and_start_at(offset)`.
    pub async fn truncate_to(&self, offset: i64) -> Result<bool, LogError> {
        if offset < 0 {
            return Err(self.out_of_range(offset));
        }
        let _guard = self.begin_truncation().await?;
        let (log_end, first_base) = {
            let st = self.state.borrow();
            let first = st.segments.first_key_value().map_or(0, |(&b, _)| b);
            (st.log_end_offset, first)
        };
        if offset >= log_end {
            self.truncate_epochs_from_end(log_end);
            self.checkpoint_epoch_cache().await?;
            return Ok(false);
        }
        if offset < first_base {
            self.truncate_fully(offset).await?;
            return Ok(true);
        }
        let (segment, doomed) = {
            let st = self.state.borrow();
            let Some((_, segment)) = st.segments.range(..=offset).next_back() else {
                return Err(self.out_of_range(offset));
            };
            let doomed: Vec<Rc<LogSegment>> = st
                .segments
                .range(offset + 1..)
                .map(|(_, s)| s.clone())
                .collect();
            (segment.clone(), doomed)
        };
        let cut = match self.find_cut(&segment, offset).await {
            Ok(cut) => cut,
            Err(e) => {
                self.fail();
                return Err(e);
            }
        };
        let new_end = self.cut_in_memory(&segment, &doomed, &cut, offset);
        tracing::info!(dir = %self.dir.display(), offset, log_end_offset = new_end,
            segments_deleted = doomed.len(), "truncated log");
        let cut_files = async {
            self.checkpoint_recovery_point().await?;
            self.checkpoint_log_start_offset().await?;
            for seg in doomed.iter().rev() {
                seg.set_index_files(None);
                delete_segment_files(&self.dir, seg.base_offset).await?;
                seg.release_deleted();
            }
            segment.truncate_files(cut.position).await?;
            if !doomed.is_empty() {
                sync_dir(&self.dir).await?;
            }
            self.checkpoint_epoch_cache().await
        }
        .await;
        if let Err(e) = cut_files {
            // Memory and disk disagree now: stop, the next open recovers from the files.
            self.fail();
            return Err(e);
        }
        Ok(true)
    }

    /// Kafka's `truncateFullyAndStartAt`: deletes every segment and starts an empty log at
    /// `offset` (log start = log end = recovery point = high watermark = `offset`), with an
    /// empty epoch cache. Waits for in-flight appends first; appends wait meanwhile.
    pub async fn truncate_fully_and_start_at(&self, offset: i64) -> Result<(), LogError> {
        if offset < 0 {
            return Err(self.out_of_range(offset));
        }
        let _guard = self.begin_truncation().await?;
        self.truncate_fully(offset).await
    }

    /// `truncate_fully_and_start_at` under a truncation already begun.
    async fn truncate_fully(&self, offset: i64) -> Result<(), LogError> {
        let now_ms = self.clock.now_ms();
        let fresh = Rc::new(LogSegment::rolling(offset, &self.dir, now_ms));
        let (doomed, wakers) = {
            let mut st = self.state.borrow_mut();
            let doomed: Vec<Rc<LogSegment>> =
                std::mem::take(&mut st.segments).into_values().collect();
            st.segments.insert(offset, fresh.clone());
            st.log_start_offset = offset;
            st.log_end_offset = offset;
            st.readable_end = LogPosition {
                offset,
                segment_base: offset,
                position: 0,
            };
            st.recovery_point = offset;
            st.high_watermark = offset;
            st.tail_cache.clear();
            st.truncations += 1;
            self.fetch_stamp.bump();
            let mut wakers = self.waiters.borrow_mut().take_all();
            wakers.extend(self.hw_waiters.borrow_mut().take_ready(offset));
            (doomed, wakers)
        };
        if self.epoch_cache.borrow_mut().clear() {
            self.epoch_cache_changed();
        }
        wakers.into_iter().for_each(|w| w.wake());
        tracing::info!(dir = %self.dir.display(), offset, segments_deleted = doomed.len(),
            "truncated log fully");
        let replaced = async {
            // The old files go first, newest first: a crash leaves a prefix of the old log,
            // never old batches after the new start.
            for seg in doomed.iter().rev() {
                seg.set_index_files(None);
                delete_segment_files(&self.dir, seg.base_offset).await?;
                seg.release_deleted();
            }
            sync_dir(&self.dir).await?;
            fresh.create_file().await?;
            sync_dir(&self.dir).await?;
            self.checkpoint_log_start_offset().await?;
            self.checkpoint_recovery_point().await?;
            self.checkpoint_epoch_cache().await
        }
        .await;
        if let Err(e) = replaced {
            self.fail();
            return Err(e);
        }
        Ok(())
    }

    /// Waits for any running truncation to end, then stops appends and waits until every
    /// reserved append is written.
    pub(super) async fn begin_truncation(&self) -> Result<TruncationGuard<'_>, LogError> {
        self.wait_while_truncating().await;
        {
            let mut st = self.state.borrow_mut();
            if st.status != Status::Open {
                return Err(self.error_for(st.status));
            }
            st.truncating = true;
        }
        let guard = TruncationGuard { log: self };
        let end = self.log_end_offset();
        self.wait_for_append(end - 1).await;
        if self.readable_end_offset() < end {
            return Err(self.stopped_error());
        }
        Ok(guard)
    }

    /// Resolves when no truncation runs (or the log stopped: the caller then meets the
    /// error). Costs one flag check when none runs.
    pub(super) async fn wait_while_truncating(&self) {
        poll_fn(|cx| {
            if !self.state.borrow().truncating || self.stopped() {
                return Poll::Ready(());
            }
            let mut waiters = self.truncation_waiters.borrow_mut();
            if !waiters.iter().any(|w| w.will_wake(cx.waker())) {
                waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Finds where `segment` is cut for `offset`: the first batch whose last offset is at
    /// or past it. Walks the batch headers from the last offset index entry below `offset`
    /// (about one index interval), collecting what the indexes need about the kept ones.
    async fn find_cut(&self, segment: &LogSegment, offset: i64) -> Result<Cut, LogError> {
        let relative = segment.relative(offset);
        let walked_from = u64::from(segment.offset_index.borrow().floor_below(relative));
        let readable = {
            let st = self.state.borrow();
            super::readable_size(&st, segment)
        };
        let file = segment.file().await?;
        let path = &segment.path;
        let mut cut = Cut {
            position: readable,
            end_offset: None,
            kept_tail: Vec::new(),
            walked_from,
        };
        let mut pos = walked_from;
        while pos < readable {
            let len = WALK_READ_BYTES.min(readable - pos) as usize;
            let chunk = read_exact(&file, path, pos, len).await?;
            let mut off = 0usize;
            while off + RECORD_BATCH_OVERHEAD <= chunk.len() {
                let header: BatchHeader =
                    parse_header(&chunk[off..]).map_err(|e| LogError::Corrupt {
                        path: path.to_path_buf(),
                        position: pos + off as u64,
                        reason: e.to_string(),
                    })?;
                if header.last_offset() >= offset {
                    cut.position = pos + off as u64;
                    return Ok(cut);
                }
                cut.kept_tail.push((
                    header.max_timestamp,
                    (header.last_offset() - segment.base_offset) as u32,
                ));
                cut.end_offset = Some(header.last_offset() + 1);
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
        }
        Ok(cut)
    }

    /// The synchronous part of `truncate_to`: the in-memory state after the cut. Returns the
    /// new log end offset.
    fn cut_in_memory(
        &self,
        segment: &LogSegment,
        doomed: &[Rc<LogSegment>],
        cut: &Cut,
        offset: i64,
    ) -> i64 {
        let relative = segment.relative(offset);
        {
            let mut index = segment.offset_index.borrow_mut();
            index.truncate_to(relative);
            index.bytes_since_last_entry = cut.position - cut.walked_from;
            let mut time = segment.time_index.borrow_mut();
            time.truncate_to(relative);
            for &(max_timestamp, relative_last) in &cut.kept_tail {
                time.observe(max_timestamp, relative_last);
            }
        }
        segment.index_cut();
        segment.truncated_to(cut.position);
        segment.final_index_pending.set(false);
        if cut.position == 0 {
            // Kafka's `LogSegment.truncateTo` on a segment left empty: time-based roll counts
            // from now, and the next batch is its first.
            segment.rolling_based_timestamp.set(None);
            segment.created_ms.set(self.clock.now_ms());
        }
        let new_end = match cut.end_offset {
            Some(end) => end,
            // The walk keeps at least the batch of the entry it starts from, so none kept
            // means it started at the segment's start: the segment is left empty.
            None => segment.base_offset,
        };
        let wakers = {
            let mut st = self.state.borrow_mut();
            for seg in doomed {
                st.segments.remove(&seg.base_offset);
            }
            st.log_end_offset = new_end;
            st.readable_end = LogPosition {
                offset: new_end,
                segment_base: segment.base_offset,
                position: cut.position,
            };
            st.recovery_point = st.recovery_point.min(new_end);
            st.log_start_offset = st.log_start_offset.min(new_end);
            st.high_watermark = st.high_watermark.min(new_end).max(st.log_start_offset);
            st.tail_cache.truncate_to(offset);
            st.truncations += 1;
            self.fetch_stamp.bump();
            // Waits that began before re-check: the offsets they expected may be gone.
            self.waiters.borrow_mut().take_all()
        };
        self.truncate_epochs_from_end(new_end);
        wakers.into_iter().for_each(|w| w.wake());
        new_end
    }

    fn out_of_range(&self, offset: i64) -> LogError {
        let st = self.state.borrow();
        LogError::OffsetOutOfRange {
            offset,
            log_start_offset: st.log_start_offset,
            log_end_offset: st.log_end_offset,
        }
    }
}
