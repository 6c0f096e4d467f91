//! Kafka's GroupMetadataManager on one shard: it drives the `GroupCoordinator` of the groups
//! whose partition of `__consumer_offsets` this shard owns — loads those partitions when they
//! arrive here, appends the coordinator's records to them, answers delayed JoinGroup/SyncGroup
//! requests, and runs the group timers (sessions, rebalance deadlines, offset expiry).
//!
//! The coordinator is a synchronous state machine in a `RefCell`: every call into it takes its
//! effects in the same borrow, with no await in between, so each task carries out exactly the
//! effects of its own call, in order.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_channel::oneshot;
use sluice_group::{
    Effect, GroupConfig, GroupCoordinator, GroupDescription, GroupError, GroupListing,
    JoinGroupArgs, JoinGroupResult, OffsetCommitArgs, OffsetsRecord, SyncGroupArgs,
    SyncGroupResult, Waiters, GROUP_METADATA_TOPIC_NAME,
};
use sluice_protocol::codec::Uuid;
use sluice_protocol::record_batch::{read_records, Record, RecordBatchBuilder, RecordBatches};
use sluice_replica::TopicIdPartition;
use sluice_shard::{
    CommittedOffsets, DeleteGroupArgs, DescribeGroupArgs, GroupRequest, HeartbeatArgs,
    LeaveGroupArgs, ListGroupsArgs, LocalWatch, MetadataImage, OffsetDeleteArgs, OffsetFetchArgs,
    PartitionResults, PerItemResults, Reply,
};
use tracing::{debug, error, info, warn};

use crate::shard_core::ShardCore;

/// How a delayed JoinGroup or SyncGroup is answered: each on a reply of its own kind.
#[derive(Debug)]
pub enum Waiter {}

impl Waiters for Waiter {
    type Join = Reply<JoinGroupResult>;
    type Sync = Reply<SyncGroupResult>;
}

/// How often sessions and rebalance deadlines are checked while some group has them.
const GROUP_TICK: Duration = Duration::from_millis(50);
/// The tick's pace while no group has anything timed; any request wakes it at once.
const GROUP_IDLE_TICK: Duration = Duration::from_secs(5);
/// Bytes read per step while loading a partition of `__consumer_offsets`.
const LOAD_READ_BYTES: usize = 1 << 20;
/// Kafka's `offsets.commit.timeout.ms` default: how long a commit waits for the in-sync
/// replicas of its `__consumer_offsets` partition.
const OFFSETS_COMMIT_TIMEOUT: Duration = Duration::from_millis(5_000);

/// The group coordinator of one shard.
#[derive(Default)]
pub struct GroupManager {
    state: RefCell<Option<Coordinated>>,
    /// Partitions that arrived with a metadata image, loaded by the next tick.
    pending_loads: RefCell<Vec<i32>>,
    /// Effects of unloading, carried out by the next tick.
    pending_effects: RefCell<Vec<Effect<Waiter>>>,
    /// Moves on every call into the coordinator and every queued load: wakes an idle tick.
    activity: LocalWatch,
}

struct Coordinated {
    topic_id: Uuid,
    coordinator: GroupCoordinator<Waiter>,
    owned: BTreeSet<i32>,
}

/// Milliseconds since the epoch: commit timestamps are wall-clock, as in Kafka.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The group settings from the broker configuration.
pub fn group_config(ctx: &ShardCore) -> GroupConfig {
    let c = &ctx.config;
    GroupConfig {
        group_min_session_timeout_ms: c.group_min_session_timeout_ms,
        group_max_session_timeout_ms: c.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms: c.group_initial_rebalance_delay_ms,
        group_max_size: c.group_max_size,
        offsets_retention_ms: c.offsets_retention_minutes.saturating_mul(60_000),
        offset_metadata_max_bytes: c.offset_metadata_max_bytes,
    }
}

impl GroupManager {
    /// Runs `f` on the coordinator and takes the effects it produced; `None` when this shard
    /// coordinates nothing (no `__consumer_offsets` yet).
    fn with<R>(
        &self,
        f: impl FnOnce(&mut GroupCoordinator<Waiter>) -> R,
    ) -> Option<(R, Vec<Effect<Waiter>>)> {
        let mut state = self.state.borrow_mut();
        let coordinated = state.as_mut()?;
        self.activity.advance(self.activity.value() + 1);
        let result = f(&mut coordinated.coordinator);
        let effects = coordinated.coordinator.take_effects();
        if cfg!(debug_assertions) {
            coordinated.coordinator.check_invariants();
        }
        Some((result, effects))
    }

    fn topic_id(&self) -> Option<Uuid> {
        self.state.borrow().as_ref().map(|c| c.topic_id)
    }

    /// A request answered through an effect (JoinGroup, SyncGroup): run the call, carry out
    /// the effects, then wait for the answer (which another task may deliver later).
    async fn delayed<T>(
        &self,
        ctx: &ShardCore,
        answer: oneshot::Receiver<T>,
        failed: T,
        f: impl FnOnce(&mut GroupCoordinator<Waiter>),
    ) -> T {
        let Some(((), effects)) = self.with(f) else {
            return failed;
        };
        self.run_effects(ctx, effects).await;
        // The waiter is dropped only when the partition is unloaded or the shard stops.
        answer.await.unwrap_or(failed)
    }

    /// A request answered by the call itself; its effects (if any) are carried out first.
    async fn immediate<R>(
        &self,
        ctx: &ShardCore,
        f: impl FnOnce(&mut GroupCoordinator<Waiter>) -> R,
    ) -> Option<R> {
        let (result, effects) = self.with(f)?;
        self.run_effects(ctx, effects).await;
        Some(result)
    }

    /// Like `immediate`, for calls whose success means records were written: a failed write
    /// turns success into COORDINATOR_NOT_AVAILABLE (the client retries).
    async fn immediate_written<T>(
        &self,
        ctx: &ShardCore,
        f: impl FnOnce(&mut GroupCoordinator<Waiter>) -> Result<T, GroupError>,
    ) -> Option<Result<T, GroupError>> {
        let (result, effects) = self.with(f)?;
        let written = self.run_effects(ctx, effects).await;
        Some(if written {
            result
        } else {
            Err(GroupError::CoordinatorNotAvailable)
        })
    }

    /// OffsetCommit: check, append the records, then make the offsets visible.
    async fn commit(&self, ctx: &ShardCore, args: OffsetCommitArgs) -> PerItemResults {
        let now = now_ms();
        let Some((prepared, _)) = self.with(|c| c.prepare_commit(&args, now)) else {
            return Err(GroupError::NotCoordinator);
        };
        let prepared = prepared?;
        let records: Vec<OffsetsRecord> = prepared.iter().filter_map(|r| r.clone().ok()).collect();
        if !records.is_empty() {
            let partition = self
                .state
                .borrow()
                .as_ref()
                .map(|c| c.coordinator.partition_for(&args.group_id));
            let Some(partition) = partition else {
                return Err(GroupError::NotCoordinator);
            };
            if !self.append(ctx, partition, &records, now).await {
                return Err(GroupError::CoordinatorNotAvailable);
            }
            self.with(|c| c.apply_commit(&records));
        }
        Ok(prepared.into_iter().map(|r| r.map(|_| ())).collect())
    }

    /// Carries out effects in order; false when a write failed (the answers after a failed
    /// write say COORDINATOR_NOT_AVAILABLE instead of success).
    async fn run_effects(&self, ctx: &ShardCore, effects: Vec<Effect<Waiter>>) -> bool {
        let mut written = true;
        for effect in effects {
            match effect {
                Effect::Write { partition, records } => {
                    written &= self.append(ctx, partition, &records, now_ms()).await;
                }
                Effect::JoinDone { waiter, result } => {
                    let _ = waiter.send(result);
                }
                Effect::SyncDone { waiter, mut result } => {
                    if !written && result.error.is_none() {
                        result = sluice_group::SyncGroupResult {
                            error: Some(GroupError::CoordinatorNotAvailable),
                            protocol_type: None,
                            protocol_name: None,
                            assignment: Bytes::new(),
                        };
                    }
                    let _ = waiter.send(result);
                }
            }
        }
        written
    }

    /// Appends records to this shard's partition of `__consumer_offsets` as one batch.
    async fn append(
        &self,
        ctx: &ShardCore,
        partition: i32,
        records: &[OffsetsRecord],
        now: i64,
    ) -> bool {
        let Some(topic_id) = self.topic_id() else {
            return false;
        };
        let tp = TopicIdPartition {
            topic_id,
            partition,
        };
        let Some(log) = ctx.replicas.get(&tp) else {
            warn!(partition, "group coordinator partition is not hosted here");
            return false;
        };
        let mut builder = RecordBatchBuilder::new(now);
        for record in records {
            let key = record.encode_key();
            let value = record.encode_value();
            builder = builder.record(Some(&key), value.as_deref());
        }
        // As Kafka's coordinator (offsets.commit.required.acks -1): a commit is answered once
        // the in-sync replicas of its __consumer_offsets partition hold it.
        let appended = match log.append_records_to_leader(&builder.build(), -1).await {
            Ok(info) => {
                log.wait_for_replication(info.last_offset, OFFSETS_COMMIT_TIMEOUT)
                    .await
            }
            Err(error) => Err(error),
        };
        match appended {
            Ok(()) => true,
            Err(error) => {
                error!(partition, %error, "cannot write to __consumer_offsets");
                false
            }
        }
    }

    /// The committed offsets of every group this shard coordinates, for the consumer lag
    /// metric (built at scrape time, never on the request path).
    pub fn committed_offsets(&self) -> Vec<sluice_shard::GroupOffset> {
        let state = self.state.borrow();
        let Some(coordinated) = state.as_ref() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for group in coordinated.coordinator.groups() {
            for (topic, partitions) in &group.offsets {
                for (partition, value) in partitions {
                    out.push(sluice_shard::GroupOffset {
                        group: group.group_id.clone(),
                        topic: topic.clone(),
                        partition: *partition,
                        offset: value.offset,
                    });
                }
            }
        }
        out
    }

    // ---- ownership and loading --------------------------------------------------------------

    /// Follows a new metadata image: starts loading the partitions of `__consumer_offsets`
    /// this shard now leads and unloads those it no longer leads.
    pub fn on_metadata(&self, ctx: &ShardCore, image: &MetadataImage) {
        let Some(topic) = image.topic(GROUP_METADATA_TOPIC_NAME) else {
            self.state.borrow_mut().take();
            return;
        };
        {
            let mut state = self.state.borrow_mut();
            if state.as_ref().is_some_and(|c| c.topic_id != topic.topic_id) {
                state.take();
            }
            if state.is_none() {
                let seed = (now_ms() as u64) ^ (u64::from(ctx.shard_id.0) << 48);
                *state = Some(Coordinated {
                    topic_id: topic.topic_id,
                    coordinator: GroupCoordinator::new(
                        group_config(ctx),
                        topic.partitions.len() as i32,
                        seed,
                    ),
                    owned: BTreeSet::new(),
                });
            }
        }
        for p in &topic.partitions {
            let tp = TopicIdPartition {
                topic_id: topic.topic_id,
                partition: p.partition,
            };
            // Coordinate only the partitions this broker leads: a partition whose leadership
            // moved away (or was lost: leader -1 while this broker is fenced) is unloaded, as
            // Kafka resigns its groups, and loaded again from the log when it comes back.
            let here = image.shard_table.shard_of(&tp) == Some(ctx.shard_id)
                && p.leader == image.local_node_id;
            let owned = self
                .state
                .borrow()
                .as_ref()
                .is_some_and(|c| c.owned.contains(&p.partition));
            if here && !owned {
                self.begin_load(p.partition);
            } else if !here && owned {
                self.unload(p.partition);
            }
        }
    }

    fn begin_load(&self, partition: i32) {
        if let Some(c) = self.state.borrow_mut().as_mut() {
            c.owned.insert(partition);
            c.coordinator.begin_load(partition);
        }
        self.pending_loads.borrow_mut().push(partition);
        self.activity.advance(self.activity.value() + 1);
    }

    fn unload(&self, partition: i32) {
        if let Some((_, effects)) = self.with(|c| c.unload(partition)) {
            self.pending_effects.borrow_mut().extend(effects);
        }
        if let Some(c) = self.state.borrow_mut().as_mut() {
            c.owned.remove(&partition);
        }
        info!(
            partition,
            "no longer coordinating the groups of this partition"
        );
    }

    /// Reads the partition from its start to its end and rebuilds its groups. Requests for
    /// them get COORDINATOR_LOAD_IN_PROGRESS meanwhile.
    async fn load(&self, ctx: &ShardCore, partition: i32) {
        let started = std::time::Instant::now();
        let Some(topic_id) = self.topic_id() else {
            return;
        };
        let tp = TopicIdPartition {
            topic_id,
            partition,
        };
        let Some(log) = ctx.replicas.get(&tp) else {
            warn!(
                partition,
                "cannot load group state: partition not hosted here"
            );
            return;
        };
        let mut offset = log.log_start_offset();
        let end = log.log_end_offset();
        let mut records = 0usize;
        while offset < end {
            let data = match log.read_to_log_end(offset, LOAD_READ_BYTES).await {
                Ok(records) => records,
                Err(error) => {
                    error!(partition, offset, %error, "cannot read __consumer_offsets; loading stops here");
                    break;
                }
            };
            let before = offset;
            for batch in RecordBatches::new(data) {
                let Ok((header, bytes)) = batch else {
                    break;
                };
                offset = header.next_offset();
                if header.is_control() {
                    continue;
                }
                match read_records(&bytes) {
                    Ok(batch_records) => {
                        records += batch_records.len();
                        self.load_batch(partition, batch_records);
                    }
                    Err(error) => {
                        warn!(partition, base_offset = header.base_offset, %error, "unreadable batch in __consumer_offsets skipped")
                    }
                }
            }
            if offset <= before {
                error!(
                    partition,
                    offset, "no progress loading __consumer_offsets; loading stops here"
                );
                break;
            }
        }
        self.with(|c| c.complete_load(partition, now_ms()));
        let elapsed_ms = started.elapsed().as_millis() as u64;
        if records > 0 {
            info!(partition, records, elapsed_ms, "loaded group state");
        } else {
            debug!(partition, elapsed_ms, "loaded group state (empty)");
        }
    }

    fn load_batch(&self, partition: i32, batch: Vec<Record>) {
        let mut state = self.state.borrow_mut();
        let Some(c) = state.as_mut() else {
            return;
        };
        for record in batch {
            let Some(key) = record.key else {
                continue;
            };
            match OffsetsRecord::decode(&key, record.value.as_deref()) {
                Ok(decoded) => c.coordinator.load_record(partition, decoded),
                Err(error) => {
                    warn!(partition, %error, "unreadable __consumer_offsets record skipped")
                }
            }
        }
    }

    // ---- timers ------------------------------------------------------------------------------

    /// Starts the session/rebalance tick and the offset expiry on this shard.
    /// Waits for the next tick: `GROUP_TICK` while some group has sessions or deadlines to
    /// check, else until a request or a load arrives (or `GROUP_IDLE_TICK`), so that an idle
    /// shard is not woken 20 times a second for nothing. False once the shard shuts down.
    async fn wait_for_tick(&self, ctx: &ShardCore) -> bool {
        let busy = !self.pending_loads.borrow().is_empty()
            || !self.pending_effects.borrow().is_empty()
            || self
                .state
                .borrow()
                .as_ref()
                .is_some_and(|c| c.coordinator.needs_ticks());
        let seen = self.activity.value();
        let next = async {
            if busy {
                glommio::timer::sleep(GROUP_TICK).await;
            } else {
                // The first request after idling is ticked for at once, then at GROUP_TICK.
                futures_lite::future::or(
                    self.activity.wait_beyond(seen),
                    glommio::timer::sleep(GROUP_IDLE_TICK),
                )
                .await;
                glommio::timer::sleep(GROUP_TICK).await;
            }
            true
        };
        futures_lite::future::or(next, async {
            ctx.shutdown.wait().await;
            false
        })
        .await
    }

    async fn tick(self: &Rc<Self>, ctx: &Rc<ShardCore>) {
        let loads: Vec<i32> = self.pending_loads.borrow_mut().drain(..).collect();
        for partition in loads {
            let (manager, ctx) = (self.clone(), ctx.clone());
            glommio::spawn_local(async move { manager.load(&ctx, partition).await }).detach();
        }
        let unloaded: Vec<_> = self.pending_effects.borrow_mut().drain(..).collect();
        self.run_effects(ctx, unloaded).await;
        if let Some(((), effects)) = self.with(|c| c.tick(now_ms())) {
            self.run_effects(ctx, effects).await;
        }
    }

    pub fn spawn_timers(self: &Rc<Self>, ctx: &Rc<ShardCore>) {
        let (manager, ctx_tick) = (self.clone(), ctx.clone());
        glommio::spawn_local(async move {
            while manager.wait_for_tick(&ctx_tick).await {
                manager.tick(&ctx_tick).await;
            }
        })
        .detach();
        let manager = self.clone();
        let interval = Duration::from_millis(ctx.config.offsets_retention_check_interval_ms);
        crate::log_manager::every(ctx.clone(), interval, move |ctx| {
            let manager = manager.clone();
            async move {
                if let Some(((), effects)) = manager.with(|c| c.expire_offsets(now_ms())) {
                    manager.run_effects(&ctx, effects).await;
                }
            }
        });
    }
}

/// A group request this shard's coordinator serves, answered in its own type.
pub trait CoordinatorCall: GroupRequest {
    /// Serves the request on `groups`, the coordinator of this shard.
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> Self::Response;
}

impl CoordinatorCall for JoinGroupArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> JoinGroupResult {
        let now = now_ms();
        let (waiter, answer) = oneshot::channel();
        let failed = self.failed(GroupError::NotCoordinator);
        let (group, member) = (self.group_id.clone(), self.member_id.clone());
        debug!(%group, %member, "JoinGroup");
        let result = groups
            .delayed(ctx, answer, failed, |c| c.join_group(self, waiter, now))
            .await;
        debug!(%group, %member, answered = %result.member_id, error = ?result.error,
            generation = result.generation_id, "JoinGroup answered");
        result
    }
}

impl CoordinatorCall for SyncGroupArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> SyncGroupResult {
        let now = now_ms();
        let (waiter, answer) = oneshot::channel();
        let failed = self.failed(GroupError::NotCoordinator);
        let (group, member, generation) = (
            self.group_id.clone(),
            self.member_id.clone(),
            self.generation_id,
        );
        debug!(%group, %member, generation, "SyncGroup");
        let result = groups
            .delayed(ctx, answer, failed, |c| c.sync_group(self, waiter, now))
            .await;
        debug!(%group, %member, generation, error = ?result.error,
            assignment_bytes = result.assignment.len(), "SyncGroup answered");
        result
    }
}

impl CoordinatorCall for HeartbeatArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> Result<(), GroupError> {
        let now = now_ms();
        let result = groups.immediate(ctx, |c| {
            c.heartbeat(
                &self.group_id,
                &self.member_id,
                self.group_instance_id.as_deref(),
                self.generation_id,
                now,
            )
        });
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}

impl CoordinatorCall for LeaveGroupArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> PerItemResults {
        let now = now_ms();
        let result = groups.immediate(ctx, |c| c.leave_group(&self.group_id, &self.members, now));
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}

impl CoordinatorCall for OffsetCommitArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> PerItemResults {
        groups.commit(ctx, self).await
    }
}

impl CoordinatorCall for OffsetFetchArgs {
    async fn serve(
        self,
        groups: &GroupManager,
        ctx: &ShardCore,
    ) -> Result<CommittedOffsets, GroupError> {
        let result = groups.immediate(ctx, |c| {
            c.fetch_offsets(&self.group_id, self.topics.as_deref())
        });
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}

impl CoordinatorCall for DescribeGroupArgs {
    async fn serve(
        self,
        groups: &GroupManager,
        ctx: &ShardCore,
    ) -> Result<GroupDescription, GroupError> {
        let result = groups.immediate(ctx, |c| c.describe_group(&self.group_id));
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}

impl CoordinatorCall for ListGroupsArgs {
    async fn serve(
        self,
        groups: &GroupManager,
        ctx: &ShardCore,
    ) -> Result<Vec<GroupListing>, GroupError> {
        let result = groups.immediate(ctx, |c| {
            if c.is_loading() {
                Err(GroupError::CoordinatorLoadInProgress)
            } else {
                Ok(c.list_groups())
            }
        });
        // A shard that coordinates nothing has no groups.
        result.await.unwrap_or(Ok(Vec::new()))
    }
}

impl CoordinatorCall for DeleteGroupArgs {
    async fn serve(self, groups: &GroupManager, ctx: &ShardCore) -> Result<(), GroupError> {
        let now = now_ms();
        let result = groups.immediate_written(ctx, |c| c.delete_group(&self.group_id, now));
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}

impl CoordinatorCall for OffsetDeleteArgs {
    async fn serve(
        self,
        groups: &GroupManager,
        ctx: &ShardCore,
    ) -> Result<PartitionResults, GroupError> {
        let result =
            groups.immediate_written(ctx, |c| c.delete_offsets(&self.group_id, &self.topics));
        result.await.unwrap_or(Err(GroupError::NotCoordinator))
    }
}
