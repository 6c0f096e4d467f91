//! The replica fetcher's network side against a real broker process: the connection a
//! follower fetches on (glommio, one request at a time), the Fetch v17 it sends, the
//! ListOffsets it resolves an out-of-range offset with, responses larger than one socket read,
//! a leader's long poll, and the errors a dead leader gives.
//!
//! The follower-role `Partition` methods and the leader's replica path of Fetch come with the
//! rest of issue 16; these tests cover what the fetcher itself puts on the wire.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::time::{Duration, Instant};

use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
use sluice_protocol::record_batch::{RecordBatchBuilder, RecordBatches};
use sluice_protocol::request::{RequestBody, ResponseBody};
use sluice_protocol::ErrorCode;
use sluice_server::broker_client::{BrokerClientError, BrokerConnection};
use sluice_server::replica_fetcher::{leader_offsets, whole_batches, REPLICA_FETCH_VERSION};
use support::{create_topic, produce, topic_id, Broker};

const TIMEOUT: Duration = Duration::from_secs(10);
const BATCHES: i64 = 30;
const RECORDS_PER_BATCH: i64 = 10;

/// Runs `f` on a glommio executor of its own, as a shard runs the fetcher.
fn on_glommio<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_follower_connection_copies_a_leader_log_and_learns_its_offsets() {
    let broker = Broker::start("replica-fetcher-client", &[]);
    let mut client = broker.client();
    create_topic(&mut client, "followed", 1);
    // 30 batches of 10 KiB: a 100 KB partition limit takes several fetches, and each
    // response spans several socket reads.
    let value = vec![b'x'; 1024];
    for i in 0..BATCHES {
        let batch = RecordBatchBuilder::new(support::now_ms())
            .records(RECORDS_PER_BATCH as usize, &value)
            .build();
        assert_eq!(
            produce(&mut client, "followed", 0, batch),
            (0, i * RECORDS_PER_BATCH)
        );
    }
    let id = topic_id(&mut client, "followed");
    let port = broker.port;
    let end = BATCHES * RECORDS_PER_BATCH;
    on_glommio(move || async move {
        let mut conn = BrokerConnection::connect(
            "127.0.0.1",
            port,
            TIMEOUT,
            "sluice-replica-fetcher-2-0".to_string(),
            100 << 20,
        )
        .await
        .unwrap();

        // The leader's log start and end, as an out-of-range fetch resolves them.
        let offsets = leader_offsets(&mut conn, 2, "followed", 0, -1)
            .await
            .unwrap();
        assert_eq!(offsets, Ok((0, end)));
        let missing = leader_offsets(&mut conn, 2, "followed", 7, -1)
            .await
            .unwrap();
        assert_eq!(missing, Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));

        // Copy the log as the fetcher reads it: whole batches, offsets contiguous, by topic id.
        let fetch = |offset: i64, max_wait_ms: i32| {
            RequestBody::Fetch(FetchRequest {
                max_wait_ms,
                min_bytes: 1,
                max_bytes: 10_485_760,
                session_epoch: -1,
                topics: vec![FetchTopic {
                    topic_id: id,
                    partitions: vec![FetchPartition {
                        partition: 0,
                        fetch_offset: offset,
                        log_start_offset: -1,
                        partition_max_bytes: 100_000,
                        ..FetchPartition::default()
                    }],
                    ..FetchTopic::default()
                }],
                ..FetchRequest::default()
            })
        };
        let mut next = 0;
        let mut responses = 0;
        while next < end {
            let ResponseBody::Fetch(response) = conn
                .send(fetch(next, 500), REPLICA_FETCH_VERSION, TIMEOUT)
                .await
                .unwrap()
            else {
                panic!("a Fetch response");
            };
            responses += 1;
            let p = &response.responses[0].partitions[0];
            assert_eq!(p.error_code, 0);
            assert_eq!(p.high_watermark, end);
            let records = whole_batches(p.records.clone().unwrap_or_default());
            assert!(!records.is_empty(), "progress at offset {next}");
            for batch in RecordBatches::new(records) {
                let (header, _) = batch.unwrap();
                assert_eq!(header.base_offset, next);
                next = header.next_offset();
            }
        }
        assert_eq!(next, end);
        assert!(responses >= 3, "{responses} responses for ~300 KiB");

        // Caught up: the leader holds the fetch for its max wait, the follower does not spin.
        let started = Instant::now();
        let ResponseBody::Fetch(response) = conn
            .send(fetch(end, 300), REPLICA_FETCH_VERSION, TIMEOUT)
            .await
            .unwrap()
        else {
            panic!("a Fetch response");
        };
        let waited = started.elapsed();
        let p = &response.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
        assert!(
            waited >= Duration::from_millis(250),
            "answered after {waited:?}"
        );
    });
}

#[test]
fn a_dead_leader_fails_the_request_instead_of_hanging() {
    let broker = Broker::start("replica-fetcher-dead-leader", &[]);
    let port = broker.port;
    on_glommio(move || async move {
        let mut conn = BrokerConnection::connect(
            "127.0.0.1",
            port,
            TIMEOUT,
            "sluice-replica-fetcher-2-0".to_string(),
            1 << 20,
        )
        .await
        .unwrap();
        assert!(leader_offsets(&mut conn, 2, "none", 0, -1)
            .await
            .unwrap()
            .is_err());
        // Killed (no FIN from a clean close, then nothing listens): the request fails.
        drop(broker);
        let failed = leader_offsets(&mut conn, 2, "none", 0, -1).await;
        assert!(
            matches!(
                failed,
                Err(BrokerClientError::Closed) | Err(BrokerClientError::Io(_))
            ),
            "{failed:?}"
        );
        let refused = BrokerConnection::connect(
            "127.0.0.1",
            port,
            TIMEOUT,
            "sluice-replica-fetcher-2-0".to_string(),
            1 << 20,
        )
        .await;
        assert!(matches!(refused, Err(BrokerClientError::Io(_))));
    });
}
