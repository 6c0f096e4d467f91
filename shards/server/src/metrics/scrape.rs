//! A scrape: gathers every shard's figures (atomics read in place, the rest through one
//! `ShardMessage::Stats` per shard) and writes the exposition. Runs on the controller's
//! executor; a shard that does not answer within `SHARD_STATS_TIMEOUT` is left out of that
//! scrape (and counted), so a stuck or saturated shard never stalls the endpoint.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use sluice_log::page_cache::WindowStats;
use sluice_protocol::api_key::ApiKey;
use sluice_shard::{ShardId, ShardMessage, ShardSenders, ShardStats};

use super::process::{process_stats, thread_cpu_seconds};
use super::text::{Exposition, Kind};
use super::{Registry, LATENCY_BOUNDS_US};
use crate::util::join_all;

/// A family written from a table: name, help, and how to read its value from `T`.
type Family<T, V> = (&'static str, &'static str, fn(&T) -> V);
/// The same with the family's kind.
type KindedFamily<T, V> = (&'static str, Kind, &'static str, fn(&T) -> V);

/// How long a scrape waits for one shard's figures.
const SHARD_STATS_TIMEOUT: Duration = Duration::from_secs(2);

/// Asks every data shard for its figures, concurrently; `None` for a shard that did not
/// answer in time (or is gone).
pub async fn gather(mesh: &ShardSenders) -> Vec<Option<ShardStats>> {
    let asks = (0..mesh.shard_count()).map(|i| async move {
        let ask = async {
            let (reply, answer) = oneshot::channel();
            mesh.send(ShardId(i as u16), ShardMessage::Stats { reply })
                .await
                .ok()?;
            answer.await.ok()
        };
        futures_lite::future::or(ask, async {
            glommio::timer::sleep(SHARD_STATS_TIMEOUT).await;
            None
        })
        .await
    });
    join_all(asks).await
}

/// One scrape's exposition.
pub async fn scrape(registry: &Arc<Registry>, mesh: Option<&Rc<ShardSenders>>) -> String {
    let started = Instant::now();
    let stats = match mesh {
        Some(mesh) => gather(mesh).await,
        None => Vec::new(),
    };
    let missing = stats.iter().filter(|s| s.is_none()).count() as u64;
    if missing > 0 {
        registry
            .shard_timeouts
            .fetch_add(missing, Ordering::Relaxed);
    }
    let text = encode(registry, &stats);
    registry.last_scrape_us.store(
        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    text
}

/// Writes the exposition from the registry and the shards' figures (`stats[i]` is shard i's).
pub fn encode(registry: &Registry, stats: &[Option<ShardStats>]) -> String {
    let mut out = Exposition::new();
    encode_topics(&mut out, stats);
    encode_requests(&mut out, registry);
    encode_shards(&mut out, registry, stats);
    encode_partitions(&mut out, stats);
    encode_groups(&mut out, stats);
    encode_process(&mut out, registry);
    out.finish()
}

/// Kafka's BrokerTopicMetrics, per topic, summed over shards.
fn encode_topics(out: &mut Exposition, stats: &[Option<ShardStats>]) {
    #[derive(Default)]
    struct Sums {
        bytes_in: u64,
        bytes_out: u64,
        messages_in: u64,
        produce: u64,
        fetch: u64,
    }
    let mut topics: BTreeMap<&str, Sums> = BTreeMap::new();
    for shard in stats.iter().flatten() {
        for t in &shard.topics {
            let sums = topics.entry(t.topic.as_str()).or_default();
            sums.bytes_in += t.bytes_in;
            sums.bytes_out += t.bytes_out;
            sums.messages_in += t.messages_in;
            sums.produce += t.produce_appends;
            sums.fetch += t.fetch_partitions;
        }
    }
    let families: [Family<Sums, u64>; 5] = [
        (
            "kafka_server_brokertopicmetrics_bytesin_total",
            "Record batch bytes appended to the topic's partitions led here (kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec).",
            |s| s.bytes_in,
        ),
        (
            "kafka_server_brokertopicmetrics_bytesout_total",
            "Record batch bytes of the topic returned in Fetch responses (kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec).",
            |s| s.bytes_out,
        ),
        (
            "kafka_server_brokertopicmetrics_messagesin_total",
            "Records appended to the topic (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec).",
            |s| s.messages_in,
        ),
        (
            "kafka_server_brokertopicmetrics_totalproducerequests_total",
            "Partition appends of Produce requests for the topic (kafka.server:type=BrokerTopicMetrics,name=TotalProduceRequestsPerSec, counted per partition).",
            |s| s.produce,
        ),
        (
            "kafka_server_brokertopicmetrics_totalfetchrequests_total",
            "Partitions of the topic read for Fetch requests; a fetch session's quiet partitions, left out of its reads, are not counted (kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec, counted per partition).",
            |s| s.fetch,
        ),
    ];
    for (name, help, value) in families {
        out.family(name, Kind::Counter, help);
        for (topic, sums) in &topics {
            out.sample(name, &[("topic", topic)], value(sums) as f64);
        }
    }
}

/// Kafka's RequestMetrics per API: a latency histogram (TotalTimeMs) whose count is
/// RequestsPerSec as a counter. Every served API is shown, counted or not, so that dashboards
/// see the series from the start.
fn encode_requests(out: &mut Exposition, registry: &Registry) {
    const NAME: &str = "kafka_network_requestmetrics_totaltime_seconds";
    const COUNT: &str = "kafka_network_requestmetrics_requests_total";
    let bounds: Vec<f64> = LATENCY_BOUNDS_US
        .iter()
        .map(|us| *us as f64 / 1e6)
        .collect();
    let mut per_api: BTreeMap<i16, (Vec<u64>, u64)> = BTreeMap::new();
    for api in sluice_protocol::SUPPORTED {
        per_api.insert(api.key.as_i16(), (vec![0; bounds.len() + 1], 0));
    }
    for shard in &registry.shards {
        for (key, histogram) in shard.apis.iter().enumerate() {
            let (counts, sum_us) = histogram.read();
            if counts.iter().all(|c| *c == 0) {
                continue;
            }
            let (total, total_sum) = per_api
                .entry(key as i16)
                .or_insert_with(|| (vec![0; bounds.len() + 1], 0));
            for (t, c) in total.iter_mut().zip(counts) {
                *t += c;
            }
            *total_sum += sum_us;
        }
    }
    let name_of = |key: i16| {
        ApiKey::from_i16(key)
            .map(|k| k.name().to_string())
            .unwrap_or_else(|| format!("ApiKey{key}"))
    };
    out.family(
        COUNT,
        Kind::Counter,
        "Requests handled, per API (kafka.network:type=RequestMetrics,name=RequestsPerSec).",
    );
    for (key, (counts, _)) in &per_api {
        let request = name_of(*key);
        out.sample(
            COUNT,
            &[("request", &request)],
            counts.iter().sum::<u64>() as f64,
        );
    }
    out.family(
        NAME,
        Kind::Histogram,
        "Time from a request's frame being read to its response written, per API (kafka.network:type=RequestMetrics,name=TotalTimeMs).",
    );
    for (key, (counts, sum_us)) in &per_api {
        let request = name_of(*key);
        out.histogram(
            NAME,
            &[("request", &request)],
            &bounds,
            counts,
            *sum_us as f64 / 1e6,
        );
    }
}

/// Per-shard figures: requests and bytes in flight, connections, network bytes, partitions and
/// leaders, busy and idle time.
fn encode_shards(out: &mut Exposition, registry: &Registry, stats: &[Option<ShardStats>]) {
    let labels: Vec<String> = (0..registry.shards.len()).map(|i| i.to_string()).collect();
    let gauges: [KindedFamily<super::ShardCounters, u64>; 14] = [
        (
            "kafka_network_requestchannel_requestqueuesize",
            Kind::Gauge,
            "Requests read and not yet answered on the shard (kafka.network:type=RequestChannel,name=RequestQueueSize; a shard handles its connections' requests itself, so queued and in-progress are one figure).",
            |c| c.requests_in_flight.load(Ordering::Relaxed),
        ),
        (
            "sluice_shard_request_inflight_bytes",
            Kind::Gauge,
            "Bytes of the request frames read and not yet answered on the shard (Kafka bounds them with queued.max.request.bytes).",
            |c| c.request_bytes_in_flight.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_socketservermetrics_connection_count",
            Kind::Gauge,
            "Client connections the shard serves (kafka.server:type=socket-server-metrics,name=connection-count).",
            |c| c.connections.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_socketservermetrics_incoming_byte_total",
            Kind::Counter,
            "Request bytes received by the shard, size prefixes included (kafka.server:type=socket-server-metrics,name=incoming-byte-total).",
            |c| c.request_bytes.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_socketservermetrics_outgoing_byte_total",
            Kind::Counter,
            "Response bytes sent by the shard (kafka.server:type=socket-server-metrics,name=outgoing-byte-total).",
            |c| c.response_bytes.load(Ordering::Relaxed),
        ),
        (
            "sluice_network_response_sendfile_bytes_total",
            Kind::Counter,
            "Of the response bytes, record data sent from segment files with sendfile, never copied into the broker's memory (Sluice only; Kafka sends every fetch this way).",
            |c| c.response_sendfile_bytes.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_fetchsessioncache_numincrementalfetchsessions",
            Kind::Gauge,
            "Fetch sessions (KIP-227) cached on the shard (kafka.server:type=FetchSessionCache,name=NumIncrementalFetchSessions).",
            |c| c.fetch_sessions.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
            Kind::Gauge,
            "Partitions over the shard's fetch sessions (kafka.server:type=FetchSessionCache,name=NumIncrementalFetchPartitionsCached).",
            |c| c.fetch_session_partitions.load(Ordering::Relaxed),
        ),
        (
            "kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total",
            Kind::Counter,
            "Fetch sessions the shard evicted to make room for new ones (kafka.server:type=FetchSessionCache,name=IncrementalFetchSessionEvictionsPerSec).",
            |c| c.fetch_session_evictions.load(Ordering::Relaxed),
        ),
        (
            "sluice_log_cleaner_runs_total",
            Kind::Counter,
            "Cleans the shard's log cleaner finished (Kafka's LogCleaner threads: one per shard here).",
            |c| c.cleaner_runs.load(Ordering::Relaxed),
        ),
        (
            "sluice_log_cleaner_read_bytes_total",
            Kind::Counter,
            "Bytes the shard's log cleaner read (building the offset map and copying).",
            |c| c.cleaner_read_bytes.load(Ordering::Relaxed),
        ),
        (
            "sluice_log_cleaner_written_bytes_total",
            Kind::Counter,
            "Bytes the shard's log cleaner wrote into cleaned segments.",
            |c| c.cleaner_written_bytes.load(Ordering::Relaxed),
        ),
        (
            "kafka_log_logcleaner_max_clean_time_secs",
            Kind::Gauge,
            "Seconds the shard's last clean took (kafka.log:type=LogCleaner,name=max-clean-time-secs: the last run's).",
            |c| c.cleaner_last_clean_us.load(Ordering::Relaxed) / 1_000_000,
        ),
        (
            "kafka_log_logcleaner_cleaner_recopy_percent",
            Kind::Gauge,
            "Bytes written per 100 bytes read by the shard's last clean (kafka.log:type=LogCleaner,name=cleaner-recopy-percent).",
            |c| c.cleaner_last_recopy_percent.load(Ordering::Relaxed),
        ),
    ];
    for (name, kind, help, value) in gauges {
        out.family(name, kind, help);
        for (shard, counters) in labels.iter().zip(&registry.shards) {
            out.sample(name, &[("shard", shard)], value(counters) as f64);
        }
    }
    out.family(
        "sluice_shard_stats_seconds",
        Kind::Gauge,
        "Time the shard spent building its answer to the previous scrape (its own work, yields excluded).",
    );
    for (shard, counters) in labels.iter().zip(&registry.shards) {
        out.sample(
            "sluice_shard_stats_seconds",
            &[("shard", shard)],
            counters.stats_us.load(Ordering::Relaxed) as f64 / 1e6,
        );
    }
    // Partitions and leaders per shard: from the shards that answered this scrape.
    let answered: Vec<(&str, &ShardStats)> = labels
        .iter()
        .zip(stats)
        .filter_map(|(l, s)| Some((l.as_str(), s.as_ref()?)))
        .collect();
    out.family(
        "kafka_server_replicamanager_partitioncount",
        Kind::Gauge,
        "Partitions hosted by the shard (kafka.server:type=ReplicaManager,name=PartitionCount, per shard).",
    );
    for (shard, s) in &answered {
        out.sample(
            "kafka_server_replicamanager_partitioncount",
            &[("shard", shard)],
            s.partitions.len() as f64,
        );
    }
    out.family(
        "kafka_server_replicamanager_leadercount",
        Kind::Gauge,
        "Partitions led by this broker on the shard (kafka.server:type=ReplicaManager,name=LeaderCount, per shard).",
    );
    for (shard, s) in &answered {
        out.sample(
            "kafka_server_replicamanager_leadercount",
            &[("shard", shard)],
            s.partitions.iter().filter(|p| p.leader).count() as f64,
        );
    }
    // Busy: CPU time of the shard's thread. Idle: the time since start not spent busy, kept
    // from going back (CPU time moves in clock ticks) so that it stays a counter.
    let uptime_us = registry.started.elapsed().as_micros() as f64;
    out.family(
        "sluice_shard_busy_seconds_total",
        Kind::Counter,
        "CPU time of the shard's executor thread (1 - rate is its idle share; cf. kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent).",
    );
    let busy: Vec<Option<f64>> = registry
        .shards
        .iter()
        .map(|c| thread_cpu_seconds(c.tid.load(Ordering::Relaxed)))
        .collect();
    for (shard, seconds) in labels.iter().zip(&busy) {
        if let Some(seconds) = seconds {
            out.sample(
                "sluice_shard_busy_seconds_total",
                &[("shard", shard)],
                *seconds,
            );
        }
    }
    out.family(
        "sluice_shard_idle_seconds_total",
        Kind::Counter,
        "Time since start the shard's executor thread was not on a CPU.",
    );
    for ((shard, seconds), counters) in labels.iter().zip(&busy).zip(&registry.shards) {
        if let Some(seconds) = seconds {
            let idle_us = (uptime_us - seconds * 1e6).max(0.0) as u64;
            let shown = counters.idle_shown_us.fetch_max(idle_us, Ordering::Relaxed);
            out.sample(
                "sluice_shard_idle_seconds_total",
                &[("shard", shard)],
                shown.max(idle_us) as f64 / 1e6,
            );
        }
    }
    if let Some(seconds) = thread_cpu_seconds(registry.controller_tid.load(Ordering::Relaxed)) {
        out.single(
            "sluice_controller_busy_seconds_total",
            Kind::Counter,
            "CPU time of the controller's executor thread (Raft, broker agent, this endpoint).",
            seconds,
        );
    }
    out.single(
        "sluice_metrics_shard_timeouts_total",
        Kind::Counter,
        "Shards that did not answer a scrape within 2 s (their per-topic and per-partition figures are missing from that scrape).",
        registry.shard_timeouts.load(Ordering::Relaxed) as f64,
    );
    out.single(
        "sluice_metrics_scrape_duration_seconds",
        Kind::Gauge,
        "How long the previous scrape took.",
        registry.last_scrape_us.load(Ordering::Relaxed) as f64 / 1e6,
    );
    encode_page_cache(out, &answered);
}

/// Each shard's page-cache window and file worker (ARCHITECTURE.md, "A page-cache window per
/// shard" and the rows after it): Sluice's own; Kafka leaves the page cache to the kernel. The
/// gate's waits and the jobs run on the shard say the disk is behind the appends.
/// `answered`: the shards that answered this scrape, by label.
fn encode_page_cache(out: &mut Exposition, answered: &[(&str, &ShardStats)]) {
    let families: [KindedFamily<WindowStats, u64>; 11] = [
        (
            "sluice_page_cache_window_held_bytes",
            Kind::Gauge,
            "Appended bytes the shard's page-cache window holds (sluice.shard.page.cache.window.bytes bounds it).",
            |w| w.held_bytes,
        ),
        (
            "sluice_page_cache_writeback_calls_total",
            Kind::Counter,
            "Writebacks the window started early (sync_file_range), half a window behind the appends.",
            |w| w.writeback_calls,
        ),
        (
            "sluice_page_cache_drop_calls_total",
            Kind::Counter,
            "Ranges of written-back appends whose pages the window dropped (posix_fadvise DONTNEED).",
            |w| w.drop_calls,
        ),
        (
            "sluice_page_cache_dropped_bytes_total",
            Kind::Counter,
            "Bytes of appends whose pages the window dropped.",
            |w| w.dropped_bytes,
        ),
        (
            "sluice_page_cache_forgotten_ranges_total",
            Kind::Counter,
            "Window ranges forgotten because it held its most (their pages are left to the kernel).",
            |w| w.forgotten_ranges,
        ),
        (
            "sluice_page_cache_read_back_drop_calls_total",
            Kind::Counter,
            "Ranges read back from behind the window (a lagging consumer) whose pages were dropped again.",
            |w| w.read_back_drop_calls,
        ),
        (
            "sluice_page_cache_read_back_dropped_bytes_total",
            Kind::Counter,
            "Bytes read back from behind the window whose pages were dropped again.",
            |w| w.read_back_dropped_bytes,
        ),
        (
            "sluice_page_cache_preallocate_calls_total",
            Kind::Counter,
            "Segment blocks allocated ahead of appends (fallocate, sluice.shard.preallocate.bytes).",
            |w| w.preallocate_calls,
        ),
        (
            "sluice_page_cache_trim_calls_total",
            Kind::Counter,
            "Rolled segments whose unused preallocated blocks were freed.",
            |w| w.trim_calls,
        ),
        (
            "sluice_page_cache_inline_jobs_total",
            Kind::Counter,
            "Window and preallocation jobs the shard ran itself because its file worker's queue was full (the disk far behind).",
            |w| w.inline_jobs,
        ),
        (
            "sluice_page_cache_gate_waits_total",
            Kind::Counter,
            "Appends that waited for the shard's file worker before being written (the disk behind the appends).",
            |w| w.gate_waits,
        ),
    ];
    for (name, kind, help, value) in families {
        out.family(name, kind, help);
        for (shard, s) in answered {
            out.sample(name, &[("shard", shard)], value(&s.page_cache) as f64);
        }
    }
}

/// Per-partition log figures, and the broker's under-replicated and offline partitions.
fn encode_partitions(out: &mut Exposition, stats: &[Option<ShardStats>]) {
    let partitions = || {
        stats
            .iter()
            .flatten()
            .flat_map(|s| s.partitions.iter())
            .map(|p| (p, p.partition.to_string()))
    };
    let families: [Family<sluice_shard::PartitionStats, f64>; 3] = [
        (
            "kafka_log_log_size_bytes",
            "Bytes of the partition's log segments (kafka.log:type=Log,name=Size).",
            |p| p.size_bytes as f64,
        ),
        (
            "kafka_log_log_logendoffset",
            "Next offset of the partition's log (kafka.log:type=Log,name=LogEndOffset).",
            |p| p.log_end_offset as f64,
        ),
        (
            "kafka_log_log_logstartoffset",
            "First offset of the partition's log (kafka.log:type=Log,name=LogStartOffset).",
            |p| p.log_start_offset as f64,
        ),
    ];
    for (name, help, value) in families {
        out.family(name, Kind::Gauge, help);
        for (p, index) in partitions() {
            out.sample(
                name,
                &[("topic", &p.topic), ("partition", &index)],
                value(p),
            );
        }
    }
    // Replication will drive these two; with one replica per partition (today) the ISR is the
    // replica set and a partition is offline only when its broker is fenced.
    out.single(
        "kafka_server_replicamanager_underreplicatedpartitions",
        Kind::Gauge,
        "Partitions led here with fewer in-sync replicas than replicas (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions).",
        partitions().filter(|(p, _)| p.under_replicated).count() as f64,
    );
    let offline = stats
        .iter()
        .flatten()
        .map(|s| s.offline_partitions)
        .max()
        .unwrap_or(0);
    out.single(
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        Kind::Gauge,
        "Partitions of the cluster with no leader, as this broker's metadata image shows them (kafka.controller:type=KafkaController,name=OfflinePartitionsCount; every broker reports it: take the max).",
        offline as f64,
    );
}

/// Consumer group lag: each committed offset against its partition's high watermark, joined
/// here because the group's coordinator shard and the partition's owner shard may differ.
/// Names as kafka_exporter's (Kafka has no broker-side lag metric).
fn encode_groups(out: &mut Exposition, stats: &[Option<ShardStats>]) {
    let high_watermarks: std::collections::HashMap<(&str, i32), i64> = stats
        .iter()
        .flatten()
        .flat_map(|s| s.partitions.iter())
        .map(|p| ((p.topic.as_str(), p.partition), p.high_watermark))
        .collect();
    let mut offsets: Vec<&sluice_shard::GroupOffset> = stats
        .iter()
        .flatten()
        .flat_map(|s| s.group_offsets.iter())
        .collect();
    offsets
        .sort_by(|a, b| (&a.group, &a.topic, a.partition).cmp(&(&b.group, &b.topic, b.partition)));
    out.family(
        "kafka_consumergroup_current_offset",
        Kind::Gauge,
        "A group's committed offset for a partition (as kafka_exporter names it).",
    );
    for o in &offsets {
        let partition = o.partition.to_string();
        out.sample(
            "kafka_consumergroup_current_offset",
            &[
                ("consumergroup", &o.group),
                ("topic", &o.topic),
                ("partition", &partition),
            ],
            o.offset as f64,
        );
    }
    out.family(
        "kafka_consumergroup_lag",
        Kind::Gauge,
        "High watermark minus the group's committed offset, for partitions this broker hosts (as kafka_exporter names it).",
    );
    for o in &offsets {
        let Some(hw) = high_watermarks.get(&(o.topic.as_str(), o.partition)) else {
            continue;
        };
        let partition = o.partition.to_string();
        out.sample(
            "kafka_consumergroup_lag",
            &[
                ("consumergroup", &o.group),
                ("topic", &o.topic),
                ("partition", &partition),
            ],
            (hw - o.offset).max(0) as f64,
        );
    }
}

/// Process figures under the names every Prometheus client library uses.
fn encode_process(out: &mut Exposition, registry: &Registry) {
    let p = process_stats();
    out.single(
        "process_cpu_seconds_total",
        Kind::Counter,
        "Total user and system CPU time spent in seconds.",
        p.cpu_seconds,
    );
    out.single(
        "process_resident_memory_bytes",
        Kind::Gauge,
        "Resident memory size in bytes.",
        p.resident_bytes as f64,
    );
    out.single(
        "process_virtual_memory_bytes",
        Kind::Gauge,
        "Virtual memory size in bytes.",
        p.virtual_bytes as f64,
    );
    out.single(
        "process_open_fds",
        Kind::Gauge,
        "Number of open file descriptors.",
        p.open_fds as f64,
    );
    out.single(
        "process_max_fds",
        Kind::Gauge,
        "Maximum number of open file descriptors.",
        p.max_fds as f64,
    );
    out.single(
        "process_threads",
        Kind::Gauge,
        "Number of OS threads in the process.",
        p.threads as f64,
    );
    out.single(
        "process_start_time_seconds",
        Kind::Gauge,
        "Start time of the process since unix epoch in seconds.",
        p.start_time_seconds,
    );
    out.single(
        "sluice_ready",
        Kind::Gauge,
        "1 when the broker is ready (what /ready answers with 200), else 0.",
        if registry.readiness() == super::Readiness::Ready {
            1.0
        } else {
            0.0
        },
    );
    out.family(
        "sluice_build_info",
        Kind::Gauge,
        "The running Sluice's version.",
    );
    out.sample(
        "sluice_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
}
