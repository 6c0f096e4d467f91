//! The broker's Prometheus metrics: what the data shards count, and the endpoint that serves
//! them (`sluice.metrics.listener`; see ARCHITECTURE.md, "Metrics", for the names and the
//! mapping from Kafka's JMX names).
//!
//! Two kinds of figures, so that nothing on the data path takes a lock or allocates:
//!
//! - **Fixed-shape counters** (requests and latency per API, in-flight requests and bytes,
//!   connections, network bytes): one [`ShardCounters`] per shard, a block of `AtomicU64`
//!   written only by its own shard with Relaxed loads and stores (a single writer needs no
//!   read-modify-write), registered once at start in the [`Registry`] that the endpoint reads.
//! - **Figures that follow topics, partitions and groups** (bytes in/out per topic, log sizes,
//!   offsets, committed offsets): plain counters in the shard's own memory, gathered at scrape
//!   time by a `ShardMessage::Stats` over the mesh, answered as one short task per shard.
//!
//! The endpoint runs on the controller's executor, which holds senders to every data shard (so
//! it can send that message) and is not a data shard.

mod http;
mod process;
mod scrape;
mod text;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_shard::{MetadataImage, PartitionStats, ShardStats, TopicTraffic};

pub use http::{bind, serve};

/// API keys with a slot of their own (Kafka's go up to ~90); requests with a larger key are
/// not counted per API.
pub const API_KEY_SLOTS: usize = 128;

/// Upper bounds of the request latency buckets, in microseconds (Kafka's TotalTimeMs as a
/// Prometheus histogram in seconds). From 100 µs (a request answered from memory) to 30 s (a
/// request timeout); a long-poll Fetch lands at its `max.wait.ms` (500 ms by default).
pub const LATENCY_BOUNDS_US: [u64; 17] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000,
];
/// Buckets: one per bound, plus the one above the last bound (+Inf).
const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_US.len() + 1;

/// Adds `n` to a counter that only the calling shard writes: a Relaxed load and store, no
/// atomic read-modify-write (no locked instruction on the data path). Readers on other threads
/// see each value whole, a moment late at worst.
#[inline]
fn add(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// Subtracts `n` from a gauge that only the calling shard writes (see [`add`]).
#[inline]
fn sub(gauge: &AtomicU64, n: u64) {
    gauge.store(
        gauge.load(Ordering::Relaxed).saturating_sub(n),
        Ordering::Relaxed,
    );
}

/// One API's latency histogram on one shard: a count per bucket (not cumulative: the endpoint
/// sums them) and the total time. The request count is the sum of the buckets, so a scrape
/// always shows `_count` equal to the `+Inf` bucket.
pub struct ApiHistogram {
    buckets: [AtomicU64; LATENCY_BUCKETS],
    sum_us: AtomicU64,
}

impl ApiHistogram {
    fn new() -> ApiHistogram {
        ApiHistogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_us: AtomicU64::new(0),
        }
    }

    fn record(&self, elapsed: Duration) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_US.partition_point(|&bound| bound < us);
        add(&self.buckets[bucket], 1);
        add(&self.sum_us, us);
    }

    /// (count per bucket, not cumulative; total microseconds).
    pub fn read(&self) -> ([u64; LATENCY_BUCKETS], u64) {
        (
            std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            self.sum_us.load(Ordering::Relaxed),
        )
    }
}

/// The fixed-shape counters of one shard, written by that shard alone.
pub struct ShardCounters {
    /// Latency histogram per API key.
    pub apis: Box<[ApiHistogram]>,
    /// Requests being handled now (read, not yet answered).
    pub requests_in_flight: AtomicU64,
    /// Bytes of the frames of those requests.
    pub request_bytes_in_flight: AtomicU64,
    /// Client connections served now.
    pub connections: AtomicU64,
    /// Request frame bytes received.
    pub request_bytes: AtomicU64,
    /// Response frame bytes sent.
    pub response_bytes: AtomicU64,
    /// Of those, record bytes sent from segment files by `sendfile` (never copied into user
    /// space).
    pub response_sendfile_bytes: AtomicU64,
    /// The shard thread's kernel id (for its CPU time in /proc); 0 until it runs.
    pub tid: AtomicI32,
    /// The last idle time shown, so that the idle counter never goes back (see `scrape`).
    pub idle_shown_us: AtomicU64,
    /// Time the shard spent on its last answer to a scrape (its own work, not the wait to be
    /// scheduled), microseconds.
    pub stats_us: AtomicU64,
    /// Fetch sessions (KIP-227) in the shard's cache.
    pub fetch_sessions: AtomicU64,
    /// Partitions over those sessions.
    pub fetch_session_partitions: AtomicU64,
    /// Sessions evicted to make room for others, since start.
    pub fetch_session_evictions: AtomicU64,
    /// Cleans the shard's log cleaner finished (an aborted one included), since start.
    pub cleaner_runs: AtomicU64,
    /// Bytes the cleaner read and wrote, since start.
    pub cleaner_read_bytes: AtomicU64,
    pub cleaner_written_bytes: AtomicU64,
    /// The last clean: its duration (µs) and its bytes written per 100 bytes read.
    pub cleaner_last_clean_us: AtomicU64,
    pub cleaner_last_recopy_percent: AtomicU64,
}

impl ShardCounters {
    fn new() -> ShardCounters {
        ShardCounters {
            apis: (0..API_KEY_SLOTS).map(|_| ApiHistogram::new()).collect(),
            requests_in_flight: AtomicU64::new(0),
            request_bytes_in_flight: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            request_bytes: AtomicU64::new(0),
            response_bytes: AtomicU64::new(0),
            response_sendfile_bytes: AtomicU64::new(0),
            tid: AtomicI32::new(0),
            idle_shown_us: AtomicU64::new(0),
            stats_us: AtomicU64::new(0),
            fetch_sessions: AtomicU64::new(0),
            fetch_session_partitions: AtomicU64::new(0),
            fetch_session_evictions: AtomicU64::new(0),
            cleaner_runs: AtomicU64::new(0),
            cleaner_read_bytes: AtomicU64::new(0),
            cleaner_written_bytes: AtomicU64::new(0),
            cleaner_last_clean_us: AtomicU64::new(0),
            cleaner_last_recopy_percent: AtomicU64::new(0),
        }
    }
}

/// The broker's life as `/ready` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Starting: no metadata image yet, or listeners not bound, or not unfenced.
    Starting = 0,
    /// Every shard holds an image and listens.
    Ready = 1,
    /// Shutting down (or stopped before it was ready).
    Stopping = 2,
}

/// Everything the endpoint reads: every shard's counters, registered once at start, and the
/// broker's readiness.
pub struct Registry {
    /// One per data shard, by shard index.
    pub shards: Vec<Arc<ShardCounters>>,
    /// The controller executor's thread id (its CPU time), 0 until it runs.
    pub controller_tid: AtomicI32,
    readiness: AtomicU8,
    /// When the registry was made (the process start, near enough): idle time counts from here.
    started: Instant,
    /// Duration of the last scrape, microseconds.
    last_scrape_us: AtomicU64,
    /// Shards that did not answer a scrape in time, since start.
    shard_timeouts: AtomicU64,
}

impl Registry {
    /// Counters for `shard_count` data shards.
    pub fn new(shard_count: usize) -> Registry {
        Registry {
            shards: (0..shard_count)
                .map(|_| Arc::new(ShardCounters::new()))
                .collect(),
            controller_tid: AtomicI32::new(0),
            readiness: AtomicU8::new(Readiness::Starting as u8),
            started: Instant::now(),
            last_scrape_us: AtomicU64::new(0),
            shard_timeouts: AtomicU64::new(0),
        }
    }

    /// Sets what `/ready` answers.
    pub fn set_readiness(&self, readiness: Readiness) {
        self.readiness.store(readiness as u8, Ordering::Relaxed);
    }

    /// What `/ready` answers.
    pub fn readiness(&self) -> Readiness {
        match self.readiness.load(Ordering::Relaxed) {
            0 => Readiness::Starting,
            1 => Readiness::Ready,
            _ => Readiness::Stopping,
        }
    }
}

/// The calling thread's kernel id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Per-topic counts on one shard (single-threaded: the shard's own memory).
#[derive(Default, Clone, Copy)]
struct TopicCounts {
    bytes_in: u64,
    messages_in: u64,
    bytes_out: u64,
    produce_appends: u64,
    fetch_partitions: u64,
}

/// A shard's side of the metrics: its registered counters and its per-topic counts. Present
/// in the shard's context only when the endpoint is configured, so with it off the data path
/// does not count at all.
pub struct ShardMetrics {
    counters: Arc<ShardCounters>,
    topics: RefCell<HashMap<Rc<str>, TopicCounts>>,
}

impl ShardMetrics {
    /// The shard's side of `counters` (registered in the registry); records the thread id.
    pub fn new(counters: Arc<ShardCounters>) -> ShardMetrics {
        counters.tid.store(current_tid(), Ordering::Relaxed);
        ShardMetrics {
            counters,
            topics: RefCell::new(HashMap::new()),
        }
    }

    /// A connection opened; the connection count drops when the guard does.
    pub fn connection(&self) -> ConnectionGuard<'_> {
        add(&self.counters.connections, 1);
        ConnectionGuard(&self.counters)
    }

    /// A request of `frame_bytes` starts being handled; the guard records it (count, latency,
    /// in-flight) when dropped, however handling ends.
    pub fn request(&self, frame: &[u8]) -> RequestGuard<'_> {
        let bytes = frame.len() as u64;
        add(&self.counters.requests_in_flight, 1);
        add(&self.counters.request_bytes_in_flight, bytes);
        add(&self.counters.request_bytes, bytes + 4);
        let api_key = frame
            .get(..2)
            .map(|k| i16::from_be_bytes([k[0], k[1]]))
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k < API_KEY_SLOTS);
        RequestGuard {
            counters: &self.counters,
            api_key,
            bytes,
            started: Instant::now(),
        }
    }

    /// The shard's fetch session cache now holds `sessions` sessions of `partitions`
    /// partitions in all, after `evictions` evictions since start.
    pub fn fetch_sessions(&self, sessions: usize, partitions: usize, evictions: u64) {
        let c = &self.counters;
        c.fetch_sessions.store(sessions as u64, Ordering::Relaxed);
        c.fetch_session_partitions
            .store(partitions as u64, Ordering::Relaxed);
        c.fetch_session_evictions
            .store(evictions, Ordering::Relaxed);
    }

    /// The shard's cleaner finished a clean that read `read` bytes and wrote `written` in
    /// `elapsed`.
    pub fn log_cleaned(&self, read: u64, written: u64, elapsed: std::time::Duration) {
        let c = &self.counters;
        add(&c.cleaner_runs, 1);
        add(&c.cleaner_read_bytes, read);
        add(&c.cleaner_written_bytes, written);
        c.cleaner_last_clean_us
            .store(elapsed.as_micros() as u64, Ordering::Relaxed);
        c.cleaner_last_recopy_percent
            .store(written * 100 / read.max(1), Ordering::Relaxed);
    }

    /// A response of `bytes` (frame, size prefix included) was written.
    /// A response of `bytes` was written, `sendfile_bytes` of them from segment files.
    pub fn response_written(&self, bytes: usize, sendfile_bytes: usize) {
        add(&self.counters.response_bytes, bytes as u64);
        if sendfile_bytes > 0 {
            add(
                &self.counters.response_sendfile_bytes,
                sendfile_bytes as u64,
            );
        }
    }

    /// An append to a partition of `topic`: `bytes` of batches, `messages` records.
    pub fn appended(&self, topic: &Rc<str>, bytes: usize, messages: u64) {
        let mut topics = self.topics.borrow_mut();
        let counts = match topics.get_mut(&**topic) {
            Some(counts) => counts,
            None => topics.entry(topic.clone()).or_default(),
        };
        counts.bytes_in += bytes as u64;
        counts.messages_in += messages;
        counts.produce_appends += 1;
    }

    /// A fetch response returned `bytes` of records from one partition of `topic`.
    pub fn fetched(&self, topic: &str, bytes: usize) {
        let mut topics = self.topics.borrow_mut();
        let counts = match topics.get_mut(topic) {
            Some(counts) => counts,
            // A topic this shard has not served before: the one allocation of its name.
            None => topics.entry(Rc::from(topic)).or_default(),
        };
        counts.bytes_out += bytes as u64;
        counts.fetch_partitions += 1;
    }

    /// The per-topic counts, for a scrape. Topics no longer in `image` are forgotten (Kafka
    /// removes a deleted topic's metrics too).
    pub fn topic_traffic(&self, image: &MetadataImage) -> Vec<TopicTraffic> {
        let mut topics = self.topics.borrow_mut();
        topics.retain(|name, _| image.topic(name).is_some());
        topics
            .iter()
            .map(|(name, c)| TopicTraffic {
                topic: name.to_string(),
                bytes_in: c.bytes_in,
                messages_in: c.messages_in,
                bytes_out: c.bytes_out,
                produce_appends: c.produce_appends,
                fetch_partitions: c.fetch_partitions,
            })
            .collect()
    }
}

/// Holds a connection in the connection count.
pub struct ConnectionGuard<'a>(&'a ShardCounters);

impl Drop for ConnectionGuard<'_> {
    fn drop(&mut self) {
        sub(&self.0.connections, 1);
    }
}

/// One request being handled; recorded when dropped.
pub struct RequestGuard<'a> {
    counters: &'a ShardCounters,
    api_key: Option<usize>,
    bytes: u64,
    started: Instant,
}

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        sub(&self.counters.requests_in_flight, 1);
        sub(&self.counters.request_bytes_in_flight, self.bytes);
        if let Some(histogram) = self.api_key.and_then(|k| self.counters.apis.get(k)) {
            histogram.record(self.started.elapsed());
        }
    }
}

/// Counts what a Fetch response returns, per topic (Kafka's BytesOutPerSec): called by the
/// Fetch handler with the response it is about to send.
pub fn count_fetch(
    metrics: &ShardMetrics,
    image: &MetadataImage,
    request: &sluice_protocol::messages::fetch::FetchRequest,
    response: &sluice_protocol::messages::fetch::FetchResponse,
) {
    for (asked, answered) in request.topics.iter().zip(&response.responses) {
        let name = if asked.topic.is_empty() {
            match image.topic_by_id(&asked.topic_id) {
                Some(topic) => topic.name.as_str(),
                None => continue,
            }
        } else {
            asked.topic.as_str()
        };
        for partition in &answered.partitions {
            if partition.records.is_some()
                || partition.records_file.is_some()
                || !partition.records_pieces.is_empty()
            {
                metrics.fetched(name, partition.records_len());
            }
        }
    }
}

/// Partitions gathered between yields, so that a scrape of a shard with many partitions does
/// not hold its executor for long in one go.
const STATS_PARTITIONS_PER_YIELD: usize = 1024;

/// This shard's answer to a scrape (`ShardMessage::Stats`): its partitions, its per-topic
/// traffic and the committed offsets of its groups. Allocates per partition, per scrape —
/// never per record.
pub async fn shard_stats(
    ctx: &crate::shard_core::ShardCore,
    metrics: Option<&ShardMetrics>,
    group_offsets: Vec<sluice_shard::GroupOffset>,
) -> ShardStats {
    // Own work only: the stretches between yields, not the waits to be scheduled again.
    let mut stretch = Instant::now();
    let mut own = Duration::ZERO;
    let image = ctx.image();
    let hosted = ctx.replicas.partitions();
    let mut partitions = Vec::with_capacity(hosted.len());
    for (i, p) in hosted.iter().enumerate() {
        if i > 0 && i % STATS_PARTITIONS_PER_YIELD == 0 {
            own += stretch.elapsed();
            glommio::yield_if_needed().await;
            stretch = Instant::now();
        }
        let assigned = image
            .topic_by_id(&p.tp.topic_id)
            .and_then(|t| t.partition(p.tp.partition));
        let leader = assigned.is_some_and(|a| a.leader == image.local_node_id);
        partitions.push(PartitionStats {
            topic: p.topic.to_string(),
            partition: p.tp.partition,
            size_bytes: p.log_size_bytes(),
            log_start_offset: p.log_start_offset(),
            log_end_offset: p.log_end_offset(),
            high_watermark: p.high_watermark(),
            leader,
            under_replicated: leader && assigned.is_some_and(|a| a.isr.len() < a.replicas.len()),
        });
    }
    // Every shard holds the same image: one of them counts the cluster's leaderless partitions.
    let offline_partitions = if ctx.shard_id.0 == 0 {
        image
            .topics
            .values()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.leader < 0)
            .count() as u64
    } else {
        0
    };
    let stats = ShardStats {
        partitions,
        topics: metrics.map(|m| m.topic_traffic(&image)).unwrap_or_default(),
        group_offsets,
        offline_partitions,
        page_cache: sluice_log::page_cache::stats(),
    };
    if let Some(metrics) = metrics {
        own += stretch.elapsed();
        let own_us = u64::try_from(own.as_micros()).unwrap_or(u64::MAX);
        metrics.counters.stats_us.store(own_us, Ordering::Relaxed);
    }
    stats
}

#[cfg(test)]
mod tests;
