//! Partition reassignment (KIP-455) forwarded to the active controller:
//! AlterPartitionReassignments starts or cancels moves, ListPartitionReassignments reports the
//! ones in progress, as Kafka's `ReplicationControlManager` decides and lists them.

use sluice_protocol::error::ErrorCode;

use crate::message::{MetadataError, Reply};

/// One partition's target in an AlterPartitionReassignments request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassignmentTarget {
    /// The partition.
    pub partition: i32,
    /// The replicas to move it to; `None` cancels the reassignment in progress.
    pub replicas: Option<Vec<i32>>,
}

/// One topic's targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassignmentTopic {
    /// The topic's name.
    pub topic: String,
    /// Its partitions' targets, as asked.
    pub partitions: Vec<ReassignmentTarget>,
}

/// The outcome for one partition (AlterPartitionReassignments' partition response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassignmentOutcome {
    /// The topic's name.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// `NONE` when started (or completed, or cancelled), else Kafka's reason
    /// (INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS,
    /// UNKNOWN_TOPIC_OR_PARTITION).
    pub error: ErrorCode,
    /// Kafka's message for the error, none on success.
    pub message: Option<String>,
}

/// The partitions of one topic a ListPartitionReassignments request names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassignmentQuery {
    /// The topic's name.
    pub topic: String,
    /// Its partitions.
    pub partitions: Vec<i32>,
}

/// A reassignment in progress (ListPartitionReassignments' partition entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OngoingReassignment {
    /// The topic's name.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// Its replicas: the target ones, then those being removed.
    pub replicas: Vec<i32>,
    /// The replicas being added.
    pub adding_replicas: Vec<i32>,
    /// The replicas being removed.
    pub removing_replicas: Vec<i32>,
}

/// Controller work: start or cancel reassignments.
pub struct AlterReassignmentsWork {
    /// The targets, in request order.
    pub topics: Vec<ReassignmentTopic>,
    /// KIP-860: false refuses a target whose replica count differs from the current one.
    pub allow_replication_factor_change: bool,
    /// One outcome per partition in request order, or why the request failed as a whole.
    pub reply: Reply<Result<Vec<ReassignmentOutcome>, MetadataError>>,
}

/// Controller work: list reassignments in progress.
pub struct ListReassignmentsWork {
    /// The partitions to look at; `None` for every partition.
    pub topics: Option<Vec<ReassignmentQuery>>,
    /// The reassignments in progress among them, or why the request failed as a whole.
    pub reply: Reply<Result<Vec<OngoingReassignment>, MetadataError>>,
}
