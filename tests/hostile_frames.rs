//! Hostile input: at least 100,000 garbage, truncated and bit-flipped frames of every served
//! API, over many connections at once. The broker must answer or close each connection, never
//! crash, and then serve a normal client. The run is seeded (SLUICE_SEED overrides the seed) so a
//! failure can be replayed.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sluice_protocol::header::RequestHeader;
use sluice_protocol::messages::{
    create_topics::CreatableTopic, create_topics::CreateTopicsRequest,
    delete_topics::DeleteTopicsRequest, describe_cluster::DescribeClusterRequest,
    list_offsets::ListOffsetsPartition, list_offsets::ListOffsetsRequest,
    list_offsets::ListOffsetsTopic, metadata::MetadataRequest, metadata::MetadataRequestTopic,
};
use sluice_protocol::request::{encode_request, RequestBody};
use support::{assert_stored_as_sent, batch, create_topic, fetch, fetch_request, produce, Broker};

const FRAMES_MIN: usize = 100_000;
const THREADS: usize = 8;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Valid request frames (with their size prefix) for every served API at several versions.
fn valid_frames() -> Vec<Vec<u8>> {
    let mut bodies: Vec<(i16, Vec<i16>, RequestBody)> = vec![
        (
            18,
            vec![0, 1, 2, 3, 4, 5],
            RequestBody::ApiVersions(support::api_versions_request()),
        ),
        (
            3,
            vec![0, 1, 4, 8, 9, 10, 12],
            RequestBody::Metadata(MetadataRequest {
                topics: Some(vec![MetadataRequestTopic {
                    name: Some("hostile".into()),
                    ..MetadataRequestTopic::default()
                }]),
                ..MetadataRequest::default()
            }),
        ),
        (1, vec![4, 7, 11, 12], fetch_request("hostile", 0, 0, 10, 0)),
        (
            2,
            vec![1, 4, 6, 9, 11],
            RequestBody::ListOffsets(ListOffsetsRequest {
                replica_id: -1,
                topics: vec![ListOffsetsTopic {
                    name: "hostile".into(),
                    partitions: vec![ListOffsetsPartition {
                        partition_index: 0,
                        timestamp: -1,
                        ..ListOffsetsPartition::default()
                    }],
                }],
                ..ListOffsetsRequest::default()
            }),
        ),
        (
            19,
            vec![2, 5, 7],
            RequestBody::CreateTopics(CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: "hostile-made".into(),
                    num_partitions: 1,
                    replication_factor: 1,
                    ..CreatableTopic::default()
                }],
                timeout_ms: 1000,
                validate_only: true,
            }),
        ),
        (
            20,
            vec![1, 4, 6],
            RequestBody::DeleteTopics(DeleteTopicsRequest {
                topic_names: vec!["no-such-topic".into()],
                topics: Vec::new(),
                timeout_ms: 1000,
            }),
        ),
        (
            60,
            vec![0, 1],
            RequestBody::DescribeCluster(DescribeClusterRequest {
                endpoint_type: 1,
                ..Default::default()
            }),
        ),
    ];
    bodies.push((0, vec![3, 9, 11], produce_body()));
    bodies.extend(config_and_producer_bodies());
    bodies.extend(describe_bodies());
    bodies.extend(quorum_bodies());
    let mut frames = Vec::new();
    for (api_key, versions, body) in &bodies {
        for version in versions {
            let header = RequestHeader {
                api_key: *api_key,
                api_version: *version,
                correlation_id: 1,
                client_id: Some("hostile".into()),
            };
            frames.push(encode_request(&header, body).to_vec());
        }
    }
    frames
}

/// The APIs of the segment-engine issue: InitProducerId, configs, DeleteRecords.
fn config_and_producer_bodies() -> Vec<(i16, Vec<i16>, RequestBody)> {
    use sluice_protocol::messages::delete_records::{
        DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic,
    };
    use sluice_protocol::messages::describe_configs::{
        DescribeConfigsRequest, DescribeConfigsResource,
    };
    use sluice_protocol::messages::incremental_alter_configs::{
        AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
    };
    use sluice_protocol::messages::init_producer_id::InitProducerIdRequest;
    const TOPIC_RESOURCE: i8 = 2;
    vec![
        (
            22,
            vec![0, 2, 3, 5],
            RequestBody::InitProducerId(InitProducerIdRequest {
                transactional_id: None,
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
            }),
        ),
        (
            32,
            vec![1, 3, 4],
            RequestBody::DescribeConfigs(DescribeConfigsRequest {
                resources: vec![DescribeConfigsResource {
                    resource_type: TOPIC_RESOURCE,
                    resource_name: "hostile".into(),
                    configuration_keys: None,
                }],
                include_synonyms: true,
                include_documentation: true,
            }),
        ),
        (
            44,
            vec![0, 1],
            RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
                resources: vec![AlterConfigsResource {
                    resource_type: TOPIC_RESOURCE,
                    resource_name: "hostile".into(),
                    configs: vec![AlterableConfig {
                        name: "retention.ms".into(),
                        config_operation: 0,
                        value: Some("60000".into()),
                    }],
                }],
                validate_only: true,
            }),
        ),
        (
            21,
            vec![0, 2],
            RequestBody::DeleteRecords(DeleteRecordsRequest {
                topics: vec![DeleteRecordsTopic {
                    name: "hostile".into(),
                    partitions: vec![DeleteRecordsPartition {
                        partition_index: 1,
                        offset: 0,
                    }],
                }],
                timeout_ms: 1000,
            }),
        ),
    ]
}

/// DescribeLogDirs, DescribeProducers and DescribeTopicPartitions (with a cursor, so that
/// mutants reach the pagination arithmetic).
fn describe_bodies() -> Vec<(i16, Vec<i16>, RequestBody)> {
    use sluice_protocol::messages::describe_log_dirs::{
        DescribableLogDirTopic, DescribeLogDirsRequest,
    };
    use sluice_protocol::messages::describe_producers::{
        DescribeProducersRequest, DescribeProducersTopicRequest,
    };
    use sluice_protocol::messages::describe_topic_partitions::{
        Cursor, DescribeTopicPartitionsRequest, DescribeTopicPartitionsTopicRequest,
    };
    vec![
        (
            35,
            vec![1, 3],
            RequestBody::DescribeLogDirs(DescribeLogDirsRequest { topics: None }),
        ),
        (
            35,
            vec![2, 4, 5],
            RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
                topics: Some(vec![DescribableLogDirTopic {
                    topic: "hostile".into(),
                    partitions: vec![0, 1],
                }]),
            }),
        ),
        (
            61,
            vec![0],
            RequestBody::DescribeProducers(DescribeProducersRequest {
                topics: vec![DescribeProducersTopicRequest {
                    name: "hostile".into(),
                    partition_indexes: vec![0, 1, 2],
                }],
            }),
        ),
        (
            75,
            vec![0],
            RequestBody::DescribeTopicPartitions(DescribeTopicPartitionsRequest {
                topics: vec![DescribeTopicPartitionsTopicRequest {
                    name: "hostile".into(),
                }],
                response_partition_limit: 1,
                cursor: Some(Cursor {
                    topic_name: "hostile".into(),
                    partition_index: 1,
                }),
            }),
        ),
    ]
}

fn produce_body() -> RequestBody {
    use sluice_protocol::messages::produce::{
        PartitionProduceData, ProduceRequest, TopicProduceData,
    };
    RequestBody::Produce(ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "hostile".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch("h", 3).into()),
            }],
            ..TopicProduceData::default()
        }],
    })
}

/// One hostile frame.
fn mutant(rng: &mut Rng, valid: &[Vec<u8>]) -> Vec<u8> {
    let mut frame = valid[rng.below(valid.len())].clone();
    match rng.below(6) {
        0 => {
            // Flip bits in the body; keep the size prefix truthful.
            for _ in 0..=rng.below(4) {
                let i = 4 + rng.below(frame.len() - 4);
                frame[i] ^= 1 << rng.below(8);
            }
        }
        1 => {
            // Truncate the body and fix the prefix: a short but well-framed request.
            let len = 4 + rng.below(frame.len() - 4);
            frame.truncate(len);
            let size = (len - 4) as i32;
            frame[..4].copy_from_slice(&size.to_be_bytes());
        }
        2 => {
            // Overwrite a 4-byte window with a hostile length (array counts, string lengths).
            let hostile = [
                0x7fff_ffffu32,
                0xffff_ffff,
                0x8000_0000,
                0x0fff_ffff,
                0xffff_fffe,
            ];
            let value = hostile[rng.below(hostile.len())].to_be_bytes();
            let i = 4 + rng.below(frame.len().saturating_sub(8).max(1));
            let end = (i + 4).min(frame.len());
            frame[i..end].copy_from_slice(&value[..end - i]);
        }
        3 => {
            // Huge varints where compact lengths live.
            let i = 4 + rng.below(frame.len() - 4);
            let end = (i + 5).min(frame.len());
            for b in &mut frame[i..end] {
                *b = 0xff;
            }
        }
        4 => {
            // Pure garbage with a plausible size prefix.
            let len = rng.below(300);
            frame = (len as i32).to_be_bytes().to_vec();
            frame.extend((0..len).map(|_| rng.next() as u8));
        }
        _ => {
            // A lying size prefix: negative, enormous, or longer than what follows.
            let sizes = [
                -1i32,
                i32::MIN,
                i32::MAX,
                200 << 20,
                frame.len() as i32 + 1000,
            ];
            frame[..4].copy_from_slice(&sizes[rng.below(sizes.len())].to_be_bytes());
        }
    }
    frame
}

fn hammer(port: u16, seed: u64, sent: Arc<AtomicUsize>, valid: Arc<Vec<Vec<u8>>>) {
    let mut rng = Rng(seed);
    let mut buf = vec![0u8; 64 * 1024];
    while sent.load(Ordering::Relaxed) < FRAMES_MIN {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
            panic!("broker stopped accepting connections (seed {seed})");
        };
        stream
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let burst = 1 + rng.below(40);
        let mut out = Vec::new();
        for _ in 0..burst {
            out.extend_from_slice(&mutant(&mut rng, &valid));
        }
        // The broker may close mid-burst: a reset here is an allowed answer.
        let _ = stream.write_all(&out);
        sent.fetch_add(burst, Ordering::Relaxed);
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
    }
}

#[test]
fn hostile_frames_never_crash_the_broker() {
    let seed: u64 = std::env::var("SLUICE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234_abcd_0001);
    println!("hostile frames seed {seed} (replay with SLUICE_SEED={seed})");
    let mut broker = Broker::start(
        "hostile",
        &["sluice.shards=2", "sluice.broker.partitions.max=200"],
    );
    let mut client = broker.client();
    create_topic(&mut client, "hostile", 2);
    let valid = Arc::new(valid_frames());
    let sent = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (sent, valid, port) = (sent.clone(), valid.clone(), broker.port);
            let thread_seed = seed
                .wrapping_add(t as u64)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                | 1;
            std::thread::spawn(move || hammer(port, thread_seed, sent, valid))
        })
        .collect();
    for t in threads {
        t.join().expect("hammer thread");
    }
    let total = sent.load(Ordering::Relaxed);
    println!(
        "sent {total} hostile frames; broker RSS {} KiB",
        broker.rss_kib()
    );
    assert!(total >= FRAMES_MIN);
    assert!(broker.is_running(), "the broker survived (seed {seed})");
    // And it still serves a normal client.
    let mut client = broker.client();
    create_topic(&mut client, "after-the-storm", 1);
    let b = batch("calm", 10);
    let (error, offset) = produce(&mut client, "after-the-storm", 0, b.clone());
    assert_eq!((error, offset), (0, 0));
    let (error, high_watermark, records) = fetch(&mut client, "after-the-storm", 0, 0);
    assert_eq!((error, high_watermark), (0, 10));
    assert_stored_as_sent(&records, &b, 0, Some(0));
    let _: Bytes = records;
}

/// DescribeQuorum and UpdateFeatures, forwarded to the controller: a mutant reaches the
/// controller's checks (validate-only, an update it must refuse, or a legal same-level one).
fn quorum_bodies() -> Vec<(i16, Vec<i16>, RequestBody)> {
    use sluice_protocol::messages::describe_quorum::{
        DescribeQuorumRequest, DescribeQuorumTopicRequest, METADATA_TOPIC_NAME,
    };
    use sluice_protocol::messages::update_features::{FeatureUpdateKey, UpdateFeaturesRequest};
    vec![
        (
            55,
            vec![0, 1, 2],
            RequestBody::DescribeQuorum(DescribeQuorumRequest {
                topics: vec![DescribeQuorumTopicRequest {
                    topic_name: METADATA_TOPIC_NAME.into(),
                    partitions: vec![0],
                }],
            }),
        ),
        (
            57,
            vec![0, 1, 2],
            RequestBody::UpdateFeatures(UpdateFeaturesRequest {
                timeout_ms: 1000,
                feature_updates: vec![FeatureUpdateKey {
                    feature: "metadata.version".into(),
                    max_version_level: 7,
                    ..FeatureUpdateKey::default()
                }],
                validate_only: true,
            }),
        ),
    ]
}
