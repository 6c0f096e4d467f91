//! Fetch (key 1): a long poll. Read every requested partition on its owner shard; if fewer
//! than `min_bytes` came back, wait — without polling — until an append lands on one of them or
//! `max_wait_ms` passes, then read again.
//!
//! Fetch sessions (KIP-227): the shard's `FetchSessionCache` (`fetch_session.rs`) decides how a
//! request is served — sessionless, full (opening a session), incremental (the session's
//! partitions are read, the answer keeps only what changed) or a session error — and finishes
//! the answer; this handler reads what the context asks, as for any fetch.
//!
//! From v13 topics are named by id; an id this broker does not know is UNKNOWN_TOPIC_ID, as in
//! Kafka. v18 only adds the follower's `high_watermark` (KIP-1166), a replication field: a
//! consumer leaves it at its default (not sent) and Kafka reads it only from a replica, so a
//! consumer's v18 fetch is served exactly as v17.
//!
//! A follower's fetch (a replica id, from v15 in `ReplicaState` with its broker epoch) is served
//! here too, as Kafka serves it: read up to the leader's log end instead of the high watermark,
//! answered with a diverging epoch when the follower's log has records the leader's lacks
//! (KIP-320), and counted towards the high watermark and the ISR on the partition's shard.

use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_config::ReplicaSelectorClass;
use sluice_log::{QuietMark, Records};
use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::fetch::{
    self as msg, FetchRequest, FetchResponse, FetchableTopicResponse, PartitionData,
};
use sluice_replica::FetchPartitionData;
use sluice_shard::{
    FetchPartitionRequest, MetadataImage, ReplicaFetch, ShardId, TopicImage, WaitFor,
};

use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::fetch_session::{self, FetchContext};
use crate::{leadership, replica_selector, router};

/// Fetch version from which topics are named by id.
const TOPIC_ID_MIN_VERSION: i16 = 13;
/// Fetch version from which a NOT_LEADER_OR_FOLLOWER answer names the current leader and its
/// endpoint (KIP-951; Kafka fills them from v16, the version that added `NodeEndpoints`).
const CURRENT_LEADER_MIN_VERSION: i16 = 16;
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

/// Answers Fetch. (An `Err` closes the connection; no fetch gets one today.)
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    mut request: FetchRequest,
) -> Result<FetchResponse, &'static str> {
    // An incremental request comes back naming every partition of its session but the quiet
    // ones (nothing new at the last answer, nothing changed since).
    let image = ctx.image();
    let image_generation = ctx.image_generation();
    let context = ctx.fetch_sessions.borrow_mut().new_context(
        version,
        &mut request,
        fetch_session::now_ms(),
        image_generation,
    );
    if let FetchContext::Error(code) = context {
        return Ok(fetch_session::error_response(code));
    }
    let replica = replica_of(version, &request);
    let selector = ctx.config.replica_selector_class;
    let resolve_all = |request: &FetchRequest| {
        let share = partition_share(request);
        resolve(&image, version, request, share, replica, selector)
    };
    let mut wanted = resolve_all(&request);
    let mut results = None;
    if let FetchContext::Incremental { id, left_out, .. } = context {
        if left_out > 0 {
            // One read of the rest answers if it has enough, or if the request does not wait
            // (the quiet partitions would add nothing to the answer); if not, the whole
            // session is read and waited on, as without quiet partitions (an append to one of
            // them must end the wait).
            let first = read_all(ctx, &wanted).await;
            let answer_now = request.max_wait_ms <= 0
                || (!wanted.is_empty() && enough(&request, &wanted, &first));
            let session_topics = if answer_now {
                None
            } else {
                ctx.fetch_sessions.borrow().session_topics(id)
            };
            match session_topics {
                Some(topics) => {
                    request.topics = topics;
                    wanted = resolve_all(&request);
                }
                None => results = Some(first),
            }
        }
    }
    let results = match results {
        Some(results) => results,
        None => long_poll(ctx, &request, &wanted).await,
    };
    let (mut response, marks) = build_response(&image, version, &request, &wanted, results);
    if let Some(metrics) = &ctx.metrics {
        // Before the session drops unchanged partitions (they carry no records).
        crate::metrics::count_fetch(metrics, &image, &request, &response);
    }
    let mut sessions = ctx.fetch_sessions.borrow_mut();
    sessions.complete(
        context,
        version,
        &request,
        replica.is_some(),
        &mut response,
        fetch_session::now_ms(),
        marks,
        image_generation,
    );
    if let Some(metrics) = &ctx.metrics {
        metrics.fetch_sessions(
            sessions.len(),
            sessions.partitions_cached(),
            sessions.evictions(),
        );
    }
    Ok(response)
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

/// The follower a fetch comes from (`None` for a consumer: replica id -1, or -2 for Kafka's
/// debugging consumer), with its broker epoch (-1 before v15, which did not send one).
fn replica_of(version: i16, request: &FetchRequest) -> Option<(i32, i64)> {
    let (replica_id, broker_epoch) = if version >= 15 {
        (
            request.replica_state.replica_id,
            request.replica_state.replica_epoch,
        )
    } else {
        (request.replica_id, -1)
    };
    (replica_id >= 0).then_some((replica_id, broker_epoch))
}

fn resolve(
    image: &MetadataImage,
    version: i16,
    request: &FetchRequest,
    share: usize,
    replica: Option<(i32, i64)>,
    selector: Option<ReplicaSelectorClass>,
) -> Vec<Wanted> {
    // Kafka's `FetchParams.fetchOnlyLeader`: a consumer's fetch with client metadata (v11+)
    // may be served by a follower (KIP-392); a follower's, or an older consumer's, only by the
    // leader.
    let fetch_only_leader =
        replica.is_some() || version < replica_selector::CLIENT_METADATA_MIN_VERSION;
    let mut wanted = Vec::new();
    for (topic_index, topic) in request.topics.iter().enumerate() {
        let unknown = if version >= TOPIC_ID_MIN_VERSION {
            ErrorCode::UNKNOWN_TOPIC_ID
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        };
        let found = requested_topic(image, version, topic).ok_or(unknown);
        for p in &topic.partitions {
            let route = found.and_then(|t| {
                // Kafka's ReplicaManager: a partition this broker does not lead (or, for a
                // read any replica may serve, does not host) is refused
                // (NOT_LEADER_OR_FOLLOWER) before anything about the read is looked at.
                let led = if fetch_only_leader {
                    leadership::local_leader(image, t, p.partition)?
                } else {
                    leadership::local_replica(image, t, p.partition)?
                };
                let max_bytes = usize::try_from(p.partition_max_bytes)
                    .map_err(|_| ErrorCode::INVALID_FETCH_SIZE)?;
                // Only the leader names a preferred read replica.
                let read_replica_candidates =
                    if fetch_only_leader || led.partition.leader != image.local_node_id {
                        Vec::new()
                    } else {
                        replica_selector::rack_candidates(
                            selector,
                            image,
                            led.partition,
                            &request.rack_id,
                        )
                    };
                Ok((
                    led.shard,
                    FetchPartitionRequest {
                        tp: led.tp,
                        fetch_offset: p.fetch_offset,
                        max_bytes: max_bytes.min(share),
                        min_one_message: true,
                        current_leader_epoch: p.current_leader_epoch,
                        replica: replica.map(|(replica_id, broker_epoch)| ReplicaFetch {
                            replica_id,
                            broker_epoch,
                            last_fetched_epoch: (p.last_fetched_epoch >= 0)
                                .then_some(p.last_fetched_epoch),
                            log_start_offset: p.log_start_offset,
                        }),
                        fetch_only_leader,
                        read_replica_candidates,
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

/// The topic a request names: by id from v13, by name before.
fn requested_topic<'i>(
    image: &'i MetadataImage,
    version: i16,
    topic: &msg::FetchTopic,
) -> Option<&'i TopicImage> {
    let found = if version >= TOPIC_ID_MIN_VERSION {
        image.topic_by_id(&topic.topic_id)
    } else {
        image.topic(&topic.topic)
    };
    found.map(|t| &**t)
}

/// Reads until `min_bytes` are there, an error shows, or the deadline passes.
async fn long_poll(
    ctx: &ShardContext,
    request: &FetchRequest,
    wanted: &[Wanted],
) -> Vec<Option<Result<FetchPartitionData, PartitionError>>> {
    let max_wait_ms = request.max_wait_ms.clamp(0, MAX_WAIT_MS_MAX);
    let deadline = Instant::now() + Duration::from_millis(max_wait_ms as u64);
    loop {
        let results = read_all(ctx, wanted).await;
        // As Kafka's ReplicaManager: answer at once when there is nothing to wait for (no
        // partitions, as in the fetch that closes a session when a consumer closes).
        let done = wanted.is_empty()
            || enough(request, wanted, &results)
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
                let wait_for = if req.replica.is_some() {
                    WaitFor::LogEndBeyond(req.fetch_offset)
                } else {
                    WaitFor::HighWatermarkBeyond(data.high_watermark.max(req.fetch_offset))
                };
                Some((*shard, (req.tp, wait_for)))
            })
            .collect();
        router::wait_for_append(ctx, waits, deadline).await;
    }
}

/// Whether a read is answered without waiting: it has `min_bytes`, or a partition is in error
/// (unknown topic or partition included). A diverging epoch is answered at once too: the
/// follower must truncate first. So is a preferred read replica (KIP-392): the consumer goes
/// there next.
fn enough(
    request: &FetchRequest,
    wanted: &[Wanted],
    results: &[Option<Result<FetchPartitionData, PartitionError>>],
) -> bool {
    let min_bytes = request.min_bytes.max(0) as usize;
    let bytes: usize = results
        .iter()
        .flatten()
        .flatten()
        .map(|d| d.records.len())
        .sum();
    let any_error = results.iter().flatten().any(|r| {
        r.as_ref().map_or(true, |d| {
            d.diverging_epoch.is_some() || d.preferred_read_replica.is_some()
        })
    }) || wanted.iter().any(|w| w.route.is_err());
    bytes >= min_bytes || any_error
}

async fn read_all(
    ctx: &ShardContext,
    wanted: &[Wanted],
) -> Vec<Option<Result<FetchPartitionData, PartitionError>>> {
    let routed: Vec<(ShardId, FetchPartitionRequest)> = wanted
        .iter()
        .filter_map(|w| w.route.as_ref().ok().cloned())
        .collect();
    let mut results = router::fetch(ctx, routed).await.into_iter();
    wanted
        .iter()
        .map(|w| w.route.as_ref().ok().and_then(|_| results.next()))
        .collect()
}

/// The answer, and each answered partition's quiet mark (in the answer's order) for the
/// session.
fn build_response(
    image: &MetadataImage,
    version: i16,
    request: &FetchRequest,
    wanted: &[Wanted],
    results: Vec<Option<Result<FetchPartitionData, PartitionError>>>,
) -> (FetchResponse, Vec<Option<QuietMark>>) {
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
    let mut node_endpoints = Vec::new();
    let read_committed = request.isolation_level == READ_COMMITTED;
    let mut marks = Vec::with_capacity(wanted.len());
    for (w, result) in wanted.iter().zip(results) {
        let mut mark = None;
        let mut partition = match (&w.route, result) {
            (Err(code), _) => error_partition(w.partition, *code),
            (Ok(_), None) => error_partition(w.partition, ErrorCode::UNKNOWN_SERVER_ERROR),
            (Ok(_), Some(Err(error))) => error_partition(w.partition, error.error_code()),
            (Ok(_), Some(Ok(data))) => {
                mark = data.quiet;
                let mut records = data.records;
                if returned_any && records.len() > budget {
                    records = Records::default();
                }
                budget = budget.saturating_sub(records.len());
                returned_any |= !records.is_empty();
                let (records, records_file, records_pieces) = match records {
                    Records::Memory(bytes) => (Some(bytes), None, Vec::new()),
                    Records::File(region) => (None, Some(region), Vec::new()),
                    Records::Pieces(pieces) => (None, None, pieces),
                };
                PartitionData {
                    partition_index: w.partition,
                    error_code: ErrorCode::NONE.0,
                    diverging_epoch: data.diverging_epoch.map_or_else(
                        msg::EpochEndOffset::default,
                        |d| msg::EpochEndOffset {
                            epoch: d.epoch,
                            end_offset: d.end_offset,
                        },
                    ),
                    high_watermark: data.high_watermark,
                    last_stable_offset: data.high_watermark,
                    log_start_offset: data.log_start_offset,
                    aborted_transactions: read_committed.then(Vec::new),
                    preferred_read_replica: data.preferred_read_replica.unwrap_or(-1),
                    records,
                    records_file,
                    records_pieces,
                    ..PartitionData::default()
                }
            }
        };
        // As Kafka's KafkaApis: point the client at the leader it should fetch from.
        if version >= CURRENT_LEADER_MIN_VERSION
            && partition.error_code == ErrorCode::NOT_LEADER_OR_FOLLOWER.0
        {
            let topic = request
                .topics
                .get(w.topic_index)
                .and_then(|t| requested_topic(image, version, t));
            let (leader, endpoint) = leadership::current_leader(image, topic, w.partition);
            partition.current_leader = leader;
            leadership::add_endpoint(&mut node_endpoints, endpoint);
        }
        responses[w.topic_index].partitions.push(partition);
        marks.push(mark);
    }
    let response = FetchResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.0,
        session_id: 0,
        responses,
        node_endpoints,
    };
    (response, marks)
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

#[cfg(test)]
mod tests {
    use sluice_protocol::messages::fetch::{FetchPartition, FetchTopic, LeaderIdAndEpoch};

    use super::*;
    use crate::leadership::tests::{cluster_image, single_node_image, OTHER};

    fn request(version: i16, partitions: &[i32]) -> FetchRequest {
        let image = cluster_image();
        let topic_id = image.topic("t").map(|t| t.topic_id).unwrap_or(Uuid::ZERO);
        FetchRequest {
            topics: vec![FetchTopic {
                topic: if version < TOPIC_ID_MIN_VERSION {
                    "t".to_string()
                } else {
                    String::new()
                },
                topic_id: if version >= TOPIC_ID_MIN_VERSION {
                    topic_id
                } else {
                    Uuid::ZERO
                },
                partitions: partitions
                    .iter()
                    .map(|p| FetchPartition {
                        partition: *p,
                        partition_max_bytes: 1 << 20,
                        ..FetchPartition::default()
                    })
                    .collect(),
            }],
            ..FetchRequest::default()
        }
    }

    fn codes(wanted: &[Wanted]) -> Vec<ErrorCode> {
        wanted
            .iter()
            .map(|w| {
                w.route
                    .as_ref()
                    .map_or_else(|code| *code, |_| ErrorCode::NONE)
            })
            .collect()
    }

    #[test]
    fn only_partitions_led_here_are_read() {
        let image = cluster_image();
        // A consumer without client metadata (before v11), and a follower at any version.
        let cases = [
            (4, None),
            (10, None),
            (12, Some((OTHER, 1))),
            (18, Some((OTHER, 1))),
        ];
        for (version, replica) in cases {
            let wanted = resolve(
                &image,
                version,
                &request(version, &[0, 1, 2, 3, 4]),
                1 << 20,
                replica,
                None,
            );
            assert_eq!(
                codes(&wanted),
                vec![
                    ErrorCode::NONE,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                ],
                "version {version}"
            );
            assert!(wanted
                .iter()
                .filter_map(|w| w.route.as_ref().ok())
                .all(|(_, r)| r.fetch_only_leader));
        }
    }

    /// KIP-392: from v11 a consumer's fetch may be served by any replica hosted here (Kafka's
    /// `fetchOnlyLeader` is false with client metadata); the partitions with no replica here
    /// are still refused.
    #[test]
    fn from_v11_a_consumer_reads_any_replica_hosted_here() {
        let image = cluster_image();
        for version in [11, 13, 18] {
            let wanted = resolve(
                &image,
                version,
                &request(version, &[0, 1, 2, 3, 4]),
                1 << 20,
                None,
                Some(ReplicaSelectorClass::RackAware),
            );
            assert_eq!(
                codes(&wanted),
                vec![
                    ErrorCode::NONE,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER,
                    // Its replica is here (a follower of no leader yet): the shard decides.
                    ErrorCode::NONE,
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                ],
                "version {version}"
            );
            assert!(wanted
                .iter()
                .filter_map(|w| w.route.as_ref().ok())
                .all(|(_, r)| !r.fetch_only_leader && r.read_replica_candidates.is_empty()));
        }
    }

    #[test]
    fn an_unknown_topic_id_is_unknown_topic_id() {
        let image = cluster_image();
        for version in [13, 18] {
            let mut req = request(version, &[0, 1]);
            req.topics[0].topic_id = Uuid::from_u128(0xdead);
            // A follower's high watermark changes nothing for the read.
            req.topics[0].partitions[0].high_watermark = 3;
            let wanted = resolve(&image, version, &req, 1 << 20, None, None);
            assert_eq!(
                codes(&wanted),
                vec![ErrorCode::UNKNOWN_TOPIC_ID, ErrorCode::UNKNOWN_TOPIC_ID],
                "version {version}"
            );
        }
        // By name before v13: the other error.
        let mut req = request(12, &[0]);
        req.topics[0].topic = "nope".to_string();
        assert_eq!(
            codes(&resolve(&image, 12, &req, 1 << 20, None, None)),
            vec![ErrorCode::UNKNOWN_TOPIC_OR_PARTITION]
        );
    }

    #[test]
    fn single_node_reads_every_partition() {
        let image = single_node_image();
        let mut req = request(12, &[0, 1]);
        req.topics[0].partitions[1].partition_max_bytes = -1;
        let wanted = resolve(&image, 12, &req, 1 << 20, None, None);
        assert_eq!(
            codes(&wanted),
            vec![ErrorCode::NONE, ErrorCode::INVALID_FETCH_SIZE]
        );
    }

    /// Builds the answer for partitions that all failed routing (nothing was read).
    fn answer(version: i16, partitions: &[i32]) -> FetchResponse {
        let image = cluster_image();
        let req = request(version, partitions);
        let wanted = resolve(&image, version, &req, 1 << 20, None, None);
        let results = wanted.iter().map(|_| None).collect();
        build_response(&image, version, &req, &wanted, results).0
    }

    #[test]
    fn not_leader_answers_name_the_leader_from_v16() {
        let response = answer(16, &[1, 2]);
        let partitions = &response.responses[0].partitions;
        assert_eq!(
            partitions[0].error_code,
            ErrorCode::NOT_LEADER_OR_FOLLOWER.0
        );
        assert_eq!(
            partitions[0].current_leader,
            LeaderIdAndEpoch {
                leader_id: OTHER,
                leader_epoch: 5
            }
        );
        assert_eq!(
            partitions[1].current_leader,
            LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: 5
            }
        );
        let endpoints: Vec<i32> = response.node_endpoints.iter().map(|e| e.node_id).collect();
        assert_eq!(endpoints, vec![OTHER]);

        let old = answer(15, &[1, 2]);
        assert!(old.node_endpoints.is_empty());
        assert!(old.responses[0]
            .partitions
            .iter()
            .all(|p| p.error_code == ErrorCode::NOT_LEADER_OR_FOLLOWER.0
                && p.current_leader == LeaderIdAndEpoch::default()));
    }
}
