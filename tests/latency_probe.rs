//! A probe, not a check: prints produce round-trip times to partitions on each shard, so a
//! regression in cross-shard latency is easy to see (`cargo test --release --test latency_probe
//! -- --ignored --nocapture`). Timing is measured in `bench/`, never asserted here.

mod support;

use std::time::Instant;

use support::{batch, create_topic, produce, Broker};

#[test]
#[ignore]
fn produce_round_trip_per_partition() {
    let broker = Broker::start("latency", &["sluice.shards=2"]);
    let mut client = broker.client();
    create_topic(&mut client, "lat", 2);
    for partition in 0..2 {
        let b = batch("x", 1);
        for _ in 0..50 {
            produce(&mut client, "lat", partition, b.clone());
        }
        let n = 500;
        let started = Instant::now();
        for _ in 0..n {
            produce(&mut client, "lat", partition, b.clone());
        }
        println!(
            "partition {partition}: {:?} per produce",
            started.elapsed() / n
        );
    }
}

#[test]
#[ignore]
fn fetch_round_trip_of_sixteen_megabytes() {
    use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
    use sluice_protocol::request::{RequestBody, ResponseBody};
    let tail_cache = std::env::var("SLUICE_PROBE_TAIL_CACHE").unwrap_or_else(|_| "33554432".into());
    let broker = Broker::start(
        "fetchlat",
        &[
            "sluice.shards=2",
            &format!("sluice.shard.tail.cache.bytes={tail_cache}"),
        ],
    );
    let mut client = broker.client();
    create_topic(&mut client, "big", 16);
    let value = vec![b'v'; 1000];
    for partition in 0..16 {
        for _ in 0..16 {
            let mut builder =
                sluice_protocol::record_batch::RecordBatchBuilder::new(support::now_ms());
            for _ in 0..100 {
                builder = builder.record(None, Some(&value));
            }
            produce(&mut client, "big", partition, builder.build());
        }
    }
    let request = || {
        RequestBody::Fetch(FetchRequest {
            replica_id: -1,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 50 << 20,
            session_epoch: -1,
            topics: vec![FetchTopic {
                topic: "big".into(),
                partitions: (0..16)
                    .map(|p| FetchPartition {
                        partition: p,
                        fetch_offset: 0,
                        partition_max_bytes: 1 << 20,
                        current_leader_epoch: -1,
                        last_fetched_epoch: -1,
                        log_start_offset: -1,
                        ..FetchPartition::default()
                    })
                    .collect(),
                ..FetchTopic::default()
            }],
            ..FetchRequest::default()
        })
    };
    let n = 50;
    let mut bytes = 0;
    let started = Instant::now();
    for _ in 0..n {
        let ResponseBody::Fetch(response) = client.call(1, 12, request()) else {
            panic!()
        };
        bytes += response.responses[0]
            .partitions
            .iter()
            .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
            .sum::<usize>();
    }
    let elapsed = started.elapsed();
    println!(
        "{:?} per fetch of {} KiB; {:.0} MB/s",
        elapsed / n,
        bytes / n as usize / 1024,
        bytes as f64 / elapsed.as_secs_f64() / 1e6
    );
}
