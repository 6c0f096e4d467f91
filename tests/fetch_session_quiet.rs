//! A consumer's fetch session leaves its quiet partitions (answered "nothing new", unchanged
//! since) out of the reads, and loses nothing by it: an append to a quiet partition ends a long
//! poll that waits on the session, later appends are answered, and a deleted topic's partitions
//! are answered with their error. Partitions spread over two shards, so the stamps are read
//! across shards too.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::time::{Duration, Instant};

use sluice_protocol::codec::Uuid;
use sluice_protocol::messages::delete_topics::DeleteTopicsRequest;
use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{batch, create_topic, free_port, produce, temp_dir, topic_id, Broker, Client};

const TOPIC: &str = "quiet";
const PARTITIONS: i32 = 4;
const FETCH: i16 = 1;
/// What the Java consumer of Kafka 4.x sends.
const FETCH_VERSION: i16 = 17;
const UNKNOWN_TOPIC_ID: i16 = 100;
/// A long poll's wait: far longer than an answer woken by an append takes.
const LONG_WAIT_MS: i32 = 20_000;

/// A request of session `session_id` at `epoch`, naming `partitions` (index, fetch offset).
fn fetch(
    topic_id: Uuid,
    session_id: i32,
    epoch: i32,
    partitions: &[(i32, i64)],
    max_wait_ms: i32,
) -> RequestBody {
    RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 50 << 20,
        session_id,
        session_epoch: epoch,
        topics: if partitions.is_empty() {
            Vec::new()
        } else {
            vec![FetchTopic {
                topic_id,
                partitions: partitions
                    .iter()
                    .map(|&(partition, fetch_offset)| FetchPartition {
                        partition,
                        current_leader_epoch: -1,
                        fetch_offset,
                        last_fetched_epoch: -1,
                        log_start_offset: -1,
                        partition_max_bytes: 1 << 20,
                        ..FetchPartition::default()
                    })
                    .collect(),
                ..FetchTopic::default()
            }]
        },
        ..FetchRequest::default()
    })
}

fn response(answer: ResponseBody) -> FetchResponse {
    let ResponseBody::Fetch(response) = answer else {
        panic!("not a Fetch response: {answer:?}");
    };
    assert_eq!(response.error_code, 0, "top-level error");
    response
}

/// (partition, error code, high watermark, record bytes) of each partition answered, sorted.
fn answered(response: &FetchResponse) -> Vec<(i32, i16, i64, usize)> {
    let mut all: Vec<_> = response
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.records.as_ref().map_or(0, |r| r.len()),
                )
            })
        })
        .collect();
    all.sort_unstable();
    all
}

fn call(client: &mut Client, body: RequestBody) -> FetchResponse {
    response(client.call(FETCH, FETCH_VERSION, body))
}

#[test]
fn quiet_partitions_left_out_of_a_sessions_reads_lose_nothing() {
    let broker = Broker::start_in(
        &temp_dir("fetch-session-quiet"),
        free_port(),
        &["sluice.shards=2"],
    );
    let mut client = broker.client();
    let mut producer = broker.client();
    create_topic(&mut client, TOPIC, PARTITIONS);
    let id = topic_id(&mut client, TOPIC);
    for p in 0..PARTITIONS {
        assert_eq!(produce(&mut producer, TOPIC, p, batch("first", 5)).0, 0);
    }
    let everything: Vec<(i32, i64)> = (0..PARTITIONS).map(|p| (p, 0)).collect();

    // The full fetch opens the session and returns every partition's batch.
    let full = call(&mut client, fetch(id, 0, 0, &everything, 0));
    let session = full.session_id;
    assert_ne!(session, 0, "a session is opened");
    let caught_up: Vec<(i32, i64)> = answered(&full)
        .iter()
        .map(|&(p, error, hw, bytes)| {
            assert_eq!((error, hw), (0, 5), "partition {p}");
            assert!(bytes > 0, "partition {p} returns its batch");
            (p, hw)
        })
        .collect();
    assert_eq!(caught_up.len(), PARTITIONS as usize);

    // The client moves every position to the end: nothing new, and every partition quiet.
    let quiet = call(&mut client, fetch(id, session, 1, &caught_up, 0));
    assert!(answered(&quiet).is_empty(), "{:?}", answered(&quiet));

    // A long poll on the session, all of it quiet: an append to partition 2 ends it.
    let started = Instant::now();
    client.send(
        FETCH,
        FETCH_VERSION,
        fetch(id, session, 2, &[], LONG_WAIT_MS),
    );
    assert_eq!(produce(&mut producer, TOPIC, 2, batch("second", 3)).0, 0);
    let woken = response(client.receive(FETCH, FETCH_VERSION));
    let waited = started.elapsed();
    let only_two = answered(&woken);
    assert_eq!(only_two.len(), 1, "{only_two:?}");
    assert_eq!(only_two[0].0, 2);
    assert_eq!(only_two[0].2, 8, "partition 2's new high watermark");
    assert!(only_two[0].3 > 0, "partition 2's new batch");
    assert!(
        waited < Duration::from_millis(LONG_WAIT_MS as u64 / 2),
        "the append ended the wait ({waited:?})"
    );

    // Partition 2 caught up again; appends to partitions 0 and 3 are in the next answer, with
    // partition 1, which the client reads again from its start (so that the partitions read
    // have data at once, and the whole session is not read for want of it).
    let again = call(&mut client, fetch(id, session, 3, &[(2, 8)], 0));
    assert!(answered(&again).is_empty(), "{:?}", answered(&again));
    assert_eq!(produce(&mut producer, TOPIC, 0, batch("third", 2)).0, 0);
    assert_eq!(produce(&mut producer, TOPIC, 3, batch("third", 4)).0, 0);
    let next = call(&mut client, fetch(id, session, 4, &[(1, 0)], LONG_WAIT_MS));
    let moved: Vec<(i32, i64)> = answered(&next)
        .iter()
        .map(|&(p, error, hw, bytes)| {
            assert_eq!(error, 0);
            assert!(bytes > 0, "partition {p}");
            (p, hw)
        })
        .collect();
    assert_eq!(moved, vec![(0, 7), (1, 5), (3, 9)]);

    // The topic is deleted: every partition, quiet or not, is answered with the error.
    let ResponseBody::DeleteTopics(deleted) = producer.call(
        20,
        5,
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topic_names: vec![TOPIC.to_string()],
            topics: Vec::new(),
            timeout_ms: 30_000,
        }),
    ) else {
        panic!("not a DeleteTopics response");
    };
    assert_eq!(deleted.responses[0].error_code, 0);
    let mut epoch = 5;
    let mut gone = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while gone.len() < PARTITIONS as usize && Instant::now() < deadline {
        let answer = call(&mut client, fetch(id, session, epoch, &moved, 0));
        epoch += 1;
        gone = answered(&answer)
            .into_iter()
            .filter(|&(_, error, _, _)| error == UNKNOWN_TOPIC_ID)
            .map(|(p, ..)| p)
            .collect();
    }
    assert_eq!(gone, (0..PARTITIONS).collect::<Vec<_>>());
    broker.stop();
}
