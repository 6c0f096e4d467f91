//! `__consumer_offsets` compacts, so a coordinator's load after a restart stays bounded however
//! many commits the broker has taken (issue 18): 1,000,000 OffsetCommits of 100 groups, the
//! cleaner given time to compact the closed segments (small `offsets.topic.segment.bytes` and a
//! short `log.cleaner.backoff.ms`, so the test does not wait for defaults), a restart, and then
//! every group's last offset answered within a second of the broker being ready, from a log that
//! replays a fraction of the commits.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::offset_fetch::{OffsetFetchRequest, OffsetFetchRequestTopic};
use sluice_protocol::request::{decode_response, encode_request, RequestBody, ResponseBody};
use support::{create_topic, free_port, temp_dir, wait_for_coordinator, Broker, Client};

const TOPIC: &str = "loaded";
const GROUPS: usize = 100;
const COMMITS_PER_GROUP: usize = 10_000;
const THREADS: usize = 4;
/// Commits written at once per connection before their answers are read.
const PIPELINE: usize = 250;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const SEGMENT_BYTES: u64 = 1 << 20;
const OFFSETS_PARTITIONS: u64 = 50;

fn overrides() -> [&'static str; 3] {
    [
        "sluice.shards=2",
        "offsets.topic.segment.bytes=1048576",
        "log.cleaner.backoff.ms=100",
    ]
}

fn group(g: usize) -> String {
    format!("load-{g}")
}

fn commit(group: &str, offset: i64) -> RequestBody {
    support::offset_commit(group, TOPIC, offset)
}

/// The group's committed offset of partition 0, or the error that held it back.
fn committed(client: &mut Client, group: &str) -> Result<i64, i16> {
    let request = RequestBody::OffsetFetch(OffsetFetchRequest {
        group_id: group.to_string(),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: TOPIC.to_string(),
            partition_indexes: vec![0],
        }]),
        ..Default::default()
    });
    let ResponseBody::OffsetFetch(r) = client.call(9, 7, request) else {
        panic!("not an OffsetFetch response");
    };
    if r.error_code != 0 {
        return Err(r.error_code);
    }
    let p = &r.topics[0].partitions[0];
    if p.error_code != 0 {
        return Err(p.error_code);
    }
    Ok(p.committed_offset)
}

/// Waits until `group`'s coordinator answers (its partition loaded); its committed offset.
fn wait_loaded(client: &mut Client, group: &str, limit: Duration) -> i64 {
    let started = Instant::now();
    loop {
        match committed(client, group) {
            Ok(offset) => return offset,
            Err(COORDINATOR_LOAD_IN_PROGRESS) | Err(COORDINATOR_NOT_AVAILABLE)
                if started.elapsed() < limit =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("group {group}: error {e} after {:?}", started.elapsed()),
        }
    }
}

/// Commits offsets 0..COMMITS_PER_GROUP for each of `groups`, PIPELINE requests per write,
/// round-robin over the groups so that every `__consumer_offsets` partition grows together.
fn commit_all(port: u16, groups: Vec<String>) {
    let mut client = Client::connect(port);
    let mut next = 0i32;
    let mut pending = Vec::with_capacity(PIPELINE);
    let total = groups.len() * COMMITS_PER_GROUP;
    let mut sent = 0usize;
    while sent < total {
        let mut wire = Vec::new();
        pending.clear();
        while pending.len() < PIPELINE && sent < total {
            let g = &groups[sent % groups.len()];
            let offset = (sent / groups.len()) as i64;
            let header = RequestHeader {
                api_key: 8,
                api_version: 8,
                correlation_id: next,
                client_id: Some("offsets-load".to_string()),
            };
            wire.extend_from_slice(&encode_request(&header, &commit(g, offset)));
            pending.push(next);
            next = next.wrapping_add(1);
            sent += 1;
        }
        client.stream.write_all(&wire).unwrap();
        for &id in &pending {
            let frame = client.read_frame().expect("an OffsetCommit response");
            let (header, body) = decode_response(frame, 8, 8).expect("decodable");
            assert_eq!(header.correlation_id, id, "answers in order");
            let ResponseBody::OffsetCommit(r) = body else {
                panic!("not an OffsetCommit response");
            };
            assert_eq!(r.topics[0].partitions[0].error_code, 0, "commit {id}");
        }
    }
}

fn offsets_topic_bytes(data: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(data).unwrap() {
        let entry = entry.unwrap();
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with("__consumer_offsets-")
        {
            continue;
        }
        for file in std::fs::read_dir(entry.path()).unwrap() {
            let file = file.unwrap();
            if file.file_name().to_string_lossy().ends_with(".log") {
                total += file.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    total
}

/// The records the restarted broker replayed ("loaded group state" lines) in `log` after
/// `from` bytes.
fn replayed_records(log: &str, from: usize) -> u64 {
    log[from..]
        .lines()
        .filter(|l| l.contains("loaded group state"))
        .filter_map(|l| {
            let at = l.find("records=")? + "records=".len();
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[test]
fn offsets_topic_after_a_million_commits_loads_within_a_second() {
    let dir = temp_dir("offsets-load");
    let port = free_port();
    let broker = Broker::start_in(&dir, port, &overrides());
    let mut admin = broker.client();
    create_topic(&mut admin, TOPIC, 1);
    wait_for_coordinator(&mut admin, "warm-up");
    for g in 0..GROUPS {
        assert_eq!(
            wait_loaded(&mut admin, &group(g), Duration::from_secs(30)),
            -1
        );
    }

    let started = Instant::now();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let groups: Vec<String> = (0..GROUPS)
                .filter(|g| g % THREADS == t)
                .map(group)
                .collect();
            std::thread::spawn(move || commit_all(port, groups))
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let committed_in = started.elapsed();
    let written = offsets_topic_bytes(&dir.join("data"));
    eprintln!(
        "{} commits in {committed_in:?}; __consumer_offsets holds {written} bytes",
        GROUPS * COMMITS_PER_GROUP
    );

    // Compacted: every partition's closed segments shrink to a few records per group, leaving
    // at most its active segment's worth.
    let bound = OFFSETS_PARTITIONS * (SEGMENT_BYTES + SEGMENT_BYTES / 4);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut size = written;
    while size > bound && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        size = offsets_topic_bytes(&dir.join("data"));
    }
    assert!(
        size <= bound,
        "__consumer_offsets compacted from {written} bytes to at most {bound}: {size}"
    );
    let rss_kib = broker.rss_kib();
    eprintln!("broker RSS after the cleans: {rss_kib} KiB");
    // Each clean's offset map is sized to its dirty section and freed after it: 150 MiB here,
    // where a map of the shard's whole dedupe buffer kept for life gave 267 MiB.
    assert!(
        rss_kib < 200 * 1024,
        "the cleaner's memory is returned: RSS {rss_kib} KiB"
    );
    drop(admin);
    assert!(broker.stop().success());

    let log_before = std::fs::read_to_string(dir.join("broker.log")).unwrap_or_default();
    let restarted = Broker::start_in(&dir, port, &overrides());
    let ready = Instant::now();
    let mut client = restarted.client();
    for g in 0..GROUPS {
        assert_eq!(
            wait_loaded(&mut client, &group(g), Duration::from_secs(10)),
            (COMMITS_PER_GROUP - 1) as i64,
            "group {g}: its last commit survives compaction and the restart"
        );
    }
    let loaded_in = ready.elapsed();
    let replayed = replayed_records(&restarted.log(), log_before.len());
    eprintln!("every group answered {loaded_in:?} after ready; {replayed} records replayed");
    assert!(
        loaded_in < Duration::from_secs(1),
        "the coordinators loaded within 1 s of ready: {loaded_in:?}"
    );
    assert!(
        replayed < (GROUPS * COMMITS_PER_GROUP / 2) as u64,
        "compaction bounds the replay: {replayed} records"
    );
    assert!(restarted.stop().success());
}
