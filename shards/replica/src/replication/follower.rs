//! The follower's side: what it fetches with, where it truncates when the leader answers a
//! diverging epoch (Kafka's `AbstractFetcherThread.getOffsetTruncationState`, KIP-101 and
//! KIP-279 through KIP-320's Fetch v12+), what it does on OFFSET_OUT_OF_RANGE, and its high
//! watermark after a fetch.

use sluice_log::{LeaderEpochFileCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};

use super::{BrokerId, EpochEndOffset};

/// What a follower sends for one partition in a Fetch (v12+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchRequest {
    /// The follower's broker id.
    pub replica_id: BrokerId,
    /// The follower's broker epoch (KIP-903).
    pub broker_epoch: i64,
    /// The leader epoch the follower believes current.
    pub current_leader_epoch: i32,
    /// The follower's log end offset.
    pub fetch_offset: i64,
    /// The epoch of the follower's last record, `None` when its log has none.
    pub last_fetched_epoch: Option<i32>,
    /// The follower's log start offset.
    pub log_start_offset: i64,
}

impl FetchRequest {
    /// The next fetch of a follower whose log ends at `log_end_offset` with epochs `cache`.
    pub fn new(
        replica_id: BrokerId,
        broker_epoch: i64,
        current_leader_epoch: i32,
        cache: &LeaderEpochFileCache,
        log_start_offset: i64,
        log_end_offset: i64,
    ) -> Self {
        #[cfg(test)]
        let cache = if broken_pre_kip101() {
            &LeaderEpochFileCache::new()
        } else {
            cache
        };
        Self {
            replica_id,
            broker_epoch,
            current_leader_epoch,
            fetch_offset: log_end_offset,
            last_fetched_epoch: cache.latest_epoch(),
            log_start_offset,
        }
    }
}

/// Where to truncate, and whether that ends the truncation (Kafka's `OffsetTruncationState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetTruncationState {
    /// Truncate the log to this offset (no-op when it is the log end offset).
    pub offset: i64,
    /// `false`: the follower did not know the leader's epoch, truncated to the end of its own
    /// largest earlier epoch, and its next fetch (with that epoch) asks again (KIP-279).
    pub truncation_completed: bool,
}

#[cfg(test)]
thread_local! {
    /// Tests only: a deliberately wrong truncation rule, to prove the simulation and the KIP
    /// tests catch one (see `sim.rs`).
    pub(crate) static BROKEN_TRUNCATION: std::cell::Cell<Option<BrokenTruncation>> =
        const { std::cell::Cell::new(None) };
}

/// Tests only: wrong rules the simulation must catch.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BrokenTruncation {
    /// Pre-KIP-279: truncate to the leader's end offset without checking that this replica
    /// knows the epoch the leader answered with.
    IgnoreFollowerEpochs,
    /// Pre-KIP-101: a follower truncates to its own high watermark when its leader changes,
    /// and fetches without its last fetched epoch (so no diverging epoch ever comes back).
    PreKip101,
}

/// Tests only: whether the pre-KIP-101 rules are switched on.
#[cfg(test)]
pub(crate) fn broken_pre_kip101() -> bool {
    BROKEN_TRUNCATION.with(std::cell::Cell::get) == Some(BrokenTruncation::PreKip101)
}

/// Where a follower whose log ends at `log_end_offset` (epochs `cache`) truncates when the
/// leader answers `diverging` to its fetch at `fetch_offset`.
///
/// The follower looks up its own end of the epoch the leader answered with. Same epoch: the
/// logs agree up to the smaller of the two ends. The follower's largest epoch ≤ it is an
/// earlier one (it never saw the leader's epoch): truncate to the end of that earlier epoch,
/// not to the leader's offset, as records after it were written under epochs the leader never
/// had (KIP-279), and ask again. The follower has no epoch ≤ it: trust the leader's offset.
/// An unknown end offset keeps the fetch offset; an unknown epoch (old protocol) takes the
/// leader's offset.
pub fn offset_truncation_state(
    diverging: EpochEndOffset,
    cache: &LeaderEpochFileCache,
    log_end_offset: i64,
    fetch_offset: i64,
) -> OffsetTruncationState {
    #[cfg(test)]
    if BROKEN_TRUNCATION.with(std::cell::Cell::get) == Some(BrokenTruncation::IgnoreFollowerEpochs)
    {
        return OffsetTruncationState {
            offset: diverging.end_offset.min(log_end_offset),
            truncation_completed: true,
        };
    }
    if diverging.end_offset == UNDEFINED_EPOCH_OFFSET {
        return OffsetTruncationState {
            offset: fetch_offset,
            truncation_completed: true,
        };
    }
    if diverging.epoch == UNDEFINED_EPOCH {
        return OffsetTruncationState {
            offset: diverging.end_offset.min(log_end_offset),
            truncation_completed: true,
        };
    }
    let (follower_epoch, follower_end_offset) =
        cache.end_offset_for(diverging.epoch, log_end_offset);
    if follower_end_offset == UNDEFINED_EPOCH_OFFSET {
        OffsetTruncationState {
            offset: diverging.end_offset.min(log_end_offset),
            truncation_completed: true,
        }
    } else if follower_epoch != diverging.epoch {
        OffsetTruncationState {
            offset: follower_end_offset.min(log_end_offset),
            truncation_completed: false,
        }
    } else {
        OffsetTruncationState {
            offset: follower_end_offset
                .min(diverging.end_offset)
                .min(log_end_offset),
            truncation_completed: true,
        }
    }
}

/// The follower's high watermark after a fetch: the leader's, within its own log
/// (`UnifiedLog.updateHighWatermark`); it may move back, the leader's never does.
pub fn follower_high_watermark(
    leader_high_watermark: i64,
    log_start_offset: i64,
    log_end_offset: i64,
) -> i64 {
    leader_high_watermark
        .min(log_end_offset)
        .max(log_start_offset)
}

/// What a follower does when the leader answers OFFSET_OUT_OF_RANGE (Kafka's
/// `fetchOffsetAndTruncate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutOfRangeTruncation {
    /// The leader's log is shorter (possible only after an unclean election): truncate to its
    /// end and fetch from there.
    TruncateTo(i64),
    /// The leader's log starts after ours ends: drop everything and start at its log start.
    TruncateFullyAndStartAt(i64),
    /// Nothing to cut: fetch from this offset.
    FetchFrom(i64),
}

/// Kafka's `fetchOffsetAndTruncate` from the leader's log start and end offsets.
pub fn out_of_range_truncation(
    leader_log_start_offset: i64,
    leader_log_end_offset: i64,
    log_end_offset: i64,
) -> OutOfRangeTruncation {
    if leader_log_end_offset < log_end_offset {
        OutOfRangeTruncation::TruncateTo(leader_log_end_offset)
    } else if leader_log_start_offset > log_end_offset {
        OutOfRangeTruncation::TruncateFullyAndStartAt(leader_log_start_offset)
    } else {
        OutOfRangeTruncation::FetchFrom(log_end_offset.max(leader_log_start_offset))
    }
}
