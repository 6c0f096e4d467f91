//! Why a quorum operation failed.

use std::path::PathBuf;

/// A failed quorum operation: the caller logs it where it handles it.
#[derive(Debug, thiserror::Error)]
pub enum QuorumError {
    /// raft-rs refused a step or a proposal (dropped proposal, unknown peer, local message…).
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    /// Disk I/O on the quorum log or the hard-state file failed.
    #[error("quorum log I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// An intact frame (its CRC matches) holds an entry out of sequence: a bug or tampering,
    /// never a torn write, so the log is not silently cut.
    #[error(
        "quorum log entry out of sequence: expected index {index_expected}, found {index_found}"
    )]
    EntryOutOfSequence {
        /// The index the next entry must have.
        index_expected: u64,
        /// The index it has.
        index_found: u64,
    },
    /// An intact entry has a lower term than the one before it.
    #[error(
        "quorum log entry {index} has term {term}, below the previous entry's {term_previous}"
    )]
    TermRegressed {
        /// The entry's index.
        index: u64,
        /// Its term.
        term: u64,
        /// The term of the entry before it.
        term_previous: u64,
    },
    /// An intact frame whose entry type this version does not know.
    #[error("quorum log entry {index} has unknown entry type {entry_type}")]
    UnknownEntryType {
        /// The entry's index.
        index: u64,
        /// The stored type byte.
        entry_type: u8,
    },
    /// The hard-state file fails its CRC, has the wrong length or an unknown version. It is
    /// replaced atomically, so this is corruption, not a torn write.
    #[error("quorum hard-state file is corrupt")]
    CorruptHardState,
    /// The stored commit index lies beyond the stored log: entries are always synced before the
    /// hard state that commits them, so this is corruption.
    #[error("quorum hard state commits index {commit}, but the log ends at {index_last}")]
    CommitBeyondLog {
        /// The stored commit index.
        commit: u64,
        /// The last stored entry.
        index_last: u64,
    },
    /// The log holds an entry from a term later than the stored term: the term is always made
    /// durable before entries of that term, so this is corruption.
    #[error(
        "quorum hard state is at term {term}, but the log ends with an entry of term {term_last}"
    )]
    TermBehindLog {
        /// The stored term.
        term: u64,
        /// The last entry's term.
        term_last: u64,
    },
    /// Entries to persist do not follow the log (a gap).
    #[error("entries to persist start at {index_first}, after the log's end {index_last}")]
    AppendGap {
        /// The first entry to persist.
        index_first: u64,
        /// The last stored entry.
        index_last: u64,
    },
    /// Entries to persist would overwrite a committed entry: raft never asks for that.
    #[error("entries to persist start at {index_first}, at or below the commit index {commit}")]
    OverwriteCommitted {
        /// The first entry to persist.
        index_first: u64,
        /// The stored commit index.
        commit: u64,
    },
    /// `tick`, `step`, `propose` or `ready` while a `Ready` awaits `persisted` (raft-rs forbids
    /// changing its state before the Ready is advanced).
    #[error("a Ready is being persisted; call persisted() first")]
    ReadyInFlight,
    /// `persisted` without a `Ready` in flight.
    #[error("no Ready is being persisted")]
    NoReadyInFlight,
    /// A message addressed to another node.
    #[error("message for node {to} stepped into node {id}")]
    Misaddressed {
        /// This node.
        id: u64,
        /// The addressee.
        to: u64,
    },
    /// A proposal to a node that is not the leader.
    #[error("not the leader (leader: {leader_id}, 0 if unknown)")]
    NotLeader {
        /// The leader this node follows, 0 if it knows none.
        leader_id: u64,
    },
    /// A proposal from a peer: proposals are taken only from this node's own driver.
    #[error("proposals from peers are refused")]
    ForwardedProposal,
    /// A proposal larger than an entry may be.
    #[error("proposal of {bytes} bytes exceeds the {bytes_max}-byte entry limit")]
    ProposalTooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        bytes_max: usize,
    },
    /// A snapshot message: this quorum never compacts its log, so no peer sends one.
    #[error("snapshot messages are not supported (the quorum log is never compacted)")]
    SnapshotUnsupported,
    /// Bytes from the network that are not a Raft message.
    #[error("undecodable raft message: {0}")]
    Decode(#[from] protobuf::ProtobufError),
}

/// Results of this crate.
pub type Result<T, E = QuorumError> = std::result::Result<T, E>;
