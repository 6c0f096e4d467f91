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
