//! The persistent side of a quorum node: its Raft log and hard state (term, vote, commit) in
//! Sluice's format (`log_format`) on a `Disk`.
//!
//! Order of writes, so that every crash leaves a state Raft accepts:
//! 1. a new term or vote is made durable first (with the old commit index), so that the log
//!    never holds an entry from a term later than the stored one (Raft's `currentTerm` ≥ the
//!    last entry's term; raft-rs aborts on a node that breaks it);
//! 2. then entries are appended and synced; a conflicting suffix (a new leader overwriting
//!    entries this node never committed) is truncated in the same sync;
//! 3. then the new commit index, which may point into those entries, is made durable.
//!
//! Steps 1 and 3 are one write each (temp file, fsync, rename, directory fsync); a Ready that
//! changes the term and advances the commit at once (rare) pays both.

use raft::eraftpb::{Entry, HardState};
use tracing::warn;

use crate::disk::Disk;
use crate::error::{QuorumError, Result};
use crate::log_format::{decode_hard_state, decode_log, encode_entry, encode_hard_state};

/// What a node restarts from.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    /// The last persisted hard state (all zero on a fresh disk).
    pub hard_state: HardState,
    /// Every persisted entry, indexes contiguous from 1.
    pub entries: Vec<Entry>,
    /// Bytes of torn tail cut off the log at open.
    pub torn_bytes_cut: u64,
}

/// The open quorum log.
pub struct QuorumLog<D: Disk> {
    disk: D,
    /// Byte offset of each entry's frame (`frame_offsets[i]` is entry `i + 1`'s).
    frame_offsets: Vec<u64>,
    len_bytes: u64,
    hard_state: HardState,
    encode_buf: Vec<u8>,
}

impl<D: Disk> QuorumLog<D> {
    /// Reads the disk: cuts a torn tail off the log (and syncs the cut), checks what remains.
    pub fn open(mut disk: D) -> Result<(QuorumLog<D>, Restored)> {
        let io = |disk: &D, source| QuorumError::Io {
            path: disk.path(),
            source,
        };
        let bytes = disk.read_log().map_err(|e| io(&disk, e))?;
        let decoded = decode_log(&bytes)?;
        let torn_bytes_cut = bytes.len() as u64 - decoded.valid_bytes;
        if torn_bytes_cut > 0 {
            warn!(path = %disk.path().display(), torn_bytes_cut, "cutting torn tail of the quorum log");
            disk.truncate_log(decoded.valid_bytes)
                .and_then(|()| disk.sync_log())
                .map_err(|e| io(&disk, e))?;
        }
        let hard_state = match disk.read_state().map_err(|e| io(&disk, e))? {
            Some(bytes) => decode_hard_state(&bytes)?,
            None => HardState::default(),
        };
        let index_last = decoded.entries.len() as u64;
        if let Some(last) = decoded.entries.last() {
            if last.term > hard_state.term {
                return Err(QuorumError::TermBehindLog {
                    term: hard_state.term,
                    term_last: last.term,
                });
            }
        }
        if hard_state.commit > index_last {
            return Err(QuorumError::CommitBeyondLog {
                commit: hard_state.commit,
                index_last,
            });
        }
        let log = QuorumLog {
            disk,
            frame_offsets: decoded.frame_offsets,
            len_bytes: decoded.valid_bytes,
            hard_state: hard_state.clone(),
            encode_buf: Vec::new(),
        };
        let restored = Restored {
            hard_state,
            entries: decoded.entries,
            torn_bytes_cut,
        };
        Ok((log, restored))
    }

    /// Persists what a `Ready` asks for: `entries` (replacing any suffix from the first one's
    /// index on), then `hard_state`; both durable when this returns. After an error the disk's
    /// state is unknown (a failed fsync may have dropped pages): reopen before going on.
    pub fn persist(&mut self, entries: &[Entry], hard_state: Option<&HardState>) -> Result<()> {
        if let Some(hard_state) = hard_state {
            if hard_state.term != self.hard_state.term || hard_state.vote != self.hard_state.vote {
                let mut term_vote = hard_state.clone();
                term_vote.commit = self.hard_state.commit;
                self.replace_hard_state(term_vote)?;
            }
        }
        if let Some(first) = entries.first() {
            self.append(first.index, entries)?;
        }
        if let Some(hard_state) = hard_state {
            if *hard_state != self.hard_state {
                self.replace_hard_state(hard_state.clone())?;
            }
        }
        Ok(())
    }

    fn replace_hard_state(&mut self, hard_state: HardState) -> Result<()> {
        let bytes = encode_hard_state(&hard_state);
        self.disk.replace_state(&bytes).map_err(|e| self.io(e))?;
        self.hard_state = hard_state;
        Ok(())
    }

    fn append(&mut self, index_first: u64, entries: &[Entry]) -> Result<()> {
        let index_last = self.index_last();
        if index_first == 0 || index_first > index_last + 1 {
            return Err(QuorumError::AppendGap {
                index_first,
                index_last,
            });
        }
        if index_first <= self.hard_state.commit {
            return Err(QuorumError::OverwriteCommitted {
                index_first,
                commit: self.hard_state.commit,
            });
        }
        if index_first <= index_last {
            let keep = (index_first - 1) as usize;
            let cut_at = self.frame_offsets[keep];
            self.disk.truncate_log(cut_at).map_err(|e| self.io(e))?;
            self.frame_offsets.truncate(keep);
            self.len_bytes = cut_at;
        }
        self.encode_buf.clear();
        for (i, entry) in entries.iter().enumerate() {
            let index_expected = index_first + i as u64;
            if entry.index != index_expected {
                return Err(QuorumError::EntryOutOfSequence {
                    index_expected,
                    index_found: entry.index,
                });
            }
            self.frame_offsets
                .push(self.len_bytes + self.encode_buf.len() as u64);
            encode_entry(entry, &mut self.encode_buf);
        }
        let buf = std::mem::take(&mut self.encode_buf);
        let written = self
            .disk
            .append_log(&buf)
            .and_then(|()| self.disk.sync_log());
        self.len_bytes += buf.len() as u64;
        self.encode_buf = buf;
        written.map_err(|e| self.io(e))
    }

    /// The last persisted entry's index (0 when empty).
    pub fn index_last(&self) -> u64 {
        self.frame_offsets.len() as u64
    }

    /// The last persisted hard state.
    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    /// The disk (the simulation arms its power loss).
    pub fn disk_mut(&mut self) -> &mut D {
        &mut self.disk
    }

    /// Gives the disk back (the simulation crashes it and opens it again).
    pub fn into_disk(self) -> D {
        self.disk
    }

    fn io(&self, source: std::io::Error) -> QuorumError {
        QuorumError::Io {
            path: self.disk.path(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use bytes::Bytes;

    use super::*;
    use crate::disk::{FileDisk, MemDisk};

    fn entry(term: u64, index: u64, data: &str) -> Entry {
        Entry {
            term,
            index,
            data: Bytes::copy_from_slice(data.as_bytes()),
            ..Entry::default()
        }
    }

    fn hard_state(term: u64, vote: u64, commit: u64) -> HardState {
        HardState {
            term,
            vote,
            commit,
            ..HardState::default()
        }
    }

    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("sluice-quorum-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn file_log_survives_reopen_overwrite_and_a_torn_tail() {
        let dir = TempDir::new("reopen");
        let (mut log, restored) = QuorumLog::open(FileDisk::open(&dir.0).unwrap()).unwrap();
        assert!(restored.entries.is_empty());
        assert_eq!(restored.hard_state, HardState::default());

        let first = [entry(1, 1, ""), entry(1, 2, "a"), entry(1, 3, "b")];
        log.persist(&first, Some(&hard_state(1, 1, 1))).unwrap();
        drop(log);
        let (mut log, restored) = QuorumLog::open(FileDisk::open(&dir.0).unwrap()).unwrap();
        assert_eq!(restored.entries, first);
        assert_eq!(restored.hard_state, hard_state(1, 1, 1));

        // A new leader overwrites the uncommitted suffix from index 2.
        let second = [entry(2, 2, "c"), entry(2, 3, "dd"), entry(2, 4, "e")];
        log.persist(&second, Some(&hard_state(2, 2, 3))).unwrap();
        drop(log);
        let log_path = dir.0.join("quorum.log");
        let intact_bytes = std::fs::metadata(&log_path).unwrap().len();
        // A torn append: half a frame of garbage at the end.
        let mut bytes = std::fs::read(&log_path).unwrap();
        bytes.extend_from_slice(&[0, 0, 0, 40, 1, 2, 3]);
        std::fs::write(&log_path, &bytes).unwrap();

        let (mut log, restored) = QuorumLog::open(FileDisk::open(&dir.0).unwrap()).unwrap();
        assert_eq!(restored.torn_bytes_cut, 7);
        assert_eq!(restored.entries[0], first[0]);
        assert_eq!(&restored.entries[1..], &second);
        assert_eq!(restored.hard_state, hard_state(2, 2, 3));
        assert_eq!(std::fs::metadata(&log_path).unwrap().len(), intact_bytes);

        // Appends after the cut continue the log.
        log.persist(&[entry(2, 5, "f")], None).unwrap();
        drop(log);
        let (_, restored) = QuorumLog::open(FileDisk::open(&dir.0).unwrap()).unwrap();
        assert_eq!(restored.entries.len(), 5);
        assert_eq!(restored.entries[4], entry(2, 5, "f"));
    }

    #[test]
    fn corrupt_hard_state_is_an_error_not_a_reset() {
        let dir = TempDir::new("corrupt-state");
        let (mut log, _) = QuorumLog::open(FileDisk::open(&dir.0).unwrap()).unwrap();
        log.persist(&[entry(1, 1, "")], Some(&hard_state(1, 1, 1)))
            .unwrap();
        drop(log);
        let state_path = dir.0.join("quorum.state");
        let mut bytes = std::fs::read(&state_path).unwrap();
        bytes[10] ^= 1;
        std::fs::write(&state_path, &bytes).unwrap();
        assert!(matches!(
            QuorumLog::open(FileDisk::open(&dir.0).unwrap()),
            Err(QuorumError::CorruptHardState)
        ));
    }

    #[test]
    fn gaps_and_overwrites_of_committed_entries_are_refused() {
        let (mut log, _) = QuorumLog::open(MemDisk::new()).unwrap();
        log.persist(
            &[entry(1, 1, ""), entry(1, 2, "a")],
            Some(&hard_state(1, 1, 2)),
        )
        .unwrap();
        assert!(matches!(
            log.persist(&[entry(1, 4, "x")], None),
            Err(QuorumError::AppendGap {
                index_first: 4,
                index_last: 2
            })
        ));
        assert!(matches!(
            log.persist(&[entry(2, 2, "x")], None),
            Err(QuorumError::OverwriteCommitted {
                index_first: 2,
                commit: 2
            })
        ));
        assert!(matches!(
            log.persist(&[entry(2, 3, "x"), entry(2, 5, "y")], None),
            Err(QuorumError::EntryOutOfSequence { .. })
        ));
    }

    #[test]
    fn commit_beyond_the_log_is_an_error() {
        let mut disk = MemDisk::new();
        disk.replace_state(&crate::log_format::encode_hard_state(&hard_state(1, 1, 3)))
            .unwrap();
        assert!(matches!(
            QuorumLog::open(disk),
            Err(QuorumError::CommitBeyondLog {
                commit: 3,
                index_last: 0
            })
        ));
    }

    #[test]
    fn a_crash_keeps_only_what_was_synced() {
        let (mut log, _) = QuorumLog::open(MemDisk::new()).unwrap();
        log.persist(&[entry(1, 1, "a")], Some(&hard_state(1, 1, 1)))
            .unwrap();
        // The power goes during the next log sync: the append never becomes durable.
        log.disk_mut().arm_power_loss(1);
        assert!(log.persist(&[entry(1, 2, "bbbbbbbb")], None).is_err());
        let mut disk = log.into_disk();
        disk.crash(12, true);
        let (_, restored) = QuorumLog::open(disk).unwrap();
        assert_eq!(restored.entries, [entry(1, 1, "a")]);
        assert_eq!(restored.torn_bytes_cut, 12);
    }
}
