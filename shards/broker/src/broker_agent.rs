//! The broker side of the cluster metadata, on the controller executor of a broker process:
//! KRaft's BrokerLifecycleManager (register, heartbeat, fenced until caught up), its
//! MetadataLoader/Publisher (follow the committed metadata log, rebuild the image, hand it to
//! every shard), and its forwarding manager (admin changes from the shards go to the active
//! controller, and are answered once this broker's own image shows them).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use sluice_controller::rpc::{ControllerRequest, ControllerResponse, MetadataEntry};
use sluice_controller::rpc_net::RpcClient;
use sluice_controller::{decode_entry, new_topic_id, MetadataState, QuorumController};
use sluice_protocol::codec::Uuid;
use sluice_shard::{
    ControllerMessage, ControllerReceivers, LocalWatch, MetadataError, ShardId, ShardMessage,
    ShardSenders,
};
use tracing::{debug, error, info, warn};

/// How long a forwarded change or a lifecycle call may take before the shard is told the
/// controller is not available (the client retries).
const CALL_DEADLINE: Duration = Duration::from_secs(10);
/// One RPC's timeout: a dead controller is given up on after this.
const RPC_TIMEOUT: Duration = Duration::from_secs(3);
/// Pause before retrying another controller.
const RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// The follower logs its count of fetches (debug level) every this many.
const FETCHES_LOGGED_EVERY: u64 = 1_000;
/// Bytes of entries per fetch answer.
const FETCH_BYTES_MAX: u32 = 1 << 20;
/// How long a stopping broker waits for the controller to fence it.
const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);
/// While fenced, heartbeat this often, so that the broker is unfenced as soon as it caught up.
const FENCED_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(50);

/// What the agent needs from the configuration.
#[derive(Clone, Debug)]
pub struct AgentSettings {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised client host.
    pub host: String,
    /// Advertised client port.
    pub port: i32,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// Data shards in this process.
    pub shard_count: usize,
    /// `sluice.metadata.fetch.max.wait.ms`: how long a metadata fetch waits on the controller
    /// for new entries.
    pub metadata_fetch_max_wait: Duration,
    /// The broker epoch the previous process recorded at its clean shutdown, -1 if none
    /// (`.kafka_cleanshutdown`, KIP-966).
    pub previous_broker_epoch: i64,
}

/// How this broker reaches the active controller.
pub enum ControllerLink {
    /// The controller of this same process, the single local voter (no network).
    Local(Rc<QuorumController>),
    /// The voters over the controller listener.
    Remote {
        /// Node id and client per voter.
        voters: Vec<(i32, RpcClient)>,
        /// Index in `voters` tried first: the last known leader.
        target: Cell<usize>,
    },
}

impl ControllerLink {
    /// The voters, each with its address.
    pub fn remote(voters: Vec<(i32, std::net::SocketAddr)>) -> ControllerLink {
        ControllerLink::Remote {
            voters: voters
                .into_iter()
                .map(|(id, addr)| (id, RpcClient::new(addr, 64)))
                .collect(),
            target: Cell::new(0),
        }
    }

    /// One call to one controller (the current target). Returns the voter index asked.
    async fn call_once(&self, request: &ControllerRequest) -> (usize, Option<ControllerResponse>) {
        match self {
            ControllerLink::Local(controller) => {
                (0, controller.serve_in_process(request.clone()).await)
            }
            ControllerLink::Remote { voters, target } => {
                let asked = target.get() % voters.len();
                let (id, client) = &voters[asked];
                match client.call(request, RPC_TIMEOUT).await {
                    Ok(response) => (asked, Some(response)),
                    Err(error) => {
                        debug!(controller = id, %error, "controller call failed");
                        (asked, None)
                    }
                }
            }
        }
    }

    /// After voter `asked` could not serve a call: move to the hinted leader, or to the voter
    /// after `asked` — unless a concurrent caller has moved the target already (several callers
    /// failing on one dead voter must not step past the live ones together).
    fn retarget(&self, asked: usize, leader_hint: i32) {
        if let ControllerLink::Remote { voters, target } = self {
            let hinted = voters.iter().position(|(id, _)| *id == leader_hint);
            match hinted {
                Some(i) if leader_hint >= 0 && i != asked => target.set(i),
                _ if target.get() % voters.len() == asked => target.set((asked + 1) % voters.len()),
                _ => {}
            }
        }
    }

    /// Calls until a controller that may answer it does: writes go to the active controller
    /// (NotController moves on to its hint), fetches to any voter.
    pub async fn call(
        &self,
        request: &ControllerRequest,
    ) -> Result<ControllerResponse, MetadataError> {
        let deadline = Instant::now() + CALL_DEADLINE;
        loop {
            match self.call_once(request).await {
                (asked, Some(ControllerResponse::NotController { leader_id })) => {
                    self.retarget(asked, leader_id)
                }
                (_, Some(response)) => return Ok(response),
                (asked, None) => self.retarget(asked, -1),
            }
            if Instant::now() >= deadline {
                return Err(MetadataError::ControllerNotAvailable);
            }
            glommio::timer::sleep(RETRY_BACKOFF).await;
        }
    }
}

/// The broker's agent.
pub struct BrokerAgent {
    settings: AgentSettings,
    link: ControllerLink,
    /// Senders to every data shard (images to apply).
    shards: Rc<ShardSenders>,
    state: RefCell<MetadataState>,
    incarnation_id: Uuid,
    broker_epoch: Cell<i64>,
    fenced: Cell<bool>,
    /// The metadata offset of the image every shard holds; forwarded changes wait on it.
    published: LocalWatch,
    /// Metadata fetches made (logged at debug level every `FETCHES_LOGGED_EVERY`).
    fetches: Cell<u64>,
    unfenced: RefCell<Option<oneshot::Sender<()>>>,
}

impl BrokerAgent {
    /// A new agent; `unfenced` fires once this broker is registered, unfenced and its shards
    /// hold an image that says so (the broker is then ready).
    pub fn new(
        settings: AgentSettings,
        link: ControllerLink,
        shards: Rc<ShardSenders>,
        unfenced: oneshot::Sender<()>,
    ) -> Rc<BrokerAgent> {
        let state = MetadataState::new(settings.node_id, settings.shard_count);
        Rc::new(BrokerAgent {
            settings,
            link,
            shards,
            state: RefCell::new(state),
            // A random id as Kafka's Uuid.randomUuid (which skips the same reserved ids).
            incarnation_id: new_topic_id(),
            broker_epoch: Cell::new(-1),
            fenced: Cell::new(true),
            published: LocalWatch::new(0),
            fetches: Cell::new(0),
            unfenced: RefCell::new(Some(unfenced)),
        })
    }

    /// Follows the log, keeps the registration alive, and serves the shards' controller work
    /// until every shard is gone.
    pub async fn run(self: Rc<Self>, mut receivers: ControllerReceivers) {
        let controller = receivers.controller();
        let follower = glommio::spawn_local(self.clone().follow_log());
        let lifecycle = glommio::spawn_local(self.clone().lifecycle());
        let mut feeders = Vec::new();
        for receiver in receivers.streams() {
            let agent = self.clone();
            feeders.push(glommio::spawn_local(async move {
                while let Some(envelope) = receiver.recv().await {
                    assert_eq!(
                        envelope.target, controller,
                        "misrouted message from {}",
                        envelope.origin
                    );
                    let agent = agent.clone();
                    glommio::spawn_local(async move { agent.serve(envelope.message).await })
                        .detach();
                }
            }));
        }
        for feeder in feeders {
            feeder.await;
        }
        drop(follower);
        drop(lifecycle);
    }

    async fn serve(&self, message: ControllerMessage) {
        match message {
            ControllerMessage::CreateTopics(work) => {
                let count = work.topics.len();
                // Manual assignments travel in a kind of their own (CreateTopics' bytes are
                // those every build speaks).
                let request = if work.topics.iter().any(|t| t.assignments.is_some()) {
                    let assignments = work.topics.iter().map(|t| t.assignments.clone()).collect();
                    ControllerRequest::CreateTopicsAssigned {
                        topics: work.topics,
                        assignments,
                        validate_only: work.validate_only,
                    }
                } else {
                    ControllerRequest::CreateTopics {
                        topics: work.topics,
                        validate_only: work.validate_only,
                    }
                };
                let results = self
                    .forward_change(&request, count, |response| match response {
                        ControllerResponse::CreateTopics {
                            results,
                            metadata_offset,
                        } => Some((results, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(results);
            }
            ControllerMessage::DeleteTopics(work) => {
                let count = work.topics.len();
                let request = ControllerRequest::DeleteTopics {
                    topics: work.topics,
                };
                let results = self
                    .forward_change(&request, count, |response| match response {
                        ControllerResponse::DeleteTopics {
                            results,
                            metadata_offset,
                        } => Some((results, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(results);
            }
            ControllerMessage::CreatePartitions(work) => {
                let count = work.topics.len();
                let request = ControllerRequest::CreatePartitions {
                    topics: work.topics,
                    validate_only: work.validate_only,
                };
                let results = self
                    .forward_change(&request, count, |response| match response {
                        ControllerResponse::CreatePartitions {
                            results,
                            metadata_offset,
                        } => Some((results, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(results);
            }
            ControllerMessage::AlterConfigs(work) => {
                let count = work.topics.len();
                let request = ControllerRequest::AlterConfigs {
                    topics: work.topics,
                    validate_only: work.validate_only,
                };
                let results = self
                    .forward_change(&request, count, |response| match response {
                        ControllerResponse::AlterConfigs {
                            results,
                            metadata_offset,
                        } => Some((results, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(results);
            }
            ControllerMessage::AllocateProducerIds(work) => {
                let request = ControllerRequest::AllocateProducerIds {
                    broker_id: self.settings.node_id,
                };
                let result = match self.forward(&request).await {
                    Ok(ControllerResponse::AllocateProducerIds { result }) => result,
                    Ok(_) | Err(_) => Err(MetadataError::ControllerNotAvailable),
                };
                let _ = work.reply.send(result);
            }
            ControllerMessage::DescribeQuorum(work) => {
                let result = match self.forward(&ControllerRequest::DescribeQuorum).await {
                    Ok(ControllerResponse::DescribeQuorum { result }) => result,
                    Ok(_) => Err(MetadataError::ControllerNotAvailable),
                    Err(error) => Err(error),
                };
                let _ = work.reply.send(result);
            }
            ControllerMessage::UpdateFeatures(work) => {
                let request = ControllerRequest::UpdateFeatures {
                    updates: work.updates,
                    validate_only: work.validate_only,
                };
                // Answered once this broker's image shows the new levels, as Kafka's describe
                // right after an upgrade does.
                let result = self
                    .forward_applied(&request, |response| match response {
                        ControllerResponse::UpdateFeatures {
                            result,
                            metadata_offset,
                        } => Some((result, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(result);
            }
            ControllerMessage::AlterPartition(work) => {
                // Kafka's AlterPartitionManager: sent with this broker's id and registration
                // epoch, answered from the controller's reply (the change reaches the shards'
                // images through the log as any other).
                let request = ControllerRequest::AlterPartition {
                    broker_id: self.settings.node_id,
                    broker_epoch: self.broker_epoch.get(),
                    item: work.item,
                };
                let result = match self.forward(&request).await {
                    Ok(ControllerResponse::AlterPartition { result }) => result,
                    Ok(_) => Err(MetadataError::ControllerNotAvailable),
                    Err(error) => Err(error),
                };
                let _ = work.reply.send(result);
            }
            ControllerMessage::ElectLeaders(work) => {
                let request = ControllerRequest::ElectLeaders {
                    election_type: work.election_type,
                    topics: work.topics,
                };
                // Answered once this broker's image has the new leaders, so that a client
                // describing the topic right after sees them.
                let result = self
                    .forward_applied(&request, |response| match response {
                        ControllerResponse::ElectLeaders {
                            result,
                            metadata_offset,
                        } => Some((result, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(result);
            }
            ControllerMessage::AlterPartitionReassignments(work) => {
                let request = ControllerRequest::AlterPartitionReassignments {
                    topics: work.topics,
                    allow_replication_factor_change: work.allow_replication_factor_change,
                };
                // Answered once this broker's image has the new replicas, so that a
                // ListPartitionReassignments or a describe right after sees them.
                let result = self
                    .forward_applied(&request, |response| match response {
                        ControllerResponse::AlterPartitionReassignments {
                            result,
                            metadata_offset,
                        } => Some((result, metadata_offset)),
                        _ => None,
                    })
                    .await;
                let _ = work.reply.send(result);
            }
            ControllerMessage::AlterBrokerConfigs(work) => {
                let count = work.brokers.len();
                let request = ControllerRequest::AlterBrokerConfigs {
                    brokers: work.brokers,
                    validate_only: work.validate_only,
                };
                let results = match self.forward(&request).await {
                    Ok(ControllerResponse::AlterBrokerConfigs {
                        results,
                        metadata_offset,
                    }) if results.len() == count => {
                        // Answer once this broker applies the new rates: a describe right
                        // after shows them.
                        if metadata_offset > 0 {
                            self.wait_applied(metadata_offset).await;
                        }
                        results
                    }
                    Ok(_) => vec![Err(MetadataError::ControllerNotAvailable); count],
                    Err(error) => vec![Err(error); count],
                };
                let _ = work.reply.send(results);
            }
            ControllerMessage::ListPartitionReassignments(work) => {
                let request = ControllerRequest::ListPartitionReassignments {
                    topics: work.topics,
                };
                let result = match self.forward(&request).await {
                    Ok(ControllerResponse::ListPartitionReassignments { result }) => result,
                    Ok(_) => Err(MetadataError::ControllerNotAvailable),
                    Err(error) => Err(error),
                };
                let _ = work.reply.send(result);
            }
        }
    }

    async fn forward(
        &self,
        request: &ControllerRequest,
    ) -> Result<ControllerResponse, MetadataError> {
        self.link.call(request).await
    }

    /// Forwards a change with one result per item, and answers once this broker's shards hold
    /// an image that includes it (a client told "created" finds the topic here at once).
    async fn forward_change<T>(
        &self,
        request: &ControllerRequest,
        count: usize,
        results_of: impl FnOnce(ControllerResponse) -> Option<(Vec<Result<T, MetadataError>>, u64)>,
    ) -> Vec<Result<T, MetadataError>> {
        match self.forward(request).await {
            Ok(response) => match results_of(response) {
                Some((results, metadata_offset)) => {
                    self.wait_applied(metadata_offset).await;
                    results
                }
                None => failed_all(MetadataError::ControllerNotAvailable, count),
            },
            Err(error) => failed_all(error, count),
        }
    }
    /// Forwards a change with one result; when it succeeded, waits until this broker's image
    /// includes the entry that made it (`metadata_offset`, 0 when nothing was written).
    async fn forward_applied<T>(
        &self,
        request: &ControllerRequest,
        result_of: impl FnOnce(ControllerResponse) -> Option<(Result<T, MetadataError>, u64)>,
    ) -> Result<T, MetadataError> {
        let response = self.forward(request).await?;
        let (result, metadata_offset) =
            result_of(response).ok_or(MetadataError::ControllerNotAvailable)?;
        if result.is_ok() && metadata_offset > 0 {
            self.wait_applied(metadata_offset).await;
        }
        result
    }

    /// Waits (bounded) until this broker's image includes `offset`, so that a client told
    /// "created" finds the topic here at once.
    async fn wait_applied(&self, offset: u64) {
        if self.published.value() >= offset {
            return;
        }
        futures_lite::future::or(
            self.published.wait_beyond(offset - 1),
            glommio::timer::sleep(CALL_DEADLINE),
        )
        .await;
    }

    /// KRaft's MetadataLoader: fetch committed entries, apply, publish. Each fetch is a long
    /// poll that the controller holds until something is committed or the wait is over; an
    /// empty answer that comes back early (a controller that cannot wait, a failing link) is
    /// followed by a pause, so that this loop never spins however the controller behaves.
    async fn follow_log(self: Rc<Self>) {
        let max_wait = self.settings.metadata_fetch_max_wait;
        let mut published_once = false;
        loop {
            let request = ControllerRequest::FetchMetadata {
                broker_id: self.settings.node_id,
                offset_after: self.state.borrow().applied_index,
                max_wait_ms: u32::try_from(max_wait.as_millis()).unwrap_or(u32::MAX),
                bytes_max: FETCH_BYTES_MAX,
            };
            let asked = Instant::now();
            let answer = self.link.call(&request).await;
            self.count_fetch();
            let (entries, leader_id) = match answer {
                Ok(ControllerResponse::FetchMetadata {
                    entries, leader_id, ..
                }) => (entries, leader_id),
                Ok(other) => {
                    warn!(?other, "unexpected answer to a metadata fetch");
                    glommio::timer::sleep(RETRY_BACKOFF).await;
                    continue;
                }
                Err(error) => {
                    debug!(%error, "metadata fetch failed; retrying");
                    glommio::timer::sleep(RETRY_BACKOFF).await;
                    continue;
                }
            };
            let changed = !entries.is_empty();
            if !changed && asked.elapsed() < max_wait / 2 {
                glommio::timer::sleep(RETRY_BACKOFF.min(max_wait)).await;
            }
            self.apply(entries);
            // The shards start serving with the first image, and that waits until this broker
            // is unfenced in it: as Kafka's broker, which opens its listeners only once caught up
            // and unfenced, so that no client request arrives before the broker can serve it.
            let first = !published_once && self.live_here();
            if (changed && published_once) || first {
                let published = self.publish(leader_id).await;
                published_once = true;
                self.after_publish(published);
            }
        }
    }

    fn count_fetch(&self) {
        let fetches = self.fetches.get() + 1;
        self.fetches.set(fetches);
        if fetches.is_multiple_of(FETCHES_LOGGED_EVERY) {
            debug!(fetches, "metadata log follower: fetches made");
        }
    }

    fn apply(&self, entries: Vec<MetadataEntry>) {
        let mut state = self.state.borrow_mut();
        for entry in entries {
            if entry.index <= state.applied_index {
                continue; // a retried fetch answered twice
            }
            if entry.index != state.applied_index + 1 {
                warn!(
                    index = entry.index,
                    applied = state.applied_index,
                    "metadata entries out of sequence; refetching"
                );
                return;
            }
            if entry.data.is_empty() {
                state.skip_entry(entry.index);
                continue;
            }
            match decode_entry(&entry.data) {
                Ok(records) => state.apply_entry(entry.index, records),
                Err(error) => {
                    error!(index = entry.index, %error, "undecodable metadata entry skipped");
                    state.skip_entry(entry.index);
                }
            }
        }
    }

    /// Sends the image to every shard and waits until all applied it. Returns the metadata
    /// offset the shards now serve.
    async fn publish(&self, leader_id: i32) -> u64 {
        let (image, index) = {
            let mut state = self.state.borrow_mut();
            state.image.controller_id = leader_id;
            (Arc::new(state.image.clone()), state.applied_index)
        };
        let mut pending = Vec::with_capacity(self.settings.shard_count);
        for shard in 0..self.settings.shard_count {
            let (reply, done) = oneshot::channel();
            let message = ShardMessage::ApplyMetadata {
                image: image.clone(),
                reply,
            };
            if self
                .shards
                .send(ShardId(shard as u16), message)
                .await
                .is_err()
            {
                return self.published.value(); // shutting down
            }
            pending.push(done);
        }
        for done in pending {
            let _ = done.await;
        }
        index
    }

    fn after_publish(&self, published: u64) {
        self.published.advance(published);
        if self.live_here() {
            if let Some(unfenced) = self.unfenced.borrow_mut().take() {
                let _ = unfenced.send(());
            }
        }
    }

    /// Whether the applied log shows this broker's current registration unfenced.
    fn live_here(&self) -> bool {
        let state = self.state.borrow();
        state
            .brokers
            .get(&self.settings.node_id)
            .is_some_and(|b| !b.fenced && b.broker_epoch == self.broker_epoch.get())
    }

    /// KRaft's BrokerLifecycleManager: register, then heartbeat; register again when the
    /// controller no longer knows this registration.
    async fn lifecycle(self: Rc<Self>) {
        loop {
            self.register().await;
            self.heartbeat_until_stale().await;
        }
    }

    async fn register(&self) {
        let mut logged_duplicate = false;
        loop {
            // KIP-966: the controller takes a broker whose previous registration it cannot match
            // out of every ELR. Within this process the previous registration is its own (it
            // lost nothing); at start, the one its last clean shutdown recorded.
            let previous_broker_epoch = match self.broker_epoch.get() {
                -1 => self.settings.previous_broker_epoch,
                own => own,
            };
            let request = ControllerRequest::BrokerRegistrationWithPreviousEpoch {
                broker_id: self.settings.node_id,
                incarnation_id: self.incarnation_id,
                host: self.settings.host.clone(),
                port: self.settings.port,
                rack: self.settings.rack.clone(),
                previous_broker_epoch,
            };
            match self.link.call(&request).await {
                Ok(ControllerResponse::BrokerRegistration {
                    result: Ok(broker_epoch),
                }) => {
                    info!(
                        broker_id = self.settings.node_id,
                        broker_epoch, "registered with the controller"
                    );
                    self.broker_epoch.set(broker_epoch);
                    self.fenced.set(true);
                    return;
                }
                Ok(ControllerResponse::BrokerRegistration {
                    result: Err(MetadataError::DuplicateBrokerRegistration(_)),
                }) => {
                    // Our previous life's session has not expired yet (Kafka waits too).
                    if !logged_duplicate {
                        info!(
                            broker_id = self.settings.node_id,
                            "an earlier registration of this broker id is still live; retrying until its session expires"
                        );
                        logged_duplicate = true;
                    }
                    glommio::timer::sleep(self.settings.heartbeat_interval / 4).await;
                }
                other => {
                    debug!(?other, "registration not accepted yet; retrying");
                    glommio::timer::sleep(RETRY_BACKOFF).await;
                }
            }
        }
    }

    /// The epoch of this broker's current registration, -1 before the first.
    pub fn broker_epoch(&self) -> i64 {
        self.broker_epoch.get()
    }

    /// KRaft's controlled shutdown, shortened to one step: asks the controller to fence this
    /// broker now, which in the same entry moves its leaderships to other in-sync replicas and
    /// takes it out of every ISR, instead of the partitions waiting out the session timeout;
    /// its next start registers without waiting. It runs first, while the shards still serve
    /// (see ARCHITECTURE.md, Shutdown), and returns once they hold the image that fenced this
    /// broker. Bounded: a controller that does not answer does not hold up the stop.
    pub async fn controlled_shutdown(&self) {
        if self.broker_epoch.get() < 0 {
            return;
        }
        let request = ControllerRequest::BrokerHeartbeat {
            broker_id: self.settings.node_id,
            broker_epoch: self.broker_epoch.get(),
            current_metadata_offset: self.state.borrow().applied_index as i64,
            want_fence: true,
            want_shut_down: true,
        };
        let answered =
            futures_lite::future::or(async { Some(self.link.call(&request).await) }, async {
                glommio::timer::sleep(CONTROLLED_SHUTDOWN_TIMEOUT).await;
                None
            })
            .await;
        match answered {
            Some(Ok(ControllerResponse::BrokerHeartbeat { result: Ok(_) })) => {
                let published = futures_lite::future::or(
                    async {
                        self.wait_published_fenced().await;
                        true
                    },
                    async {
                        glommio::timer::sleep(CONTROLLED_SHUTDOWN_TIMEOUT).await;
                        false
                    },
                )
                .await;
                info!(
                    broker_id = self.settings.node_id,
                    published, "controlled shutdown: fenced, leaderships moved"
                )
            }
            other => warn!(
                ?other,
                "controlled shutdown not acknowledged; the session will expire"
            ),
        }
    }

    /// Waits until the shards hold an image in which this broker is fenced: they have given
    /// up its leaderships, and a produce waiting for its followers was answered
    /// NOT_LEADER_OR_FOLLOWER.
    async fn wait_published_fenced(&self) {
        loop {
            let published = self.published.value();
            let done = {
                let state = self.state.borrow();
                let fenced = state
                    .brokers
                    .get(&self.settings.node_id)
                    .is_none_or(|b| b.fenced);
                // Never published: the shards hold no image, so they lead nothing.
                fenced && (published >= state.applied_index || published == 0)
            };
            if done {
                return;
            }
            self.published.wait_beyond(published).await;
        }
    }

    async fn heartbeat_until_stale(&self) {
        loop {
            let interval = if self.fenced.get() {
                FENCED_HEARTBEAT_INTERVAL
            } else {
                self.settings.heartbeat_interval
            };
            glommio::timer::sleep(interval).await;
            let request = ControllerRequest::BrokerHeartbeat {
                broker_id: self.settings.node_id,
                broker_epoch: self.broker_epoch.get(),
                current_metadata_offset: self.state.borrow().applied_index as i64,
                want_fence: false,
                want_shut_down: false,
            };
            match self.link.call(&request).await {
                Ok(ControllerResponse::BrokerHeartbeat { result: Ok(beat) }) => {
                    if self.fenced.get() && !beat.is_fenced {
                        info!(broker_id = self.settings.node_id, "broker unfenced");
                    } else if !self.fenced.get() && beat.is_fenced {
                        warn!(
                            broker_id = self.settings.node_id,
                            "broker fenced by the controller"
                        );
                    }
                    self.fenced.set(beat.is_fenced);
                }
                Ok(ControllerResponse::BrokerHeartbeat {
                    result: Err(MetadataError::StaleBrokerEpoch),
                }) => {
                    warn!(
                        broker_id = self.settings.node_id,
                        "the controller no longer knows this registration; registering again"
                    );
                    return;
                }
                other => debug!(?other, "heartbeat not answered"),
            }
        }
    }
}

/// Every result fails with `error` (the client retries a ControllerNotAvailable).
fn failed_all<T>(error: MetadataError, count: usize) -> Vec<Result<T, MetadataError>> {
    (0..count).map(|_| Err(error.clone())).collect()
}
