//! A partition's replication role, wired to its log: the leader half (Kafka's `Partition` with
//! `makeLeader`, `fetchRecords` for followers, the acks=all `DelayedProduce` check, ISR
//! shrink/expand through `AlterPartition`) and the follower half (what its replica fetcher
//! fetches with, appends, and truncates on). The decisions are the sans-IO core's
//! (`crate::replication`); this file applies them to the `Log` and wakes whoever waits.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_log::{LogAppendInfo, LogError};
use sluice_protocol::record_batch::{parse_header, LOG_OVERHEAD};
use tracing::{debug, info};

use super::{now_ms, out_of_range_or_storage, Partition};
use crate::replication::{
    follower_high_watermark, offset_truncation_state, out_of_range_truncation, AlterPartitionError,
    AlterPartitionRequest, BrokerId, EpochEndOffset, FetchPosition, LeaderState,
    OutOfRangeTruncation, PartitionRegistration, ProduceDecision, ReplicationConfig,
    ReplicationError,
};
use crate::ReplicaError;

/// What this broker is for the partition.
#[derive(Clone, Debug)]
pub enum Role {
    /// Not told yet (opened, no registration applied), or no leader exists.
    None,
    /// This broker leads it.
    Leader(Box<LeaderState>),
    /// Another broker leads it (or nobody does: `leader_id` -1) in `leader_epoch`.
    Follower {
        /// The leader's id, -1 for none.
        leader_id: BrokerId,
        /// The leader epoch.
        leader_epoch: i32,
    },
}

/// A follower's fetch position for its replica fetcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowerFetchState {
    /// The leader to fetch from.
    pub leader_id: BrokerId,
    /// The leader epoch this follower believes current.
    pub current_leader_epoch: i32,
    /// This replica's log end offset.
    pub fetch_offset: i64,
    /// The epoch of its last record, `None` when its log has none.
    pub last_fetched_epoch: Option<i32>,
    /// Its log start offset.
    pub log_start_offset: i64,
}

/// A follower's fetch as the leader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowerFetchRequest {
    /// The follower.
    pub replica_id: BrokerId,
    /// Its broker epoch (-1: not sent).
    pub broker_epoch: i64,
    /// Its log end offset.
    pub fetch_offset: i64,
    /// The epoch of its last record.
    pub last_fetched_epoch: Option<i32>,
    /// The leader epoch it believes current (-1: not said).
    pub current_leader_epoch: i32,
    /// Its log start offset.
    pub log_start_offset: i64,
    /// Byte limit for the read.
    pub max_bytes: usize,
}

/// A follower a consumer may be sent to (KIP-392), as the leader sees it: Kafka's
/// `ReplicaView` without the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReplicaView {
    /// The follower.
    pub broker_id: BrokerId,
    /// Its log end offset, from its last fetch.
    pub log_end_offset: i64,
    /// How long ago it was last caught up with the leader's log end.
    pub time_since_last_caught_up_ms: i64,
}

/// The leader's answer to a follower's fetch.
#[derive(Clone, Debug)]
pub struct FollowerFetchResult {
    /// Whole batches from the fetch offset (empty for a diverging answer).
    pub records: Bytes,
    /// The leader's high watermark after the fetch was counted.
    pub high_watermark: i64,
    /// The leader's log start offset.
    pub log_start_offset: i64,
    /// KIP-320: the follower's log diverges; it truncates before fetching again.
    pub diverging_epoch: Option<EpochEndOffset>,
    /// The fetch let the follower join the ISR: the caller sends this to the controller and
    /// hands the answer to [`Partition::on_alter_partition_response`].
    pub alter_partition: Option<AlterPartitionRequest>,
}

impl Partition {
    /// The partition's role (a copy, for tests and diagnostics).
    pub fn role(&self) -> Role {
        self.role.borrow().clone()
    }

    /// Whether this broker leads the partition.
    pub fn is_leader(&self) -> bool {
        matches!(*self.role.borrow(), Role::Leader(_))
    }

    /// Becomes (or stays) leader of `registration` (Kafka's `makeLeader`). A new leader epoch
    /// starts at the log end offset (written to the leader-epoch checkpoint) and resets the
    /// followers' states; the same epoch only takes the newer ISR and partition epoch. Returns
    /// whether this broker was not leading in this epoch before (a fetcher must stop).
    pub async fn make_leader(
        &self,
        registration: &PartitionRegistration,
        config: ReplicationConfig,
        alive_broker_epochs: BTreeMap<BrokerId, i64>,
    ) -> Result<bool, ReplicaError> {
        let now = now_ms();
        let leader_end = self.log.readable_end_offset();
        {
            let mut role = self.role.borrow_mut();
            if let Role::Leader(state) = &mut *role {
                if state.leader_epoch() == registration.leader_epoch {
                    state.update_alive_brokers(alive_broker_epochs);
                    state.set_config(config);
                    let moved = state.update_registration(registration, leader_end, now);
                    let high_watermark = state.high_watermark();
                    drop(role);
                    if moved {
                        self.log.update_high_watermark(high_watermark);
                    }
                    // An ISR change decides waiting acks=all produces too.
                    self.role_changed();
                    return Ok(false);
                }
            }
        }
        // Appends already reserved (a follower's last fetch) land below the new epoch's start.
        let log_end = self.log.log_end_offset();
        let mut cache = self.log.epoch_cache().clone();
        let (state, cache_changed) = LeaderState::new(
            self.local_broker_id,
            registration,
            config,
            log_end,
            self.log.high_watermark(),
            &mut cache,
            alive_broker_epochs,
            now,
        )
        .map_err(|e| ReplicaError::InvalidEpoch(e.to_string()))?;
        let high_watermark = state.high_watermark();
        self.leader_epoch.set(registration.leader_epoch);
        *self.role.borrow_mut() = Role::Leader(Box::new(state));
        self.role_changed();
        if cache_changed {
            self.log
                .assign_epoch_start_offset(registration.leader_epoch, log_end)
                .await?;
        }
        self.log.update_high_watermark(high_watermark);
        info!(topic = %self.topic, partition = self.tp.partition, leader_epoch = registration.leader_epoch, isr = ?registration.isr, log_end, high_watermark, "became leader");
        Ok(true)
    }

    /// Whether this broker leads the partition and `replica_id` is in its committed ISR
    /// (the replication throttle leaves in-sync replicas alone, as Kafka's
    /// `shouldLeaderThrottle`).
    pub fn is_in_sync_replica(&self, replica_id: BrokerId) -> bool {
        match &*self.role.borrow() {
            Role::Leader(state) => state.isr().contains(&replica_id),
            _ => false,
        }
    }

    /// Follows `leader_id` (-1: no leader yet) in `leader_epoch` (Kafka's `makeFollower`).
    /// Returns whether the leader or epoch changed (the fetcher restarts from the log end,
    /// and truncates if the new leader answers a diverging epoch).
    pub fn make_follower(&self, leader_id: BrokerId, leader_epoch: i32) -> bool {
        let changed = match &*self.role.borrow() {
            Role::Follower {
                leader_id: current,
                leader_epoch: epoch,
            } => *current != leader_id || *epoch != leader_epoch,
            _ => true,
        };
        if changed {
            self.leader_epoch.set(leader_epoch);
            *self.role.borrow_mut() = Role::Follower {
                leader_id,
                leader_epoch,
            };
            self.role_changed();
            info!(topic = %self.topic, partition = self.tp.partition, leader_id, leader_epoch, "became follower");
        }
        changed
    }

    /// Checks an append before it is made: this broker leads, and acks=all has enough in-sync
    /// replicas. Returns the leader epoch to stamp.
    pub(super) fn check_leader_append(&self, required_acks: i16) -> Result<i32, ReplicaError> {
        match &*self.role.borrow() {
            Role::Leader(state) => {
                state.check_append(required_acks)?;
                Ok(state.leader_epoch())
            }
            _ => Err(ReplicaError::NotLeaderOrFollower),
        }
    }

    /// After the leader's own append: with an ISR of one the high watermark moves at once.
    pub(super) fn after_leader_append_high_watermark(&self) {
        let leader_end = self.log.readable_end_offset();
        if let Role::Leader(state) = &mut *self.role.borrow_mut() {
            if state.after_leader_append(leader_end, now_ms()) {
                self.log.update_high_watermark(state.high_watermark());
            }
        }
    }

    /// Kafka's `DelayedProduce` for acks=all: resolves once the high watermark passes
    /// `last_offset` with enough in-sync replicas, and fails when the ISR shrank below
    /// `min.insync.replicas` meanwhile, leadership moved, or `timeout` passed. Woken by the high
    /// watermark moving (a follower's fetch) or the role changing; never polls.
    pub async fn wait_for_replication(
        &self,
        last_offset: i64,
        timeout: Duration,
    ) -> Result<(), ReplicaError> {
        let deadline = Instant::now() + timeout;
        loop {
            let generation = self.role_generation.get();
            let decision = match &*self.role.borrow() {
                Role::Leader(state) => state.check_enough_replicas_reach_offset(last_offset + 1),
                _ => return Err(ReplicaError::NotLeaderOrFollower),
            };
            match decision {
                ProduceDecision::Acknowledged => return Ok(()),
                ProduceDecision::NotEnoughReplicasAfterAppend => {
                    return Err(ReplicaError::NotEnoughReplicasAfterAppend)
                }
                ProduceDecision::Pending => {}
            }
            if let Some(error) = self.log.failure() {
                return Err(ReplicaError::Storage(error));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(ReplicaError::RequestTimedOut);
            }
            let moved = futures_lite::future::or(
                async {
                    self.log.wait_for_high_watermark(last_offset).await;
                    true
                },
                futures_lite::future::or(
                    async {
                        self.role_wait(generation).await;
                        true
                    },
                    async {
                        glommio::timer::sleep(remaining).await;
                        false
                    },
                ),
            )
            .await;
            if !moved && Instant::now() >= deadline {
                return Err(ReplicaError::RequestTimedOut);
            }
        }
    }

    /// Checks a consumer's leader epoch (-1: any) on the leader: NOT_LEADER_OR_FOLLOWER when
    /// this broker does not lead, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH as Kafka.
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), ReplicaError> {
        match &*self.role.borrow() {
            Role::Leader(state) => Ok(state.check_leader_epoch(current_leader_epoch)?),
            _ => Err(ReplicaError::NotLeaderOrFollower),
        }
    }

    /// Of `candidates`, the followers a consumer at `fetch_offset` may read from (Kafka's
    /// `ReplicaManager.findPreferredReadReplica`): in the ISR, with the offset between their
    /// log start and log end — a replica out of the ISR may lag without bound. Empty when this
    /// broker does not lead the partition (only a leader sends consumers elsewhere).
    pub fn read_replica_views(
        &self,
        candidates: &[BrokerId],
        fetch_offset: i64,
    ) -> Vec<ReadReplicaView> {
        let role = self.role.borrow();
        let Role::Leader(state) = &*role else {
            return Vec::new();
        };
        let now = now_ms();
        candidates
            .iter()
            .filter(|id| **id != self.local_broker_id && state.isr().contains(id))
            .filter_map(|id| {
                let replica = state.replica_state(*id)?;
                (replica.log_end_offset >= fetch_offset && replica.log_start_offset <= fetch_offset)
                    .then_some(ReadReplicaView {
                        broker_id: *id,
                        log_end_offset: replica.log_end_offset,
                        time_since_last_caught_up_ms: now - replica.last_caught_up_time_ms,
                    })
            })
            .collect()
    }

    /// Serves a follower's fetch (Kafka's `Partition.fetchRecords` for a replica): checks the
    /// leader epoch and the follower's history (diverging epoch), reads up to the log end,
    /// then counts the fetch — the follower's log end is its fetch offset — which may move the
    /// high watermark and ask the controller to add the follower to the ISR.
    pub async fn fetch_for_follower(
        &self,
        request: FollowerFetchRequest,
    ) -> Result<FollowerFetchResult, ReplicaError> {
        if let Some(error) = self.log.failure() {
            return Err(ReplicaError::Storage(error));
        }
        let position = {
            let role = self.role.borrow();
            let Role::Leader(state) = &*role else {
                return Err(ReplicaError::NotLeaderOrFollower);
            };
            // Kafka's `followerReplicaOrThrow`: a broker that is not a replica gets
            // UNKNOWN_LEADER_EPOCH when it named an epoch (its metadata may be newer than ours),
            // NOT_LEADER_OR_FOLLOWER otherwise.
            if !state.replicas().contains(&request.replica_id)
                || request.replica_id == self.local_broker_id
            {
                return Err(if request.current_leader_epoch >= 0 {
                    ReplicationError::UnknownLeaderEpoch {
                        request: request.current_leader_epoch,
                        current: state.leader_epoch(),
                    }
                } else {
                    ReplicationError::NotLeaderOrFollower("the fetcher is not a replica")
                }
                .into());
            }
            let cache = self.log.epoch_cache();
            state.fetch_position(
                request.fetch_offset,
                request.last_fetched_epoch,
                request.current_leader_epoch,
                &cache,
                self.log.log_start_offset(),
                self.log.readable_end_offset(),
            )?
        };
        if let FetchPosition::Diverging(diverging) = position {
            debug!(topic = %self.topic, partition = self.tp.partition, replica = request.replica_id, fetch_offset = request.fetch_offset, ?diverging, "follower diverges");
            return Ok(FollowerFetchResult {
                records: Bytes::new(),
                high_watermark: self.log.high_watermark(),
                log_start_offset: self.log.log_start_offset(),
                diverging_epoch: Some(diverging),
                alter_partition: None,
            });
        }
        let read = self
            .log
            .read(request.fetch_offset, request.max_bytes, true, None)
            .await
            .map_err(out_of_range_or_storage)?;
        let leader_end = self.log.readable_end_offset();
        let fetch = {
            let mut role = self.role.borrow_mut();
            let Role::Leader(state) = &mut *role else {
                return Err(ReplicaError::NotLeaderOrFollower);
            };
            state.update_follower_fetch_state(
                request.replica_id,
                request.fetch_offset,
                request.log_start_offset,
                request.broker_epoch,
                leader_end,
                now_ms(),
            )?
        };
        if fetch.high_watermark_incremented {
            self.sync_high_watermark();
        }
        Ok(FollowerFetchResult {
            records: read.records,
            high_watermark: self.log.high_watermark(),
            log_start_offset: self.log.log_start_offset(),
            diverging_epoch: None,
            alter_partition: fetch.alter_partition,
        })
    }

    /// Every half `replica.lag.time.max.ms` (Kafka's `isr-expiration` task): followers that
    /// have not caught up within the lag time leave the ISR, through the controller.
    pub fn maybe_shrink_isr(&self) -> Option<AlterPartitionRequest> {
        let leader_end = self.log.readable_end_offset();
        let mut role = self.role.borrow_mut();
        let Role::Leader(state) = &mut *role else {
            return None;
        };
        let request = state.maybe_shrink_isr(leader_end, now_ms());
        if let Some(request) = &request {
            info!(topic = %self.topic, partition = self.tp.partition, isr = ?state.isr(), new_isr = ?request.new_isr, "shrinking ISR");
        }
        request
    }

    /// The controller's answer to an `AlterPartition` this partition asked for.
    pub fn on_alter_partition_response(
        &self,
        request: &AlterPartitionRequest,
        response: Result<PartitionRegistration, AlterPartitionError>,
    ) {
        let leader_end = self.log.readable_end_offset();
        let moved = {
            let mut role = self.role.borrow_mut();
            let Role::Leader(state) = &mut *role else {
                return;
            };
            state.handle_alter_partition_response(
                request,
                response.as_ref().map_err(|e| *e),
                leader_end,
                now_ms(),
            )
        };
        if moved {
            self.sync_high_watermark();
        }
        // ISR changes decide pending acks=all produces too (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
        self.role_changed();
    }

    /// Copies the leader state's high watermark into the log (which wakes its waiters).
    fn sync_high_watermark(&self) {
        let high_watermark = match &*self.role.borrow() {
            Role::Leader(state) => state.high_watermark(),
            _ => return,
        };
        self.log.update_high_watermark(high_watermark);
    }

    /// What the replica fetcher fetches this partition with, `None` unless it follows a
    /// leader.
    pub fn follower_fetch_state(&self) -> Option<FollowerFetchState> {
        let Role::Follower {
            leader_id,
            leader_epoch,
        } = *self.role.borrow()
        else {
            return None;
        };
        if leader_id < 0 {
            return None;
        }
        Some(FollowerFetchState {
            leader_id,
            current_leader_epoch: leader_epoch,
            fetch_offset: self.log.log_end_offset(),
            last_fetched_epoch: self.log.latest_epoch(),
            log_start_offset: self.log.log_start_offset(),
        })
    }

    /// Appends what the leader sent (offsets and epochs kept), updates the producer state from
    /// the batches (a follower that becomes leader must know its producers), then takes the
    /// leader's high watermark and log start offset, within this log. Empty `records` only
    /// update those. `None` when nothing was appended.
    pub async fn append_records_as_follower(
        &self,
        records: &[u8],
        leader_high_watermark: i64,
        leader_log_start_offset: i64,
    ) -> Result<Option<LogAppendInfo>, ReplicaError> {
        if !matches!(*self.role.borrow(), Role::Follower { .. }) {
            return Err(ReplicaError::NotLeaderOrFollower);
        }
        let appended = if records.is_empty() {
            None
        } else {
            let info = match self.log.append_as_follower(records).await {
                // Kafka's follower append: an empty log (just started over at the leader's log
                // start) whose first fetched batch begins below that offset starts at the batch.
                Err(LogError::UnexpectedAppendOffset { got, .. })
                    if self.log.log_start_offset() == self.log.log_end_offset() =>
                {
                    info!(topic = %self.topic, partition = self.tp.partition, start_at = got, "empty log: starting at the leader's first batch");
                    self.log.truncate_fully_and_start_at(got).await?;
                    self.log.append_as_follower(records).await?
                }
                other => other?,
            };
            {
                // Headers only, read in place: the batch bytes are not copied again. A partial
                // last batch (the log left it out) is not counted either.
                let mut producers = self.producers.borrow_mut();
                let mut rest = records;
                while let Ok(header) = parse_header(rest) {
                    let size = header.size_bytes();
                    if size <= LOG_OVERHEAD || size > rest.len() {
                        break;
                    }
                    producers.apply_from_log(&header);
                    rest = &rest[size..];
                }
            }
            self.after_append(&info);
            Some(info)
        };
        let high_watermark = follower_high_watermark(
            leader_high_watermark,
            self.log.log_start_offset(),
            self.log.readable_end_offset(),
        );
        self.log.update_high_watermark(high_watermark);
        // Kafka's follower moves its log start with the leader's, never past its own high
        // watermark (DeleteRecords and retention on the leader).
        let start = leader_log_start_offset.min(self.log.high_watermark());
        if start > self.log.log_start_offset() {
            self.log
                .delete_records_before(start)
                .await
                .map_err(out_of_range_or_storage)?;
        }
        Ok(appended)
    }

    /// The leader answered a diverging epoch (KIP-320): truncate to where this log and the
    /// leader's agree (KIP-101/KIP-279 rules in `offset_truncation_state`), then rebuild the
    /// producer state for the shorter log.
    pub async fn truncate_on_diverging_epoch(
        &self,
        diverging: EpochEndOffset,
    ) -> Result<(), ReplicaError> {
        let log_end = self.log.log_end_offset();
        let state = {
            let cache = self.log.epoch_cache();
            offset_truncation_state(diverging, &cache, log_end, log_end)
        };
        info!(topic = %self.topic, partition = self.tp.partition, ?diverging, log_end, truncate_to = state.offset, completed = state.truncation_completed, "truncating on diverging epoch");
        self.truncate_to(state.offset).await
    }

    /// The leader answered OFFSET_OUT_OF_RANGE (Kafka's `fetchOffsetAndTruncate`): truncate
    /// to the leader's end when it is shorter (after an unclean election), or start over at
    /// its log start when this log ends before it.
    pub async fn truncate_on_out_of_range(
        &self,
        leader_log_start_offset: i64,
        leader_log_end_offset: i64,
    ) -> Result<(), ReplicaError> {
        let log_end = self.log.log_end_offset();
        match out_of_range_truncation(leader_log_start_offset, leader_log_end_offset, log_end) {
            OutOfRangeTruncation::TruncateTo(offset) => self.truncate_to(offset).await,
            OutOfRangeTruncation::TruncateFullyAndStartAt(offset) => {
                info!(topic = %self.topic, partition = self.tp.partition, log_end, start_at = offset, "log ends before the leader's start: starting over");
                self.log.truncate_fully_and_start_at(offset).await?;
                self.reload_producer_state().await
            }
            OutOfRangeTruncation::FetchFrom(_) => Ok(()),
        }
    }

    async fn truncate_to(&self, offset: i64) -> Result<(), ReplicaError> {
        if self.log.truncate_to(offset).await? {
            self.reload_producer_state().await?;
        }
        Ok(())
    }

    /// Kafka's `truncateAndReload`: producers whose batches were cut are rebuilt from the log.
    async fn reload_producer_state(&self) -> Result<(), ReplicaError> {
        self.producers
            .borrow_mut()
            .truncate_from(self.log.log_end_offset());
        self.load_producer_state().await
    }

    /// Wakes delayed produces (and anyone else waiting on the role or ISR).
    fn role_changed(&self) {
        self.role_generation.set(self.role_generation.get() + 1);
        // A consumer's answer depends on the role and leader epoch (NOT_LEADER_OR_FOLLOWER,
        // FENCED_LEADER_EPOCH): a session's quiet mark of this partition is no longer current.
        self.log.fetch_stamp().bump();
        let wakers: Vec<_> = self
            .role_wakers
            .borrow_mut()
            .drain(..)
            .map(|(_, w)| w)
            .collect();
        for waker in wakers {
            waker.wake();
        }
    }

    /// Resolves once the role (or ISR) changed after `generation`. A wait that ends otherwise
    /// takes its registration with it, so the list holds only the waits in progress.
    fn role_wait(&self, generation: u64) -> RoleWait<'_> {
        RoleWait {
            partition: self,
            generation,
            id: None,
        }
    }
}

/// A wait for the partition's role or ISR to change.
struct RoleWait<'a> {
    partition: &'a Partition,
    generation: u64,
    id: Option<u64>,
}

impl std::future::Future for RoleWait<'_> {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let partition = self.partition;
        if partition.role_generation.get() != self.generation {
            self.id = None;
            return std::task::Poll::Ready(());
        }
        let mut wakers = partition.role_wakers.borrow_mut();
        match self
            .id
            .and_then(|id| wakers.iter_mut().find(|(i, _)| *i == id))
        {
            Some((_, waker)) => waker.clone_from(cx.waker()),
            None => {
                let id = partition.role_waiter_next.get();
                partition.role_waiter_next.set(id + 1);
                wakers.push((id, cx.waker().clone()));
                self.id = Some(id);
            }
        }
        std::task::Poll::Pending
    }
}

impl Drop for RoleWait<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.partition
                .role_wakers
                .borrow_mut()
                .retain(|(i, _)| *i != id);
        }
    }
}
