//! Produce records are appended without a copy: the log patches and writes the pieces of the
//! request frame the connection read, and a partition's tail cache keeps them. One kept piece
//! holds its whole frame, so a partition written rarely would hold, with its newest small
//! batch, the megabyte frame it came in. The broker bounds what frames held this way may add up
//! to (its tail caches' bound plus 16 MiB for appends in flight) and copies past it: here 200
//! frames of ~1 MiB each leave a small batch in a different partition's tail cache, and the
//! broker's memory grows by far less than the 200 MiB those frames would hold.

#![allow(clippy::unwrap_used)] // test code
mod support;

use bytes::Bytes;
use sluice_protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use sluice_protocol::record_batch::{validate_batch, RecordBatchBuilder};
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{fetch, Broker};

const SMALL_PARTITIONS: i32 = 200;
/// ~1 MB: 1,000 records of 1,000 bytes, within the default `message.max.bytes`.
const LARGE_BATCH_RECORDS: usize = 1000;

fn large_batch() -> Bytes {
    let value = vec![b'x'; 1000];
    let mut builder = RecordBatchBuilder::new(support::now_ms());
    for _ in 0..LARGE_BATCH_RECORDS {
        builder = builder.record(None, Some(&value));
    }
    builder.build()
}

/// One Produce request: the large batch to partition 0, a small one to `small`.
fn produce_pair(client: &mut support::Client, large: &Bytes, small: i32) {
    let request = ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "frames".into(),
            partition_data: vec![
                PartitionProduceData {
                    index: 0,
                    records: Some(large.clone().into()),
                },
                PartitionProduceData {
                    index: small,
                    records: Some(support::batch(&format!("small-{small}"), 1).into()),
                },
            ],
            ..TopicProduceData::default()
        }],
    };
    let ResponseBody::Produce(response) = client.call(0, 9, RequestBody::Produce(request)) else {
        panic!("wrong response kind")
    };
    for p in &response.responses[0].partition_responses {
        assert_eq!(p.error_code, 0, "partition {}", p.index);
    }
}

#[test]
fn frames_held_by_tail_cached_pieces_stay_within_the_bound() {
    let broker = Broker::start(
        "produce-frames",
        &["sluice.shards=1", "sluice.shard.tail.cache.bytes=1048576"],
    );
    let mut client = broker.client();
    support::create_topic(&mut client, "frames", SMALL_PARTITIONS + 1);
    let large = large_batch();
    // Warm up the allocator with a few frames first, so the growth below is what is held.
    for small in 1..=4 {
        produce_pair(&mut client, &large, small);
    }
    let before_kib = broker.rss_kib();
    for small in 1..=SMALL_PARTITIONS {
        produce_pair(&mut client, &large, small);
    }
    let growth_mib = broker.rss_kib().saturating_sub(before_kib) / 1024;
    // 200 frames of 1 MB would be held without the bound; with it, at most 1 MiB of tail
    // caches + 16 MiB, and the allocator's slack.
    assert!(
        growth_mib < 80,
        "resident memory grew by {growth_mib} MiB over 200 produce frames"
    );
    // Copied or not, every batch is stored as sent (offsets patched, CRC intact).
    for small in [1, SMALL_PARTITIONS / 2, SMALL_PARTITIONS] {
        let (error, high_watermark, records) = fetch(&mut client, "frames", small, 0);
        assert_eq!((error, high_watermark), (0, if small <= 4 { 2 } else { 1 }));
        validate_batch(&records).unwrap();
    }
    let (error, high_watermark, records) = fetch(&mut client, "frames", 0, 0);
    assert_eq!(
        (error, high_watermark),
        (0, 204 * LARGE_BATCH_RECORDS as i64)
    );
    validate_batch(&records[..large.len()]).unwrap();
    broker.stop();
}
