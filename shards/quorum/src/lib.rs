//! The controller quorum, in KRaft's model: a fixed set of voters replicates the metadata log
//! through Raft. Consensus is raft-rs (tikv's, IO-free); this crate wraps it as a sans-IO
//! `QuorumNode`, keeps its log and hard state in Sluice's own format on a `Disk`
//! (`QuorumLog`), and checks the whole in a seeded simulation (`sim`, tests only) with message
//! loss, partitions and crashes.
//!
//! A driver's loop: feed `tick`/`step`/`propose`; then, while `ready()` yields work, send its
//! `send_now`, `QuorumLog::persist` its entries and hard state, call `persisted()`, send its
//! `send` and apply its `committed`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod disk;
mod error;
mod log_format;
mod node;
mod quorum_log;
mod raft_log;
mod storage;

#[cfg(test)]
mod sim;

pub use disk::{Disk, FileDisk, MemDisk};
pub use error::{QuorumError, Result};
pub use log_format::ENTRY_DATA_BYTES_MAX;
pub use node::{
    decode_message, encode_message, Persisted, QuorumConfig, QuorumNode, ReadyToPersist, SplitMix64,
};
pub use quorum_log::{QuorumLog, Restored};
pub use raft::eraftpb::{Entry, HardState, Message, MessageType};
pub use raft::StateRole;
