//! Sluice's broker configuration.
//!
//! Settings carry Apache Kafka's own names (`log.segment.bytes`, `num.partitions`, …) so an
//! operator's `server.properties` knowledge carries over. The file format is TOML; because a
//! plain dotted TOML key (`log.segment.bytes = 1`) is a nested table, the loader flattens tables
//! back into dotted names, so both that form and the quoted form (`"log.segment.bytes" = 1`) work.
//! Every key must be known: a typo is an error at start, never a silently ignored setting.
//!
//! The single-node default (`config/sluice.toml`) is embedded in the binary; a user file and
//! `--override key=value` pairs are applied on top of it, in that order.

#![forbid(unsafe_code)]

mod quorum;
mod settings;
pub mod topic;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use quorum::{parse_quorum_voters, QuorumVoter};
pub use settings::SETTINGS;

/// The embedded single-node default configuration (`config/sluice.toml`).
pub const DEFAULT_TOML: &str = include_str!("../sluice.toml");

/// Errors found while reading or checking the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The TOML did not parse.
    #[error("config {origin} is not valid TOML: {message}")]
    Parse {
        /// Where the text came from.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// A key that no setting has.
    #[error("unknown setting '{key}' in {origin} (the settings Sluice knows are listed by `sluice --help-config` and in config/README.md)")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// Where it came from.
        origin: String,
    },
    /// A known key with a value of the wrong type or range.
    #[error("invalid value for '{key}' in {origin}: {message}")]
    InvalidValue {
        /// The key.
        key: String,
        /// Where it came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// An `--override` that is not `key=value`.
    #[error("--override expects key=value, got '{0}'")]
    BadOverride(String),
    /// Settings that are each valid but do not fit together (e.g. `process.roles` and
    /// `controller.quorum.voters`). Checked once every source is applied, so the message names
    /// the settings rather than a file.
    #[error("inconsistent settings: {message}")]
    Conflict {
        /// What does not fit, naming the settings involved.
        message: String,
    },
}

/// A `replica.selector.class` Sluice implements (Kafka loads the class by name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaSelectorClass {
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a replica in the
    /// consumer's rack (`client.rack`), the leader when it is there or none is.
    RackAware,
}

impl ReplicaSelectorClass {
    /// The Kafka class name that selects [`ReplicaSelectorClass::RackAware`].
    pub const RACK_AWARE_NAME: &'static str =
        "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    /// The class a `replica.selector.class` value names; Kafka fails at start on a class it
    /// cannot load, so any other name is refused.
    pub fn from_class_name(name: &str) -> Option<Self> {
        (name == Self::RACK_AWARE_NAME).then_some(Self::RackAware)
    }

    /// The Kafka class name, as DescribeConfigs shows it.
    pub fn class_name(self) -> &'static str {
        match self {
            Self::RackAware => Self::RACK_AWARE_NAME,
        }
    }
}

/// A role this process plays (`process.roles`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessRole {
    /// Serves clients and hosts partitions.
    Broker,
    /// Votes in the controller quorum and keeps the metadata log.
    Controller,
}

/// One entry of `listeners`, e.g. `PLAINTEXT://127.0.0.1:9092`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// The listener name (`PLAINTEXT`).
    pub name: String,
    /// Host to bind (and to advertise unless `advertised.listeners` says otherwise).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Listener {
    /// The address to bind.
    pub fn socket_addr(&self) -> Result<SocketAddr, String> {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        };
        let text = quorum::host_port(host, self.port);
        text.parse()
            .map_err(|e| format!("listener address '{text}': {e}"))
    }
}

impl fmt::Display for Listener {
    /// Kafka's syntax, `NAME://host:port`, as `listeners` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}",
            self.name,
            quorum::host_port(&self.host, self.port)
        )
    }
}

/// The whole broker configuration, typed. Field names are Kafka's setting names with dots
/// replaced by underscores; Sluice's own settings start with `sluice_`.
#[derive(Clone, Debug)]
pub struct BrokerConfig {
    /// `node.id`.
    pub node_id: i32,
    /// `process.roles`.
    pub process_roles: Vec<ProcessRole>,
    /// `controller.quorum.voters`: the static controller quorum. Empty (the default) means the
    /// single-node default, where this process is the only voter; [`BrokerConfig::voters`]
    /// gives the effective list.
    pub controller_quorum_voters: Vec<QuorumVoter>,
    /// `controller.listener.names`: names of the listeners that belong to the controller.
    pub controller_listener_names: Vec<String>,
    /// `listeners`, without the controller listener once loaded: every entry here serves
    /// Kafka clients (see [`BrokerConfig::finalize`]).
    pub listeners: Vec<Listener>,
    /// The entry of `listeners` named in `controller.listener.names`, moved here at load so
    /// that `listeners` holds client listeners only. None in the single-node default.
    pub controller_listener: Option<Listener>,
    /// `advertised.listeners`; empty means "same as listeners". Never holds a controller
    /// listener (rejected at load).
    pub advertised_listeners: Vec<Listener>,
    /// `socket.request.max.bytes`: the largest request frame accepted.
    pub socket_request_max_bytes: u32,
    /// `connections.max.idle.ms`: a client connection with no request for this long is closed
    /// (time spent handling a request does not count); -1: never.
    pub connections_max_idle_ms: i64,
    /// `socket.send.buffer.bytes`: SO_SNDBUF of client connections; -1: the kernel's
    /// autotuning. Kafka's default is 100 KiB; Sluice's is -1 (ARCHITECTURE.md, issue 17).
    pub socket_send_buffer_bytes: i32,
    /// `socket.receive.buffer.bytes`: SO_RCVBUF of client connections; -1: the kernel's.
    pub socket_receive_buffer_bytes: i32,
    /// `broker.rack`: the rack (or availability zone) of this broker, for rack-aware replica
    /// placement; None: unset.
    pub broker_rack: Option<String>,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats to the active controller.
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`: a broker that has not heartbeated for this long is fenced.
    pub broker_session_timeout_ms: u64,
    /// `initial.broker.registration.timeout.ms`: how long a starting broker waits to register
    /// with the controller quorum before giving up.
    pub initial_broker_registration_timeout_ms: u64,
    /// `controller.quorum.election.timeout.ms`: how long a voter goes without hearing from a
    /// leader before it starts an election.
    pub controller_quorum_election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`: how long a follower goes without a successful fetch
    /// from the leader before it looks for a new one.
    pub controller_quorum_fetch_timeout_ms: u64,
    /// `log.dirs` (one directory).
    pub log_dirs: PathBuf,
    /// `metadata.log.dir`: where the metadata log lives; None: in `log.dirs` (see
    /// [`BrokerConfig::effective_metadata_log_dir`]).
    pub metadata_log_dir: Option<PathBuf>,
    /// `log.segment.bytes`.
    pub log_segment_bytes: u64,
    /// `log.index.interval.bytes`.
    pub log_index_interval_bytes: u32,
    /// `message.max.bytes`: the largest record batch accepted.
    pub message_max_bytes: u32,
    /// `log.roll.ms`.
    pub log_roll_ms: i64,
    /// `log.retention.ms`; -1 keeps segments forever.
    pub log_retention_ms: i64,
    /// `log.retention.bytes`; -1: no size limit.
    pub log_retention_bytes: i64,
    /// `log.retention.check.interval.ms`.
    pub log_retention_check_interval_ms: u64,
    /// `log.cleaner.enable`: each shard compacts its `cleanup.policy=compact` partitions.
    pub log_cleaner_enable: bool,
    /// `log.cleaner.backoff.ms`: a shard's cleaner sleeps this long when no log needs a clean.
    pub log_cleaner_backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: offset map memory of all cleaners (divided among
    /// the shards).
    pub log_cleaner_dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.size`: bytes per cleaner read and write.
    pub log_cleaner_io_buffer_size: u64,
    /// `log.cleaner.io.max.bytes.per.second`: bound on each shard's cleaner reads plus writes.
    pub log_cleaner_io_max_bytes_per_second: f64,
    /// `log.message.timestamp.type`: `CreateTime` or `LogAppendTime`.
    pub log_message_timestamp_type: String,
    /// `log.message.timestamp.before.max.ms`.
    pub log_message_timestamp_before_max_ms: i64,
    /// `log.message.timestamp.after.max.ms`.
    pub log_message_timestamp_after_max_ms: i64,
    /// `log.flush.interval.messages`; None: never forced.
    pub log_flush_interval_messages: Option<u64>,
    /// `log.flush.interval.ms`; None: never forced.
    pub log_flush_interval_ms: Option<u64>,
    /// `num.partitions`: partitions of an auto-created topic, or of CreateTopics with -1.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `min.insync.replicas`: the broker default of the topic config (acks=all needs this many
    /// in-sync replicas).
    pub min_insync_replicas: i32,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `unclean.leader.election.enable`: topics without the override may elect a leader
    /// outside the ISR when no ISR member is live (losing what only the ISR had).
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable`: the active controller moves leadership back to the
    /// preferred replicas every `leader.imbalance.check.interval.seconds`.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds`.
    pub leader_imbalance_check_interval_seconds: i64,
    /// `leader.imbalance.per.broker.percentage`: accepted and described; as in KRaft, the
    /// controller rebalances on any imbalance and does not consult it.
    pub leader_imbalance_per_broker_percentage: i32,
    /// `producer.id.expiration.ms`: a partition forgets an idle producer id after this long.
    pub producer_id_expiration_ms: i64,
    /// `replica.fetch.max.bytes`: bytes a follower asks per partition in one Fetch (the leader
    /// still returns a whole first batch if it is larger).
    pub replica_fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`: bytes a follower asks for in one Fetch response, all
    /// partitions together (the first batch is returned whole even if it is larger).
    pub replica_fetch_response_max_bytes: i32,
    /// `replica.fetch.wait.max.ms`: how long the leader holds a follower's Fetch that has
    /// fewer than `replica.fetch.min.bytes` to return.
    pub replica_fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes`: bytes a follower's Fetch waits for (up to the wait above).
    pub replica_fetch_min_bytes: i32,
    /// `replica.fetch.backoff.ms`: a follower's pause after a fetch error, for the partition
    /// (or the whole connection) that failed.
    pub replica_fetch_backoff_ms: i32,
    /// `replica.lag.time.max.ms`: a follower not caught up with the leader's end for this long
    /// leaves the ISR.
    pub replica_lag_time_max_ms: i64,
    /// `replica.selector.class` (KIP-392): how a leader picks the replica a consumer should
    /// fetch from; None (Kafka's default, null): always the leader.
    pub replica_selector_class: Option<ReplicaSelectorClass>,
    /// `max.incremental.fetch.session.cache.slots`: fetch sessions (KIP-227) the broker keeps,
    /// split evenly among the data shards as Kafka splits them among its cache shards.
    pub max_incremental_fetch_session_cache_slots: i32,
    /// `sluice.min.incremental.fetch.session.eviction.ms`: a fetch session unused this long may
    /// be evicted by any new one (Kafka's constant `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`,
    /// 120 s; a setting here so that tests can drive eviction).
    pub sluice_min_incremental_fetch_session_eviction_ms: i64,
    /// `num.replica.fetchers`: accepted and ignored; Sluice runs one fetcher per data shard and
    /// leader broker.
    pub num_replica_fetchers: i32,
    /// `group.min.session.timeout.ms`.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub group_max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub group_initial_rebalance_delay_ms: i64,
    /// `group.max.size`.
    pub group_max_size: usize,
    /// `offsets.topic.num.partitions`: partitions of `__consumer_offsets`.
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.replication.factor`.
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: i64,
    /// `offsets.retention.minutes`.
    pub offsets_retention_minutes: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: u64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// `max.request.partition.size.limit`: the most partitions one DescribeTopicPartitions
    /// response holds, whatever the request's own limit.
    pub max_request_partition_size_limit: i32,
    /// `sluice.broker.partitions.max`: bound on hosted partitions (each costs files and memory).
    pub sluice_broker_partitions_max: usize,
    /// `sluice.broker.disconnect.fence.ms`: how long after a broker's controller connection was
    /// closed by its end the active controller fences it unless it connected again; `None`
    /// (-1) leaves fencing to `broker.session.timeout.ms` alone.
    pub sluice_broker_disconnect_fence_ms: Option<u64>,
    /// `sluice.shard.tail.cache.bytes`: per-shard budget of the partitions' tail caches.
    pub sluice_shard_tail_cache_bytes: usize,
    /// `sluice.shard.page.cache.window.bytes`: the newest appended bytes a shard leaves in the
    /// page cache (older ones are written back and dropped); 0 leaves the page cache to the
    /// kernel; `None` (-1): a quarter of the host's memory, split between the shards, at most
    /// 1 GiB a shard.
    pub sluice_shard_page_cache_window_bytes: Option<u64>,
    /// `sluice.shard.preallocate.bytes`: a shard's budget of segment-file blocks allocated
    /// ahead of its appends (`fallocate`, the files' sizes unchanged), in steps of at most
    /// 4 MiB a file; 0 turns preallocation off.
    pub sluice_shard_preallocate_bytes: u64,
    /// `sluice.shards`: data shards; 0 means one per core.
    pub sluice_shards: usize,
    /// `sluice.controller.dedicated.core`.
    pub sluice_controller_dedicated_core: bool,
    /// `sluice.spin.before.park.us`.
    pub sluice_spin_before_park_us: u64,
    /// `sluice.shard.preempt.timer.us`: the longest a shard's task queue runs before glommio
    /// ends its turn and reaps io_uring completions (other connections' reads).
    pub sluice_shard_preempt_timer_us: u64,
    /// `sluice.shard.channel.capacity`: bound of each cross-shard channel.
    pub sluice_shard_channel_capacity: usize,
    /// `sluice.metadata.fetch.max.wait.ms`: a broker's metadata long poll.
    pub sluice_metadata_fetch_max_wait_ms: u64,
    /// `sluice.metrics.listener`: where the Prometheus `/metrics`, `/health` and `/ready`
    /// endpoint listens; None (the default, an empty string) serves none.
    pub sluice_metrics_listener: Option<SocketAddr>,
    /// `sluice.loopback.tcp.congestion.control`: the TCP congestion control of accepted
    /// connections whose peer is this host (over the loopback interface); empty keeps the
    /// host's `net.ipv4.tcp_congestion_control`.
    pub sluice_loopback_tcp_congestion_control: String,
}

impl BrokerConfig {
    /// The embedded default configuration.
    pub fn default_single_node() -> BrokerConfig {
        let mut config = BrokerConfig::empty();
        config
            .apply_toml(DEFAULT_TOML, "the embedded default config")
            .and_then(|()| config.finalize())
            .expect("the embedded default config is valid (checked by a unit test)");
        config
    }

    /// Loads the default, then `file` (if any), then the `key=value` overrides, then checks
    /// the rules between settings and splits off the controller listener
    /// ([`BrokerConfig::finalize`]).
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<BrokerConfig, ConfigError> {
        let mut config = BrokerConfig::default_single_node();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            config.apply_toml(&text, &path.display().to_string())?;
        }
        for item in overrides {
            config.apply_override(item)?;
        }
        config.finalize()?;
        Ok(config)
    }

    /// Applies one `key=value` override; the value is read as TOML, or as a string when it
    /// is not valid TOML (so `--override log.dirs=/tmp/x` needs no quotes).
    pub fn apply_override(&mut self, item: &str) -> Result<(), ConfigError> {
        let (key, raw) = item
            .split_once('=')
            .ok_or_else(|| ConfigError::BadOverride(item.to_string()))?;
        let value = parse_override_value(raw.trim());
        self.set(key.trim(), &value, "--override")
    }

    /// Applies every setting of a TOML text.
    pub fn apply_toml(&mut self, text: &str, origin: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| ConfigError::Parse {
                origin: origin.to_string(),
                message: e.to_string(),
            })?;
        let mut flat = BTreeMap::new();
        flatten("", &toml::Value::Table(table), &mut flat);
        for (key, value) in &flat {
            self.set(key, value, origin)?;
        }
        Ok(())
    }

    /// Sets one setting by its Kafka name.
    pub fn set(&mut self, key: &str, value: &toml::Value, origin: &str) -> Result<(), ConfigError> {
        let setting =
            SETTINGS
                .iter()
                .find(|s| s.name == key)
                .ok_or_else(|| ConfigError::UnknownKey {
                    key: key.to_string(),
                    origin: origin.to_string(),
                })?;
        (setting.apply)(self, value).map_err(|message| ConfigError::InvalidValue {
            key: key.to_string(),
            origin: origin.to_string(),
            message,
        })
    }

    /// Whether this process runs the broker role.
    pub fn is_broker(&self) -> bool {
        self.process_roles.contains(&ProcessRole::Broker)
    }

    /// The listeners clients are told about; never the controller listener (once loaded).
    pub fn advertised(&self) -> &[Listener] {
        if self.advertised_listeners.is_empty() {
            &self.listeners
        } else {
            &self.advertised_listeners
        }
    }

    fn empty() -> BrokerConfig {
        BrokerConfig {
            node_id: 1,
            process_roles: vec![ProcessRole::Broker, ProcessRole::Controller],
            controller_quorum_voters: Vec::new(),
            controller_listener_names: vec!["CONTROLLER".to_string()],
            listeners: Vec::new(),
            controller_listener: None,
            advertised_listeners: Vec::new(),
            socket_request_max_bytes: 104_857_600,
            connections_max_idle_ms: 600_000,
            socket_send_buffer_bytes: -1,
            socket_receive_buffer_bytes: -1,
            broker_rack: None,
            broker_heartbeat_interval_ms: 2_000,
            broker_session_timeout_ms: 9_000,
            initial_broker_registration_timeout_ms: 60_000,
            controller_quorum_election_timeout_ms: 1_000,
            controller_quorum_fetch_timeout_ms: 2_000,
            log_dirs: PathBuf::from("./data"),
            metadata_log_dir: None,
            log_segment_bytes: 1 << 30,
            log_index_interval_bytes: 4096,
            message_max_bytes: 1_048_588,
            log_roll_ms: 604_800_000,
            log_retention_ms: 604_800_000,
            log_retention_bytes: -1,
            log_retention_check_interval_ms: 300_000,
            log_cleaner_enable: true,
            log_cleaner_backoff_ms: 15_000,
            log_cleaner_dedupe_buffer_size: 134_217_728,
            log_cleaner_io_buffer_size: 524_288,
            log_cleaner_io_max_bytes_per_second: f64::MAX,
            log_message_timestamp_type: "CreateTime".to_string(),
            log_message_timestamp_before_max_ms: i64::MAX,
            log_message_timestamp_after_max_ms: 3_600_000,
            log_flush_interval_messages: None,
            log_flush_interval_ms: None,
            num_partitions: 1,
            default_replication_factor: 1,
            min_insync_replicas: 1,
            auto_create_topics_enable: true,
            delete_topic_enable: true,
            unclean_leader_election_enable: false,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_seconds: 300,
            leader_imbalance_per_broker_percentage: 10,
            producer_id_expiration_ms: 86_400_000,
            replica_fetch_max_bytes: 1_048_576,
            replica_fetch_response_max_bytes: 10_485_760,
            replica_fetch_wait_max_ms: 500,
            replica_fetch_min_bytes: 1,
            replica_fetch_backoff_ms: 1_000,
            replica_lag_time_max_ms: 30_000,
            replica_selector_class: None,
            num_replica_fetchers: 1,
            max_incremental_fetch_session_cache_slots: 1_000,
            sluice_min_incremental_fetch_session_eviction_ms: 120_000,
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_initial_rebalance_delay_ms: 3_000,
            group_max_size: i32::MAX as usize,
            offsets_topic_num_partitions: 50,
            offsets_topic_replication_factor: 1,
            offsets_topic_segment_bytes: 104_857_600,
            offsets_retention_minutes: 10_080,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            max_request_partition_size_limit: 2000,
            sluice_broker_partitions_max: 100_000,
            sluice_broker_disconnect_fence_ms: Some(500),
            sluice_shard_tail_cache_bytes: 32 << 20,
            sluice_shard_page_cache_window_bytes: None,
            sluice_shard_preallocate_bytes: 256 << 20,
            sluice_shards: 0,
            sluice_controller_dedicated_core: false,
            sluice_spin_before_park_us: 0,
            sluice_shard_preempt_timer_us: 2_000,
            sluice_shard_channel_capacity: 1024,
            sluice_metadata_fetch_max_wait_ms: 500,
            sluice_metrics_listener: None,
            sluice_loopback_tcp_congestion_control: "reno".to_string(),
        }
    }
}

/// Turns nested TOML tables into dotted keys: `{log: {segment: {bytes: 1}}}` → `log.segment.bytes`.
fn flatten(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, toml::Value>) {
    match value {
        toml::Value::Table(table) => {
            for (key, inner) in table {
                let name = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&name, inner, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

fn parse_override_value(raw: &str) -> toml::Value {
    let probe = format!("v = {raw}");
    match probe.parse::<toml::Table>() {
        Ok(mut table) => table
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// Parses Kafka's listener list syntax: `NAME://host:port[,NAME://host:port]`. Any name is
/// accepted (`PLAINTEXT`, `CONTROLLER`, `INTERNAL`, …); names must be unique, compared
/// case-insensitively as Kafka does, because a listener is looked up by its name.
pub fn parse_listeners(text: &str) -> Result<Vec<Listener>, String> {
    let mut listeners: Vec<Listener> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let listener = parse_listener(entry)?;
        if listeners
            .iter()
            .any(|l| l.name.eq_ignore_ascii_case(&listener.name))
        {
            return Err(format!(
                "listener name {} appears more than once; each listener needs its own name",
                listener.name
            ));
        }
        listeners.push(listener);
    }
    Ok(listeners)
}

fn parse_listener(text: &str) -> Result<Listener, String> {
    let (name, rest) = text
        .split_once("://")
        .ok_or_else(|| format!("'{text}' is not NAME://host:port"))?;
    if name.is_empty() {
        return Err(format!("'{text}' has no listener name"));
    }
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("'{text}' has no port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("'{text}' has an invalid port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok(Listener {
        name: name.to_string(),
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_is_valid() {
        let config = BrokerConfig::default_single_node();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.listeners[0].port, 9092);
        assert_eq!(config.listeners[0].host, "127.0.0.1");
        assert_eq!(config.log_dirs, PathBuf::from("./data"));
        assert!(config.auto_create_topics_enable);
        assert_eq!(config.log_flush_interval_messages, None);
    }

    #[test]
    fn dotted_and_quoted_keys_mean_the_same() {
        let mut a = BrokerConfig::default_single_node();
        a.apply_toml("log.segment.bytes = 1048576", "a").unwrap();
        let mut b = BrokerConfig::default_single_node();
        b.apply_toml("\"log.segment.bytes\" = 1048576", "b")
            .unwrap();
        assert_eq!(a.log_segment_bytes, 1_048_576);
        assert_eq!(b.log_segment_bytes, 1_048_576);
    }

    #[test]
    fn unknown_key_is_rejected_with_its_name() {
        let mut config = BrokerConfig::default_single_node();
        let err = config
            .apply_toml("log.segmnt.bytes = 1", "test.toml")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("log.segmnt.bytes"), "{text}");
        assert!(text.contains("test.toml"), "{text}");
    }

    #[test]
    fn wrong_type_is_rejected() {
        let mut config = BrokerConfig::default_single_node();
        assert!(config.apply_toml("num.partitions = \"many\"", "t").is_err());
        assert!(config.apply_toml("num.partitions = 0", "t").is_err());
        assert!(config.apply_toml("num.partitions = 3", "t").is_ok());
        assert_eq!(config.num_partitions, 3);
    }

    #[test]
    fn overrides_take_bare_strings_and_toml_values() {
        let mut config = BrokerConfig::default_single_node();
        config.apply_override("log.dirs=/tmp/sluice-x").unwrap();
        config.apply_override("sluice.shards=4").unwrap();
        config
            .apply_override("listeners=PLAINTEXT://127.0.0.1:19092")
            .unwrap();
        assert_eq!(config.log_dirs, PathBuf::from("/tmp/sluice-x"));
        assert_eq!(config.sluice_shards, 4);
        assert_eq!(config.listeners[0].port, 19092);
        assert!(config.apply_override("nonsense").is_err());
    }

    #[test]
    fn socket_buffer_sizes_default_to_the_kernels() {
        let mut config = BrokerConfig::default_single_node();
        assert_eq!(config.socket_send_buffer_bytes, -1);
        assert_eq!(config.socket_receive_buffer_bytes, -1);
        config
            .apply_override("socket.send.buffer.bytes=102400")
            .unwrap();
        config
            .apply_override("socket.receive.buffer.bytes=65536")
            .unwrap();
        assert_eq!(config.socket_send_buffer_bytes, 102_400);
        assert_eq!(config.socket_receive_buffer_bytes, 65_536);
        for bad in ["0", "-2", "\"big\""] {
            for key in ["socket.send.buffer.bytes", "socket.receive.buffer.bytes"] {
                assert!(config.apply_override(&format!("{key}={bad}")).is_err());
            }
        }
    }

    #[test]
    fn connections_max_idle_ms_is_kafkas() {
        let mut config = BrokerConfig::default_single_node();
        assert_eq!(config.connections_max_idle_ms, 600_000);
        config
            .apply_override("connections.max.idle.ms=300")
            .unwrap();
        assert_eq!(config.connections_max_idle_ms, 300);
        config.apply_override("connections.max.idle.ms=-1").unwrap();
        assert_eq!(config.connections_max_idle_ms, -1);
        for bad in ["0", "-2", "\"soon\""] {
            assert!(
                config
                    .apply_override(&format!("connections.max.idle.ms={bad}"))
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn loopback_congestion_control_is_reno_by_default_and_takes_a_name_or_nothing() {
        let mut config = BrokerConfig::default_single_node();
        assert_eq!(config.sluice_loopback_tcp_congestion_control, "reno");
        config
            .apply_override("sluice.loopback.tcp.congestion.control=cubic")
            .unwrap();
        assert_eq!(config.sluice_loopback_tcp_congestion_control, "cubic");
        config
            .apply_override("sluice.loopback.tcp.congestion.control=")
            .unwrap();
        assert_eq!(config.sluice_loopback_tcp_congestion_control, "");
        for bad in ["BBR", "a name", "sixteen_chars_xx", "../x"] {
            let line = format!("sluice.loopback.tcp.congestion.control={bad}");
            assert!(config.apply_override(&line).is_err(), "{bad} was taken");
        }
    }

    #[test]
    fn metrics_listener_is_off_by_default_and_takes_ip_port() {
        let mut config = BrokerConfig::default_single_node();
        assert_eq!(config.sluice_metrics_listener, None);
        config
            .apply_override("sluice.metrics.listener=127.0.0.1:9644")
            .unwrap();
        assert_eq!(
            config.sluice_metrics_listener,
            Some("127.0.0.1:9644".parse().unwrap())
        );
        config
            .apply_override("sluice.metrics.listener=[::1]:9644")
            .unwrap();
        assert_eq!(
            config.sluice_metrics_listener,
            Some("[::1]:9644".parse().unwrap())
        );
        config.apply_override("sluice.metrics.listener=").unwrap();
        assert_eq!(config.sluice_metrics_listener, None);
        for bad in ["localhost:9644", "9644", "127.0.0.1", "127.0.0.1:99999"] {
            assert!(
                config
                    .apply_override(&format!("sluice.metrics.listener={bad}"))
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_setting_has_a_doc_and_a_unique_name() {
        for (i, a) in SETTINGS.iter().enumerate() {
            assert!(!a.doc.is_empty(), "{} has no doc", a.name);
            for b in &SETTINGS[i + 1..] {
                assert_ne!(a.name, b.name);
            }
        }
    }
}
