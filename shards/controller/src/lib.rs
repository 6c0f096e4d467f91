//! The controller: keeper of the cluster metadata, in KRaft's model.
//!
//! Controllers form a Raft quorum (`raft_driver`, over sluice-quorum) that replicates the
//! metadata log; the active one decides changes (`quorum_controller`) as records
//! (`records`) — brokers registering and fenced, topics, partitions with their leaders,
//! configs, producer-id blocks. Every node applies the committed records to its
//! `MetadataState`. A broker process runs the broker's side (`sluice_broker::BrokerAgent`),
//! which registers and heartbeats, follows the log with `MetadataState` and `decode_entry`,
//! and hands each new image to its shards. Controllers and brokers talk over a private RPC on
//! the controller listener (`rpc`, `rpc_net`), which both sides use from here.

#![forbid(unsafe_code)]

mod metadata_state;
mod partition_change;
mod placement;
mod quorum_controller;
mod raft_driver;
mod reassignment;
mod records;
mod replication_control;
pub mod rpc;
pub mod rpc_net;
mod topic_name;

pub use metadata_state::{BrokerRegistration, MetadataState};
pub use quorum_controller::{ControllerSettings, QuorumController};
pub use records::{decode_entry, MetadataRecord};
pub use replication_control::new_topic_id;
pub use topic_name::validate_topic_name;
