//! A consumer's coordinator connection moves to the shard that coordinates its group, at a
//! request boundary, and goes on answering every request in order: pipelined requests that were
//! already read when it moved are answered too, and a connection moves at most once.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::io::Write;

use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::find_coordinator::FindCoordinatorRequest;
use sluice_protocol::messages::metadata::{MetadataRequest, MetadataRequestTopic};
use sluice_protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestTopic};
use sluice_protocol::request::{decode_response, encode_request, RequestBody, ResponseBody};
use support::{create_topic, free_port, temp_dir, Broker, Client};

const TOPIC: &str = "committed";
const MOVE_LINE: &str = "connection moves to its group's coordinator shard";
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;

fn start() -> Broker {
    Broker::start_logging(
        &temp_dir("group-connections"),
        free_port(),
        &["sluice.shards=4"],
        "info,sluice_server=debug,glommio=off",
    )
}

fn commit(group: &str, offset: i64) -> RequestBody {
    support::offset_commit(group, TOPIC, offset)
}

fn fetch_offsets(group: &str) -> RequestBody {
    RequestBody::OffsetFetch(OffsetFetchRequest {
        group_id: group.to_string(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: TOPIC.to_string(),
            partition_indexes: vec![0],
        }]),
        ..Default::default()
    })
}

fn metadata() -> RequestBody {
    RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(TOPIC.to_string()),
            ..Default::default()
        }]),
        ..Default::default()
    })
}

/// The committed offset of partition 0 (error code, offset).
fn committed(response: &ResponseBody) -> (i16, i64) {
    let ResponseBody::OffsetFetch(r) = response else {
        panic!("not an OffsetFetch response: {response:?}");
    };
    if r.error_code != 0 {
        return (r.error_code, -1);
    }
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

fn commit_error(response: &ResponseBody) -> i16 {
    let ResponseBody::OffsetCommit(r) = response else {
        panic!("not an OffsetCommit response: {response:?}");
    };
    r.topics[0].partitions[0].error_code
}

/// Creates `__consumer_offsets` (FindCoordinator does, as in Kafka) and waits until it answers.
fn wait_for_coordinator(client: &mut Client) {
    for _ in 0..500 {
        let request = RequestBody::FindCoordinator(FindCoordinatorRequest {
            key: "warm-up".to_string(),
            ..Default::default()
        });
        let ResponseBody::FindCoordinator(r) = client.call(10, 3, request) else {
            panic!("not a FindCoordinator response");
        };
        if r.error_code == 0 {
            return;
        }
        assert_eq!(r.error_code, COORDINATOR_NOT_AVAILABLE, "{r:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("no group coordinator after 10 s");
}

/// Asks for `group`'s committed offset until its coordinator has loaded (the first group
/// request on a connection, which may move it).
fn first_offset_fetch(client: &mut Client, group: &str) -> i64 {
    for _ in 0..500 {
        let (error, offset) = committed(&client.call(9, 7, fetch_offsets(group)));
        if error == 0 {
            return offset;
        }
        assert_eq!(error, COORDINATOR_LOAD_IN_PROGRESS, "group {group}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("group {group}: coordinator still loading after 10 s");
}

/// Writes every request in one write, then reads every response: they must come back in
/// order, each with its request's correlation id.
fn pipelined(client: &mut Client, requests: &[(i16, i16, RequestBody)]) -> Vec<ResponseBody> {
    let mut wire = Vec::new();
    for (i, (key, version, body)) in requests.iter().enumerate() {
        let header = RequestHeader {
            api_key: *key,
            api_version: *version,
            correlation_id: 1000 + i as i32,
            client_id: Some("pipelined".to_string()),
        };
        wire.extend_from_slice(&encode_request(&header, body));
    }
    client.stream.write_all(&wire).unwrap();
    requests
        .iter()
        .enumerate()
        .map(|(i, (key, version, _))| {
            let frame = client.read_frame().expect("a response for every request");
            let (header, body) = decode_response(frame, *key, *version).expect("decodable");
            assert_eq!(
                header.correlation_id,
                1000 + i as i32,
                "answers in request order"
            );
            body
        })
        .collect()
}

fn moves_of(log: &str, client: &Client) -> usize {
    client.log_lines(log, MOVE_LINE)
}

#[test]
fn coordinator_connections_move_and_answer_every_pipelined_request() {
    let broker = start();
    let mut admin = broker.client();
    create_topic(&mut admin, TOPIC, 1);
    wait_for_coordinator(&mut admin);

    let groups = 16;
    let mut clients = Vec::new();
    for g in 0..groups {
        let group = format!("moving-{g}");
        let mut client = broker.client();
        let ResponseBody::ApiVersions(versions) = client.call(
            18,
            3,
            RequestBody::ApiVersions(support::api_versions_request()),
        ) else {
            panic!("not an ApiVersions response");
        };
        assert_eq!(versions.error_code, 0);
        assert_eq!(
            first_offset_fetch(&mut client, &group),
            -1,
            "nothing committed yet"
        );

        // Twenty commits, the fetch of the last one and a Metadata request, all in one write.
        let mut requests: Vec<(i16, i16, RequestBody)> = (0..20)
            .map(|offset| (8, 8, commit(&group, offset)))
            .collect();
        requests.push((9, 7, fetch_offsets(&group)));
        requests.push((3, 12, metadata()));
        let answers = pipelined(&mut client, &requests);
        for answer in &answers[..20] {
            assert_eq!(commit_error(answer), 0, "group {group}");
        }
        assert_eq!(
            committed(&answers[20]),
            (0, 19),
            "group {group}: the last commit"
        );
        let ResponseBody::Metadata(m) = &answers[21] else {
            panic!("not a Metadata response");
        };
        assert_eq!(m.topics[0].error_code, 0);
        clients.push((group, client));
    }

    // Every connection is still served, from wherever it is now.
    for (group, client) in clients.iter_mut() {
        assert_eq!(commit_error(&client.call(8, 8, commit(group, 100))), 0);
        assert_eq!(
            committed(&client.call(9, 7, fetch_offsets(group))),
            (0, 100)
        );
    }
    let log = broker.log();
    let moves: Vec<usize> = clients.iter().map(|(_, c)| moves_of(&log, c)).collect();
    assert!(
        moves.iter().all(|&m| m <= 1),
        "a connection moves at most once: {moves:?}"
    );
    // Each lands on the accepting shard with odds 1/4: that none of 16 moved is (1/4)^16.
    assert!(
        moves.iter().sum::<usize>() >= 1,
        "some connection moved: {moves:?}"
    );
}

#[test]
fn a_connection_serving_many_groups_moves_at_most_once() {
    let broker = start();
    let mut client = broker.client();
    create_topic(&mut client, TOPIC, 1);
    wait_for_coordinator(&mut client);
    // Groups all over the shards through one connection (an admin tool's, or kafka-python's
    // one connection per broker): it settles with the first and reaches the others through
    // their shards.
    for g in 0..16 {
        let group = format!("many-{g}");
        assert_eq!(first_offset_fetch(&mut client, &group), -1);
        assert_eq!(commit_error(&client.call(8, 8, commit(&group, g))), 0);
        assert_eq!(committed(&client.call(9, 7, fetch_offsets(&group))), (0, g));
    }
    let moves = moves_of(&broker.log(), &client);
    assert!(moves <= 1, "moved {moves} times");
}
