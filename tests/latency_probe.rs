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
