//! End-to-end tests of the broker process over its Kafka listener.

mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::api_versions::ApiVersionsRequest;
use sluice_protocol::request::{encode_request, RequestBody, ResponseBody};
use support::{batch, create_topic, fetch, fetch_request, produce, Broker, Client};

#[test]
fn advertises_what_it_serves_and_stops_cleanly() {
    let broker = Broker::start("versions", &[]);
    let mut client = broker.client();
    let ResponseBody::ApiVersions(response) = client.call(
        18,
        3,
        RequestBody::ApiVersions(ApiVersionsRequest::default()),
    ) else {
        panic!("wrong response kind")
    };
    assert_eq!(response.error_code, 0);
    let range = |key: i16| {
        response
            .api_keys
            .iter()
            .find(|k| k.api_key == key)
            .map(|k| (k.min_version, k.max_version))
    };
    assert_eq!(range(0), Some((3, 11)), "Produce");
    assert!(range(1).is_some_and(|(_, max)| max >= 16), "Fetch");
    assert!(range(3).is_some_and(|(_, max)| max >= 12), "Metadata");
    assert_eq!(range(18), Some((0, 4)), "ApiVersions");
    assert_eq!(range(11), Some((2, 9)), "JoinGroup");
    assert_eq!(
        range(28),
        None,
        "TxnOffsetCommit is not served yet, so not advertised"
    );
    drop(client);
    let status = broker.stop();
    assert!(status.success(), "graceful shutdown exits 0, got {status}");
}

#[test]
fn with_no_config_it_listens_on_9092_and_says_ready_once() {
    let dir = support::temp_dir("default");
    let broker = Broker::start_default(&dir);
    let mut client = broker.client();
    create_topic(&mut client, "defaults", 1);
    assert!(
        dir.join("data").join("defaults-0").is_dir(),
        "data lives in ./data"
    );
    drop(client);
    let status = broker.stop();
    assert!(status.success());
    let log = std::fs::read_to_string(dir.join("broker.log")).unwrap();
    let ready: Vec<&str> = log.lines().filter(|l| l.contains("ready")).collect();
    assert_eq!(ready.len(), 1, "one ready line: {log}");
    assert!(ready[0].contains("127.0.0.1:9092"), "{}", ready[0]);
    // The single-node default elects its one voter, registers and unfences its broker, and
    // opens its listener: all of it within a second (the bound, from the ready line).
    let started_ms: u64 = ready[0]
        .split("started in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no start time in {}", ready[0]));
    println!("no-config start: ready after {started_ms} ms");
    assert!(started_ms < 1000, "started in {started_ms} ms");
}

#[test]
fn unserved_apis_and_versions_get_unsupported_version() {
    let broker = Broker::start("unsupported", &[]);
    let mut client = broker.client();
    // ApiVersions at a version from the future: a v0 answer with the ranges.
    let header = RequestHeader {
        api_key: 18,
        api_version: 99,
        correlation_id: 7,
        client_id: Some("future".into()),
    };
    let mut frame = encode_request(
        &RequestHeader {
            api_version: 0,
            ..header.clone()
        },
        &RequestBody::ApiVersions(ApiVersionsRequest::default()),
    );
    frame[6..8].copy_from_slice(&99i16.to_be_bytes());
    client.stream.write_all(&frame).unwrap();
    let response = client.read_frame().expect("an answer, not silence");
    assert_eq!(&response[0..4], &7i32.to_be_bytes(), "correlation id");
    assert_eq!(&response[4..6], &35i16.to_be_bytes(), "UNSUPPORTED_VERSION");
    // TxnOffsetCommit (not served): header and UNSUPPORTED_VERSION.
    let mut join = Vec::new();
    let body: &[u8] = &[0, 0, 0, 0];
    let mut inner = Vec::new();
    inner.extend_from_slice(&28i16.to_be_bytes());
    inner.extend_from_slice(&0i16.to_be_bytes());
    inner.extend_from_slice(&8i32.to_be_bytes());
    inner.extend_from_slice(&(-1i16).to_be_bytes());
    inner.extend_from_slice(body);
    join.extend_from_slice(&(inner.len() as i32).to_be_bytes());
    join.extend_from_slice(&inner);
    client.stream.write_all(&join).unwrap();
    let response = client.read_frame().expect("an answer, not silence");
    assert_eq!(&response[0..4], &8i32.to_be_bytes());
    assert_eq!(&response[4..6], &35i16.to_be_bytes());
}

#[test]
fn four_shards_serve_every_partition_through_one_connection() {
    let broker = Broker::start("shards", &["sluice.shards=4"]);
    let mut client = broker.client();
    create_topic(&mut client, "spread", 16);
    let mut sent = Vec::new();
    for partition in 0..16 {
        for round in 0..3 {
            let b = batch(&format!("p{partition}r{round}"), 5);
            let (error, base_offset) = produce(&mut client, "spread", partition, b.clone());
            assert_eq!(error, 0, "partition {partition}");
            assert_eq!(base_offset, round * 5, "offsets are assigned per partition");
            sent.push((partition, base_offset, b));
        }
    }
    for (partition, base_offset, b) in sent {
        let (error, high_watermark, records) = fetch(&mut client, "spread", partition, base_offset);
        assert_eq!(error, 0);
        assert_eq!(high_watermark, 15);
        assert_eq!(
            &records[..8],
            &base_offset.to_be_bytes(),
            "stored with the assigned base offset"
        );
        assert_eq!(
            &records[8..b.len()],
            &b[8..],
            "stored as sent, beyond the base offset"
        );
    }
    // Every shard got partitions: their directories are spread by the shard table, so just
    // check that all 16 exist on disk.
    let dirs = std::fs::read_dir(broker.dir.join("data"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("spread-")
        })
        .count();
    assert_eq!(dirs, 16);
}

#[test]
fn long_poll_returns_promptly_after_an_append() {
    let broker = Broker::start("longpoll", &[]);
    let mut client = broker.client();
    create_topic(&mut client, "waiting", 1);
    let port = broker.port;
    let waiter = std::thread::spawn(move || {
        let mut client = Client::connect(port);
        let started = Instant::now();
        let ResponseBody::Fetch(response) =
            client.call(1, 12, fetch_request("waiting", 0, 0, 5000, 1))
        else {
            panic!("wrong response kind")
        };
        (Instant::now(), started.elapsed(), response)
    });
    std::thread::sleep(Duration::from_millis(500));
    let (error, _) = produce(&mut client, "waiting", 0, batch("wake", 1));
    let produced_at = Instant::now();
    assert_eq!(error, 0);
    let (answered_at, waited, response) = waiter.join().unwrap();
    let records = response.responses[0].partitions[0]
        .records
        .clone()
        .unwrap_or_default();
    assert!(!records.is_empty(), "the fetch returns the appended batch");
    assert!(
        waited >= Duration::from_millis(400),
        "the fetch waited for data ({waited:?})"
    );
    let lag = answered_at.saturating_duration_since(produced_at);
    println!("fetch answered {lag:?} after the produce was acknowledged");
    assert!(
        lag < Duration::from_millis(50),
        "long poll woke {lag:?} after the append"
    );
}

#[test]
fn kill_nine_loses_no_acknowledged_batch() {
    let broker = Broker::start("crash", &[]);
    let (dir, port) = (broker.dir.clone(), broker.port);
    let mut client = broker.client();
    create_topic(&mut client, "durable", 2);
    let mut acknowledged = Vec::new();
    for i in 0..200 {
        let partition = i % 2;
        let b = batch(&format!("m{i}"), 3);
        let (error, offset) = produce(&mut client, "durable", partition, b.clone());
        assert_eq!(error, 0);
        acknowledged.push((partition, offset, b));
    }
    drop(client);
    broker.kill();
    let broker = Broker::start_in(&dir, port, &[]);
    let mut client = broker.client();
    for (partition, offset, b) in acknowledged {
        let (error, _, records) = fetch(&mut client, "durable", partition, offset);
        assert_eq!(error, 0, "fetch {partition}@{offset} after restart");
        assert_eq!(&records[..8], &offset.to_be_bytes());
        assert_eq!(&records[8..b.len()], &b[8..]);
    }
    let (error, offset) = produce(&mut client, "durable", 0, batch("after", 1));
    assert_eq!(
        (error, offset),
        (0, 300),
        "appends continue after the last acknowledged offset"
    );
}

#[test]
fn list_offsets_finds_the_record_at_or_after_a_time() {
    use sluice_protocol::messages::list_offsets::{
        ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
    };
    let broker = Broker::start("timestamps", &[]);
    let mut client = broker.client();
    create_topic(&mut client, "times", 1);
    let base = 1_700_000_000_000i64;
    let mut builder = sluice_protocol::record_batch::RecordBatchBuilder::new(base);
    for i in 0..100 {
        builder = builder.record_at(1000 * i, None, Some(b"v"));
    }
    assert_eq!(produce(&mut client, "times", 0, builder.build()), (0, 0));
    let lookup = |client: &mut Client, timestamp: i64| {
        let request = ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: "times".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp,
                    ..ListOffsetsPartition::default()
                }],
            }],
            ..ListOffsetsRequest::default()
        };
        let ResponseBody::ListOffsets(response) =
            client.call(2, 7, RequestBody::ListOffsets(request))
        else {
            panic!("wrong response kind")
        };
        let p = &response.topics[0].partitions[0];
        assert_eq!(p.error_code, 0);
        (p.offset, p.timestamp)
    };
    assert_eq!(lookup(&mut client, base + 50_000), (50, base + 50_000));
    assert_eq!(lookup(&mut client, base + 49_500), (50, base + 50_000));
    assert_eq!(lookup(&mut client, base), (0, base));
    assert_eq!(
        lookup(&mut client, base + 200_000),
        (-1, -1),
        "nothing that late"
    );
    assert_eq!(
        lookup(&mut client, -3),
        (99, base + 99_000),
        "max timestamp"
    );
    assert_eq!(lookup(&mut client, -2).0, 0, "earliest");
    assert_eq!(lookup(&mut client, -1).0, 100, "latest");
}

#[test]
fn a_second_broker_on_a_taken_port_refuses_to_start() {
    let first = Broker::start("port-taken-first", &[]);
    let dir = support::temp_dir("port-taken-second");
    let log = std::fs::File::create(dir.join("broker.log")).unwrap();
    let mut second = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("--override")
        .arg(format!("listeners=PLAINTEXT://127.0.0.1:{}", first.port))
        .arg("--override")
        .arg(format!("log.dirs={}", dir.join("data").display()))
        .env("RUST_LOG", "info,glommio=off")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("run sluice");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            panic!("a second broker started on the port of the first");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "the second broker must not start");
    let stderr = std::fs::read_to_string(dir.join("broker.log")).unwrap();
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{}", first.port)),
        "names the address: {stderr}"
    );
    assert!(!stderr.contains("sluice ready"), "{stderr}");
    // The first broker serves on.
    create_topic(&mut first.client(), "still-served", 1);
}
