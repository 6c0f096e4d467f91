//! The controller message a partition leader sends to change its ISR (Kafka's AlterPartition,
//! KIP-497 / KIP-903): the leader asks, the active controller checks and commits one
//! PartitionChange, and the reply carries the partition as it now is.

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;

use crate::message::{MetadataError, Reply};

/// One partition's ISR change, as its leader asks it (AlterPartitionRequest's PartitionData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterPartitionItem {
    /// The topic.
    pub topic_id: Uuid,
    /// The partition.
    pub partition: i32,
    /// The asking leader's node id (this broker).
    pub leader_id: i32,
    /// The leader epoch the leader holds.
    pub leader_epoch: i32,
    /// The partition epoch the leader holds: the change applies only to that version.
    pub partition_epoch: i32,
    /// The ISR wanted, each member with the broker epoch the leader saw it fetch with (-1 skips
    /// the epoch check, as Kafka's `BrokerState`).
    pub new_isr: Vec<(i32, i64)>,
}

/// The controller's answer for one partition (AlterPartitionResponse's PartitionData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterPartitionOutcome {
    /// `NONE`, or why the change was refused (Kafka's codes: UNKNOWN_TOPIC_ID,
    /// UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER, FENCED_LEADER_EPOCH, INVALID_REQUEST,
    /// INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, NOT_LEADER_OR_FOLLOWER).
    pub error: ErrorCode,
    /// The partition's leader now (-1 when the partition is unknown).
    pub leader_id: i32,
    /// Its leader epoch now.
    pub leader_epoch: i32,
    /// Its partition epoch now: one more than asked when the change was committed.
    pub partition_epoch: i32,
    /// Its ISR now.
    pub isr: Vec<i32>,
}

/// Controller work: change a partition's ISR. Sent by the data shard that leads it; the broker
/// agent forwards it to the active controller with this broker's id and epoch.
pub struct AlterPartitionWork {
    /// The change.
    pub item: AlterPartitionItem,
    /// The outcome, or why the controller could not be asked (not available; this broker's
    /// registration is stale).
    pub reply: Reply<Result<AlterPartitionOutcome, MetadataError>>,
}
