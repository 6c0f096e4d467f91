//! The table of every setting Sluice knows: its Kafka name, what it means, and how it is applied.

use std::path::PathBuf;

use crate::{
    parse_listeners, parse_quorum_voters, BrokerConfig, ProcessRole, ReplicaSelectorClass,
};

/// One known setting.
pub struct Setting {
    /// Kafka's name (or `sluice.*` for Sluice's own).
    pub name: &'static str,
    /// One line on what it does.
    pub doc: &'static str,
    /// Applies a TOML value to the config.
    pub apply: fn(&mut BrokerConfig, &toml::Value) -> Result<(), String>,
}

/// Every setting, in the order `sluice --help-config` prints them.
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: "node.id",
        doc: "Id of this node in the cluster.",
        apply: |c, v| {
            c.node_id = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "process.roles",
        doc: "Roles of this process: \"broker\", \"controller\" or \"broker,controller\".",
        apply: |c, v| {
            c.process_roles = roles(v)?;
            Ok(())
        },
    },
    Setting {
        name: "controller.quorum.voters",
        doc: "The controller quorum, id@host:port, comma-separated (host:port is the voter's controller listener); empty: this node alone.",
        apply: |c, v| {
            c.controller_quorum_voters = parse_quorum_voters(string(v)?)?;
            Ok(())
        },
    },
    Setting {
        name: "controller.listener.names",
        doc: "Names of the listeners used by the controller, comma-separated; they serve no clients.",
        apply: |c, v| {
            c.controller_listener_names = string(v)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            Ok(())
        },
    },
    Setting {
        name: "listeners",
        doc: "Listeners to bind, NAME://host:port, comma-separated (a controller's listener included).",
        apply: |c, v| {
            c.listeners = parse_listeners(string(v)?)?;
            if c.listeners.is_empty() {
                return Err("at least one listener is needed".into());
            }
            // The new value replaces every listener, the one split off for the controller too;
            // BrokerConfig::finalize splits it again.
            c.controller_listener = None;
            Ok(())
        },
    },
    Setting {
        name: "advertised.listeners",
        doc: "Listeners given to clients in Metadata; default: listeners.",
        apply: |c, v| {
            c.advertised_listeners = parse_listeners(string(v)?)?;
            Ok(())
        },
    },
    Setting {
        name: "socket.request.max.bytes",
        doc: "Largest request frame accepted; a larger one closes the connection.",
        apply: |c, v| {
            c.socket_request_max_bytes = int_in(v, 1024, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Setting {
        name: "socket.send.buffer.bytes",
        doc: "SO_SNDBUF of client connections; -1: the kernel's autotuning (Sluice's default; Kafka's is 102400, which measured starving a shard's consumers behind its producers, ARCHITECTURE.md).",
        apply: |c, v| {
            c.socket_send_buffer_bytes = socket_buffer_bytes(v)?;
            Ok(())
        },
    },
    Setting {
        name: "socket.receive.buffer.bytes",
        doc: "SO_RCVBUF of client connections; -1: the kernel's autotuning (Sluice's default; Kafka's is 102400).",
        apply: |c, v| {
            c.socket_receive_buffer_bytes = socket_buffer_bytes(v)?;
            Ok(())
        },
    },
    Setting {
        name: "connections.max.idle.ms",
        doc: "Close a client connection that has sent no request for this long (time spent answering a request, e.g. a long-poll Fetch, does not count); -1: never.",
        apply: |c, v| {
            let ms = int_in(v, -1, i64::MAX)?;
            if ms == 0 {
                return Err("0 would close every connection between two requests; -1 disables the limit".into());
            }
            c.connections_max_idle_ms = ms;
            Ok(())
        },
    },
    Setting {
        name: "broker.rack",
        doc: "Rack (or availability zone) of this broker, for rack-aware replica placement; unset by default.",
        apply: |c, v| {
            let rack = string(v)?.trim();
            c.broker_rack = (!rack.is_empty()).then(|| rack.to_string());
            Ok(())
        },
    },
    Setting {
        name: "broker.heartbeat.interval.ms",
        doc: "How often a broker heartbeats to the active controller.",
        apply: |c, v| {
            c.broker_heartbeat_interval_ms = int_in(v, 1, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "broker.session.timeout.ms",
        doc: "A broker that has not heartbeated for this long is fenced (must exceed broker.heartbeat.interval.ms).",
        apply: |c, v| {
            c.broker_session_timeout_ms = int_in(v, 1, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "initial.broker.registration.timeout.ms",
        doc: "How long a starting broker tries to register with the controller quorum before it exits.",
        apply: |c, v| {
            c.initial_broker_registration_timeout_ms = int_in(v, 1, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "controller.quorum.election.timeout.ms",
        doc: "How long a voter goes without hearing from a leader before it starts an election.",
        apply: |c, v| {
            c.controller_quorum_election_timeout_ms = int_in(v, 1, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "controller.quorum.fetch.timeout.ms",
        doc: "How long a follower goes without a successful fetch from the leader before it looks for a new one.",
        apply: |c, v| {
            c.controller_quorum_fetch_timeout_ms = int_in(v, 1, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.dirs",
        doc: "Directory holding partition logs and metadata.",
        apply: |c, v| {
            let text = string(v)?;
            if text.contains(',') {
                return Err("only one log directory is supported".into());
            }
            c.log_dirs = PathBuf::from(text);
            Ok(())
        },
    },
    Setting {
        name: "metadata.log.dir",
        doc: "Directory of the controller quorum's metadata log; unset: inside log.dirs.",
        apply: |c, v| {
            let text = string(v)?.trim();
            if text.contains(',') {
                return Err("one directory is expected".into());
            }
            // Empty means unset, so an override can restore the default (inside log.dirs).
            c.metadata_log_dir = (!text.is_empty()).then(|| PathBuf::from(text));
            Ok(())
        },
    },
    Setting {
        name: "log.segment.bytes",
        doc: "Size at which a log segment is rolled.",
        apply: |c, v| {
            c.log_segment_bytes = int_in(v, 14, i32::MAX as i64)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.index.interval.bytes",
        doc: "Bytes of log between two offset index entries.",
        apply: |c, v| {
            c.log_index_interval_bytes = int_in(v, 0, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Setting {
        name: "message.max.bytes",
        doc: "Largest record batch accepted (topic override: max.message.bytes).",
        apply: |c, v| {
            c.message_max_bytes = int_in(v, 0, i32::MAX as i64)? as u32;
            Ok(())
        },
    },
    Setting {
        name: "log.roll.ms",
        doc: "Roll the active segment once its first record is this old (topic: segment.ms).",
        apply: |c, v| {
            c.log_roll_ms = int_in(v, 1, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "log.retention.ms",
        doc: "Delete closed segments whose records are all older than this; -1 keeps them (topic: retention.ms).",
        apply: |c, v| {
            c.log_retention_ms = int_in(v, -1, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "log.retention.bytes",
        doc: "Delete the oldest closed segments while a partition is larger than this; -1: no limit (topic: retention.bytes).",
        apply: |c, v| {
            c.log_retention_bytes = int_in(v, -1, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "log.message.timestamp.type",
        doc: "CreateTime keeps the producer's record timestamps; LogAppendTime stamps each batch with the broker's time at append (topic: message.timestamp.type).",
        apply: |c, v| {
            c.log_message_timestamp_type = match string(v)? {
                t @ ("CreateTime" | "LogAppendTime") => t.to_string(),
                other => return Err(format!("expected CreateTime or LogAppendTime, got \"{other}\"")),
            };
            Ok(())
        },
    },
    Setting {
        name: "log.message.timestamp.before.max.ms",
        doc: "With CreateTime, refuse batches whose timestamps lie more than this before the broker's time (topic: message.timestamp.before.max.ms).",
        apply: |c, v| {
            c.log_message_timestamp_before_max_ms = int_in(v, 0, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "log.message.timestamp.after.max.ms",
        doc: "With CreateTime, refuse batches whose timestamps lie more than this after the broker's time (topic: message.timestamp.after.max.ms).",
        apply: |c, v| {
            c.log_message_timestamp_after_max_ms = int_in(v, 0, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "log.retention.check.interval.ms",
        doc: "How often each shard checks its partitions for segments to delete.",
        apply: |c, v| {
            c.log_retention_check_interval_ms = int_in(v, 1, i64::MAX)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.flush.interval.messages",
        doc: "fsync after this many messages; unset: never forced (1 = every append).",
        apply: |c, v| {
            c.log_flush_interval_messages = Some(int_in(v, 1, i64::MAX)? as u64);
            Ok(())
        },
    },
    Setting {
        name: "log.flush.interval.ms",
        doc: "fsync when data has been unflushed this long; unset: never forced.",
        apply: |c, v| {
            c.log_flush_interval_ms = Some(int_in(v, 0, i64::MAX)? as u64);
            Ok(())
        },
    },
    Setting {
        name: "num.partitions",
        doc: "Partitions of an auto-created topic.",
        apply: |c, v| {
            c.num_partitions = int_in(v, 1, 1_000_000)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "default.replication.factor",
        doc: "Replication factor of an auto-created topic.",
        apply: |c, v| {
            c.default_replication_factor = int_in(v, 1, i16::MAX as i64)? as i16;
            Ok(())
        },
    },
    Setting {
        name: "min.insync.replicas",
        doc: "Default for topics: the in-sync replicas an acks=all produce needs.",
        apply: |c, v| {
            c.min_insync_replicas = int_in(v, 1, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.enable",
        doc: "Run the log cleaner: each shard compacts its partitions whose cleanup.policy contains compact.",
        apply: |c, v| {
            c.log_cleaner_enable = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.backoff.ms",
        doc: "How long a shard's cleaner sleeps when no log needs cleaning.",
        apply: |c, v| {
            c.log_cleaner_backoff_ms = int_in(v, 0, i64::MAX)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.dedupe.buffer.size",
        doc: "Memory of the cleaners' offset maps (key hash -> latest offset), divided among the shards.",
        apply: |c, v| {
            c.log_cleaner_dedupe_buffer_size = int_in(v, 1 << 16, i64::MAX)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.io.buffer.size",
        doc: "Bytes per cleaner read and write.",
        apply: |c, v| {
            c.log_cleaner_io_buffer_size = int_in(v, 4096, i64::from(i32::MAX))? as u64;
            Ok(())
        },
    },
    Setting {
        name: "log.cleaner.io.max.bytes.per.second",
        doc: "Bound on each shard's cleaner reads plus writes (default: none).",
        apply: |c, v| {
            let n = match v {
                toml::Value::Float(f) => *f,
                toml::Value::Integer(i) => *i as f64,
                toml::Value::String(s) => s.trim().parse::<f64>().map_err(|e| e.to_string())?,
                _ => return Err("expected a number".into()),
            };
            // NaN and non-positive rates are refused.
            if n.is_nan() || n <= 0.0 {
                return Err(format!("{n} is not a positive rate"));
            }
            c.log_cleaner_io_max_bytes_per_second = n;
            Ok(())
        },
    },
    Setting {
        name: "auto.create.topics.enable",
        doc: "Create a topic when Metadata or Produce names one that does not exist.",
        apply: |c, v| {
            c.auto_create_topics_enable = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "delete.topic.enable",
        doc: "Allow DeleteTopics.",
        apply: |c, v| {
            c.delete_topic_enable = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "unclean.leader.election.enable",
        doc: "Let a replica outside the ISR lead when no ISR member is live (topics without the override).",
        apply: |c, v| {
            c.unclean_leader_election_enable = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "auto.leader.rebalance.enable",
        doc: "The active controller moves leadership back to preferred replicas every leader.imbalance.check.interval.seconds.",
        apply: |c, v| {
            c.auto_leader_rebalance_enable = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "leader.imbalance.check.interval.seconds",
        doc: "How often the active controller looks for partitions not led by their preferred replica.",
        apply: |c, v| {
            c.leader_imbalance_check_interval_seconds = int_in(v, 1, i64::MAX / 1_000_000_000)?;
            Ok(())
        },
    },
    Setting {
        name: "leader.imbalance.per.broker.percentage",
        doc: "Kafka's imbalance ratio per broker; accepted and described, unused as by KRaft's controller (any imbalance is corrected).",
        apply: |c, v| {
            c.leader_imbalance_per_broker_percentage = int_in(v, i32::MIN as i64, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "producer.id.expiration.ms",
        doc: "How long a partition keeps an idle idempotent producer's state (epoch, last sequences).",
        apply: |c, v| {
            c.producer_id_expiration_ms = int_in(v, 1, i32::MAX as i64)?;
            Ok(())
        },
    },
    Setting {
        name: "replica.selector.class",
        doc: "KIP-392: how a leader picks the replica a consumer with client.rack fetches from; unset (Kafka's null): the leader. org.apache.kafka.common.replica.RackAwareReplicaSelector: an in-sync replica in the consumer's rack.",
        apply: |c, v| {
            let name = string(v)?.trim();
            c.replica_selector_class = if name.is_empty() {
                None
            } else {
                Some(ReplicaSelectorClass::from_class_name(name).ok_or_else(|| {
                    format!(
                        "class {name} cannot be loaded: the only replica selector is {}",
                        ReplicaSelectorClass::RACK_AWARE_NAME
                    )
                })?)
            };
            Ok(())
        },
    },
    Setting {
        name: "replica.fetch.max.bytes",
        doc: "Bytes a follower asks for per partition in one Fetch; a larger first batch still comes whole.",
        apply: |c, v| {
            c.replica_fetch_max_bytes = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "replica.fetch.response.max.bytes",
        doc: "Bytes a follower asks for in one Fetch response, all partitions together; a larger first batch still comes whole.",
        apply: |c, v| {
            c.replica_fetch_response_max_bytes = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "replica.fetch.wait.max.ms",
        doc: "How long the leader holds a follower's Fetch that has less than replica.fetch.min.bytes to return; at most replica.lag.time.max.ms.",
        apply: |c, v| {
            c.replica_fetch_wait_max_ms = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "replica.fetch.min.bytes",
        doc: "Bytes a follower's Fetch waits for, up to replica.fetch.wait.max.ms.",
        apply: |c, v| {
            c.replica_fetch_min_bytes = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "replica.fetch.backoff.ms",
        doc: "A follower's pause after a fetch error, for the partition (or the connection) that failed.",
        apply: |c, v| {
            c.replica_fetch_backoff_ms = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "max.incremental.fetch.session.cache.slots",
        doc: "Fetch sessions (KIP-227) the broker keeps, split evenly among its data shards.",
        apply: |c, v| {
            c.max_incremental_fetch_session_cache_slots = int_in(v, 0, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "sluice.min.incremental.fetch.session.eviction.ms",
        doc: "A fetch session unused this long may be evicted to make room for a new one.",
        apply: |c, v| {
            c.sluice_min_incremental_fetch_session_eviction_ms = int_in(v, 0, i32::MAX as i64)?;
            Ok(())
        },
    },
    Setting {
        name: "replica.lag.time.max.ms",
        doc: "A follower that has not caught up with the leader's log end for this long leaves the ISR.",
        apply: |c, v| {
            c.replica_lag_time_max_ms = int_in(v, 0, i64::MAX)?;
            Ok(())
        },
    },
    Setting {
        name: "num.replica.fetchers",
        doc: "Accepted and ignored: each data shard runs one fetcher (one connection) per leader broker.",
        apply: |c, v| {
            c.num_replica_fetchers = int_in(v, 1, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "group.min.session.timeout.ms",
        doc: "Shortest session timeout a consumer group member may ask for.",
        apply: |c, v| {
            c.group_min_session_timeout_ms = int_in(v, 1, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "group.max.session.timeout.ms",
        doc: "Longest session timeout a consumer group member may ask for.",
        apply: |c, v| {
            c.group_max_session_timeout_ms = int_in(v, 1, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "group.initial.rebalance.delay.ms",
        doc: "How long the first rebalance of an empty group waits for more members to join.",
        apply: |c, v| {
            c.group_initial_rebalance_delay_ms = int_in(v, 0, i32::MAX as i64)?;
            Ok(())
        },
    },
    Setting {
        name: "group.max.size",
        doc: "Most members of one consumer group.",
        apply: |c, v| {
            c.group_max_size = int_in(v, 1, i32::MAX as i64)? as usize;
            Ok(())
        },
    },
    Setting {
        name: "offsets.topic.num.partitions",
        doc: "Partitions of __consumer_offsets (fixed once the topic exists).",
        apply: |c, v| {
            c.offsets_topic_num_partitions = int_in(v, 1, 10_000)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "offsets.topic.replication.factor",
        doc: "Replication factor of __consumer_offsets (capped by the live brokers).",
        apply: |c, v| {
            c.offsets_topic_replication_factor = int_in(v, 1, i16::MAX as i64)? as i16;
            Ok(())
        },
    },
    Setting {
        name: "offsets.topic.segment.bytes",
        doc: "Segment size of __consumer_offsets.",
        apply: |c, v| {
            c.offsets_topic_segment_bytes = int_in(v, 1 << 14, i32::MAX as i64)?;
            Ok(())
        },
    },
    Setting {
        name: "offsets.retention.minutes",
        doc: "How long committed offsets are kept after a group empties (or after the commit, without group management).",
        apply: |c, v| {
            c.offsets_retention_minutes = int_in(v, 1, i32::MAX as i64)?;
            Ok(())
        },
    },
    Setting {
        name: "offsets.retention.check.interval.ms",
        doc: "How often expired offsets are looked for.",
        apply: |c, v| {
            c.offsets_retention_check_interval_ms = int_in(v, 1, i64::MAX)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "offset.metadata.max.bytes",
        doc: "Longest metadata string of an offset commit.",
        apply: |c, v| {
            c.offset_metadata_max_bytes = int_in(v, 0, i32::MAX as i64)? as usize;
            Ok(())
        },
    },
    Setting {
        name: "max.request.partition.size.limit",
        doc: "Most partitions in one DescribeTopicPartitions response (the request may ask for fewer).",
        apply: |c, v| {
            c.max_request_partition_size_limit = int_in(v, 1, i32::MAX as i64)? as i32;
            Ok(())
        },
    },
    Setting {
        name: "sluice.broker.partitions.max",
        doc: "Most partitions this broker hosts; CreateTopics beyond it fails with INVALID_PARTITIONS.",
        apply: |c, v| {
            c.sluice_broker_partitions_max = int_in(v, 1, 10_000_000)? as usize;
            Ok(())
        },
    },
    Setting {
        name: "sluice.broker.disconnect.fence.ms",
        doc: "How long after a broker's connection to the active controller was closed by the broker's end (its process died and the kernel closed the socket) the controller fences it, unless it connected again; -1 waits for broker.session.timeout.ms alone.",
        apply: |c, v| {
            let ms = int_in(v, -1, i32::MAX as i64)?;
            c.sluice_broker_disconnect_fence_ms = u64::try_from(ms).ok();
            Ok(())
        },
    },
    Setting {
        name: "sluice.shard.page.cache.window.bytes",
        doc: "Newest appended log bytes each shard leaves in the page cache; older ones are written back early and dropped, so that new appends reuse warm pages. 0 leaves the page cache to the kernel (Kafka's behaviour); -1 is a quarter of the host's memory split between the shards, at most 1 GiB a shard.",
        apply: |c, v| {
            let bytes = int_in(v, -1, 1 << 50)?;
            c.sluice_shard_page_cache_window_bytes = u64::try_from(bytes).ok();
            Ok(())
        },
    },
    Setting {
        name: "sluice.shard.preallocate.bytes",
        doc: "Disk blocks each shard allocates ahead of its partitions' appends, at most: a segment file's blocks are allocated a 4 MiB step or two ahead (fallocate keeping the file's size; a rolled segment's unused blocks are freed), for at most budget / 8 MiB files of the shard (32 at the default), the first busy ones. Appends and their writeback then allocate no blocks themselves. 0 turns it off.",
        apply: |c, v| {
            c.sluice_shard_preallocate_bytes = int_in(v, 0, 1 << 40)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "sluice.shard.tail.cache.bytes",
        doc: "Memory per shard for the newest appends, shared by its partitions (reads of fresh data skip I/O).",
        apply: |c, v| {
            c.sluice_shard_tail_cache_bytes = int_in(v, 0, 1 << 40)? as usize;
            Ok(())
        },
    },
    Setting {
        name: "sluice.shards",
        doc: "Data shards (one executor each); 0 = one per core; may exceed the cores.",
        apply: |c, v| {
            c.sluice_shards = int_in(v, 0, 1024)? as usize;
            Ok(())
        },
    },
    Setting {
        name: "sluice.controller.dedicated.core",
        doc: "Run the controller on a core of its own (else it shares core 0 with shard 0).",
        apply: |c, v| {
            c.sluice_controller_dedicated_core = boolean(v)?;
            Ok(())
        },
    },
    Setting {
        name: "sluice.spin.before.park.us",
        doc: "Microseconds an idle executor spins before parking.",
        apply: |c, v| {
            c.sluice_spin_before_park_us = int_in(v, 0, 10_000_000)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "sluice.metadata.fetch.max.wait.ms",
        doc: "How long a broker's fetch of the metadata log waits on the controller when nothing new is committed (KRaft's 500 ms); shorter only to drive idle polls in tests. At most 2000: a controller call times out after 3 s.",
        apply: |c, v| {
            c.sluice_metadata_fetch_max_wait_ms = int_in(v, 1, 2_000)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "sluice.metrics.listener",
        doc: "IP:port of the HTTP endpoint serving Prometheus /metrics, /health and /ready (e.g. \"127.0.0.1:9644\"); empty: none (Kafka has no such setting: its metrics go through JMX).",
        apply: |c, v| {
            c.sluice_metrics_listener = metrics_listener(string(v)?)?;
            Ok(())
        },
    },
    Setting {
        name: "sluice.shard.preempt.timer.us",
        doc: "Microseconds a shard's task queue runs before its turn ends and io_uring \
              completions are reaped.",
        apply: |c, v| {
            c.sluice_shard_preempt_timer_us = int_in(v, 100, 100_000)? as u64;
            Ok(())
        },
    },
    Setting {
        name: "sluice.loopback.tcp.congestion.control",
        doc: "TCP congestion control of accepted connections whose peer is this host (they run over the loopback interface), set on the listener so that they are born with it (a connection born with BBR keeps pacing after a switch): a loopback path has no bottleneck to probe or pace for, and BBR (a common host default) paces it with a timer per burst, which the sending broker pays for. Connections from other hosts are given the host's default back. Empty keeps the host's net.ipv4.tcp_congestion_control for all; \"reno\" (the default) is the one every process may set.",
        apply: |c, v| {
            c.sluice_loopback_tcp_congestion_control = congestion_control(string(v)?)?;
            Ok(())
        },
    },
    Setting {
        name: "sluice.shard.channel.capacity",
        doc: "Messages each cross-shard channel holds before senders wait.",
        apply: |c, v| {
            c.sluice_shard_channel_capacity = int_in(v, 1, 1 << 20)? as usize;
            Ok(())
        },
    },
];

/// `sluice.metrics.listener`: empty (none) or `IP:port` (IPv6 as `[::1]:9644`). A name is not
/// resolved: the endpoint binds what it is given, at start, and fails the start if it cannot.
fn metrics_listener(s: &str) -> Result<Option<std::net::SocketAddr>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse()
        .map(Some)
        .map_err(|_| format!("expected IP:port (e.g. 127.0.0.1:9644) or empty, got \"{s}\""))
}

/// A socket buffer size: -1 (the kernel's) or at least one byte, as Java's socket options take.
fn socket_buffer_bytes(v: &toml::Value) -> Result<i32, String> {
    let n = int_in(v, -1, i32::MAX as i64)?;
    if n == 0 {
        return Err("0 is not a buffer size; -1 leaves it to the kernel".into());
    }
    Ok(n as i32)
}

fn int_in(v: &toml::Value, min: i64, max: i64) -> Result<i64, String> {
    let n = match v {
        toml::Value::Integer(n) => *n,
        toml::Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| format!("expected an integer, got \"{s}\""))?,
        other => return Err(format!("expected an integer, got {other}")),
    };
    if n < min || n > max {
        return Err(format!("{n} is outside [{min}, {max}]"));
    }
    Ok(n)
}

fn boolean(v: &toml::Value) -> Result<bool, String> {
    match v {
        toml::Value::Boolean(b) => Ok(*b),
        toml::Value::String(s) if s == "true" => Ok(true),
        toml::Value::String(s) if s == "false" => Ok(false),
        other => Err(format!("expected true or false, got {other}")),
    }
}

/// A TCP congestion control's name as `TCP_CONGESTION` takes it (at most 15 bytes: the
/// kernel's TCP_CA_NAME_MAX with its terminator), or empty. Whether this host has it is known
/// only when a socket is set (a debug line then, and the host's default stays).
fn congestion_control(s: &str) -> Result<String, String> {
    let valid = s.len() < 16
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(s.to_string())
    } else {
        Err(format!(
            "expected a congestion control's name (lowercase letters, digits, _; at most 15) or \"\", got {s:?}"
        ))
    }
}

fn string(v: &toml::Value) -> Result<&str, String> {
    match v {
        toml::Value::String(s) => Ok(s),
        other => Err(format!("expected a string, got {other}")),
    }
}

fn roles(v: &toml::Value) -> Result<Vec<ProcessRole>, String> {
    let mut out = Vec::new();
    for part in string(v)?.split(',').map(str::trim) {
        let role = match part {
            "broker" => ProcessRole::Broker,
            "controller" => ProcessRole::Controller,
            other => return Err(format!("unknown role '{other}'")),
        };
        if !out.contains(&role) {
            out.push(role);
        }
    }
    if out.is_empty() {
        return Err("at least one role is needed".into());
    }
    Ok(out)
}
