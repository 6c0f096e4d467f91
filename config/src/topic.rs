//! Kafka's topic-level configs: names, types, valid values, the broker setting each one
//! defaults to, and validation. The controller validates changes with this table, DescribeConfigs
//! lists it, and the broker maps the values onto each partition's log.

use crate::BrokerConfig;

/// A config's data type, as DescribeConfigs (v3+) reports it in `ConfigType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigType {
    /// `true` / `false`.
    Boolean,
    /// Free text or one of a set.
    String,
    /// 32-bit integer.
    Int,
    /// 16-bit integer.
    Short,
    /// 64-bit integer.
    Long,
    /// Floating point.
    Double,
    /// Comma-separated list.
    List,
    /// Java class name.
    Class,
    /// Secret.
    Password,
}

impl ConfigType {
    /// Kafka's wire value (`DescribeConfigsResponse.ConfigType`).
    pub fn wire(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }
}

/// What values a config takes.
#[derive(Clone, Copy, Debug)]
pub enum Valid {
    /// Any value of the type.
    Any,
    /// An integer in `[min, max]`.
    Range(i64, i64),
    /// A number in `[min, max]`.
    DoubleRange(f64, f64),
    /// One of these (case-insensitive for strings, as Kafka's `ValidString` in 4.x is not,
    /// but its `in` validators on compression names are lower-case).
    OneOf(&'static [&'static str]),
    /// A list whose items are each one of these.
    ListOf(&'static [&'static str]),
}

/// One topic-level config.
#[derive(Debug)]
pub struct TopicConfigDef {
    /// Kafka's topic config name.
    pub name: &'static str,
    /// The broker setting that supplies the default (Kafka's synonym), if any.
    pub broker_synonym: Option<&'static str>,
    /// Its type.
    pub config_type: ConfigType,
    /// Kafka's default when neither the topic nor the broker sets it.
    pub default: &'static str,
    /// Valid values.
    pub valid: Valid,
    /// Kafka's documentation, shortened.
    pub doc: &'static str,
}

const LONG_MAX: &str = "9223372036854775807";
const I32: i64 = i32::MAX as i64;

macro_rules! def {
    ($name:expr, $syn:expr, $ty:ident, $default:expr, $valid:expr, $doc:expr) => {
        TopicConfigDef {
            name: $name,
            broker_synonym: $syn,
            config_type: ConfigType::$ty,
            default: $default,
            valid: $valid,
            doc: $doc,
        }
    };
}

/// Every topic config Kafka 4.4 defines (the names `kafka-configs --entity-type topics`
/// accepts, and those a Kafka 4.4 topic's DescribeConfigs lists), in name order. Tools copy
/// whole lists of them: MirrorMaker 2 syncs a topic's every config (defaults as deletions) in one
/// IncrementalAlterConfigs, which an unknown name fails whole.
pub static TOPIC_CONFIGS: &[TopicConfigDef] = &[
    def!("cleanup.policy", Some("log.cleanup.policy"), List, "delete", Valid::ListOf(&["compact", "delete"]),
        "The retention policy of log segments: \"delete\" discards old segments, \"compact\" keeps the latest value per key."),
    def!("compression.gzip.level", Some("compression.gzip.level"), Int, "-1", Valid::Range(-1, 9),
        "The compression level when compression.type is gzip."),
    def!("compression.lz4.level", Some("compression.lz4.level"), Int, "9", Valid::Range(1, 17),
        "The compression level when compression.type is lz4."),
    def!("compression.type", Some("compression.type"), String, "producer",
        Valid::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        "The final compression type for the topic; \"producer\" keeps the producer's codec."),
    def!("compression.zstd.level", Some("compression.zstd.level"), Int, "3", Valid::Range(-131072, 22),
        "The compression level when compression.type is zstd."),
    def!("delete.retention.ms", Some("log.cleaner.delete.retention.ms"), Long, "86400000", Valid::Range(0, i64::MAX),
        "How long delete tombstones are retained for log-compacted topics."),
    def!("errors.deadletterqueue.group.enable", None, Boolean, "false", Valid::Any,
        "Allow share groups to write undeliverable records to this topic as a dead-letter queue."),
    def!("file.delete.delay.ms", Some("log.segment.delete.delay.ms"), Long, "60000", Valid::Range(0, i64::MAX),
        "The time to wait before deleting a file from the filesystem."),
    def!("flush.messages", Some("log.flush.interval.messages"), Long, LONG_MAX, Valid::Range(1, i64::MAX),
        "Force an fsync of the log after this many messages."),
    def!("flush.ms", Some("log.flush.interval.ms"), Long, LONG_MAX, Valid::Range(0, i64::MAX),
        "Force an fsync of the log when data has been unflushed this long."),
    def!("follower.replication.throttled.replicas", None, List, "", Valid::Any,
        "Replicas whose log replication is throttled on the follower side."),
    def!("index.interval.bytes", Some("log.index.interval.bytes"), Int, "4096", Valid::Range(0, I32),
        "How often an entry is added to the offset index."),
    def!("leader.replication.throttled.replicas", None, List, "", Valid::Any,
        "Replicas whose log replication is throttled on the leader side."),
    def!("local.retention.bytes", Some("log.local.retention.bytes"), Long, "-2", Valid::Range(-2, i64::MAX),
        "The local log size kept before deletion when tiered storage is enabled (-2: retention.bytes)."),
    def!("local.retention.ms", Some("log.local.retention.ms"), Long, "-2", Valid::Range(-2, i64::MAX),
        "How long local segments are kept when tiered storage is enabled (-2: retention.ms)."),
    def!("max.compaction.lag.ms", Some("log.cleaner.max.compaction.lag.ms"), Long, LONG_MAX, Valid::Range(1, i64::MAX),
        "The longest a message stays ineligible for compaction."),
    def!("max.decompressed.message.bytes", Some("max.decompressed.message.bytes"), Int, "2147483639",
        Valid::Range(1, 2147483639),
        "The largest decompressed size of a single record the broker accepts."),
    def!("max.message.bytes", Some("message.max.bytes"), Int, "1048588", Valid::Range(0, I32),
        "The largest record batch size allowed."),
    def!("message.timestamp.after.max.ms", Some("log.message.timestamp.after.max.ms"), Long, "3600000", Valid::Range(0, i64::MAX),
        "How far a message timestamp may lie after the broker's time."),
    def!("message.timestamp.before.max.ms", Some("log.message.timestamp.before.max.ms"), Long, LONG_MAX, Valid::Range(0, i64::MAX),
        "How far a message timestamp may lie before the broker's time."),
    def!("message.timestamp.type", Some("log.message.timestamp.type"), String, "CreateTime",
        Valid::OneOf(&["CreateTime", "LogAppendTime"]),
        "Whether message timestamps are the producer's CreateTime or the LogAppendTime."),
    def!("min.cleanable.dirty.ratio", Some("log.cleaner.min.cleanable.ratio"), Double, "0.5", Valid::DoubleRange(0.0, 1.0),
        "How dirty a compacted log must be before it is cleaned."),
    def!("min.compaction.lag.ms", Some("log.cleaner.min.compaction.lag.ms"), Long, "0", Valid::Range(0, i64::MAX),
        "The shortest a message stays uncompacted."),
    def!("min.insync.replicas", Some("min.insync.replicas"), Int, "1", Valid::Range(1, I32),
        "Replicas that must acknowledge a write with acks=all."),
    def!("preallocate", Some("log.preallocate"), Boolean, "false", Valid::Any,
        "Preallocate the file on disk when creating a new log segment."),
    def!("remote.copy.lag.bytes", Some("log.remote.copy.lag.bytes"), Long, "-1", Valid::Range(-1, i64::MAX),
        "Newer local bytes after a segment that make it eligible for upload to remote storage (-1: local.retention.bytes)."),
    def!("remote.copy.lag.ms", Some("log.remote.copy.lag.ms"), Long, "0", Valid::Range(-1, i64::MAX),
        "Time since a segment's newest record that makes it eligible for upload to remote storage (-1: local.retention.ms)."),
    def!("remote.log.copy.disable", None, Boolean, "false", Valid::Any,
        "Stop copying segments to remote storage."),
    def!("remote.log.delete.on.disable", None, Boolean, "false", Valid::Any,
        "Delete remote data when remote storage is disabled."),
    def!("remote.storage.enable", None, Boolean, "false", Valid::Any,
        "Enable tiered storage for the topic."),
    def!("retention.bytes", Some("log.retention.bytes"), Long, "-1", Valid::Range(-1, i64::MAX),
        "The largest a partition may grow before old segments are discarded (-1: no limit)."),
    def!("retention.ms", Some("log.retention.ms"), Long, "604800000", Valid::Range(-1, i64::MAX),
        "How long a log segment is kept before it is discarded (-1: no limit)."),
    def!("segment.bytes", Some("log.segment.bytes"), Int, "1073741824", Valid::Range(1024 * 1024, I32),
        "The segment file size of the log."),
    def!("segment.index.bytes", Some("log.index.size.max.bytes"), Int, "10485760", Valid::Range(4, I32),
        "The size of the index that maps offsets to file positions."),
    def!("segment.jitter.ms", Some("log.roll.jitter.ms"), Long, "0", Valid::Range(0, i64::MAX),
        "The largest random jitter subtracted from segment.ms."),
    def!("segment.ms", Some("log.roll.ms"), Long, "604800000", Valid::Range(1, i64::MAX),
        "The time after which the log rolls a new segment even if it is not full."),
    def!("unclean.leader.election.enable", Some("unclean.leader.election.enable"), Boolean, "false", Valid::Any,
        "Allow replicas outside the ISR to become leader as a last resort."),
];

/// The definition of a topic config.
pub fn find(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// Checks a topic config value; returns the value as it is stored (trimmed; lists without
/// blanks). Errors read like Kafka's `ConfigException` messages.
pub fn validate(name: &str, value: &str) -> Result<String, String> {
    let def = find(name).ok_or_else(|| format!("Unknown topic config name: {name}"))?;
    let invalid = |why: &str| format!("Invalid value {value} for configuration {name}: {why}");
    let trimmed = value.trim();
    match def.config_type {
        ConfigType::Boolean => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Ok("true".into()),
            "false" => Ok("false".into()),
            _ => Err(invalid("Expected value to be either true or false")),
        },
        ConfigType::Int | ConfigType::Short | ConfigType::Long => {
            let n: i64 = trimmed.parse().map_err(|_| {
                invalid(match def.config_type {
                    ConfigType::Long => "Not a number of type LONG",
                    ConfigType::Short => "Not a number of type SHORT",
                    _ => "Not a number of type INT",
                })
            })?;
            let (type_min, type_max) = match def.config_type {
                ConfigType::Int => (i32::MIN as i64, i32::MAX as i64),
                ConfigType::Short => (i16::MIN as i64, i16::MAX as i64),
                _ => (i64::MIN, i64::MAX),
            };
            if n < type_min || n > type_max {
                return Err(invalid("Not a number of type INT"));
            }
            if let Valid::Range(min, max) = def.valid {
                if n < min {
                    return Err(invalid(&format!("Value must be at least {min}")));
                }
                if n > max {
                    return Err(invalid(&format!("Value must be no more than {max}")));
                }
            }
            Ok(n.to_string())
        }
        ConfigType::Double => {
            let x: f64 = trimmed
                .parse()
                .map_err(|_| invalid("Not a number of type DOUBLE"))?;
            if let Valid::DoubleRange(min, max) = def.valid {
                if !(min..=max).contains(&x) {
                    return Err(invalid(&format!("Value must be between {min} and {max}")));
                }
            }
            Ok(trimmed.to_string())
        }
        ConfigType::List => {
            let items = split_list(trimmed);
            if let Valid::ListOf(allowed) = def.valid {
                if items.is_empty() {
                    return Err(invalid("Empty list not allowed"));
                }
                for item in &items {
                    if !allowed.contains(&item.as_str()) {
                        return Err(invalid(&format!(
                            "String must be one of: {}",
                            allowed.join(", ")
                        )));
                    }
                }
            }
            Ok(items.join(","))
        }
        ConfigType::String | ConfigType::Class | ConfigType::Password => {
            if let Valid::OneOf(allowed) = def.valid {
                if !allowed.contains(&trimmed) {
                    return Err(invalid(&format!(
                        "String must be one of: {}",
                        allowed.join(", ")
                    )));
                }
            }
            Ok(trimmed.to_string())
        }
    }
}

/// Splits a list value on commas, dropping blanks.
pub fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Where a default topic config value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultSource {
    /// The broker's configuration sets the synonym to something other than Kafka's default.
    StaticBroker,
    /// Kafka's built-in default.
    Default,
}

impl BrokerConfig {
    /// The value a topic gets for `def` when it has no override, and where it comes from.
    pub fn topic_default(&self, def: &TopicConfigDef) -> (String, DefaultSource) {
        let from_broker = match def.name {
            "segment.bytes" => Some(self.log_segment_bytes.to_string()),
            "index.interval.bytes" => Some(self.log_index_interval_bytes.to_string()),
            "max.message.bytes" => Some(self.message_max_bytes.to_string()),
            "flush.messages" => self.log_flush_interval_messages.map(|n| n.to_string()),
            "flush.ms" => self.log_flush_interval_ms.map(|n| n.to_string()),
            "segment.ms" => Some(self.log_roll_ms.to_string()),
            "retention.ms" => Some(self.log_retention_ms.to_string()),
            "retention.bytes" => Some(self.log_retention_bytes.to_string()),
            "min.insync.replicas" => Some(self.min_insync_replicas.to_string()),
            "message.timestamp.type" => Some(self.log_message_timestamp_type.clone()),
            "message.timestamp.before.max.ms" => {
                Some(self.log_message_timestamp_before_max_ms.to_string())
            }
            "message.timestamp.after.max.ms" => {
                Some(self.log_message_timestamp_after_max_ms.to_string())
            }
            "unclean.leader.election.enable" => {
                Some(self.unclean_leader_election_enable.to_string())
            }
            _ => None,
        };
        match from_broker {
            Some(value) if value != def.default => (value, DefaultSource::StaticBroker),
            _ => (def.default.to_string(), DefaultSource::Default),
        }
    }

    /// Every broker setting with its current value, for DescribeConfigs on a broker resource:
    /// `(name, value, type, is Sluice's built-in default)`. Unset optional settings have no value.
    pub fn described_settings(&self) -> Vec<BrokerSettingValue> {
        let builtin = BrokerConfig::default_single_node();
        crate::SETTINGS
            .iter()
            .map(|s| {
                let (value, config_type) = broker_setting_value(self, s.name);
                let default = broker_setting_value(&builtin, s.name).0;
                BrokerSettingValue {
                    name: s.name,
                    doc: s.doc,
                    is_default: value == default,
                    value,
                    config_type,
                }
            })
            .collect()
    }
}

/// One broker setting as DescribeConfigs shows it.
#[derive(Clone, Debug)]
pub struct BrokerSettingValue {
    /// Kafka's name.
    pub name: &'static str,
    /// Its documentation.
    pub doc: &'static str,
    /// Its value, `None` when unset.
    pub value: Option<String>,
    /// Its type.
    pub config_type: ConfigType,
    /// Whether the value is the built-in default.
    pub is_default: bool,
}

fn listeners_text<'a>(listeners: impl IntoIterator<Item = &'a crate::Listener>) -> String {
    listeners
        .into_iter()
        .map(crate::Listener::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn broker_setting_value(c: &BrokerConfig, name: &str) -> (Option<String>, ConfigType) {
    use ConfigType::*;
    let s = |v: std::string::String| Some(v);
    match name {
        "node.id" => (s(c.node_id.to_string()), Int),
        "process.roles" => (
            s(c.process_roles
                .iter()
                .map(|r| match r {
                    crate::ProcessRole::Broker => "broker",
                    crate::ProcessRole::Controller => "controller",
                })
                .collect::<Vec<_>>()
                .join(",")),
            List,
        ),
        // The setting as configured: the controller listener split off at load belongs to it.
        "listeners" => (
            s(listeners_text(
                c.listeners.iter().chain(c.controller_listener.as_ref()),
            )),
            String,
        ),
        "controller.quorum.voters" => (
            s(c.controller_quorum_voters
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(",")),
            List,
        ),
        "controller.listener.names" => (s(c.controller_listener_names.join(",")), String),
        "broker.rack" => (c.broker_rack.clone(), String),
        "broker.heartbeat.interval.ms" => (s(c.broker_heartbeat_interval_ms.to_string()), Int),
        "broker.session.timeout.ms" => (s(c.broker_session_timeout_ms.to_string()), Int),
        "initial.broker.registration.timeout.ms" => {
            (s(c.initial_broker_registration_timeout_ms.to_string()), Int)
        }
        "controller.quorum.election.timeout.ms" => {
            (s(c.controller_quorum_election_timeout_ms.to_string()), Int)
        }
        "controller.quorum.fetch.timeout.ms" => {
            (s(c.controller_quorum_fetch_timeout_ms.to_string()), Int)
        }
        "metadata.log.dir" => (
            c.metadata_log_dir.as_ref().map(|d| d.display().to_string()),
            String,
        ),
        "advertised.listeners" => {
            if c.advertised_listeners.is_empty() {
                (None, String)
            } else {
                (s(listeners_text(&c.advertised_listeners)), String)
            }
        }
        "socket.request.max.bytes" => (s(c.socket_request_max_bytes.to_string()), Int),
        "connections.max.idle.ms" => (s(c.connections_max_idle_ms.to_string()), Long),
        "socket.send.buffer.bytes" => (s(c.socket_send_buffer_bytes.to_string()), Int),
        "socket.receive.buffer.bytes" => (s(c.socket_receive_buffer_bytes.to_string()), Int),
        "log.dirs" => (s(c.log_dirs.display().to_string()), String),
        "log.segment.bytes" => (s(c.log_segment_bytes.to_string()), Int),
        "log.index.interval.bytes" => (s(c.log_index_interval_bytes.to_string()), Int),
        "message.max.bytes" => (s(c.message_max_bytes.to_string()), Int),
        "log.flush.interval.messages" => {
            (c.log_flush_interval_messages.map(|n| n.to_string()), Long)
        }
        "log.flush.interval.ms" => (c.log_flush_interval_ms.map(|n| n.to_string()), Long),
        "log.roll.ms" => (s(c.log_roll_ms.to_string()), Long),
        "log.retention.ms" => (s(c.log_retention_ms.to_string()), Long),
        "log.retention.bytes" => (s(c.log_retention_bytes.to_string()), Long),
        "log.retention.check.interval.ms" => {
            (s(c.log_retention_check_interval_ms.to_string()), Long)
        }
        "log.cleaner.enable" => (s(c.log_cleaner_enable.to_string()), Boolean),
        "log.cleaner.backoff.ms" => (s(c.log_cleaner_backoff_ms.to_string()), Long),
        "log.cleaner.dedupe.buffer.size" => (s(c.log_cleaner_dedupe_buffer_size.to_string()), Long),
        "log.cleaner.io.buffer.size" => (s(c.log_cleaner_io_buffer_size.to_string()), Int),
        "log.cleaner.io.max.bytes.per.second" => (
            s(if c.log_cleaner_io_max_bytes_per_second == f64::MAX {
                "1.7976931348623157E308".to_string()
            } else {
                c.log_cleaner_io_max_bytes_per_second.to_string()
            }),
            Double,
        ),
        "log.message.timestamp.type" => (s(c.log_message_timestamp_type.clone()), String),
        "log.message.timestamp.before.max.ms" => {
            (s(c.log_message_timestamp_before_max_ms.to_string()), Long)
        }
        "log.message.timestamp.after.max.ms" => {
            (s(c.log_message_timestamp_after_max_ms.to_string()), Long)
        }
        "num.partitions" => (s(c.num_partitions.to_string()), Int),
        "default.replication.factor" => (s(c.default_replication_factor.to_string()), Int),
        "min.insync.replicas" => (s(c.min_insync_replicas.to_string()), Int),
        "auto.create.topics.enable" => (s(c.auto_create_topics_enable.to_string()), Boolean),
        "delete.topic.enable" => (s(c.delete_topic_enable.to_string()), Boolean),
        "unclean.leader.election.enable" => {
            (s(c.unclean_leader_election_enable.to_string()), Boolean)
        }
        "auto.leader.rebalance.enable" => (s(c.auto_leader_rebalance_enable.to_string()), Boolean),
        "leader.imbalance.check.interval.seconds" => (
            s(c.leader_imbalance_check_interval_seconds.to_string()),
            Long,
        ),
        "leader.imbalance.per.broker.percentage" => {
            (s(c.leader_imbalance_per_broker_percentage.to_string()), Int)
        }
        "producer.id.expiration.ms" => (s(c.producer_id_expiration_ms.to_string()), Int),
        "replica.fetch.max.bytes" => (s(c.replica_fetch_max_bytes.to_string()), Int),
        "replica.fetch.response.max.bytes" => {
            (s(c.replica_fetch_response_max_bytes.to_string()), Int)
        }
        "replica.fetch.wait.max.ms" => (s(c.replica_fetch_wait_max_ms.to_string()), Int),
        "replica.fetch.min.bytes" => (s(c.replica_fetch_min_bytes.to_string()), Int),
        "replica.fetch.backoff.ms" => (s(c.replica_fetch_backoff_ms.to_string()), Int),
        "replica.lag.time.max.ms" => (s(c.replica_lag_time_max_ms.to_string()), Long),
        "replica.selector.class" => (
            c.replica_selector_class
                .map(|class| class.class_name().to_string()),
            Class,
        ),
        "max.incremental.fetch.session.cache.slots" => (
            s(c.max_incremental_fetch_session_cache_slots.to_string()),
            Int,
        ),
        "sluice.min.incremental.fetch.session.eviction.ms" => (
            s(c.sluice_min_incremental_fetch_session_eviction_ms
                .to_string()),
            Int,
        ),
        "num.replica.fetchers" => (s(c.num_replica_fetchers.to_string()), Int),
        "group.min.session.timeout.ms" => (s(c.group_min_session_timeout_ms.to_string()), Int),
        "group.max.session.timeout.ms" => (s(c.group_max_session_timeout_ms.to_string()), Int),
        "group.initial.rebalance.delay.ms" => {
            (s(c.group_initial_rebalance_delay_ms.to_string()), Int)
        }
        "group.max.size" => (s(c.group_max_size.to_string()), Int),
        "offsets.topic.num.partitions" => (s(c.offsets_topic_num_partitions.to_string()), Int),
        "offsets.topic.replication.factor" => {
            (s(c.offsets_topic_replication_factor.to_string()), Short)
        }
        "offsets.topic.segment.bytes" => (s(c.offsets_topic_segment_bytes.to_string()), Int),
        "offsets.retention.minutes" => (s(c.offsets_retention_minutes.to_string()), Int),
        "offsets.retention.check.interval.ms" => {
            (s(c.offsets_retention_check_interval_ms.to_string()), Long)
        }
        "offset.metadata.max.bytes" => (s(c.offset_metadata_max_bytes.to_string()), Int),
        "max.request.partition.size.limit" => {
            (s(c.max_request_partition_size_limit.to_string()), Int)
        }
        "sluice.broker.partitions.max" => (s(c.sluice_broker_partitions_max.to_string()), Int),
        "sluice.broker.disconnect.fence.ms" => (
            s(c.sluice_broker_disconnect_fence_ms
                .map_or(-1, |ms| ms as i64)
                .to_string()),
            Long,
        ),
        "sluice.shard.tail.cache.bytes" => (s(c.sluice_shard_tail_cache_bytes.to_string()), Long),
        "sluice.shard.preallocate.bytes" => (s(c.sluice_shard_preallocate_bytes.to_string()), Long),
        "sluice.shard.page.cache.window.bytes" => (
            s(c.sluice_shard_page_cache_window_bytes
                .map_or(-1, |b| b as i64)
                .to_string()),
            Long,
        ),
        "sluice.shards" => (s(c.sluice_shards.to_string()), Int),
        "sluice.controller.dedicated.core" => {
            (s(c.sluice_controller_dedicated_core.to_string()), Boolean)
        }
        "sluice.spin.before.park.us" => (s(c.sluice_spin_before_park_us.to_string()), Long),
        "sluice.shard.preempt.timer.us" => (s(c.sluice_shard_preempt_timer_us.to_string()), Long),
        "sluice.shard.channel.capacity" => (s(c.sluice_shard_channel_capacity.to_string()), Int),
        "sluice.metadata.fetch.max.wait.ms" => {
            (s(c.sluice_metadata_fetch_max_wait_ms.to_string()), Long)
        }
        // DescribeConfigs shows "" for none, as the TOML default spells it.
        "sluice.metrics.listener" => (
            s(c.sluice_metrics_listener
                .map(|a| a.to_string())
                .unwrap_or_default()),
            String,
        ),
        "sluice.loopback.tcp.congestion.control" => {
            (s(c.sluice_loopback_tcp_congestion_control.clone()), String)
        }
        // A setting added to SETTINGS without a line here is listed without a value.
        _ => (None, String),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_unique_and_defaults_valid() {
        for pair in TOPIC_CONFIGS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} / {}",
                pair[0].name,
                pair[1].name
            );
        }
        for def in TOPIC_CONFIGS {
            if matches!(def.valid, Valid::ListOf(_)) || !def.default.is_empty() {
                validate(def.name, def.default)
                    .unwrap_or_else(|e| panic!("default of {}: {e}", def.name));
            }
        }
    }

    #[test]
    fn validation_follows_kafka() {
        assert_eq!(validate("segment.bytes", "1048576").unwrap(), "1048576");
        assert!(validate("segment.bytes", "1000").is_err());
        assert!(validate("segment.bytes", "4294967296").is_err());
        assert!(validate("retention.ms", "-1").is_ok());
        assert!(validate("retention.ms", "-2").is_err());
        assert!(validate("retention.ms", "soon").is_err());
        assert_eq!(
            validate("cleanup.policy", "compact, delete").unwrap(),
            "compact,delete"
        );
        assert!(validate("cleanup.policy", "shred").is_err());
        assert_eq!(validate("preallocate", "TRUE").unwrap(), "true");
        assert!(validate("compression.type", "brotli").is_err());
        assert!(validate("min.cleanable.dirty.ratio", "1.5").is_err());
        let err = validate("no.such.config", "1").unwrap_err();
        assert!(err.contains("Unknown topic config name"), "{err}");
    }

    #[test]
    fn every_broker_setting_has_a_value_renderer() {
        let config = BrokerConfig::default_single_node();
        for s in crate::SETTINGS {
            let (value, _) = broker_setting_value(&config, s.name);
            let optional = matches!(
                s.name,
                "advertised.listeners"
                    | "log.flush.interval.messages"
                    | "log.flush.interval.ms"
                    | "broker.rack"
                    | "replica.selector.class"
                    | "metadata.log.dir"
            );
            assert!(value.is_some() || optional, "{} has no value", s.name);
        }
        let segment = find("segment.bytes").unwrap();
        assert_eq!(
            config.topic_default(segment),
            ("1073741824".to_string(), DefaultSource::Default)
        );
        let mut small = config.clone();
        small.log_segment_bytes = 1 << 20;
        assert_eq!(
            small.topic_default(segment),
            ("1048576".to_string(), DefaultSource::StaticBroker)
        );
    }
}
