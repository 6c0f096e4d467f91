//! Deterministic tests of the coordinator: scenarios from Kafka's group protocol, a load
//! round trip through the records, and a seeded simulation of members that join, sync,
//! heartbeat, leave and crash while time moves, with the invariants checked at every step.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::*;

const PARTITIONS: i32 = 4;

/// A test waiter: which member asked, and a sequence number.
type Waiter = (String, u64);

impl Waiters for Waiter {
    type Join = Waiter;
    type Sync = Waiter;
}

struct Harness {
    coordinator: GroupCoordinator<Waiter>,
    now_ms: i64,
    next_waiter: u64,
    joins: BTreeMap<u64, JoinGroupResult>,
    syncs: BTreeMap<u64, SyncGroupResult>,
    written: Vec<OffsetsRecord>,
}

impl Harness {
    fn new(config: GroupConfig) -> Harness {
        let mut coordinator = GroupCoordinator::new(config, PARTITIONS, 7);
        for p in 0..PARTITIONS {
            coordinator.begin_load(p);
            coordinator.complete_load(p, 0);
        }
        Harness {
            coordinator,
            now_ms: 0,
            next_waiter: 0,
            joins: BTreeMap::new(),
            syncs: BTreeMap::new(),
            written: Vec::new(),
        }
    }

    fn no_delay() -> Harness {
        Harness::new(GroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..GroupConfig::default()
        })
    }

    fn drain(&mut self) {
        for effect in self.coordinator.take_effects() {
            match effect {
                Effect::JoinDone { waiter, result } => {
                    assert!(
                        self.joins.insert(waiter.1, result).is_none(),
                        "answered once"
                    );
                }
                Effect::SyncDone { waiter, result } => {
                    assert!(
                        self.syncs.insert(waiter.1, result).is_none(),
                        "answered once"
                    );
                }
                Effect::Write { partition, records } => {
                    for r in &records {
                        assert_eq!(self.coordinator.partition_for(r.group_id()), partition);
                    }
                    self.written.extend(records);
                }
            }
        }
        self.coordinator.check_invariants();
    }

    fn join(
        &mut self,
        group: &str,
        member_id: &str,
        instance: Option<&str>,
        protocols: &[(&str, &[u8])],
    ) -> u64 {
        self.next_waiter += 1;
        let id = self.next_waiter;
        let args = JoinGroupArgs {
            group_id: group.into(),
            member_id: member_id.into(),
            group_instance_id: instance.map(String::from),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|(n, m)| (n.to_string(), Bytes::copy_from_slice(m)))
                .collect(),
            require_known_member_id: instance.is_none(),
        };
        self.coordinator
            .join_group(args, (member_id.to_string(), id), self.now_ms);
        self.drain();
        id
    }

    /// Joins as a new dynamic member: MEMBER_ID_REQUIRED, then the real join.
    fn join_new(&mut self, group: &str) -> (String, u64) {
        let first = self.join(group, "", None, &[("range", b"m")]);
        let answer = self.joins.remove(&first).expect("answered at once");
        assert_eq!(answer.error, Some(GroupError::MemberIdRequired));
        let member_id = answer.member_id;
        let waiter = self.join(group, &member_id, None, &[("range", b"m")]);
        (member_id, waiter)
    }

    fn sync(
        &mut self,
        group: &str,
        member_id: &str,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> u64 {
        self.next_waiter += 1;
        let id = self.next_waiter;
        let args = SyncGroupArgs {
            group_id: group.into(),
            generation_id: generation,
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments,
        };
        self.coordinator
            .sync_group(args, (member_id.to_string(), id), self.now_ms);
        self.drain();
        id
    }

    fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
        self.coordinator.tick(self.now_ms);
        self.drain();
    }

    /// `seconds` seconds pass, `member` of generation `generation` of "g" heartbeating once a
    /// second, each heartbeat answered without error.
    fn heartbeat_for(&mut self, member: &str, generation: i32, seconds: usize) {
        for _ in 0..seconds {
            self.advance(1_000);
            let result = self
                .coordinator
                .heartbeat("g", member, None, generation, self.now_ms);
            assert_eq!(result, Ok(()), "{member} at {} ms", self.now_ms);
        }
    }

    fn state(&self, group: &str) -> GroupState {
        self.coordinator
            .group(group)
            .map(|g| g.state)
            .unwrap_or(GroupState::Dead)
    }
}

#[test]
fn partition_for_group_matches_kafkas_java_hash() {
    // Java: "test-group".hashCode() = -1193853541 (abs & mask then % 50 = 45... computed below).
    let java_hash: i32 = "test-group"
        .chars()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32));
    assert_eq!(
        partition_for_group("test-group", 50),
        (java_hash & 0x7fff_ffff) % 50
    );
    assert_eq!(partition_for_group("", 50), 0);
    assert!((0..50).contains(&partition_for_group("ünïcode-grøup", 50)));
}

#[test]
fn three_members_form_a_generation_and_the_leader_assigns() {
    let mut h = Harness::no_delay();
    let (a, wa) = h.join_new("g");
    // Alone, with no initial delay: generation 1 at once.
    let ja = h.joins.remove(&wa).expect("completed");
    assert_eq!(
        (ja.error, ja.generation_id, ja.leader_id.as_str()),
        (None, 1, a.as_str())
    );
    assert_eq!(ja.members.len(), 1);
    let s = h.sync("g", &a, 1, vec![(a.clone(), Bytes::from_static(b"all"))]);
    assert_eq!(h.syncs[&s].assignment, Bytes::from_static(b"all"));
    assert_eq!(h.state("g"), GroupState::Stable);

    // b joins: a learns of the rebalance by heartbeat and rejoins.
    let (b, wb) = h.join_new("g");
    assert!(!h.joins.contains_key(&wb), "b waits for a to rejoin");
    assert_eq!(h.state("g"), GroupState::PreparingRebalance);
    assert_eq!(
        h.coordinator.heartbeat("g", &a, None, 1, h.now_ms),
        Err(GroupError::RebalanceInProgress)
    );
    let (c, wc) = h.join_new("g");
    let wa2 = h.join("g", &a, None, &[("range", b"m")]);
    for w in [wa2, wb, wc] {
        let r = &h.joins[&w];
        assert_eq!((r.error, r.generation_id), (None, 2));
        assert_eq!(r.leader_id, a);
    }
    assert_eq!(
        h.joins[&wa2].members.len(),
        3,
        "the leader sees every member"
    );
    assert!(h.joins[&wb].members.is_empty() && h.joins[&wc].members.is_empty());

    // Followers sync first and wait; the leader's assignment answers everyone.
    let sb = h.sync("g", &b, 2, vec![]);
    let sc = h.sync("g", &c, 2, vec![]);
    assert!(!h.syncs.contains_key(&sb) && !h.syncs.contains_key(&sc));
    let sa = h.sync(
        "g",
        &a,
        2,
        vec![
            (a.clone(), Bytes::from_static(b"0,1")),
            (b.clone(), Bytes::from_static(b"2,3")),
            (c.clone(), Bytes::from_static(b"4,5")),
        ],
    );
    assert_eq!(h.syncs[&sa].assignment, Bytes::from_static(b"0,1"));
    assert_eq!(h.syncs[&sb].assignment, Bytes::from_static(b"2,3"));
    assert_eq!(h.syncs[&sc].assignment, Bytes::from_static(b"4,5"));
    assert_eq!(h.state("g"), GroupState::Stable);
    assert!(matches!(
        h.written.last(),
        Some(OffsetsRecord::GroupMetadata { value: Some(v), .. }) if v.generation_id == 2 && v.members.len() == 3
    ));
    // A stale generation is refused.
    assert_eq!(
        h.coordinator.heartbeat("g", &b, None, 1, h.now_ms),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(h.coordinator.heartbeat("g", &b, None, 2, h.now_ms), Ok(()));
}

#[test]
fn an_expired_session_removes_the_member_and_the_others_rebalance() {
    let mut h = Harness::no_delay();
    let (a, wa) = h.join_new("g");
    assert!(h.joins.contains_key(&wa));
    h.sync("g", &a, 1, vec![]);
    let (b, _) = h.join_new("g");
    let wa = h.join("g", &a, None, &[("range", b"m")]);
    assert_eq!(h.joins[&wa].generation_id, 2);
    h.sync("g", &b, 2, vec![]);
    h.sync("g", &a, 2, vec![]);
    assert_eq!(h.state("g"), GroupState::Stable);
    // b dies; a keeps heartbeating.
    for _ in 0..9 {
        h.advance(1_000);
        assert_eq!(h.coordinator.heartbeat("g", &a, None, 2, h.now_ms), Ok(()));
    }
    h.advance(1_500);
    assert_eq!(
        h.state("g"),
        GroupState::PreparingRebalance,
        "b's session ended"
    );
    assert!(!h.coordinator.group("g").expect("group").has(&b));
    let wa = h.join("g", &a, None, &[("range", b"m")]);
    let r = &h.joins[&wa];
    assert_eq!((r.generation_id, r.members.len()), (3, 1));
}

/// Two members in generation 2 of "g", a leading: (a, b), both joined, neither synced.
fn two_members_joined(h: &mut Harness) -> (String, String) {
    let (a, _) = h.join_new("g");
    h.sync("g", &a, 1, vec![]);
    let (b, _) = h.join_new("g");
    let wa = h.join("g", &a, None, &[("range", b"m")]);
    assert_eq!(h.joins[&wa].generation_id, 2);
    assert_eq!(h.state("g"), GroupState::CompletingRebalance);
    (a, b)
}

#[test]
fn a_member_waiting_for_the_leaders_assignment_outlives_its_session() {
    let mut h = Harness::no_delay();
    let (a, b) = two_members_joined(&mut h);
    // b syncs at once and waits; the leader takes longer than b's 10 s session to assign,
    // heartbeating meanwhile (as Java's consumer does while it computes).
    let sb = h.sync("g", &b, 2, vec![]);
    h.heartbeat_for(&a, 2, 14);
    assert!(
        h.coordinator.group("g").expect("group").has(&b),
        "b waits, as on Kafka"
    );
    let sa = h.sync("g", &a, 2, vec![(b.clone(), Bytes::from_static(b"0"))]);
    assert_eq!(h.syncs[&sa].error, None);
    assert_eq!(h.syncs[&sb].assignment, Bytes::from_static(b"0"));
    // b's session runs from the answer: its heartbeats keep it, 9 s later it is still in.
    h.advance(9_000);
    assert_eq!(h.coordinator.heartbeat("g", &b, None, 2, h.now_ms), Ok(()));
    assert_eq!(h.coordinator.heartbeat("g", &a, None, 2, h.now_ms), Ok(()));
    assert_eq!(h.state("g"), GroupState::Stable);
}

#[test]
fn members_that_send_no_sync_group_are_removed_after_the_rebalance_timeout() {
    let mut h = Harness::no_delay();
    let (a, b) = two_members_joined(&mut h);
    // b waits in SyncGroup; the leader a heartbeats but never syncs.
    let sb = h.sync("g", &b, 2, vec![]);
    h.heartbeat_for(&a, 2, 29);
    assert!(!h.syncs.contains_key(&sb));
    h.advance(1_000);
    // The 30 s rebalance timeout ended: a is removed, b is told to rejoin and forms the next
    // generation alone.
    assert!(!h.coordinator.group("g").expect("group").has(&a));
    assert_eq!(h.syncs[&sb].error, Some(GroupError::RebalanceInProgress));
    let wb = h.join("g", &b, None, &[("range", b"m")]);
    let r = &h.joins[&wb];
    assert_eq!(
        (r.error, r.generation_id, r.leader_id.as_str()),
        (None, 3, b.as_str())
    );

    // Once every member synced, no deadline remains: a Stable group sits past it untouched.
    let sb = h.sync("g", &b, 3, vec![(b.clone(), Bytes::from_static(b"all"))]);
    assert_eq!(h.syncs[&sb].error, None);
    assert_eq!(
        h.coordinator.group("g").expect("group").sync_deadline_ms,
        None
    );
    h.heartbeat_for(&b, 3, 40);
    assert_eq!(h.state("g"), GroupState::Stable);
}

#[test]
fn the_initial_delay_waits_for_more_members_and_extends() {
    let mut h = Harness::new(GroupConfig {
        group_initial_rebalance_delay_ms: 3_000,
        ..GroupConfig::default()
    });
    let (_, wa) = h.join_new("g");
    h.advance(2_000);
    let (_, wb) = h.join_new("g");
    h.advance(1_500); // the first delay ends; b joined meanwhile, so it extends by 3 s
    assert!(!h.joins.contains_key(&wa));
    h.advance(2_999);
    assert!(!h.joins.contains_key(&wa));
    h.advance(1);
    assert_eq!(h.joins[&wa].generation_id, 1);
    assert_eq!(h.joins[&wb].generation_id, 1);
}

#[test]
fn leaving_members_and_an_empty_group() {
    let mut h = Harness::no_delay();
    let (a, _) = h.join_new("g");
    h.sync("g", &a, 1, vec![]);
    let results = h
        .coordinator
        .leave_group("g", &[(a.clone(), None), ("nobody".into(), None)], h.now_ms)
        .expect("group known");
    h.drain();
    assert_eq!(results, vec![Ok(()), Err(GroupError::UnknownMemberId)]);
    assert_eq!(h.state("g"), GroupState::Empty);
    assert_eq!(h.coordinator.group("g").expect("kept").generation_id, 2);
    assert_eq!(
        h.coordinator.leave_group("missing", &[], h.now_ms),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn static_members_rejoin_without_a_rebalance_and_fence_the_old_id() {
    let mut h = Harness::no_delay();
    let w = h.join("g", "", Some("i1"), &[("range", b"m")]);
    let first = h.joins.remove(&w).expect("joined");
    let old = first.member_id.clone();
    h.sync("g", &old, 1, vec![(old.clone(), Bytes::from_static(b"x"))]);
    // The instance restarts: same instance id, no member id, and metadata that differs (a
    // restarted consumer owns no partitions yet): same protocol, so no rebalance.
    let w = h.join("g", "", Some("i1"), &[("range", b"m2")]);
    let again = h.joins.remove(&w).expect("answered at once");
    assert_eq!(again.error, None);
    assert_ne!(again.member_id, old);
    assert_eq!(again.generation_id, 1, "no rebalance");
    assert_eq!(h.state("g"), GroupState::Stable);
    assert_eq!(
        h.coordinator.heartbeat("g", &old, Some("i1"), 1, h.now_ms),
        Err(GroupError::FencedInstanceId)
    );
    assert_eq!(
        h.coordinator
            .heartbeat("g", &again.member_id, Some("i1"), 1, h.now_ms),
        Ok(())
    );
    let s = h.sync("g", &again.member_id, 1, vec![]);
    assert_eq!(
        h.syncs[&s].assignment,
        Bytes::from_static(b"x"),
        "kept its assignment"
    );
}

#[test]
fn invalid_joins_are_refused_with_kafkas_errors() {
    let mut h = Harness::no_delay();
    let w = h.join("g", "made-up", None, &[("range", b"m")]);
    assert_eq!(h.joins[&w].error, Some(GroupError::UnknownMemberId));
    let (a, _) = h.join_new("g");
    h.sync("g", &a, 1, vec![]);
    let w = h.join("g", "", None, &[("roundrobin", b"m")]);
    assert_eq!(
        h.joins[&w].error,
        Some(GroupError::InconsistentGroupProtocol)
    );
    let mut args_bad_session = JoinGroupArgs {
        group_id: "g".into(),
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "h".into(),
        session_timeout_ms: 10,
        rebalance_timeout_ms: 10,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::new())],
        require_known_member_id: true,
    };
    h.coordinator
        .join_group(args_bad_session.clone(), ("x".into(), 999), 0);
    h.drain();
    assert_eq!(h.joins[&999].error, Some(GroupError::InvalidSessionTimeout));
    args_bad_session.group_id = String::new();
    args_bad_session.session_timeout_ms = 10_000;
    h.coordinator
        .join_group(args_bad_session, ("x".into(), 1000), 0);
    h.drain();
    assert_eq!(h.joins[&1000].error, Some(GroupError::InvalidGroupId));
}

#[test]
fn group_max_size_is_enforced() {
    let mut h = Harness::new(GroupConfig {
        group_initial_rebalance_delay_ms: 0,
        group_max_size: 2,
        ..GroupConfig::default()
    });
    h.join_new("g");
    h.join_new("g");
    let w = h.join("g", "", None, &[("range", b"m")]);
    assert_eq!(h.joins[&w].error, Some(GroupError::GroupMaxSizeReached));
}

fn commit(
    h: &mut Harness,
    group: &str,
    generation: i32,
    member: &str,
    offset: i64,
) -> Result<Vec<Result<OffsetsRecord, GroupError>>, GroupError> {
    let args = OffsetCommitArgs {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        offsets: vec![CommitOffset {
            topic: "t".into(),
            partition: 0,
            offset,
            leader_epoch: 0,
            metadata: Some("meta".into()),
        }],
    };
    let prepared = h.coordinator.prepare_commit(&args, h.now_ms)?;
    let records: Vec<OffsetsRecord> = prepared.iter().filter_map(|r| r.clone().ok()).collect();
    h.coordinator.apply_commit(&records);
    h.written.extend(records);
    Ok(prepared)
}

fn committed(h: &Harness, group: &str) -> Option<i64> {
    let fetched = h
        .coordinator
        .fetch_offsets(group, Some(&[("t".to_string(), vec![0])]))
        .expect("served");
    fetched[0].1[0].1.as_ref().map(|v| v.offset)
}

#[test]
fn commits_follow_kafkas_generation_rules() {
    let mut h = Harness::no_delay();
    // Outside group management (generation -1): creates an offsets-only group.
    commit(&mut h, "solo", -1, "", 10).expect("allowed");
    assert_eq!(committed(&h, "solo"), Some(10));
    assert_eq!(committed(&h, "unknown"), None);
    assert_eq!(
        commit(&mut h, "unknown", 3, "m", 1).err(),
        Some(GroupError::IllegalGeneration)
    );
    let (a, _) = h.join_new("g");
    assert_eq!(
        commit(&mut h, "g", 1, &a, 5).err(),
        Some(GroupError::RebalanceInProgress),
        "while completing the rebalance"
    );
    h.sync("g", &a, 1, vec![]);
    assert_eq!(
        commit(&mut h, "g", 0, &a, 5).err(),
        Some(GroupError::IllegalGeneration)
    );
    assert_eq!(
        commit(&mut h, "g", 1, "x", 5).err(),
        Some(GroupError::UnknownMemberId)
    );
    assert_eq!(
        commit(&mut h, "g", -1, "", 5).err(),
        Some(GroupError::UnknownMemberId)
    );
    commit(&mut h, "g", 1, &a, 5).expect("member of the generation");
    assert_eq!(committed(&h, "g"), Some(5));
    // Metadata too long.
    let args = OffsetCommitArgs {
        group_id: "g".into(),
        generation_id: 1,
        member_id: a.clone(),
        group_instance_id: None,
        offsets: vec![CommitOffset {
            topic: "t".into(),
            partition: 1,
            offset: 1,
            leader_epoch: -1,
            metadata: Some("x".repeat(5000)),
        }],
    };
    let prepared = h
        .coordinator
        .prepare_commit(&args, h.now_ms)
        .expect("group ok");
    assert_eq!(prepared[0], Err(GroupError::OffsetMetadataTooLarge));
}

#[test]
fn state_survives_a_reload_from_the_written_records() {
    let mut h = Harness::no_delay();
    let (a, _) = h.join_new("g");
    h.sync("g", &a, 1, vec![(a.clone(), Bytes::from_static(b"asg"))]);
    commit(&mut h, "g", 1, &a, 42).expect("committed");
    commit(&mut h, "solo", -1, "", 7).expect("committed");
    commit(&mut h, "gone", -1, "", 1).expect("committed");
    h.coordinator
        .delete_group("gone", h.now_ms)
        .expect("empty group deleted");
    h.drain();

    // A new coordinator (a restart) reads the same records back, through their bytes.
    let mut reloaded: GroupCoordinator<Waiter> =
        GroupCoordinator::new(GroupConfig::default(), PARTITIONS, 9);
    for p in 0..PARTITIONS {
        reloaded.begin_load(p);
        assert_eq!(
            reloaded
                .check_coordinator("g")
                .err()
                .map(|e| e == GroupError::CoordinatorLoadInProgress
                    || e == GroupError::NotCoordinator),
            Some(true)
        );
    }
    for record in &h.written {
        let key = record.encode_key();
        let value = record.encode_value();
        let decoded = OffsetsRecord::decode(&key, value.as_deref()).expect("decodes");
        reloaded.load_record(reloaded.partition_for(decoded.group_id()), decoded);
    }
    for p in 0..PARTITIONS {
        reloaded.complete_load(p, 1_000);
    }
    reloaded.check_invariants();
    let g = reloaded.group("g").expect("restored");
    assert_eq!((g.state, g.generation_id), (GroupState::Stable, 1));
    assert_eq!(g.members[&a].assignment, Bytes::from_static(b"asg"));
    assert_eq!(
        reloaded.heartbeat("g", &a, None, 1, 1_000),
        Ok(()),
        "members carry on"
    );
    let offsets = reloaded.fetch_offsets("g", None).expect("served");
    assert_eq!(offsets[0].1[0].1.as_ref().map(|v| v.offset), Some(42));
    assert!(reloaded.group("solo").is_some());
    assert!(
        reloaded.group("gone").is_none(),
        "deleted groups stay deleted"
    );
}

#[test]
fn delete_groups_and_offsets() {
    let mut h = Harness::no_delay();
    let (a, _) = h.join_new("g");
    h.sync("g", &a, 1, vec![]);
    assert_eq!(
        h.coordinator.delete_group("g", 0),
        Err(GroupError::NonEmptyGroup)
    );
    assert_eq!(
        h.coordinator.delete_group("nope", 0),
        Err(GroupError::GroupIdNotFound)
    );
    commit(&mut h, "solo", -1, "", 3).expect("committed");
    let result = h
        .coordinator
        .delete_offsets("solo", &[("t".into(), vec![0, 1])])
        .expect("group known");
    assert_eq!(result[0].1, vec![(0, Ok(())), (1, Ok(()))]);
    h.drain();
    assert_eq!(committed(&h, "solo"), None);
    assert!(matches!(
        h.written.last(),
        Some(OffsetsRecord::OffsetCommit {
            value: None,
            partition: 0,
            ..
        })
    ));
}

#[test]
fn offsets_expire_after_the_retention() {
    let mut h = Harness::new(GroupConfig {
        group_initial_rebalance_delay_ms: 0,
        offsets_retention_ms: 60_000,
        ..GroupConfig::default()
    });
    commit(&mut h, "solo", -1, "", 3).expect("committed");
    h.now_ms = 59_999;
    h.coordinator.expire_offsets(h.now_ms);
    h.drain();
    assert_eq!(committed(&h, "solo"), Some(3));
    h.now_ms = 60_000;
    h.coordinator.expire_offsets(h.now_ms);
    h.drain();
    assert_eq!(committed(&h, "solo"), None);
    assert!(
        h.coordinator.group("solo").is_none(),
        "empty and without offsets: removed"
    );
}

/// A consumer in the simulation.
#[derive(Default)]
struct SimMember {
    member_id: String,
    alive: bool,
    generation: i32,
    join_wait: Option<u64>,
    sync_wait: Option<u64>,
    owned: Vec<i32>,
}

fn encode_assignment(parts: &[i32]) -> Bytes {
    Bytes::from(
        parts
            .iter()
            .flat_map(|p| p.to_be_bytes())
            .collect::<Vec<u8>>(),
    )
}

fn decode_assignment(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs one seeded simulation; any failure names the seed. Returns the number of steps that
/// ended with two or more members of the current generation owning partitions.
fn simulate(seed: u64) -> usize {
    let mut shared_steps = 0;
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut h = Harness::new(GroupConfig {
        group_initial_rebalance_delay_ms: (seed % 3) as i64 * 500,
        ..GroupConfig::default()
    });
    let topic_partitions = 12;
    let mut members: Vec<SimMember> = (0..5).map(|_| SimMember::default()).collect();
    let mut last_generation = 0;
    for _step in 0..400 {
        let i = (next() % members.len() as u64) as usize;
        match next() % 10 {
            0 if !members[i].alive => {
                // (Re)start: a fresh dynamic member.
                let (id, w) = h.join_new("g");
                members[i] = SimMember {
                    member_id: id,
                    alive: true,
                    join_wait: Some(w),
                    ..Default::default()
                };
            }
            1 if members[i].alive && next() % 4 == 0 => {
                // Crash: stops talking, its partitions count as released.
                members[i].alive = false;
                members[i].owned.clear();
            }
            2 if members[i].alive && next() % 6 == 0 => {
                let id = members[i].member_id.clone();
                let _ = h.coordinator.leave_group("g", &[(id, None)], h.now_ms);
                h.drain();
                members[i].alive = false;
                members[i].owned.clear();
            }
            3 => h.advance((next() % 4_000) as i64),
            _ if members[i].alive
                && members[i].join_wait.is_none()
                && members[i].sync_wait.is_none() =>
            {
                let m = &members[i];
                match h
                    .coordinator
                    .heartbeat("g", &m.member_id, None, m.generation, h.now_ms)
                {
                    Ok(()) => {}
                    Err(GroupError::RebalanceInProgress | GroupError::IllegalGeneration) => {
                        // Eager protocol: revoke everything, then rejoin.
                        let id = m.member_id.clone();
                        members[i].owned.clear();
                        let w = h.join("g", &id, None, &[("range", b"m")]);
                        members[i].join_wait = Some(w);
                    }
                    Err(_) => {
                        members[i].alive = false;
                        members[i].owned.clear();
                    }
                }
            }
            _ => {}
        }
        // Deliver answers.
        for m in members.iter_mut().filter(|m| m.alive) {
            if let Some(w) = m.join_wait {
                if let Some(r) = h.joins.remove(&w) {
                    m.join_wait = None;
                    if r.error.is_some() {
                        m.alive = false;
                        continue;
                    }
                    assert!(
                        r.generation_id >= last_generation,
                        "seed {seed}: generations never go back"
                    );
                    last_generation = last_generation.max(r.generation_id);
                    m.generation = r.generation_id;
                    let assignments = if r.members.is_empty() {
                        vec![]
                    } else {
                        let n = r.members.len();
                        r.members
                            .iter()
                            .enumerate()
                            .map(|(k, jm)| {
                                let parts: Vec<i32> = (0..topic_partitions)
                                    .filter(|p| (*p as usize) % n == k)
                                    .collect();
                                (jm.member_id.clone(), encode_assignment(&parts))
                            })
                            .collect()
                    };
                    let id = m.member_id.clone();
                    let gen = m.generation;
                    m.sync_wait = Some(h.sync("g", &id, gen, assignments));
                }
            }
        }
        for m in members.iter_mut().filter(|m| m.alive) {
            if let Some(w) = m.sync_wait {
                if let Some(r) = h.syncs.remove(&w) {
                    m.sync_wait = None;
                    match r.error {
                        None => m.owned = decode_assignment(&r.assignment),
                        Some(GroupError::RebalanceInProgress) => {
                            let id = m.member_id.clone();
                            m.join_wait = Some(h.join("g", &id, None, &[("range", b"m")]));
                        }
                        Some(_) => m.alive = false,
                    }
                }
            }
        }
        // No partition is owned by two members of the group's current generation. (A member
        // whose session the coordinator ended may still believe it owns partitions until its
        // next heartbeat; its commits are refused from then on, which is what fences it.)
        let mut seen = BTreeSet::new();
        let (current, generation) = match h.coordinator.group("g") {
            Some(g) => (
                g.members.keys().cloned().collect::<BTreeSet<_>>(),
                g.generation_id,
            ),
            None => (BTreeSet::new(), -1),
        };
        let in_generation = |m: &&SimMember| {
            m.alive && m.generation == generation && current.contains(&m.member_id)
        };
        let mut owners = 0;
        for m in members.iter().filter(in_generation) {
            owners += usize::from(!m.owned.is_empty());
            for p in &m.owned {
                assert!(seen.insert(*p), "seed {seed}: partition {p} owned twice");
            }
        }
        shared_steps += usize::from(owners >= 2);
    }
    shared_steps
}

#[test]
fn seeded_simulation_keeps_ownership_exclusive() {
    let seeds: u64 = std::env::var("SLUICE_GROUP_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let mut shared = 0;
    for seed in 1..=seeds {
        shared += usize::from(simulate(seed) > 0);
    }
    // The runs must reach the interesting states, or they check nothing.
    assert!(
        shared * 2 > seeds as usize,
        "only {shared} of {seeds} runs shared partitions"
    );
}

/// An idle coordinator needs no ticks: groups that only hold offsets (kept for days by
/// offsets.retention.minutes) and groups whose members left have nothing timed. A member,
/// a pending member id or a rebalance makes it need them again, until the member leaves.
#[test]
fn only_groups_with_timers_need_ticks() {
    let mut h = Harness::no_delay();
    assert!(!h.coordinator.needs_ticks(), "no groups");
    for i in 0..1_000 {
        commit(&mut h, &format!("offsets-only-{i}"), -1, "", i).expect("simple commit");
    }
    assert!(!h.coordinator.needs_ticks(), "1,000 offsets-only groups");
    let first = h.join("g", "", None, &[("range", b"m")]);
    assert_eq!(h.joins[&first].error, Some(GroupError::MemberIdRequired));
    assert!(h.coordinator.needs_ticks(), "a pending member id expires");
    let member_id = h.joins[&first].member_id.clone();
    h.join("g", &member_id, None, &[("range", b"m")]);
    h.sync("g", &member_id, 1, vec![]);
    assert_eq!(h.state("g"), GroupState::Stable);
    assert!(h.coordinator.needs_ticks(), "a member's session runs out");
    h.coordinator
        .leave_group("g", &[(member_id, None)], h.now_ms)
        .expect("group known");
    h.drain();
    assert_eq!(h.state("g"), GroupState::Empty);
    assert!(!h.coordinator.needs_ticks(), "the member left");
    // Ticks over the idle groups change nothing.
    h.advance(60_000);
    assert_eq!(h.coordinator.list_groups().len(), 1_001);
}
