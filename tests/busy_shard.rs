//! A shard saturated by pipelining producers still serves its other connections promptly:
//! a consumer's long poll is answered soon after a produce on a third connection feeds it.
//!
//! Why this can fail: a connection with bytes always waiting in its socket reads them without
//! suspending, and glommio reaps io_uring completions (other sockets' reads) only between two
//! runs of a task queue. A run ends when its tasks all wait or its preempt timer fires; glommio's
//! default timer is 100 ms, which held every other connection of the shard for up to 100 ms
//! (`bench/results/2026-12-04-preempt-ab.md`). `sluice.shard.preempt.timer.us` bounds it.

#![allow(clippy::unwrap_used)] // test code

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use sluice_protocol::request::{encode_request, RequestBody, ResponseBody};
use support::{batch, create_topic, fetch, fetch_request, produce, Broker, Client};

/// Producers keeping the shard busy, each on its own connection and topic.
const PRODUCERS: usize = 3;
/// Records of 1 KiB per produce request. Small requests sent many to a write: the client's
/// cost per request is a share of one `write`, the shard's is a whole request (parse, append,
/// answer), so the shard is the bottleneck and the producers' sockets never run dry.
const RECORDS_PER_REQUEST: usize = 4;
/// Requests per write, and writes each producer keeps in flight.
const REQUESTS_PER_WRITE: usize = 64;
const WRITES_IN_FLIGHT: usize = 4;
/// Long polls measured while the producers run.
const PROBES: usize = 20;
/// The bound on a long poll's wake-up.
const WAKE_BOUND: Duration = Duration::from_millis(50);

/// `REQUESTS_PER_WRITE` encoded Produce v9 frames (acks=1), each of `RECORDS_PER_REQUEST` 1 KiB
/// records to `topic`-0, sent again and again: the broker assigns offsets, so the same bytes
/// append each time.
fn load_frames(topic: &str) -> Vec<u8> {
    let value = vec![b'v'; 1024];
    let mut builder = sluice_protocol::record_batch::RecordBatchBuilder::new(support::now_ms());
    for _ in 0..RECORDS_PER_REQUEST {
        builder = builder.record(None, Some(&value));
    }
    let request = ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: topic.to_string(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(builder.build().into()),
            }],
            ..TopicProduceData::default()
        }],
    };
    let header = RequestHeader {
        api_key: 0,
        api_version: 9,
        correlation_id: 1,
        client_id: Some("busy-producer".to_string()),
    };
    encode_request(&header, &RequestBody::Produce(request)).repeat(REQUESTS_PER_WRITE)
}

/// Pipelines `frames` on a connection of its own until `stop`; returns the requests answered.
fn pipeline(port: u16, frames: Vec<u8>, stop: Arc<AtomicBool>) -> u64 {
    use std::io::Write;
    let mut client = Client::connect(port);
    let write = |client: &mut Client| client.stream.write_all(&frames).unwrap();
    let read = |client: &mut Client| {
        for _ in 0..REQUESTS_PER_WRITE {
            client.read_frame().expect("a produce response");
        }
    };
    for _ in 0..WRITES_IN_FLIGHT {
        write(&mut client);
    }
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        read(&mut client);
        answered += REQUESTS_PER_WRITE as u64;
        write(&mut client);
    }
    for _ in 0..WRITES_IN_FLIGHT {
        read(&mut client);
        answered += REQUESTS_PER_WRITE as u64;
    }
    answered
}

/// Time from sending the produce that feeds a waiting long poll to the fetch's answer.
fn probe(port: u16, feeder: &mut Client, offset: i64) -> Duration {
    let waiter = thread::spawn(move || {
        let mut client = Client::connect(port);
        let ResponseBody::Fetch(response) =
            client.call(1, 12, fetch_request("probe", 0, offset, 10_000, 1))
        else {
            panic!("wrong response kind")
        };
        let answered_at = Instant::now();
        let records = response.responses[0].partitions[0].records.clone();
        (answered_at, records.is_some_and(|r| !r.is_empty()))
    });
    // Long enough for the fetch to arrive and wait, on a shard answering in milliseconds.
    thread::sleep(Duration::from_millis(150));
    let sent_at = Instant::now();
    let (error, base) = produce(feeder, "probe", 0, batch("wake", 1));
    assert_eq!((error, base), (0, offset));
    let (answered_at, returned) = waiter.join().unwrap();
    assert!(returned, "the long poll returns the appended batch");
    answered_at.saturating_duration_since(sent_at)
}

#[test]
fn long_polls_are_woken_promptly_on_a_shard_busy_with_producers() {
    // One shard: the producers, the feeder and the long poll all share its executor.
    // Retention keeps the producers' hundreds of MB/s from filling the disk: each load
    // partition keeps about 64 MiB, in 16 MiB segments.
    let broker = Broker::start(
        "busyshard",
        &[
            "sluice.shards=1",
            "log.segment.bytes=16777216",
            "log.retention.bytes=67108864",
            "log.retention.check.interval.ms=250",
        ],
    );
    let mut client = broker.client();
    create_topic(&mut client, "probe", 1);
    for i in 0..PRODUCERS {
        create_topic(&mut client, &format!("load-{i}"), 1);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|i| {
            let (port, frame, stop) =
                (broker.port, load_frames(&format!("load-{i}")), stop.clone());
            thread::spawn(move || pipeline(port, frame, stop))
        })
        .collect();
    // The producers are running once their partitions grow.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fetch(&mut client, "load-0", 0, 0).1 < (RECORDS_PER_REQUEST * REQUESTS_PER_WRITE) as i64 {
        assert!(Instant::now() < deadline, "the producers make no progress");
        thread::sleep(Duration::from_millis(20));
    }
    let mut lags: Vec<Duration> = (0..PROBES as i64)
        .map(|offset| probe(broker.port, &mut client, offset))
        .collect();
    stop.store(true, Ordering::Relaxed);
    let answered: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
    lags.sort();
    println!(
        "{answered} produce requests of {} KiB answered meanwhile; wake-up after the feeding \
         produce was sent: median {:?}, max {:?}",
        RECORDS_PER_REQUEST,
        lags[PROBES / 2],
        lags[PROBES - 1]
    );
    assert!(
        answered as usize > PROBES * PRODUCERS,
        "the producers kept the shard busy ({answered} requests answered)"
    );
    // The median, not the max: one probe may meet a scheduling hiccup of a loaded CI host
    // (the test's own threads share its two cores); a 100 ms preempt timer delays most of them.
    assert!(
        lags[PROBES / 2] < WAKE_BOUND,
        "long polls woke {:?} (median) after the feeding produce was sent: {lags:?}",
        lags[PROBES / 2]
    );
    let dir = broker.dir.clone();
    broker.stop();
    std::fs::remove_dir_all(dir).expect("the broker's directory removed");
}
