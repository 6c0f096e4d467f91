//! Controller messages of the topic-config APIs (AlterConfigs, IncrementalAlterConfigs).

use crate::message::{MetadataError, Reply};

/// One incremental operation on a topic config (IncrementalAlterConfigs' `ConfigOperation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigOp {
    /// Set the override to this value.
    Set(String),
    /// Remove the override (back to the broker default).
    Delete,
    /// Add these items to a list config.
    Append(String),
    /// Remove these items from a list config.
    Subtract(String),
}

/// A change to one config of a topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigChange {
    /// Kafka's topic config name.
    pub name: String,
    /// What to do.
    pub op: ConfigOp,
}

/// The config changes for one topic.
#[derive(Clone, Debug)]
pub struct TopicConfigChanges {
    /// Topic name.
    pub topic: String,
    /// The changes, applied in order.
    pub changes: Vec<ConfigChange>,
    /// AlterConfigs (legacy): the changes are the topic's whole new set of overrides, every
    /// override not listed is removed.
    pub replace_all: bool,
}

/// Controller work: alter topic configs.
pub struct AlterConfigsWork {
    /// One entry per topic resource.
    pub topics: Vec<TopicConfigChanges>,
    /// Only check, change nothing.
    pub validate_only: bool,
    /// One result per topic, in order.
    pub reply: Reply<Vec<Result<(), MetadataError>>>,
}

/// Kafka's `leader.replication.throttled.rate` (bytes/s): the bound on what this broker, as
/// leader, sends to the throttled replicas' fetches.
pub const LEADER_REPLICATION_THROTTLED_RATE: &str = "leader.replication.throttled.rate";
/// Kafka's `follower.replication.throttled.rate` (bytes/s): the bound on what this broker, as
/// follower, fetches for its throttled replicas.
pub const FOLLOWER_REPLICATION_THROTTLED_RATE: &str = "follower.replication.throttled.rate";
/// Kafka's `replica.alter.log.dirs.io.max.bytes.per.second`: bounds moves between a broker's
/// log directories (AlterReplicaLogDirs). A Sluice broker has one log directory and moves no
/// replica between directories, so the value is kept and shown, and never has anything to bound.
pub const REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: &str =
    "replica.alter.log.dirs.io.max.bytes.per.second";
/// The broker configs Sluice changes at run time (a subset of Kafka's dynamic broker configs),
/// all of type LONG, at least 0, default `Long.MAX_VALUE` (no bound).
pub const DYNAMIC_BROKER_CONFIGS: &[&str] = &[
    LEADER_REPLICATION_THROTTLED_RATE,
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
];
/// Their default: Kafka's `QuotaConfig.QUOTA_BYTES_PER_SECOND_DEFAULT` (`Long.MAX_VALUE`).
pub const DYNAMIC_BROKER_CONFIG_DEFAULT: i64 = i64::MAX;

/// Checks a value of one of [`DYNAMIC_BROKER_CONFIGS`] as Kafka's ConfigDef does (a LONG at
/// least 0); returns it normalized, or Kafka's message.
pub fn check_dynamic_broker_config(name: &str, value: &str) -> Result<String, String> {
    let parsed: i64 = value.trim().parse().map_err(|_| {
        format!("Invalid value {value} for configuration {name}: Not a number of type LONG")
    })?;
    if parsed < 0 {
        return Err(format!(
            "Invalid value {parsed} for configuration {name}: Value must be at least 0"
        ));
    }
    Ok(parsed.to_string())
}

/// The dynamic config changes for one broker resource.
#[derive(Clone, Debug)]
pub struct BrokerConfigChanges {
    /// The broker id as text, or empty for the cluster-wide default.
    pub resource_name: String,
    /// The changes, applied in order.
    pub changes: Vec<ConfigChange>,
    /// AlterConfigs (legacy): the changes are the resource's whole new set of dynamic configs.
    pub replace_all: bool,
}

/// Controller work: alter dynamic broker configs.
pub struct AlterBrokerConfigsWork {
    /// One entry per broker resource.
    pub brokers: Vec<BrokerConfigChanges>,
    /// Only check, change nothing.
    pub validate_only: bool,
    /// One result per resource, in order.
    pub reply: Reply<Vec<Result<(), MetadataError>>>,
}
