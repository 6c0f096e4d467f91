//! Retention decisions (Kafka's `deleteRetentionMsBreachedSegments`,
//! `deleteRetentionSizeBreachedSegments`, `deleteLogStartOffsetBreachedSegments`),
//! as a pure function over the closed segments so it can be checked against
//! a brute-force model.

use crate::config::LogConfig;

/// A closed segment that retention may delete, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetentionCandidate {
    pub size: u64,
    /// Kafka's `largestTimestamp`: the batches' max timestamp, or the last
    /// modification time without timestamps.
    pub largest_timestamp: i64,
    /// Base offset of the segment after it.
    pub next_base: i64,
}

/// How many segments from the front may be deleted: while the front one is
/// past `retention_ms`, or dropping it keeps the log (of `total_size` bytes,
/// active segment included) at least `retention_bytes`, or it lies wholly
/// below the log start offset. Each rule alone deletes a prefix; running
/// them one after another (as Kafka does, round after round) deletes the
/// longest chain of fronts that satisfy any of them.
pub(crate) fn deletable_segments(
    candidates: &[RetentionCandidate],
    total_size: u64,
    log_start_offset: i64,
    config: &LogConfig,
    now_ms: i64,
) -> usize {
    let mut remaining = total_size as i128;
    let mut n = 0;
    for c in candidates {
        // A compact-only log keeps its data however old or big (Kafka's `cleanup.policy`).
        let by_time = config.cleanup_policy_delete
            && config.retention_ms >= 0
            && i128::from(now_ms) - i128::from(c.largest_timestamp)
                > i128::from(config.retention_ms);
        let by_size = config.cleanup_policy_delete
            && config.retention_bytes >= 0
            && remaining - c.size as i128 >= i128::from(config.retention_bytes);
        let by_start = c.next_base <= log_start_offset;
        if !(by_time || by_size || by_start) {
            break;
        }
        remaining -= c.size as i128;
        n += 1;
    }
    n
}
