//! Kafka's `LeaderEpochFileCache` and its `leader-epoch-checkpoint` file.
//!
//! The cache maps each leader epoch to the first offset written in it. A follower and a leader
//! compare these maps (KIP-101, KIP-279, KIP-320's diverging epoch in Fetch v12+) to find the
//! offset where their logs diverge, instead of truncating to a high watermark that may be stale.
//!
//! Sans-IO: the cache itself never touches the disk. Every mutation returns whether the entries
//! changed, and the owner then writes them with [`LeaderEpochCheckpointFile::write`] (Kafka's
//! cache writes its file inside `assign`/`truncate*`; splitting the two keeps the rules testable
//! without an executor and lets the replication simulation model the file as always durable).
//!
//! File format (Kafka's `LeaderEpochCheckpointFile`, text, `\n` line ends): the version `0`,
//! the number of entries, then one `epoch startOffset` line per entry in epoch order. Read back
//! strictly, as Kafka's `CheckpointFile` does: a wrong version, a malformed line or a count that
//! does not match the lines is an error, never a panic and never a silently shorter cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tracing::{debug, warn};

use crate::checkpoint::{new_writer_id, read_checkpoint_bytes, write_checkpoint_bytes};
use crate::error::LogError;

/// No epoch known (Kafka's `RecordBatch.NO_PARTITION_LEADER_EPOCH`, `UNDEFINED_EPOCH`).
pub const UNDEFINED_EPOCH: i32 = -1;
/// No end offset known for an epoch (Kafka's `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// The file name, in the partition directory, as Kafka names it.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";
const VERSION: &str = "0";
/// A cache holds one line per leader epoch the partition saw with data; 1 MiB is ~50,000 of
/// them, far beyond a real partition, and bounds what a corrupt file makes us read.
const FILE_SIZE_MAX_BYTES: u64 = 1 << 20;

/// One entry: the first offset written under `epoch` (Kafka's `EpochEntry`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpochEntry {
    /// The leader epoch.
    pub epoch: i32,
    /// The first offset of the epoch.
    pub start_offset: i64,
}

/// Why an entry was refused (Kafka throws `IllegalArgumentException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid partition leader epoch entry (epoch {epoch}, start offset {start_offset})")]
pub struct InvalidEpochEntry {
    /// The refused epoch.
    pub epoch: i32,
    /// The refused start offset.
    pub start_offset: i64,
}

/// Kafka's `LeaderEpochFileCache`, in memory: epoch → start offset, both strictly increasing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderEpochFileCache {
    epochs: BTreeMap<i32, i64>,
}

impl LeaderEpochFileCache {
    /// An empty cache (a new partition, or a missing checkpoint file).
    pub fn new() -> Self {
        Self::default()
    }

    /// A cache from a checkpoint's entries, assigned in order as Kafka loads them (so entries
    /// that are not monotonic are dropped by the same rule as `assign`).
    pub fn from_entries(entries: &[EpochEntry]) -> Result<Self, InvalidEpochEntry> {
        let mut cache = Self::new();
        for entry in entries {
            cache.assign(entry.epoch, entry.start_offset)?;
        }
        Ok(cache)
    }

    /// The entries in epoch order, as the checkpoint file holds them.
    pub fn entries(&self) -> Vec<EpochEntry> {
        self.epochs
            .iter()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
            .collect()
    }

    /// Whether the cache has no entry.
    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }

    /// Records that `epoch` starts at `start_offset`. Returns whether the cache changed (the
    /// owner then rewrites the checkpoint). Kafka's rules: nothing changes when `epoch` is the
    /// latest epoch and `start_offset` is not below its start (the common case: every batch of
    /// the current epoch is offered); otherwise every entry with an epoch ≥ `epoch` or a start
    /// offset ≥ `start_offset` is removed first (they conflict with the new entry), with a
    /// warning unless that was only the same epoch moving down or an entry at the same offset
    /// being replaced (no data was written under it).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool, InvalidEpochEntry> {
        if epoch < 0 || start_offset < 0 {
            return Err(InvalidEpochEntry {
                epoch,
                start_offset,
            });
        }
        let update_needed = match self.latest_entry() {
            Some(latest) => epoch != latest.epoch || start_offset < latest.start_offset,
            None => true,
        };
        if !update_needed {
            return Ok(false);
        }
        let removed: Vec<EpochEntry> = self
            .epochs
            .iter()
            .rev()
            .take_while(|(&e, &o)| e >= epoch || o >= start_offset)
            .map(|(&e, &o)| EpochEntry {
                epoch: e,
                start_offset: o,
            })
            .collect();
        for entry in &removed {
            self.epochs.remove(&entry.epoch);
        }
        self.epochs.insert(epoch, start_offset);
        if removed.len() > 1
            || removed
                .first()
                .is_some_and(|r| r.start_offset != start_offset)
        {
            warn!(
                epoch,
                start_offset,
                ?removed,
                entries = self.epochs.len(),
                "new epoch entry caused truncation of conflicting entries"
            );
        } else {
            debug!(
                epoch,
                start_offset,
                entries = self.epochs.len(),
                "appended new epoch entry"
            );
        }
        Ok(true)
    }

    /// The latest epoch, if any (Kafka's `latestEpoch`).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.latest_entry().map(|e| e.epoch)
    }

    /// The latest entry, if any.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .iter()
            .next_back()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The earliest entry, if any.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.epochs
            .iter()
            .next()
            .map(|(&epoch, &start_offset)| EpochEntry {
                epoch,
                start_offset,
            })
    }

    /// The epoch before `epoch` in the cache (Kafka's `previousEpoch` of the latest is
    /// `previous_epoch(latest)`).
    pub fn previous_epoch(&self, epoch: i32) -> Option<i32> {
        self.epochs.range(..epoch).next_back().map(|(&e, _)| e)
    }

    /// The epoch `offset` was written in: the entry starting exactly there, else the last one
    /// starting before it; `None` if the offset is before the first entry (Kafka's
    /// `epochForOffset`).
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let mut previous = None;
        for (&epoch, &start_offset) in &self.epochs {
            if start_offset == offset {
                return Some(epoch);
            }
            if start_offset > offset {
                return previous;
            }
            previous = Some(epoch);
        }
        previous
    }

    /// Kafka's `endOffsetFor(requestedEpoch, logEndOffset)`: the largest epoch ≤
    /// `requested_epoch` this replica knows and the end offset of that epoch (the start of the
    /// next higher epoch, or `log_end_offset` for the latest).
    ///
    /// - `UNDEFINED_EPOCH` asked, or an epoch above every known one:
    ///   `(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)`;
    /// - the latest epoch: `(requested_epoch, log_end_offset)`;
    /// - below the earliest epoch: `(requested_epoch, start offset of the earliest)` (the data
    ///   is gone; the follower restarts from where the leader's history begins);
    /// - otherwise: `(floor epoch, start offset of the next higher epoch)`.
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        if requested_epoch == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return (requested_epoch, log_end_offset);
        }
        let Some((_, &higher_start)) = self
            .epochs
            .range(requested_epoch.saturating_add(1)..)
            .next()
        else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match self.epochs.range(..=requested_epoch).next_back() {
            None => (requested_epoch, higher_start),
            Some((&floor_epoch, _)) => (floor_epoch, higher_start),
        }
    }

    /// Removes every entry starting at or after `end_offset` (the log was truncated to it).
    /// Returns whether the cache changed. Kafka's `truncateFromEnd`.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let needed = end_offset >= 0
            && self
                .latest_entry()
                .is_some_and(|latest| latest.start_offset >= end_offset);
        if !needed {
            return false;
        }
        self.epochs.retain(|_, start| *start < end_offset);
        debug!(
            end_offset,
            entries = self.epochs.len(),
            "truncated epoch cache from end"
        );
        true
    }

    /// Removes the entries wholly before `start_offset` (the log start moved to it) and moves
    /// the start of the epoch that contains `start_offset` up to it. Returns whether the cache
    /// changed. Kafka's `truncateFromStart`.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let needed = start_offset >= 0
            && self
                .earliest_entry()
                .is_some_and(|first| first.start_offset < start_offset);
        if !needed {
            return false;
        }
        let removed: Vec<i32> = self
            .epochs
            .iter()
            .take_while(|(_, &o)| o <= start_offset)
            .map(|(&e, _)| e)
            .collect();
        for epoch in &removed {
            self.epochs.remove(epoch);
        }
        if let Some(&last_removed) = removed.last() {
            self.epochs.insert(last_removed, start_offset);
        }
        debug!(
            start_offset,
            entries = self.epochs.len(),
            "truncated epoch cache from start"
        );
        true
    }

    /// Removes every entry (Kafka's `clearAndFlush`, e.g. when the log is truncated fully).
    pub fn clear(&mut self) -> bool {
        let changed = !self.epochs.is_empty();
        self.epochs.clear();
        changed
    }

    /// The file's bytes for these entries.
    pub fn encode(&self) -> Vec<u8> {
        let mut text = format!("{VERSION}\n{}\n", self.epochs.len());
        for (epoch, start_offset) in &self.epochs {
            text.push_str(&format!("{epoch} {start_offset}\n"));
        }
        text.into_bytes()
    }

    /// Parses the file's bytes strictly; `path` only names the file in errors.
    pub fn decode(path: &Path, data: &[u8]) -> Result<Self, LogError> {
        let corrupt = |position: usize, reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            position: position as u64,
            reason,
        };
        let text = std::str::from_utf8(data)
            .map_err(|e| corrupt(e.valid_up_to(), "not UTF-8 text".to_string()))?;
        let mut position = 0;
        let mut lines = text.split_inclusive('\n').map(|line| {
            let at = position;
            position += line.len();
            (at, line.strip_suffix('\n').unwrap_or(line))
        });
        let (at, version) = lines
            .next()
            .ok_or_else(|| corrupt(0, "empty file".to_string()))?;
        if version.trim() != VERSION {
            return Err(corrupt(at, format!("unrecognised version {version:?}")));
        }
        let (at, count) = lines
            .next()
            .ok_or_else(|| corrupt(text.len(), "no entry count".to_string()))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| corrupt(at, format!("malformed entry count {count:?}")))?;
        let mut entries = Vec::new();
        for (at, line) in lines {
            let mut fields = line.split_whitespace();
            let parsed = match (fields.next(), fields.next(), fields.next()) {
                (Some(epoch), Some(offset), None) => {
                    epoch.parse::<i32>().ok().zip(offset.parse::<i64>().ok())
                }
                _ => None,
            };
            let Some((epoch, start_offset)) = parsed else {
                return Err(corrupt(at, format!("malformed line {line:?}")));
            };
            entries.push(EpochEntry {
                epoch,
                start_offset,
            });
        }
        if entries.len() != count {
            return Err(corrupt(
                text.len(),
                format!("expected {count} entries, found {}", entries.len()),
            ));
        }
        Self::from_entries(&entries).map_err(|e| corrupt(0, e.to_string()))
    }
}

/// The `leader-epoch-checkpoint` file of one partition directory.
#[derive(Debug)]
pub struct LeaderEpochCheckpointFile {
    dir: PathBuf,
    writer: u64,
}

impl LeaderEpochCheckpointFile {
    /// The checkpoint in partition directory `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            writer: new_writer_id(),
        }
    }

    /// Reads the cache back: empty if the file does not exist (a new partition, as Kafka
    /// creates it then); any other problem, a corrupt file included, is an error.
    pub async fn read(&self) -> Result<LeaderEpochFileCache, LogError> {
        match read_checkpoint_bytes(&self.dir, LEADER_EPOCH_CHECKPOINT_FILE, FILE_SIZE_MAX_BYTES)
            .await?
        {
            None => Ok(LeaderEpochFileCache::new()),
            Some(data) => {
                LeaderEpochFileCache::decode(&self.dir.join(LEADER_EPOCH_CHECKPOINT_FILE), &data)
            }
        }
    }

    /// Replaces the file with `cache`'s entries, durably (temp file, fdatasync, rename, dir
    /// fsync).
    pub async fn write(&self, cache: &LeaderEpochFileCache) -> Result<(), LogError> {
        write_checkpoint_bytes(
            &self.dir,
            LEADER_EPOCH_CHECKPOINT_FILE,
            self.writer,
            cache.encode(),
        )
        .await
    }
}

#[cfg(test)]
mod tests;
