//! Samples of the describe APIs: DescribeLogDirs, DescribeProducers, DescribeTopicPartitions.

use sluice_protocol::messages::{
    describe_log_dirs as dld, describe_producers as dp, describe_topic_partitions as dtp,
};
use sluice_protocol::Uuid;

pub fn describe_log_dirs_request(v: i16) -> dld::DescribeLogDirsRequest {
    // Odd versions ask for every partition (null topics), even ones for some.
    let topics = (v % 2 == 0).then(|| {
        vec![
            dld::DescribableLogDirTopic {
                topic: "orders".into(),
                partitions: vec![0, 3],
            },
            dld::DescribableLogDirTopic {
                topic: "none".into(),
                partitions: vec![],
            },
        ]
    });
    dld::DescribeLogDirsRequest { topics }
}

pub fn describe_log_dirs_response(v: i16) -> dld::DescribeLogDirsResponse {
    dld::DescribeLogDirsResponse {
        throttle_time_ms: 3,
        error_code: if v >= 3 { 31 } else { 0 },
        results: vec![
            dld::DescribeLogDirsResult {
                error_code: 0,
                log_dir: "/var/lib/sluice".into(),
                topics: vec![dld::DescribeLogDirsTopic {
                    name: "orders".into(),
                    partitions: vec![
                        dld::DescribeLogDirsPartition {
                            partition_index: 0,
                            partition_size: 1 << 40,
                            offset_lag: 0,
                            is_future_key: false,
                        },
                        dld::DescribeLogDirsPartition {
                            partition_index: 3,
                            partition_size: 77,
                            offset_lag: 5,
                            is_future_key: true,
                        },
                    ],
                }],
                total_bytes: if v >= 4 { 1 << 42 } else { -1 },
                usable_bytes: if v >= 4 { 1 << 41 } else { -1 },
                is_cordoned: v >= 5,
            },
            dld::DescribeLogDirsResult {
                error_code: 56,
                log_dir: "/broken".into(),
                ..Default::default()
            },
        ],
    }
}

pub fn describe_producers_request(_v: i16) -> dp::DescribeProducersRequest {
    dp::DescribeProducersRequest {
        topics: vec![dp::DescribeProducersTopicRequest {
            name: "orders".into(),
            partition_indexes: vec![0, 1, 7],
        }],
    }
}

pub fn describe_producers_response(_v: i16) -> dp::DescribeProducersResponse {
    dp::DescribeProducersResponse {
        throttle_time_ms: 2,
        topics: vec![dp::DescribeProducersTopicResponse {
            name: "orders".into(),
            partitions: vec![
                dp::DescribeProducersPartitionResponse {
                    partition_index: 0,
                    error_code: 0,
                    error_message: None,
                    active_producers: vec![dp::ProducerState {
                        producer_id: 4001,
                        producer_epoch: 2,
                        last_sequence: 99,
                        last_timestamp: 1_700_000_000_000,
                        coordinator_epoch: -1,
                        current_txn_start_offset: -1,
                    }],
                },
                dp::DescribeProducersPartitionResponse {
                    partition_index: 7,
                    error_code: 3,
                    error_message: Some("This server does not host this topic-partition.".into()),
                    active_producers: vec![],
                },
            ],
        }],
    }
}

pub fn describe_topic_partitions_request(_v: i16) -> dtp::DescribeTopicPartitionsRequest {
    dtp::DescribeTopicPartitionsRequest {
        topics: vec![
            dtp::DescribeTopicPartitionsTopicRequest {
                name: "orders".into(),
            },
            dtp::DescribeTopicPartitionsTopicRequest {
                name: "payments".into(),
            },
        ],
        response_partition_limit: 10,
        cursor: Some(dtp::Cursor {
            topic_name: "orders".into(),
            partition_index: 4,
        }),
    }
}

pub fn describe_topic_partitions_response(_v: i16) -> dtp::DescribeTopicPartitionsResponse {
    dtp::DescribeTopicPartitionsResponse {
        throttle_time_ms: 1,
        topics: vec![
            dtp::DescribeTopicPartitionsResponseTopic {
                error_code: 0,
                name: Some("orders".into()),
                topic_id: Uuid::from_u128(0xfeed_beef),
                is_internal: false,
                partitions: vec![
                    dtp::DescribeTopicPartitionsResponsePartition {
                        error_code: 0,
                        partition_index: 4,
                        leader_id: 1,
                        leader_epoch: 3,
                        replica_nodes: vec![1, 2, 3],
                        isr_nodes: vec![1, 2],
                        eligible_leader_replicas: Some(vec![]),
                        last_known_elr: None,
                        offline_replicas: vec![3],
                    },
                    dtp::DescribeTopicPartitionsResponsePartition {
                        error_code: 0,
                        partition_index: 5,
                        leader_id: -1,
                        leader_epoch: 0,
                        replica_nodes: vec![2],
                        isr_nodes: vec![],
                        eligible_leader_replicas: Some(vec![2]),
                        last_known_elr: Some(vec![2]),
                        offline_replicas: vec![],
                    },
                ],
                topic_authorized_operations: 3576,
            },
            dtp::DescribeTopicPartitionsResponseTopic {
                error_code: 3,
                name: Some("payments".into()),
                topic_authorized_operations: i32::MIN,
                ..Default::default()
            },
        ],
        next_cursor: Some(dtp::Cursor {
            topic_name: "payments".into(),
            partition_index: 0,
        }),
    }
}
