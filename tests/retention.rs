//! Retention end to end: a topic with small segments and a short retention.ms loses its old
//! closed segments on the shard's retention tick, and the log start offset moves — whether the
//! configs were set at creation or altered while the partition's log is open.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::time::{Duration, Instant};

use sluice_protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use sluice_protocol::messages::describe_configs::RESOURCE_TOPIC;
use sluice_protocol::messages::incremental_alter_configs::{
    self as iac, IncrementalAlterConfigsRequest,
};
use sluice_protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use sluice_protocol::record_batch::RecordBatchBuilder;
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{fetch, produce, Broker, Client};

/// A batch of 100 records of 1000 bytes, timestamped `timestamp`.
fn big_batch(timestamp: i64) -> bytes::Bytes {
    let value = vec![b'r'; 1000];
    let mut builder = RecordBatchBuilder::new(timestamp);
    for _ in 0..100 {
        builder = builder.record(None, Some(&value));
    }
    builder.build()
}

/// Base offsets of the `.log` segment files in a partition directory, sorted.
fn segment_bases(dir: &std::path::Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

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

/// Kafka's dynamic topic configs: segment.bytes and retention.ms altered by
/// IncrementalAlterConfigs reach the open log without a restart — the next append rolls at the
/// new size, the next retention tick deletes by the new age.
#[test]
fn altered_segment_and_retention_configs_apply_at_run_time() {
    let broker = Broker::start("live-configs", &["log.retention.check.interval.ms=200"]);
    let mut client = broker.client();
    support::create_topic(&mut client, "live", 1);
    // An hour old: within the default retention (7 days), past 60 s.
    let old = support::now_ms() - 3_600_000;
    let batch = big_batch(old);
    assert_eq!(produce(&mut client, "live", 0, batch.clone()), (0, 0));
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(earliest(&mut client, "live"), 0);

    let request = IncrementalAlterConfigsRequest {
        resources: vec![iac::AlterConfigsResource {
            resource_type: RESOURCE_TOPIC,
            resource_name: "live".into(),
            configs: [("segment.bytes", "1048576"), ("retention.ms", "60000")]
                .into_iter()
                .map(|(name, value)| iac::AlterableConfig {
                    name: name.into(),
                    config_operation: iac::OP_SET,
                    value: Some(value.into()),
                })
                .collect(),
        }],
        validate_only: false,
    };
    let ResponseBody::IncrementalAlterConfigs(response) =
        client.call(44, 1, RequestBody::IncrementalAlterConfigs(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(response.responses[0].error_code, 0);
    // The alteration is acknowledged once the controller committed it; give the shards a
    // moment to take the new image.
    std::thread::sleep(Duration::from_millis(500));

    // > 3 MiB more: segments of as many whole batches as fit in 1 MiB.
    let per_segment = (1_048_576 / batch.len()) as i64;
    let batches = 4 * per_segment + 1;
    for i in 1..batches {
        assert_eq!(produce(&mut client, "live", 0, batch.clone()), (0, i * 100));
    }
    let active_base = (batches - 1) / per_segment * per_segment * 100;
    assert!(active_base >= 4 * per_segment * 100);
    // The log start moves first; the files of the segments below it go right after (Kafka
    // even waits `log.segment.delete.delay.ms`), so wait for both.
    let dir = broker.dir.join("data").join("live-0");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut start = earliest(&mut client, "live");
    while (start != active_base || segment_bases(&dir) != vec![active_base])
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
        start = earliest(&mut client, "live");
    }
    assert_eq!(
        start, active_base,
        "every closed (expired) segment was deleted"
    );
    assert_eq!(segment_bases(&dir), vec![active_base]);
    let (error, high_watermark, records) = fetch(&mut client, "live", 0, start);
    assert_eq!((error, high_watermark), (0, batches * 100));
    assert!(!records.is_empty());
}
