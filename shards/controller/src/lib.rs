//! The controller: keeper of the cluster metadata, in KRaft's model.
//!
//! Controllers form a Raft quorum (`raft_driver`, over sluice-quorum) that replicates the
//! metadata log; the active one decides changes (`quorum_controller`) as records
//! (`records`) — brokers registering and fenced, topics, partitions with their leaders,
//! configs, producer-id blocks. Every node applies the committed records to its
//! `MetadataState`. A broker process runs a `BrokerAgent` on this executor: it registers and
//! heartbeats, follows the log, and hands each new image to its shards, which open or drop
//! the partitions the image gives them. Controllers and brokers talk over a private RPC on the
//! controller listener (`rpc`, `rpc_net`).

#![forbid(unsafe_code)]

mod broker_agent;
mod metadata_state;
mod placement;
mod quorum_controller;
mod raft_driver;
mod records;
mod replication_control;
pub mod rpc;
pub mod rpc_net;
mod topic_name;

pub use broker_agent::{AgentSettings, BrokerAgent, ControllerLink};
pub use metadata_state::{BrokerRegistration, MetadataState};
pub use quorum_controller::{ControllerSettings, QuorumController};
pub use records::MetadataRecord;
pub use topic_name::validate_topic_name;
