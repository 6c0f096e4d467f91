//! Consumer groups, classic protocol (Kafka's `GroupCoordinator`): the state machine of each
//! group, committed offsets, and the records of `__consumer_offsets` that make both durable.
//!
//! The crate is sans-IO: the server's group manager feeds it requests, the time and the
//! records read back at load, and carries out the `Effect`s it returns (answers to delayed
//! JoinGroup/SyncGroup requests, appends to `__consumer_offsets`).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod coordinator;
mod error;
mod group;
pub mod records;
mod subscription;

pub use config::GroupConfig;
pub use coordinator::{
    partition_for_group, CommitOffset, Effect, GroupCoordinator, GroupDescription, GroupListing,
    JoinGroupArgs, JoinGroupResult, JoinedMember, MemberDescription, OffsetCommitArgs,
    SyncGroupArgs, SyncGroupResult, Waiters,
};
pub use error::GroupError;
pub use group::{ClassicGroup, GroupState, Member};
pub use records::{GroupMetadataValue, OffsetCommitValue, OffsetsRecord, StoredMember};
pub use subscription::{subscribed_topics, CONSUMER_PROTOCOL_TYPE};

/// The internal topic holding offsets and group metadata.
pub const GROUP_METADATA_TOPIC_NAME: &str = "__consumer_offsets";

#[cfg(test)]
mod tests;
