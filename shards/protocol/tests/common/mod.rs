//! Sample messages for every supported API and version. Fields a version does
//! not carry keep their defaults, so encode→decode must reproduce them exactly.
#![allow(dead_code)]

mod describe;

use bytes::Bytes;
use sluice_protocol::messages::{
    alter_configs as acf, api_versions, create_partitions as cp, create_topics as ct,
    delete_records as dr, delete_topics as dt, describe_cluster as dc, describe_configs as dcf,
    fetch, incremental_alter_configs as iac, init_producer_id as ipi, list_offsets as lo,
    metadata as md, produce,
};
use sluice_protocol::messages::{
    alter_partition_reassignments as apr, describe_quorum as dq, elect_leaders as el,
    list_partition_reassignments as lpr, update_features as uf,
};
use sluice_protocol::messages::{
    delete_groups as dg, describe_groups as dgr, find_coordinator as fc, heartbeat as hb,
    join_group as jg, leave_group as lg, list_groups as lgr, offset_commit as oc,
    offset_delete as od, offset_fetch as of, sync_group as sg,
};
use sluice_protocol::{ApiKey, RecordBatchBuilder, RequestBody, ResponseBody, Uuid, SUPPORTED};

/// Every (api, version) pair Sluice implements.
pub fn all_versions() -> Vec<(ApiKey, i16)> {
    SUPPORTED
        .iter()
        .flat_map(|api| (api.min_version..=api.max_version).map(move |v| (api.key, v)))
        .collect()
}

pub fn records() -> Bytes {
    RecordBatchBuilder::new(1_700_000_000_000)
        .record(Some(b"k"), Some(b"hello"))
        .record(None, Some(b"world"))
        .build()
}

fn topic_id() -> Uuid {
    Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677)
}

pub fn request(key: ApiKey, v: i16) -> RequestBody {
    match key {
        ApiKey::ApiVersions => RequestBody::ApiVersions(api_versions_request(v)),
        ApiKey::Metadata => RequestBody::Metadata(metadata_request(v)),
        ApiKey::Produce => RequestBody::Produce(produce_request(v)),
        ApiKey::Fetch => RequestBody::Fetch(fetch_request(v)),
        ApiKey::ListOffsets => RequestBody::ListOffsets(list_offsets_request(v)),
        ApiKey::CreateTopics => RequestBody::CreateTopics(create_topics_request(v)),
        ApiKey::DeleteTopics => RequestBody::DeleteTopics(delete_topics_request(v)),
        ApiKey::DescribeCluster => RequestBody::DescribeCluster(describe_cluster_request(v)),
        ApiKey::DescribeConfigs => RequestBody::DescribeConfigs(describe_configs_request(v)),
        ApiKey::AlterConfigs => RequestBody::AlterConfigs(alter_configs_request(v)),
        ApiKey::IncrementalAlterConfigs => {
            RequestBody::IncrementalAlterConfigs(incremental_alter_configs_request(v))
        }
        ApiKey::DeleteRecords => RequestBody::DeleteRecords(delete_records_request(v)),
        ApiKey::CreatePartitions => RequestBody::CreatePartitions(create_partitions_request(v)),
        ApiKey::InitProducerId => RequestBody::InitProducerId(init_producer_id_request(v)),
        ApiKey::OffsetCommit => RequestBody::OffsetCommit(offset_commit_request(v)),
        ApiKey::OffsetFetch => RequestBody::OffsetFetch(offset_fetch_request(v)),
        ApiKey::FindCoordinator => RequestBody::FindCoordinator(find_coordinator_request(v)),
        ApiKey::JoinGroup => RequestBody::JoinGroup(join_group_request(v)),
        ApiKey::Heartbeat => RequestBody::Heartbeat(heartbeat_request(v)),
        ApiKey::LeaveGroup => RequestBody::LeaveGroup(leave_group_request(v)),
        ApiKey::SyncGroup => RequestBody::SyncGroup(sync_group_request(v)),
        ApiKey::DescribeGroups => RequestBody::DescribeGroups(describe_groups_request(v)),
        ApiKey::ListGroups => RequestBody::ListGroups(list_groups_request(v)),
        ApiKey::DeleteGroups => RequestBody::DeleteGroups(delete_groups_request(v)),
        ApiKey::OffsetDelete => RequestBody::OffsetDelete(offset_delete_request(v)),
        ApiKey::DescribeLogDirs => {
            RequestBody::DescribeLogDirs(describe::describe_log_dirs_request(v))
        }
        ApiKey::DescribeProducers => {
            RequestBody::DescribeProducers(describe::describe_producers_request(v))
        }
        ApiKey::DescribeTopicPartitions => {
            RequestBody::DescribeTopicPartitions(describe::describe_topic_partitions_request(v))
        }
        ApiKey::DescribeQuorum => RequestBody::DescribeQuorum(describe_quorum_request(v)),
        ApiKey::UpdateFeatures => RequestBody::UpdateFeatures(update_features_request(v)),
        ApiKey::ElectLeaders => RequestBody::ElectLeaders(elect_leaders_request(v)),
        ApiKey::AlterPartitionReassignments => {
            RequestBody::AlterPartitionReassignments(alter_partition_reassignments_request(v))
        }
        ApiKey::ListPartitionReassignments => {
            RequestBody::ListPartitionReassignments(list_partition_reassignments_request())
        }
        other => panic!("no sample for {other:?}"),
    }
}

pub fn response(key: ApiKey, v: i16) -> ResponseBody {
    match key {
        ApiKey::ApiVersions => ResponseBody::ApiVersions(api_versions_response(v)),
        ApiKey::Metadata => ResponseBody::Metadata(metadata_response(v)),
        ApiKey::Produce => ResponseBody::Produce(produce_response(v)),
        ApiKey::Fetch => ResponseBody::Fetch(fetch_response(v)),
        ApiKey::ListOffsets => ResponseBody::ListOffsets(list_offsets_response(v)),
        ApiKey::CreateTopics => ResponseBody::CreateTopics(create_topics_response(v)),
        ApiKey::DeleteTopics => ResponseBody::DeleteTopics(delete_topics_response(v)),
        ApiKey::DescribeCluster => ResponseBody::DescribeCluster(describe_cluster_response(v)),
        ApiKey::DescribeConfigs => ResponseBody::DescribeConfigs(describe_configs_response(v)),
        ApiKey::AlterConfigs => ResponseBody::AlterConfigs(alter_configs_response(v)),
        ApiKey::IncrementalAlterConfigs => {
            ResponseBody::IncrementalAlterConfigs(incremental_alter_configs_response(v))
        }
        ApiKey::DeleteRecords => ResponseBody::DeleteRecords(delete_records_response(v)),
        ApiKey::CreatePartitions => ResponseBody::CreatePartitions(create_partitions_response(v)),
        ApiKey::InitProducerId => ResponseBody::InitProducerId(init_producer_id_response(v)),
        ApiKey::OffsetCommit => ResponseBody::OffsetCommit(offset_commit_response(v)),
        ApiKey::OffsetFetch => ResponseBody::OffsetFetch(offset_fetch_response(v)),
        ApiKey::FindCoordinator => ResponseBody::FindCoordinator(find_coordinator_response(v)),
        ApiKey::JoinGroup => ResponseBody::JoinGroup(join_group_response(v)),
        ApiKey::Heartbeat => ResponseBody::Heartbeat(heartbeat_response(v)),
        ApiKey::LeaveGroup => ResponseBody::LeaveGroup(leave_group_response(v)),
        ApiKey::SyncGroup => ResponseBody::SyncGroup(sync_group_response(v)),
        ApiKey::DescribeGroups => ResponseBody::DescribeGroups(describe_groups_response(v)),
        ApiKey::ListGroups => ResponseBody::ListGroups(list_groups_response(v)),
        ApiKey::DeleteGroups => ResponseBody::DeleteGroups(delete_groups_response(v)),
        ApiKey::OffsetDelete => ResponseBody::OffsetDelete(offset_delete_response(v)),
        ApiKey::DescribeLogDirs => {
            ResponseBody::DescribeLogDirs(describe::describe_log_dirs_response(v))
        }
        ApiKey::DescribeProducers => {
            ResponseBody::DescribeProducers(describe::describe_producers_response(v))
        }
        ApiKey::DescribeTopicPartitions => {
            ResponseBody::DescribeTopicPartitions(describe::describe_topic_partitions_response(v))
        }
        ApiKey::DescribeQuorum => ResponseBody::DescribeQuorum(describe_quorum_response(v)),
        ApiKey::UpdateFeatures => ResponseBody::UpdateFeatures(update_features_response(v)),
        ApiKey::ElectLeaders => ResponseBody::ElectLeaders(elect_leaders_response(v)),
        ApiKey::AlterPartitionReassignments => {
            ResponseBody::AlterPartitionReassignments(alter_partition_reassignments_response(v))
        }
        ApiKey::ListPartitionReassignments => {
            ResponseBody::ListPartitionReassignments(list_partition_reassignments_response())
        }
        other => panic!("no sample for {other:?}"),
    }
}

fn api_versions_request(v: i16) -> api_versions::ApiVersionsRequest {
    let mut r = api_versions::ApiVersionsRequest::default();
    if v >= 3 {
        r.client_software_name = "apache-kafka-java".into();
        r.client_software_version = "4.4.0".into();
    }
    if v >= 5 {
        r.cluster_id = Some("MkU3OEVBNTcwNTJENDM2Qg".into());
        r.node_id = 3;
    }
    r
}

fn api_versions_response(v: i16) -> api_versions::ApiVersionsResponse {
    let mut r = api_versions::ApiVersionsResponse::supported();
    if v >= 1 {
        r.throttle_time_ms = 17;
    }
    if v >= 3 {
        r.supported_features = vec![api_versions::SupportedFeatureKey {
            name: "metadata.version".into(),
            min_version: 7,
            max_version: 26,
        }];
        r.finalized_features_epoch = 42;
        r.finalized_features = vec![api_versions::FinalizedFeatureKey {
            name: "metadata.version".into(),
            max_version_level: 26,
            min_version_level: 26,
        }];
        r.zk_migration_ready = true;
    }
    r
}

fn metadata_request(v: i16) -> md::MetadataRequest {
    let topic = |name: &str| md::MetadataRequestTopic {
        topic_id: if v >= 10 { topic_id() } else { Uuid::ZERO },
        name: Some(name.into()),
    };
    let mut topics = vec![topic("orders"), topic("payments")];
    if v >= 10 {
        topics.push(md::MetadataRequestTopic {
            topic_id: topic_id(),
            name: None,
        });
    }
    md::MetadataRequest {
        topics: Some(topics),
        allow_auto_topic_creation: v < 4,
        include_cluster_authorized_operations: (8..=10).contains(&v),
        include_topic_authorized_operations: v >= 8,
    }
}

fn metadata_response(v: i16) -> md::MetadataResponse {
    let partition = |i: i32| md::MetadataResponsePartition {
        error_code: if i == 1 { 5 } else { 0 },
        partition_index: i,
        leader_id: 1,
        leader_epoch: if v >= 7 { 9 } else { -1 },
        replica_nodes: vec![1, 2, 3],
        isr_nodes: vec![1, 2],
        offline_replicas: if v >= 5 { vec![3] } else { vec![] },
    };
    md::MetadataResponse {
        throttle_time_ms: if v >= 3 { 5 } else { 0 },
        brokers: vec![md::MetadataResponseBroker {
            node_id: 1,
            host: "broker-1.local".into(),
            port: 9092,
            rack: if v >= 1 { Some("rack-a".into()) } else { None },
        }],
        cluster_id: if v >= 2 {
            Some("sluice-cluster".into())
        } else {
            None
        },
        controller_id: if v >= 1 { 1 } else { -1 },
        topics: vec![md::MetadataResponseTopic {
            error_code: 0,
            name: Some("orders".into()),
            topic_id: if v >= 10 { topic_id() } else { Uuid::ZERO },
            is_internal: v >= 1,
            partitions: vec![partition(0), partition(1)],
            topic_authorized_operations: if v >= 8 { 0x0ff8 } else { i32::MIN },
        }],
        cluster_authorized_operations: if (8..=10).contains(&v) { 7 } else { i32::MIN },
        // REBOOTSTRAP_REQUIRED (KIP-1102), on the wire from v13.
        error_code: if v >= 13 { 129 } else { 0 },
    }
}

fn produce_request(v: i16) -> produce::ProduceRequest {
    produce::ProduceRequest {
        transactional_id: if v % 2 == 0 {
            Some("txn-1".into())
        } else {
            None
        },
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![produce::TopicProduceData {
            name: if v >= 13 {
                String::new()
            } else {
                "orders".into()
            },
            topic_id: if v >= 13 { topic_id() } else { Uuid::ZERO },
            partition_data: vec![
                produce::PartitionProduceData {
                    index: 0,
                    records: Some(records().into()),
                },
                produce::PartitionProduceData {
                    index: 1,
                    records: None,
                },
            ],
        }],
    }
}

fn produce_response(v: i16) -> produce::ProduceResponse {
    let mut p = produce::PartitionProduceResponse {
        index: 0,
        error_code: 6,
        base_offset: 1234,
        log_append_time_ms: 1_700_000_000_123,
        ..Default::default()
    };
    if v >= 5 {
        p.log_start_offset = 100;
    }
    if v >= 8 {
        p.record_errors = vec![produce::BatchIndexAndErrorMessage {
            batch_index: 3,
            batch_index_error_message: Some("bad record".into()),
        }];
        p.error_message = Some("batch rejected".into());
    }
    let mut r = produce::ProduceResponse {
        responses: vec![produce::TopicProduceResponse {
            name: if v >= 13 {
                String::new()
            } else {
                "orders".into()
            },
            topic_id: if v >= 13 { topic_id() } else { Uuid::ZERO },
            partition_responses: vec![p],
        }],
        throttle_time_ms: 3,
        node_endpoints: vec![],
    };
    if v >= 10 {
        r.responses[0].partition_responses[0].current_leader = produce::LeaderIdAndEpoch {
            leader_id: 2,
            leader_epoch: 8,
        };
        r.node_endpoints = vec![produce::NodeEndpoint {
            node_id: 2,
            host: "broker-2".into(),
            port: 9093,
            rack: None,
        }];
    }
    r
}

fn fetch_request(v: i16) -> fetch::FetchRequest {
    let by_id = v >= 13;
    let mut part = fetch::FetchPartition {
        partition: 2,
        fetch_offset: 77,
        partition_max_bytes: 1 << 20,
        ..Default::default()
    };
    if v >= 9 {
        part.current_leader_epoch = 4;
    }
    if v >= 12 {
        part.last_fetched_epoch = 3;
    }
    if v >= 5 {
        part.log_start_offset = 10;
    }
    if v >= 17 {
        part.replica_directory_id = Uuid::from_u128(99);
    }
    if v >= 18 {
        part.high_watermark = 12_345;
    }
    let mut r = fetch::FetchRequest {
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 50 << 20,
        isolation_level: 1,
        topics: vec![fetch::FetchTopic {
            topic: if by_id {
                String::new()
            } else {
                "orders".into()
            },
            topic_id: if by_id { topic_id() } else { Uuid::ZERO },
            partitions: vec![part],
        }],
        ..Default::default()
    };
    if v <= 14 {
        r.replica_id = -1;
    } else {
        r.replica_state = fetch::ReplicaState {
            replica_id: 3,
            replica_epoch: 1000,
        };
    }
    if v >= 7 {
        r.session_id = 12;
        r.session_epoch = 2;
        r.forgotten_topics_data = vec![fetch::ForgottenTopic {
            topic: if by_id { String::new() } else { "old".into() },
            topic_id: if by_id {
                Uuid::from_u128(5)
            } else {
                Uuid::ZERO
            },
            partitions: vec![0, 1],
        }];
    }
    if v >= 11 {
        r.rack_id = "rack-b".into();
    }
    if v >= 12 {
        r.cluster_id = Some("sluice-cluster".into());
    }
    r
}

fn fetch_response(v: i16) -> fetch::FetchResponse {
    let by_id = v >= 13;
    let mut p = fetch::PartitionData {
        partition_index: 2,
        error_code: 0,
        high_watermark: 500,
        last_stable_offset: 490,
        aborted_transactions: Some(vec![fetch::AbortedTransaction {
            producer_id: 9,
            first_offset: 450,
        }]),
        records: Some(records()),
        ..Default::default()
    };
    if v >= 5 {
        p.log_start_offset = 0;
    }
    if v >= 11 {
        p.preferred_read_replica = 2;
    }
    if v >= 12 {
        p.diverging_epoch = fetch::EpochEndOffset {
            epoch: 3,
            end_offset: 400,
        };
        p.current_leader = fetch::LeaderIdAndEpoch {
            leader_id: 1,
            leader_epoch: 4,
        };
        p.snapshot_id = fetch::SnapshotId {
            end_offset: 300,
            epoch: 2,
        };
    }
    let empty = fetch::PartitionData {
        partition_index: 3,
        error_code: 1,
        ..Default::default()
    };
    let mut r = fetch::FetchResponse {
        throttle_time_ms: 1,
        responses: vec![fetch::FetchableTopicResponse {
            topic: if by_id {
                String::new()
            } else {
                "orders".into()
            },
            topic_id: if by_id { topic_id() } else { Uuid::ZERO },
            partitions: vec![p, empty],
        }],
        ..Default::default()
    };
    if v >= 7 {
        r.error_code = 0;
        r.session_id = 12;
    }
    if v >= 16 {
        r.node_endpoints = vec![fetch::NodeEndpoint {
            node_id: 1,
            host: "broker-1".into(),
            port: 9092,
            rack: Some("rack-a".into()),
        }];
    }
    r
}

fn list_offsets_request(v: i16) -> lo::ListOffsetsRequest {
    lo::ListOffsetsRequest {
        replica_id: -1,
        isolation_level: if v >= 2 { 1 } else { 0 },
        topics: vec![lo::ListOffsetsTopic {
            name: "orders".into(),
            partitions: vec![
                lo::ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: if v >= 4 { 5 } else { -1 },
                    timestamp: lo::EARLIEST_TIMESTAMP,
                },
                lo::ListOffsetsPartition {
                    partition_index: 1,
                    current_leader_epoch: -1,
                    timestamp: 1_700_000_000_000,
                },
            ],
        }],
        timeout_ms: if v >= 10 { 30_000 } else { 0 },
    }
}

fn list_offsets_response(v: i16) -> lo::ListOffsetsResponse {
    lo::ListOffsetsResponse {
        throttle_time_ms: if v >= 2 { 4 } else { 0 },
        topics: vec![lo::ListOffsetsTopicResponse {
            name: "orders".into(),
            partitions: vec![lo::ListOffsetsPartitionResponse {
                partition_index: 0,
                error_code: 0,
                timestamp: 1_700_000_000_000,
                offset: 42,
                leader_epoch: if v >= 4 { 5 } else { -1 },
            }],
        }],
    }
}

fn create_topics_request(_v: i16) -> ct::CreateTopicsRequest {
    ct::CreateTopicsRequest {
        topics: vec![
            ct::CreatableTopic {
                name: "orders".into(),
                num_partitions: 6,
                replication_factor: 3,
                assignments: vec![],
                configs: vec![
                    ct::CreatableTopicConfig {
                        name: "cleanup.policy".into(),
                        value: Some("compact".into()),
                    },
                    ct::CreatableTopicConfig {
                        name: "retention.ms".into(),
                        value: None,
                    },
                ],
            },
            ct::CreatableTopic {
                name: "manual".into(),
                num_partitions: -1,
                replication_factor: -1,
                assignments: vec![ct::CreatableReplicaAssignment {
                    partition_index: 0,
                    broker_ids: vec![1, 2],
                }],
                configs: vec![],
            },
        ],
        timeout_ms: 15_000,
        validate_only: true,
    }
}

fn create_topics_response(v: i16) -> ct::CreateTopicsResponse {
    let mut ok = ct::CreatableTopicResult {
        name: "orders".into(),
        ..Default::default()
    };
    let failed = ct::CreatableTopicResult {
        name: "manual".into(),
        error_code: 36,
        error_message: Some("Topic 'manual' already exists.".into()),
        ..Default::default()
    };
    if v >= 7 {
        ok.topic_id = topic_id();
    }
    if v >= 5 {
        ok.num_partitions = 6;
        ok.replication_factor = 3;
        ok.topic_config_error_code = 29;
        ok.configs = Some(vec![ct::CreatableTopicConfigs {
            name: "cleanup.policy".into(),
            value: Some("compact".into()),
            read_only: false,
            config_source: 1,
            is_sensitive: false,
        }]);
    }
    ct::CreateTopicsResponse {
        throttle_time_ms: 2,
        topics: vec![ok, failed],
    }
}

fn create_partitions_request(v: i16) -> cp::CreatePartitionsRequest {
    cp::CreatePartitionsRequest {
        topics: vec![
            cp::CreatePartitionsTopic {
                name: "orders".into(),
                count: 12,
                assignments: None,
            },
            cp::CreatePartitionsTopic {
                name: "manual".into(),
                count: 3,
                assignments: Some(vec![
                    cp::CreatePartitionsAssignment {
                        broker_ids: vec![1, 2],
                    },
                    cp::CreatePartitionsAssignment { broker_ids: vec![] },
                ]),
            },
            cp::CreatePartitionsTopic {
                name: "none".into(),
                count: 2,
                assignments: Some(vec![]),
            },
        ],
        timeout_ms: 30_000 + i32::from(v),
        validate_only: v % 2 == 1,
    }
}

fn create_partitions_response(v: i16) -> cp::CreatePartitionsResponse {
    cp::CreatePartitionsResponse {
        throttle_time_ms: i32::from(v),
        results: vec![
            cp::CreatePartitionsTopicResult {
                name: "orders".into(),
                error_code: 0,
                error_message: None,
            },
            cp::CreatePartitionsTopicResult {
                name: "manual".into(),
                error_code: 37,
                error_message: Some("Topic already has 3 partition(s).".into()),
            },
        ],
    }
}

fn delete_topics_request(v: i16) -> dt::DeleteTopicsRequest {
    let mut r = dt::DeleteTopicsRequest {
        timeout_ms: 10_000,
        ..Default::default()
    };
    if v >= 6 {
        r.topics = vec![
            dt::DeleteTopicState {
                name: Some("orders".into()),
                topic_id: Uuid::ZERO,
            },
            dt::DeleteTopicState {
                name: None,
                topic_id: topic_id(),
            },
        ];
    } else {
        r.topic_names = vec!["orders".into(), "payments".into()];
    }
    r
}

fn delete_topics_response(v: i16) -> dt::DeleteTopicsResponse {
    let mut res = dt::DeletableTopicResult {
        name: Some("orders".into()),
        error_code: 3,
        ..Default::default()
    };
    if v >= 6 {
        res.topic_id = topic_id();
    }
    if v >= 5 {
        res.error_message = Some("unknown topic".into());
    }
    let mut results = vec![res];
    if v >= 6 {
        results.push(dt::DeletableTopicResult {
            name: None,
            topic_id: Uuid::from_u128(8),
            error_code: 100,
            error_message: None,
        });
    }
    dt::DeleteTopicsResponse {
        throttle_time_ms: 1,
        responses: results,
    }
}

fn describe_cluster_request(v: i16) -> dc::DescribeClusterRequest {
    dc::DescribeClusterRequest {
        include_cluster_authorized_operations: true,
        endpoint_type: if v >= 1 { 2 } else { 1 },
        include_fenced_brokers: v >= 2,
    }
}

fn describe_cluster_response(v: i16) -> dc::DescribeClusterResponse {
    dc::DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        endpoint_type: if v >= 1 { 2 } else { 1 },
        cluster_id: "sluice-cluster".into(),
        controller_id: 1,
        brokers: vec![
            dc::DescribeClusterBroker {
                broker_id: 1,
                host: "broker-1".into(),
                port: 9092,
                rack: Some("rack-a".into()),
                is_fenced: false,
            },
            dc::DescribeClusterBroker {
                broker_id: 2,
                host: "broker-2".into(),
                port: 9092,
                rack: None,
                is_fenced: v >= 2,
            },
        ],
        cluster_authorized_operations: 0x1234,
    }
}

fn init_producer_id_request(v: i16) -> ipi::InitProducerIdRequest {
    let mut r = ipi::InitProducerIdRequest {
        transactional_id: if v % 2 == 0 {
            Some("txn-1".into())
        } else {
            None
        },
        transaction_timeout_ms: 60_000,
        ..Default::default()
    };
    if v >= 3 {
        r.producer_id = 4242;
        r.producer_epoch = 7;
    }
    r
}

fn init_producer_id_response(_v: i16) -> ipi::InitProducerIdResponse {
    ipi::InitProducerIdResponse {
        throttle_time_ms: 3,
        error_code: 0,
        producer_id: 1_000_001,
        producer_epoch: 2,
    }
}

fn describe_configs_request(v: i16) -> dcf::DescribeConfigsRequest {
    dcf::DescribeConfigsRequest {
        resources: vec![
            dcf::DescribeConfigsResource {
                resource_type: dcf::RESOURCE_TOPIC,
                resource_name: "orders".into(),
                configuration_keys: None,
            },
            dcf::DescribeConfigsResource {
                resource_type: dcf::RESOURCE_BROKER,
                resource_name: "1".into(),
                configuration_keys: Some(vec!["log.segment.bytes".into()]),
            },
        ],
        include_synonyms: true,
        include_documentation: v >= 3,
    }
}

fn describe_configs_response(v: i16) -> dcf::DescribeConfigsResponse {
    let mut entry = dcf::DescribeConfigsResourceResult {
        name: "retention.ms".into(),
        value: Some("60000".into()),
        read_only: false,
        config_source: dcf::config_source::DYNAMIC_TOPIC_CONFIG,
        is_sensitive: false,
        synonyms: vec![
            dcf::DescribeConfigsSynonym {
                name: "retention.ms".into(),
                value: Some("60000".into()),
                source: dcf::config_source::DYNAMIC_TOPIC_CONFIG,
            },
            dcf::DescribeConfigsSynonym {
                name: "log.retention.ms".into(),
                value: None,
                source: dcf::config_source::DEFAULT_CONFIG,
            },
        ],
        ..Default::default()
    };
    if v >= 3 {
        entry.config_type = dcf::config_type::LONG;
        entry.documentation = Some("How long to keep a log.".into());
    }
    dcf::DescribeConfigsResponse {
        throttle_time_ms: 4,
        results: vec![
            dcf::DescribeConfigsResult {
                error_code: 0,
                error_message: None,
                resource_type: dcf::RESOURCE_TOPIC,
                resource_name: "orders".into(),
                configs: vec![entry],
            },
            dcf::DescribeConfigsResult {
                error_code: 3,
                error_message: Some("unknown topic".into()),
                resource_type: dcf::RESOURCE_TOPIC,
                resource_name: "nope".into(),
                configs: Vec::new(),
            },
        ],
    }
}

fn alter_configs_request(_v: i16) -> acf::AlterConfigsRequest {
    acf::AlterConfigsRequest {
        resources: vec![acf::AlterConfigsResource {
            resource_type: 2,
            resource_name: "orders".into(),
            configs: vec![
                acf::AlterableConfig {
                    name: "retention.ms".into(),
                    value: Some("1000".into()),
                },
                acf::AlterableConfig {
                    name: "segment.bytes".into(),
                    value: None,
                },
            ],
        }],
        validate_only: true,
    }
}

fn alter_configs_responses() -> Vec<acf::AlterConfigsResourceResponse> {
    vec![
        acf::AlterConfigsResourceResponse {
            error_code: 0,
            error_message: None,
            resource_type: 2,
            resource_name: "orders".into(),
        },
        acf::AlterConfigsResourceResponse {
            error_code: 40,
            error_message: Some("unknown config".into()),
            resource_type: 4,
            resource_name: "1".into(),
        },
    ]
}

fn alter_configs_response(_v: i16) -> acf::AlterConfigsResponse {
    acf::AlterConfigsResponse {
        throttle_time_ms: 5,
        responses: alter_configs_responses(),
    }
}

fn incremental_alter_configs_request(_v: i16) -> iac::IncrementalAlterConfigsRequest {
    iac::IncrementalAlterConfigsRequest {
        resources: vec![iac::AlterConfigsResource {
            resource_type: 2,
            resource_name: "orders".into(),
            configs: vec![
                iac::AlterableConfig {
                    name: "retention.ms".into(),
                    config_operation: iac::OP_SET,
                    value: Some("1000".into()),
                },
                iac::AlterableConfig {
                    name: "cleanup.policy".into(),
                    config_operation: iac::OP_DELETE,
                    value: None,
                },
            ],
        }],
        validate_only: false,
    }
}

fn incremental_alter_configs_response(_v: i16) -> iac::IncrementalAlterConfigsResponse {
    iac::IncrementalAlterConfigsResponse {
        throttle_time_ms: 6,
        responses: alter_configs_responses(),
    }
}

fn delete_records_request(_v: i16) -> dr::DeleteRecordsRequest {
    dr::DeleteRecordsRequest {
        topics: vec![dr::DeleteRecordsTopic {
            name: "orders".into(),
            partitions: vec![
                dr::DeleteRecordsPartition {
                    partition_index: 0,
                    offset: 42,
                },
                dr::DeleteRecordsPartition {
                    partition_index: 3,
                    offset: dr::HIGH_WATERMARK,
                },
            ],
        }],
        timeout_ms: 30_000,
    }
}

fn delete_records_response(_v: i16) -> dr::DeleteRecordsResponse {
    dr::DeleteRecordsResponse {
        throttle_time_ms: 7,
        topics: vec![dr::DeleteRecordsTopicResult {
            name: "orders".into(),
            partitions: vec![
                dr::DeleteRecordsPartitionResult {
                    partition_index: 0,
                    low_watermark: 42,
                    error_code: 0,
                },
                dr::DeleteRecordsPartitionResult {
                    partition_index: 3,
                    low_watermark: -1,
                    error_code: 3,
                },
            ],
        }],
    }
}

fn opt(cond: bool, s: &str) -> Option<String> {
    cond.then(|| s.to_string())
}

fn find_coordinator_request(v: i16) -> fc::FindCoordinatorRequest {
    fc::FindCoordinatorRequest {
        key: if v <= 3 {
            "orders-app".into()
        } else {
            String::new()
        },
        key_type: if v >= 1 { fc::KEY_TYPE_TRANSACTION } else { 0 },
        coordinator_keys: if v >= 4 {
            vec!["orders-app".into(), "billing".into()]
        } else {
            vec![]
        },
    }
}

fn find_coordinator_response(v: i16) -> fc::FindCoordinatorResponse {
    let mut r = fc::FindCoordinatorResponse {
        throttle_time_ms: if v >= 1 { 3 } else { 0 },
        ..Default::default()
    };
    if v <= 3 {
        r.error_code = 15;
        r.error_message = opt(v >= 1, "not available");
        r.node_id = 2;
        r.host = "broker-2.local".into();
        r.port = 9093;
    } else {
        r.coordinators = vec![
            fc::Coordinator {
                key: "orders-app".into(),
                node_id: 1,
                host: "broker-1.local".into(),
                port: 9092,
                error_code: 0,
                error_message: None,
            },
            fc::Coordinator {
                key: "billing".into(),
                node_id: -1,
                host: String::new(),
                port: -1,
                error_code: 15,
                error_message: Some("loading".into()),
            },
        ];
    }
    r
}

fn join_group_request(v: i16) -> jg::JoinGroupRequest {
    jg::JoinGroupRequest {
        group_id: "orders-app".into(),
        session_timeout_ms: 45_000,
        rebalance_timeout_ms: if v >= 1 { 300_000 } else { -1 },
        member_id: "consumer-1-abc".into(),
        group_instance_id: opt(v >= 5, "instance-1"),
        protocol_type: "consumer".into(),
        protocols: vec![
            jg::JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(b"\x00\x03\x00\x00\x00\x01\x00\x06orders"),
            },
            jg::JoinGroupRequestProtocol {
                name: "cooperative-sticky".into(),
                metadata: Bytes::new(),
            },
        ],
        reason: opt(v >= 8, "rebalance failed due to MemberIdRequiredException"),
    }
}

fn join_group_response(v: i16) -> jg::JoinGroupResponse {
    jg::JoinGroupResponse {
        throttle_time_ms: if v >= 2 { 4 } else { 0 },
        error_code: 0,
        generation_id: 7,
        protocol_type: opt(v >= 7, "consumer"),
        protocol_name: Some("range".into()),
        leader: "consumer-1-abc".into(),
        skip_assignment: v >= 9,
        member_id: "consumer-1-abc".into(),
        members: vec![
            jg::JoinGroupResponseMember {
                member_id: "consumer-1-abc".into(),
                group_instance_id: opt(v >= 5, "instance-1"),
                metadata: Bytes::from_static(b"\x00\x03meta"),
            },
            jg::JoinGroupResponseMember {
                member_id: "consumer-2-def".into(),
                group_instance_id: None,
                metadata: Bytes::new(),
            },
        ],
    }
}

fn heartbeat_request(v: i16) -> hb::HeartbeatRequest {
    hb::HeartbeatRequest {
        group_id: "orders-app".into(),
        generation_id: 7,
        member_id: "consumer-1-abc".into(),
        group_instance_id: opt(v >= 3, "instance-1"),
    }
}

fn heartbeat_response(v: i16) -> hb::HeartbeatResponse {
    hb::HeartbeatResponse {
        throttle_time_ms: if v >= 1 { 8 } else { 0 },
        error_code: 27,
    }
}

fn leave_group_request(v: i16) -> lg::LeaveGroupRequest {
    let mut r = lg::LeaveGroupRequest {
        group_id: "orders-app".into(),
        ..Default::default()
    };
    if v <= 2 {
        r.member_id = "consumer-1-abc".into();
    } else {
        r.members = vec![
            lg::MemberIdentity {
                member_id: "consumer-1-abc".into(),
                group_instance_id: None,
                reason: opt(v >= 5, "the consumer is being closed"),
            },
            lg::MemberIdentity {
                member_id: String::new(),
                group_instance_id: Some("instance-2".into()),
                reason: None,
            },
        ];
    }
    r
}

fn leave_group_response(v: i16) -> lg::LeaveGroupResponse {
    lg::LeaveGroupResponse {
        throttle_time_ms: if v >= 1 { 2 } else { 0 },
        error_code: 0,
        members: if v >= 3 {
            vec![
                lg::MemberResponse {
                    member_id: "consumer-1-abc".into(),
                    group_instance_id: None,
                    error_code: 0,
                },
                lg::MemberResponse {
                    member_id: String::new(),
                    group_instance_id: Some("instance-2".into()),
                    error_code: 25,
                },
            ]
        } else {
            vec![]
        },
    }
}

fn sync_group_request(v: i16) -> sg::SyncGroupRequest {
    sg::SyncGroupRequest {
        group_id: "orders-app".into(),
        generation_id: 7,
        member_id: "consumer-1-abc".into(),
        group_instance_id: opt(v >= 3, "instance-1"),
        protocol_type: opt(v >= 5, "consumer"),
        protocol_name: opt(v >= 5, "range"),
        assignments: vec![
            sg::SyncGroupRequestAssignment {
                member_id: "consumer-1-abc".into(),
                assignment: Bytes::from_static(b"\x00\x03assign-1"),
            },
            sg::SyncGroupRequestAssignment {
                member_id: "consumer-2-def".into(),
                assignment: Bytes::new(),
            },
        ],
    }
}

fn sync_group_response(v: i16) -> sg::SyncGroupResponse {
    sg::SyncGroupResponse {
        throttle_time_ms: if v >= 1 { 6 } else { 0 },
        error_code: 0,
        protocol_type: opt(v >= 5, "consumer"),
        protocol_name: opt(v >= 5, "range"),
        assignment: Bytes::from_static(b"\x00\x03assign-1"),
    }
}

fn describe_groups_request(v: i16) -> dgr::DescribeGroupsRequest {
    dgr::DescribeGroupsRequest {
        groups: vec!["orders-app".into(), "missing".into()],
        include_authorized_operations: v >= 3,
    }
}

fn describe_groups_response(v: i16) -> dgr::DescribeGroupsResponse {
    dgr::DescribeGroupsResponse {
        throttle_time_ms: if v >= 1 { 1 } else { 0 },
        groups: vec![
            dgr::DescribedGroup {
                error_code: 0,
                error_message: None,
                group_id: "orders-app".into(),
                group_state: "Stable".into(),
                protocol_type: "consumer".into(),
                protocol_data: "range".into(),
                members: vec![dgr::DescribedGroupMember {
                    member_id: "consumer-1-abc".into(),
                    group_instance_id: opt(v >= 4, "instance-1"),
                    client_id: "consumer-1".into(),
                    client_host: "/10.0.0.7".into(),
                    member_metadata: Bytes::from_static(b"\x00\x03meta"),
                    member_assignment: Bytes::from_static(b"\x00\x03assign-1"),
                }],
                authorized_operations: if v >= 3 { 0b1_1010_0000 } else { i32::MIN },
            },
            dgr::DescribedGroup {
                error_code: if v >= 6 { 69 } else { 0 },
                error_message: opt(v >= 6, "Group missing not found."),
                group_id: "missing".into(),
                group_state: "Dead".into(),
                ..Default::default()
            },
        ],
    }
}

fn list_groups_request(v: i16) -> lgr::ListGroupsRequest {
    lgr::ListGroupsRequest {
        states_filter: if v >= 4 {
            vec!["Stable".into(), "Empty".into()]
        } else {
            vec![]
        },
        types_filter: if v >= 5 {
            vec!["classic".into()]
        } else {
            vec![]
        },
    }
}

fn list_groups_response(v: i16) -> lgr::ListGroupsResponse {
    let group = |id: &str, state: &str| lgr::ListedGroup {
        group_id: id.into(),
        protocol_type: "consumer".into(),
        group_state: if v >= 4 { state.into() } else { String::new() },
        group_type: if v >= 5 {
            "classic".into()
        } else {
            String::new()
        },
    };
    lgr::ListGroupsResponse {
        throttle_time_ms: if v >= 1 { 9 } else { 0 },
        error_code: 0,
        groups: vec![group("orders-app", "Stable"), group("billing", "Empty")],
    }
}

fn offset_commit_request(v: i16) -> oc::OffsetCommitRequest {
    oc::OffsetCommitRequest {
        group_id: "orders-app".into(),
        generation_id_or_member_epoch: 7,
        member_id: "consumer-1-abc".into(),
        group_instance_id: opt(v >= 7, "instance-1"),
        retention_time_ms: if v <= 4 { 86_400_000 } else { -1 },
        topics: vec![oc::OffsetCommitRequestTopic {
            name: "orders".into(),
            partitions: vec![
                oc::OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 1234,
                    committed_leader_epoch: if v >= 6 { 3 } else { -1 },
                    committed_metadata: Some("meta".into()),
                },
                oc::OffsetCommitRequestPartition {
                    partition_index: 1,
                    committed_offset: 0,
                    committed_leader_epoch: -1,
                    committed_metadata: None,
                },
            ],
        }],
    }
}

fn offset_commit_response(v: i16) -> oc::OffsetCommitResponse {
    oc::OffsetCommitResponse {
        throttle_time_ms: if v >= 3 { 5 } else { 0 },
        topics: vec![oc::OffsetCommitResponseTopic {
            name: "orders".into(),
            partitions: vec![
                oc::OffsetCommitResponsePartition {
                    partition_index: 0,
                    error_code: 0,
                },
                oc::OffsetCommitResponsePartition {
                    partition_index: 1,
                    error_code: 22,
                },
            ],
        }],
    }
}

fn offset_fetch_topics() -> Vec<of::OffsetFetchRequestTopic> {
    vec![of::OffsetFetchRequestTopic {
        name: "orders".into(),
        partition_indexes: vec![0, 1, 2],
    }]
}

fn offset_fetch_request(v: i16) -> of::OffsetFetchRequest {
    let mut r = of::OffsetFetchRequest {
        require_stable: v >= 7,
        ..Default::default()
    };
    if v <= 7 {
        r.group_id = "orders-app".into();
        // Null topics (all) from v2; v1 needs an array.
        r.topics = if v >= 2 && v % 2 == 0 {
            None
        } else {
            Some(offset_fetch_topics())
        };
    } else {
        r.groups = vec![
            of::OffsetFetchRequestGroup {
                group_id: "orders-app".into(),
                member_id: opt(v >= 9, "member-uuid"),
                member_epoch: if v >= 9 { 12 } else { -1 },
                topics: Some(offset_fetch_topics()),
            },
            of::OffsetFetchRequestGroup {
                group_id: "billing".into(),
                ..Default::default()
            },
        ];
    }
    r
}

fn offset_fetch_response_topics(v: i16) -> Vec<of::OffsetFetchResponseTopic> {
    vec![of::OffsetFetchResponseTopic {
        name: "orders".into(),
        partitions: vec![
            of::OffsetFetchResponsePartition {
                partition_index: 0,
                committed_offset: 1234,
                committed_leader_epoch: if v >= 5 { 3 } else { -1 },
                metadata: Some("meta".into()),
                error_code: 0,
            },
            of::OffsetFetchResponsePartition {
                partition_index: 1,
                committed_offset: -1,
                committed_leader_epoch: -1,
                metadata: None,
                error_code: if v >= 7 { 88 } else { 0 },
            },
        ],
    }]
}

fn offset_fetch_response(v: i16) -> of::OffsetFetchResponse {
    let mut r = of::OffsetFetchResponse {
        throttle_time_ms: if v >= 3 { 11 } else { 0 },
        ..Default::default()
    };
    if v <= 7 {
        r.topics = offset_fetch_response_topics(v);
        r.error_code = if v >= 2 { 14 } else { 0 };
    } else {
        r.groups = vec![
            of::OffsetFetchResponseGroup {
                group_id: "orders-app".into(),
                topics: offset_fetch_response_topics(v),
                error_code: 0,
            },
            of::OffsetFetchResponseGroup {
                group_id: "billing".into(),
                topics: vec![],
                error_code: 16,
            },
        ];
    }
    r
}

fn delete_groups_request(_v: i16) -> dg::DeleteGroupsRequest {
    dg::DeleteGroupsRequest {
        groups_names: vec!["orders-app".into(), "billing".into()],
    }
}

fn delete_groups_response(v: i16) -> dg::DeleteGroupsResponse {
    dg::DeleteGroupsResponse {
        throttle_time_ms: 10,
        results: vec![
            dg::DeletableGroupResult {
                group_id: "orders-app".into(),
                error_code: 68,
                // v3+ carries the message; older versions have no field for it.
                error_message: (v >= 3).then(|| "The group is not empty.".into()),
            },
            dg::DeletableGroupResult {
                group_id: "billing".into(),
                error_code: 0,
                error_message: None,
            },
        ],
    }
}

fn offset_delete_request(_v: i16) -> od::OffsetDeleteRequest {
    od::OffsetDeleteRequest {
        group_id: "orders-app".into(),
        topics: vec![od::OffsetDeleteRequestTopic {
            name: "orders".into(),
            partitions: vec![
                od::OffsetDeleteRequestPartition { partition_index: 0 },
                od::OffsetDeleteRequestPartition { partition_index: 2 },
            ],
        }],
    }
}

fn offset_delete_response(_v: i16) -> od::OffsetDeleteResponse {
    od::OffsetDeleteResponse {
        error_code: 0,
        throttle_time_ms: 12,
        topics: vec![od::OffsetDeleteResponseTopic {
            name: "orders".into(),
            partitions: vec![
                od::OffsetDeleteResponsePartition {
                    partition_index: 0,
                    error_code: 0,
                },
                od::OffsetDeleteResponsePartition {
                    partition_index: 2,
                    error_code: 86,
                },
            ],
        }],
    }
}

fn describe_quorum_request(_v: i16) -> dq::DescribeQuorumRequest {
    dq::DescribeQuorumRequest {
        topics: vec![dq::DescribeQuorumTopicRequest {
            topic_name: dq::METADATA_TOPIC_NAME.into(),
            partitions: vec![0],
        }],
    }
}

fn describe_quorum_replica(v: i16, replica_id: i32, log_end_offset: i64) -> dq::ReplicaState {
    dq::ReplicaState {
        replica_id,
        replica_directory_id: if v >= 2 { topic_id() } else { Uuid::ZERO },
        log_end_offset,
        last_fetch_timestamp: if v >= 1 { 1_700_000_000_123 } else { -1 },
        last_caught_up_timestamp: if v >= 1 { 1_700_000_000_100 } else { -1 },
    }
}

fn describe_quorum_response(v: i16) -> dq::DescribeQuorumResponse {
    dq::DescribeQuorumResponse {
        error_code: 0,
        error_message: opt(v >= 2, "fine"),
        topics: vec![dq::DescribeQuorumTopicResponse {
            topic_name: dq::METADATA_TOPIC_NAME.into(),
            partitions: vec![dq::DescribeQuorumPartition {
                partition_index: 0,
                error_code: 0,
                error_message: None,
                leader_id: 1,
                leader_epoch: 3,
                high_watermark: 42,
                current_voters: vec![
                    describe_quorum_replica(v, 1, 42),
                    describe_quorum_replica(v, 2, 40),
                ],
                observers: vec![describe_quorum_replica(v, 4, 41)],
            }],
        }],
        nodes: if v >= 2 {
            vec![dq::DescribeQuorumNode {
                node_id: 1,
                listeners: vec![dq::DescribeQuorumListener {
                    name: "CONTROLLER".into(),
                    host: "127.0.0.1".into(),
                    port: 19093,
                }],
            }]
        } else {
            Vec::new()
        },
    }
}

fn update_features_request(v: i16) -> uf::UpdateFeaturesRequest {
    uf::UpdateFeaturesRequest {
        timeout_ms: 30_000,
        feature_updates: vec![
            uf::FeatureUpdateKey {
                feature: "metadata.version".into(),
                max_version_level: 7,
                allow_downgrade: v == 0,
                upgrade_type: if v >= 1 {
                    uf::UPGRADE_TYPE_SAFE_DOWNGRADE
                } else {
                    uf::UPGRADE_TYPE_UPGRADE
                },
            },
            uf::FeatureUpdateKey {
                feature: "group.version".into(),
                max_version_level: 0,
                ..Default::default()
            },
        ],
        validate_only: v >= 1,
    }
}

fn update_features_response(v: i16) -> uf::UpdateFeaturesResponse {
    uf::UpdateFeaturesResponse {
        throttle_time_ms: 0,
        error_code: 95,
        error_message: Some("Invalid update version 9 for feature group.version.".into()),
        results: if v <= 1 {
            vec![uf::UpdatableFeatureResult {
                feature: "group.version".into(),
                error_code: 95,
                error_message: None,
            }]
        } else {
            Vec::new()
        },
    }
}

fn elect_leaders_request(v: i16) -> el::ElectLeadersRequest {
    el::ElectLeadersRequest {
        // v0 has no election type: always preferred.
        election_type: if v >= 1 { 1 } else { 0 },
        topic_partitions: Some(vec![
            el::ElectLeadersTopic {
                topic: "orders".into(),
                partitions: vec![0, 2, 7],
            },
            el::ElectLeadersTopic {
                topic: "empty".into(),
                partitions: Vec::new(),
            },
        ]),
        timeout_ms: 15_000,
    }
}

fn elect_leaders_response(v: i16) -> el::ElectLeadersResponse {
    el::ElectLeadersResponse {
        throttle_time_ms: 3,
        // The top-level error is v1+.
        error_code: if v >= 1 { 31 } else { 0 },
        replica_election_results: vec![el::ReplicaElectionResult {
            topic: "orders".into(),
            partition_result: vec![
                el::PartitionResult {
                    partition_id: 0,
                    error_code: 0,
                    error_message: None,
                },
                el::PartitionResult {
                    partition_id: 2,
                    error_code: 84,
                    error_message: Some("Leader election not needed for topic partition.".into()),
                },
            ],
        }],
    }
}

fn alter_partition_reassignments_request(v: i16) -> apr::AlterPartitionReassignmentsRequest {
    apr::AlterPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        // v0 has no flag: a replica count may always change.
        allow_replication_factor_change: v < 1,
        topics: vec![apr::ReassignableTopic {
            name: "orders".into(),
            partitions: vec![
                apr::ReassignablePartition {
                    partition_index: 0,
                    replicas: Some(vec![2, 3]),
                },
                apr::ReassignablePartition {
                    partition_index: 1,
                    replicas: None,
                },
            ],
        }],
    }
}

fn alter_partition_reassignments_response(v: i16) -> apr::AlterPartitionReassignmentsResponse {
    apr::AlterPartitionReassignmentsResponse {
        throttle_time_ms: 2,
        allow_replication_factor_change: v < 1,
        error_code: 0,
        error_message: None,
        responses: vec![apr::ReassignableTopicResponse {
            name: "orders".into(),
            partitions: vec![
                apr::ReassignablePartitionResponse {
                    partition_index: 0,
                    error_code: 0,
                    error_message: None,
                },
                apr::ReassignablePartitionResponse {
                    partition_index: 1,
                    error_code: 85,
                    error_message: Some("No ongoing reassignment.".into()),
                },
            ],
        }],
    }
}

fn list_partition_reassignments_request() -> lpr::ListPartitionReassignmentsRequest {
    lpr::ListPartitionReassignmentsRequest {
        timeout_ms: 30_000,
        topics: Some(vec![lpr::ListPartitionReassignmentsTopic {
            name: "orders".into(),
            partition_indexes: vec![0, 4],
        }]),
    }
}

fn list_partition_reassignments_response() -> lpr::ListPartitionReassignmentsResponse {
    lpr::ListPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        topics: vec![lpr::OngoingTopicReassignment {
            name: "orders".into(),
            partitions: vec![lpr::OngoingPartitionReassignment {
                partition_index: 0,
                replicas: vec![2, 3, 1],
                adding_replicas: vec![3],
                removing_replicas: vec![1],
            }],
        }],
    }
}
