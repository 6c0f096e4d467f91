//! One classic consumer group: its members, its state in Kafka's state machine, its generation
//! and its committed offsets. `GroupCoordinator` drives the transitions; this file holds the
//! state and the questions asked of it.
//!
//! ```text
//!            join                 all joined / rebalance timeout          leader's SyncGroup
//!   Empty ─────────▶ PreparingRebalance ─────────────────────▶ CompletingRebalance ───────▶ Stable
//!     ▲                  ▲    │ no member left                    │ join/leave/expiry         │
//!     └──────────────────┼────┘                                   ▼                           │
//!                        └──────────────────────────────── PreparingRebalance ◀───────────────┘
//!   Empty ──(deleted, or expired with no offsets)──▶ Dead
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;

use crate::coordinator::Waiters;
use crate::records::OffsetCommitValue;
use crate::subscription::{subscribed_topics, CONSUMER_PROTOCOL_TYPE};

/// Kafka's group states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// No members; may still hold offsets.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Assignment delivered.
    Stable,
    /// Removed.
    Dead,
}

impl GroupState {
    /// Kafka's name, as DescribeGroups and ListGroups report it.
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A member of a group. `W` is whatever the driver uses to answer a delayed request.
#[derive(Debug)]
pub struct Member<W: Waiters> {
    /// Member id (assigned by the coordinator).
    pub member_id: String,
    /// Static membership instance id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// How long a rebalance may wait for this member to rejoin.
    pub rebalance_timeout_ms: i32,
    /// How long without a heartbeat before the member is removed.
    pub session_timeout_ms: i32,
    /// The member's protocol type.
    pub protocol_type: String,
    /// Supported protocols (assignors) in preference order, with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    /// The member's current assignment.
    pub assignment: Bytes,
    /// A JoinGroup waiting for the rebalance to complete.
    pub awaiting_join: Option<W::Join>,
    /// A SyncGroup waiting for the leader's assignment.
    pub awaiting_sync: Option<W::Sync>,
    /// Joined during the current rebalance for the first time.
    pub is_new: bool,
    /// The session ends at this time unless a heartbeat (or join/sync) comes first.
    pub session_deadline_ms: i64,
}

impl<W: Waiters> Member<W> {
    /// The metadata this member sent for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, m)| m)
    }

    /// Same protocols, same metadata, same order.
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// Restarts the session.
    pub fn touch(&mut self, now_ms: i64) {
        self.session_deadline_ms = now_ms + i64::from(self.session_timeout_ms);
    }
}

/// A classic group.
#[derive(Debug)]
pub struct ClassicGroup<W: Waiters> {
    /// Group id.
    pub group_id: String,
    /// Its partition of `__consumer_offsets`.
    pub partition: i32,
    /// State.
    pub state: GroupState,
    /// When the group entered its state.
    pub state_timestamp_ms: i64,
    /// Protocol type of the members ("consumer"), `None` for an offsets-only group.
    pub protocol_type: Option<String>,
    /// The protocol chosen for the current generation.
    pub protocol_name: Option<String>,
    /// Generation (incremented at each completed join).
    pub generation_id: i32,
    /// The leader's member id.
    pub leader_id: Option<String>,
    /// Members by id.
    pub members: BTreeMap<String, Member<W>>,
    /// Static instance id → member id.
    pub static_members: HashMap<String, String>,
    /// KIP-394: member ids handed out by MEMBER_ID_REQUIRED, not yet joined, with the time
    /// they are forgotten.
    pub pending_members: BTreeMap<String, i64>,
    /// When the rebalance in progress completes at the latest.
    pub join_deadline_ms: Option<i64>,
    /// During the initial delay of an empty group: how much longer the delay may still be
    /// extended (Kafka's `InitialDelayedJoin`). `None` outside it.
    pub initial_delay_remaining_ms: Option<i64>,
    /// A member was added during the initial delay.
    pub new_member_added: bool,
    /// Members of this generation that have not sent SyncGroup yet (Kafka's pending sync
    /// members); those still here at `sync_deadline_ms` are removed and the group rebalances.
    pub pending_sync: BTreeSet<String>,
    /// The rebalance timeout after the join completed; `None` once every member synced or
    /// outside a generation's sync phase.
    pub sync_deadline_ms: Option<i64>,
    /// Committed offsets: topic → partition → offset.
    pub offsets: BTreeMap<String, BTreeMap<i32, OffsetCommitValue>>,
}

impl<W: Waiters> ClassicGroup<W> {
    /// Whether something of this group runs out with time: member sessions, pending member
    /// ids, a rebalance deadline.
    pub fn has_timers(&self) -> bool {
        !self.members.is_empty()
            || !self.pending_members.is_empty()
            || self.state == GroupState::PreparingRebalance
    }

    /// `member_id` sent its SyncGroup (or left): no longer pending sync.
    pub fn synced(&mut self, member_id: &str) {
        self.pending_sync.remove(member_id);
        if self.pending_sync.is_empty() {
            self.sync_deadline_ms = None;
        }
    }

    /// A new empty group.
    pub fn new(group_id: String, partition: i32, now_ms: i64) -> ClassicGroup<W> {
        ClassicGroup {
            group_id,
            partition,
            state: GroupState::Empty,
            state_timestamp_ms: now_ms,
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: BTreeMap::new(),
            join_deadline_ms: None,
            initial_delay_remaining_ms: None,
            new_member_added: false,
            pending_sync: BTreeSet::new(),
            sync_deadline_ms: None,
            offsets: BTreeMap::new(),
        }
    }

    /// Moves to `state`, checking Kafka's allowed transitions.
    pub fn transition_to(&mut self, state: GroupState, now_ms: i64) {
        let allowed = match state {
            GroupState::Empty => matches!(self.state, GroupState::PreparingRebalance),
            GroupState::PreparingRebalance => matches!(
                self.state,
                GroupState::Empty | GroupState::Stable | GroupState::CompletingRebalance
            ),
            GroupState::CompletingRebalance => {
                matches!(self.state, GroupState::PreparingRebalance)
            }
            GroupState::Stable => matches!(self.state, GroupState::CompletingRebalance),
            GroupState::Dead => true,
        };
        assert!(
            allowed,
            "group {}: illegal transition {:?} -> {:?}",
            self.group_id, self.state, state
        );
        self.state = state;
        self.state_timestamp_ms = now_ms;
    }

    /// True when `member_id` is a member.
    pub fn has(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }

    /// True when `member_id` leads the group.
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    /// Kafka's `isStaticMemberFenced`: the instance id belongs to another member id.
    pub fn is_static_member_fenced(&self, instance_id: Option<&str>, member_id: &str) -> bool {
        match instance_id.and_then(|i| self.static_members.get(i)) {
            Some(current) => current != member_id,
            None => false,
        }
    }

    /// Members still expected to rejoin in the rebalance in progress.
    pub fn has_all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    /// Whether a joining member's protocols fit the group: same protocol type, and at least
    /// one protocol that every member (the joining one included) supports.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        protocols.iter().any(|(name, _)| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports, each member votes
    /// for the first one in its own preference order; most votes wins (ties: the one listed
    /// first by the group's earliest member).
    pub fn select_protocol(&self) -> Option<String> {
        let first = self.members.values().next()?;
        let candidates: Vec<&str> = first
            .protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|name| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
            .collect();
        let mut votes: Vec<(usize, &str)> = candidates.iter().map(|c| (0, *c)).collect();
        for member in self.members.values() {
            let choice = member
                .protocols
                .iter()
                .map(|(n, _)| n.as_str())
                .find(|n| candidates.contains(n));
            if let Some(choice) = choice {
                if let Some(slot) = votes.iter_mut().find(|(_, c)| *c == choice) {
                    slot.0 += 1;
                }
            }
        }
        // max_by_key keeps the last maximum: iterate reversed so the earliest wins ties.
        votes
            .into_iter()
            .rev()
            .max_by_key(|(count, _)| *count)
            .map(|(_, name)| name.to_string())
    }

    /// The largest rebalance timeout of the members: how long a rebalance may wait.
    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// The topics the members subscribe to, when they all use the consumer protocol and their
    /// metadata reads; `None` when unknown.
    pub fn subscribed_topics(&self) -> Option<Vec<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = Vec::new();
        for member in self.members.values() {
            topics.extend(subscribed_topics(member.metadata(protocol)?)?);
        }
        topics.sort();
        topics.dedup();
        Some(topics)
    }

    /// Number of committed offsets.
    pub fn offset_count(&self) -> usize {
        self.offsets.values().map(|p| p.len()).sum()
    }

    /// Checks the group's invariants (tests and debug builds call it after every operation).
    pub fn check_invariants(&self) {
        let members = self.members.len();
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                assert_eq!(
                    members, 0,
                    "{}: no members when {:?}",
                    self.group_id, self.state
                )
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                assert!(
                    members > 0,
                    "{}: members when {:?}",
                    self.group_id,
                    self.state
                );
                assert!(
                    self.leader_id.as_ref().is_some_and(|l| self.has(l)),
                    "{}: the leader is a member",
                    self.group_id
                );
                assert!(
                    self.protocol_name.is_some(),
                    "{}: a protocol",
                    self.group_id
                );
                assert!(
                    self.members.values().all(|m| m.awaiting_join.is_none()),
                    "{}: no join waits outside a rebalance",
                    self.group_id
                );
            }
            GroupState::PreparingRebalance => {
                assert!(
                    self.join_deadline_ms.is_some(),
                    "{}: a rebalance has a deadline",
                    self.group_id
                );
            }
        }
        assert!(
            self.pending_sync.iter().all(|m| self.has(m)),
            "{}: members pending sync are members",
            self.group_id
        );
        assert_eq!(
            self.sync_deadline_ms.is_some(),
            !self.pending_sync.is_empty(),
            "{}: a sync deadline exactly while members are pending sync",
            self.group_id
        );
        if !self.pending_sync.is_empty() {
            assert!(
                matches!(
                    self.state,
                    GroupState::CompletingRebalance | GroupState::Stable
                ),
                "{}: pending sync only after a join completed",
                self.group_id
            );
        }
        if self.state != GroupState::CompletingRebalance {
            assert!(
                self.members.values().all(|m| m.awaiting_sync.is_none()),
                "{}: sync waits only while completing a rebalance",
                self.group_id
            );
        }
        for (instance, member_id) in &self.static_members {
            let member = self.members.get(member_id);
            assert!(
                member.is_some_and(|m| m.group_instance_id.as_deref() == Some(instance)),
                "{}: static member {instance} maps to a member with that instance id",
                self.group_id
            );
        }
    }
}
