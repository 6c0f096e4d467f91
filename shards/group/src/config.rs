//! The group coordinator's settings, under Kafka's names.

/// Kafka's `group.*` and `offsets.*` broker settings the coordinator uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms`: shortest session a member may ask for.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: longest session a member may ask for.
    pub group_max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group
    /// waits for more members, extended by each join up to the rebalance timeout.
    pub group_initial_rebalance_delay_ms: i64,
    /// `group.max.size`: members per group.
    pub group_max_size: usize,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offset.metadata.max.bytes`: the longest metadata string of a commit.
    pub offset_metadata_max_bytes: usize,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_max_size: i32::MAX as usize,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offset_metadata_max_bytes: 4096,
        }
    }
}
