//! Moving the log start offset up: retention rounds (the policy is `crate::retention`) and
//! DeleteRecords, then deleting the closed segments wholly below it.

use std::rc::Rc;

use tracing::info;

use super::{Log, LogState, Status};
use crate::error::LogError;
use crate::loader::delete_segment_files;
use crate::retention::{deletable_segments, RetentionCandidate};
use crate::segment::LogSegment;

impl Log {
    /// One round of retention, for the shard's background timer: deletes at
    /// most `max_segments` whole closed segments from the front — those past
    /// `retention_ms` (largest timestamp older than `now_ms - retention_ms`),
    /// those `retention_bytes` allows dropping, and those wholly below the
    /// log start offset — oldest first, never the active segment, one
    /// with writes in flight, nor one reaching past the high watermark. Moves the log start offset to the first
    /// remaining segment (checkpointed). Returns the number deleted.
    pub async fn run_retention(&self, now_ms: i64, max_segments: usize) -> Result<usize, LogError> {
        let doomed = {
            let mut st = self.state.borrow_mut();
            // A running truncation owns the segments; the next round catches up.
            if st.status != Status::Open || st.truncating {
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
            // Kafka's `deletableSegments`: never past the high watermark, so a record not yet
            // committed (an acks=all produce still waiting, a follower's tail) is not deleted
            // from under the replication that decides it.
            let n = candidates
                .iter()
                .take(n)
                .take_while(|c| c.next_base <= st.high_watermark)
                .count();
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
        self.wait_while_truncating().await;
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
        self.log_start_moved();
        self.checkpoint_log_start_offset().await?;
        self.checkpoint_epoch_cache().await?;
        if doomed.is_empty() {
            return Ok(());
        }
        let bytes: u64 = doomed.iter().map(|s| s.size.get()).sum();
        for seg in &doomed {
            seg.set_index_files(None);
            delete_segment_files(&self.dir, seg.base_offset).await?;
            seg.release_deleted();
        }
        info!(dir = %self.dir.display(), segments = doomed.len(), bytes, reason,
            log_start_offset = self.log_start_offset(), "deleted log segments");
        Ok(())
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
