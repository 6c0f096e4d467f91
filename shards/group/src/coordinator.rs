//! The GroupCoordinator: Kafka's classic group protocol as a synchronous state machine. It owns
//! the groups of the `__consumer_offsets` partitions loaded on this shard, takes requests and
//! the current time, and answers either at once or through `Effect`s: a JoinGroup or SyncGroup
//! answered later (when the rebalance completes), and records to write to a partition of
//! `__consumer_offsets` before the answers that follow them are sent.
//!
//! It reads no clock and does no I/O, so the same code runs on a shard (driven by the server's
//! group manager) and in seeded tests that replay any run exactly. `W` is how the driver answers
//! a delayed request (a oneshot sender on a shard, a number in tests).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Arguments;

use bytes::Bytes;
use tracing::{debug, info};

use crate::config::GroupConfig;
use crate::error::GroupError;
use crate::group::{ClassicGroup, GroupState, Member};
use crate::records::{GroupMetadataValue, OffsetCommitValue, OffsetsRecord, StoredMember};

/// Where a group's state lives: Kafka's `Utils.abs(groupId.hashCode) % partitions`, with Java's
/// `String.hashCode`, so a group maps to the same partition as on Kafka.
pub fn partition_for_group(group_id: &str, num_partitions: i32) -> i32 {
    assert!(num_partitions > 0, "__consumer_offsets has partitions");
    let mut hash: i32 = 0;
    for unit in group_id.encode_utf16() {
        hash = hash.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    (hash & 0x7fff_ffff) % num_partitions
}

/// A JoinGroup request.
#[derive(Debug, Clone)]
pub struct JoinGroupArgs {
    /// Group.
    pub group_id: String,
    /// Member id, empty on the first join.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Client id (the prefix of a new member id).
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Session timeout.
    pub session_timeout_ms: i32,
    /// Rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// Protocol type.
    pub protocol_type: String,
    /// Protocols (assignors) and their metadata, in preference order.
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: a new dynamic member must first get its id (MEMBER_ID_REQUIRED) and join again.
    pub require_known_member_id: bool,
}

/// A member as the leader sees it in its JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Its metadata for the selected protocol.
    pub metadata: Bytes,
}

/// A JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResult {
    /// Error, if refused.
    pub error: Option<GroupError>,
    /// Generation.
    pub generation_id: i32,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Selected protocol.
    pub protocol_name: Option<String>,
    /// Leader's member id.
    pub leader_id: String,
    /// v9+: the leader need not compute an assignment (a static leader rejoined a stable group).
    pub skip_assignment: bool,
    /// The member's id.
    pub member_id: String,
    /// Every member, for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinGroupResult {
    /// The answer to a JoinGroup that failed with `error`.
    pub fn error(error: GroupError, member_id: &str) -> JoinGroupResult {
        JoinGroupResult {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader_id: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

/// A SyncGroup request.
#[derive(Debug, Clone)]
pub struct SyncGroupArgs {
    /// Group.
    pub group_id: String,
    /// Generation.
    pub generation_id: i32,
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// v5+: protocol type, checked when present.
    pub protocol_type: Option<String>,
    /// v5+: protocol name, checked when present.
    pub protocol_name: Option<String>,
    /// The leader's assignment (empty for followers).
    pub assignments: Vec<(String, Bytes)>,
}

/// A SyncGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResult {
    /// Error, if refused.
    pub error: Option<GroupError>,
    /// Protocol type.
    pub protocol_type: Option<String>,
    /// Protocol name.
    pub protocol_name: Option<String>,
    /// The member's assignment.
    pub assignment: Bytes,
}

impl SyncGroupResult {
    /// The answer to a SyncGroup that failed with `error`.
    pub fn error(error: GroupError) -> SyncGroupResult {
        SyncGroupResult {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// One offset of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitOffset {
    /// Topic.
    pub topic: String,
    /// Partition.
    pub partition: i32,
    /// Offset.
    pub offset: i64,
    /// Leader epoch, -1 when unknown.
    pub leader_epoch: i32,
    /// Metadata.
    pub metadata: Option<String>,
}

/// An OffsetCommit request.
#[derive(Debug, Clone)]
pub struct OffsetCommitArgs {
    /// Group.
    pub group_id: String,
    /// Generation, -1 for a commit outside group management.
    pub generation_id: i32,
    /// Member id, empty outside group management.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// The offsets.
    pub offsets: Vec<CommitOffset>,
}

/// A member as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Its metadata for the group's protocol (Stable groups only).
    pub metadata: Bytes,
    /// Its assignment (Stable groups only).
    pub assignment: Bytes,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// State.
    pub state: GroupState,
    /// Protocol type ("" when none).
    pub protocol_type: String,
    /// The protocol, when Stable ("" otherwise).
    pub protocol: String,
    /// Members.
    pub members: Vec<MemberDescription>,
}

/// A group as ListGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// Group.
    pub group_id: String,
    /// Protocol type ("" when none).
    pub protocol_type: String,
    /// State.
    pub state: GroupState,
}

/// What the driver answers delayed requests with: one waiter type per request kind, so that a
/// JoinGroup's waiter can only ever be handed a JoinGroup result.
pub trait Waiters {
    /// Who waits for a JoinGroup.
    type Join: std::fmt::Debug;
    /// Who waits for a SyncGroup.
    type Sync: std::fmt::Debug;
}

/// Work the driver must carry out, in order.
#[derive(Debug)]
pub enum Effect<W: Waiters> {
    /// Answer a waiting JoinGroup.
    JoinDone {
        /// Who waits.
        waiter: W::Join,
        /// The answer.
        result: JoinGroupResult,
    },
    /// Answer a waiting SyncGroup.
    SyncDone {
        /// Who waits.
        waiter: W::Sync,
        /// The answer.
        result: SyncGroupResult,
    },
    /// Append these records to `__consumer_offsets` partition `partition`; the effects after
    /// this one wait for it.
    Write {
        /// The partition.
        partition: i32,
        /// The records.
        records: Vec<OffsetsRecord>,
    },
}

/// The load state of an owned partition of `__consumer_offsets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartitionLoad {
    Loading,
    Loaded,
}

/// A group being rebuilt from the log.
#[derive(Default)]
struct LoadingGroup {
    metadata: Option<GroupMetadataValue>,
    offsets: BTreeMap<String, BTreeMap<i32, OffsetCommitValue>>,
}

/// The coordinator of the groups in the `__consumer_offsets` partitions one shard owns.
pub struct GroupCoordinator<W: Waiters> {
    config: GroupConfig,
    num_partitions: i32,
    partitions: BTreeMap<i32, PartitionLoad>,
    loading: HashMap<i32, HashMap<String, LoadingGroup>>,
    groups: HashMap<String, ClassicGroup<W>>,
    effects: Vec<Effect<W>>,
    member_id_seed: u64,
    member_id_counter: u64,
}

impl<W: Waiters> GroupCoordinator<W> {
    /// A coordinator owning no partition yet. `member_id_seed` makes member ids unique across
    /// restarts (the driver seeds it randomly; tests fix it).
    pub fn new(config: GroupConfig, num_partitions: i32, member_id_seed: u64) -> Self {
        assert!(num_partitions > 0, "__consumer_offsets has partitions");
        GroupCoordinator {
            config,
            num_partitions,
            partitions: BTreeMap::new(),
            loading: HashMap::new(),
            groups: HashMap::new(),
            effects: Vec::new(),
            member_id_seed,
            member_id_counter: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The partition of `__consumer_offsets` that holds `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        partition_for_group(group_id, self.num_partitions)
    }

    /// Effects produced since the last call, in order.
    pub fn take_effects(&mut self) -> Vec<Effect<W>> {
        std::mem::take(&mut self.effects)
    }

    /// A group, for tests and checks.
    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup<W>> {
        self.groups.get(group_id)
    }

    /// Every loaded group (for the consumer lag metric, read at scrape time).
    pub fn groups(&self) -> impl Iterator<Item = &ClassicGroup<W>> {
        self.groups.values()
    }

    /// Checks every group's invariants.
    pub fn check_invariants(&self) {
        for group in self.groups.values() {
            group.check_invariants();
            assert_eq!(
                self.partitions.get(&group.partition),
                Some(&PartitionLoad::Loaded),
                "groups live only in loaded partitions"
            );
        }
    }

    // ---- loading and unloading -------------------------------------------------------------

    /// This shard now owns `partition`; its groups are unavailable until `complete_load`.
    pub fn begin_load(&mut self, partition: i32) {
        self.partitions.insert(partition, PartitionLoad::Loading);
        self.loading.insert(partition, HashMap::new());
    }

    /// Applies one record read from `partition` (in log order).
    pub fn load_record(&mut self, partition: i32, record: OffsetsRecord) {
        let Some(groups) = self.loading.get_mut(&partition) else {
            return;
        };
        match record {
            OffsetsRecord::OffsetCommit {
                group_id,
                topic,
                partition: p,
                value,
            } => {
                let group = groups.entry(group_id).or_default();
                match value {
                    Some(v) => {
                        group.offsets.entry(topic).or_default().insert(p, v);
                    }
                    None => {
                        if let Some(parts) = group.offsets.get_mut(&topic) {
                            parts.remove(&p);
                            if parts.is_empty() {
                                group.offsets.remove(&topic);
                            }
                        }
                    }
                }
            }
            OffsetsRecord::GroupMetadata { group_id, value } => match value {
                Some(v) => groups.entry(group_id).or_default().metadata = Some(v),
                None => {
                    groups.remove(&group_id);
                }
            },
        }
    }

    /// Ends the load of `partition`: its groups are rebuilt and served from now on. A group
    /// stored with members comes back Stable, each member with a fresh session.
    pub fn complete_load(&mut self, partition: i32, now_ms: i64) {
        let Some(loaded) = self.loading.remove(&partition) else {
            return;
        };
        for (group_id, loading) in loaded {
            if loading.metadata.is_none() && loading.offsets.is_empty() {
                continue;
            }
            let mut group = ClassicGroup::new(group_id.clone(), partition, now_ms);
            group.offsets = loading.offsets;
            if let Some(meta) = loading.metadata {
                restore_metadata(&mut group, meta, now_ms);
            }
            self.groups.insert(group_id, group);
        }
        self.partitions.insert(partition, PartitionLoad::Loaded);
    }

    /// This shard no longer owns `partition`: its groups go, and their waiting requests are
    /// told to find the new coordinator.
    pub fn unload(&mut self, partition: i32) {
        self.partitions.remove(&partition);
        self.loading.remove(&partition);
        let gone: Vec<String> = self
            .groups
            .values()
            .filter(|g| g.partition == partition)
            .map(|g| g.group_id.clone())
            .collect();
        for group_id in gone {
            if let Some(mut group) = self.groups.remove(&group_id) {
                for member in group.members.values_mut() {
                    if let Some(waiter) = member.awaiting_join.take() {
                        self.effects.push(Effect::JoinDone {
                            waiter,
                            result: JoinGroupResult::error(
                                GroupError::NotCoordinator,
                                &member.member_id,
                            ),
                        });
                    }
                    if let Some(waiter) = member.awaiting_sync.take() {
                        self.effects.push(Effect::SyncDone {
                            waiter,
                            result: SyncGroupResult::error(GroupError::NotCoordinator),
                        });
                    }
                }
            }
        }
    }

    /// Whether this coordinator serves `group_id` now; its partition when it does.
    pub fn check_coordinator(&self, group_id: &str) -> Result<i32, GroupError> {
        if group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        let partition = self.partition_for(group_id);
        match self.partitions.get(&partition) {
            Some(PartitionLoad::Loaded) => Ok(partition),
            Some(PartitionLoad::Loading) => Err(GroupError::CoordinatorLoadInProgress),
            None => Err(GroupError::NotCoordinator),
        }
    }

    // ---- JoinGroup ---------------------------------------------------------------------------

    /// JoinGroup: answered through an `Effect::JoinDone`, now or when the rebalance completes.
    pub fn join_group(&mut self, args: JoinGroupArgs, waiter: W::Join, now_ms: i64) {
        if let Err(error) = self.validate_join(&args, now_ms) {
            self.join_done(waiter, JoinGroupResult::error(error, &args.member_id));
            return;
        }
        let group_id = args.group_id.clone();
        self.join_validated(args, waiter, now_ms);
        self.try_complete_join(&group_id, now_ms);
    }

    fn validate_join(&mut self, args: &JoinGroupArgs, now_ms: i64) -> Result<(), GroupError> {
        let partition = self.check_coordinator(&args.group_id)?;
        let session = args.session_timeout_ms;
        if session < self.config.group_min_session_timeout_ms
            || session > self.config.group_max_session_timeout_ms
        {
            return Err(GroupError::InvalidSessionTimeout);
        }
        let unknown = args.member_id.is_empty();
        if !self.groups.contains_key(&args.group_id) {
            if !unknown {
                return Err(GroupError::UnknownMemberId);
            }
            self.groups.insert(
                args.group_id.clone(),
                ClassicGroup::new(args.group_id.clone(), partition, now_ms),
            );
        }
        let group = &self.groups[&args.group_id];
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if !group.supports_protocols(&args.protocol_type, &args.protocols) {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        let joining_anew = unknown || !group.has(&args.member_id);
        let rejoining_static = args
            .group_instance_id
            .as_ref()
            .is_some_and(|i| group.static_members.contains_key(i));
        if joining_anew
            && !rejoining_static
            && !group.pending_members.contains_key(&args.member_id)
            && group.members.len() + group.pending_members.len() >= self.config.group_max_size
        {
            return Err(GroupError::GroupMaxSizeReached);
        }
        Ok(())
    }

    fn join_validated(&mut self, args: JoinGroupArgs, waiter: W::Join, now_ms: i64) {
        if args.member_id.is_empty() {
            self.join_unknown_member(args, waiter, now_ms);
        } else {
            self.join_known_member(args, waiter, now_ms);
        }
    }

    fn join_unknown_member(&mut self, args: JoinGroupArgs, waiter: W::Join, now_ms: i64) {
        let member_id = self.new_member_id(&args.client_id);
        if let Some(instance) = args.group_instance_id.clone() {
            let group = &self.groups[&args.group_id];
            if let Some(old_member_id) = group.static_members.get(&instance).cloned() {
                self.replace_static_member(args, &old_member_id, member_id, waiter, now_ms);
                return;
            }
            self.add_member_and_rebalance(args, member_id, waiter, now_ms);
            return;
        }
        if args.require_known_member_id {
            let group = self.groups.get_mut(&args.group_id).expect("validated");
            let deadline = now_ms + i64::from(args.session_timeout_ms);
            group.pending_members.insert(member_id.clone(), deadline);
            self.join_done(
                waiter,
                JoinGroupResult::error(GroupError::MemberIdRequired, &member_id),
            );
            return;
        }
        self.add_member_and_rebalance(args, member_id, waiter, now_ms);
    }

    fn join_known_member(&mut self, args: JoinGroupArgs, waiter: W::Join, now_ms: i64) {
        let group = self.groups.get_mut(&args.group_id).expect("validated");
        let member_id = args.member_id.clone();
        if group.pending_members.remove(&member_id).is_some() {
            self.add_member_and_rebalance(args, member_id, waiter, now_ms);
            return;
        }
        if group.is_static_member_fenced(args.group_instance_id.as_deref(), &member_id) {
            self.join_done(
                waiter,
                JoinGroupResult::error(GroupError::FencedInstanceId, &member_id),
            );
            return;
        }
        if !group.has(&member_id) {
            self.join_done(
                waiter,
                JoinGroupResult::error(GroupError::UnknownMemberId, &member_id),
            );
            return;
        }
        let member = &group.members[&member_id];
        let unchanged = member.matches(&args.protocols);
        match group.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(args, waiter, now_ms)
            }
            GroupState::CompletingRebalance if unchanged => {
                // A retry of a join that already completed: the same answer again.
                let result = current_join_result(group, &member_id, false);
                self.join_done(waiter, result);
            }
            GroupState::Stable if unchanged && !group.is_leader(&member_id) => {
                let result = current_join_result(group, &member_id, false);
                self.join_done(waiter, result);
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(args, waiter, now_ms)
            }
            GroupState::Empty | GroupState::Dead => self.join_done(
                waiter,
                JoinGroupResult::error(GroupError::UnknownMemberId, &member_id),
            ),
        }
    }

    fn add_member_and_rebalance(
        &mut self,
        args: JoinGroupArgs,
        member_id: String,
        waiter: W::Join,
        now_ms: i64,
    ) {
        let group = self.groups.get_mut(&args.group_id).expect("validated");
        if group.members.is_empty() {
            group.protocol_type = Some(args.protocol_type.clone());
        }
        if let Some(instance) = &args.group_instance_id {
            group
                .static_members
                .insert(instance.clone(), member_id.clone());
        }
        let mut member = Member {
            member_id: member_id.clone(),
            group_instance_id: args.group_instance_id,
            client_id: args.client_id,
            client_host: args.client_host,
            rebalance_timeout_ms: args.rebalance_timeout_ms,
            session_timeout_ms: args.session_timeout_ms,
            protocol_type: args.protocol_type,
            protocols: args.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(waiter),
            awaiting_sync: None,
            is_new: true,
            session_deadline_ms: 0,
        };
        member.touch(now_ms);
        group.members.insert(member_id.clone(), member);
        if group.leader_id.is_none() {
            group.leader_id = Some(member_id.clone());
        }
        if group.state == GroupState::PreparingRebalance
            && group.initial_delay_remaining_ms.is_some()
        {
            group.new_member_added = true;
        }
        let group_id = &args.group_id;
        self.maybe_prepare_rebalance(
            group_id,
            now_ms,
            format_args!("adding new member {member_id}"),
        );
    }

    fn update_member_and_rebalance(&mut self, args: JoinGroupArgs, waiter: W::Join, now_ms: i64) {
        let group = self.groups.get_mut(&args.group_id).expect("validated");
        let member = group.members.get_mut(&args.member_id).expect("a member");
        member.protocols = args.protocols;
        member.rebalance_timeout_ms = args.rebalance_timeout_ms;
        member.session_timeout_ms = args.session_timeout_ms;
        member.touch(now_ms);
        // A second join from the same member replaces the first (the client gave up on it).
        if let Some(old) = member.awaiting_join.replace(waiter) {
            let result = JoinGroupResult::error(GroupError::RebalanceInProgress, &args.member_id);
            self.join_done(old, result);
        }
        let (group_id, member_id) = (&args.group_id, &args.member_id);
        let reason = format_args!("updating metadata for member {member_id}");
        self.maybe_prepare_rebalance(group_id, now_ms, reason);
    }

    /// A static member rejoined with an unknown member id (it restarted): it takes over its
    /// instance's place under a new member id; the old id is fenced.
    fn replace_static_member(
        &mut self,
        args: JoinGroupArgs,
        old_member_id: &str,
        new_member_id: String,
        waiter: W::Join,
        now_ms: i64,
    ) {
        let group = self.groups.get_mut(&args.group_id).expect("validated");
        let Some(mut member) = group.members.remove(old_member_id) else {
            return;
        };
        let mut fenced = Vec::new();
        if let Some(old) = member.awaiting_join.take() {
            fenced.push(Effect::JoinDone {
                waiter: old,
                result: JoinGroupResult::error(GroupError::FencedInstanceId, old_member_id),
            });
        }
        if let Some(old) = member.awaiting_sync.take() {
            fenced.push(Effect::SyncDone {
                waiter: old,
                result: SyncGroupResult::error(GroupError::FencedInstanceId),
            });
        }
        member.member_id = new_member_id.clone();
        member.protocols = args.protocols;
        member.client_id = args.client_id;
        member.client_host = args.client_host;
        member.rebalance_timeout_ms = args.rebalance_timeout_ms;
        member.session_timeout_ms = args.session_timeout_ms;
        member.touch(now_ms);
        if let Some(instance) = &member.group_instance_id {
            group
                .static_members
                .insert(instance.clone(), new_member_id.clone());
        }
        if group.leader_id.as_deref() == Some(old_member_id) {
            group.leader_id = Some(new_member_id.clone());
        }
        if group.pending_sync.remove(old_member_id) {
            group.pending_sync.insert(new_member_id.clone());
        }
        let state = group.state;
        member.awaiting_join = Some(waiter);
        group.members.insert(new_member_id.clone(), member);
        // Kafka rebalances only when the rejoined member makes the group pick another protocol;
        // its metadata may differ (a restarted consumer owns nothing yet) without a rebalance.
        let keeps_protocol = group.select_protocol() == group.protocol_name;
        self.effects.extend(fenced);
        match state {
            GroupState::Stable if keeps_protocol => {
                // Nothing changes for the others: keep the assignment, store the new id, and
                // answer this member with the current generation.
                let group = self.groups.get_mut(&args.group_id).expect("validated");
                let member = group.members.get_mut(&new_member_id).expect("inserted");
                let waiter = member.awaiting_join.take().expect("set above");
                let is_leader = group.is_leader(&new_member_id);
                let result = current_join_result(group, &new_member_id, is_leader);
                let record = group_metadata_record(group);
                self.effects.push(Effect::Write {
                    partition: group.partition,
                    records: vec![record],
                });
                self.join_done(waiter, result);
            }
            GroupState::PreparingRebalance => {}
            _ => {
                let reason = format_args!("static member {new_member_id} rejoined");
                self.maybe_prepare_rebalance(&args.group_id, now_ms, reason);
            }
        }
    }

    /// Starts a rebalance unless one is in progress; `reason` is formatted only for the log.
    fn maybe_prepare_rebalance(&mut self, group_id: &str, now_ms: i64, reason: Arguments<'_>) {
        let state = self.groups.get(group_id).map(|g| g.state);
        if matches!(
            state,
            Some(GroupState::Empty | GroupState::Stable | GroupState::CompletingRebalance)
        ) {
            self.prepare_rebalance(group_id, now_ms, reason);
        }
    }

    fn prepare_rebalance(&mut self, group_id: &str, now_ms: i64, reason: Arguments<'_>) {
        let initial_delay_ms = self.config.group_initial_rebalance_delay_ms;
        let group = self.groups.get_mut(group_id).expect("a group");
        // Kafka's line, at INFO as there: one per rebalance, the trail an operator follows.
        info!(
            group = group_id,
            state = ?group.state,
            generation = group.generation_id,
            %reason,
            "preparing to rebalance group"
        );
        if group.state == GroupState::CompletingRebalance {
            // The assignment in the making is void: members waiting in SyncGroup rejoin.
            for member in group.members.values_mut() {
                member.assignment = Bytes::new();
                if let Some(waiter) = member.awaiting_sync.take() {
                    self.effects.push(Effect::SyncDone {
                        waiter,
                        result: SyncGroupResult::error(GroupError::RebalanceInProgress),
                    });
                }
            }
        }
        group.pending_sync.clear();
        group.sync_deadline_ms = None;
        let rebalance_timeout_ms = group.rebalance_timeout_ms();
        if group.state == GroupState::Empty {
            group.join_deadline_ms = Some(now_ms + initial_delay_ms);
            group.initial_delay_remaining_ms =
                Some((rebalance_timeout_ms - initial_delay_ms).max(0));
            group.new_member_added = false;
        } else {
            group.join_deadline_ms = Some(now_ms + rebalance_timeout_ms);
            group.initial_delay_remaining_ms = None;
        }
        group.transition_to(GroupState::PreparingRebalance, now_ms);
    }

    /// Completes the rebalance of `group_id` when it may: every member rejoined (after the
    /// initial delay, for a group that was empty), or its deadline passed.
    fn try_complete_join(&mut self, group_id: &str, now_ms: i64) {
        let initial_delay_ms = self.config.group_initial_rebalance_delay_ms;
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group.state != GroupState::PreparingRebalance {
            return;
        }
        let deadline = group.join_deadline_ms.expect("a rebalance has a deadline");
        match group.initial_delay_remaining_ms {
            Some(remaining) => {
                if now_ms < deadline {
                    return;
                }
                if group.new_member_added && remaining > 0 {
                    let delay = initial_delay_ms.min(remaining);
                    group.join_deadline_ms = Some(now_ms + delay);
                    group.initial_delay_remaining_ms = Some(remaining - delay);
                    group.new_member_added = false;
                    return;
                }
            }
            None => {
                if now_ms < deadline && !group.has_all_members_joined() {
                    return;
                }
            }
        }
        self.complete_join(group_id, now_ms);
    }

    /// Kafka's `onCompleteJoin`: drop dynamic members that did not rejoin, start the next
    /// generation, and answer every waiting JoinGroup (the leader gets the member list).
    fn complete_join(&mut self, group_id: &str, now_ms: i64) {
        let group = self.groups.get_mut(group_id).expect("a group");
        let not_rejoined: Vec<String> = group
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in not_rejoined {
            info!(group = group_id, member = %member_id, "member did not rejoin in time, removing it");
            remove_member(group, &member_id, &mut self.effects);
        }
        group.join_deadline_ms = None;
        group.initial_delay_remaining_ms = None;
        group.new_member_added = false;
        group.generation_id += 1;
        if group.members.is_empty() {
            group.protocol_name = None;
            group.leader_id = None;
            group.transition_to(GroupState::Empty, now_ms);
            let record = group_metadata_record(group);
            self.effects.push(Effect::Write {
                partition: group.partition,
                records: vec![record],
            });
            return;
        }
        group.protocol_name = group.select_protocol();
        if !group.leader_id.as_ref().is_some_and(|l| group.has(l)) {
            group.leader_id = group.members.keys().next().cloned();
        }
        group.transition_to(GroupState::CompletingRebalance, now_ms);
        // Kafka's pending sync: every member must send SyncGroup within the rebalance timeout.
        group.pending_sync = group.members.keys().cloned().collect();
        group.sync_deadline_ms = Some(now_ms + group.rebalance_timeout_ms());
        info!(
            group = group_id,
            generation = group.generation_id,
            members = group.members.len(),
            leader = group.leader_id.as_deref().unwrap_or(""),
            "stabilized group"
        );
        let member_ids: Vec<String> = group.members.keys().cloned().collect();
        for member_id in member_ids {
            let is_leader = group.is_leader(&member_id);
            let result = current_join_result(group, &member_id, false);
            let member = group.members.get_mut(&member_id).expect("listed");
            member.is_new = false;
            member.touch(now_ms);
            if let Some(waiter) = member.awaiting_join.take() {
                debug_assert!(is_leader || result.members.is_empty());
                self.effects.push(Effect::JoinDone { waiter, result });
            }
        }
    }

    // ---- SyncGroup, Heartbeat, LeaveGroup ----------------------------------------------------

    /// SyncGroup: answered through an `Effect::SyncDone`, now or when the leader's assignment
    /// arrives.
    pub fn sync_group(&mut self, args: SyncGroupArgs, waiter: W::Sync, now_ms: i64) {
        match self.validate_sync(&args) {
            Err(error) => self.sync_done(waiter, SyncGroupResult::error(error)),
            Ok(GroupState::PreparingRebalance) => self.sync_done(
                waiter,
                SyncGroupResult::error(GroupError::RebalanceInProgress),
            ),
            Ok(GroupState::Stable) => {
                let group = self.groups.get_mut(&args.group_id).expect("validated");
                group.synced(&args.member_id);
                let member = group.members.get_mut(&args.member_id).expect("validated");
                member.touch(now_ms);
                let result = SyncGroupResult {
                    error: None,
                    protocol_type: group.protocol_type.clone(),
                    protocol_name: group.protocol_name.clone(),
                    assignment: member.assignment.clone(),
                };
                self.sync_done(waiter, result);
            }
            Ok(GroupState::CompletingRebalance) => self.sync_completing(args, waiter, now_ms),
            Ok(GroupState::Empty | GroupState::Dead) => {
                self.sync_done(waiter, SyncGroupResult::error(GroupError::UnknownMemberId))
            }
        }
    }

    fn validate_sync(&self, args: &SyncGroupArgs) -> Result<GroupState, GroupError> {
        self.check_coordinator(&args.group_id)?;
        let group = self
            .groups
            .get(&args.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if group.is_static_member_fenced(args.group_instance_id.as_deref(), &args.member_id) {
            return Err(GroupError::FencedInstanceId);
        }
        if !group.has(&args.member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        if args.generation_id != group.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let type_differs = args
            .protocol_type
            .as_ref()
            .is_some_and(|t| group.protocol_type.as_ref() != Some(t));
        let name_differs = args
            .protocol_name
            .as_ref()
            .is_some_and(|n| group.protocol_name.as_ref() != Some(n));
        if type_differs || name_differs {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        Ok(group.state)
    }

    fn sync_completing(&mut self, args: SyncGroupArgs, waiter: W::Sync, now_ms: i64) {
        let group = self.groups.get_mut(&args.group_id).expect("validated");
        group.synced(&args.member_id);
        let member = group.members.get_mut(&args.member_id).expect("validated");
        member.touch(now_ms);
        if let Some(old) = member.awaiting_sync.replace(waiter) {
            self.effects.push(Effect::SyncDone {
                waiter: old,
                result: SyncGroupResult::error(GroupError::RebalanceInProgress),
            });
        }
        if !group.is_leader(&args.member_id) {
            debug!(group = %args.group_id, member = %args.member_id, "waiting for the leader's assignment");
            return;
        }
        info!(
            group = %args.group_id,
            leader = %args.member_id,
            generation = group.generation_id,
            members = group.members.len(),
            "assignment received from the leader"
        );
        let mut assignments: HashMap<String, Bytes> = args.assignments.into_iter().collect();
        for member in group.members.values_mut() {
            member.assignment = assignments.remove(&member.member_id).unwrap_or_default();
        }
        group.transition_to(GroupState::Stable, now_ms);
        let record = group_metadata_record(group);
        self.effects.push(Effect::Write {
            partition: group.partition,
            records: vec![record],
        });
        let protocol_type = group.protocol_type.clone();
        let protocol_name = group.protocol_name.clone();
        for member in group.members.values_mut() {
            if let Some(waiter) = member.awaiting_sync.take() {
                // As Kafka: its session runs again from the answer (it was kept while waiting).
                member.touch(now_ms);
                self.effects.push(Effect::SyncDone {
                    waiter,
                    result: SyncGroupResult {
                        error: None,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment: member.assignment.clone(),
                    },
                });
            }
        }
    }

    /// Heartbeat.
    pub fn heartbeat(
        &mut self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        self.check_coordinator(group_id)?;
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if group.is_static_member_fenced(group_instance_id, member_id) {
            return Err(GroupError::FencedInstanceId);
        }
        if !group.has(member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        if generation_id != group.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        let state = group.state;
        let member = group.members.get_mut(member_id).expect("checked");
        match state {
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
            GroupState::PreparingRebalance => {
                member.touch(now_ms);
                Err(GroupError::RebalanceInProgress)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                member.touch(now_ms);
                Ok(())
            }
        }
    }

    /// LeaveGroup for several members (`member_id` may be empty when the instance id names a
    /// static member). One result per member, in order.
    pub fn leave_group(
        &mut self,
        group_id: &str,
        members: &[(String, Option<String>)],
        now_ms: i64,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        self.check_coordinator(group_id)?;
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        let mut results = Vec::with_capacity(members.len());
        for (member_id, instance_id) in members {
            results.push(self.leave_one(group_id, member_id, instance_id.as_deref(), now_ms));
        }
        Ok(results)
    }

    fn leave_one(
        &mut self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        now_ms: i64,
    ) -> Result<(), GroupError> {
        let group = self.groups.get_mut(group_id).expect("checked");
        let member_id = match (member_id.is_empty(), instance_id) {
            (true, Some(instance)) => group
                .static_members
                .get(instance)
                .cloned()
                .ok_or(GroupError::UnknownMemberId)?,
            _ => {
                if group.is_static_member_fenced(instance_id, member_id) {
                    return Err(GroupError::FencedInstanceId);
                }
                member_id.to_string()
            }
        };
        if group.pending_members.remove(&member_id).is_some() {
            self.try_complete_join(group_id, now_ms);
            return Ok(());
        }
        if !group.has(&member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        info!(group = group_id, member = %member_id, "member left the group (LeaveGroup)");
        self.remove_member_and_update_group(group_id, &member_id, now_ms);
        Ok(())
    }

    fn remove_member_and_update_group(&mut self, group_id: &str, member_id: &str, now_ms: i64) {
        let group = self.groups.get_mut(group_id).expect("a group");
        remove_member(group, member_id, &mut self.effects);
        match group.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                let reason = format_args!("removing member {member_id}");
                self.prepare_rebalance(group_id, now_ms, reason);
                self.try_complete_join(group_id, now_ms);
            }
            GroupState::PreparingRebalance => self.try_complete_join(group_id, now_ms),
            GroupState::Empty | GroupState::Dead => {}
        }
    }

    // ---- timers ------------------------------------------------------------------------------

    /// Runs what is due at `now_ms`: sessions that ended, member ids never used, rebalances
    /// whose deadline passed.
    pub fn tick(&mut self, now_ms: i64) {
        // Only groups with something timed: offsets-only and empty groups (kept for days by
        // offsets.retention.minutes) cost nothing here.
        let group_ids: Vec<String> = self
            .groups
            .values()
            .filter(|g| g.has_timers())
            .map(|g| g.group_id.clone())
            .collect();
        for group_id in group_ids {
            self.expire_members(&group_id, now_ms);
            self.expire_pending_sync(&group_id, now_ms);
            self.try_complete_join(&group_id, now_ms);
        }
    }

    /// Kafka's pending sync expiration: members that joined this generation but sent no
    /// SyncGroup within the rebalance timeout are removed, and the group rebalances.
    fn expire_pending_sync(&mut self, group_id: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if group
            .sync_deadline_ms
            .is_none_or(|deadline| now_ms < deadline)
        {
            return;
        }
        let pending: Vec<String> = std::mem::take(&mut group.pending_sync)
            .into_iter()
            .collect();
        group.sync_deadline_ms = None;
        info!(group = group_id, members = ?pending, "removing members that sent no SyncGroup in time");
        for member_id in &pending {
            remove_member(group, member_id, &mut self.effects);
        }
        let reason = format_args!("removing {pending:?} on pending sync expiration");
        self.prepare_rebalance(group_id, now_ms, reason);
        self.try_complete_join(group_id, now_ms);
    }

    /// Whether any group has members, pending member ids or a rebalance in progress: only then
    /// does `tick` have work; an idle coordinator needs no ticks until a request arrives.
    pub fn needs_ticks(&self) -> bool {
        self.groups.values().any(|g| g.has_timers())
    }

    fn expire_members(&mut self, group_id: &str, now_ms: i64) {
        let group = self.groups.get_mut(group_id).expect("listed");
        group
            .pending_members
            .retain(|_, deadline| *deadline > now_ms);
        // A member waiting in JoinGroup is bounded by the rebalance deadline, not its session;
        // one waiting in SyncGroup by the leader's (Kafka's `hasSatisfiedHeartbeat`): the
        // leader's session or sync deadline ending rebalances and answers it.
        let expired: Vec<String> = group
            .members
            .values()
            .filter(|m| {
                m.awaiting_join.is_none()
                    && m.awaiting_sync.is_none()
                    && m.session_deadline_ms <= now_ms
            })
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in expired {
            info!(group = group_id, member = %member_id, "member's session expired, removing it");
            self.remove_member_and_update_group(group_id, &member_id, now_ms);
        }
    }

    // ---- offsets -----------------------------------------------------------------------------

    /// OffsetCommit, first half: checks the request and returns the records to append, one
    /// result per offset in order. Once they are appended, `apply_commit` makes them visible.
    #[allow(clippy::type_complexity)]
    pub fn prepare_commit(
        &mut self,
        args: &OffsetCommitArgs,
        now_ms: i64,
    ) -> Result<Vec<Result<OffsetsRecord, GroupError>>, GroupError> {
        let partition = self.check_coordinator(&args.group_id)?;
        if !self.groups.contains_key(&args.group_id) {
            if args.generation_id >= 0 {
                return Err(GroupError::IllegalGeneration);
            }
            let group = ClassicGroup::new(args.group_id.clone(), partition, now_ms);
            self.groups.insert(args.group_id.clone(), group);
        }
        let group = self.groups.get_mut(&args.group_id).expect("present");
        if group.state == GroupState::Dead {
            return Err(GroupError::CoordinatorNotAvailable);
        }
        if group.is_static_member_fenced(args.group_instance_id.as_deref(), &args.member_id) {
            return Err(GroupError::FencedInstanceId);
        }
        let offsets_only = args.generation_id < 0 && group.state == GroupState::Empty;
        if !offsets_only {
            if group.state == GroupState::CompletingRebalance {
                return Err(GroupError::RebalanceInProgress);
            }
            if !group.has(&args.member_id) {
                return Err(GroupError::UnknownMemberId);
            }
            if args.generation_id != group.generation_id {
                return Err(GroupError::IllegalGeneration);
            }
            group
                .members
                .get_mut(&args.member_id)
                .expect("checked")
                .touch(now_ms);
        }
        let metadata_max = self.config.offset_metadata_max_bytes;
        Ok(args
            .offsets
            .iter()
            .map(|o| {
                let metadata = o.metadata.clone().unwrap_or_default();
                if metadata.len() > metadata_max {
                    return Err(GroupError::OffsetMetadataTooLarge);
                }
                Ok(OffsetsRecord::OffsetCommit {
                    group_id: args.group_id.clone(),
                    topic: o.topic.clone(),
                    partition: o.partition,
                    value: Some(OffsetCommitValue {
                        offset: o.offset,
                        leader_epoch: o.leader_epoch,
                        metadata,
                        commit_timestamp_ms: now_ms,
                    }),
                })
            })
            .collect())
    }

    /// OffsetCommit, second half: the records were appended; the offsets are now committed.
    pub fn apply_commit(&mut self, records: &[OffsetsRecord]) {
        for record in records {
            let OffsetsRecord::OffsetCommit {
                group_id,
                topic,
                partition,
                value: Some(value),
            } = record
            else {
                continue;
            };
            // A group deleted while its commit was being written stays deleted.
            if let Some(group) = self.groups.get_mut(group_id) {
                group
                    .offsets
                    .entry(topic.clone())
                    .or_default()
                    .insert(*partition, value.clone());
            }
        }
    }

    /// OffsetFetch for one group: the committed offset of each asked partition (`None` when
    /// there is none), or of every partition with one when `topics` is `None`.
    #[allow(clippy::type_complexity)]
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
    ) -> Result<Vec<(String, Vec<(i32, Option<OffsetCommitValue>)>)>, GroupError> {
        self.check_coordinator(group_id)?;
        let offsets = self.groups.get(group_id).map(|g| &g.offsets);
        let Some(topics) = topics else {
            return Ok(offsets
                .map(|o| {
                    o.iter()
                        .map(|(topic, parts)| {
                            let parts = parts.iter().map(|(p, v)| (*p, Some(v.clone()))).collect();
                            (topic.clone(), parts)
                        })
                        .collect()
                })
                .unwrap_or_default());
        };
        Ok(topics
            .iter()
            .map(|(topic, partitions)| {
                let committed = offsets.and_then(|o| o.get(topic));
                let parts = partitions
                    .iter()
                    .map(|p| (*p, committed.and_then(|c| c.get(p)).cloned()))
                    .collect();
                (topic.clone(), parts)
            })
            .collect())
    }

    /// OffsetDelete: removes the committed offsets of partitions the group does not consume.
    /// Tombstones go out as an `Effect::Write`.
    #[allow(clippy::type_complexity)]
    pub fn delete_offsets(
        &mut self,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Result<Vec<(String, Vec<(i32, Result<(), GroupError>)>)>, GroupError> {
        self.check_coordinator(group_id)?;
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        if group.state == GroupState::Dead {
            return Err(GroupError::GroupIdNotFound);
        }
        let subscribed = if group.state == GroupState::Empty {
            Vec::new()
        } else {
            group.subscribed_topics().ok_or(GroupError::NonEmptyGroup)?
        };
        let mut tombstones = Vec::new();
        let mut results = Vec::with_capacity(topics.len());
        for (topic, partitions) in topics {
            let in_use = subscribed.contains(topic);
            let mut parts = Vec::with_capacity(partitions.len());
            for p in partitions {
                if in_use {
                    parts.push((*p, Err(GroupError::GroupSubscribedToTopic)));
                    continue;
                }
                let removed = group.offsets.get_mut(topic).and_then(|o| o.remove(p));
                if removed.is_some() {
                    tombstones.push(offset_tombstone(group_id, topic, *p));
                }
                parts.push((*p, Ok(())));
            }
            if group.offsets.get(topic).is_some_and(|o| o.is_empty()) {
                group.offsets.remove(topic);
            }
            results.push((topic.clone(), parts));
        }
        if !tombstones.is_empty() {
            self.effects.push(Effect::Write {
                partition: group.partition,
                records: tombstones,
            });
        }
        Ok(results)
    }

    /// Removes offsets older than `offsets.retention.minutes` as Kafka does (KIP-211): all of
    /// a group's offsets once it has been empty that long; for a group without group
    /// management, each offset that long after its commit; for a live consumer group, those of
    /// topics it no longer subscribes to. Groups left empty without offsets are removed.
    pub fn expire_offsets(&mut self, now_ms: i64) {
        let retention_ms = self.config.offsets_retention_ms;
        let mut writes: BTreeMap<i32, Vec<OffsetsRecord>> = BTreeMap::new();
        let mut dead = Vec::new();
        for group in self.groups.values_mut() {
            let expired = expired_offsets(group, now_ms, retention_ms);
            for (topic, partition) in expired {
                if let Some(parts) = group.offsets.get_mut(&topic) {
                    parts.remove(&partition);
                    if parts.is_empty() {
                        group.offsets.remove(&topic);
                    }
                }
                writes
                    .entry(group.partition)
                    .or_default()
                    .push(offset_tombstone(&group.group_id, &topic, partition));
            }
            if group.state == GroupState::Empty && group.offsets.is_empty() {
                group.transition_to(GroupState::Dead, now_ms);
                writes
                    .entry(group.partition)
                    .or_default()
                    .push(OffsetsRecord::GroupMetadata {
                        group_id: group.group_id.clone(),
                        value: None,
                    });
                dead.push(group.group_id.clone());
            }
        }
        for group_id in dead {
            self.groups.remove(&group_id);
        }
        for (partition, records) in writes {
            self.effects.push(Effect::Write { partition, records });
        }
    }

    // ---- admin: describe, list, delete -------------------------------------------------------

    /// DescribeGroups for one group.
    pub fn describe_group(&self, group_id: &str) -> Result<GroupDescription, GroupError> {
        self.check_coordinator(group_id)?;
        let group = self
            .groups
            .get(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        let stable = group.state == GroupState::Stable;
        let protocol = if stable {
            group.protocol_name.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let members = group
            .members
            .values()
            .map(|m| MemberDescription {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                metadata: if stable {
                    m.metadata(&protocol).cloned().unwrap_or_default()
                } else {
                    Bytes::new()
                },
                assignment: if stable {
                    m.assignment.clone()
                } else {
                    Bytes::new()
                },
            })
            .collect();
        Ok(GroupDescription {
            state: group.state,
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol,
            members,
        })
    }

    /// ListGroups: the groups of the loaded partitions.
    pub fn list_groups(&self) -> Vec<GroupListing> {
        let mut listings: Vec<GroupListing> = self
            .groups
            .values()
            .map(|g| GroupListing {
                group_id: g.group_id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                state: g.state,
            })
            .collect();
        listings.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        listings
    }

    /// True while some partition is still loading (ListGroups answers
    /// COORDINATOR_LOAD_IN_PROGRESS then).
    pub fn is_loading(&self) -> bool {
        self.partitions
            .values()
            .any(|p| *p == PartitionLoad::Loading)
    }

    /// DeleteGroups for one group: only an empty group; its offsets and metadata become
    /// tombstones (an `Effect::Write`).
    pub fn delete_group(&mut self, group_id: &str, now_ms: i64) -> Result<(), GroupError> {
        self.check_coordinator(group_id)?;
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        match group.state {
            GroupState::Dead => return Err(GroupError::GroupIdNotFound),
            GroupState::Empty => {}
            _ => return Err(GroupError::NonEmptyGroup),
        }
        let mut records: Vec<OffsetsRecord> = group
            .offsets
            .iter()
            .flat_map(|(topic, parts)| {
                parts
                    .keys()
                    .map(move |p| offset_tombstone(group_id, topic, *p))
            })
            .collect();
        records.push(OffsetsRecord::GroupMetadata {
            group_id: group_id.to_string(),
            value: None,
        });
        group.transition_to(GroupState::Dead, now_ms);
        let partition = group.partition;
        self.groups.remove(group_id);
        self.effects.push(Effect::Write { partition, records });
        Ok(())
    }

    // ---- helpers -----------------------------------------------------------------------------

    fn join_done(&mut self, waiter: W::Join, result: JoinGroupResult) {
        self.effects.push(Effect::JoinDone { waiter, result });
    }

    fn sync_done(&mut self, waiter: W::Sync, result: SyncGroupResult) {
        self.effects.push(Effect::SyncDone { waiter, result });
    }

    /// `<client id>-<uuid>`, as Kafka names members.
    fn new_member_id(&mut self, client_id: &str) -> String {
        self.member_id_counter += 1;
        let a = splitmix64(self.member_id_seed ^ self.member_id_counter);
        let b = splitmix64(a ^ self.member_id_counter.rotate_left(32));
        format!(
            "{client_id}-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xffff,
            b >> 48,
            b & 0xffff_ffff_ffff
        )
    }
}

/// Removes a member, answering its waiting requests with UNKNOWN_MEMBER_ID, and picks a new
/// leader when it led.
fn remove_member<W: Waiters>(
    group: &mut ClassicGroup<W>,
    member_id: &str,
    effects: &mut Vec<Effect<W>>,
) {
    let Some(mut member) = group.members.remove(member_id) else {
        return;
    };
    group.synced(member_id);
    if let Some(waiter) = member.awaiting_join.take() {
        effects.push(Effect::JoinDone {
            waiter,
            result: JoinGroupResult::error(GroupError::UnknownMemberId, member_id),
        });
    }
    if let Some(waiter) = member.awaiting_sync.take() {
        effects.push(Effect::SyncDone {
            waiter,
            result: SyncGroupResult::error(GroupError::UnknownMemberId),
        });
    }
    if let Some(instance) = &member.group_instance_id {
        group.static_members.remove(instance);
    }
    if group.is_leader(member_id) {
        group.leader_id = group.members.keys().next().cloned();
    }
}

/// The JoinGroup answer of the current generation for `member_id`; the leader's carries the
/// members.
fn current_join_result<W: Waiters>(
    group: &ClassicGroup<W>,
    member_id: &str,
    skip_assignment: bool,
) -> JoinGroupResult {
    let protocol = group.protocol_name.clone().unwrap_or_default();
    let members = if group.is_leader(member_id) {
        group
            .members
            .values()
            .map(|m| JoinedMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(&protocol).cloned().unwrap_or_default(),
            })
            .collect()
    } else {
        Vec::new()
    };
    JoinGroupResult {
        error: None,
        generation_id: group.generation_id,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol_name.clone(),
        leader_id: group.leader_id.clone().unwrap_or_default(),
        skip_assignment,
        member_id: member_id.to_string(),
        members,
    }
}

/// The group's metadata record as Kafka stores it after a rebalance.
fn group_metadata_record<W: Waiters>(group: &ClassicGroup<W>) -> OffsetsRecord {
    let protocol = group.protocol_name.clone().unwrap_or_default();
    OffsetsRecord::GroupMetadata {
        group_id: group.group_id.clone(),
        value: Some(GroupMetadataValue {
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            generation_id: group.generation_id,
            protocol_name: group.protocol_name.clone(),
            leader: group.leader_id.clone(),
            current_state_timestamp_ms: group.state_timestamp_ms,
            members: group
                .members
                .values()
                .map(|m| StoredMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol).cloned().unwrap_or_default(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }),
    }
}

/// Rebuilds a group from its stored metadata: Stable with its members when it had any.
fn restore_metadata<W: Waiters>(
    group: &mut ClassicGroup<W>,
    meta: GroupMetadataValue,
    now_ms: i64,
) {
    group.generation_id = meta.generation_id;
    group.protocol_type = (!meta.protocol_type.is_empty()).then_some(meta.protocol_type);
    if meta.current_state_timestamp_ms >= 0 {
        group.state_timestamp_ms = meta.current_state_timestamp_ms;
    }
    let Some(protocol) = meta.protocol_name.filter(|_| !meta.members.is_empty()) else {
        return;
    };
    for stored in meta.members {
        let mut member = Member {
            member_id: stored.member_id.clone(),
            group_instance_id: stored.group_instance_id.clone(),
            client_id: stored.client_id,
            client_host: stored.client_host,
            rebalance_timeout_ms: stored.rebalance_timeout_ms,
            session_timeout_ms: stored.session_timeout_ms,
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocols: vec![(protocol.clone(), stored.subscription)],
            assignment: stored.assignment,
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            session_deadline_ms: 0,
        };
        member.touch(now_ms);
        if let Some(instance) = stored.group_instance_id {
            group
                .static_members
                .insert(instance, stored.member_id.clone());
        }
        group.members.insert(stored.member_id, member);
    }
    group.leader_id = meta
        .leader
        .filter(|l| group.members.contains_key(l))
        .or_else(|| group.members.keys().next().cloned());
    group.protocol_name = Some(protocol);
    group.state = GroupState::Stable;
}

fn expired_offsets<W: Waiters>(
    group: &ClassicGroup<W>,
    now_ms: i64,
    retention_ms: i64,
) -> Vec<(String, i32)> {
    let all = |group: &ClassicGroup<W>, by_commit: &dyn Fn(&str, &OffsetCommitValue) -> bool| {
        group
            .offsets
            .iter()
            .flat_map(|(topic, parts)| {
                parts
                    .iter()
                    .filter(|(_, v)| by_commit(topic, v))
                    .map(|(p, _)| (topic.clone(), *p))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    let old = |v: &OffsetCommitValue| v.commit_timestamp_ms + retention_ms <= now_ms;
    match (group.state, group.protocol_type.is_some()) {
        (GroupState::Empty, true) => {
            if group.state_timestamp_ms + retention_ms <= now_ms {
                all(group, &|_, _| true)
            } else {
                Vec::new()
            }
        }
        (GroupState::Empty, false) => all(group, &|_, v| old(v)),
        (GroupState::Stable, _) => match group.subscribed_topics() {
            Some(subscribed) => all(group, &|t, v| !subscribed.iter().any(|s| s == t) && old(v)),
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn offset_tombstone(group_id: &str, topic: &str, partition: i32) -> OffsetsRecord {
    OffsetsRecord::OffsetCommit {
        group_id: group_id.to_string(),
        topic: topic.to_string(),
        partition,
        value: None,
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
