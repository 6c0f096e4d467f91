//! The leader's side: each follower's fetch state (Kafka's `Replica`/`ReplicaState`), the
//! high watermark, ISR expansion and shrinking through `AlterPartition`, min.insync.replicas,
//! and the answer to a follower's fetch position (records, or KIP-320's diverging epoch).

use std::collections::{BTreeMap, BTreeSet};

use sluice_log::{
    InvalidEpochEntry, LeaderEpochFileCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET,
};
use sluice_protocol::ErrorCode;

use super::{BrokerId, EpochEndOffset, PartitionRegistration, ReplicationError};

/// An offset the leader does not know yet (Kafka's `UnifiedLog.UnknownOffset`).
pub const UNKNOWN_OFFSET: i64 = -1;

/// The topic and broker settings the leader's decisions use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `min.insync.replicas` (Kafka's default 1).
    pub min_insync_replicas: usize,
    /// `replica.lag.time.max.ms` (Kafka's default 30,000).
    pub replica_lag_time_max_ms: i64,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            min_insync_replicas: 1,
            replica_lag_time_max_ms: 30_000,
        }
    }
}

/// A follower as the leader sees it (Kafka's `ReplicaState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaState {
    /// The follower's log start offset, from its last fetch.
    pub log_start_offset: i64,
    /// The follower's log end offset: its last fetch offset.
    pub log_end_offset: i64,
    /// The leader's log end offset at the follower's previous fetch.
    pub last_fetch_leader_log_end_offset: i64,
    /// When the previous fetch arrived.
    pub last_fetch_time_ms: i64,
    /// The last time the follower was known to have caught up with the leader's log end
    /// offset of that moment (Kafka's `lastCaughtUpTimeMs`).
    pub last_caught_up_time_ms: i64,
    /// The broker epoch the follower fetched with (KIP-903), `None` before its first fetch.
    pub broker_epoch: Option<i64>,
}

impl ReplicaState {
    fn reset(last_caught_up_time_ms: i64) -> Self {
        Self {
            log_start_offset: UNKNOWN_OFFSET,
            log_end_offset: UNKNOWN_OFFSET,
            last_fetch_leader_log_end_offset: UNKNOWN_OFFSET,
            last_fetch_time_ms: 0,
            last_caught_up_time_ms,
            broker_epoch: None,
        }
    }

    /// Caught up: at the leader's log end, or caught up within the last `lag_max_ms`.
    pub fn is_caught_up(&self, leader_end_offset: i64, now_ms: i64, lag_max_ms: i64) -> bool {
        leader_end_offset == self.log_end_offset
            || now_ms - self.last_caught_up_time_ms <= lag_max_ms
    }
}

/// An ISR change the leader asks the controller for (Kafka's `AlterPartition`, with KIP-903's
/// broker epochs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterPartitionRequest {
    /// The leader asking.
    pub leader: BrokerId,
    /// The leader's epoch; the controller refuses another (FENCED_LEADER_EPOCH).
    pub leader_epoch: i32,
    /// The partition epoch the change is based on (else INVALID_UPDATE_VERSION).
    pub partition_epoch: i32,
    /// The proposed ISR with each member's broker epoch (-1: not known, the leader itself).
    pub new_isr: Vec<(BrokerId, i64)>,
}

/// Why the controller refused an `AlterPartition` (Kafka's error codes for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlterPartitionError {
    /// The request's leader epoch is not the partition's.
    FencedLeaderEpoch,
    /// The request's partition epoch is not the partition's.
    InvalidUpdateVersion,
    /// A proposed ISR member is fenced, shutting down, or fetched with an old broker epoch.
    IneligibleReplica,
    /// The controller did not try (e.g. the partition is being reassigned).
    OperationNotAttempted,
}

/// Where the leader reads a follower's (or consumer's) fetch from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchPosition {
    /// The history matches up to the fetch offset: read records from it.
    Read {
        /// The fetch offset.
        fetch_offset: i64,
    },
    /// The fetcher's last fetched epoch ends earlier on the leader, or the leader never had
    /// it: the fetcher truncates (KIP-320's `DivergingEpoch`), nothing is read.
    Diverging(EpochEndOffset),
}

/// What a follower's fetch changed on the leader.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FollowerFetch {
    /// The high watermark moved up (delayed fetches and produces may complete).
    pub high_watermark_incremented: bool,
    /// The follower caught up: send this ISR expansion to the controller.
    pub alter_partition: Option<AlterPartitionRequest>,
}

/// A produce with acks=all waiting for the high watermark (Kafka's `DelayedProduce` check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProduceDecision {
    /// The high watermark is not past the records yet.
    Pending,
    /// Replicated to the ISR and the ISR is at least min.insync.replicas: acknowledged.
    Acknowledged,
    /// Replicated, but the ISR shrank below min.insync.replicas meanwhile.
    NotEnoughReplicasAfterAppend,
}

impl ProduceDecision {
    /// The produce response's error code once decided.
    pub fn error_code(self) -> Option<ErrorCode> {
        match self {
            Self::Pending => None,
            Self::Acknowledged => Some(ErrorCode::NONE),
            Self::NotEnoughReplicasAfterAppend => Some(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND),
        }
    }
}

/// A partition's state on its leader (the leader half of Kafka's `Partition`).
#[derive(Clone, Debug)]
pub struct LeaderState {
    local_broker_id: BrokerId,
    config: ReplicationConfig,
    leader_epoch: i32,
    /// The log end offset when this broker became leader in `leader_epoch`: a follower whose
    /// log end reaches it has truncated and fetched in this epoch.
    leader_epoch_start_offset: i64,
    partition_epoch: i32,
    replicas: Vec<BrokerId>,
    /// The committed ISR (the controller's).
    isr: BTreeSet<BrokerId>,
    /// An `AlterPartition` in flight (Kafka's `PendingExpandIsr` / `PendingShrinkIsr`).
    pending: Option<AlterPartitionRequest>,
    remote: BTreeMap<BrokerId, ReplicaState>,
    high_watermark: i64,
    /// Alive, unfenced brokers and their broker epochs, from the metadata image.
    alive_broker_epochs: BTreeMap<BrokerId, i64>,
}

impl LeaderState {
    /// Becomes leader in `registration`'s epoch (Kafka's `makeLeader` with `isNewLeader`):
    /// the epoch starts at the log end offset (assigned in `cache`, `true` when the caller
    /// must rewrite the checkpoint), followers' fetch state is reset (their last caught-up
    /// time is now for ISR members, 0 for others, so that a replica outside the ISR never holds
    /// the high watermark back), and the high watermark starts at the log's.
    #[allow(clippy::too_many_arguments)] // Kafka's makeLeader inputs, each one a plain value.
    pub fn new(
        local_broker_id: BrokerId,
        registration: &PartitionRegistration,
        config: ReplicationConfig,
        log_end_offset: i64,
        high_watermark: i64,
        cache: &mut LeaderEpochFileCache,
        alive_broker_epochs: BTreeMap<BrokerId, i64>,
        now_ms: i64,
    ) -> Result<(Self, bool), InvalidEpochEntry> {
        let cache_changed = cache.assign(registration.leader_epoch, log_end_offset)?;
        let isr: BTreeSet<BrokerId> = registration.isr.iter().copied().collect();
        let remote = registration
            .replicas
            .iter()
            .filter(|&&id| id != local_broker_id)
            .map(|&id| {
                let caught_up = if isr.contains(&id) { now_ms } else { 0 };
                (id, ReplicaState::reset(caught_up))
            })
            .collect();
        let mut state = Self {
            local_broker_id,
            config,
            leader_epoch: registration.leader_epoch,
            leader_epoch_start_offset: log_end_offset,
            partition_epoch: registration.partition_epoch,
            replicas: registration.replicas.clone(),
            isr,
            pending: None,
            remote,
            high_watermark: high_watermark.min(log_end_offset),
            alive_broker_epochs,
        };
        // The ISR may be just this broker: the high watermark can move at once.
        state.maybe_increment_leader_hw(log_end_offset, now_ms);
        Ok((state, cache_changed))
    }

    /// A newer registration in the same leader epoch (the controller changed the ISR, e.g.
    /// fenced a broker, or committed our `AlterPartition`): the ISR and partition epoch are
    /// taken, an `AlterPartition` in flight is forgotten, followers keep their fetch state
    /// (Kafka's `makeLeader` with `isNewLeader` false). A stale registration is ignored.
    pub fn update_registration(
        &mut self,
        registration: &PartitionRegistration,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> bool {
        if registration.leader_epoch != self.leader_epoch
            || registration.partition_epoch <= self.partition_epoch
        {
            return false;
        }
        self.partition_epoch = registration.partition_epoch;
        self.isr = registration.isr.iter().copied().collect();
        self.pending = None;
        if registration.replicas != self.replicas {
            // A reassignment added or removed replicas in this epoch (KIP-455): an added one
            // starts with no fetch state and out of the ISR (it never holds the high watermark
            // back until it joins), a removed one is forgotten.
            self.replicas = registration.replicas.clone();
            let local = self.local_broker_id;
            self.remote
                .retain(|id, _| registration.replicas.contains(id));
            for &id in &registration.replicas {
                if id != local {
                    self.remote
                        .entry(id)
                        .or_insert_with(|| ReplicaState::reset(0));
                }
            }
        }
        self.maybe_increment_leader_hw(leader_log_end_offset, now_ms)
    }

    /// The topic's `min.insync.replicas` or the broker's `replica.lag.time.max.ms` changed.
    pub fn set_config(&mut self, config: ReplicationConfig) {
        self.config = config;
    }

    /// The metadata image's alive, unfenced brokers and their epochs changed.
    pub fn update_alive_brokers(&mut self, alive_broker_epochs: BTreeMap<BrokerId, i64>) {
        self.alive_broker_epochs = alive_broker_epochs;
    }

    /// The leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// The partition epoch.
    pub fn partition_epoch(&self) -> i32 {
        self.partition_epoch
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The committed ISR.
    pub fn isr(&self) -> &BTreeSet<BrokerId> {
        &self.isr
    }

    /// The ISR the high watermark must wait for: the committed ISR plus a pending expansion
    /// (KIP-497's "maximal" ISR: a shrink counts only once committed).
    pub fn maximal_isr(&self) -> BTreeSet<BrokerId> {
        let mut maximal = self.isr.clone();
        if let Some(pending) = &self.pending {
            maximal.extend(pending.new_isr.iter().map(|&(id, _)| id));
        }
        maximal
    }

    /// Whether `id` is in the maximal ISR (without building the set: this runs on every
    /// follower fetch).
    fn in_maximal_isr(&self, id: BrokerId) -> bool {
        self.isr.contains(&id)
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.new_isr.iter().any(|&(member, _)| member == id))
    }

    fn maximal_isr_len(&self) -> usize {
        let added = self.pending.as_ref().map_or(0, |p| {
            p.new_isr
                .iter()
                .filter(|(member, _)| !self.isr.contains(member))
                .count()
        });
        self.isr.len() + added
    }

    /// The `AlterPartition` in flight, if any.
    pub fn pending_alter_partition(&self) -> Option<&AlterPartitionRequest> {
        self.pending.as_ref()
    }

    /// A follower's fetch state.
    pub fn replica_state(&self, id: BrokerId) -> Option<&ReplicaState> {
        self.remote.get(&id)
    }

    /// Kafka's `isUnderMinIsr`.
    pub fn is_under_min_isr(&self) -> bool {
        self.isr.len() < self.config.min_insync_replicas
    }

    /// Checks a produce before it is appended: acks=all (`required_acks == -1`) is refused
    /// with NOT_ENOUGH_REPLICAS while the committed ISR is below min.insync.replicas.
    pub fn check_append(&self, required_acks: i16) -> Result<(), ReplicationError> {
        if required_acks == -1 && self.is_under_min_isr() {
            return Err(ReplicationError::NotEnoughReplicas {
                isr: self.isr.len(),
                min_insync_replicas: self.config.min_insync_replicas,
            });
        }
        Ok(())
    }

    /// After the leader's own append: the high watermark may move (an ISR of one).
    pub fn after_leader_append(&mut self, leader_log_end_offset: i64, now_ms: i64) -> bool {
        self.maybe_increment_leader_hw(leader_log_end_offset, now_ms)
    }

    /// Whether an acks=all produce whose records end before `required_offset` is done
    /// (Kafka's `checkEnoughReplicasReachOffset`).
    pub fn check_enough_replicas_reach_offset(&self, required_offset: i64) -> ProduceDecision {
        if self.high_watermark < required_offset {
            ProduceDecision::Pending
        } else if self.config.min_insync_replicas <= self.maximal_isr_len() {
            ProduceDecision::Acknowledged
        } else {
            ProduceDecision::NotEnoughReplicasAfterAppend
        }
    }

    /// Checks a fetch's `current_leader_epoch` (-1: the fetcher did not say) against ours.
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), ReplicationError> {
        if current_leader_epoch == UNDEFINED_EPOCH || current_leader_epoch == self.leader_epoch {
            Ok(())
        } else if current_leader_epoch < self.leader_epoch {
            Err(ReplicationError::FencedLeaderEpoch {
                request: current_leader_epoch,
                current: self.leader_epoch,
            })
        } else {
            Err(ReplicationError::UnknownLeaderEpoch {
                request: current_leader_epoch,
                current: self.leader_epoch,
            })
        }
    }

    /// Where to read a fetch at `fetch_offset` whose last fetched record was written in
    /// `last_fetched_epoch` (`None` on fetch versions before 12 or an empty follower log):
    /// Kafka's `Partition.readRecords` check. When the leader's history of that epoch ends
    /// before the fetch offset, or the leader's largest epoch ≤ it is a smaller one, the
    /// fetcher has records the leader does not: answer the diverging epoch instead of records.
    pub fn fetch_position(
        &self,
        fetch_offset: i64,
        last_fetched_epoch: Option<i32>,
        current_leader_epoch: i32,
        cache: &LeaderEpochFileCache,
        log_start_offset: i64,
        log_end_offset: i64,
    ) -> Result<FetchPosition, ReplicationError> {
        self.check_leader_epoch(current_leader_epoch)?;
        let out_of_range = ReplicationError::OffsetOutOfRange {
            offset: fetch_offset,
            log_start_offset,
            log_end_offset,
        };
        if let Some(fetch_epoch) = last_fetched_epoch {
            let (epoch, end_offset) = cache.end_offset_for(fetch_epoch, log_end_offset);
            if epoch == UNDEFINED_EPOCH || end_offset == UNDEFINED_EPOCH_OFFSET {
                return Err(out_of_range);
            }
            // Below the log start the fetcher must reset, diverging or not.
            if fetch_offset < log_start_offset {
                return Err(out_of_range);
            }
            if epoch < fetch_epoch || end_offset < fetch_offset {
                return Ok(FetchPosition::Diverging(EpochEndOffset {
                    epoch,
                    end_offset,
                }));
            }
        }
        if fetch_offset < log_start_offset || fetch_offset > log_end_offset {
            return Err(out_of_range);
        }
        Ok(FetchPosition::Read { fetch_offset })
    }

    /// A follower fetched at `fetch_offset` (its log end offset) and got records, at
    /// `now_ms`, when the leader's log end offset was `leader_log_end_offset` (Kafka's
    /// `updateFollowerFetchState`; not called for a diverging answer). Updates its state,
    /// maybe adds it to the ISR, maybe moves the high watermark.
    pub fn update_follower_fetch_state(
        &mut self,
        follower: BrokerId,
        fetch_offset: i64,
        follower_log_start_offset: i64,
        broker_epoch: i64,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Result<FollowerFetch, ReplicationError> {
        let cached_epoch = self.alive_broker_epochs.get(&follower).copied();
        let Some(state) = self.remote.get_mut(&follower) else {
            return Err(ReplicationError::NotLeaderOrFollower(
                "the fetcher is not a replica of the partition",
            ));
        };
        // KIP-903: a fetch from a previous incarnation of the broker must not count.
        if broker_epoch != -1 && cached_epoch.is_some_and(|cached| cached > broker_epoch) {
            return Err(ReplicationError::NotLeaderOrFollower(
                "the fetcher's broker epoch is stale",
            ));
        }
        let previous_end_offset = state.log_end_offset;
        let last_caught_up_time_ms = if fetch_offset >= leader_log_end_offset {
            state.last_caught_up_time_ms.max(now_ms)
        } else if fetch_offset >= state.last_fetch_leader_log_end_offset {
            // It reached what the leader had at its previous fetch: caught up as of then.
            state.last_caught_up_time_ms.max(state.last_fetch_time_ms)
        } else {
            state.last_caught_up_time_ms
        };
        *state = ReplicaState {
            log_start_offset: follower_log_start_offset,
            log_end_offset: fetch_offset,
            last_fetch_leader_log_end_offset: leader_log_end_offset
                .max(state.last_fetch_leader_log_end_offset),
            last_fetch_time_ms: now_ms,
            last_caught_up_time_ms,
            broker_epoch: Some(broker_epoch),
        };
        let alter_partition = self.maybe_expand_isr(follower);
        let high_watermark_incremented = previous_end_offset != fetch_offset
            && self.maybe_increment_leader_hw(leader_log_end_offset, now_ms);
        Ok(FollowerFetch {
            high_watermark_incremented,
            alter_partition,
        })
    }

    /// Kafka's `isReplicaIsrEligible`: unfenced, and fetching with the broker's current epoch.
    fn is_replica_isr_eligible(&self, id: BrokerId) -> bool {
        let Some(stored) = self.remote.get(&id).and_then(|r| r.broker_epoch) else {
            return false;
        };
        self.alive_broker_epochs
            .get(&id)
            .is_some_and(|&cached| stored == -1 || stored == cached)
    }

    /// Adds `follower` to the ISR (through the controller) when it is eligible, not in the
    /// ISR, no change is in flight, and its log end reached both the high watermark and the
    /// start of this leader epoch (so it truncated and fetched in this epoch).
    fn maybe_expand_isr(&mut self, follower: BrokerId) -> Option<AlterPartitionRequest> {
        if self.pending.is_some()
            || self.isr.contains(&follower)
            || !self.is_replica_isr_eligible(follower)
        {
            return None;
        }
        let end_offset = self.remote.get(&follower)?.log_end_offset;
        if end_offset < self.high_watermark || end_offset < self.leader_epoch_start_offset {
            return None;
        }
        let mut new_isr = self.isr.clone();
        new_isr.insert(follower);
        Some(self.submit_alter_partition(new_isr))
    }

    /// Removes followers that have not caught up within `replica.lag.time.max.ms` from the ISR
    /// (through the controller); Kafka runs this every half lag time.
    pub fn maybe_shrink_isr(
        &mut self,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Option<AlterPartitionRequest> {
        if self.pending.is_some() {
            return None;
        }
        let lag_max_ms = self.config.replica_lag_time_max_ms;
        let out_of_sync: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|&id| id != self.local_broker_id)
            .filter(|id| {
                self.remote
                    .get(id)
                    .is_none_or(|r| !r.is_caught_up(leader_log_end_offset, now_ms, lag_max_ms))
            })
            .collect();
        if out_of_sync.is_empty() {
            return None;
        }
        let new_isr = self
            .isr
            .iter()
            .copied()
            .filter(|id| !out_of_sync.contains(id))
            .collect();
        Some(self.submit_alter_partition(new_isr))
    }

    fn submit_alter_partition(&mut self, new_isr: BTreeSet<BrokerId>) -> AlterPartitionRequest {
        let request = AlterPartitionRequest {
            leader: self.local_broker_id,
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: new_isr
                .iter()
                .map(|&id| {
                    let epoch = self
                        .remote
                        .get(&id)
                        .and_then(|r| r.broker_epoch)
                        .unwrap_or(-1);
                    (id, epoch)
                })
                .collect(),
        };
        self.pending = Some(request.clone());
        request
    }

    /// The controller's answer to our `AlterPartition`: the new registration, or an error.
    /// On success the ISR is committed and the high watermark may move; INELIGIBLE_REPLICA and
    /// OPERATION_NOT_ATTEMPTED mean the change was not applied (back to the committed ISR);
    /// other errors (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION) keep the change pending
    /// until the next metadata update, as Kafka does. Returns whether the high watermark moved.
    pub fn handle_alter_partition_response(
        &mut self,
        request: &AlterPartitionRequest,
        response: Result<&PartitionRegistration, AlterPartitionError>,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> bool {
        if self.pending.as_ref() != Some(request) {
            // The registration moved on meanwhile (a metadata update): this answer is stale.
            return false;
        }
        match response {
            Ok(registration) => {
                if registration.leader_epoch != self.leader_epoch
                    || registration.partition_epoch < self.partition_epoch
                {
                    return false;
                }
                self.partition_epoch = registration.partition_epoch;
                self.isr = registration.isr.iter().copied().collect();
                self.pending = None;
                self.maybe_increment_leader_hw(leader_log_end_offset, now_ms)
            }
            Err(
                AlterPartitionError::IneligibleReplica | AlterPartitionError::OperationNotAttempted,
            ) => {
                self.pending = None;
                false
            }
            Err(
                AlterPartitionError::FencedLeaderEpoch | AlterPartitionError::InvalidUpdateVersion,
            ) => false,
        }
    }

    /// The high watermark: the smallest log end offset among the leader and the followers in
    /// the maximal ISR, and caught-up eligible followers about to join it. Never moves back,
    /// and (KIP-966) does not move while the ISR is below min.insync.replicas. Kafka's
    /// `maybeIncrementLeaderHW`.
    pub fn maybe_increment_leader_hw(&mut self, leader_log_end_offset: i64, now_ms: i64) -> bool {
        if self.is_under_min_isr() {
            return false;
        }
        let lag_max_ms = self.config.replica_lag_time_max_ms;
        let mut new_high_watermark = leader_log_end_offset;
        for (&id, replica) in &self.remote {
            if replica.log_end_offset < new_high_watermark
                && (self.in_maximal_isr(id)
                    || (replica.is_caught_up(leader_log_end_offset, now_ms, lag_max_ms)
                        && self.is_replica_isr_eligible(id)))
            {
                new_high_watermark = replica.log_end_offset;
            }
        }
        if new_high_watermark > self.high_watermark {
            self.high_watermark = new_high_watermark;
            true
        } else {
            false
        }
    }

    /// The assigned replicas.
    pub fn replicas(&self) -> &[BrokerId] {
        &self.replicas
    }
}
