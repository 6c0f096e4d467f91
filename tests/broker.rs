//! End-to-end tests of the broker process over its Kafka listener.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::codec::Uuid;
use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::describe_cluster::DescribeClusterRequest;
use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use sluice_protocol::messages::join_group::{JoinGroupRequest, JoinGroupRequestProtocol};
use sluice_protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use sluice_protocol::messages::metadata::{MetadataRequest, MetadataRequestTopic};
use sluice_protocol::messages::produce::{
    PartitionProduceData, ProduceRequest, ProduceResponse, TopicProduceData,
};
use sluice_protocol::request::{encode_request, RequestBody, ResponseBody};
use support::{
    assert_stored_as_sent, batch, create_topic, fetch, fetch_request, produce, Broker, Client,
};

#[test]
fn advertises_what_it_serves_and_stops_cleanly() {
    let broker = Broker::start("versions", &[]);
    let mut client = broker.client();
    let ResponseBody::ApiVersions(response) = client.call(
        18,
        3,
        RequestBody::ApiVersions(support::api_versions_request()),
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
    // Kafka 4.4.0's ranges (Produce 0-2 carry the old message formats and stay out).
    assert_eq!(range(0), Some((3, 13)), "Produce");
    assert_eq!(range(1), Some((4, 18)), "Fetch");
    assert_eq!(range(2), Some((1, 11)), "ListOffsets");
    assert_eq!(range(3), Some((0, 13)), "Metadata");
    assert_eq!(range(18), Some((0, 5)), "ApiVersions");
    assert_eq!(range(42), Some((0, 3)), "DeleteGroups");
    assert_eq!(range(11), Some((0, 9)), "JoinGroup");
    assert_eq!(range(60), Some((0, 2)), "DescribeCluster");
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
        &RequestBody::ApiVersions(support::api_versions_request()),
    );
    frame[6..8].copy_from_slice(&99i16.to_be_bytes());
    client.stream.write_all(&frame).unwrap();
    let response = client.read_frame().expect("an answer, not silence");
    assert_eq!(&response[0..4], &7i32.to_be_bytes(), "correlation id");
    assert_eq!(&response[4..6], &35i16.to_be_bytes(), "UNSUPPORTED_VERSION");
    // As Kafka: a v0 body listing only ApiVersions' own range.
    assert_eq!(&response[6..10], &1i32.to_be_bytes(), "one api_keys entry");
    assert_eq!(&response[10..14], &[0, 18, 0, 0], "ApiVersions from v0");
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
        assert_stored_as_sent(&records, &b, base_offset, Some(0));
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
        assert_stored_as_sent(&records, &b, offset, None);
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

const UNKNOWN_TOPIC_ID: i16 = 100;

/// A Produce of one batch to partition 0 of the topic with id `id` (v13) or name `name` (older).
fn produce_to(
    client: &mut Client,
    version: i16,
    name: &str,
    id: Uuid,
    records: Bytes,
) -> ProduceResponse {
    let by_id = version >= 13;
    let request = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: if by_id { String::new() } else { name.into() },
            topic_id: if by_id { id } else { Uuid::ZERO },
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records.into()),
            }],
        }],
    };
    let ResponseBody::Produce(response) = client.call(0, version, RequestBody::Produce(request))
    else {
        panic!("wrong response kind")
    };
    response
}

/// A consumer's Fetch v18 of partition 0 of topic `id` from offset 0, answered at once.
fn fetch_v18(client: &mut Client, id: Uuid) -> FetchResponse {
    let request = FetchRequest {
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 50 << 20,
        topics: vec![FetchTopic {
            topic: String::new(),
            topic_id: id,
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
        }],
        ..FetchRequest::default()
    };
    let ResponseBody::Fetch(response) = client.call(1, 18, RequestBody::Fetch(request)) else {
        panic!("wrong response kind")
    };
    response
}

#[test]
fn produce_v13_by_topic_id_is_read_back_by_fetch_v18() {
    let broker = Broker::start("topic-ids", &[]);
    let mut client = broker.client();
    create_topic(&mut client, "by-id", 1);
    let id = support::topic_id(&mut client, "by-id");
    assert!(!id.is_zero());

    let first = batch("v13", 3);
    let response = produce_to(&mut client, 13, "", id, first.clone());
    let topic = &response.responses[0];
    assert_eq!(topic.topic_id, id, "answered by id");
    let p = &topic.partition_responses[0];
    assert_eq!(
        (p.error_code, p.base_offset),
        (0, 0),
        "{:?}",
        p.error_message
    );
    // v12 is v11 on the wire: by name.
    let second = batch("v12", 2);
    let response = produce_to(&mut client, 12, "by-id", Uuid::ZERO, second.clone());
    let p = &response.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 3));
    // An id no topic has: UNKNOWN_TOPIC_ID, and nothing is created.
    let stranger = Uuid::from_u128(0x5eed);
    let response = produce_to(&mut client, 13, "", stranger, batch("lost", 1));
    assert_eq!(response.responses[0].topic_id, stranger);
    assert_eq!(
        response.responses[0].partition_responses[0].error_code,
        UNKNOWN_TOPIC_ID
    );

    // Fetch v18 (a consumer: no follower high watermark) reads both batches back by id.
    let response = fetch_v18(&mut client, id);
    assert_eq!(response.error_code, 0);
    let topic = &response.responses[0];
    assert_eq!(topic.topic_id, id);
    let p = &topic.partitions[0];
    assert_eq!((p.error_code, p.high_watermark), (0, 5));
    let records = p.records.clone().unwrap_or_default();
    assert_eq!(records.len(), first.len() + second.len());
    assert_stored_as_sent(&records, &first, 0, Some(0));
    assert_eq!(&records[first.len()..first.len() + 8], &3i64.to_be_bytes());
    let response = fetch_v18(&mut client, stranger);
    assert_eq!(response.responses[0].topic_id, stranger);
    assert_eq!(
        response.responses[0].partitions[0].error_code,
        UNKNOWN_TOPIC_ID
    );

    // ListOffsets v10: its timeout_ms bounds only remote (tiered) lookups; the latest is 5.
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: "by-id".into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..ListOffsetsPartition::default()
            }],
        }],
        timeout_ms: 1,
    };
    let ResponseBody::ListOffsets(response) = client.call(2, 10, RequestBody::ListOffsets(request))
    else {
        panic!("wrong response kind")
    };
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.offset), (0, 5));

    // Metadata v13: no top-level error; a topic asked by an unknown id is UNKNOWN_TOPIC_ID.
    let request = MetadataRequest {
        topics: Some(vec![
            MetadataRequestTopic {
                topic_id: id,
                name: None,
            },
            MetadataRequestTopic {
                topic_id: stranger,
                name: None,
            },
        ]),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(response) = client.call(3, 13, RequestBody::Metadata(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(response.error_code, 0);
    assert_eq!(response.brokers.len(), 1);
    let found: Vec<(i16, Option<&str>)> = response
        .topics
        .iter()
        .map(|t| (t.error_code, t.name.as_deref()))
        .collect();
    assert_eq!(found, vec![(0, Some("by-id")), (UNKNOWN_TOPIC_ID, None)]);
}

#[test]
fn describe_cluster_v2_marks_brokers_and_refuses_the_controller_endpoint_type() {
    let broker = Broker::start("describe-v2", &[]);
    let mut client = broker.client();
    let describe = |client: &mut Client, request: DescribeClusterRequest| {
        let ResponseBody::DescribeCluster(response) =
            client.call(60, 2, RequestBody::DescribeCluster(request))
        else {
            panic!("wrong response kind")
        };
        response
    };
    for include_fenced_brokers in [false, true] {
        let response = describe(
            &mut client,
            DescribeClusterRequest {
                include_fenced_brokers,
                ..DescribeClusterRequest::default()
            },
        );
        assert_eq!(response.error_code, 0);
        // One broker, live: listed unfenced whether or not fenced ones were asked for.
        let brokers: Vec<(u16, bool)> = response
            .brokers
            .iter()
            .map(|b| (b.port as u16, b.is_fenced))
            .collect();
        assert_eq!(brokers, vec![(broker.port, false)]);
        assert_eq!(response.controller_id, response.brokers[0].broker_id);
        assert!(!response.cluster_id.is_empty());
    }
    let response = describe(
        &mut client,
        DescribeClusterRequest {
            endpoint_type: 2,
            ..DescribeClusterRequest::default()
        },
    );
    assert_eq!(response.error_code, 114, "MISMATCHED_ENDPOINT_TYPE");
    assert!(response.brokers.is_empty());
}

#[test]
fn join_group_v0_waits_for_known_members_as_long_as_their_session_timeout() {
    const GROUP: &str = "old-clients";
    let broker = Broker::start("join-v0", &["group.initial.rebalance.delay.ms=0"]);
    let mut first = broker.client();
    support::wait_for_coordinator(&mut first, GROUP);
    // v0 has no rebalance timeout: the coordinator takes the session timeout for it.
    let join = |member_id: &str| {
        RequestBody::JoinGroup(JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: 10_000,
            member_id: member_id.into(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(b"meta"),
            }],
            ..JoinGroupRequest::default()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let joined = loop {
        let ResponseBody::JoinGroup(r) = first.call(11, 0, join("")) else {
            panic!("wrong response kind")
        };
        // COORDINATOR_LOAD_IN_PROGRESS while `__consumer_offsets` loads.
        if r.error_code != 14 || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(joined.generation_id, 1);
    assert!(
        !joined.member_id.is_empty(),
        "v0 gets its member id at once"
    );
    assert_eq!(joined.leader, joined.member_id);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1);

    // A second member joins: the rebalance waits for the first to rejoin, for up to the
    // first's session timeout (with no rebalance timeout at all it would end at once,
    // without the first member).
    let mut second = broker.client();
    second.send(11, 0, join(""));
    std::thread::sleep(Duration::from_millis(500));
    let ResponseBody::JoinGroup(rejoined) = first.call(11, 0, join(&joined.member_id)) else {
        panic!("wrong response kind")
    };
    assert_eq!(rejoined.error_code, 0, "{rejoined:?}");
    assert_eq!(rejoined.generation_id, 2);
    assert_eq!(rejoined.members.len(), 2, "the leader sees both members");
    let ResponseBody::JoinGroup(other) = second.receive(11, 0) else {
        panic!("wrong response kind")
    };
    assert_eq!((other.error_code, other.generation_id), (0, 2));
    assert_eq!(other.leader, joined.member_id);
    assert_ne!(other.member_id, joined.member_id);
}

/// The bytes confluent-kafka 2.16.1 (librdkafka 2.16.0) sends for `list_topics()`: Metadata v13
/// for all topics with three bytes after the body's fields. Kafka serves it; so must Sluice
/// (it closed the connection, and every librdkafka client failed to list topics).
#[test]
fn librdkafka_2_16_metadata_v13_with_trailing_bytes_is_answered() {
    let broker = Broker::start("librdkafka-metadata", &[]);
    let mut client = broker.client();
    create_topic(&mut client, "listed", 2);
    let captured: &[u8] = &[
        0x00, 0x03, 0x00, 0x0d, 0x00, 0x00, 0x00, 0x03, 0x00, 0x07, b'r', b'd', b'k', b'a', b'f',
        b'k', b'a', 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
    ];
    let mut frame = (captured.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(captured);
    client.stream.write_all(&frame).unwrap();
    let answer = client
        .read_frame()
        .expect("an answer, not a closed connection");
    let (header, body) =
        sluice_protocol::request::decode_response(answer, 3, 13).expect("a Metadata v13 answer");
    assert_eq!(header.correlation_id, 3);
    let ResponseBody::Metadata(metadata) = body else {
        panic!("not a Metadata answer");
    };
    let listed: Vec<_> = metadata
        .topics
        .iter()
        .filter(|t| t.name.as_deref() == Some("listed"))
        .collect();
    assert_eq!(listed.len(), 1, "all topics listed");
    assert_eq!(listed[0].partitions.len(), 2);
    // The connection stays usable.
    client.call(
        18,
        3,
        RequestBody::ApiVersions(support::api_versions_request()),
    );
    assert_eq!(broker.stop().code(), Some(0));
}

/// Frames Kafka's parsers accept (see shards/protocol/README.md, "Accepting what Kafka
/// accepts"), sent on one connection: header v2 with unknown, repeated, out-of-order tags and a
/// null client id; unknown tags in the Metadata topic struct and the body; a 5-byte varint whose
/// last byte carries bits past 32; invalid UTF-8 and an empty topic name. Each is answered and the
/// connection stays open (Sluice used to close it on the bad UTF-8 and the varint).
#[test]
fn frames_kafka_accepts_are_answered_on_one_connection() {
    let broker = Broker::start("lenient-frames", &["auto.create.topics.enable=false"]);
    let mut client = broker.client();
    create_topic(&mut client, "lenient", 2);
    let send = |client: &mut Client, corr: i32, tags: &[u8], count: &[u8], names: &[&[u8]]| {
        let mut f = Vec::new();
        f.extend_from_slice(&3i16.to_be_bytes());
        f.extend_from_slice(&12i16.to_be_bytes());
        f.extend_from_slice(&corr.to_be_bytes());
        f.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
        f.extend_from_slice(tags);
        f.extend_from_slice(count);
        for name in names {
            f.extend_from_slice(&[0; 16]);
            f.push(name.len() as u8 + 1);
            f.extend_from_slice(name);
            f.extend_from_slice(&[3, 9, 1, 0, 1, 0, 9, 1, 5]); // topic struct: unknown tags
        }
        f.extend_from_slice(&[1, 0]); // allow auto creation, include topic authorized operations
        f.extend_from_slice(&[2, 4, 3, 1, 2, 3, 0, 0]); // body: unknown tags
        let mut frame = (f.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&f);
        client.stream.write_all(&frame).unwrap();
        let answer = client
            .read_frame()
            .expect("an answer, not a closed connection");
        let (header, body) = sluice_protocol::request::decode_response(answer, 3, 12)
            .expect("a Metadata v12 answer");
        assert_eq!(header.correlation_id, corr);
        let ResponseBody::Metadata(m) = body else {
            panic!("not a Metadata answer");
        };
        m.topics
            .into_iter()
            .map(|t| (t.name.unwrap_or_default(), t.error_code, t.partitions.len()))
            .collect::<Vec<_>>()
    };
    let header_tags: &[u8] = &[3, 7, 2, 0xaa, 0xbb, 3, 0, 7, 1, 1];
    assert_eq!(
        send(&mut client, 1, header_tags, &[2], &[b"lenient"]),
        [("lenient".to_string(), 0, 2)]
    );
    // One topic, counted in five bytes; the fifth byte's high bits are dropped as Kafka does.
    assert_eq!(
        send(
            &mut client,
            2,
            &[0],
            &[0x82, 0x80, 0x80, 0x80, 0x70],
            &[b"lenient"]
        ),
        [("lenient".to_string(), 0, 2)]
    );
    assert_eq!(
        send(
            &mut client,
            3,
            &[0],
            &[4],
            &[b"bad\xffname", b"", b"lenient"]
        ),
        [
            ("bad\u{fffd}name".to_string(), 17, 0),
            (String::new(), 17, 0),
            ("lenient".to_string(), 0, 2)
        ]
    );
    assert_eq!(broker.stop().code(), Some(0));
}

/// Reads older than the tail cache and larger than one speculative read leave the broker as
/// file regions sent with `sendfile` — for a partition of the connection's shard and for one
/// of the other shard — and arrive as the batches that were appended, whole, in order.
#[test]
fn old_data_is_sent_from_the_segment_files_as_appended() {
    let metrics_port = support::free_port();
    let listener = format!("sluice.metrics.listener=127.0.0.1:{metrics_port}");
    let broker = Broker::start("sendfile", &["sluice.shards=2", &listener]);
    let mut client = broker.client();
    create_topic(&mut client, "from-file", 2);
    // 8 MiB per partition, twice the tail cache: the first half is read from the files.
    let value = vec![b'v'; 1000];
    let mut sent = [Vec::new(), Vec::new()];
    for partition in 0..2 {
        for round in 0..40 {
            let mut builder =
                sluice_protocol::record_batch::RecordBatchBuilder::new(support::now_ms());
            for i in 0..200 {
                let key = format!("p{partition}r{round}i{i}");
                builder = builder.record(Some(key.as_bytes()), Some(&value));
            }
            let b = builder.build();
            let (error, base_offset) = produce(&mut client, "from-file", partition, b.clone());
            assert_eq!(error, 0);
            assert_eq!(base_offset, round * 200);
            sent[partition as usize].push(b);
        }
    }
    for (partition, batches) in sent.iter().enumerate() {
        let mut offset = 0;
        let mut next = batches.iter();
        while offset < 8000 {
            let (error, high_watermark, records) =
                fetch(&mut client, "from-file", partition as i32, offset);
            assert_eq!(error, 0);
            assert_eq!(high_watermark, 8000);
            assert!(!records.is_empty(), "progress at offset {offset}");
            for stored in sluice_protocol::RecordBatches::new(records) {
                let (header, bytes) = stored.unwrap();
                let appended = next.next().expect("no more batches than appended");
                assert_eq!(header.base_offset, offset);
                support::assert_stored_as_sent(&bytes, appended, offset, Some(0));
                offset = header.last_offset() + 1;
            }
        }
        assert!(next.next().is_none(), "every batch read back");
    }
    // The connection's socket is non-blocking since its first region: waiting for its next
    // request must still park the shard (glommio's io_uring receive), not spin on EAGAIN.
    let cpu_before = broker.cpu_time();
    std::thread::sleep(Duration::from_secs(1));
    let idle_cpu = broker.cpu_time() - cpu_before;
    assert!(
        idle_cpu < Duration::from_millis(300),
        "an idle connection after sendfile costs {idle_cpu:?} of CPU in 1 s"
    );
    let (error, _, records) = fetch(&mut client, "from-file", 0, 0);
    assert_eq!(
        (error, records.is_empty()),
        (0, false),
        "the connection still serves"
    );
    let sent_from_files: u64 = support::scrape(metrics_port)
        .lines()
        .filter(|l| l.starts_with("sluice_network_response_sendfile_bytes_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum();
    assert!(
        sent_from_files >= 2 * (3 << 20),
        "at least the reads older than the tail cache went by sendfile: {sent_from_files} bytes"
    );
}
