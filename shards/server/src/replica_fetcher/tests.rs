//! The fetcher without sockets: the requests it builds, what each answer makes it do, which
//! partitions wait and until when.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};
use sluice_protocol::codec::{Decoder, Encoder};
use sluice_protocol::messages::fetch::{
    EpochEndOffset as WireEpochEndOffset, FetchableTopicResponse, PartitionData,
};
use sluice_protocol::record_batch::RecordBatchBuilder;
use sluice_protocol::Uuid;

use super::*;

const LEADER: i32 = 2;
const LOCAL: i32 = 1;
const BROKER_EPOCH: i64 = 77;

fn config() -> FetcherConfig {
    FetcherConfig {
        replica_id: LOCAL,
        max_wait_ms: 500,
        min_bytes: 1,
        response_max_bytes: 10_485_760,
        partition_max_bytes: 1_048_576,
        backoff: Duration::from_millis(1000),
    }
}

fn tp(id: u128, partition: i32) -> TopicIdPartition {
    TopicIdPartition {
        topic_id: Uuid::from_u128(id),
        partition,
    }
}

/// Follower states as the partitions would report them.
#[derive(Default)]
struct Followers(HashMap<TopicIdPartition, FollowerFetchState>);

impl Followers {
    fn set(&mut self, tp: TopicIdPartition, fetch_offset: i64, epoch: i32, last: Option<i32>) {
        self.0.insert(
            tp,
            FollowerFetchState {
                leader_id: LEADER,
                current_leader_epoch: epoch,
                fetch_offset,
                last_fetched_epoch: last,
                log_start_offset: 0,
            },
        );
    }

    fn lookup(&self) -> impl Fn(&TopicIdPartition) -> Option<FollowerFetchState> + '_ {
        |tp| self.0.get(tp).copied()
    }
}

/// A fetcher of `LEADER` with `tps` added at epoch 5, each following at offset 10.
fn fetcher(tps: &[TopicIdPartition]) -> (FetcherState, Followers) {
    let mut state = FetcherState::new(LEADER, config());
    let mut followers = Followers::default();
    for tp in tps {
        state.add_partition(*tp, Rc::from(format!("topic-{}", tp.topic_id)), 5);
        followers.set(*tp, 10, 5, Some(4));
    }
    (state, followers)
}

/// The partitions a request names, in order.
fn named(request: &FetchRequest) -> Vec<TopicIdPartition> {
    request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| TopicIdPartition {
                topic_id: t.topic_id,
                partition: p.partition,
            })
        })
        .collect()
}

/// A response answering `parts` (partition, answer), passed through the v17 codec as the
/// fetcher receives it.
fn response(parts: Vec<(TopicIdPartition, PartitionData)>) -> FetchResponse {
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    for (tp, mut data) in parts {
        data.partition_index = tp.partition;
        match topics.last_mut() {
            Some(t) if t.topic_id == tp.topic_id => t.partitions.push(data),
            _ => topics.push(FetchableTopicResponse {
                topic: String::new(),
                topic_id: tp.topic_id,
                partitions: vec![data],
            }),
        }
    }
    let response = FetchResponse {
        responses: topics,
        ..FetchResponse::default()
    };
    let mut e = Encoder::with_capacity(256);
    response.encode(&mut e, REPLICA_FETCH_VERSION);
    let mut d = Decoder::new(e.into_inner().freeze());
    FetchResponse::decode(&mut d, REPLICA_FETCH_VERSION).expect("a v17 response decodes")
}

fn data(error: ErrorCode) -> PartitionData {
    PartitionData {
        error_code: error.0,
        high_watermark: 12,
        log_start_offset: 0,
        ..PartitionData::default()
    }
}

fn batch(base_offset: i64, records: usize) -> Bytes {
    RecordBatchBuilder::new(1_000)
        .base_offset(base_offset)
        .partition_leader_epoch(5)
        .records(records, b"value")
        .build()
}

fn concat(parts: &[&[u8]]) -> Bytes {
    let mut out = BytesMut::new();
    for p in parts {
        out.extend_from_slice(p);
    }
    out.freeze()
}

#[test]
fn the_request_carries_the_follower_state_of_each_partition() {
    let (mut state, mut followers) = fetcher(&[tp(2, 0), tp(1, 1), tp(1, 0)]);
    followers.set(tp(1, 1), 42, 6, None);
    let now = Instant::now();
    let request = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .expect("three partitions are due");
    assert_eq!(
        request.replica_state,
        ReplicaState {
            replica_id: LOCAL,
            replica_epoch: BROKER_EPOCH
        }
    );
    assert_eq!(request.effective_replica_id(REPLICA_FETCH_VERSION), LOCAL);
    assert_eq!(
        (
            request.max_wait_ms,
            request.min_bytes,
            request.max_bytes,
            request.isolation_level
        ),
        (500, 1, 10_485_760, 0)
    );
    // The first request is full and asks for a fetch session (epoch 0).
    assert_eq!((request.session_id, request.session_epoch), (0, 0));
    // Grouped by topic id, in partition order.
    assert_eq!(request.topics.len(), 2);
    assert_eq!(named(&request), vec![tp(1, 0), tp(1, 1), tp(2, 0)]);
    let p = &request.topics[0].partitions[1];
    assert_eq!(
        (
            p.current_leader_epoch,
            p.fetch_offset,
            p.last_fetched_epoch,
            p.log_start_offset,
            p.partition_max_bytes
        ),
        (6, 42, -1, 0, 1_048_576)
    );
    let p = &request.topics[0].partitions[0];
    assert_eq!((p.fetch_offset, p.last_fetched_epoch), (10, 4));

    // Through the v17 codec: topics by id, the replica state as tag 1, no body replica id.
    let mut e = Encoder::with_capacity(256);
    request.encode(&mut e, REPLICA_FETCH_VERSION);
    let mut d = Decoder::new(e.into_inner().freeze());
    let decoded = FetchRequest::decode(&mut d, REPLICA_FETCH_VERSION).unwrap();
    assert_eq!(decoded.effective_replica_id(REPLICA_FETCH_VERSION), LOCAL);
    assert_eq!(decoded.replica_state.replica_epoch, BROKER_EPOCH);
    assert_eq!(decoded.topics, request.topics);
}

#[test]
fn nothing_to_fetch_builds_no_request() {
    let (mut state, mut followers) = fetcher(&[]);
    let now = Instant::now();
    assert!(state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .is_none());
    // A partition whose Partition is not (yet) a follower, or follows another leader, is left
    // out until it is.
    state.add_partition(tp(1, 0), Rc::from("a"), 5);
    assert!(state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .is_none());
    followers.set(tp(1, 0), 0, 5, None);
    followers.0.get_mut(&tp(1, 0)).unwrap().leader_id = 3;
    assert!(state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .is_none());
    followers.set(tp(1, 0), 0, 5, None);
    let request = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!(named(&request), vec![tp(1, 0)]);
}

#[test]
fn records_are_appended_whole_batches_only_with_the_leader_offsets() {
    let (mut state, followers) = fetcher(&[tp(1, 0), tp(1, 1)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    let first = batch(10, 2);
    let second = batch(12, 3);
    let cut = concat(&[&first, &second[..second.len() - 7]]);
    let mut with_records = data(ErrorCode::NONE);
    with_records.records = Some(cut);
    with_records.high_watermark = 11;
    with_records.log_start_offset = 3;
    // An empty answer still moves the high watermark.
    let empty = data(ErrorCode::NONE);
    let actions = state.handle_response(
        now,
        response(vec![(tp(1, 0), with_records), (tp(1, 1), empty)]),
        followers.lookup(),
    );
    assert_eq!(
        actions,
        vec![
            PartitionAction::Append {
                tp: tp(1, 0),
                fetch_offset: 10,
                records: first,
                high_watermark: 11,
                log_start_offset: 3,
            },
            PartitionAction::Append {
                tp: tp(1, 1),
                fetch_offset: 10,
                records: Bytes::new(),
                high_watermark: 12,
                log_start_offset: 0,
            },
        ]
    );
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
}

#[test]
fn a_diverging_epoch_truncates_instead_of_appending() {
    let (mut state, followers) = fetcher(&[tp(1, 0)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    let mut answer = data(ErrorCode::NONE);
    answer.diverging_epoch = WireEpochEndOffset {
        epoch: 3,
        end_offset: 7,
    };
    answer.records = Some(batch(10, 1));
    let actions =
        state.handle_response(now, response(vec![(tp(1, 0), answer)]), followers.lookup());
    assert_eq!(
        actions,
        vec![PartitionAction::TruncateOnDivergingEpoch {
            tp: tp(1, 0),
            diverging: EpochEndOffset {
                epoch: 3,
                end_offset: 7
            },
        }]
    );
}

#[test]
fn out_of_range_asks_for_the_leader_offsets() {
    let (mut state, followers) = fetcher(&[tp(1, 0)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    let actions = state.handle_response(
        now,
        response(vec![(tp(1, 0), data(ErrorCode::OFFSET_OUT_OF_RANGE))]),
        followers.lookup(),
    );
    assert_eq!(
        actions,
        vec![PartitionAction::OutOfRange {
            tp: tp(1, 0),
            topic: Rc::from(format!("topic-{}", tp(1, 0).topic_id)),
            current_leader_epoch: 5,
        }]
    );
    // It stays in the fetch: the truncation moves its fetch offset.
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
}

#[test]
fn a_fenced_epoch_waits_for_metadata_with_another_epoch() {
    let (mut state, followers) = fetcher(&[tp(1, 0), tp(1, 1)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    let actions = state.handle_response(
        now,
        response(vec![(tp(1, 0), data(ErrorCode::FENCED_LEADER_EPOCH))]),
        followers.lookup(),
    );
    assert!(actions.is_empty());
    assert_eq!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Fenced { leader_epoch: 5 })
    );
    // Not fetched, however long it waits: no timer brings it back.
    assert_eq!(state.next_wakeup(), None);
    let later = now + Duration::from_secs(3600);
    let request = state
        .build_request(later, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!(named(&request), vec![tp(1, 1)]);
    // An image with the same epoch changes nothing; a new epoch restarts it.
    state.add_partition(tp(1, 0), Rc::from("a"), 5);
    assert_eq!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Fenced { leader_epoch: 5 })
    );
    state.add_partition(tp(1, 0), Rc::from("a"), 6);
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
}

/// Whether the leader answering `code` means its metadata and ours disagree for now, so that
/// the first retry comes after 25 ms instead of the whole backoff.
fn metadata_lag(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::NOT_LEADER_OR_FOLLOWER
            | ErrorCode::UNKNOWN_LEADER_EPOCH
            | ErrorCode::UNKNOWN_TOPIC_ID
            | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    )
}

#[test]
fn leadership_and_topic_errors_back_off() {
    for code in [
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::UNKNOWN_LEADER_EPOCH,
        ErrorCode::UNKNOWN_TOPIC_ID,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode::KAFKA_STORAGE_ERROR,
        ErrorCode::UNKNOWN_SERVER_ERROR,
    ] {
        let (mut state, followers) = fetcher(&[tp(1, 0), tp(1, 1)]);
        let now = Instant::now();
        state.build_request(now, BROKER_EPOCH, followers.lookup());
        let actions = state.handle_response(
            now,
            response(vec![
                (tp(1, 0), data(code)),
                (tp(1, 1), data(ErrorCode::NONE)),
            ]),
            followers.lookup(),
        );
        assert_eq!(
            actions.len(),
            1,
            "{code:?}: only the healthy partition acts"
        );
        let pause_ms = if metadata_lag(code) { 25 } else { 1000 };
        let until = now + Duration::from_millis(pause_ms);
        assert_eq!(
            state.status(&tp(1, 0)),
            Some(PartitionStatus::Delayed { until }),
            "{code:?}"
        );
        assert_eq!(state.next_wakeup(), Some(until));
        let request = state
            .build_request(
                until - Duration::from_millis(1),
                BROKER_EPOCH,
                followers.lookup(),
            )
            .unwrap();
        assert_eq!(
            named(&request),
            vec![tp(1, 1)],
            "{code:?}: still backing off"
        );
        let request = state
            .build_request(until, BROKER_EPOCH, followers.lookup())
            .unwrap();
        assert_eq!(
            named(&request),
            vec![tp(1, 0), tp(1, 1)],
            "{code:?}: due again"
        );
        assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
    }
}

#[test]
fn a_failed_request_delays_every_partition_it_named() {
    let (mut state, followers) = fetcher(&[tp(1, 0), tp(2, 0)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    // Added while the request was in flight: not part of it, not delayed.
    let mut followers = followers;
    state.add_partition(tp(3, 0), Rc::from("c"), 5);
    followers.set(tp(3, 0), 0, 5, None);
    state.on_request_failed(now);
    let until = now + Duration::from_millis(1000);
    assert_eq!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Delayed { until })
    );
    assert_eq!(
        state.status(&tp(2, 0)),
        Some(PartitionStatus::Delayed { until })
    );
    assert_eq!(state.status(&tp(3, 0)), Some(PartitionStatus::Fetching));
    let request = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!(named(&request), vec![tp(3, 0)]);

    // A response failed as a whole (top-level error) does the same.
    let failed = FetchResponse {
        error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
        ..FetchResponse::default()
    };
    assert!(state
        .handle_response(now, failed, followers.lookup())
        .is_empty());
    assert_eq!(
        state.status(&tp(3, 0)),
        Some(PartitionStatus::Delayed { until })
    );
}

#[test]
fn answers_for_partitions_that_moved_since_the_request_are_ignored() {
    let (mut state, mut followers) = fetcher(&[tp(1, 0), tp(1, 1), tp(1, 2)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    // tp(1,0) left this fetcher (its leader changed), tp(1,1) was truncated meanwhile,
    // tp(1,3) was added after the request and is answered although never asked.
    state.remove_partition(&tp(1, 0));
    followers.set(tp(1, 1), 4, 5, Some(4));
    state.add_partition(tp(1, 3), Rc::from("a"), 5);
    followers.set(tp(1, 3), 0, 5, None);
    let mut with_records = data(ErrorCode::NONE);
    with_records.records = Some(batch(10, 1));
    let actions = state.handle_response(
        now,
        response(vec![
            (tp(1, 0), with_records.clone()),
            (tp(1, 1), with_records.clone()),
            (tp(1, 2), with_records.clone()),
            (tp(1, 3), with_records),
        ]),
        followers.lookup(),
    );
    let acted: Vec<TopicIdPartition> = actions
        .iter()
        .map(|a| match a {
            PartitionAction::Append { tp, .. } => *tp,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(acted, vec![tp(1, 2)]);
    // The next request names what the fetcher holds now, from the current states.
    let request = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!(named(&request), vec![tp(1, 1), tp(1, 2), tp(1, 3)]);
    assert_eq!(request.topics[0].partitions[0].fetch_offset, 4);
}

#[test]
fn an_answer_after_a_leader_epoch_change_is_ignored() {
    let (mut state, mut followers) = fetcher(&[tp(1, 0)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    followers.set(tp(1, 0), 10, 6, Some(4));
    let actions = state.handle_response(
        now,
        response(vec![(tp(1, 0), data(ErrorCode::FENCED_LEADER_EPOCH))]),
        followers.lookup(),
    );
    assert!(actions.is_empty());
    // The fence was for epoch 5; the partition is at 6 now and keeps fetching.
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
}

#[test]
fn a_failed_log_stops_fetching_until_a_new_leader_epoch() {
    let (mut state, followers) = fetcher(&[tp(1, 0), tp(1, 1)]);
    let now = Instant::now();
    state.fail(&tp(1, 0));
    assert_eq!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Failed { leader_epoch: 5 })
    );
    let request = state
        .build_request(
            now + Duration::from_secs(3600),
            BROKER_EPOCH,
            followers.lookup(),
        )
        .unwrap();
    assert_eq!(named(&request), vec![tp(1, 1)]);
    state.add_partition(tp(1, 0), Rc::from("a"), 5);
    assert!(matches!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Failed { .. })
    ));
    state.add_partition(tp(1, 0), Rc::from("a"), 7);
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
    assert!(state.remove_partition(&tp(1, 0)));
    assert!(!state.remove_partition(&tp(1, 0)));
    state.remove_partition(&tp(1, 1));
    assert!(state.is_empty());
}

#[test]
fn whole_batches_cuts_a_partial_tail() {
    let a = batch(0, 3);
    let b = batch(3, 1);
    let both = concat(&[&a, &b]);
    assert_eq!(whole_batches(both.clone()), both);
    for cut in [1, 11, 12, b.len() - 1] {
        let partial = concat(&[&a, &b[..cut]]);
        assert_eq!(whole_batches(partial), a, "cut at {cut}");
    }
    assert_eq!(whole_batches(Bytes::new()), Bytes::new());
    assert_eq!(whole_batches(a.slice(..20)), Bytes::new());
    // A negative length is not a batch.
    let mut bad = BytesMut::from(&a[..]);
    bad[8..12].copy_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(whole_batches(bad.freeze()), Bytes::new());
}

#[test]
fn connection_failures_warn_once_then_once_a_minute() {
    let mut log = FailureLog::default();
    let start = Instant::now();
    assert!(log.failed(start));
    for s in 1..60 {
        assert!(!log.failed(start + Duration::from_secs(s)), "second {s}");
    }
    assert!(log.failed(start + Duration::from_secs(60)));
    assert!(!log.failed(start + Duration::from_secs(61)));
    assert_eq!(log.succeeded(), Some(62));
    assert_eq!(log.succeeded(), None);
    // Failing again after a recovery warns at once.
    assert!(log.failed(start + Duration::from_secs(62)));
}

/// Brokers and partitions are built in these two helpers only.
fn broker(node_id: i32) -> sluice_shard::BrokerImage {
    sluice_shard::BrokerImage {
        node_id,
        host: "127.0.0.1".to_string(),
        port: 9000 + node_id,
        rack: None,
        broker_epoch: 100 + i64::from(node_id),
    }
}

fn partition_image(partition: i32, leader: i32, shard: u16) -> sluice_shard::PartitionImage {
    sluice_shard::PartitionImage {
        partition,
        leader,
        leader_epoch: 10 + partition,
        partition_epoch: 20 + partition,
        replicas: vec![1, 2, 3],
        isr: vec![1, 2, 3],
        eligible_leader_replicas: Vec::new(),
        last_known_elr: Vec::new(),
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        shard: sluice_shard::ShardId(shard),
    }
}

#[test]
fn the_image_says_which_leader_each_hosted_partition_is_fetched_from() {
    let mut image = MetadataImage {
        local_node_id: LOCAL,
        brokers: vec![broker(1), broker(2), broker(3)],
        ..MetadataImage::default()
    };
    // Shard 0 hosts partitions 0-5; partition 6 is on shard 1.
    let leaders = [2, 3, 2, LOCAL, -1, 4, 2];
    let shards = [0, 0, 0, 0, 0, 0, 1];
    image.put_topic(sluice_shard::TopicImage {
        name: "t".to_string(),
        topic_id: Uuid::from_u128(7),
        partitions: leaders
            .iter()
            .zip(shards)
            .enumerate()
            .map(|(i, (leader, shard))| partition_image(i as i32, *leader, shard))
            .collect(),
        configs: Default::default(),
    });
    let all_open = |_: &TopicIdPartition| Some(Rc::from("t"));
    let plan = partitions_to_fetch(&image, sluice_shard::ShardId(0), all_open);
    let summary: Vec<(i32, Vec<(i32, i32)>)> = plan
        .iter()
        .map(|(leader, ps)| {
            (
                *leader,
                ps.iter().map(|(tp, _, e)| (tp.partition, *e)).collect(),
            )
        })
        .collect();
    // Led here (3), by nobody (4), by a broker that is not live (5), or on another shard (6):
    // not fetched.
    assert_eq!(
        summary,
        vec![(2, vec![(0, 10), (2, 12)]), (3, vec![(1, 11)])]
    );

    // A partition not open on this shard (its log failed to open) is not fetched either.
    let some_open = |tp: &TopicIdPartition| (tp.partition != 2).then(|| Rc::from("t"));
    let plan = partitions_to_fetch(&image, sluice_shard::ShardId(0), some_open);
    assert_eq!(plan[&2].len(), 1);

    // Broker 3 fenced (not live): its partitions wait for a new leader.
    image.brokers.retain(|b| b.node_id != 3);
    let plan = partitions_to_fetch(&image, sluice_shard::ShardId(0), all_open);
    assert_eq!(plan.keys().copied().collect::<Vec<_>>(), vec![2]);
}

// The fetcher's task over real sockets, with leaders that are down, hang up, or never answer:
// it retries after the backoff (never in a loop), keeps one request in flight, and stops at
// once when told.

/// A follower's side for the task tests: one partition, following `LEADER` from offset 0.
/// Counts the requests the task builds (each asks for the partition's state once). No leader
/// here ever answers a fetch, so nothing is appended or truncated.
struct IdleFollower {
    shutdown: LocalSignal,
    requests: Cell<u32>,
}

impl IdleFollower {
    fn new() -> Rc<IdleFollower> {
        Rc::new(IdleFollower {
            shutdown: LocalSignal::new(),
            requests: Cell::new(0),
        })
    }
}

impl FollowerLogs for IdleFollower {
    fn shutdown_signal(&self) -> &LocalSignal {
        &self.shutdown
    }

    fn fetch_state(&self, _: &TopicIdPartition) -> Option<FollowerFetchState> {
        self.requests.set(self.requests.get() + 1);
        Some(FollowerFetchState {
            leader_id: LEADER,
            current_leader_epoch: 5,
            fetch_offset: 0,
            last_fetched_epoch: None,
            log_start_offset: 0,
        })
    }

    fn topic(&self, _: &TopicIdPartition) -> Rc<str> {
        Rc::from("t")
    }

    async fn append(
        &self,
        _: &TopicIdPartition,
        _: &[u8],
        _: i64,
        _: i64,
    ) -> Result<(), ReplicaError> {
        unreachable!("no leader in these tests answers a fetch")
    }

    async fn truncate_on_diverging_epoch(
        &self,
        _: &TopicIdPartition,
        _: EpochEndOffset,
    ) -> Result<(), ReplicaError> {
        unreachable!("no leader in these tests answers a fetch")
    }

    async fn truncate_on_out_of_range(
        &self,
        _: &TopicIdPartition,
        _: i64,
        _: i64,
    ) -> Result<(), ReplicaError> {
        unreachable!("no leader in these tests answers a fetch")
    }
}

fn task_config(backoff_ms: u64) -> FetcherConfig {
    FetcherConfig {
        backoff: Duration::from_millis(backoff_ms),
        ..config()
    }
}

/// A fetcher of `LEADER` at 127.0.0.1:`port`, with partition tp(1, 0) unless `empty`.
fn task_fetcher(port: u16, config: FetcherConfig, empty: bool) -> Rc<Fetcher> {
    let fetcher = Rc::new(Fetcher::new(
        LEADER,
        ("127.0.0.1".to_string(), port),
        BROKER_EPOCH,
        config,
    ));
    if !empty {
        fetcher
            .state
            .borrow_mut()
            .add_partition(tp(1, 0), Rc::from("t"), 5);
    }
    fetcher
}

fn spawn_task(
    fetcher: &Rc<Fetcher>,
    logs: &Rc<IdleFollower>,
    config: FetcherConfig,
) -> glommio::Task<()> {
    glommio::spawn_local(run_fetcher(
        fetcher.clone(),
        logs.clone(),
        config,
        "sluice-replica-fetcher-1-0".to_string(),
        1 << 20,
    ))
}

/// Accepts connections on 127.0.0.1 until the test ends; `hold` keeps them open (a leader
/// that never answers), otherwise each is closed at once (a leader that hangs up, as one does
/// on a request it cannot parse). Returns the port and the count of connections accepted.
fn leader_listener(hold: bool) -> (u16, Rc<Cell<u32>>) {
    let listener = glommio::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Rc::new(Cell::new(0));
    let count = accepted.clone();
    glommio::spawn_local(async move {
        let mut held = Vec::new();
        while let Ok(stream) = listener.accept().await {
            count.set(count.get() + 1);
            if hold {
                held.push(stream);
            }
        }
    })
    .detach();
    (port, accepted)
}

fn on_glommio<Fut: std::future::Future<Output = ()> + 'static>(
    test: impl FnOnce() -> Fut + Send + 'static,
) {
    glommio::LocalExecutorBuilder::default()
        .spawn(test)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_leader_that_is_down_is_retried_after_the_backoff_not_in_a_loop() {
    on_glommio(|| async {
        // A port nothing listens on: every connect is refused at once.
        let port = {
            let probe = glommio::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let config = task_config(100);
        let fetcher = task_fetcher(port, config, false);
        let logs = IdleFollower::new();
        let task = spawn_task(&fetcher, &logs, config);
        glommio::timer::sleep(Duration::from_secs(1)).await;
        fetcher.stop.trigger();
        let stopping = Instant::now();
        task.await;
        assert!(stopping.elapsed() < Duration::from_millis(500));
        // One attempt per 100 ms backoff: about 10 in a second (a loop would make thousands).
        let attempts = logs.requests.get();
        assert!((3..=15).contains(&attempts), "{attempts} attempts in 1 s");
    });
}

#[test]
fn a_zero_backoff_still_waits_before_redialling() {
    let (mut state, followers) = fetcher(&[tp(1, 0)]);
    state.config.backoff = Duration::ZERO;
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    state.on_request_failed(now);
    let until = now + RECONNECT_BACKOFF_MIN;
    assert_eq!(state.next_wakeup(), Some(until));
    // An error the leader answers is retried with the next request, as Kafka does with 0.
    let request = state.build_request(until, BROKER_EPOCH, followers.lookup());
    assert!(request.is_some());
    state.handle_response(
        until,
        response(vec![(tp(1, 0), data(ErrorCode::NOT_LEADER_OR_FOLLOWER))]),
        followers.lookup(),
    );
    assert_eq!(state.next_wakeup(), Some(until));
}

#[test]
fn a_leader_that_hangs_up_is_reconnected_after_the_backoff() {
    on_glommio(|| async {
        let (port, accepted) = leader_listener(false);
        let config = task_config(100);
        let fetcher = task_fetcher(port, config, false);
        let logs = IdleFollower::new();
        let task = spawn_task(&fetcher, &logs, config);
        glommio::timer::sleep(Duration::from_secs(1)).await;
        logs.shutdown.trigger();
        task.await;
        let connections = accepted.get();
        assert!(
            (3..=15).contains(&connections),
            "{connections} connections in 1 s"
        );
        assert_eq!(
            logs.requests.get(),
            connections,
            "one request per connection"
        );
    });
}

#[test]
fn one_request_in_flight_and_a_stop_does_not_wait_for_its_answer() {
    on_glommio(|| async {
        let (port, accepted) = leader_listener(true);
        let config = task_config(100);
        let fetcher = task_fetcher(port, config, false);
        let logs = IdleFollower::new();
        let task = spawn_task(&fetcher, &logs, config);
        glommio::timer::sleep(Duration::from_millis(500)).await;
        // The leader holds the request (its long poll): nothing else is sent meanwhile.
        assert_eq!((accepted.get(), logs.requests.get()), (1, 1));
        logs.shutdown.trigger();
        let stopping = Instant::now();
        task.await;
        // Not the request timeout (30 s and more): the shutdown ends the wait.
        assert!(stopping.elapsed() < Duration::from_millis(500));
    });
}

#[test]
fn partitions_added_to_an_idle_fetcher_are_fetched_at_once() {
    on_glommio(|| async {
        let (port, accepted) = leader_listener(true);
        // With nothing to fetch the task sleeps up to the backoff: 10 s here.
        let config = task_config(10_000);
        let fetcher = task_fetcher(port, config, true);
        let logs = IdleFollower::new();
        let task = spawn_task(&fetcher, &logs, config);
        glommio::timer::sleep(Duration::from_millis(200)).await;
        assert_eq!(accepted.get(), 0, "nothing to fetch, no connection");
        fetcher
            .state
            .borrow_mut()
            .add_partition(tp(1, 0), Rc::from("t"), 5);
        fetcher.changed();
        let added = Instant::now();
        while accepted.get() == 0 && added.elapsed() < Duration::from_secs(5) {
            glommio::timer::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(accepted.get(), 1);
        assert!(
            added.elapsed() < Duration::from_secs(1),
            "{:?}",
            added.elapsed()
        );
        fetcher.stop.trigger();
        task.await;
    });
}

/// A leader that keeps answering that its metadata disagrees is asked again after 25 ms, then
/// twice as long each time up to `replica.fetch.backoff.ms`; a good answer starts over.
#[test]
fn metadata_lag_retries_double_up_to_the_backoff_and_reset() {
    let (mut state, followers) = fetcher(&[tp(1, 0)]);
    let mut now = Instant::now();
    let mut pauses = Vec::new();
    for _ in 0..8 {
        state
            .build_request(now, BROKER_EPOCH, followers.lookup())
            .expect("the partition is due");
        state.handle_response(
            now,
            response(vec![(tp(1, 0), data(ErrorCode::UNKNOWN_LEADER_EPOCH))]),
            followers.lookup(),
        );
        let Some(PartitionStatus::Delayed { until }) = state.status(&tp(1, 0)) else {
            panic!("not delayed: {:?}", state.status(&tp(1, 0)));
        };
        pauses.push((until - now).as_millis() as u64);
        now = until;
    }
    assert_eq!(pauses, [25, 50, 100, 200, 400, 800, 1000, 1000]);
    state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .expect("due");
    state.handle_response(
        now,
        response(vec![(tp(1, 0), data(ErrorCode::NONE))]),
        followers.lookup(),
    );
    state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .expect("due");
    state.handle_response(
        now,
        response(vec![(tp(1, 0), data(ErrorCode::NOT_LEADER_OR_FOLLOWER))]),
        followers.lookup(),
    );
    assert_eq!(
        state.status(&tp(1, 0)),
        Some(PartitionStatus::Delayed {
            until: now + Duration::from_millis(25)
        }),
        "a good answer starts the doubling over"
    );
}

/// A response in session `session_id` answering `parts`.
fn session_response(
    session_id: i32,
    parts: Vec<(TopicIdPartition, PartitionData)>,
) -> FetchResponse {
    let mut r = response(parts);
    r.session_id = session_id;
    r
}

fn forgotten(request: &FetchRequest) -> Vec<TopicIdPartition> {
    request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| TopicIdPartition {
                topic_id: t.topic_id,
                partition: *p,
            })
        })
        .collect()
}

#[test]
fn a_session_names_only_what_changed_and_forgets_what_left() {
    let (mut state, mut followers) = fetcher(&[tp(1, 0), tp(1, 1), tp(2, 0)]);
    let now = Instant::now();
    let full = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((full.session_id, full.session_epoch), (0, 0));
    assert_eq!(named(&full).len(), 3);
    // The leader opens session 42; one partition got records.
    let actions = state.handle_response(
        now,
        session_response(
            42,
            vec![(
                tp(1, 1),
                PartitionData {
                    records: Some(batch(10, 2)),
                    ..data(ErrorCode::NONE)
                },
            )],
        ),
        followers.lookup(),
    );
    assert_eq!(actions.len(), 1);
    assert_eq!(state.session_id(), 42);
    // The append moved tp(1, 1) to 12: only it is named, in epoch 1.
    followers.set(tp(1, 1), 12, 5, Some(5));
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 1));
    assert_eq!(named(&next), vec![tp(1, 1)]);
    assert_eq!(next.topics[0].partitions[0].fetch_offset, 12);
    assert!(forgotten(&next).is_empty());
    // An empty answer (nothing new): the session goes on, nothing changed, nothing named.
    state.handle_response(now, session_response(42, vec![]), followers.lookup());
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 2));
    assert!(next.topics.is_empty());
    // A partition backs off after an error: the session forgets it; it comes back as added.
    state.handle_response(
        now,
        session_response(
            42,
            vec![(tp(2, 0), data(ErrorCode::NOT_LEADER_OR_FOLLOWER))],
        ),
        followers.lookup(),
    );
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 3));
    assert_eq!(forgotten(&next), vec![tp(2, 0)]);
    state.handle_response(now, session_response(42, vec![]), followers.lookup());
    let later = now + Duration::from_millis(1001);
    let next = state
        .build_request(later, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 4));
    assert_eq!(named(&next), vec![tp(2, 0)]);
    assert!(forgotten(&next).is_empty());
}

#[test]
fn session_errors_make_the_next_fetch_full_without_backoff() {
    let (mut state, followers) = fetcher(&[tp(1, 0), tp(1, 1)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    state.handle_response(now, session_response(42, vec![]), followers.lookup());
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 1));
    // INVALID_FETCH_SESSION_EPOCH: full again, closing session 42; no partition waits.
    let mut error = session_response(0, vec![]);
    error.error_code = ErrorCode::INVALID_FETCH_SESSION_EPOCH.0;
    assert!(state
        .handle_response(now, error.clone(), followers.lookup())
        .is_empty());
    assert_eq!(state.status(&tp(1, 0)), Some(PartitionStatus::Fetching));
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 0));
    assert_eq!(named(&next).len(), 2);
    // The leader opens session 43; then loses it: FETCH_SESSION_ID_NOT_FOUND starts anew.
    state.handle_response(now, session_response(43, vec![]), followers.lookup());
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    error.error_code = ErrorCode::FETCH_SESSION_ID_NOT_FOUND.0;
    state.handle_response(now, error, followers.lookup());
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (0, 0));
    assert_eq!(named(&next).len(), 2);
    // A leader that opens no session (its cache is full): every request stays full.
    state.handle_response(now, session_response(0, vec![]), followers.lookup());
    let next = state
        .build_request(now, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (0, 0));
    assert_eq!(named(&next).len(), 2);
}

#[test]
fn a_lost_connection_makes_the_next_fetch_full() {
    let (mut state, followers) = fetcher(&[tp(1, 0)]);
    let now = Instant::now();
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    state.handle_response(now, session_response(42, vec![]), followers.lookup());
    state.build_request(now, BROKER_EPOCH, followers.lookup());
    state.on_request_failed(now);
    let later = now + Duration::from_millis(1001);
    let next = state
        .build_request(later, BROKER_EPOCH, followers.lookup())
        .unwrap();
    assert_eq!((next.session_id, next.session_epoch), (42, 0));
    assert_eq!(named(&next), vec![tp(1, 0)]);
}
