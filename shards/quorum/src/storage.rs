//! raft-rs's `Storage`: every persisted entry, in memory. The quorum log is never compacted
//! (the metadata log is small; snapshots come with a later issue), so the first index is always
//! 1 and a leader never needs to send a snapshot.

use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, StorageError};

/// The entries and hard state that were persisted, as raft-rs reads them.
pub struct EntryCache {
    hard_state: HardState,
    conf_state: ConfState,
    /// `entries[i].index == i + 1`.
    entries: Vec<Entry>,
}

impl EntryCache {
    /// A cache of the restored state, with a fixed voter set.
    pub fn new(voters: Vec<u64>, hard_state: HardState, entries: Vec<Entry>) -> EntryCache {
        let conf_state = ConfState {
            voters,
            ..ConfState::default()
        };
        EntryCache {
            hard_state,
            conf_state,
            entries,
        }
    }

    /// Mirrors a persisted append: entries from `entries[0].index` on replace what was there.
    /// The quorum log checked the sequence before persisting.
    pub fn append(&mut self, entries: &[Entry]) {
        let Some(first) = entries.first() else {
            return;
        };
        let keep = (first.index.max(1) - 1) as usize;
        self.entries.truncate(keep);
        self.entries.extend_from_slice(entries);
    }

    /// Mirrors a persisted hard state.
    pub fn set_hard_state(&mut self, hard_state: HardState) {
        self.hard_state = hard_state;
    }

    fn last_index(&self) -> u64 {
        self.entries.len() as u64
    }
}

impl raft::Storage for EntryCache {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(
            self.hard_state.clone(),
            self.conf_state.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low == 0 {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if low > high || high > self.last_index() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let mut entries = self.entries[(low - 1) as usize..(high - 1) as usize].to_vec();
        raft::util::limit_size(&mut entries, max_size.into());
        Ok(entries)
    }

    fn term(&self, index: u64) -> raft::Result<u64> {
        if index == 0 {
            return Ok(0);
        }
        match self.entries.get((index - 1) as usize) {
            Some(entry) => Ok(entry.term),
            None => Err(raft::Error::Store(StorageError::Unavailable)),
        }
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(1)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(EntryCache::last_index(self))
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable,
        ))
    }
}
