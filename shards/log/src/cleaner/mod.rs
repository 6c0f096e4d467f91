//! The log cleaner (Kafka's `LogCleaner`, `Cleaner`, `LogCleanerManager`): compaction of logs
//! whose `cleanup.policy` contains `compact`. One [`LogCleaner`] per shard cleans the logs that
//! shard owns, one log per round, the dirtiest first.
//!
//! A clean of one log (`clean::clean_log`, Kafka's `Cleaner.doClean`):
//! 1. the offset map (key -> latest offset) is filled from the dirty part, from the first
//!    dirty offset (`cleaner-offset-checkpoint`) up to the first uncleanable offset (the high
//!    watermark, the active segment, the first segment newer than `min.compaction.lag.ms`);
//!    when the map fills up first, this clean ends there and the next one goes on (passes);
//! 2. the segments from the log start up to the map's end are grouped by size (at most
//!    `segment.bytes` and the index limits per group) and each group is copied into one
//!    `<base>.log.cleaned` keeping only what `records::filter_batch` keeps;
//! 3. each cleaned segment is swapped in crash-safely (`Log::replace_segments`);
//! 4. the map's end becomes the first dirty offset, checkpointed.

pub(crate) mod clean;
pub(crate) mod offset_map;
pub(crate) mod records;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::error::LogError;
use crate::log::Log;

pub use clean::CleanerStats;
use offset_map::OffsetMap;

/// Per-shard cleaner settings (Kafka's `log.cleaner.*` broker configs, the dedupe buffer
/// already divided among the shards).
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.dedupe.buffer.size` / shards: memory of the offset map.
    pub dedupe_buffer_bytes: usize,
    /// `log.cleaner.io.buffer.size`: bytes read and written per I/O.
    pub io_buffer_bytes: usize,
    /// `log.cleaner.io.max.bytes.per.second`: bound on the cleaner's reads plus writes
    /// (`f64::MAX`, Kafka's default: none).
    pub io_max_bytes_per_second: f64,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        Self {
            dedupe_buffer_bytes: 128 << 20,
            io_buffer_bytes: 512 << 10,
            io_max_bytes_per_second: f64::MAX,
        }
    }
}

/// What makes a log worth cleaning now (Kafka's `LogToClean`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogToClean {
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// Bytes of the segments below the first dirty offset.
    pub clean_bytes: u64,
    /// Bytes of the segments from the first dirty offset to the first uncleanable one.
    pub dirty_bytes: u64,
    /// `max.compaction.lag.ms` passed for the first dirty batch, or a delete horizon passed:
    /// cleaned whatever the ratio.
    pub forced: bool,
}

impl LogToClean {
    /// Kafka's `cleanableRatio`: dirty / (clean + dirty).
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }
}

/// Bounds the cleaner's I/O rate (Kafka's `Throttler`: checked every 300 ms of I/O) and lets
/// the other tasks of the shard run between batches.
pub(crate) struct Throttler {
    bytes_per_second: f64,
    window_start: Cell<Instant>,
    window_bytes: Cell<f64>,
}

const THROTTLE_CHECK_MS: u64 = 300;

impl Throttler {
    fn new(bytes_per_second: f64) -> Self {
        Self {
            bytes_per_second,
            window_start: Cell::new(Instant::now()),
            window_bytes: Cell::new(0.0),
        }
    }

    /// Accounts `bytes` of cleaner I/O; sleeps when the rate is above the bound.
    pub async fn maybe_throttle(&self, bytes: usize) {
        if self.bytes_per_second < f64::MAX && self.bytes_per_second > 0.0 {
            self.window_bytes
                .set(self.window_bytes.get() + bytes as f64);
            let elapsed = self.window_start.get().elapsed();
            if elapsed >= Duration::from_millis(THROTTLE_CHECK_MS) {
                let wanted =
                    Duration::from_secs_f64(self.window_bytes.get() / self.bytes_per_second);
                if wanted > elapsed {
                    glommio::timer::sleep(wanted - elapsed).await;
                }
                self.window_start.set(Instant::now());
                self.window_bytes.set(0.0);
            }
        }
        glommio::yield_if_needed().await;
    }
}

/// One shard's cleaner: its settings and the I/O throttle. The offset map is allocated per
/// clean, bounded by the work (see `map_bytes_for`), grows with the keys it meets within that
/// bound, and is freed after it.
pub struct LogCleaner {
    config: CleanerConfig,
    throttler: Throttler,
}

/// The fewest bytes a keyed record takes in a v2 batch (length, attributes, timestamp and
/// offset deltas, key length, a 1-byte key, value length, header count): so a dirty section
/// of N bytes holds at most N / 8 keys.
const KEYED_RECORD_BYTES_MIN: u64 = 8;

/// Offset map bytes at most for a clean of `dirty_bytes`: enough for every key the dirty
/// section can hold, up to the shard's share of `log.cleaner.dedupe.buffer.size`. Kafka keeps the whole
/// buffer for the broker's life; here a broker whose compacted logs are small (most have only
/// `__consumer_offsets`) does not hold 64 MiB per shard after its first clean.
fn map_bytes_for(dirty_bytes: u64, budget_bytes: usize) -> usize {
    let keys = dirty_bytes / KEYED_RECORD_BYTES_MIN + 1;
    let wanted = ((keys as f64 / offset_map::LOAD_FACTOR) as u64)
        .saturating_mul(offset_map::SLOT_BYTES as u64);
    usize::try_from(wanted).map_or(budget_bytes, |w| w.min(budget_bytes))
}

impl LogCleaner {
    pub fn new(config: CleanerConfig) -> Self {
        let throttler = Throttler::new(config.io_max_bytes_per_second);
        Self { config, throttler }
    }

    /// Kafka's `grabFilthiestCompactedLog` + `cleanLog`: of `logs`, the one with the highest
    /// dirty ratio at or above its `min.cleanable.dirty.ratio` (or forced by
    /// `max.compaction.lag.ms` / a passed delete horizon) is cleaned. `None` when none
    /// qualifies. An error names the log it came from.
    pub async fn clean_filthiest(
        &self,
        logs: impl IntoIterator<Item = Rc<Log>>,
    ) -> Result<Option<(Rc<Log>, CleanerStats)>, (Rc<Log>, LogError)> {
        let mut best: Option<(f64, Rc<Log>, LogToClean)> = None;
        for log in logs {
            let Some(todo) = log.log_to_clean() else {
                continue;
            };
            let min_ratio = f64::from(log.config().min_cleanable_dirty_ratio_ppm) / 1e6;
            let ratio = todo.dirty_ratio();
            if !(todo.forced || (todo.dirty_bytes > 0 && ratio >= min_ratio)) {
                continue;
            }
            let score = if todo.forced { f64::MAX } else { ratio };
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, log, todo));
            }
        }
        let Some((_, log, todo)) = best else {
            return Ok(None);
        };
        match self.clean_with(&log, todo).await {
            Ok(stats) => Ok(Some((log, stats))),
            Err(e) => Err((log, e)),
        }
    }

    /// Cleans `log` now if it has anything cleanable, whatever its dirty ratio (tests, and the
    /// rounds `clean_filthiest` chose).
    pub async fn clean(&self, log: &Log) -> Result<Option<CleanerStats>, LogError> {
        let Some(todo) = log.log_to_clean() else {
            return Ok(None);
        };
        self.clean_with(log, todo).await.map(Some)
    }

    async fn clean_with(&self, log: &Log, todo: LogToClean) -> Result<CleanerStats, LogError> {
        let mut map = OffsetMap::new(map_bytes_for(
            todo.dirty_bytes,
            self.config.dedupe_buffer_bytes,
        ));
        let mut stats = clean::clean_log(
            log,
            todo,
            &mut map,
            &self.throttler,
            self.config.io_buffer_bytes.max(4096),
        )
        .await?;
        stats.map_bytes = map.memory_bytes();
        Ok(stats)
    }
}

/// Test hook: a crash test's child process stops at the named step of a swap (the parent
/// then kills it with SIGKILL).
#[cfg(test)]
pub(crate) fn crash_point(step: &str) {
    use std::io::Write;
    if std::env::var("SLUICE_CLEANER_CRASH_AT").is_ok_and(|s| s == step) {
        println!("CRASH-POINT {step}");
        let _ = std::io::stdout().flush();
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

#[cfg(not(test))]
#[inline(always)]
pub(crate) fn crash_point(_step: &str) {}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod map_size_tests {
    use super::*;

    #[test]
    fn the_offset_map_is_sized_to_the_dirty_section_within_the_budget() {
        let budget = 64 << 20;
        let small = map_bytes_for(1 << 20, budget);
        // Room for every key 1 MiB can hold, at the load factor.
        assert!(small >= (1 << 20) / 8 * offset_map::SLOT_BYTES, "{small}");
        assert!(small < budget);
        assert_eq!(map_bytes_for(1 << 30, budget), budget);
        assert_eq!(map_bytes_for(u64::MAX, budget), budget);
        assert!(map_bytes_for(0, budget) > 0);
    }
}
