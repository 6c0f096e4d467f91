//! Flushing: fdatasync of the segments from the recovery point on (with their index files and
//! the directory), the flush after a roll, and Kafka's `flush.messages` / `flush.ms` policy.

use std::rc::Rc;
use std::time::Duration;

use tracing::warn;

use super::{Log, Status};
use crate::error::LogError;
use crate::loader::sync_dir;
use crate::segment::LogSegment;

impl Log {
    /// fdatasyncs everything appended before this call (waiting for those
    /// writes to complete first), with the segments' index files, advances
    /// the recovery point and checkpoints it.
    pub async fn flush(&self) -> Result<(), LogError> {
        self.flush_to(self.log_end_offset()).await
    }

    /// Flushes the offsets below `target` (Kafka's `flushUptoOffsetExclusive`). A truncation
    /// meanwhile may have cut offsets below `target`: the flush then starts over for what
    /// remains.
    async fn flush_to(&self, mut target: i64) -> Result<(), LogError> {
        loop {
            let truncations = self.truncations();
            if self.try_flush_to(target, truncations).await? {
                return Ok(());
            }
            target = target.min(self.log_end_offset());
        }
    }

    /// One attempt of `flush_to`; `Ok(false)` when a truncation since `truncations`
    /// interfered (the recovery point is then left alone).
    async fn try_flush_to(&self, target: i64, truncations: u64) -> Result<bool, LogError> {
        self.wait_readable(target - 1, truncations).await;
        if self.truncations() != truncations {
            return Ok(false);
        }
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
            self.wait_readable(last, truncations).await;
            if self.truncations() != truncations {
                return Ok(false);
            }
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
            if st.truncations != truncations {
                // What was synced may be cut already: the recovery point must not pass it.
                return Ok(false);
            }
            st.recovery_point = st.recovery_point.max(new_recovery_point);
        }
        self.checkpoint_recovery_point().await?;
        Ok(true)
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
    pub(super) async fn flush_rolled(&self, previous: Rc<LogSegment>, new_base: i64) {
        if self.state.borrow().status != Status::Open {
            return; // close() flushes everything itself
        }
        match self.flush_to(new_base).await {
            Ok(()) => {
                previous.set_index_files(None);
                // Its unused preallocated blocks go, while it is not the active segment (a
                // truncation since may have made it that again): its size is then final.
                if self.next_base(&previous).is_some() {
                    if let Some(mark) = previous.existing_page_cache_mark() {
                        mark.trim(previous.size.get());
                    }
                }
            }
            Err(e) if self.stopped() => {
                tracing::debug!(dir = %self.dir.display(), error = %e, "roll flush skipped")
            }
            Err(e) => warn!(dir = %self.dir.display(), error = %e, "flush after roll failed"),
        }
    }

    /// Kafka's `flush.messages` and `flush.ms`.
    pub(super) async fn apply_flush_policy(&self) -> Result<(), LogError> {
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
}
