//! The registry, the counting guards and the text format, checked without a broker (the client
//! suite's test_metrics.py scrapes a running one with Prometheus' own parser).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use sluice_protocol::codec::Uuid;
use sluice_shard::{
    GroupOffset, MetadataImage, PartitionStats, ShardId, ShardStats, TopicImage, TopicTraffic,
};

use super::http::{route, Route};
use super::scrape::encode;
use super::text::{Exposition, Kind};
use super::*;

/// Sample lines of `text` as (name with labels, value).
fn samples(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample has a value");
            let value = match value {
                "+Inf" => f64::INFINITY,
                v => v.parse().expect("a number"),
            };
            (series.to_string(), value)
        })
        .collect()
}

fn value(text: &str, series: &str) -> f64 {
    samples(text)
        .into_iter()
        .find(|(s, _)| s == series)
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .1
}

#[test]
fn latency_lands_in_the_first_bucket_at_or_above_it() {
    let histogram = ApiHistogram::new();
    histogram.record(Duration::from_micros(100)); // on the first bound: le="0.0001"
    histogram.record(Duration::from_micros(101)); // just above it: the next bucket
    histogram.record(Duration::from_millis(3)); // 0.005
    histogram.record(Duration::from_secs(60)); // beyond the last bound: +Inf
    let (counts, sum_us) = histogram.read();
    assert_eq!(counts[0], 1);
    assert_eq!(counts[1], 1);
    assert_eq!(counts[5], 1);
    assert_eq!(counts[LATENCY_BUCKETS - 1], 1);
    assert_eq!(counts.iter().sum::<u64>(), 4);
    assert_eq!(sum_us, 100 + 101 + 3_000 + 60_000_000);
}

#[test]
fn request_guard_counts_in_flight_until_dropped() {
    let registry = Registry::new(2);
    let metrics = ShardMetrics::new(registry.shards[1].clone());
    let counters = &registry.shards[1];
    assert_eq!(counters.tid.load(Ordering::Relaxed), current_tid());
    // A Produce (key 0) frame of 10 bytes, and a frame too short to hold a key.
    let produce = [0u8, 0, 0, 9, 0, 0, 0, 1, 0, 0];
    let guard = metrics.request(&produce);
    let tiny = metrics.request(&[3]);
    assert_eq!(counters.requests_in_flight.load(Ordering::Relaxed), 2);
    assert_eq!(counters.request_bytes_in_flight.load(Ordering::Relaxed), 11);
    drop(guard);
    drop(tiny);
    assert_eq!(counters.requests_in_flight.load(Ordering::Relaxed), 0);
    assert_eq!(counters.request_bytes_in_flight.load(Ordering::Relaxed), 0);
    assert_eq!(
        counters.request_bytes.load(Ordering::Relaxed),
        10 + 4 + 1 + 4
    );
    let (counts, _) = counters.apis[0].read();
    assert_eq!(counts.iter().sum::<u64>(), 1, "the Produce is counted");
    let others: u64 = counters.apis[1..]
        .iter()
        .map(|h| h.read().0.iter().sum::<u64>())
        .sum();
    assert_eq!(others, 0, "a frame without a key is counted in flight only");
    // An API key beyond the slots and a negative one are not counted per API.
    drop(metrics.request(&[0x7f, 0xff, 0, 0]));
    drop(metrics.request(&[0xff, 0xff, 0, 0]));
    let connection = metrics.connection();
    assert_eq!(counters.connections.load(Ordering::Relaxed), 1);
    drop(connection);
    assert_eq!(counters.connections.load(Ordering::Relaxed), 0);
}

fn topic(name: &str, id: u128, leaders: &[i32]) -> TopicImage {
    TopicImage {
        name: name.to_string(),
        topic_id: Uuid::from_u128(id),
        partitions: leaders
            .iter()
            .enumerate()
            .map(|(i, leader)| sluice_shard::PartitionImage {
                partition: i as i32,
                leader: *leader,
                leader_epoch: 0,
                partition_epoch: 0,
                replicas: vec![1],
                isr: vec![1],
                eligible_leader_replicas: Vec::new(),
                last_known_elr: Vec::new(),
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                shard: ShardId(0),
            })
            .collect(),
        configs: BTreeMap::new(),
    }
}

#[test]
fn topic_counts_add_up_and_deleted_topics_are_forgotten() {
    let registry = Registry::new(1);
    let metrics = ShardMetrics::new(registry.shards[0].clone());
    let orders: Rc<str> = Rc::from("orders");
    metrics.appended(&orders, 1000, 10);
    metrics.appended(&orders, 500, 5);
    metrics.fetched("orders", 700);
    metrics.fetched("gone", 1);
    let mut image = MetadataImage {
        local_node_id: 1,
        ..MetadataImage::default()
    };
    image.put_topic(topic("orders", 1, &[1]));
    let traffic = metrics.topic_traffic(&image);
    assert_eq!(
        traffic,
        vec![TopicTraffic {
            topic: "orders".to_string(),
            bytes_in: 1500,
            messages_in: 15,
            bytes_out: 700,
            produce_appends: 2,
            fetch_partitions: 1,
        }]
    );
    assert!(metrics.topics.borrow().get("gone").is_none());
}

#[test]
fn exposition_escapes_labels_and_keeps_histograms_cumulative() {
    let mut out = Exposition::new();
    out.family(
        "x_total",
        Kind::Counter,
        "A help line with a \\ and\na newline.",
    );
    out.sample("x_total", &[("group", "a\"b\\c\nd")], 3.0);
    out.family("h_seconds", Kind::Histogram, "h");
    out.histogram(
        "h_seconds",
        &[("request", "Fetch")],
        &[0.001, 0.5],
        &[2, 0, 1],
        0.75,
    );
    let text = out.finish();
    assert!(text.contains("# HELP x_total A help line with a \\\\ and\\na newline.\n"));
    assert!(text.contains("# TYPE x_total counter\n"));
    assert!(text.contains("x_total{group=\"a\\\"b\\\\c\\nd\"} 3\n"));
    assert_eq!(
        value(&text, "h_seconds_bucket{request=\"Fetch\",le=\"0.001\"}"),
        2.0
    );
    assert_eq!(
        value(&text, "h_seconds_bucket{request=\"Fetch\",le=\"0.5\"}"),
        2.0
    );
    assert_eq!(
        value(&text, "h_seconds_bucket{request=\"Fetch\",le=\"+Inf\"}"),
        3.0
    );
    assert_eq!(value(&text, "h_seconds_count{request=\"Fetch\"}"), 3.0);
    assert_eq!(value(&text, "h_seconds_sum{request=\"Fetch\"}"), 0.75);
}

fn partition(topic: &str, index: i32, hw: i64, leader: bool) -> PartitionStats {
    PartitionStats {
        topic: topic.to_string(),
        partition: index,
        size_bytes: 4096,
        log_start_offset: 0,
        log_end_offset: hw,
        high_watermark: hw,
        leader,
        under_replicated: false,
    }
}

#[test]
fn a_scrape_sums_shards_and_joins_lag_across_them() {
    let registry = Registry::new(2);
    let m0 = ShardMetrics::new(registry.shards[0].clone());
    let m1 = ShardMetrics::new(registry.shards[1].clone());
    for _ in 0..3 {
        drop(m0.request(&[0, 1, 0, 0])); // Fetch
    }
    drop(m1.request(&[0, 1, 0, 0]));
    drop(m1.request(&[0, 0, 0, 0])); // Produce
    let traffic = |bytes_in| TopicTraffic {
        topic: "t".to_string(),
        bytes_in,
        messages_in: 1,
        ..TopicTraffic::default()
    };
    let stats = vec![
        Some(ShardStats {
            partitions: vec![partition("t", 0, 100, true)],
            topics: vec![traffic(10)],
            // Shard 0 coordinates the group; partition 1 lives on shard 1.
            group_offsets: vec![
                GroupOffset {
                    group: "g".to_string(),
                    topic: "t".to_string(),
                    partition: 0,
                    offset: 100,
                },
                GroupOffset {
                    group: "g".to_string(),
                    topic: "t".to_string(),
                    partition: 1,
                    offset: 40,
                },
            ],
            offline_partitions: 2,
            page_cache: sluice_log::page_cache::WindowStats {
                held_bytes: 4096,
                gate_waits: 3,
                ..Default::default()
            },
        }),
        Some(ShardStats {
            partitions: vec![partition("t", 1, 50, true), partition("u", 0, 0, false)],
            topics: vec![traffic(32)],
            group_offsets: Vec::new(),
            offline_partitions: 0,
            page_cache: Default::default(),
        }),
    ];
    let text = encode(&registry, &stats);
    assert_eq!(
        value(
            &text,
            "kafka_server_brokertopicmetrics_bytesin_total{topic=\"t\"}"
        ),
        42.0
    );
    // The page-cache window per shard, as each shard counted it.
    for (series, expected) in [
        ("sluice_page_cache_window_held_bytes{shard=\"0\"}", 4096.0),
        ("sluice_page_cache_gate_waits_total{shard=\"0\"}", 3.0),
        ("sluice_page_cache_gate_waits_total{shard=\"1\"}", 0.0),
    ] {
        assert_eq!(value(&text, series), expected, "{series}");
    }
    assert_eq!(
        value(
            &text,
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"t\"}"
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_network_requestmetrics_requests_total{request=\"Fetch\"}"
        ),
        4.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_network_requestmetrics_totaltime_seconds_count{request=\"Produce\"}"
        ),
        1.0
    );
    // A served API with no request yet is shown at 0.
    assert_eq!(
        value(
            &text,
            "kafka_network_requestmetrics_requests_total{request=\"DeleteRecords\"}"
        ),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_server_replicamanager_partitioncount{shard=\"1\"}"
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_server_replicamanager_leadercount{shard=\"1\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_consumergroup_lag{consumergroup=\"g\",topic=\"t\",partition=\"0\"}"
        ),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_consumergroup_lag{consumergroup=\"g\",topic=\"t\",partition=\"1\"}"
        ),
        10.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_log_log_size_bytes{topic=\"u\",partition=\"0\"}"
        ),
        4096.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_controller_kafkacontroller_offlinepartitionscount"
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "kafka_server_replicamanager_underreplicatedpartitions"
        ),
        0.0
    );
    assert!(value(&text, "process_resident_memory_bytes") > 0.0);
    assert!(value(&text, "sluice_shard_busy_seconds_total{shard=\"0\"}") >= 0.0);
    // Every family is declared once, before its samples.
    let mut declared = std::collections::HashSet::new();
    for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
        let name = line.split(' ').nth(2).unwrap();
        assert!(declared.insert(name.to_string()), "{name} declared twice");
    }
    for (series, _) in samples(&text) {
        let name = series.split('{').next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| declared.contains(*f)))
            .unwrap_or(name);
        assert!(declared.contains(family), "{name} has no # TYPE");
    }
}

#[test]
fn a_shard_that_did_not_answer_is_left_out() {
    let registry = Registry::new(2);
    let stats = vec![None, Some(ShardStats::default())];
    let text = encode(&registry, &stats);
    assert!(!text.contains("kafka_server_replicamanager_partitioncount{shard=\"0\"}"));
    assert_eq!(
        value(
            &text,
            "kafka_server_replicamanager_partitioncount{shard=\"1\"}"
        ),
        0.0
    );
}

#[test]
fn requests_are_routed_by_method_and_path() {
    assert_eq!(
        route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
        (Route::Metrics, false)
    );
    assert_eq!(
        route(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
        (Route::Metrics, false)
    );
    assert_eq!(route(b"HEAD /ready HTTP/1.1\r\n\r\n"), (Route::Ready, true));
    assert_eq!(
        route(b"GET /health HTTP/1.1\r\n\r\n"),
        (Route::Health, false)
    );
    assert_eq!(
        route(b"GET /other HTTP/1.1\r\n\r\n"),
        (Route::NotFound, false)
    );
    assert_eq!(
        route(b"POST /metrics HTTP/1.1\r\n\r\n"),
        (Route::MethodNotAllowed, false)
    );
    assert_eq!(route(b"GET /metrics\r\n\r\n"), (Route::BadRequest, false));
    assert_eq!(route(b"\xff\xfe garbage"), (Route::BadRequest, false));
    assert_eq!(route(b""), (Route::BadRequest, false));
}

#[test]
fn readiness_moves_through_its_states() {
    let registry = Registry::new(0);
    assert_eq!(registry.readiness(), Readiness::Starting);
    registry.set_readiness(Readiness::Ready);
    assert_eq!(registry.readiness(), Readiness::Ready);
    registry.set_readiness(Readiness::Stopping);
    assert_eq!(registry.readiness(), Readiness::Stopping);
}
