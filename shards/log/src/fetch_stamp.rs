//! A log's fetch stamp: a count that moves whenever anything a caught-up consumer's fetch
//! answer depends on may have changed — the high watermark, the log start offset, the log's
//! status (failed, closing, deleted) and, through the partition, its role and leader epoch.
//!
//! A fetch session remembers the stamp of a partition it answered "nothing new" (caught up, no
//! error); while the stamp has not moved, the next incremental fetch would answer it the same
//! and drop it from the answer again, so the session leaves it out of the read
//! (`fetch_session.rs` in sluice-server). With 1,000 partitions in two sessions, ~96 % of a
//! fetch's partitions are such (ARCHITECTURE.md, "Quiet partitions of a fetch session").
//!
//! The count is atomic because the session may live on another shard than the partition: the
//! owner shard bumps it, the session's shard compares it. A bump the session has not seen yet
//! only means the partition is read one fetch later, as if the change had come a moment later.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The count one log's changes move (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct FetchStamp(Arc<AtomicU64>);

impl FetchStamp {
    /// Marks a change: every mark taken before is no longer current.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    /// A mark of the count as it is now.
    pub fn mark(&self) -> QuietMark {
        QuietMark {
            stamp: self.clone(),
            value: self.0.load(Ordering::Acquire),
        }
    }
}

/// A log's fetch stamp as it was when a read found nothing new.
#[derive(Clone, Debug)]
pub struct QuietMark {
    stamp: FetchStamp,
    value: u64,
}

/// The same mark: of the same stamp, at the same count.
impl PartialEq for QuietMark {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.stamp.0, &other.stamp.0) && self.value == other.value
    }
}

impl Eq for QuietMark {}

impl QuietMark {
    /// Whether nothing the mark covers has changed since it was taken.
    pub fn is_current(&self) -> bool {
        self.stamp.0.load(Ordering::Acquire) == self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_current_until_the_next_bump() {
        let stamp = FetchStamp::default();
        let mark = stamp.mark();
        assert!(mark.is_current());
        stamp.bump();
        assert!(!mark.is_current());
        let again = stamp.mark();
        assert!(again.is_current());
        assert!(!mark.is_current());
    }
}
