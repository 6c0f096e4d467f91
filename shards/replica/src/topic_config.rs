//! A topic's config overrides (Kafka's topic config names, as the metadata image holds them)
//! applied to the shard's base `LogConfig` when a partition log is opened, and again when the
//! topic's configs are altered at run time.

use std::collections::BTreeMap;

use sluice_log::{LogConfig, TimestampType};

/// `base` with the topic's overrides applied. The controller validated every value; one that
/// does not parse (never expected) leaves the base setting. Of Kafka's topic configs, those the
/// log implements are mapped here: `segment.bytes`, `segment.ms`, `segment.index.bytes`,
/// `index.interval.bytes`, `retention.ms`, `retention.bytes`, `flush.messages`, `flush.ms`,
/// `max.message.bytes`, `message.timestamp.type`, `message.timestamp.before.max.ms`,
/// `message.timestamp.after.max.ms`, `cleanup.policy`, `min.cleanable.dirty.ratio`,
/// `min.compaction.lag.ms`, `max.compaction.lag.ms`, `delete.retention.ms`.
/// (`segment.jitter.ms`, `min.insync.replicas`, compression and the rest have no log
/// behaviour yet.)
pub fn log_config_with_overrides(
    base: &LogConfig,
    configs: &BTreeMap<String, String>,
) -> LogConfig {
    let mut config = base.clone();
    let int = |name: &str| configs.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    if let Some(n) = int("segment.bytes").filter(|n| *n > 0) {
        config.segment_bytes = n as u64;
    }
    if let Some(n) = int("index.interval.bytes").and_then(|n| u32::try_from(n).ok()) {
        config.index_interval_bytes = n;
    }
    if let Some(n) = int("max.message.bytes").and_then(|n| u32::try_from(n).ok()) {
        config.max_message_bytes = n;
    }
    if let Some(n) = int("segment.index.bytes").and_then(|n| u32::try_from(n).ok()) {
        config.segment_index_bytes = n;
    }
    if let Some(n) = int("segment.ms") {
        config.segment_ms = n;
    }
    if let Some(n) = int("retention.ms") {
        config.retention_ms = n;
    }
    if let Some(n) = int("retention.bytes") {
        config.retention_bytes = n;
    }
    if let Some(t) = configs
        .get("message.timestamp.type")
        .and_then(|v| TimestampType::from_config(v.trim()))
    {
        config.timestamp_type = t;
    }
    if let Some(n) = int("message.timestamp.before.max.ms").filter(|n| *n >= 0) {
        config.timestamp_before_max_ms = n;
    }
    if let Some(n) = int("message.timestamp.after.max.ms").filter(|n| *n >= 0) {
        config.timestamp_after_max_ms = n;
    }
    if let Some(policy) = configs.get("cleanup.policy") {
        let has = |p: &str| policy.split(',').any(|x| x.trim() == p);
        config.cleanup_policy_compact = has("compact");
        config.cleanup_policy_delete = has("delete");
    }
    if let Some(r) = configs
        .get("min.cleanable.dirty.ratio")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|r| (0.0..=1.0).contains(r))
    {
        config.min_cleanable_dirty_ratio_ppm = (r * 1e6).round() as u32;
    }
    if let Some(n) = int("min.compaction.lag.ms").filter(|n| *n >= 0) {
        config.min_compaction_lag_ms = n;
    }
    if let Some(n) = int("max.compaction.lag.ms").filter(|n| *n >= 1) {
        config.max_compaction_lag_ms = n;
    }
    if let Some(n) = int("delete.retention.ms").filter(|n| *n >= 0) {
        config.delete_retention_ms = n;
    }
    // Kafka's default for both is Long.MAX_VALUE: never forced.
    if let Some(n) = int("flush.messages") {
        config.flush_messages = (1..i64::MAX).contains(&n).then_some(n as u64);
    }
    if let Some(n) = int("flush.ms") {
        config.flush_ms = (0..i64::MAX).contains(&n).then_some(n as u64);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_reach_the_log_config() {
        let base = LogConfig::default();
        let configs: BTreeMap<String, String> = [
            ("segment.bytes", "1048576"),
            ("retention.ms", "60000"),
            ("retention.bytes", "5000000"),
            ("segment.ms", "3600000"),
            ("flush.messages", "1"),
            ("flush.ms", "9223372036854775807"),
            ("index.interval.bytes", "100"),
            ("max.message.bytes", "2000"),
            ("cleanup.policy", "delete"),
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.before.max.ms", "86400000"),
            ("message.timestamp.after.max.ms", "60000"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = log_config_with_overrides(&base, &configs);
        assert_eq!(c.segment_bytes, 1 << 20);
        assert_eq!(c.retention_ms, 60_000);
        assert_eq!(c.retention_bytes, 5_000_000);
        assert_eq!(c.segment_ms, 3_600_000);
        assert_eq!(c.flush_messages, Some(1));
        assert_eq!(c.flush_ms, None);
        assert_eq!(c.index_interval_bytes, 100);
        assert_eq!(c.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(c.timestamp_before_max_ms, 86_400_000);
        assert_eq!(c.timestamp_after_max_ms, 60_000);
        assert_eq!(c.max_message_bytes, 2000);
        assert_eq!(log_config_with_overrides(&base, &BTreeMap::new()), base);
    }
}
