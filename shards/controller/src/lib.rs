//! The controller: keeper of the cluster metadata.
//!
//! Kafka's model (KRaft): the controller appends metadata records — topics, partitions with
//! their leader and replicas, configs — to the metadata log, and publishes the resulting
//! metadata image to the brokers, which apply it. Here, for a single node, the metadata log is a
//! local file; the Raft quorum of a later issue replicates the same records. Every data shard
//! receives each new image and opens or drops the partitions the image assigns to it.

mod metadata_log;
mod placement;
mod producer_ids;
mod quorum_controller;
mod records;
mod topic_name;

pub use metadata_log::{MetadataLog, MetadataLogError};
pub use quorum_controller::{ControllerSettings, QuorumController};
pub use records::MetadataRecord;
pub use topic_name::validate_topic_name;
