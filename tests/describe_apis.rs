//! The describe APIs over the broker's listener with many partitions spread over several shards:
//! DescribeTopicPartitions pages through 240 partitions capped by
//! `max.request.partition.size.limit`, DescribeLogDirs gathers every partition's log size from
//! every shard, DescribeProducers finds each idempotent producer on the shard that owns its
//! partition.

mod support;

use sluice_protocol::messages::describe_log_dirs::{
    DescribableLogDirTopic, DescribeLogDirsRequest,
};
use sluice_protocol::messages::describe_producers::{
    DescribeProducersRequest, DescribeProducersTopicRequest,
};
use sluice_protocol::messages::describe_topic_partitions::{
    Cursor, DescribeTopicPartitionsRequest, DescribeTopicPartitionsTopicRequest,
};
use sluice_protocol::messages::init_producer_id::InitProducerIdRequest;
use sluice_protocol::record_batch::RecordBatchBuilder;
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{create_topic, now_ms, produce, Broker, Client};

const PARTITIONS: i32 = 240;
const PAGE_LIMIT: i32 = 50;

fn describe_page(
    client: &mut Client,
    topics: &[&str],
    limit: i32,
    cursor: Option<Cursor>,
) -> sluice_protocol::messages::describe_topic_partitions::DescribeTopicPartitionsResponse {
    let request = DescribeTopicPartitionsRequest {
        topics: topics
            .iter()
            .map(|t| DescribeTopicPartitionsTopicRequest {
                name: t.to_string(),
            })
            .collect(),
        response_partition_limit: limit,
        cursor,
    };
    let ResponseBody::DescribeTopicPartitions(r) =
        client.call(75, 0, RequestBody::DescribeTopicPartitions(request))
    else {
        panic!("wrong response kind")
    };
    r
}

#[test]
fn describe_apis_over_many_partitions_and_shards() {
    let broker = Broker::start(
        "describe-apis",
        &[
            "sluice.shards=3",
            &format!("max.request.partition.size.limit={PAGE_LIMIT}"),
        ],
    );
    let mut client = broker.client();
    create_topic(&mut client, "many", PARTITIONS);
    create_topic(&mut client, "few", 2);

    // DescribeTopicPartitions: the broker's limit caps the request's 2000; following the
    // cursors visits every partition once, in order, across the topic boundary.
    let mut cursor = None;
    let mut seen: Vec<(String, i32)> = Vec::new();
    let mut pages = 0;
    loop {
        pages += 1;
        let r = describe_page(&mut client, &[], 2000, cursor);
        let on_page: usize = r.topics.iter().map(|t| t.partitions.len()).sum();
        assert!(on_page <= PAGE_LIMIT as usize, "page {pages}: {on_page}");
        for t in &r.topics {
            assert_eq!(t.error_code, 0);
            for p in &t.partitions {
                assert_eq!((p.leader_id, &p.replica_nodes[..]), (1, &[1][..]));
                seen.push((t.name.clone().unwrap_or_default(), p.partition_index));
            }
        }
        cursor = r.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let expected: Vec<(String, i32)> = (0..2)
        .map(|p| ("few".to_string(), p))
        .chain((0..PARTITIONS).map(|p| ("many".to_string(), p)))
        .collect();
    assert_eq!(seen, expected);
    assert_eq!(pages, 5, "242 partitions in pages of 50");

    // Produce to every 7th partition, idempotently, with as many records as the index.
    let ResponseBody::InitProducerId(init) = client.call(
        22,
        4,
        RequestBody::InitProducerId(InitProducerIdRequest::default()),
    ) else {
        panic!("wrong response kind")
    };
    assert_eq!(init.error_code, 0);
    let base_ts = now_ms();
    let mut batch_bytes = vec![0usize; PARTITIONS as usize];
    for partition in (0..PARTITIONS).step_by(7) {
        let records = 1 + partition as usize;
        let batch = RecordBatchBuilder::new(base_ts)
            .producer(init.producer_id, init.producer_epoch, 0)
            .records(records, b"payload")
            .build();
        batch_bytes[partition as usize] = batch.len();
        assert_eq!(produce(&mut client, "many", partition, batch).0, 0);
    }

    // DescribeLogDirs (every partition): each log's size is the batch written to it, gathered
    // from all three shards.
    let ResponseBody::DescribeLogDirs(r) = client.call(
        35,
        4,
        RequestBody::DescribeLogDirs(DescribeLogDirsRequest { topics: None }),
    ) else {
        panic!("wrong response kind")
    };
    assert_eq!(r.error_code, 0);
    let [dir] = &r.results[..] else {
        panic!("one log dir: {r:?}")
    };
    assert_eq!(dir.error_code, 0);
    assert!(dir.total_bytes > 0 && (0..=dir.total_bytes).contains(&dir.usable_bytes));
    let many = dir
        .topics
        .iter()
        .find(|t| t.name == "many")
        .expect("topic many listed");
    let sizes: Vec<(i32, usize)> = many
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.partition_size as usize))
        .collect();
    let expected: Vec<(i32, usize)> = (0..PARTITIONS)
        .map(|p| (p, batch_bytes[p as usize]))
        .collect();
    assert_eq!(sizes, expected);
    assert!(many
        .partitions
        .iter()
        .all(|p| p.offset_lag == 0 && !p.is_future_key));

    // Named partitions only (duplicates once, missing ones left out).
    let ResponseBody::DescribeLogDirs(r) = client.call(
        35,
        5,
        RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
            topics: Some(vec![DescribableLogDirTopic {
                topic: "many".into(),
                partitions: vec![14, 3, 14, 999],
            }]),
        }),
    ) else {
        panic!("wrong response kind")
    };
    let listed: Vec<(String, Vec<i32>)> = r.results[0]
        .topics
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.partitions.iter().map(|p| p.partition_index).collect(),
            )
        })
        .collect();
    assert_eq!(listed, vec![("many".to_string(), vec![3, 14])]);
    assert!(!r.results[0].is_cordoned);

    // DescribeProducers on every partition: the producer where it wrote, with the sequence of
    // its last record, nothing elsewhere.
    let ResponseBody::DescribeProducers(r) = client.call(
        61,
        0,
        RequestBody::DescribeProducers(DescribeProducersRequest {
            topics: vec![DescribeProducersTopicRequest {
                name: "many".into(),
                partition_indexes: (0..PARTITIONS).collect(),
            }],
        }),
    ) else {
        panic!("wrong response kind")
    };
    for p in &r.topics[0].partitions {
        assert_eq!(p.error_code, 0, "partition {}", p.partition_index);
        if p.partition_index % 7 == 0 {
            let [producer] = &p.active_producers[..] else {
                panic!("partition {}: {:?}", p.partition_index, p.active_producers)
            };
            assert_eq!(
                (
                    producer.producer_id,
                    producer.producer_epoch,
                    producer.last_sequence,
                    producer.last_timestamp,
                    producer.coordinator_epoch,
                    producer.current_txn_start_offset
                ),
                (
                    init.producer_id,
                    i32::from(init.producer_epoch),
                    p.partition_index,
                    base_ts,
                    -1,
                    -1
                )
            );
        } else {
            assert!(p.active_producers.is_empty());
        }
    }
    assert!(broker.stop().success());
}
