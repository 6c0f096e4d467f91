//! ElectLeaders (KIP-183, KIP-460) forwarded to the active controller, which decides every
//! partition as Kafka's `ReplicationControlManager.electLeaders` does.

use sluice_protocol::error::ErrorCode;

use crate::message::{MetadataError, Reply};

/// Kafka's `ElectionType.PREFERRED`: the first replica leads again.
pub const ELECTION_TYPE_PREFERRED: u8 = 0;
/// Kafka's `ElectionType.UNCLEAN`: a leaderless partition takes any live replica.
pub const ELECTION_TYPE_UNCLEAN: u8 = 1;

/// The partitions of one topic named by an ElectLeaders request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionTopic {
    /// The topic's name.
    pub topic: String,
    /// Its partitions, as asked (duplicates and unknown ones included).
    pub partitions: Vec<i32>,
}

/// The outcome for one partition (ElectLeadersResponse's PartitionResult).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElectionOutcome {
    /// The topic's name.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// `NONE` when a leader was elected, else Kafka's reason (ELECTION_NOT_NEEDED,
    /// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
    /// UNKNOWN_TOPIC_OR_PARTITION).
    pub error: ErrorCode,
    /// Kafka's message for the error, none on success.
    pub message: Option<String>,
}

/// Controller work: elect leaders.
pub struct ElectLeadersWork {
    /// [`ELECTION_TYPE_PREFERRED`] or [`ELECTION_TYPE_UNCLEAN`].
    pub election_type: u8,
    /// The partitions; `None` means every partition of every topic.
    pub topics: Option<Vec<ElectionTopic>>,
    /// One outcome per partition (in request order; for `None`, only the partitions whose
    /// election was needed), or why the request failed as a whole.
    pub reply: Reply<Result<Vec<ElectionOutcome>, MetadataError>>,
}
