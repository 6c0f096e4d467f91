//! The broker's side of the cluster, on the controller executor of a broker process.
//!
//! `BrokerAgent` is the broker's lifecycle in KRaft's model: it registers with the active
//! controller and heartbeats (fenced until caught up), follows the committed metadata log and
//! hands each new image to the shards, which open or drop the partitions the image gives them,
//! and forwards the shards' admin changes to the controller. `ControllerLink` is how it reaches
//! the controller: in process for the single local voter, else over the controller listener's
//! RPC (`sluice_controller::rpc`, `rpc_net`). The controller crate never depends on this one.

#![forbid(unsafe_code)]

mod broker_agent;

pub use broker_agent::{AgentSettings, BrokerAgent, ControllerLink};
