//! Kafka's `connections.max.idle.ms`: a client connection that sends no request for that long
//! is closed by the broker — a silent socket, one left after a request, one moved to its group's
//! coordinator shard — while the time a request takes (a long-poll Fetch) never counts and a
//! connection in use is never cut. Each broker here runs with a 300 ms limit.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use sluice_protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestTopic};
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{create_topic, fetch_request, free_port, temp_dir, wait_for_coordinator, Broker};

const IDLE_MS: u64 = 300;
const IDLE: &str = "connections.max.idle.ms=300";
/// How long after going idle a connection must be closed by.
const CLOSED_WITHIN: Duration = Duration::from_secs(2);
const IDLE_LINE: &str = "closing connection: no request for connections.max.idle.ms";
const MOVE_LINE: &str = "connection moves to its group's coordinator shard";
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;

fn api_versions() -> RequestBody {
    RequestBody::ApiVersions(support::api_versions_request())
}

/// Waits for the broker to close `stream`: how long that took after `since`, or a panic if it
/// is not closed (a read returning end of stream) within `within` of it.
fn wait_closed(stream: &mut TcpStream, since: Instant, within: Duration, what: &str) -> Duration {
    stream
        .set_read_timeout(Some(within + Duration::from_secs(3)))
        .unwrap();
    let mut buffer = [0u8; 64];
    let read = stream.read(&mut buffer);
    let took = since.elapsed();
    match read {
        Ok(0) => {}
        Ok(n) => panic!("{what}: {n} unexpected bytes instead of the end of the stream"),
        Err(error) => panic!("{what}: not closed by the broker after {took:?} ({error})"),
    }
    assert!(
        took <= within,
        "{what}: closed only {took:?} after going idle"
    );
    took
}

#[test]
fn a_silent_connection_is_closed() {
    let broker = Broker::start("idle-silent", &[IDLE]);
    let connected = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", broker.port)).unwrap();
    let took = wait_closed(
        &mut stream,
        connected,
        CLOSED_WITHIN,
        "a connection that sent nothing",
    );
    assert!(
        took >= Duration::from_millis(IDLE_MS - 20),
        "closed after {took:?}, before its idle limit"
    );
}

#[test]
fn a_connection_silent_after_one_request_is_closed() {
    let broker = Broker::start("idle-after-request", &[IDLE]);
    let mut client = broker.client();
    let ResponseBody::ApiVersions(versions) = client.call(18, 3, api_versions()) else {
        panic!("not an ApiVersions response");
    };
    assert_eq!(versions.error_code, 0);
    let answered = Instant::now();
    let took = wait_closed(
        &mut client.stream,
        answered,
        CLOSED_WITHIN,
        "a connection silent after ApiVersions",
    );
    assert!(
        took >= Duration::from_millis(IDLE_MS - 20),
        "closed {took:?} after the answer, before its idle limit"
    );
}

#[test]
fn a_long_poll_longer_than_the_idle_limit_is_answered() {
    let broker = Broker::start("idle-long-poll", &[IDLE]);
    let mut client = broker.client();
    create_topic(&mut client, "quiet", 1);
    // The partition is ready (an immediate fetch answers without error).
    let ResponseBody::Fetch(ready) = client.call(1, 12, fetch_request("quiet", 0, 0, 0, 0)) else {
        panic!("not a Fetch response");
    };
    assert_eq!(ready.responses[0].partitions[0].error_code, 0);
    // Nothing will arrive: the fetch waits its whole 1,000 ms, over three idle limits.
    let started = Instant::now();
    let ResponseBody::Fetch(polled) = client.call(1, 12, fetch_request("quiet", 0, 0, 1000, 1))
    else {
        panic!("not a Fetch response");
    };
    let waited = started.elapsed();
    assert_eq!(polled.error_code, 0);
    let partition = &polled.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    assert!(partition.records.as_ref().map_or(0, |r| r.len()) == 0);
    assert!(
        waited >= Duration::from_millis(900),
        "the fetch waited only {waited:?}"
    );
    // The connection goes on right after.
    let ResponseBody::ApiVersions(versions) = client.call(18, 3, api_versions()) else {
        panic!("not an ApiVersions response");
    };
    assert_eq!(versions.error_code, 0);
}

#[test]
fn a_connection_in_use_is_never_closed() {
    let broker = Broker::start("idle-in-use", &[IDLE]);
    let mut client = broker.client();
    let started = Instant::now();
    let mut requests = 0;
    while started.elapsed() < Duration::from_secs(2) {
        let answer = client.try_call(18, 3, api_versions());
        assert!(
            matches!(answer, Some(ResponseBody::ApiVersions(ref v)) if v.error_code == 0),
            "request {requests} after {:?}: {answer:?}",
            started.elapsed()
        );
        requests += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(requests >= 15, "only {requests} requests");
}

/// The idle limit goes with a connection moved to its group's coordinator shard
/// (`ShardMessage::AdoptConnection`): every connection here is closed once silent, those that
/// moved too, and by the shard that adopted them.
#[test]
fn connections_moved_to_their_coordinator_shard_are_closed_when_idle() {
    let broker = Broker::start_logging(
        &temp_dir("idle-moved"),
        free_port(),
        &[IDLE, "sluice.shards=4", "offsets.topic.num.partitions=8"],
        "info,sluice_server=debug,glommio=off",
    );
    let mut admin = broker.client();
    create_topic(&mut admin, "committed", 1);
    wait_for_coordinator(&mut admin, "warm-up");

    let mut clients = Vec::new();
    for g in 0..16 {
        let group = format!("idle-moved-{g}");
        let mut client = broker.client();
        // The first group request may move the connection; ask until the group has loaded.
        let mut loaded = false;
        for _ in 0..500 {
            let request = RequestBody::OffsetFetch(OffsetFetchRequest {
                group_id: group.clone(),
                topics: Some(vec![OffsetFetchRequestTopic {
                    name: "committed".to_string(),
                    partition_indexes: vec![0],
                }]),
                ..Default::default()
            });
            let ResponseBody::OffsetFetch(r) = client.call(9, 7, request) else {
                panic!("not an OffsetFetch response");
            };
            if r.error_code != COORDINATOR_LOAD_IN_PROGRESS {
                assert_eq!(r.error_code, 0, "group {group}");
                loaded = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(loaded, "group {group}: coordinator still loading");
        clients.push((Instant::now(), client));
    }
    // The later groups' setup (their coordinators may still be loading) takes the earlier
    // connections' idle time: the bound here is loose, the log below says why each closed.
    let last = Instant::now();
    for (answered, client) in &mut clients {
        let within = last.duration_since(*answered) + CLOSED_WITHIN;
        wait_closed(
            &mut client.stream,
            *answered,
            within,
            "a silent group connection",
        );
    }

    let log = broker.log();
    let lines_of = |peer: &str, what: &str| {
        log.lines()
            .filter(|line| line.contains(what) && line.contains(peer))
            .count()
    };
    let mut moved = 0;
    for (_, client) in &clients {
        let peer = format!("peer={} ", client.stream.local_addr().unwrap());
        assert_eq!(lines_of(&peer, IDLE_LINE), 1, "{peer}: one idle close line");
        moved += lines_of(&peer, MOVE_LINE);
    }
    // Each lands on its coordinator's shard with odds 1/4: that none of 16 moved is (1/4)^16.
    assert!(moved >= 1, "no connection moved");
}
