//! The high watermark: offsets below it are committed (on every ISR member); consumers read
//! below it. The replication core computes it, the log keeps it (not persisted: it starts at
//! the log start offset at open, Kafka's leader and follower both re-learn it from fetches)
//! and wakes the tasks waiting for it (acks=all produce, consumer long polls).

use super::read::{WaitFor, WaitTarget};
use super::Log;

impl Log {
    /// The high watermark: in [log start offset, readable end offset].
    pub fn high_watermark(&self) -> i64 {
        self.state.borrow().high_watermark
    }

    /// Raises the high watermark to `hw`, clamped to [log start offset, readable end offset]
    /// (a follower's LEO can only count written data); returns whether it moved. It never
    /// moves down here: only a truncation lowers it.
    pub fn update_high_watermark(&self, hw: i64) -> bool {
        let wakers = {
            let mut st = self.state.borrow_mut();
            let new = hw.min(st.readable_end.offset).max(st.log_start_offset);
            if new <= st.high_watermark {
                return false;
            }
            st.high_watermark = new;
            self.fetch_stamp.bump();
            self.hw_waiters.borrow_mut().take_ready(new)
        };
        wakers.into_iter().for_each(|w| w.wake());
        true
    }

    /// Resolves once `high_watermark() > beyond_offset`, or when the log stops (failed,
    /// closed, deleted), like [`Log::wait_for_append`].
    pub async fn wait_for_high_watermark(&self, beyond_offset: i64) {
        WaitFor::new(self, WaitTarget::HighWatermark, beyond_offset, None).await
    }

    /// After the log start offset moved up (retention, DeleteRecords): the high watermark
    /// follows it (Kafka's `updateLogStartOffset`) and the epoch cache drops what lies below.
    pub(super) fn log_start_moved(&self) {
        self.fetch_stamp.bump();
        let log_start = self.log_start_offset();
        self.truncate_epochs_from_start(log_start);
        let wakers = {
            let mut st = self.state.borrow_mut();
            if st.high_watermark >= log_start {
                return;
            }
            st.high_watermark = log_start;
            self.hw_waiters.borrow_mut().take_ready(log_start)
        };
        wakers.into_iter().for_each(|w| w.wake());
    }
}
