//! A follower's fetch connection moves to the shard owning the partitions it names, at its first
//! replica Fetch, and goes on being answered there; a consumer's fetch connection, and a replica
//! fetch naming partitions of several shards, stay where the kernel put them.

#![allow(clippy::unwrap_used)] // test code
mod support;

use sluice_protocol::codec::Uuid;
use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic, ReplicaState};
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{create_topic, free_port, temp_dir, topic_id, Broker, Client};

const TOPIC: &str = "followed";
const PARTITIONS: i32 = 8;
const MOVE_LINE: &str = "follower connection moves to its partitions' shard";
const FETCH: i16 = 1;
/// What Sluice's replica fetcher sends.
const FETCH_VERSION: i16 = 17;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;

fn start() -> Broker {
    Broker::start_logging(
        &temp_dir("fetch-connections"),
        free_port(),
        &["sluice.shards=4"],
        "info,sluice_server=debug,glommio=off",
    )
}

/// A Fetch of `partitions` of `topic_id` from offset 0, by `replica_id` (-1: a consumer), that
/// does not wait.
fn fetch(topic_id: Uuid, partitions: &[i32], replica_id: i32) -> RequestBody {
    RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        replica_state: ReplicaState {
            replica_id,
            replica_epoch: if replica_id >= 0 { 1 } else { -1 },
        },
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic_id,
            partitions: partitions
                .iter()
                .map(|&partition| FetchPartition {
                    partition,
                    current_leader_epoch: -1,
                    fetch_offset: 0,
                    last_fetched_epoch: -1,
                    log_start_offset: 0,
                    partition_max_bytes: 1 << 20,
                    ..FetchPartition::default()
                })
                .collect(),
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    })
}

/// The error code of each partition answered, in order.
fn errors(answer: &ResponseBody) -> Vec<i16> {
    let ResponseBody::Fetch(response) = answer else {
        panic!("not a Fetch response: {answer:?}");
    };
    assert_eq!(response.error_code, 0);
    response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

fn moves_of(log: &str, client: &Client) -> usize {
    client.log_lines(log, MOVE_LINE)
}

#[test]
fn follower_connections_move_to_their_partitions_shard() {
    let broker = start();
    let mut admin = broker.client();
    create_topic(&mut admin, TOPIC, PARTITIONS);
    let id = topic_id(&mut admin, TOPIC);

    // Broker 2 is no replica here (one node), so each partition is refused as Kafka refuses an
    // unknown replica; where the connection is served does not change the answer.
    let mut followers = Vec::new();
    for i in 0..16 {
        let partition = i % PARTITIONS;
        let mut client = broker.client();
        for _ in 0..3 {
            let answer = client.call(FETCH, FETCH_VERSION, fetch(id, &[partition], 2));
            assert_eq!(
                errors(&answer),
                [NOT_LEADER_OR_FOLLOWER],
                "partition {partition}"
            );
        }
        followers.push(client);
    }
    // A consumer's connection, and one replica fetch naming partitions of every shard.
    let mut consumer = broker.client();
    let all: Vec<i32> = (0..PARTITIONS).collect();
    let mut mixed = broker.client();
    for _ in 0..3 {
        let answer = consumer.call(FETCH, FETCH_VERSION, fetch(id, &all, -1));
        assert_eq!(errors(&answer), vec![0; PARTITIONS as usize]);
        let answer = mixed.call(FETCH, FETCH_VERSION, fetch(id, &all, 2));
        assert_eq!(
            errors(&answer),
            vec![NOT_LEADER_OR_FOLLOWER; PARTITIONS as usize]
        );
    }

    let log = broker.log();
    let moves: Vec<usize> = followers.iter().map(|c| moves_of(&log, c)).collect();
    assert!(
        moves.iter().all(|&m| m <= 1),
        "a connection moves at most once: {moves:?}"
    );
    // Each lands on its partition's shard with odds 1/4: that none of 16 moved is (1/4)^16.
    assert!(moves.iter().sum::<usize>() >= 1, "no connection moved");
    assert_eq!(
        moves_of(&log, &consumer),
        0,
        "a consumer's connection moved"
    );
    assert_eq!(
        moves_of(&log, &mixed),
        0,
        "a fetch of partitions on several shards moved"
    );
}
