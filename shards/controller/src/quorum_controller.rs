//! The controller (KRaft's QuorumController): every voter applies the committed metadata log to
//! its `MetadataState`; the active one — the quorum leader, once it has applied every entry of
//! earlier terms — also decides changes. It turns a request (a topic to create, a broker
//! registering, a missed heartbeat) into records, proposes them as one entry, and answers when
//! the entry is committed, after it applied it.
//!
//! Writes are decided one at a time (`writes`, a one-permit semaphore held across the commit),
//! so each decision sees the previous one applied. Reads — heartbeats that change nothing,
//! brokers fetching the log — do not wait for it.
//!
//! Broker sessions (KRaft's BrokerHeartbeatManager) live only in the active controller's
//! memory: a new active controller gives every live broker a fresh session.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::sync::Semaphore;
use sluice_protocol::codec::Uuid;
use sluice_quorum::Entry;
use sluice_shard::{
    AlterPartitionItem, AlterPartitionOutcome, CreatedTopic, LocalWatch, MetadataError, NewTopic,
    ProducerIdBlock, TopicConfigChanges, TopicRef, PRODUCER_ID_BLOCK_SIZE,
};
use tracing::{error, info, warn};

use crate::metadata_state::MetadataState;
use crate::partition_change::{
    balance_leaders, broker_removed, broker_unfenced, elect_leaders, min_isr_changed,
    ElectionDefaults, MIN_INSYNC_REPLICAS,
};
use crate::placement::{place_replicas, PlacementBroker};
use crate::raft_driver::{self, Applier, DriverSettings, ProposeError, RaftHandle};
use crate::reassignment::{alter_partition_reassignments, list_partition_reassignments};
use crate::records::{decode_entry, encode_entry, MetadataRecord};
use crate::replication_control::{
    broker_config_records, check_new_topic, config_records, find_topic, manual_partition,
    new_cluster_id, new_topic_id,
};
use crate::rpc::{ControllerRequest, ControllerResponse, HeartbeatState, MetadataEntry};
use crate::rpc_net::RpcHandler;

/// The replicas and the ISR of each partition of a topic, in partition order.
type Placement = Vec<(Vec<i32>, Vec<i32>)>;

/// How often the active controller looks for expired broker sessions.
const SESSION_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// How often a controller that is not the active one looks whether it became it.
const INACTIVE_SESSION_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Committed entries a broker may fetch in one answer, besides the byte limit.
const FETCH_ENTRIES_MAX: usize = 4096;

/// What the controller needs from the configuration.
#[derive(Clone, Debug)]
pub struct ControllerSettings {
    /// `node.id`.
    pub node_id: i32,
    /// `controller.quorum.voters`: node id and address (None for a single local voter).
    pub voters: Vec<(i32, Option<std::net::SocketAddr>)>,
    /// Each voter's controller endpoint as DescribeQuorum lists it: node id, listener name,
    /// host, port (empty for a single local voter without a controller listener).
    pub endpoints: Vec<(i32, String, String, u16)>,
    /// Directory of the quorum log (`metadata.log.dir` or `log.dirs`, plus
    /// `__cluster_metadata-0`).
    pub metadata_dir: PathBuf,
    /// Length of one Raft tick.
    pub tick: Duration,
    /// `controller.quorum.election.timeout.ms`.
    pub election_timeout: Duration,
    /// `broker.session.timeout.ms`.
    pub broker_session_timeout: Duration,
    /// `sluice.broker.disconnect.fence.ms`: a broker whose every connection to the active
    /// controller was closed by its end is fenced this long after, unless it connected again;
    /// `None` leaves it to the session timeout.
    pub broker_disconnect_fence: Option<Duration>,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `sluice.broker.partitions.max`: partitions one broker may host.
    pub partitions_max: usize,
    /// `unclean.leader.election.enable`: the default of topics without the override.
    pub unclean_leader_election_enable: bool,
    /// `min.insync.replicas`: the default of topics without the override (ELR is kept below it).
    pub min_insync_replicas: i32,
    /// `leader.imbalance.check.interval.seconds` when `auto.leader.rebalance.enable` holds
    /// (KRaft's `leaderImbalanceCheckIntervalNs`): how often the active controller moves
    /// leadership back to preferred replicas; `None` never does.
    pub leader_imbalance_check_interval: Option<Duration>,
}

/// The controller of this node.
pub struct QuorumController {
    settings: ControllerSettings,
    raft: RefCell<Option<Rc<RaftHandle>>>,
    state: RefCell<MetadataState>,
    /// Every committed entry, index `i` at position `i - 1` (no-ops with empty data), for
    /// brokers following the log. Snapshots that drop the prefix come later.
    entries: RefCell<Vec<MetadataEntry>>,
    /// The applied index, watched by brokers' long polls (`fetch_metadata`).
    applied: LocalWatch,
    /// The first index of this node's leadership; active once applied.
    leader_index_first: Cell<Option<u64>>,
    /// The term this node leads (or last led).
    leader_term: Cell<u64>,
    active: Cell<bool>,
    sessions: RefCell<BTreeMap<i32, Instant>>,
    /// Per broker id, its connections to this controller that carried its own requests
    /// (registration, heartbeat, metadata fetch).
    broker_connections: RefCell<BTreeMap<i32, usize>>,
    /// Brokers whose last such connection their end closed while this controller was active:
    /// when each is fenced unless it connects again (`broker_disconnect_fence`).
    disconnected: RefCell<BTreeMap<i32, Instant>>,
    /// Brokers following the log (KRaft's observers), as this controller saw them while active:
    /// per broker id, its log end offset, when it last fetched or heartbeated and when it was
    /// last caught up (wall-clock ms).
    observers: RefCell<BTreeMap<i32, ObserverState>>,
    writes: Semaphore,
}

/// An observer of the metadata log, as DescribeQuorum reports it.
#[derive(Clone, Copy, Debug)]
struct ObserverState {
    log_end_offset: i64,
    last_fetch_ms: i64,
    last_caught_up_ms: i64,
    /// This controller's applied index at the last fetch.
    applied_at_last_fetch: i64,
}

impl ControllerSettings {
    /// The broker defaults elections decide with.
    pub fn election_defaults(&self) -> ElectionDefaults {
        ElectionDefaults {
            unclean_leader_election_enable: self.unclean_leader_election_enable,
            min_insync_replicas: self.min_insync_replicas,
        }
    }
}

impl QuorumController {
    /// Opens the quorum log, replays it, and starts the driver and the session checks.
    pub fn start(settings: ControllerSettings) -> Result<Rc<QuorumController>, String> {
        let controller = Rc::new(QuorumController {
            state: RefCell::new(MetadataState::new(settings.node_id, 0)),
            settings: settings.clone(),
            raft: RefCell::new(None),
            entries: RefCell::new(Vec::new()),
            applied: LocalWatch::new(0),
            leader_index_first: Cell::new(None),
            leader_term: Cell::new(0),
            active: Cell::new(false),
            sessions: RefCell::new(BTreeMap::new()),
            broker_connections: RefCell::new(BTreeMap::new()),
            disconnected: RefCell::new(BTreeMap::new()),
            observers: RefCell::new(BTreeMap::new()),
            writes: Semaphore::new(1),
        });
        let driver = DriverSettings {
            node_id: settings.node_id,
            voters: settings.voters.clone(),
            dir: settings.metadata_dir.clone(),
            tick: settings.tick,
            election_timeout: settings.election_timeout,
        };
        let applier: Rc<dyn Applier> = Rc::new(ControllerApplier(Rc::downgrade(&controller)));
        let (raft, driver) = raft_driver::open(driver, applier)
            .map_err(|e| format!("controller quorum log: {e}"))?;
        *controller.raft.borrow_mut() = Some(raft);
        driver.spawn();
        glommio::spawn_local(Self::check_sessions(Rc::downgrade(&controller))).detach();
        if let Some(interval) = settings.leader_imbalance_check_interval {
            glommio::spawn_local(Self::balance_leaders_every(
                Rc::downgrade(&controller),
                interval,
            ))
            .detach();
        }
        Ok(controller)
    }

    fn raft(&self) -> Option<Rc<RaftHandle>> {
        self.raft.borrow().clone()
    }

    /// The quorum leader's node id, -1 if unknown.
    pub fn leader_id(&self) -> i32 {
        self.raft().map_or(-1, |r| r.leader_id())
    }

    /// Serves one request from the broker of this same process (the single local voter's
    /// link). Its registrations replace any earlier one at once: that incarnation was this
    /// node's previous process, which is gone (it held the data directory's lock).
    pub async fn serve_in_process(&self, request: ControllerRequest) -> Option<ControllerResponse> {
        if let ControllerRequest::BrokerRegistration { broker_id, .. }
        | ControllerRequest::BrokerRegistrationWithPreviousEpoch { broker_id, .. } = &request
        {
            if *broker_id == self.settings.node_id {
                self.sessions.borrow_mut().remove(broker_id);
            }
        }
        self.serve_request(request).await
    }

    /// Serves one request from a broker, a peer voter, or this node's own broker.
    pub async fn serve_request(&self, request: ControllerRequest) -> Option<ControllerResponse> {
        match request {
            ControllerRequest::Raft { message, .. } => {
                if let Some(raft) = self.raft() {
                    raft.receive(&message);
                }
                None
            }
            ControllerRequest::FetchMetadata {
                broker_id,
                offset_after,
                max_wait_ms,
                bytes_max,
            } => {
                self.note_observer(broker_id, offset_after as i64);
                Some(
                    self.fetch_metadata(offset_after, max_wait_ms, bytes_max)
                        .await,
                )
            }
            ControllerRequest::DescribeQuorum => Some(self.describe_quorum().await),
            ControllerRequest::ListPartitionReassignments { topics } => {
                // A read of the committed state, as Kafka's `listPartitionReassignments`; only
                // the active controller answers.
                if !self.active.get() {
                    return Some(self.not_controller());
                }
                let ongoing = list_partition_reassignments(&self.state.borrow(), topics.as_deref());
                Some(ControllerResponse::ListPartitionReassignments {
                    result: Ok(ongoing),
                })
            }
            other => Some(self.write(other).await),
        }
    }

    /// Decides, proposes and commits one change; answers NotController when not active.
    async fn write(&self, request: ControllerRequest) -> ControllerResponse {
        let Ok(_permit) = self.writes.acquire_permit(1).await else {
            return self.not_controller();
        };
        if !self.active.get() {
            return self.not_controller();
        }
        match request {
            ControllerRequest::BrokerRegistration {
                broker_id,
                incarnation_id,
                host,
                port,
                rack,
            } => {
                let result = self
                    .register_broker(broker_id, incarnation_id, host, port, rack, None)
                    .await;
                ControllerResponse::BrokerRegistration { result }
            }
            ControllerRequest::BrokerRegistrationWithPreviousEpoch {
                broker_id,
                incarnation_id,
                host,
                port,
                rack,
                previous_broker_epoch,
            } => {
                let result = self
                    .register_broker(
                        broker_id,
                        incarnation_id,
                        host,
                        port,
                        rack,
                        Some(previous_broker_epoch),
                    )
                    .await;
                ControllerResponse::BrokerRegistration { result }
            }
            ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                current_metadata_offset,
                want_fence,
                want_shut_down,
            } => {
                let result = self
                    .heartbeat(
                        broker_id,
                        broker_epoch,
                        current_metadata_offset,
                        want_fence || want_shut_down,
                    )
                    .await;
                ControllerResponse::BrokerHeartbeat { result }
            }
            ControllerRequest::CreateTopics {
                topics,
                validate_only,
            } => {
                let (results, metadata_offset) = self.create_topics(topics, validate_only).await;
                ControllerResponse::CreateTopics {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::CreateTopicsAssigned {
                mut topics,
                assignments,
                validate_only,
            } => {
                for (topic, assigned) in topics.iter_mut().zip(assignments) {
                    topic.assignments = assigned;
                }
                let (results, metadata_offset) = self.create_topics(topics, validate_only).await;
                ControllerResponse::CreateTopics {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::DeleteTopics { topics } => {
                let (results, metadata_offset) = self.delete_topics(topics).await;
                ControllerResponse::DeleteTopics {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::AlterConfigs {
                topics,
                validate_only,
            } => {
                let (results, metadata_offset) = self.alter_configs(topics, validate_only).await;
                ControllerResponse::AlterConfigs {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::AlterBrokerConfigs {
                brokers,
                validate_only,
            } => {
                let (results, records) = {
                    let state = self.state.borrow();
                    let mut results = Vec::with_capacity(brokers.len());
                    let mut records = Vec::new();
                    for changes in &brokers {
                        results.push(broker_config_records(&state.image, changes).map(|planned| {
                            if !validate_only {
                                records.extend(planned);
                            }
                        }));
                    }
                    (results, records)
                };
                let (results, metadata_offset) = self.commit_for(records, results).await;
                ControllerResponse::AlterBrokerConfigs {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::AllocateProducerIds { .. } => {
                let result = self.allocate_producer_ids().await;
                ControllerResponse::AllocateProducerIds { result }
            }
            ControllerRequest::CreatePartitions {
                topics,
                validate_only,
            } => {
                let (results, metadata_offset) =
                    self.create_partitions(topics, validate_only).await;
                ControllerResponse::CreatePartitions {
                    results,
                    metadata_offset,
                }
            }
            ControllerRequest::UpdateFeatures {
                updates,
                validate_only,
            } => {
                let (result, metadata_offset) = self.update_features(updates, validate_only).await;
                ControllerResponse::UpdateFeatures {
                    result,
                    metadata_offset,
                }
            }
            ControllerRequest::AlterPartition {
                broker_id,
                broker_epoch,
                item,
            } => {
                let result = self.alter_partition(broker_id, broker_epoch, item).await;
                ControllerResponse::AlterPartition { result }
            }
            ControllerRequest::ElectLeaders {
                election_type,
                topics,
            } => {
                let (outcomes, records) = {
                    let state = self.state.borrow();
                    elect_leaders(
                        &state,
                        election_type,
                        topics.as_deref(),
                        &self.settings.election_defaults(),
                    )
                };
                match self.commit(records).await {
                    Ok(metadata_offset) => ControllerResponse::ElectLeaders {
                        result: Ok(outcomes),
                        metadata_offset,
                    },
                    Err(error) => ControllerResponse::ElectLeaders {
                        result: Err(error),
                        metadata_offset: 0,
                    },
                }
            }
            ControllerRequest::AlterPartitionReassignments {
                topics,
                allow_replication_factor_change,
            } => {
                let (outcomes, records) = {
                    let state = self.state.borrow();
                    alter_partition_reassignments(
                        &state,
                        &topics,
                        allow_replication_factor_change,
                        self.settings.unclean_leader_election_enable,
                    )
                };
                match self.commit(records).await {
                    Ok(metadata_offset) => ControllerResponse::AlterPartitionReassignments {
                        result: Ok(outcomes),
                        metadata_offset,
                    },
                    Err(error) => ControllerResponse::AlterPartitionReassignments {
                        result: Err(error),
                        metadata_offset: 0,
                    },
                }
            }
            ControllerRequest::Raft { .. }
            | ControllerRequest::FetchMetadata { .. }
            | ControllerRequest::ListPartitionReassignments { .. }
            | ControllerRequest::DescribeQuorum => {
                unreachable!("reads are served by serve_request()")
            }
        }
    }

    fn not_controller(&self) -> ControllerResponse {
        ControllerResponse::NotController {
            leader_id: if self.active.get() {
                self.settings.node_id
            } else {
                let leader = self.leader_id();
                if leader == self.settings.node_id {
                    -1 // leading but still catching up: ask again shortly
                } else {
                    leader
                }
            },
        }
    }

    /// Proposes the records as one entry and waits until it is committed and applied.
    async fn commit(&self, records: Vec<MetadataRecord>) -> Result<u64, MetadataError> {
        let Some(raft) = self.raft() else {
            return Err(MetadataError::ControllerNotAvailable);
        };
        if records.is_empty() {
            return Ok(self.state.borrow().applied_index);
        }
        match raft.propose(encode_entry(&records)).await {
            Ok(index) => Ok(index),
            Err(ProposeError::NotLeader(_)) => Err(MetadataError::ControllerNotAvailable),
            Err(ProposeError::Failed(message)) => Err(MetadataError::Storage(message)),
        }
    }

    async fn register_broker(
        &self,
        broker_id: i32,
        incarnation_id: Uuid,
        host: String,
        port: i32,
        rack: Option<String>,
        previous_broker_epoch: Option<i64>,
    ) -> Result<i64, MetadataError> {
        let (records, broker_epoch) = {
            let state = self.state.borrow();
            // KIP-966: a broker whose previous process did not record a clean shutdown of the
            // registration the controller has (its `PreviousBrokerEpoch` differs) may have lost
            // its unflushed tail, so it is no longer an eligible leader of anything. A request
            // without the field (the older frame) is taken as clean, as before ELR.
            let unclean_shutdown = match (state.brokers.get(&broker_id), previous_broker_epoch) {
                (Some(existing), Some(previous)) => previous != existing.broker_epoch,
                _ => false,
            };
            if unclean_shutdown {
                info!(
                    broker_id,
                    ?previous_broker_epoch,
                    "broker registers after an unclean shutdown: it leaves every ELR"
                );
            }
            if let Some(existing) = state.brokers.get(&broker_id) {
                let alive = self
                    .sessions
                    .borrow()
                    .get(&broker_id)
                    .is_some_and(|deadline| *deadline > Instant::now());
                if existing.incarnation_id != incarnation_id && !existing.fenced && alive {
                    return Err(MetadataError::DuplicateBrokerRegistration(broker_id));
                }
            }
            let broker_epoch = state.broker_epoch_max + 1;
            let mut records = vec![MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
            }];
            // A new registration starts fenced: the old one leaves the ISRs and its leaderships
            // move (a restarted process may have lost what it had not flushed, so only its
            // leaders may take it back into their ISRs, once it has caught up).
            records.extend(broker_removed(
                &state,
                broker_id,
                &self.settings.election_defaults(),
                unclean_shutdown,
            ));
            (records, broker_epoch)
        };
        self.commit(records).await?;
        self.renew_session(broker_id);
        info!(
            broker_id,
            broker_epoch, "broker registered (fenced until caught up)"
        );
        Ok(broker_epoch)
    }

    async fn heartbeat(
        &self,
        broker_id: i32,
        broker_epoch: i64,
        current_metadata_offset: i64,
        want_fence: bool,
    ) -> Result<HeartbeatState, MetadataError> {
        let (records, is_caught_up) = {
            let state = self.state.borrow();
            let Some(registration) = state.brokers.get(&broker_id) else {
                return Err(MetadataError::StaleBrokerEpoch);
            };
            if registration.broker_epoch != broker_epoch {
                return Err(MetadataError::StaleBrokerEpoch);
            }
            let is_caught_up = current_metadata_offset >= registration.registered_index as i64;
            let defaults = self.settings.election_defaults();
            let records = match (registration.fenced, want_fence) {
                (true, false) if is_caught_up => {
                    let mut records = vec![MetadataRecord::UnfenceBroker {
                        broker_id,
                        broker_epoch,
                    }];
                    records.extend(broker_unfenced(&state, broker_id, &defaults));
                    records
                }
                // A controlled shutdown (or a broker asking to be fenced): its leaderships move
                // to other ISR members and it leaves the ISRs in the same entry that fences it,
                // while it still runs; it stops once its own image shows that.
                (false, true) => {
                    let mut records = vec![MetadataRecord::FenceBroker {
                        broker_id,
                        broker_epoch,
                    }];
                    records.extend(broker_removed(&state, broker_id, &defaults, false));
                    records
                }
                _ => Vec::new(),
            };
            (records, is_caught_up)
        };
        self.renew_session(broker_id);
        self.note_observer(broker_id, current_metadata_offset);
        let changed = !records.is_empty();
        self.commit(records).await?;
        let is_fenced = self
            .state
            .borrow()
            .brokers
            .get(&broker_id)
            .is_none_or(|b| b.fenced);
        if changed {
            info!(
                broker_id,
                broker_epoch, is_fenced, "broker fencing changed by heartbeat"
            );
        }
        Ok(HeartbeatState {
            is_caught_up,
            is_fenced,
            // It leads nothing once fenced: a shutting-down broker may go.
            should_shut_down: want_fence && is_fenced,
        })
    }

    /// A broker fetched the log, or told its offset in a heartbeat: as an observer of the
    /// quorum, it holds the log up to `log_end_offset`. Voters are not observers (a combined
    /// node's broker follows its own voter).
    fn note_observer(&self, broker_id: i32, log_end_offset: i64) {
        if !self.active.get() || self.settings.voters.iter().any(|(id, _)| *id == broker_id) {
            return;
        }
        let now = raft_driver::epoch_ms() as i64;
        let applied = self.state.borrow().applied_index as i64;
        let mut observers = self.observers.borrow_mut();
        let observer = observers.entry(broker_id).or_insert(ObserverState {
            log_end_offset,
            last_fetch_ms: -1,
            last_caught_up_ms: -1,
            applied_at_last_fetch: i64::MAX,
        });
        // Caught up now if it holds everything; else caught up as of its previous fetch if it
        // holds what this controller had then (KRaft's rule, as for voters in raft_driver).
        if log_end_offset >= applied {
            observer.last_caught_up_ms = now;
        } else if log_end_offset >= observer.applied_at_last_fetch {
            observer.last_caught_up_ms = observer.last_caught_up_ms.max(observer.last_fetch_ms);
        }
        observer.log_end_offset = observer.log_end_offset.max(log_end_offset);
        observer.last_fetch_ms = now;
        observer.applied_at_last_fetch = applied;
    }

    /// DescribeQuorum (KRaft's `KafkaRaftClient.handleDescribeQuorumRequest`): only the leader
    /// answers, from its Raft progress. Offsets are Raft indexes: an entry's index is the
    /// offset after it, so the commit index is the high watermark and a replica's matched
    /// index its log end offset.
    async fn describe_quorum(&self) -> ControllerResponse {
        if !self.active.get() {
            return self.not_controller();
        }
        let Some(raft) = self.raft() else {
            return self.not_controller();
        };
        let Some(status) = raft.status().await else {
            return ControllerResponse::DescribeQuorum {
                result: Err(MetadataError::ControllerNotAvailable),
            };
        };
        if status.leader_id != self.settings.node_id {
            return self.not_controller();
        }
        let voters = status
            .voters
            .iter()
            .map(|v| sluice_shard::QuorumReplica {
                node_id: v.node_id,
                log_end_offset: v.matched.map_or(-1, |m| m as i64),
                last_fetch_ms: v.last_heard_ms,
                last_caught_up_ms: v.last_caught_up_ms,
            })
            .collect();
        let observers = self
            .observers
            .borrow()
            .iter()
            .map(|(id, o)| sluice_shard::QuorumReplica {
                node_id: *id,
                log_end_offset: o.log_end_offset,
                last_fetch_ms: o.last_fetch_ms,
                last_caught_up_ms: o.last_caught_up_ms,
            })
            .collect();
        let endpoints = self
            .settings
            .endpoints
            .iter()
            .map(
                |(node_id, listener, host, port)| sluice_shard::QuorumEndpoint {
                    node_id: *node_id,
                    listener: listener.clone(),
                    host: host.clone(),
                    port: *port,
                },
            )
            .collect();
        ControllerResponse::DescribeQuorum {
            result: Ok(sluice_shard::QuorumInfo {
                leader_id: status.leader_id,
                leader_epoch: i32::try_from(status.term).unwrap_or(i32::MAX),
                high_watermark: status.commit_index as i64,
                voters,
                observers,
                endpoints,
            }),
        }
    }

    /// UpdateFeatures (KRaft's `FeatureControlManager.updateFeatures`): every change is checked
    /// first; one refusal fails the whole request and writes nothing. Otherwise one
    /// FeatureLevel record per change is committed as one entry (none when validating only).
    async fn update_features(
        &self,
        updates: Vec<sluice_shard::FeatureUpdate>,
        validate_only: bool,
    ) -> (Result<(), MetadataError>, u64) {
        let records = {
            let state = self.state.borrow();
            let mut records = Vec::with_capacity(updates.len());
            for update in &updates {
                if let Err(reason) = sluice_shard::check_feature_update(
                    self.settings.node_id,
                    &state.image.finalized_features,
                    update,
                ) {
                    warn!(%reason, "feature update refused");
                    let message = sluice_shard::update_failed_message(&reason);
                    return (Err(MetadataError::InvalidUpdateVersion(message)), 0);
                }
                records.push(MetadataRecord::FeatureLevel {
                    name: update.name.clone(),
                    feature_level: update.level,
                });
            }
            records
        };
        if validate_only {
            return (Ok(()), 0);
        }
        match self.commit(records).await {
            Ok(index) => {
                info!(?updates, "finalized feature levels updated");
                (Ok(()), index)
            }
            Err(error) => (Err(error), 0),
        }
    }

    fn renew_session(&self, broker_id: i32) {
        let deadline = Instant::now() + self.settings.broker_session_timeout;
        self.sessions.borrow_mut().insert(broker_id, deadline);
    }

    /// Why broker `broker_id`'s session is over at `now`, if it is: no heartbeat within
    /// `broker.session.timeout.ms`, or its connections closed by its end and none made again
    /// within `broker_disconnect_fence`.
    fn session_over(&self, broker_id: i32, now: Instant) -> Option<&'static str> {
        let deadline = *self.sessions.borrow().get(&broker_id)?;
        if deadline <= now {
            return Some("its session expired");
        }
        let fence_at = self.disconnected.borrow().get(&broker_id).copied();
        fence_at
            .filter(|at| *at <= now)
            .map(|_| "its controller connection closed and it did not connect again")
    }

    /// A connection carried broker `broker_id`'s own requests: it is reachable again, if it
    /// was not.
    fn broker_connected(&self, broker_id: i32) {
        *self
            .broker_connections
            .borrow_mut()
            .entry(broker_id)
            .or_default() += 1;
        if self.disconnected.borrow_mut().remove(&broker_id).is_some() {
            info!(broker_id, "broker connected again before being fenced");
        }
    }

    /// A connection that carried broker `broker_id`'s requests ended; `by_peer` when the
    /// broker's end closed it or the socket failed. When that was its last one, the broker is
    /// fenced after `broker_disconnect_fence` unless it connects again: a process killed
    /// (kill -9, a crash, the OOM killer) has its sockets closed by the kernel at once, and
    /// waiting out the whole session timeout would leave its partitions leaderless for
    /// seconds. A live broker whose connection broke connects again within its metadata
    /// fetch's retry (tens of milliseconds); a broker that cannot reach the controller at all
    /// keeps its socket open and is fenced by the session timeout, as in Kafka.
    fn broker_disconnected(&self, broker_id: i32, by_peer: bool) {
        let open = {
            let mut connections = self.broker_connections.borrow_mut();
            let Some(count) = connections.get_mut(&broker_id) else {
                return;
            };
            *count = count.saturating_sub(1);
            let open = *count;
            if open == 0 {
                connections.remove(&broker_id);
            }
            open
        };
        let Some(grace) = self.settings.broker_disconnect_fence else {
            return;
        };
        if open > 0 || !by_peer || !self.active.get() {
            return;
        }
        if !self.sessions.borrow().contains_key(&broker_id) {
            return;
        }
        info!(
            broker_id,
            grace_ms = grace.as_millis() as u64,
            "broker's controller connection closed by its end; fencing it unless it connects again"
        );
        self.disconnected
            .borrow_mut()
            .insert(broker_id, Instant::now() + grace);
    }

    /// Fences brokers whose session expired, one entry per broker.
    async fn check_sessions(this: std::rc::Weak<QuorumController>) {
        let mut pause = SESSION_CHECK_INTERVAL;
        loop {
            glommio::timer::sleep(pause).await;
            let Some(controller) = this.upgrade() else {
                break;
            };
            // Only the active controller checks; the others look less often whether they
            // became it (a new active controller gives every broker a whole fresh session).
            if !controller.active.get() {
                pause = INACTIVE_SESSION_CHECK_INTERVAL;
                continue;
            }
            pause = SESSION_CHECK_INTERVAL;
            let now = Instant::now();
            let expired: Vec<i32> = controller
                .sessions
                .borrow()
                .keys()
                .copied()
                .filter(|id| controller.session_over(*id, now).is_some())
                .collect();
            for broker_id in expired {
                controller.fence_expired(broker_id).await;
            }
        }
    }

    /// The automatic leader rebalance (`auto.leader.rebalance.enable`): every `interval`, the
    /// active controller commits a preferred election for each partition whose first replica
    /// can lead again and does not (`partition_change::balance_leaders`); when a round stops at
    /// its budget, the next one follows at once (KRaft's `maybeBalancePartitionLeaders` with
    /// `rescheduleImmediately`).
    async fn balance_leaders_every(this: std::rc::Weak<QuorumController>, interval: Duration) {
        let mut pause = interval;
        loop {
            glommio::timer::sleep(pause).await;
            pause = interval;
            let Some(controller) = this.upgrade() else {
                break;
            };
            let Ok(_permit) = controller.writes.acquire_permit(1).await else {
                break;
            };
            if !controller.active.get() {
                continue;
            }
            let (records, more) = balance_leaders(
                &controller.state.borrow(),
                &controller.settings.election_defaults(),
            );
            if records.is_empty() {
                continue;
            }
            let count = records.len();
            match controller.commit(records).await {
                Ok(index) => {
                    info!(
                        count,
                        index, "leaders moved back to their preferred replicas"
                    );
                    if more {
                        pause = Duration::ZERO;
                    }
                }
                Err(error) => warn!(%error, "the automatic leader rebalance failed"),
            }
        }
    }

    async fn fence_expired(&self, broker_id: i32) {
        let Ok(_permit) = self.writes.acquire_permit(1).await else {
            return;
        };
        if !self.active.get() {
            return;
        }
        let Some(why) = self.session_over(broker_id, Instant::now()) else {
            return;
        };
        let records = {
            let state = self.state.borrow();
            match state.brokers.get(&broker_id) {
                Some(b) if !b.fenced => {
                    let mut records = vec![MetadataRecord::FenceBroker {
                        broker_id,
                        broker_epoch: b.broker_epoch,
                    }];
                    records.extend(broker_removed(
                        &state,
                        broker_id,
                        &self.settings.election_defaults(),
                        false,
                    ));
                    records
                }
                _ => Vec::new(),
            }
        };
        self.sessions.borrow_mut().remove(&broker_id);
        self.disconnected.borrow_mut().remove(&broker_id);
        if records.is_empty() {
            return;
        }
        match self.commit(records).await {
            Ok(index) => warn!(broker_id, index, "broker fenced: {why}"),
            Err(error) => warn!(broker_id, %error, "fencing an expired broker failed"),
        }
    }

    async fn create_topics(
        &self,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> (Vec<Result<CreatedTopic, MetadataError>>, u64) {
        let (results, records) = {
            let state = self.state.borrow();
            let mut results = Vec::with_capacity(topics.len());
            let mut records = Vec::new();
            let mut names: Vec<&str> = Vec::new();
            let mut hosted = partitions_per_broker(&state);
            for topic in &topics {
                let checked = check_new_topic(&state.image, topic, &names)
                    .and_then(|()| self.place(&state, topic, &mut hosted));
                names.push(&topic.name);
                results.push(checked.map(|placed| {
                    let topic_id = new_topic_id();
                    if !validate_only {
                        topic_records(topic, topic_id, placed, &mut records);
                    }
                    CreatedTopic {
                        topic_id,
                        num_partitions: topic.num_partitions,
                        replication_factor: topic.replication_factor,
                    }
                }));
            }
            (results, records)
        };
        self.commit_for(records, results).await
    }

    /// Replicas and ISR of each of a new topic's partitions: as assigned by hand (checked as
    /// Kafka does), else placed over the live brokers; within every broker's partition budget
    /// (`sluice.broker.partitions.max`).
    fn place(
        &self,
        state: &MetadataState,
        topic: &NewTopic,
        hosted: &mut BTreeMap<i32, usize>,
    ) -> Result<Placement, MetadataError> {
        let max = self.settings.partitions_max;
        if let Some(assignments) = &topic.assignments {
            let replication_factor = assignments.first().map_or(0, Vec::len);
            let placed = assignments
                .iter()
                .enumerate()
                .map(|(i, replicas)| manual_partition(state, replicas, replication_factor, i))
                .collect::<Result<Vec<_>, _>>()?;
            return within_budget(placed, hosted, max, topic.num_partitions);
        }
        let brokers: Vec<PlacementBroker> = state
            .live_brokers()
            .map(|b| PlacementBroker {
                id: b.broker_id,
                rack: b.rack.clone(),
            })
            .collect();
        if brokers.is_empty() {
            return Err(MetadataError::InvalidReplicationFactor(
                "no live broker to place replicas on".into(),
            ));
        }
        // The budget first, by arithmetic: a hostile partition count must be refused before
        // any replica list is allocated. Round robin gives each broker at most
        // ceil(partitions × rf / brokers) of the new replicas.
        let new_replicas =
            topic.num_partitions.max(0) as u64 * topic.replication_factor.max(0) as u64;
        let per_broker = new_replicas.div_ceil(brokers.len() as u64);
        let fullest = brokers
            .iter()
            .map(|b| hosted.get(&b.id).copied().unwrap_or(0) as u64)
            .max()
            .unwrap_or(0);
        if fullest + per_broker > max as u64 {
            return Err(MetadataError::InvalidPartitions(format!(
                "{} more partitions would exceed sluice.broker.partitions.max ({max}) on a broker hosting {fullest}",
                topic.num_partitions
            )));
        }
        let start = (new_topic_id().0[0] as usize) % brokers.len();
        let placed = place_replicas(
            &brokers,
            topic.num_partitions as usize,
            topic.replication_factor as usize,
            start,
        );
        // Placed replicas are all live: each partition's ISR is its replicas.
        let placed = placed.into_iter().map(|r| (r.clone(), r)).collect();
        within_budget(placed, hosted, max, topic.num_partitions)
    }

    /// AlterPartition: decided by `partition_change::alter_partition`, the one change
    /// committed before the answer (which then carries the new partition epoch).
    async fn alter_partition(
        &self,
        broker_id: i32,
        broker_epoch: i64,
        item: AlterPartitionItem,
    ) -> Result<AlterPartitionOutcome, MetadataError> {
        let (outcome, record) = {
            let state = self.state.borrow();
            crate::partition_change::alter_partition(
                &state,
                broker_id,
                broker_epoch,
                &item,
                &self.settings.election_defaults(),
            )?
        };
        if let Some(record) = record {
            let index = self.commit(vec![record]).await?;
            info!(
                topic_id = %item.topic_id,
                partition = item.partition,
                isr = ?outcome.isr,
                partition_epoch = outcome.partition_epoch,
                index,
                "ISR changed by its leader"
            );
        } else if !outcome.error.is_none() {
            info!(
                topic_id = %item.topic_id,
                partition = item.partition,
                broker_id,
                error = %outcome.error,
                "AlterPartition refused"
            );
        }
        Ok(outcome)
    }

    async fn delete_topics(
        &self,
        topics: Vec<TopicRef>,
    ) -> (Vec<Result<sluice_shard::DeletedTopic, MetadataError>>, u64) {
        let (results, records) = {
            let state = self.state.borrow();
            let mut results = Vec::with_capacity(topics.len());
            let mut records = Vec::new();
            for topic in &topics {
                let result = if self.settings.delete_topic_enable {
                    find_topic(&state.image, topic)
                } else {
                    Err(MetadataError::TopicDeletionDisabled)
                };
                if let Ok(deleted) = &result {
                    let record = MetadataRecord::RemoveTopic {
                        topic_id: deleted.topic_id,
                    };
                    if !records.contains(&record) {
                        records.push(record);
                    }
                }
                results.push(result);
            }
            (results, records)
        };
        self.commit_for(records, results).await
    }

    /// Grows topics (KIP-195): decided by `replication_control::partition_increase`, the new
    /// partitions of the whole request committed as one entry. Validate-only decides the same
    /// way and writes nothing.
    async fn create_partitions(
        &self,
        topics: Vec<sluice_shard::NewPartitions>,
        validate_only: bool,
    ) -> (Vec<Result<(), MetadataError>>, u64) {
        let (results, records) = {
            let state = self.state.borrow();
            crate::replication_control::partition_increase(
                &state,
                &topics,
                self.settings.partitions_max,
            )
        };
        let records = if validate_only { Vec::new() } else { records };
        self.commit_for(records, results).await
    }

    async fn alter_configs(
        &self,
        topics: Vec<TopicConfigChanges>,
        validate_only: bool,
    ) -> (Vec<Result<(), MetadataError>>, u64) {
        let (results, records) = {
            let state = self.state.borrow();
            let mut results = Vec::with_capacity(topics.len());
            let mut records = Vec::new();
            for changes in &topics {
                results.push(config_records(&state.image, changes).map(|planned| {
                    if !validate_only {
                        // KIP-966: the ELR was kept against the old min ISR; a new one clears
                        // it (Kafka's ClearElrRecord), in the same entry.
                        let min_isr_changed_for = planned.iter().find_map(|record| match record {
                            MetadataRecord::Config { topic_id, name, .. }
                            | MetadataRecord::RemoveConfig { topic_id, name }
                                if name == MIN_INSYNC_REPLICAS =>
                            {
                                Some(*topic_id)
                            }
                            _ => None,
                        });
                        records.extend(planned);
                        if let Some(topic_id) = min_isr_changed_for {
                            records.extend(min_isr_changed(&state, &topic_id));
                        }
                    }
                }));
            }
            (results, records)
        };
        self.commit_for(records, results).await
    }

    /// Hands out the next block of producer ids once the record claiming it is committed
    /// (KRaft's ProducerIdControlManager): no id is ever given twice.
    async fn allocate_producer_ids(&self) -> Result<ProducerIdBlock, MetadataError> {
        let first = self.state.borrow().next_producer_id;
        let end = first
            .checked_add(PRODUCER_ID_BLOCK_SIZE)
            .ok_or_else(|| MetadataError::Storage("producer ids exhausted".into()))?;
        let record = MetadataRecord::ProducerIds {
            next_producer_id: end,
        };
        self.commit(vec![record]).await?;
        Ok(ProducerIdBlock {
            first,
            size: PRODUCER_ID_BLOCK_SIZE,
        })
    }

    /// Commits `records`; if that fails, every accepted result fails with the commit's error.
    async fn commit_for<T>(
        &self,
        records: Vec<MetadataRecord>,
        results: Vec<Result<T, MetadataError>>,
    ) -> (Vec<Result<T, MetadataError>>, u64) {
        match self.commit(records).await {
            Ok(index) => (results, index),
            Err(error) => {
                let failed = results
                    .into_iter()
                    .map(|r| r.and_then(|_| Err(error.clone())))
                    .collect();
                (failed, 0)
            }
        }
    }

    /// Committed entries after `offset_after`; waits up to `max_wait_ms` when there are none.
    /// Each poll leaves nothing behind when it times out (`LocalWatch`), so any number of
    /// idle polls costs no memory and every one waits its full time.
    async fn fetch_metadata(
        &self,
        offset_after: u64,
        max_wait_ms: u32,
        bytes_max: u32,
    ) -> ControllerResponse {
        if self.applied.value() <= offset_after {
            let wait = Duration::from_millis(u64::from(max_wait_ms.min(30_000)));
            futures_lite::future::or(
                self.applied.wait_beyond(offset_after),
                glommio::timer::sleep(wait),
            )
            .await;
        }
        let entries = self.entries.borrow();
        let from = (offset_after as usize).min(entries.len());
        let mut bytes = 0usize;
        let mut out = Vec::new();
        for entry in entries[from..].iter().take(FETCH_ENTRIES_MAX) {
            // At least one entry goes, whatever its size, so a big entry cannot stall a broker.
            if !out.is_empty() && bytes + entry.data.len() > bytes_max as usize {
                break;
            }
            bytes += entry.data.len();
            out.push(entry.clone());
        }
        ControllerResponse::FetchMetadata {
            entries: out,
            committed_index: self.state.borrow().applied_index,
            leader_id: self.leader_id(),
            snapshot_needed: false,
        }
    }

    /// Called once this node is the active controller.
    fn activate(self: &Rc<Self>) {
        self.active.set(true);
        self.observers.borrow_mut().clear();
        let now = Instant::now();
        let timeout = self.settings.broker_session_timeout;
        let live: Vec<i32> = self
            .state
            .borrow()
            .live_brokers()
            .map(|b| b.broker_id)
            .collect();
        {
            self.disconnected.borrow_mut().clear();
            let mut sessions = self.sessions.borrow_mut();
            sessions.clear();
            for id in live {
                sessions.insert(id, now + timeout);
            }
        }
        let term = self.leader_term.get();
        info!(
            node_id = self.settings.node_id,
            term,
            epoch_ms = raft_driver::epoch_ms(),
            "active controller: node {} in term {term}",
            self.settings.node_id
        );
        if self.state.borrow().image.cluster_id.is_empty() {
            let controller = self.clone();
            glommio::spawn_local(async move {
                let Ok(_permit) = controller.writes.acquire_permit(1).await else {
                    return;
                };
                let record = MetadataRecord::ClusterId {
                    cluster_id: new_cluster_id(),
                };
                if let Err(error) = controller.commit(vec![record]).await {
                    warn!(%error, "writing the cluster id failed; the next active controller will");
                }
            })
            .detach();
        }
    }
}

impl RpcHandler for QuorumController {
    fn handle(
        &self,
        request: ControllerRequest,
    ) -> impl std::future::Future<Output = Option<ControllerResponse>> {
        self.serve_request(request)
    }

    fn broker_connected(&self, broker_id: i32) {
        QuorumController::broker_connected(self, broker_id);
    }

    fn broker_disconnected(&self, broker_id: i32, by_peer: bool) {
        QuorumController::broker_disconnected(self, broker_id, by_peer);
    }
}

/// The driver's view of the controller; weak, so that the driver does not keep it alive.
struct ControllerApplier(std::rc::Weak<QuorumController>);

impl Applier for ControllerApplier {
    fn apply(&self, entry: &Entry) {
        if let Some(controller) = self.0.upgrade() {
            controller.apply_committed(entry);
        }
    }

    fn became_leader(&self, term: u64, index_first: u64) {
        if let Some(controller) = self.0.upgrade() {
            controller.active.set(false);
            controller.leader_term.set(term);
            controller.leader_index_first.set(Some(index_first));
        }
    }

    fn leader_changed(&self, _term: u64, _leader_id: i32) {
        if let Some(controller) = self.0.upgrade() {
            if controller.active.get() {
                info!(
                    node_id = controller.settings.node_id,
                    "no longer the active controller"
                );
            }
            controller.active.set(false);
            controller.leader_index_first.set(None);
            controller.sessions.borrow_mut().clear();
            controller.disconnected.borrow_mut().clear();
        }
    }
}

impl QuorumController {
    fn apply_committed(self: &Rc<Self>, entry: &Entry) {
        {
            let mut state = self.state.borrow_mut();
            if entry.data.is_empty() {
                state.skip_entry(entry.index);
            } else {
                match decode_entry(&entry.data) {
                    Ok(records) => state.apply_entry(entry.index, records),
                    Err(error) => {
                        // Written by a controller, checked by CRC on disk: a bug, not input.
                        error!(index = entry.index, %error, "undecodable metadata entry skipped");
                        state.skip_entry(entry.index);
                    }
                }
            }
        }
        let mut entries = self.entries.borrow_mut();
        assert_eq!(
            entries.len() as u64 + 1,
            entry.index,
            "entries applied out of order"
        );
        entries.push(MetadataEntry {
            index: entry.index,
            term: entry.term,
            data: entry.data.to_vec(),
        });
        drop(entries);
        self.applied.advance(entry.index);
        if let Some(first) = self.leader_index_first.get() {
            if !self.active.get() && entry.index >= first {
                self.leader_index_first.set(None);
                self.activate();
            }
        }
    }
}

/// Partitions each live broker hosts now.
fn partitions_per_broker(state: &MetadataState) -> BTreeMap<i32, usize> {
    let mut hosted = BTreeMap::new();
    for topic in state.image.topics.values() {
        for p in &topic.partitions {
            for r in &p.replicas {
                *hosted.entry(*r).or_insert(0) += 1;
            }
        }
    }
    hosted
}

/// `placed` if no broker then hosts more than `max` partitions (`hosted` takes them then).
fn within_budget(
    placed: Placement,
    hosted: &mut BTreeMap<i32, usize>,
    max: usize,
    num_partitions: i32,
) -> Result<Placement, MetadataError> {
    let mut after = hosted.clone();
    for (replicas, _) in &placed {
        for id in replicas {
            *after.entry(*id).or_insert(0) += 1;
        }
    }
    if let Some((id, count)) = after.iter().find(|(_, count)| **count > max) {
        return Err(MetadataError::InvalidPartitions(format!(
            "{num_partitions} more partitions would put {count} on broker {id}, above sluice.broker.partitions.max ({max})"
        )));
    }
    *hosted = after;
    Ok(placed)
}

fn topic_records(
    topic: &NewTopic,
    topic_id: Uuid,
    placed: Placement,
    out: &mut Vec<MetadataRecord>,
) {
    out.push(MetadataRecord::Topic {
        name: topic.name.clone(),
        topic_id,
    });
    for (partition, (replicas, isr)) in placed.into_iter().enumerate() {
        // The first in-sync replica leads (placement and `manual_partition` make the ISR
        // non-empty, in replica order).
        out.push(MetadataRecord::Partition {
            topic_id,
            partition: partition as i32,
            leader: isr.first().copied().unwrap_or(-1),
            isr,
            replicas,
            leader_epoch: 0,
        });
    }
    for (name, value) in &topic.configs {
        out.push(MetadataRecord::Config {
            topic_id,
            name: name.clone(),
            value: sluice_config::topic::validate(name, value).unwrap_or_else(|_| value.clone()),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with_topic() -> (MetadataState, Uuid) {
        let topic_id = Uuid::from_u128(42);
        let mut state = MetadataState::new(1, 0);
        let mut records = Vec::new();
        for id in [4, 5, 6] {
            records.push(MetadataRecord::RegisterBroker {
                broker_id: id,
                incarnation_id: Uuid::from_u128(id as u128),
                broker_epoch: id as i64,
                host: "h".into(),
                port: 1,
                rack: None,
            });
            records.push(MetadataRecord::UnfenceBroker {
                broker_id: id,
                broker_epoch: id as i64,
            });
        }
        records.push(MetadataRecord::Topic {
            name: "t".into(),
            topic_id,
        });
        for (partition, replicas) in [(0, vec![4]), (1, vec![5]), (2, vec![4, 6])] {
            records.push(MetadataRecord::Partition {
                topic_id,
                partition,
                leader: replicas[0],
                isr: replicas.clone(),
                replicas,
                leader_epoch: 3,
            });
        }
        state.apply_entry(1, records);
        (state, topic_id)
    }

    #[test]
    fn a_fenced_broker_leads_nothing_and_gets_its_partitions_back() {
        let (mut state, topic_id) = state_with_topic();
        let defaults = ElectionDefaults::default();
        let lost = broker_removed(&state, 4, &defaults, false);
        // Partition 0 has no other replica: no leader, its ISR empties and 4 stays eligible
        // (ELR, on by default). Partition 2 moves to 6.
        assert_eq!(
            lost,
            vec![
                MetadataRecord::PartitionChange {
                    topic_id,
                    partition: 0,
                    leader: -1,
                    leader_epoch: 4,
                    isr: vec![],
                    eligible_leader_replicas: Some(vec![4]),
                    last_known_elr: Some(vec![4]),
                },
                MetadataRecord::PartitionChange {
                    topic_id,
                    partition: 2,
                    leader: 6,
                    leader_epoch: 4,
                    isr: vec![6],
                    eligible_leader_replicas: None,
                    last_known_elr: None,
                },
            ]
        );
        let mut records = vec![MetadataRecord::FenceBroker {
            broker_id: 4,
            broker_epoch: 4,
        }];
        records.extend(lost);
        state.apply_entry(2, records);
        assert!(state.image.brokers.iter().all(|b| b.node_id != 4));
        let mut regained = vec![MetadataRecord::UnfenceBroker {
            broker_id: 4,
            broker_epoch: 4,
        }];
        regained.extend(broker_unfenced(&state, 4, &defaults));
        assert_eq!(
            regained,
            vec![
                MetadataRecord::UnfenceBroker {
                    broker_id: 4,
                    broker_epoch: 4,
                },
                MetadataRecord::PartitionChange {
                    topic_id,
                    partition: 0,
                    leader: 4,
                    leader_epoch: 5,
                    isr: vec![4],
                    eligible_leader_replicas: Some(vec![]),
                    last_known_elr: Some(vec![]),
                },
            ]
        );
        state.apply_entry(3, regained);
        let topic = state.image.topic("t").unwrap();
        assert_eq!(topic.partitions[0].leader, 4);
        // Partition 2 stays with its new leader; 4 is not back in its ISR: its leader adds it
        // with AlterPartition once it has caught up.
        assert_eq!(topic.partitions[2].leader, 6);
        assert_eq!(topic.partitions[2].isr, vec![6]);
        assert_eq!(
            (
                topic.partitions[0].partition_epoch,
                topic.partitions[2].partition_epoch
            ),
            (2, 1)
        );
    }

    /// Settings of a single local voter with its metadata in a fresh directory.
    fn lone_voter(name: &str) -> (std::path::PathBuf, ControllerSettings) {
        let dir = std::env::temp_dir().join(format!(
            "sluice-controller-{name}-{}-{}",
            std::process::id(),
            raft_driver::epoch_ms()
        ));
        let settings = ControllerSettings {
            node_id: 1,
            voters: vec![(1, None)],
            endpoints: Vec::new(),
            metadata_dir: dir.clone(),
            tick: Duration::from_millis(10),
            election_timeout: Duration::from_millis(200),
            broker_session_timeout: Duration::from_secs(9),
            broker_disconnect_fence: Some(Duration::from_millis(100)),
            delete_topic_enable: true,
            partitions_max: 1000,
            unclean_leader_election_enable: false,
            min_insync_replicas: 1,
            leader_imbalance_check_interval: None,
        };
        (dir, settings)
    }

    /// A broker whose connection to the active controller its end closes (the kernel does so
    /// when the process is killed) is fenced within `broker_disconnect_fence`, long before its
    /// 9 s session would expire; a broker whose connection closes but that connects again at
    /// once, and one whose connection this side closes, keep their sessions.
    #[test]
    fn a_broker_whose_connection_closes_is_fenced_unless_it_connects_again() {
        use crate::rpc_net::{serve, RpcClient};
        let (dir, settings) = lone_voter("disconnect-fence");
        let fence = settings.broker_disconnect_fence.expect("set by lone_voter");
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let controller = QuorumController::start(settings).expect("controller starts");
                wait_for_cluster_id(&controller).await;
                let listener =
                    glommio::net::TcpListener::bind("127.0.0.1:0").expect("listener binds");
                let address = listener.local_addr().expect("bound address");
                let _server = glommio::spawn_local(serve(
                    listener,
                    controller.clone(),
                    16,
                    Duration::from_secs(60),
                ));
                let mut epochs = BTreeMap::new();
                let mut clients = BTreeMap::new();
                for broker_id in [2, 3] {
                    let client = RpcClient::new(address, 8);
                    let answer = client
                        .call(
                            &ControllerRequest::BrokerRegistration {
                                broker_id,
                                incarnation_id: Uuid::from_u128(broker_id as u128),
                                host: "127.0.0.1".into(),
                                port: 9000 + broker_id,
                                rack: None,
                            },
                            Duration::from_secs(5),
                        )
                        .await;
                    let Ok(ControllerResponse::BrokerRegistration { result: Ok(epoch) }) = answer
                    else {
                        panic!("registration refused: {answer:?}");
                    };
                    epochs.insert(broker_id, epoch);
                    clients.insert(broker_id, client);
                }
                let heartbeat = |broker_id: i32| ControllerRequest::BrokerHeartbeat {
                    broker_id,
                    broker_epoch: epochs[&broker_id],
                    current_metadata_offset: i64::MAX,
                    want_fence: false,
                    want_shut_down: false,
                };
                for (broker_id, client) in &clients {
                    let answer = client
                        .call(&heartbeat(*broker_id), Duration::from_secs(5))
                        .await;
                    assert!(
                        matches!(
                            answer,
                            Ok(ControllerResponse::BrokerHeartbeat {
                                result: Ok(HeartbeatState {
                                    is_fenced: false,
                                    ..
                                })
                            })
                        ),
                        "{answer:?}"
                    );
                }
                let fenced = |broker_id: i32| {
                    controller
                        .state
                        .borrow()
                        .brokers
                        .get(&broker_id)
                        .is_none_or(|b| b.fenced)
                };
                // Broker 3 connects again at once over a new connection: it stays unfenced.
                drop(clients.remove(&3));
                let again = RpcClient::new(address, 8);
                let answer = again.call(&heartbeat(3), Duration::from_secs(5)).await;
                assert!(answer.is_ok(), "{answer:?}");
                // Broker 2's process "dies": its connection is closed by its end.
                let closed = Instant::now();
                drop(clients.remove(&2));
                while !fenced(2) {
                    assert!(
                        closed.elapsed() < Duration::from_secs(5),
                        "broker 2 not fenced after its connection closed"
                    );
                    glommio::timer::sleep(Duration::from_millis(10)).await;
                }
                assert!(closed.elapsed() >= fence, "fenced before the grace ran out");
                // Well past the grace: broker 3, connected again, keeps its session.
                glommio::timer::sleep(fence * 5).await;
                assert!(!fenced(3), "a broker that connected again was fenced");
                // Connections this side closes (idle, bad frames) are not evidence: the
                // controller tracks them as closed without a fence.
                controller.broker_connected(3);
                controller.broker_disconnected(3, false);
                glommio::timer::sleep(fence * 3).await;
                assert!(!fenced(3), "fenced after a connection this side closed");
                drop(again);
            })
            .expect("executor")
            .join()
            .expect("test ran");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The single voter elects itself and commits the cluster id.
    async fn wait_for_cluster_id(controller: &QuorumController) {
        let started = Instant::now();
        while controller.state.borrow().image.cluster_id.is_empty() {
            assert!(started.elapsed() < Duration::from_secs(10), "no cluster id");
            glommio::timer::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A broker's metadata long polls on an idle cluster: thousands of polls time out one
    /// after another. Each must wait its whole time and leave nothing behind (a list of
    /// waiters drained only by a commit once filled up after 1,024 idle polls, and from then
    /// on every poll returned at once: the broker's follower spun a core).
    #[test]
    fn idle_metadata_polls_wait_their_full_time_and_leave_nothing_behind() {
        let (dir, settings) = lone_voter("idle-polls");
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let controller = QuorumController::start(settings).expect("controller starts");
                // The single voter elects itself and commits the cluster id; then nothing
                // changes any more.
                wait_for_cluster_id(&controller).await;
                let applied = controller.applied.value();
                assert!(applied > 0);
                const POLLS: u32 = 3_000;
                const WAIT: Duration = Duration::from_millis(1);
                for poll in 0..POLLS {
                    let asked = Instant::now();
                    let answer = controller.fetch_metadata(applied, 1, 1 << 20).await;
                    let waited = asked.elapsed();
                    assert!(waited >= WAIT, "idle poll {poll} returned after {waited:?}");
                    let ControllerResponse::FetchMetadata { entries, .. } = answer else {
                        panic!("poll {poll}: not a FetchMetadata answer");
                    };
                    assert!(entries.is_empty(), "poll {poll}: nothing was committed");
                    assert_eq!(controller.applied.waiting(), 0, "poll {poll} left a waiter");
                }
                // A poll from behind is answered at once with what it missed.
                let asked = Instant::now();
                let answer = controller
                    .fetch_metadata(applied - 1, 30_000, 1 << 20)
                    .await;
                assert!(asked.elapsed() < Duration::from_secs(1));
                let ControllerResponse::FetchMetadata { entries, .. } = answer else {
                    panic!("not a FetchMetadata answer");
                };
                assert_eq!(entries.len(), 1);
            })
            .expect("executor")
            .join()
            .expect("the test ran");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn features_are_updated_through_the_log_and_the_quorum_is_described() {
        use sluice_shard::{FeatureUpdate, UpgradeType};
        let (dir, settings) = lone_voter("features");
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let controller = QuorumController::start(settings).expect("controller starts");
                wait_for_cluster_id(&controller).await;
                let update = |name: &str, level, upgrade_type| FeatureUpdate {
                    name: name.into(),
                    level,
                    upgrade_type,
                };
                let ask = |updates, validate_only| {
                    controller.serve_request(ControllerRequest::UpdateFeatures {
                        updates,
                        validate_only,
                    })
                };
                // One refusal fails the whole request, nothing is written.
                let applied = controller.applied.value();
                let answer = ask(
                    vec![
                        update("metadata.version", 7, UpgradeType::Upgrade),
                        update("group.version", 1, UpgradeType::Upgrade),
                    ],
                    false,
                )
                .await;
                let Some(ControllerResponse::UpdateFeatures {
                    result: Err(MetadataError::InvalidUpdateVersion(message)),
                    ..
                }) = answer
                else {
                    panic!("not refused: {answer:?}");
                };
                assert!(
                    message.starts_with("The update failed for all features since the following feature had an error: Invalid update version 1 for feature group.version."),
                    "{message}"
                );
                assert_eq!(controller.applied.value(), applied);
                // Validate-only writes nothing either.
                let answer = ask(vec![update("metadata.version", 7, UpgradeType::Upgrade)], true).await;
                assert!(matches!(
                    answer,
                    Some(ControllerResponse::UpdateFeatures { result: Ok(()), metadata_offset: 0 })
                ));
                assert_eq!(controller.applied.value(), applied);
                // A legal change is a FeatureLevel record in the log.
                let answer = ask(vec![update("metadata.version", 7, UpgradeType::Upgrade)], false).await;
                let Some(ControllerResponse::UpdateFeatures {
                    result: Ok(()),
                    metadata_offset,
                }) = answer
                else {
                    panic!("not applied: {answer:?}");
                };
                assert_eq!(metadata_offset, applied + 1);
                let entry = controller.entries.borrow()[metadata_offset as usize - 1].clone();
                assert_eq!(
                    decode_entry(&entry.data).expect("entry"),
                    vec![MetadataRecord::FeatureLevel {
                        name: "metadata.version".into(),
                        feature_level: 7
                    }]
                );
                // The lone voter leads: its term, its commit index, itself caught up now.
                let Some(ControllerResponse::DescribeQuorum { result: Ok(info) }) =
                    controller.serve_request(ControllerRequest::DescribeQuorum).await
                else {
                    panic!("no quorum description");
                };
                assert_eq!(info.leader_id, 1);
                assert!(info.leader_epoch >= 1);
                assert_eq!(info.high_watermark, metadata_offset as i64);
                assert_eq!(info.voters.len(), 1);
                assert_eq!(info.voters[0].log_end_offset, metadata_offset as i64);
                assert!(info.voters[0].last_caught_up_ms > 0);
                assert!(info.observers.is_empty());
            })
            .expect("executor")
            .join()
            .expect("the test ran");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_fenced_follower_only_leaves_the_isr() {
        let (state, topic_id) = state_with_topic();
        let defaults = ElectionDefaults::default();
        assert_eq!(
            broker_removed(&state, 6, &defaults, false),
            vec![MetadataRecord::PartitionChange {
                topic_id,
                partition: 2,
                leader: 4,
                leader_epoch: 3,
                isr: vec![4],
                eligible_leader_replicas: None,
                last_known_elr: None,
            }]
        );
        assert!(broker_removed(&state, 99, &defaults, false).is_empty());
    }

    /// Three brokers on one voter: a topic with 3 replicas is created, its leader shrinks the
    /// ISR through AlterPartition (one committed change, the answer carrying the new partition
    /// epoch), and a controlled shutdown of the leader moves leadership to the ISR member left
    /// and fences the old leader's later requests by leader epoch.
    #[test]
    fn replicated_topics_take_isr_changes_and_lose_their_leader_to_the_isr() {
        use sluice_protocol::error::ErrorCode;
        let (dir, settings) = lone_voter("alter-partition");
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let controller = QuorumController::start(settings).expect("controller starts");
                wait_for_cluster_id(&controller).await;
                let mut epochs = BTreeMap::new();
                for broker_id in [1, 2, 3] {
                    let answer = controller
                        .serve_request(ControllerRequest::BrokerRegistration {
                            broker_id,
                            incarnation_id: Uuid::from_u128(broker_id as u128),
                            host: "127.0.0.1".into(),
                            port: 9000 + broker_id,
                            rack: None,
                        })
                        .await;
                    let Some(ControllerResponse::BrokerRegistration { result: Ok(epoch) }) = answer
                    else {
                        panic!("registration refused: {answer:?}");
                    };
                    epochs.insert(broker_id, epoch);
                }
                let heartbeat = |broker_id: i32, want_fence: bool| {
                    controller.serve_request(ControllerRequest::BrokerHeartbeat {
                        broker_id,
                        broker_epoch: epochs[&broker_id],
                        current_metadata_offset: i64::MAX,
                        want_fence,
                        want_shut_down: want_fence,
                    })
                };
                for broker_id in [1, 2, 3] {
                    let answer = heartbeat(broker_id, false).await;
                    assert!(
                        matches!(
                            answer,
                            Some(ControllerResponse::BrokerHeartbeat {
                                result: Ok(HeartbeatState {
                                    is_fenced: false,
                                    ..
                                })
                            })
                        ),
                        "{answer:?}"
                    );
                }
                let answer = controller
                    .serve_request(ControllerRequest::CreateTopics {
                        topics: vec![NewTopic {
                            name: "r3".into(),
                            num_partitions: 1,
                            replication_factor: 3,
                            configs: Vec::new(),
                            assignments: None,
                        }],
                        validate_only: false,
                    })
                    .await;
                let Some(ControllerResponse::CreateTopics { results, .. }) = answer else {
                    panic!("{answer:?}");
                };
                let topic_id = results[0].as_ref().expect("RF 3 on 3 brokers").topic_id;
                // A manual assignment is used as given, led by its first replica; one naming a
                // broker that is not registered is refused with Kafka's words.
                let manual = |name: &str, assignments: Vec<Vec<i32>>| {
                    controller.serve_request(ControllerRequest::CreateTopicsAssigned {
                        topics: vec![NewTopic {
                            name: name.into(),
                            num_partitions: assignments.len() as i32,
                            replication_factor: assignments[0].len() as i16,
                            configs: Vec::new(),
                            assignments: None,
                        }],
                        assignments: vec![Some(assignments)],
                        validate_only: false,
                    })
                };
                let answer = manual("m", vec![vec![3, 1], vec![2, 3]]).await;
                let Some(ControllerResponse::CreateTopics { results, .. }) = answer else {
                    panic!("{answer:?}");
                };
                assert!(results[0].is_ok(), "{results:?}");
                let placed: Vec<(Vec<i32>, Vec<i32>, i32)> = controller.state.borrow().image.topic("m")
                    .unwrap()
                    .partitions
                    .iter()
                    .map(|p| (p.replicas.clone(), p.isr.clone(), p.leader))
                    .collect();
                assert_eq!(
                    placed,
                    vec![(vec![3, 1], vec![3, 1], 3), (vec![2, 3], vec![2, 3], 2)]
                );
                let answer = manual("m3", vec![vec![]]).await;
                let Some(ControllerResponse::CreateTopics { results, .. }) = answer else {
                    panic!("{answer:?}");
                };
                match &results[0] {
                    Err(MetadataError::InvalidReplicaAssignment(message)) => assert_eq!(
                        message,
                        "The manual partition assignment includes an empty replica list."
                    ),
                    other => panic!("{other:?}"),
                }
                let answer = manual("m2", vec![vec![3, 9]]).await;
                let Some(ControllerResponse::CreateTopics { results, .. }) = answer else {
                    panic!("{answer:?}");
                };
                match &results[0] {
                    Err(MetadataError::InvalidReplicaAssignment(message)) => assert_eq!(
                        message,
                        "The manual partition assignment includes broker 9, but no such broker is registered."
                    ),
                    other => panic!("{other:?}"),
                }
                let partition = || {
                    controller
                        .state
                        .borrow()
                        .image
                        .topic("r3")
                        .unwrap()
                        .partitions[0]
                        .clone()
                };
                let p = partition();
                assert_eq!(p.isr, p.replicas);
                assert_eq!(
                    (p.leader, p.leader_epoch, p.partition_epoch),
                    (p.replicas[0], 0, 0)
                );
                let leader = p.leader;
                let (follower, last) = (p.replicas[1], p.replicas[2]);
                let alter = |broker_id: i32, leader_epoch, partition_epoch, isr: Vec<i32>| {
                    controller.serve_request(ControllerRequest::AlterPartition {
                        broker_id,
                        broker_epoch: epochs[&broker_id],
                        item: AlterPartitionItem {
                            topic_id,
                            partition: 0,
                            leader_id: broker_id,
                            leader_epoch,
                            partition_epoch,
                            new_isr: isr.iter().map(|id| (*id, epochs[id])).collect(),
                        },
                    })
                };
                let applied = controller.applied.value();
                let answer = alter(leader, 0, 0, vec![leader, last]).await;
                let Some(ControllerResponse::AlterPartition {
                    result: Ok(outcome),
                }) = answer
                else {
                    panic!("{answer:?}");
                };
                assert_eq!(
                    outcome,
                    AlterPartitionOutcome {
                        error: ErrorCode::NONE,
                        leader_id: leader,
                        leader_epoch: 0,
                        partition_epoch: 1,
                        isr: vec![leader, last],
                    }
                );
                assert_eq!(controller.applied.value(), applied + 1);
                let p = partition();
                assert_eq!((p.partition_epoch, p.isr.clone()), (1, vec![leader, last]));
                // The same change again, on the old partition epoch: refused, nothing written.
                let answer = alter(leader, 0, 0, vec![leader, last]).await;
                let Some(ControllerResponse::AlterPartition {
                    result: Ok(outcome),
                }) = answer
                else {
                    panic!("{answer:?}");
                };
                assert_eq!(outcome.error, ErrorCode::INVALID_UPDATE_VERSION);
                assert_eq!(controller.applied.value(), applied + 1);
                // The leader shuts down: the ISR member left leads, the old leader is out of
                // the ISR, and the heartbeat lets it go.
                let answer = heartbeat(leader, true).await;
                assert!(
                    matches!(
                        answer,
                        Some(ControllerResponse::BrokerHeartbeat {
                            result: Ok(HeartbeatState {
                                is_fenced: true,
                                should_shut_down: true,
                                ..
                            })
                        })
                    ),
                    "{answer:?}"
                );
                let p = partition();
                assert_eq!(
                    (p.leader, p.leader_epoch, p.partition_epoch, p.isr.clone()),
                    (last, 1, 2, vec![last])
                );
                // The old leader's late request is fenced by the leader epoch.
                let answer = alter(leader, 0, 1, vec![leader, last, follower]).await;
                let Some(ControllerResponse::AlterPartition {
                    result: Ok(outcome),
                }) = answer
                else {
                    panic!("{answer:?}");
                };
                assert_eq!(
                    (outcome.error, outcome.leader_id, outcome.leader_epoch),
                    (ErrorCode::FENCED_LEADER_EPOCH, last, 1)
                );
                // The new leader takes the follower back; the fenced one is not eligible.
                let answer = alter(last, 1, 2, vec![last, leader]).await;
                let Some(ControllerResponse::AlterPartition {
                    result: Ok(outcome),
                }) = answer
                else {
                    panic!("{answer:?}");
                };
                assert_eq!(outcome.error, ErrorCode::INELIGIBLE_REPLICA);
                let answer = alter(last, 1, 2, vec![last, follower]).await;
                let Some(ControllerResponse::AlterPartition {
                    result: Ok(outcome),
                }) = answer
                else {
                    panic!("{answer:?}");
                };
                assert_eq!(
                    (outcome.error, outcome.partition_epoch, outcome.isr),
                    (ErrorCode::NONE, 3, vec![last, follower])
                );
            })
            .expect("executor")
            .join()
            .expect("the test ran");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn partitions_are_counted_per_hosting_broker() {
        let (state, _) = state_with_topic();
        let hosted = partitions_per_broker(&state);
        assert_eq!(hosted.get(&4), Some(&2));
        assert_eq!(hosted.get(&5), Some(&1));
        assert_eq!(hosted.get(&6), Some(&1));
    }
}
