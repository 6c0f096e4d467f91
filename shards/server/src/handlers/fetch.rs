//! Fetch (key 1): a long poll. Read every requested partition on its owner shard; if fewer
//! than `min_bytes` came back, wait — without polling — until an append lands on one of them or
//! `max_wait_ms` passes, then read again.
//!
//! Fetch sessions (KIP-227) are declined the way Kafka declines them when its session cache is
//! full: the response carries session id 0, so clients keep sending full fetch requests.

use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::fetch::{
    self as msg, FetchRequest, FetchResponse, FetchableTopicResponse, PartitionData,
};
use sluice_replica::{FetchPartitionData, TopicIdPartition};
use sluice_shard::{FetchPartitionRequest, MetadataImage, ShardId};

use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::router;

super::served_versions!(msg);

/// Fetch version from which topics are named by id.
const TOPIC_ID_MIN_VERSION: i16 = 13;
/// `isolation_level` READ_COMMITTED.
const READ_COMMITTED: i8 = 1;
/// The longest a fetch may wait, whatever it asks (Kafka bounds it by the request timeout).
const MAX_WAIT_MS_MAX: i32 = 60_000;

/// One requested partition, resolved.
struct Wanted {
    topic_index: usize,
    partition: i32,
    route: Result<(ShardId, FetchPartitionRequest), ErrorCode>,
}

/// Answers Fetch. An `Err` (a follower fetch, not served yet) closes the connection.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: FetchRequest,
) -> Result<FetchResponse, &'static str> {
    let replica_id = if version >= 15 {
        request.replica_state.replica_id
    } else {
        request.replica_id
    };
    if replica_id >= 0 {
        return Err("replica fetches are not served until replication exists");
    }
    if request.session_id != 0 {
        return Ok(top_level_error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND));
    }
    let image = ctx.image();
    let share = partition_share(&request);
    let wanted = resolve(&image, version, &request, share);
    let results = long_poll(ctx, &request, &wanted).await;
    Ok(build_response(version, &request, &wanted, results))
}

/// Each partition's share of the request's `max_bytes`. Partitions are read in parallel on
/// their shards, so instead of Kafka's sequential budget each gets an equal share up front
/// (never below one read chunk); this also bounds the memory one fetch holds.
fn partition_share(request: &FetchRequest) -> usize {
    const SHARE_BYTES_MIN: usize = 64 * 1024;
    let partitions: usize = request.topics.iter().map(|t| t.partitions.len()).sum();
    let max_bytes = request.max_bytes.max(0) as usize;
    (max_bytes / partitions.max(1)).max(SHARE_BYTES_MIN)
}

fn resolve(
    image: &MetadataImage,
    version: i16,
    request: &FetchRequest,
    share: usize,
) -> Vec<Wanted> {
    let mut wanted = Vec::new();
    for (topic_index, topic) in request.topics.iter().enumerate() {
        let found = if version >= TOPIC_ID_MIN_VERSION {
            image
                .topic_by_id(&topic.topic_id)
                .ok_or(ErrorCode::UNKNOWN_TOPIC_ID)
        } else {
            image
                .topic(&topic.topic)
                .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        };
        for p in &topic.partitions {
            let route = found.and_then(|t| {
                let tp = TopicIdPartition {
                    topic_id: t.topic_id,
                    partition: p.partition,
                };
                let shard = image
                    .shard_table
                    .shard_of(&tp)
                    .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
                let max_bytes = usize::try_from(p.partition_max_bytes)
                    .map_err(|_| ErrorCode::INVALID_FETCH_SIZE)?;
                Ok((
                    shard,
                    FetchPartitionRequest {
                        tp,
                        fetch_offset: p.fetch_offset,
                        max_bytes: max_bytes.min(share),
                        min_one_message: true,
                    },
                ))
            });
            wanted.push(Wanted {
                topic_index,
                partition: p.partition,
                route,
            });
        }
    }
    wanted
}

/// Reads until `min_bytes` are there, an error shows, or the deadline passes.
async fn long_poll(
    ctx: &ShardContext,
    request: &FetchRequest,
    wanted: &[Wanted],
) -> Vec<Option<Result<FetchPartitionData, PartitionError>>> {
    let max_wait_ms = request.max_wait_ms.clamp(0, MAX_WAIT_MS_MAX);
    let deadline = Instant::now() + Duration::from_millis(max_wait_ms as u64);
    let min_bytes = request.min_bytes.max(0) as usize;
    loop {
        let results = read_all(ctx, wanted).await;
        let bytes: usize = results
            .iter()
            .flatten()
            .flatten()
            .map(|d| d.records.len())
            .sum();
        // As Kafka's ReplicaManager: answer at once when there is nothing to wait for (no
        // partitions, as in the fetch that closes a session when a consumer closes) or a
        // partition is in error (unknown topic or partition included).
        let any_error =
            results.iter().flatten().any(|r| r.is_err()) || wanted.iter().any(|w| w.route.is_err());
        let done = wanted.is_empty()
            || bytes >= min_bytes
            || any_error
            || Instant::now() >= deadline
            || ctx.shutdown.is_triggered();
        if done {
            return results;
        }
        // Wait for data past what each partition had committed at this read.
        let waits = wanted
            .iter()
            .zip(&results)
            .filter_map(|(w, r)| {
                let (shard, req) = w.route.as_ref().ok()?;
                let data = r.as_ref()?.as_ref().ok()?;
                Some((*shard, (req.tp, data.high_watermark.max(req.fetch_offset))))
            })
            .collect();
        router::wait_for_append(ctx, waits, deadline).await;
    }
}

async fn read_all(
    ctx: &ShardContext,
    wanted: &[Wanted],
) -> Vec<Option<Result<FetchPartitionData, PartitionError>>> {
    let routed: Vec<(ShardId, FetchPartitionRequest)> =
        wanted.iter().filter_map(|w| w.route.ok()).collect();
    let mut results = router::fetch(ctx, routed).await.into_iter();
    wanted
        .iter()
        .map(|w| w.route.ok().and_then(|_| results.next()))
        .collect()
}

fn build_response(
    version: i16,
    request: &FetchRequest,
    wanted: &[Wanted],
    results: Vec<Option<Result<FetchPartitionData, PartitionError>>>,
) -> FetchResponse {
    let mut responses: Vec<FetchableTopicResponse> = request
        .topics
        .iter()
        .map(|t| FetchableTopicResponse {
            topic: if version < TOPIC_ID_MIN_VERSION {
                t.topic.clone()
            } else {
                String::new()
            },
            topic_id: if version >= TOPIC_ID_MIN_VERSION {
                t.topic_id
            } else {
                Uuid::ZERO
            },
            partitions: Vec::with_capacity(t.partitions.len()),
        })
        .collect();
    // The response may exceed max_bytes only by the first non-empty partition (Kafka's rule,
    // so that one batch larger than the limit still gets through).
    let mut budget = request.max_bytes.max(0) as usize;
    let mut returned_any = false;
    let read_committed = request.isolation_level == READ_COMMITTED;
    for (w, result) in wanted.iter().zip(results) {
        let partition = match (&w.route, result) {
            (Err(code), _) => error_partition(w.partition, *code),
            (Ok(_), None) => error_partition(w.partition, ErrorCode::UNKNOWN_SERVER_ERROR),
            (Ok(_), Some(Err(error))) => error_partition(w.partition, error.error_code()),
            (Ok(_), Some(Ok(data))) => {
                let mut records = data.records;
                if returned_any && records.len() > budget {
                    records = Bytes::new();
                }
                budget = budget.saturating_sub(records.len());
                returned_any |= !records.is_empty();
                PartitionData {
                    partition_index: w.partition,
                    error_code: ErrorCode::NONE.0,
                    high_watermark: data.high_watermark,
                    last_stable_offset: data.high_watermark,
                    log_start_offset: data.log_start_offset,
                    aborted_transactions: read_committed.then(Vec::new),
                    preferred_read_replica: -1,
                    records: Some(records),
                    ..PartitionData::default()
                }
            }
        };
        responses[w.topic_index].partitions.push(partition);
    }
    FetchResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.0,
        session_id: 0,
        responses,
        ..FetchResponse::default()
    }
}

fn error_partition(partition: i32, code: ErrorCode) -> PartitionData {
    PartitionData {
        partition_index: partition,
        error_code: code.0,
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        preferred_read_replica: -1,
        records: Some(Bytes::new()),
        ..PartitionData::default()
    }
}

fn top_level_error(code: ErrorCode) -> FetchResponse {
    FetchResponse {
        error_code: code.0,
        session_id: 0,
        ..FetchResponse::default()
    }
}
