//! The follower side of replication: each data shard fetches the partitions it hosts as a
//! follower from their leaders, as Apache Kafka 4.4's `ReplicaFetcherManager`,
//! `ReplicaFetcherThread` and `AbstractFetcherThread` do.
//!
//! - One [`ReplicaFetcherManager`] per data shard (in `ShardContext`). `on_metadata` takes each
//!   image: a partition this shard hosts whose leader is another live broker is fetched from
//!   it; one whose leader changed moves to the new leader's fetcher; one led here, led by
//!   nobody, or gone leaves. Kafka's `num.replica.fetchers` is ignored: a shard runs one
//!   fetcher per leader broker.
//! - One fetcher task per (shard, leader broker): one connection, one Fetch in flight, ended
//!   when it has no partitions left. Requests are Fetch v17 in a fetch session (KIP-227,
//!   [`session::SessionHandler`] as Kafka's `FetchSessionHandler`: full first, then only what
//!   changed; full again after a session or connection error), with the follower's id and
//!   broker epoch (KIP-903), topics by id.
//! - [`FetcherState`] is the fetcher without I/O: it builds the next request from the
//!   partitions' follower states and turns a response into per-partition actions (append,
//!   truncate on a diverging epoch, resolve an out-of-range offset), and keeps which partitions
//!   wait (backoff after an error, fenced until the metadata moves, failed). The task around
//!   it only connects, sends, and runs the actions on the `Partition`s.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use glommio::sync::Gate;
use sluice_config::BrokerConfig;
use sluice_protocol::apis::{RequestBody, ResponseBody};
use sluice_protocol::messages::fetch::ReplicaState;
use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchResponse, FetchTopic};
use sluice_protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic, EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
};
use sluice_protocol::record_batch::RecordBatches;
use sluice_protocol::ErrorCode;
use sluice_replica::replication::EpochEndOffset;
use sluice_replica::{FollowerFetchState, ReplicaError, TopicIdPartition};
use sluice_shard::{LocalSignal, LocalWatch, MetadataImage};
use tracing::{debug, error, info, warn};

use crate::broker_client::{BrokerClientError, BrokerConnection};
use crate::replication_throttle::{is_throttled, FOLLOWER_REPLICATION_THROTTLED_REPLICAS};
use crate::shard_core::ShardCore;
use crate::util::join_all;

pub mod session;

/// The Fetch version followers send: topics by id, `ReplicaState` (KIP-903) and the diverging
/// epoch answer (KIP-320) are all there.
pub const REPLICA_FETCH_VERSION: i16 = 17;

/// The ListOffsets version a follower sends to learn the leader's log start and end after an
/// out-of-range fetch (Kafka 4's `listOffsetRequestVersion`).
pub const REPLICA_LIST_OFFSETS_VERSION: i16 = 10;

/// Kafka's `replica.socket.timeout.ms` default: how long a request may go unanswered beyond
/// the fetch's own wait before the connection is dropped.
const REPLICA_SOCKET_TIMEOUT: Duration = Duration::from_secs(30);

/// The shortest wait after a failed request (connection refused or lost, timeout), whatever
/// `replica.fetch.backoff.ms` says (0 is allowed): Kafka's `reconnect.backoff.ms` default.
/// Without it a leader that is down would be redialled in a loop.
const RECONNECT_BACKOFF_MIN: Duration = Duration::from_millis(50);

/// How soon a fetcher holding throttled partitions back looks at its throttle again.
const THROTTLE_RECHECK: Duration = Duration::from_millis(50);

/// A connection error is logged at warn level once when the fetcher starts failing, then at
/// most this often while it keeps failing (every retry is logged at debug level).
const CONNECTION_WARN_INTERVAL: Duration = Duration::from_secs(60);

/// The local broker's epoch, sent in every replica Fetch (KIP-903): the leader refuses a
/// fetch from a replica whose broker epoch is stale.
/// This broker's epoch (KIP-903), sent in every replica fetch so that the leader can tell this
/// incarnation from an earlier one; -1 before its registration is in the image. A fenced
/// broker's registration still counts: it fetches to catch up before it is unfenced.
pub fn own_broker_epoch(image: &MetadataImage) -> i64 {
    image
        .registered_broker(image.local_node_id)
        .map_or(-1, |b| b.broker_epoch)
}

/// The follower settings a fetcher works with (Kafka's names in the comments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetcherConfig {
    /// `node.id`: the follower's replica id.
    pub replica_id: i32,
    /// `replica.fetch.wait.max.ms`.
    pub max_wait_ms: i32,
    /// `replica.fetch.min.bytes`.
    pub min_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub response_max_bytes: i32,
    /// `replica.fetch.max.bytes`.
    pub partition_max_bytes: i32,
    /// `replica.fetch.backoff.ms`.
    pub backoff: Duration,
}

impl FetcherConfig {
    /// The fetcher settings of `config`.
    pub fn from_broker(config: &BrokerConfig) -> FetcherConfig {
        FetcherConfig {
            replica_id: config.node_id,
            max_wait_ms: config.replica_fetch_wait_max_ms,
            min_bytes: config.replica_fetch_min_bytes,
            response_max_bytes: config.replica_fetch_response_max_bytes,
            partition_max_bytes: config.replica_fetch_max_bytes,
            backoff: Duration::from_millis(config.replica_fetch_backoff_ms.max(0) as u64),
        }
    }
}

/// Whether a partition goes into the next request, and if not, until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionStatus {
    /// In the next request.
    Fetching,
    /// Left out until `until` after an error for it (Kafka's `partitionsWithError`, delayed by
    /// `replica.fetch.backoff.ms`).
    Delayed {
        /// When it is fetched again.
        until: Instant,
    },
    /// The leader answered FENCED_LEADER_EPOCH: this replica's `leader_epoch` is older than
    /// the leader's. Left out until the metadata brings another epoch (Kafka's
    /// `onPartitionFenced`).
    Fenced {
        /// The epoch that was fenced.
        leader_epoch: i32,
    },
    /// Its log failed (storage error): left out until the metadata brings another leader
    /// epoch, or for good (Kafka's `markPartitionFailed`).
    Failed {
        /// The leader epoch it failed in.
        leader_epoch: i32,
    },
}

/// What the fetcher must do to one partition after a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionAction {
    /// Append the batches (possibly none) and take the leader's offsets.
    Append {
        /// The partition.
        tp: TopicIdPartition,
        /// The offset the fetch asked from: the follower's log end when it was sent.
        fetch_offset: i64,
        /// Whole batches, as the leader stored them (a partial last batch is cut off).
        records: Bytes,
        /// The leader's high watermark.
        high_watermark: i64,
        /// The leader's log start offset.
        log_start_offset: i64,
    },
    /// The leader's history differs after `diverging.end_offset`: truncate (KIP-320).
    TruncateOnDivergingEpoch {
        /// The partition.
        tp: TopicIdPartition,
        /// The leader's end of the largest epoch ≤ this replica's last fetched epoch.
        diverging: EpochEndOffset,
    },
    /// The fetch offset is outside the leader's log: ask the leader for its log start and end
    /// (ListOffsets) and truncate accordingly.
    OutOfRange {
        /// The partition.
        tp: TopicIdPartition,
        /// Its topic's name (ListOffsets names topics).
        topic: Rc<str>,
        /// The leader epoch the fetch was sent with.
        current_leader_epoch: i32,
    },
}

/// One partition as its fetcher tracks it.
#[derive(Clone, Debug)]
struct FetchedPartition {
    topic: Rc<str>,
    /// The leader epoch of the image that assigned it here.
    leader_epoch: i32,
    status: PartitionStatus,
    /// Answers in a row that said the leader's metadata and ours disagree (see
    /// [`metadata_lag_backoff`]); reset by a good answer.
    metadata_lag_errors: u32,
}

/// The first pause after an answer saying the leader's metadata and ours disagree
/// (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, ...).
const METADATA_LAG_BACKOFF_FIRST: Duration = Duration::from_millis(25);

/// The pause after the `errors`-th such answer in a row: 25 ms doubling up to
/// `replica.fetch.backoff.ms`. After a leader change the follower often learns it from the
/// metadata a few milliseconds before the new leader does, and asks while the leader still
/// answers UNKNOWN_LEADER_EPOCH; Kafka then waits the whole `replica.fetch.backoff.ms` (1 s),
/// and acks=all produces wait with it. A leader that stays behind is asked less and less
/// often, never more than every 40 ms on average over its first second.
fn metadata_lag_backoff(errors: u32, max: Duration) -> Duration {
    let doubled = METADATA_LAG_BACKOFF_FIRST.saturating_mul(1u32 << errors.min(16));
    doubled.min(max)
}

/// What was asked of one partition in the request in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    tp: TopicIdPartition,
    fetch_offset: i64,
    current_leader_epoch: i32,
}

/// One fetcher (one leader broker) without I/O: which partitions it fetches, the next request,
/// what a response means for each partition.
#[derive(Debug)]
pub struct FetcherState {
    leader_id: i32,
    config: FetcherConfig,
    partitions: BTreeMap<TopicIdPartition, FetchedPartition>,
    /// Sorted by partition (built in `partitions` order), for lookups by binary search.
    in_flight: Vec<InFlight>,
    /// The fetch session with the leader.
    session: session::SessionHandler,
}

impl FetcherState {
    /// A fetcher of `leader_id` with no partitions.
    pub fn new(leader_id: i32, config: FetcherConfig) -> FetcherState {
        FetcherState {
            leader_id,
            config,
            partitions: BTreeMap::new(),
            in_flight: Vec::new(),
            session: session::SessionHandler::default(),
        }
    }

    /// The leader's fetch session id (0 when there is none).
    pub fn session_id(&self) -> i32 {
        self.session.session_id()
    }

    /// The leader broker fetched from.
    pub fn leader_id(&self) -> i32 {
        self.leader_id
    }

    /// Adds `tp`, led by this fetcher's leader in `leader_epoch`. A partition already here
    /// keeps its status (a backoff runs out, a fenced or failed partition stays out) unless the
    /// epoch changed: a new epoch is a new start, as Kafka re-adds the partition.
    pub fn add_partition(&mut self, tp: TopicIdPartition, topic: Rc<str>, leader_epoch: i32) {
        match self.partitions.get_mut(&tp) {
            Some(p) if p.leader_epoch == leader_epoch => {}
            Some(p) => {
                p.leader_epoch = leader_epoch;
                p.status = PartitionStatus::Fetching;
                p.metadata_lag_errors = 0;
            }
            None => {
                self.partitions.insert(
                    tp,
                    FetchedPartition {
                        topic,
                        leader_epoch,
                        status: PartitionStatus::Fetching,
                        metadata_lag_errors: 0,
                    },
                );
            }
        }
    }

    /// Removes `tp`; an answer for it in flight is then ignored. True if it was here.
    pub fn remove_partition(&mut self, tp: &TopicIdPartition) -> bool {
        self.partitions.remove(tp).is_some()
    }

    /// The partitions, in order.
    pub fn partitions(&self) -> impl Iterator<Item = TopicIdPartition> + '_ {
        self.partitions.keys().copied()
    }

    /// Whether it fetches nothing.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// `tp`'s status, if it is here.
    pub fn status(&self, tp: &TopicIdPartition) -> Option<PartitionStatus> {
        self.partitions.get(tp).map(|p| p.status)
    }

    /// When the earliest delayed partition is due, if any is delayed.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.partitions
            .values()
            .filter_map(|p| match p.status {
                PartitionStatus::Delayed { until } => Some(until),
                _ => None,
            })
            .min()
    }

    /// The next Fetch: every partition that is due (its backoff over) and whose `Partition`
    /// still follows this leader (`follower_state`); None when there is none. Records what was
    /// asked, for [`FetcherState::handle_response`].
    pub fn build_request(
        &mut self,
        now: Instant,
        broker_epoch: i64,
        follower_state: impl Fn(&TopicIdPartition) -> Option<FollowerFetchState>,
    ) -> Option<FetchRequest> {
        self.build_request_throttled(now, broker_epoch, follower_state, |_| false)
    }

    /// [`Self::build_request`], leaving out the partitions `held_back` names (Kafka's
    /// `shouldFollowerThrottle`: throttled, out of the ISR, and the follower's throttle is over
    /// its rate); they go in a later request.
    pub fn build_request_throttled(
        &mut self,
        now: Instant,
        broker_epoch: i64,
        follower_state: impl Fn(&TopicIdPartition) -> Option<FollowerFetchState>,
        held_back: impl Fn(&TopicIdPartition) -> bool,
    ) -> Option<FetchRequest> {
        self.in_flight.clear();
        let mut topics: Vec<FetchTopic> = Vec::new();
        for (tp, p) in self.partitions.iter_mut() {
            if let PartitionStatus::Delayed { until } = p.status {
                if until > now {
                    continue;
                }
                p.status = PartitionStatus::Fetching;
            }
            if p.status != PartitionStatus::Fetching {
                continue;
            }
            // Not (or no longer) a follower of this leader: the next image moves or removes it.
            let Some(state) = follower_state(tp).filter(|s| s.leader_id == self.leader_id) else {
                continue;
            };
            if held_back(tp) {
                continue;
            }
            let partition = FetchPartition {
                partition: tp.partition,
                current_leader_epoch: state.current_leader_epoch,
                fetch_offset: state.fetch_offset,
                last_fetched_epoch: state.last_fetched_epoch.unwrap_or(-1),
                log_start_offset: state.log_start_offset,
                partition_max_bytes: self.config.partition_max_bytes,
                ..FetchPartition::default()
            };
            match topics.last_mut() {
                Some(topic) if topic.topic_id == tp.topic_id => topic.partitions.push(partition),
                _ => topics.push(FetchTopic {
                    topic: String::new(),
                    topic_id: tp.topic_id,
                    partitions: vec![partition],
                }),
            }
            self.in_flight.push(InFlight {
                tp: *tp,
                fetch_offset: state.fetch_offset,
                current_leader_epoch: state.current_leader_epoch,
            });
        }
        if topics.is_empty() {
            return None;
        }
        // In a session, only what changed since the previous request is named.
        let session = self.session.build(topics);
        Some(FetchRequest {
            replica_id: self.config.replica_id,
            replica_state: ReplicaState {
                replica_id: self.config.replica_id,
                replica_epoch: broker_epoch,
            },
            max_wait_ms: self.config.max_wait_ms,
            min_bytes: self.config.min_bytes,
            max_bytes: self.config.response_max_bytes,
            // Followers copy the whole log, transactions' records included.
            isolation_level: 0,
            session_id: session.session_id,
            session_epoch: session.epoch,
            topics: session.topics,
            forgotten_topics_data: session.forgotten,
            ..FetchRequest::default()
        })
    }

    /// Turns the answer to the request in flight into actions. Partitions answered with an
    /// error wait (backoff, fenced); an answer for a partition removed since, or whose
    /// follower state moved since the request (another leader epoch, a truncation), is
    /// ignored, as Kafka checks the fetch offset before processing.
    pub fn handle_response(
        &mut self,
        now: Instant,
        response: FetchResponse,
        follower_state: impl Fn(&TopicIdPartition) -> Option<FollowerFetchState>,
    ) -> Vec<PartitionAction> {
        let in_flight = std::mem::take(&mut self.in_flight);
        let mut actions = Vec::new();
        let session_error = matches!(
            ErrorCode(response.error_code),
            ErrorCode::FETCH_SESSION_ID_NOT_FOUND
                | ErrorCode::INVALID_FETCH_SESSION_EPOCH
                | ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR
        );
        if !self.session.handle_response(&response) && session_error {
            // The next request is full, and a full request gets no session error: no backoff.
            debug!(
                leader = self.leader_id,
                error = error_name(response.error_code),
                "replica fetch session lost; the next fetch is full"
            );
            self.in_flight = in_flight;
            self.in_flight.clear();
            return actions;
        }
        if response.error_code != ErrorCode::NONE.0 {
            warn!(
                leader = self.leader_id,
                error = error_name(response.error_code),
                "replica fetch failed as a whole"
            );
            self.delay_all(&in_flight, now + self.config.backoff);
            self.in_flight = in_flight;
            self.in_flight.clear();
            return actions;
        }
        for topic in response.responses {
            for data in topic.partitions {
                let tp = TopicIdPartition {
                    topic_id: topic.topic_id,
                    partition: data.partition_index,
                };
                let Ok(index) = in_flight.binary_search_by_key(&tp, |f| f.tp) else {
                    continue;
                };
                let asked = in_flight[index];
                let Some(p) = self.partitions.get_mut(&tp) else {
                    continue;
                };
                if p.status != PartitionStatus::Fetching {
                    continue;
                }
                let current = follower_state(&tp);
                let unchanged = current.is_some_and(|s| {
                    s.fetch_offset == asked.fetch_offset
                        && s.current_leader_epoch == asked.current_leader_epoch
                        && s.leader_id == self.leader_id
                });
                if !unchanged {
                    continue;
                }
                match ErrorCode(data.error_code) {
                    ErrorCode::NONE if data.diverging_epoch.epoch >= 0 => {
                        actions.push(PartitionAction::TruncateOnDivergingEpoch {
                            tp,
                            diverging: EpochEndOffset {
                                epoch: data.diverging_epoch.epoch,
                                end_offset: data.diverging_epoch.end_offset,
                            },
                        })
                    }
                    ErrorCode::NONE => {
                        p.metadata_lag_errors = 0;
                        actions.push(PartitionAction::Append {
                            tp,
                            fetch_offset: asked.fetch_offset,
                            records: whole_batches(data.records.unwrap_or_default()),
                            high_watermark: data.high_watermark,
                            log_start_offset: data.log_start_offset,
                        })
                    }
                    ErrorCode::OFFSET_OUT_OF_RANGE => actions.push(PartitionAction::OutOfRange {
                        tp,
                        topic: p.topic.clone(),
                        current_leader_epoch: asked.current_leader_epoch,
                    }),
                    ErrorCode::FENCED_LEADER_EPOCH => {
                        info!(
                            topic = %p.topic,
                            partition = tp.partition,
                            leader = self.leader_id,
                            leader_epoch = asked.current_leader_epoch,
                            "leader epoch fenced by the leader; waiting for new metadata"
                        );
                        p.status = PartitionStatus::Fenced {
                            leader_epoch: asked.current_leader_epoch,
                        };
                    }
                    code => {
                        // NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID,
                        // UNKNOWN_TOPIC_OR_PARTITION, REPLICA_NOT_AVAILABLE, KAFKA_STORAGE_ERROR:
                        // the leader's metadata and ours disagree for now; the next image (or
                        // the leader catching up) settles it. Anything else is unexpected.
                        let metadata_lag = matches!(
                            code,
                            ErrorCode::NOT_LEADER_OR_FOLLOWER
                                | ErrorCode::UNKNOWN_LEADER_EPOCH
                                | ErrorCode::UNKNOWN_TOPIC_ID
                                | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                        );
                        let expected = metadata_lag
                            || matches!(
                                code,
                                ErrorCode::REPLICA_NOT_AVAILABLE
                                    | ErrorCode::KAFKA_STORAGE_ERROR
                                    | ErrorCode::INCONSISTENT_TOPIC_ID
                            );
                        if expected {
                            debug!(topic = %p.topic, partition = tp.partition, leader = self.leader_id, error = error_name(code.0), "replica fetch error; backing off");
                        } else {
                            warn!(topic = %p.topic, partition = tp.partition, leader = self.leader_id, error = error_name(code.0), "unexpected replica fetch error; backing off");
                        }
                        let pause = if metadata_lag {
                            let pause =
                                metadata_lag_backoff(p.metadata_lag_errors, self.config.backoff);
                            p.metadata_lag_errors = p.metadata_lag_errors.saturating_add(1);
                            pause
                        } else {
                            self.config.backoff
                        };
                        p.status = PartitionStatus::Delayed { until: now + pause };
                    }
                }
            }
        }
        // Keep the allocation for the next request.
        self.in_flight = in_flight;
        self.in_flight.clear();
        actions
    }

    /// The request in flight failed (connection error, timeout, undecodable answer): every
    /// partition in it waits the backoff (at least [`RECONNECT_BACKOFF_MIN`]).
    pub fn on_request_failed(&mut self, now: Instant) {
        self.session.on_error();
        let in_flight = std::mem::take(&mut self.in_flight);
        let until = now + self.config.backoff.max(RECONNECT_BACKOFF_MIN);
        self.delay_all(&in_flight, until);
        self.in_flight = in_flight;
        self.in_flight.clear();
    }

    /// A new connection to the leader: the next request is full (and closes the old session).
    pub fn on_new_connection(&mut self) {
        self.session.on_error();
    }

    /// An action for `tp` failed for a reason that may pass: it waits the backoff.
    pub fn delay(&mut self, tp: &TopicIdPartition, now: Instant) {
        if let Some(p) = self.partitions.get_mut(tp) {
            p.status = PartitionStatus::Delayed {
                until: now + self.config.backoff,
            };
        }
    }

    /// `tp`'s log failed: it is no longer fetched until an image brings a new leader epoch.
    pub fn fail(&mut self, tp: &TopicIdPartition) {
        if let Some(p) = self.partitions.get_mut(tp) {
            p.status = PartitionStatus::Failed {
                leader_epoch: p.leader_epoch,
            };
        }
    }

    fn delay_all(&mut self, in_flight: &[InFlight], until: Instant) {
        for f in in_flight {
            if let Some(p) = self.partitions.get_mut(&f.tp) {
                if p.status == PartitionStatus::Fetching {
                    p.status = PartitionStatus::Delayed { until };
                }
            }
        }
    }
}

/// The whole batches at the start of `records`: a response cut at the size limit may end with
/// a partial batch, which the next fetch asks for again (Kafka's follower ignores it too).
pub fn whole_batches(records: Bytes) -> Bytes {
    let mut batches = RecordBatches::new(records.clone());
    // Stops at the first batch that is cut short (or unreadable): `position` is the end of the
    // whole ones before it.
    for batch in batches.by_ref() {
        if batch.is_err() {
            break;
        }
    }
    records.slice(..batches.position())
}

fn error_name(code: i16) -> &'static str {
    ErrorCode(code).name().unwrap_or("UNKNOWN_SERVER_ERROR")
}

/// Logs connection failures without flooding: one warn line when a fetcher starts failing,
/// then one per [`CONNECTION_WARN_INTERVAL`] while it keeps failing, one info line when it
/// recovers; every failure at debug level.
#[derive(Debug, Default)]
pub struct FailureLog {
    failing_since: Option<Instant>,
    last_warn: Option<Instant>,
    failures: u64,
}

impl FailureLog {
    /// A failure at `now`: whether to log it at warn level.
    pub fn failed(&mut self, now: Instant) -> bool {
        self.failures += 1;
        self.failing_since.get_or_insert(now);
        let due = self
            .last_warn
            .is_none_or(|last| now.duration_since(last) >= CONNECTION_WARN_INTERVAL);
        if due {
            self.last_warn = Some(now);
        }
        due
    }

    /// A success: the failures since the last success, if there were any (then say it
    /// recovered).
    pub fn succeeded(&mut self) -> Option<u64> {
        self.failing_since = None;
        self.last_warn = None;
        let failures = std::mem::take(&mut self.failures);
        (failures > 0).then_some(failures)
    }
}

/// A partition to fetch, as the image assigns it: (partition, topic name, leader epoch).
pub type FetchAssignment = (TopicIdPartition, Rc<str>, i32);

/// What `shard` must fetch by `image`, by leader broker: the partitions it hosts (`open`
/// gives the topic name of an open one) whose leader is another live broker, each leader's
/// sorted by partition. Partitions led here, led by nobody (-1), led by a broker that is not
/// live (fenced or gone), or not open are not fetched.
pub fn partitions_to_fetch(
    image: &MetadataImage,
    shard: sluice_shard::ShardId,
    open: impl Fn(&TopicIdPartition) -> Option<Rc<str>>,
) -> BTreeMap<i32, Vec<FetchAssignment>> {
    let mut wanted: BTreeMap<i32, Vec<FetchAssignment>> = BTreeMap::new();
    for tp in image.shard_table.partitions_of(shard) {
        let Some(p) = image
            .topic_by_id(&tp.topic_id)
            .and_then(|topic| topic.partition(tp.partition))
        else {
            continue;
        };
        if p.leader < 0 || p.leader == image.local_node_id || !image.is_live(p.leader) {
            continue;
        }
        let Some(topic) = open(&tp) else {
            continue;
        };
        wanted
            .entry(p.leader)
            .or_default()
            .push((tp, topic, p.leader_epoch));
    }
    for partitions in wanted.values_mut() {
        partitions.sort_by_key(|(tp, _, _)| *tp);
    }
    wanted
}

/// One fetcher: shared by its task and the manager.
struct Fetcher {
    leader_id: i32,
    /// The leader's advertised listener, as the latest image says.
    endpoint: RefCell<(String, u16)>,
    broker_epoch: Cell<i64>,
    state: RefCell<FetcherState>,
    /// Bumped when partitions are added: wakes a task waiting with nothing to fetch.
    changes: LocalWatch,
    /// Set when the fetcher is removed (no partitions left) or the shard stops.
    stop: LocalSignal,
}

impl Fetcher {
    fn new(
        leader_id: i32,
        endpoint: (String, u16),
        broker_epoch: i64,
        config: FetcherConfig,
    ) -> Fetcher {
        Fetcher {
            leader_id,
            endpoint: RefCell::new(endpoint),
            broker_epoch: Cell::new(broker_epoch),
            state: RefCell::new(FetcherState::new(leader_id, config)),
            changes: LocalWatch::new(0),
            stop: LocalSignal::new(),
        }
    }

    fn changed(&self) {
        self.changes.advance(self.changes.value() + 1);
    }
}

/// The replica fetchers of one data shard, one per leader broker.
pub struct ReplicaFetcherManager {
    config: FetcherConfig,
    client_id: String,
    fetchers: RefCell<BTreeMap<i32, Rc<Fetcher>>>,
    /// The fetcher tasks, waited for at shutdown.
    tasks: Gate,
}

impl ReplicaFetcherManager {
    /// The fetchers of shard `shard_id` (none running yet).
    pub fn new(config: &BrokerConfig, shard_id: sluice_shard::ShardId) -> ReplicaFetcherManager {
        ReplicaFetcherManager {
            config: FetcherConfig::from_broker(config),
            client_id: format!("sluice-replica-fetcher-{}-{}", config.node_id, shard_id.0),
            fetchers: RefCell::new(BTreeMap::new()),
            tasks: Gate::new(),
        }
    }

    /// Takes a new image (after the shard opened its partitions): every partition this shard
    /// hosts whose leader is another live broker is fetched from that leader; a partition whose
    /// leader changed moves to the new leader's fetcher; the others (led here, by nobody, not
    /// open, gone) are removed. A fetcher left without partitions stops.
    pub fn on_metadata(&self, core: &Rc<ShardCore>, image: &MetadataImage) {
        let wanted = partitions_to_fetch(image, core.shard_id, |tp| {
            core.replicas.get(tp).map(|p| p.topic.clone())
        });
        let broker_epoch = own_broker_epoch(image);
        let mut fetchers = self.fetchers.borrow_mut();
        // Partitions that left a fetcher (or a fetcher that has no partitions left).
        fetchers.retain(|leader, fetcher| {
            let keep = wanted.get(leader);
            let mut state = fetcher.state.borrow_mut();
            let gone: Vec<TopicIdPartition> = state
                .partitions()
                .filter(|tp| {
                    // `partitions_to_fetch` sorts each leader's list.
                    keep.is_none_or(|k| k.binary_search_by_key(tp, |(t, _, _)| *t).is_err())
                })
                .collect();
            for tp in &gone {
                state.remove_partition(tp);
            }
            if keep.is_none() {
                info!(
                    leader,
                    "replica fetcher stopped: no partition left to fetch"
                );
                fetcher.stop.trigger();
                return false;
            }
            true
        });
        for (leader, partitions) in wanted {
            let Some(broker) = image.broker(leader) else {
                continue;
            };
            let port = u16::try_from(broker.port).unwrap_or(0);
            let fetcher = match fetchers.get(&leader) {
                Some(fetcher) => fetcher.clone(),
                None => {
                    let fetcher = Rc::new(Fetcher::new(
                        leader,
                        (broker.host.clone(), port),
                        broker_epoch,
                        self.config,
                    ));
                    let task = run_fetcher(
                        fetcher.clone(),
                        core.clone(),
                        self.config,
                        self.client_id.clone(),
                        frame_max_bytes(
                            &self.config,
                            core.config.socket_request_max_bytes as usize,
                        ),
                    );
                    match self.tasks.spawn(task) {
                        Ok(task) => drop(task.detach()),
                        Err(error) => {
                            warn!(leader, %error, "replica fetcher not started: shard is closing");
                            continue;
                        }
                    }
                    info!(leader, host = %broker.host, port, "replica fetcher started");
                    fetchers.insert(leader, fetcher.clone());
                    fetcher
                }
            };
            *fetcher.endpoint.borrow_mut() = (broker.host.clone(), port);
            fetcher.broker_epoch.set(broker_epoch);
            {
                let mut state = fetcher.state.borrow_mut();
                for (tp, topic, leader_epoch) in partitions {
                    state.add_partition(tp, topic, leader_epoch);
                }
            }
            fetcher.changed();
        }
    }

    /// The leader each fetched partition is fetched from (for tests and diagnostics).
    pub fn assignments(&self) -> Vec<(TopicIdPartition, i32)> {
        self.fetchers
            .borrow()
            .values()
            .flat_map(|f| {
                let leader = f.leader_id;
                f.state
                    .borrow()
                    .partitions()
                    .map(move |tp| (tp, leader))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Stops every fetcher and waits for their tasks to end (before the logs close: no append
    /// may run into a closing log).
    pub async fn shutdown(&self) {
        for fetcher in std::mem::take(&mut *self.fetchers.borrow_mut()).into_values() {
            fetcher.stop.trigger();
        }
        if let Err(error) = self.tasks.close().await {
            warn!(%error, "replica fetchers did not close cleanly");
        }
    }
}

/// The logs a fetcher copies into and the shard signal it stops on: the shard's partitions
/// (`ShardCore`) in the broker; a test's own in the fetcher's tests.
pub(crate) trait FollowerLogs {
    /// Set when the shard shuts down: the fetcher ends.
    fn shutdown_signal(&self) -> &LocalSignal;
    /// `tp`'s next fetch, `None` when it is not (or no longer) a follower here.
    fn fetch_state(&self, tp: &TopicIdPartition) -> Option<FollowerFetchState>;
    /// `tp`'s topic name, for log lines.
    fn topic(&self, tp: &TopicIdPartition) -> Rc<str>;
    /// Appends fetched batches and takes the leader's high watermark and log start.
    async fn append(
        &self,
        tp: &TopicIdPartition,
        records: &[u8],
        high_watermark: i64,
        log_start_offset: i64,
    ) -> Result<(), ReplicaError>;
    /// Truncates after a diverging epoch.
    async fn truncate_on_diverging_epoch(
        &self,
        tp: &TopicIdPartition,
        diverging: EpochEndOffset,
    ) -> Result<(), ReplicaError>;
    /// Whether `tp`'s replica is throttled on this follower (its topic's
    /// `follower.replication.throttled.replicas` names it here, and it is out of the ISR).
    fn follower_throttled(&self, _tp: &TopicIdPartition) -> bool {
        false
    }
    /// The follower throttle: whether the throttled replicas must wait now.
    fn follower_throttle_exceeded(&self, _now: Instant) -> bool {
        false
    }
    /// Takes `bytes` fetched for a throttled replica from the follower throttle.
    fn record_follower_throttled(&self, _bytes: usize, _now: Instant) {}
    /// Truncates after an out-of-range fetch offset, given the leader's log start and end.
    async fn truncate_on_out_of_range(
        &self,
        tp: &TopicIdPartition,
        leader_log_start_offset: i64,
        leader_log_end_offset: i64,
    ) -> Result<(), ReplicaError>;
}

impl FollowerLogs for ShardCore {
    fn shutdown_signal(&self) -> &LocalSignal {
        &self.shutdown
    }

    fn follower_throttled(&self, tp: &TopicIdPartition) -> bool {
        let image = self.image();
        let Some(topic) = image.topic_by_id(&tp.topic_id) else {
            return false;
        };
        let node_id = self.config.node_id;
        topic
            .configs
            .get(FOLLOWER_REPLICATION_THROTTLED_REPLICAS)
            .is_some_and(|list| is_throttled(list, tp.partition, node_id))
            && topic
                .partition(tp.partition)
                .is_some_and(|p| !p.isr.contains(&node_id))
    }

    fn follower_throttle_exceeded(&self, now: Instant) -> bool {
        self.throttles.follower.is_exceeded(now)
    }

    fn record_follower_throttled(&self, bytes: usize, now: Instant) {
        self.throttles.follower.record(bytes, now);
    }

    fn fetch_state(&self, tp: &TopicIdPartition) -> Option<FollowerFetchState> {
        self.replicas.get(tp)?.follower_fetch_state()
    }

    fn topic(&self, tp: &TopicIdPartition) -> Rc<str> {
        self.replicas
            .get(tp)
            .map(|p| p.topic.clone())
            .unwrap_or_else(|| Rc::from(""))
    }

    async fn append(
        &self,
        tp: &TopicIdPartition,
        records: &[u8],
        high_watermark: i64,
        log_start_offset: i64,
    ) -> Result<(), ReplicaError> {
        let partition = self.replicas.hosted(tp)?;
        partition
            .append_records_as_follower(records, high_watermark, log_start_offset)
            .await
            .map(|_| ())
    }

    async fn truncate_on_diverging_epoch(
        &self,
        tp: &TopicIdPartition,
        diverging: EpochEndOffset,
    ) -> Result<(), ReplicaError> {
        let partition = self.replicas.hosted(tp)?;
        partition.truncate_on_diverging_epoch(diverging).await
    }

    async fn truncate_on_out_of_range(
        &self,
        tp: &TopicIdPartition,
        leader_log_start_offset: i64,
        leader_log_end_offset: i64,
    ) -> Result<(), ReplicaError> {
        let partition = self.replicas.hosted(tp)?;
        partition
            .truncate_on_out_of_range(leader_log_start_offset, leader_log_end_offset)
            .await
    }
}

/// The largest response frame a fetcher reads: the response limit, plus a first batch that
/// may exceed it (Kafka returns one whole), plus headers; never below the broker's own request
/// bound.
fn frame_max_bytes(config: &FetcherConfig, socket_request_max_bytes: usize) -> usize {
    (config.response_max_bytes.max(0) as usize)
        .saturating_mul(2)
        .max(socket_request_max_bytes)
}

/// One fetcher's task: fetch, apply, repeat, until stopped.
async fn run_fetcher<L: FollowerLogs>(
    fetcher: Rc<Fetcher>,
    logs: Rc<L>,
    config: FetcherConfig,
    client_id: String,
    frame_max_bytes: usize,
) {
    let leader = fetcher.leader_id;
    let mut connection: Option<BrokerConnection> = None;
    let mut failures = FailureLog::default();
    let follower_state = |tp: &TopicIdPartition| logs.fetch_state(tp);
    // A fetch may wait `max_wait_ms` at the leader before its answer even starts.
    let request_timeout =
        REPLICA_SOCKET_TIMEOUT + Duration::from_millis(config.max_wait_ms.max(0) as u64);
    let stop = || futures_lite::future::or(fetcher.stop.wait(), logs.shutdown_signal().wait());
    while !fetcher.stop.is_triggered() && !logs.shutdown_signal().is_triggered() {
        let seen = fetcher.changes.value();
        let now = Instant::now();
        // The follower throttle holds back throttled replicas while it is over its rate.
        let throttle_exceeded = logs.follower_throttle_exceeded(now);
        let request = fetcher.state.borrow_mut().build_request_throttled(
            now,
            fetcher.broker_epoch.get(),
            follower_state,
            |tp| throttle_exceeded && logs.follower_throttled(tp),
        );
        let Some(request) = request else {
            // Nothing due: wait for new partitions, the next backoff's end, or the stop. With
            // nothing delayed either, partitions wait for their role (the next image).
            let until = fetcher.state.borrow().next_wakeup();
            let mut wait = until
                .map(|u| u.saturating_duration_since(now))
                .unwrap_or(config.backoff.max(Duration::from_millis(100)));
            if throttle_exceeded {
                // Throttled partitions may be held back: look again as the bucket refills.
                wait = wait.min(THROTTLE_RECHECK);
            }
            unless_stopped(stop(), async {
                futures_lite::future::or(fetcher.changes.wait_beyond(seen), async {
                    glommio::timer::sleep(wait).await;
                })
                .await
            })
            .await;
            continue;
        };
        if connection.is_none() {
            let (host, port) = fetcher.endpoint.borrow().clone();
            let connected = unless_stopped(
                stop(),
                BrokerConnection::connect(
                    &host,
                    port,
                    REPLICA_SOCKET_TIMEOUT,
                    client_id.clone(),
                    frame_max_bytes,
                ),
            )
            .await;
            match connected {
                None => break,
                Some(Ok(c)) => {
                    // A new connection may land on another shard of the leader, which does not
                    // know the session: start a new one with a full fetch.
                    fetcher.state.borrow_mut().on_new_connection();
                    connection = Some(c);
                }
                Some(Err(error)) => {
                    log_failure(&mut failures, leader, &host, port, &error);
                    fetcher.state.borrow_mut().on_request_failed(Instant::now());
                    continue;
                }
            }
        }
        let Some(conn) = connection.as_mut() else {
            continue;
        };
        let sent = unless_stopped(
            stop(),
            conn.send(
                RequestBody::Fetch(request),
                REPLICA_FETCH_VERSION,
                request_timeout,
            ),
        )
        .await;
        let response = match sent {
            None => break,
            Some(Ok(ResponseBody::Fetch(response))) => response,
            Some(Ok(_)) => unreachable!("BrokerConnection::send checks the response's API"),
            Some(Err(error)) => {
                let (host, port) = fetcher.endpoint.borrow().clone();
                log_failure(&mut failures, leader, &host, port, &error);
                connection = None;
                fetcher.state.borrow_mut().on_request_failed(Instant::now());
                continue;
            }
        };
        if let Some(count) = failures.succeeded() {
            info!(
                leader,
                failures = count,
                "replica fetcher reconnected to the leader"
            );
        }
        let actions =
            fetcher
                .state
                .borrow_mut()
                .handle_response(Instant::now(), response, follower_state);
        if actions.is_empty() {
            continue;
        }
        let now = Instant::now();
        for action in &actions {
            if let PartitionAction::Append { tp, records, .. } = action {
                if !records.is_empty() && logs.follower_throttled(tp) {
                    logs.record_follower_throttled(records.len(), now);
                }
            }
        }
        let (out_of_range, local): (Vec<_>, Vec<_>) = actions
            .into_iter()
            .partition(|a| matches!(a, PartitionAction::OutOfRange { .. }));
        // Each append's future is made (and boxed) by `join_all` as it goes, not gathered first.
        let applies = local.into_iter().map(|action| apply_local(&*logs, action));
        for (tp, result) in join_all(applies).await {
            settle(&fetcher, &*logs, tp, result);
        }
        let mut connection_broken = false;
        for action in out_of_range {
            let PartitionAction::OutOfRange {
                tp,
                topic,
                current_leader_epoch,
            } = action
            else {
                continue;
            };
            let offsets = unless_stopped(
                stop(),
                leader_offsets(
                    conn,
                    config.replica_id,
                    &topic,
                    tp.partition,
                    current_leader_epoch,
                ),
            )
            .await;
            match offsets {
                None => break,
                Some(Ok(Ok((start, end)))) => {
                    let result = logs.truncate_on_out_of_range(&tp, start, end).await;
                    settle(&fetcher, &*logs, tp, result);
                }
                Some(Ok(Err(code))) => {
                    debug!(%topic, partition = tp.partition, leader, error = error_name(code.0), "leader offsets unavailable; backing off");
                    fetcher.state.borrow_mut().delay(&tp, Instant::now());
                }
                Some(Err(error)) => {
                    let (host, port) = fetcher.endpoint.borrow().clone();
                    log_failure(&mut failures, leader, &host, port, &error);
                    connection_broken = true;
                    fetcher.state.borrow_mut().delay(&tp, Instant::now());
                    break;
                }
            }
        }
        if connection_broken {
            connection = None;
        }
    }
    debug!(leader, "replica fetcher task ended");
}

/// Runs `future` unless `stop` resolves first (None then): a stopped fetcher drops its
/// request in flight with its connection, it does not wait for the answer.
async fn unless_stopped<T>(
    stop: impl std::future::Future<Output = ()>,
    future: impl std::future::Future<Output = T>,
) -> Option<T> {
    futures_lite::future::or(async { Some(future.await) }, async {
        stop.await;
        None
    })
    .await
}

/// Applies an append or a diverging-epoch truncation to the partition's log.
async fn apply_local<L: FollowerLogs>(
    logs: &L,
    action: PartitionAction,
) -> (TopicIdPartition, Result<(), ReplicaError>) {
    match action {
        PartitionAction::Append {
            tp,
            fetch_offset,
            records,
            high_watermark,
            log_start_offset,
        } => {
            let result = logs
                .append(&tp, &records, high_watermark, log_start_offset)
                .await;
            // The log moved under this append (a role change truncated it, or another
            // fetcher's append landed while the partition moved between leaders): the error
            // says nothing about the log's health; the next fetch starts from where it is now.
            let moved = logs
                .fetch_state(&tp)
                .is_none_or(|s| s.fetch_offset != fetch_offset);
            match result {
                Err(error) if moved => {
                    debug!(topic = %logs.topic(&tp), partition = tp.partition, %error, "follower log moved during the append; fetching again from its end");
                    (tp, Ok(()))
                }
                result => (tp, result),
            }
        }
        PartitionAction::TruncateOnDivergingEpoch { tp, diverging } => {
            let result = logs.truncate_on_diverging_epoch(&tp, diverging).await;
            (tp, result)
        }
        PartitionAction::OutOfRange { tp, .. } => (tp, Ok(())),
    }
}

/// Records how an action on `tp` ended: a storage error takes the partition out of fetching
/// (its log is unusable until restart), another error waits the backoff.
fn settle<L: FollowerLogs>(
    fetcher: &Fetcher,
    logs: &L,
    tp: TopicIdPartition,
    result: Result<(), ReplicaError>,
) {
    let Err(error) = result else {
        return;
    };
    let topic = logs.topic(&tp);
    let mut state = fetcher.state.borrow_mut();
    match error {
        ReplicaError::Storage(_) => {
            error!(%topic, partition = tp.partition, leader = fetcher.leader_id, %error, "follower log failed; partition no longer fetched");
            state.fail(&tp);
        }
        error => {
            warn!(%topic, partition = tp.partition, leader = fetcher.leader_id, %error, "follower append or truncation failed; backing off");
            state.delay(&tp, Instant::now());
        }
    }
}

/// The leader's log start and end offsets of `topic`/`partition` (ListOffsets latest, then
/// earliest, sent as replica `replica_id`: a leader answers a replica its log end, not its
/// high watermark — Kafka's `fetchLatestOffsetFromLeader` / `fetchEarliestOffsetFromLeader`).
/// The inner error is the leader's error code for the partition.
pub async fn leader_offsets(
    conn: &mut BrokerConnection,
    replica_id: i32,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<Result<(i64, i64), ErrorCode>, BrokerClientError> {
    let end = match list_offset(
        conn,
        replica_id,
        topic,
        partition,
        current_leader_epoch,
        LATEST_TIMESTAMP,
    )
    .await?
    {
        Ok(end) => end,
        Err(code) => return Ok(Err(code)),
    };
    let start = match list_offset(
        conn,
        replica_id,
        topic,
        partition,
        current_leader_epoch,
        EARLIEST_TIMESTAMP,
    )
    .await?
    {
        Ok(start) => start,
        Err(code) => return Ok(Err(code)),
    };
    Ok(Ok((start, end)))
}

async fn list_offset(
    conn: &mut BrokerConnection,
    replica_id: i32,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
    timestamp: i64,
) -> Result<Result<i64, ErrorCode>, BrokerClientError> {
    let request = ListOffsetsRequest {
        replica_id,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: topic.to_string(),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                current_leader_epoch,
                timestamp,
            }],
        }],
        timeout_ms: 0,
    };
    let response = conn
        .send(
            RequestBody::ListOffsets(request),
            REPLICA_LIST_OFFSETS_VERSION,
            REPLICA_SOCKET_TIMEOUT,
        )
        .await?;
    let ResponseBody::ListOffsets(response) = response else {
        return Err(BrokerClientError::WrongApi);
    };
    let answer = response
        .topics
        .iter()
        .filter(|t| t.name == topic)
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition);
    Ok(match answer {
        Some(p) if p.error_code == ErrorCode::NONE.0 => Ok(p.offset),
        Some(p) => Err(ErrorCode(p.error_code)),
        None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
    })
}

fn log_failure(
    failures: &mut FailureLog,
    leader: i32,
    host: &str,
    port: u16,
    error: &BrokerClientError,
) {
    if failures.failed(Instant::now()) {
        warn!(leader, %host, port, %error, "replica fetcher cannot reach the leader; retrying after replica.fetch.backoff.ms");
    } else {
        debug!(leader, %host, port, %error, "replica fetch failed again");
    }
}

#[cfg(test)]
mod tests;
