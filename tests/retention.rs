//! Retention end to end: a topic with small segments and a short retention.ms loses its old
//! closed segments on the shard's retention tick, and the log start offset moves.

mod support;

use std::time::{Duration, Instant};

use sluice_protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use sluice_protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use sluice_protocol::record_batch::RecordBatchBuilder;
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{fetch, produce, Broker, Client};

fn earliest(client: &mut Client, topic: &str) -> i64 {
    let request = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -2,
                ..ListOffsetsPartition::default()
            }],
        }],
        ..ListOffsetsRequest::default()
    };
    let ResponseBody::ListOffsets(response) = client.call(2, 7, RequestBody::ListOffsets(request))
    else {
        panic!("wrong response kind")
    };
    response.topics[0].partitions[0].offset
}

#[test]
fn old_segments_expire_and_the_log_start_moves() {
    let broker = Broker::start("retention", &["log.retention.check.interval.ms=200"]);
    let mut client = broker.client();
    let config = |name: &str, value: &str| CreatableTopicConfig {
        name: name.into(),
        value: Some(value.into()),
    };
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "expiring".into(),
            num_partitions: 1,
            replication_factor: 1,
            configs: vec![
                config("segment.bytes", "1048576"),
                config("retention.ms", "60000"),
            ],
            ..CreatableTopic::default()
        }],
        timeout_ms: 10_000,
        validate_only: false,
    };
    let ResponseBody::CreateTopics(created) =
        client.call(19, 7, RequestBody::CreateTopics(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(created.topics[0].error_code, 0);
    // An hour old: past retention.ms as soon as its segment closes.
    let old = support::now_ms() - 3_600_000;
    let value = vec![b'r'; 1000];
    let mut next = 0;
    for _ in 0..40 {
        let mut builder = RecordBatchBuilder::new(old);
        for _ in 0..100 {
            builder = builder.record(None, Some(&value));
        }
        let (error, offset) = produce(&mut client, "expiring", 0, builder.build());
        assert_eq!((error, offset), (0, next));
        next += 100;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut start = earliest(&mut client, "expiring");
    while start == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        start = earliest(&mut client, "expiring");
    }
    assert!(start > 0, "closed, expired segments were deleted");
    assert!(start < next, "the active segment is never deleted");
    let (error, _, _) = fetch(&mut client, "expiring", 0, 0);
    assert_eq!(
        error, 1,
        "reading below the log start offset is OFFSET_OUT_OF_RANGE"
    );
    let (error, high_watermark, records) = fetch(&mut client, "expiring", 0, start);
    assert_eq!((error, high_watermark), (0, next));
    assert!(!records.is_empty());
}
