//! Partition leadership and ISR changes, as KRaft's controller decides them
//! (`ReplicationControlManager.alterPartition`, `handleBrokerFenced`, `handleBrokerUnfenced`,
//! `handleBrokerInControlledShutdown`, with `PartitionChangeBuilder`'s election): pure functions
//! of the metadata state that return the PartitionChange records to commit.
//!
//! The rules kept from Kafka (metadata version 4.x, ELR off):
//! - a leader is elected from the ISR only, in replica order, among unfenced brokers; when no
//!   ISR member can lead, the partition has no leader (-1) unless
//!   `unclean.leader.election.enable` holds for the topic (its override, else the broker
//!   default): then the first live replica leads, and the ISR is that replica alone;
//! - a broker that goes away leaves the ISR of every partition, except where it is the last
//!   member (the ISR never becomes empty: the last member is the one that can lead again with
//!   everything committed);
//! - the leader epoch moves only when the leader changes; an ISR change alone keeps it (since
//!   metadata version 3.6), and every change is a new partition epoch (applied in
//!   `MetadataState`);
//! - a broker coming back is not put back in any ISR by the controller: the leader does it
//!   with AlterPartition once the replica has caught up.

use sluice_protocol::error::ErrorCode;
use sluice_shard::{
    AlterPartitionItem, AlterPartitionOutcome, ElectionOutcome, ElectionTopic, MetadataError,
    PartitionImage, TopicImage, ELECTION_TYPE_UNCLEAN,
};

use crate::metadata_state::MetadataState;
use crate::reassignment::{assignment_change, ReassignmentReplicas};
use crate::records::MetadataRecord;

/// Kafka's topic config (and broker default) allowing a replica outside the ISR to lead.
const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";

/// Whether `topic` may elect a leader outside its ISR: its override, else the broker default.
pub fn unclean_election_enabled(topic: &TopicImage, broker_default: bool) -> bool {
    topic
        .configs
        .get(UNCLEAN_LEADER_ELECTION_ENABLE)
        .map_or(broker_default, |value| {
            value.trim().eq_ignore_ascii_case("true")
        })
}

/// Whether `broker_id` is registered and unfenced.
pub(crate) fn unfenced(state: &MetadataState, broker_id: i32) -> bool {
    state.brokers.get(&broker_id).is_some_and(|b| !b.fenced)
}

/// The leader and ISR of `p` once its ISR is `isr` (PartitionChangeBuilder's election): the
/// current leader stays if it is still in the ISR and usable; else the first replica, in
/// replica order, that is in the ISR and usable; else, when unclean election is allowed, the
/// first usable replica, alone in the ISR; else no leader.
pub(crate) fn elect(
    p: &PartitionImage,
    isr: Vec<i32>,
    usable: &impl Fn(i32) -> bool,
    unclean: bool,
) -> (i32, Vec<i32>) {
    if p.leader >= 0 && isr.contains(&p.leader) && usable(p.leader) {
        return (p.leader, isr);
    }
    if let Some(leader) = p
        .replicas
        .iter()
        .copied()
        .find(|id| isr.contains(id) && usable(*id))
    {
        return (leader, isr);
    }
    if unclean {
        if let Some(leader) = p.replicas.iter().copied().find(|id| usable(*id)) {
            return (leader, vec![leader]);
        }
    }
    (-1, isr)
}

/// The record taking `p` to `leader` and `isr`, if that changes anything. The leader epoch
/// moves with the leader only.
fn change(
    topic: &TopicImage,
    p: &PartitionImage,
    leader: i32,
    isr: Vec<i32>,
) -> Option<MetadataRecord> {
    if leader == p.leader && isr == p.isr {
        return None;
    }
    Some(MetadataRecord::PartitionChange {
        topic_id: topic.topic_id,
        partition: p.partition,
        leader,
        leader_epoch: if leader == p.leader {
            p.leader_epoch
        } else {
            p.leader_epoch + 1
        },
        isr,
    })
}

/// Broker `broker_id` is going away — fenced (its session expired, or it asked in a controlled
/// shutdown) or registered anew (its previous process is gone, and may have lost what it had
/// not flushed): it leaves the ISR of every partition where it is not the last member, and the
/// partitions it led get a new leader from their ISR (Kafka's `handleBrokerFenced` /
/// `handleBrokerInControlledShutdown`). The records go in the same entry as the fencing.
pub fn broker_removed(
    state: &MetadataState,
    broker_id: i32,
    unclean_default: bool,
) -> Vec<MetadataRecord> {
    let usable = |id: i32| id != broker_id && unfenced(state, id);
    let mut records = Vec::new();
    for topic in state.image.topics.values() {
        let unclean = unclean_election_enabled(topic, unclean_default);
        for p in &topic.partitions {
            if p.leader != broker_id && !p.isr.contains(&broker_id) {
                continue;
            }
            let mut isr: Vec<i32> = p
                .isr
                .iter()
                .copied()
                .filter(|id| *id != broker_id)
                .collect();
            if isr.is_empty() {
                // The last member stays: it holds everything committed and can lead again.
                isr = p.isr.clone();
            }
            let (leader, isr) = elect(p, isr, &usable, unclean);
            records.extend(change(topic, p, leader, isr));
        }
    }
    records
}

/// Broker `broker_id` is unfenced: the partitions without a leader get one if the broker (or,
/// with unclean election, any live replica) can lead them (Kafka's `handleBrokerUnfenced`).
/// Its own ISR memberships are not touched: the leaders add it back once it has caught up.
pub fn broker_unfenced(
    state: &MetadataState,
    broker_id: i32,
    unclean_default: bool,
) -> Vec<MetadataRecord> {
    let usable = |id: i32| id == broker_id || unfenced(state, id);
    let mut records = Vec::new();
    for topic in state.image.topics.values() {
        let unclean = unclean_election_enabled(topic, unclean_default);
        for p in topic.partitions.iter().filter(|p| p.leader == -1) {
            let (leader, isr) = elect(p, p.isr.clone(), &usable, unclean);
            if leader != -1 {
                records.extend(change(topic, p, leader, isr));
            }
        }
    }
    records
}

/// Kafka's `Replicas.validateIsr`: the ISR holds replicas only, each once.
fn valid_isr(replicas: &[i32], isr: &[i32]) -> bool {
    isr.iter()
        .enumerate()
        .all(|(i, id)| *id >= 0 && replicas.contains(id) && !isr[..i].contains(id))
}

/// AlterPartition (Kafka's `ReplicationControlManager.alterPartition` and
/// `validateAlterPartitionData`, in Kafka's order of checks): broker `broker_id`, registered
/// with `broker_epoch`, asks to change a partition's ISR. The outcome carries Kafka's error
/// code for a refused change; the record, if any, is the one PartitionChange to commit (none
/// when refused or when the ISR asked is the current one). A sender whose registration is not
/// `broker_epoch` is refused as a whole (STALE_BROKER_EPOCH), as Kafka's `checkBrokerEpoch`.
pub fn alter_partition(
    state: &MetadataState,
    broker_id: i32,
    broker_epoch: i64,
    item: &AlterPartitionItem,
) -> Result<(AlterPartitionOutcome, Option<MetadataRecord>), MetadataError> {
    if state
        .brokers
        .get(&broker_id)
        .is_none_or(|b| b.broker_epoch != broker_epoch)
    {
        return Err(MetadataError::StaleBrokerEpoch);
    }
    let unknown = |error| AlterPartitionOutcome {
        error,
        leader_id: -1,
        leader_epoch: -1,
        partition_epoch: -1,
        isr: Vec::new(),
    };
    // The request names topics by id (AlterPartition v2+): an unknown one is UNKNOWN_TOPIC_ID.
    let Some(topic) = state.image.topic_by_id(&item.topic_id) else {
        return Ok((unknown(ErrorCode::UNKNOWN_TOPIC_ID), None));
    };
    let Some(p) = topic.partition(item.partition) else {
        return Ok((unknown(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), None));
    };
    // A refusal tells the partition as it is, so that the leader sees why at once.
    let current = |error| AlterPartitionOutcome {
        error,
        leader_id: p.leader,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        isr: p.isr.clone(),
    };
    let refused = |error| Ok((current(error), None));
    // Epochs ahead of this controller's: it is behind, the leader should find the active one.
    if item.leader_epoch > p.leader_epoch || item.partition_epoch > p.partition_epoch {
        return refused(ErrorCode::NOT_CONTROLLER);
    }
    if item.leader_epoch < p.leader_epoch {
        return refused(ErrorCode::FENCED_LEADER_EPOCH);
    }
    // Kafka refuses a sender that is not the leader as INVALID_REQUEST; the item's own leader id
    // must be the sender too.
    if broker_id != p.leader || item.leader_id != broker_id {
        return refused(ErrorCode::INVALID_REQUEST);
    }
    if item.partition_epoch < p.partition_epoch {
        return refused(ErrorCode::INVALID_UPDATE_VERSION);
    }
    let isr: Vec<i32> = item.new_isr.iter().map(|(id, _)| *id).collect();
    // The ISR must be replicas, each once, and hold the leader (so it is never empty).
    if !valid_isr(&p.replicas, &isr) || !isr.contains(&p.leader) {
        return refused(ErrorCode::INVALID_REQUEST);
    }
    // Every member must be registered, unfenced, and (unless -1) in the epoch the leader saw.
    // A broker in controlled shutdown is fenced in the same entry that moves its leadership,
    // so "fenced" covers Kafka's "shutting down" too.
    let ineligible = item
        .new_isr
        .iter()
        .any(|(id, epoch)| match state.brokers.get(id) {
            None => true,
            Some(b) => b.fenced || (*epoch != -1 && *epoch != b.broker_epoch),
        });
    if ineligible {
        return refused(ErrorCode::INELIGIBLE_REPLICA);
    }
    let reassignment = ReassignmentReplicas::of(p);
    if reassignment.in_progress() {
        // The ISR change may complete the reassignment (PartitionChangeBuilder's
        // `completeReassignmentIfNeeded`): then the replicas, the ISR and maybe the leader
        // change in the same record. Completion never needs an unclean election: it waits for
        // an ISR that keeps a member.
        let Some(record) = assignment_change(state, topic, p, reassignment, isr, false) else {
            return Ok((current(ErrorCode::NONE), None));
        };
        let MetadataRecord::PartitionAssignmentChange {
            leader,
            leader_epoch,
            isr,
            ..
        } = &record
        else {
            unreachable!("assignment_change makes PartitionAssignmentChange records");
        };
        let outcome = AlterPartitionOutcome {
            error: ErrorCode::NONE,
            leader_id: *leader,
            leader_epoch: *leader_epoch,
            partition_epoch: p.partition_epoch + 1,
            isr: isr.clone(),
        };
        return Ok((outcome, Some(record)));
    }
    let Some(record) = change(topic, p, p.leader, isr.clone()) else {
        return Ok((current(ErrorCode::NONE), None));
    };
    let outcome = AlterPartitionOutcome {
        error: ErrorCode::NONE,
        leader_id: p.leader,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch + 1,
        isr,
    };
    Ok((outcome, Some(record)))
}

/// Most preferred-leader elections one automatic rebalance commits (Kafka's
/// `QuorumController.MAX_ELECTIONS_PER_IMBALANCE`); the rest wait for the next round, which
/// then comes at once.
pub const ELECTIONS_PER_IMBALANCE_MAX: usize = 1_000;

/// Kafka's message for ELECTION_NOT_NEEDED (`ElectionNotNeededException`).
const ELECTION_NOT_NEEDED_MESSAGE: &str = "Leader election not needed for topic partition.";
/// Kafka's message for PREFERRED_LEADER_NOT_AVAILABLE.
const PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE: &str = "The preferred leader was not available.";
/// Kafka's message for ELIGIBLE_LEADERS_NOT_AVAILABLE.
const ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE: &str =
    "Eligible topic partition leaders are not available.";

/// PartitionChangeBuilder's preferred election: the first replica if it is in the ISR and
/// usable; else the current leader if it still can lead; else the first usable ISR member in
/// replica order; else no leader.
fn elect_preferred(p: &PartitionImage, usable: &impl Fn(i32) -> bool) -> i32 {
    let can_lead = |id: i32| id >= 0 && p.isr.contains(&id) && usable(id);
    match p.replicas.first() {
        Some(preferred) if can_lead(*preferred) => *preferred,
        _ if can_lead(p.leader) => p.leader,
        _ => p
            .replicas
            .iter()
            .copied()
            .find(|id| can_lead(*id))
            .unwrap_or(-1),
    }
}

/// Kafka's `ReplicationControlManager.electLeader` for one partition: the record to commit,
/// or the partition's error and Kafka's message for it.
fn elect_leader(
    state: &MetadataState,
    topic_name: &str,
    partition: i32,
    unclean: bool,
) -> Result<MetadataRecord, (ErrorCode, String)> {
    let Some(topic) = state.image.topic(topic_name) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("No such topic as {topic_name}"),
        ));
    };
    let Some(p) = topic.partition(partition) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("No such partition as {topic_name}-{partition}"),
        ));
    };
    let not_needed = if unclean {
        p.leader >= 0
    } else {
        p.replicas.first() == Some(&p.leader)
    };
    if not_needed {
        return Err((
            ErrorCode::ELECTION_NOT_NEEDED,
            ELECTION_NOT_NEEDED_MESSAGE.to_string(),
        ));
    }
    let usable = |id: i32| unfenced(state, id);
    let (leader, isr) = if unclean {
        elect(p, p.isr.clone(), &usable, true)
    } else {
        (elect_preferred(p, &usable), p.isr.clone())
    };
    match change(topic, p, leader, isr) {
        Some(record) if leader >= 0 => Ok(record),
        _ if unclean => Err((
            ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
            ELIGIBLE_LEADERS_NOT_AVAILABLE_MESSAGE.to_string(),
        )),
        _ => Err((
            ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
            PREFERRED_LEADER_NOT_AVAILABLE_MESSAGE.to_string(),
        )),
    }
}

/// ElectLeaders (Kafka's `ReplicationControlManager.electLeaders`): one outcome per partition
/// asked, in request order, and one PartitionChange per elected partition (a partition named
/// twice is elected once). `topics` `None` means every partition of every topic; then, as
/// Kafka, partitions whose election was not needed are left out of the answer.
pub fn elect_leaders(
    state: &MetadataState,
    election_type: u8,
    topics: Option<&[ElectionTopic]>,
) -> (Vec<ElectionOutcome>, Vec<MetadataRecord>) {
    let unclean = election_type == ELECTION_TYPE_UNCLEAN;
    let mut outcomes = Vec::new();
    let mut records: Vec<MetadataRecord> = Vec::new();
    let mut decide = |topic: &str, partition: i32, all: bool| {
        let (error, message) = match elect_leader(state, topic, partition, unclean) {
            Ok(record) => {
                if !records.contains(&record) {
                    records.push(record);
                }
                (ErrorCode::NONE, None)
            }
            Err((ErrorCode::ELECTION_NOT_NEEDED, _)) if all => return,
            Err((error, message)) => (error, Some(message)),
        };
        outcomes.push(ElectionOutcome {
            topic: topic.to_string(),
            partition,
            error,
            message,
        });
    };
    match topics {
        Some(topics) => {
            for topic in topics {
                for partition in &topic.partitions {
                    decide(&topic.topic, *partition, false);
                }
            }
        }
        None => {
            for topic in state.image.topics.values() {
                for p in &topic.partitions {
                    decide(&topic.name, p.partition, true);
                }
            }
        }
    }
    (outcomes, records)
}

/// The automatic leader rebalance (`auto.leader.rebalance.enable`; Kafka's
/// `ReplicationControlManager.maybeBalancePartitionLeaders`): a preferred election for each
/// partition not led by its first replica, at most [`ELECTIONS_PER_IMBALANCE_MAX`] of them.
/// The second value tells whether some were left for another round. As KRaft's controller,
/// any imbalance counts (`leader.imbalance.per.broker.percentage` is not consulted).
pub fn balance_leaders(state: &MetadataState) -> (Vec<MetadataRecord>, bool) {
    let usable = |id: i32| unfenced(state, id);
    let mut records = Vec::new();
    for topic in state.image.topics.values() {
        for p in &topic.partitions {
            if p.replicas.first() == Some(&p.leader) {
                continue;
            }
            if records.len() >= ELECTIONS_PER_IMBALANCE_MAX {
                return (records, true);
            }
            let leader = elect_preferred(p, &usable);
            if leader >= 0 {
                records.extend(change(topic, p, leader, p.isr.clone()));
            }
        }
    }
    (records, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::codec::Uuid;

    const TOPIC: u128 = 42;

    fn register(id: i32, live: bool) -> Vec<MetadataRecord> {
        let mut records = vec![MetadataRecord::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u128(id as u128),
            broker_epoch: i64::from(id) * 10,
            host: "h".into(),
            port: 1,
            rack: None,
        }];
        if live {
            records.push(MetadataRecord::UnfenceBroker {
                broker_id: id,
                broker_epoch: i64::from(id) * 10,
            });
        }
        records
    }

    /// Brokers 1, 2, 3 live (epochs 10, 20, 30), 4 registered and fenced; topic "t" with the
    /// given (replicas, isr, leader) per partition, at leader epoch 5; `configs` as overrides.
    fn cluster(
        partitions: &[(Vec<i32>, Vec<i32>, i32)],
        configs: &[(&str, &str)],
    ) -> MetadataState {
        let topic_id = Uuid::from_u128(TOPIC);
        let mut records = Vec::new();
        for id in 1..=3 {
            records.extend(register(id, true));
        }
        records.extend(register(4, false));
        records.push(MetadataRecord::Topic {
            name: "t".into(),
            topic_id,
        });
        for (i, (replicas, isr, leader)) in partitions.iter().enumerate() {
            records.push(MetadataRecord::Partition {
                topic_id,
                partition: i as i32,
                replicas: replicas.clone(),
                isr: isr.clone(),
                leader: *leader,
                leader_epoch: 5,
            });
        }
        for (name, value) in configs {
            records.push(MetadataRecord::Config {
                topic_id,
                name: (*name).into(),
                value: (*value).into(),
            });
        }
        let mut state = MetadataState::new(1, 1);
        state.apply_entry(1, records);
        state
    }

    fn pc(partition: i32, leader: i32, leader_epoch: i32, isr: Vec<i32>) -> MetadataRecord {
        MetadataRecord::PartitionChange {
            topic_id: Uuid::from_u128(TOPIC),
            partition,
            leader,
            leader_epoch,
            isr,
        }
    }

    fn fence(state: &mut MetadataState, index: u64, broker_id: i32, unclean: bool) {
        let epoch = state.brokers[&broker_id].broker_epoch;
        let mut records = vec![MetadataRecord::FenceBroker {
            broker_id,
            broker_epoch: epoch,
        }];
        records.extend(broker_removed(state, broker_id, unclean));
        state.apply_entry(index, records);
    }

    fn partition(state: &MetadataState, p: i32) -> PartitionImage {
        state
            .image
            .topic("t")
            .unwrap()
            .partition(p)
            .unwrap()
            .clone()
    }

    #[test]
    fn a_fenced_broker_leaves_every_isr_and_its_leaderships_move_in_replica_order() {
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 1),
                (vec![2, 3, 1], vec![2, 3, 1], 2),
                (vec![1, 3, 2], vec![2, 1, 3], 1),
                (vec![2, 3], vec![2, 3], 2),
            ],
            &[],
        );
        assert_eq!(
            broker_removed(&state, 1, false),
            vec![
                // Led by 1: the first replica in the ISR that is live leads, epoch + 1.
                pc(0, 2, 6, vec![2, 3]),
                // A follower leaves the ISR; leader and leader epoch stay.
                pc(1, 2, 5, vec![2, 3]),
                // Replica order, not ISR order: 3 before 2.
                pc(2, 3, 6, vec![2, 3]),
            ]
        );
    }

    #[test]
    fn the_last_isr_member_stays_and_a_partition_without_a_live_isr_member_has_no_leader() {
        let mut state = cluster(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], &[]);
        fence(&mut state, 2, 1, false);
        fence(&mut state, 3, 2, false);
        let p = partition(&state, 0);
        assert_eq!((p.leader, p.leader_epoch, p.isr.clone()), (3, 7, vec![3]));
        assert_eq!(p.partition_epoch, 2);
        // 3 goes too: it stays the ISR, alone, and the partition has no leader.
        assert_eq!(
            broker_removed(&state, 3, false),
            vec![pc(0, -1, 8, vec![3])]
        );
        fence(&mut state, 4, 3, false);
        // 1 comes back: not in the ISR, so it does not lead (it may lack committed records).
        assert!(broker_unfenced(&state, 1, false).is_empty());
        // 3 comes back: it leads again, its ISR unchanged.
        assert_eq!(
            broker_unfenced(&state, 3, false),
            vec![pc(0, 3, 9, vec![3])]
        );
    }

    #[test]
    fn unclean_election_picks_any_live_replica_as_the_topic_or_broker_default_allows() {
        // Partition 0's ISR is 4 (fenced) alone.
        let state = cluster(&[(vec![4, 2, 3], vec![4], -1)], &[]);
        assert!(broker_unfenced(&state, 2, false).is_empty());
        // The broker default allows it: the first live replica leads, alone in the ISR.
        assert_eq!(broker_unfenced(&state, 2, true), vec![pc(0, 2, 6, vec![2])]);
        // The topic override wins over the broker default, both ways.
        let state = cluster(
            &[(vec![4, 2, 3], vec![4], -1)],
            &[(UNCLEAN_LEADER_ELECTION_ENABLE, "true")],
        );
        assert_eq!(
            broker_unfenced(&state, 3, false),
            vec![pc(0, 2, 6, vec![2])]
        );
        let state = cluster(
            &[(vec![4, 2, 3], vec![4], -1)],
            &[(UNCLEAN_LEADER_ELECTION_ENABLE, "false")],
        );
        assert!(broker_unfenced(&state, 3, true).is_empty());
        // On fencing too: the leader 1 is the only ISR member left.
        let state = cluster(
            &[(vec![1, 2, 3], vec![1], 1)],
            &[(UNCLEAN_LEADER_ELECTION_ENABLE, "true")],
        );
        assert_eq!(broker_removed(&state, 1, false), vec![pc(0, 2, 6, vec![2])]);
    }

    #[test]
    fn a_broker_in_no_isr_and_leading_nothing_changes_nothing() {
        let state = cluster(&[(vec![1, 2], vec![1, 2], 1)], &[]);
        assert!(broker_removed(&state, 3, false).is_empty());
        assert!(broker_removed(&state, 99, false).is_empty());
        assert!(broker_unfenced(&state, 3, false).is_empty());
    }

    fn item(leader_epoch: i32, partition_epoch: i32, new_isr: &[(i32, i64)]) -> AlterPartitionItem {
        AlterPartitionItem {
            topic_id: Uuid::from_u128(TOPIC),
            partition: 0,
            leader_id: 1,
            leader_epoch,
            partition_epoch,
            new_isr: new_isr.to_vec(),
        }
    }

    fn error_of(state: &MetadataState, broker: (i32, i64), item: &AlterPartitionItem) -> ErrorCode {
        let (outcome, record) = alter_partition(state, broker.0, broker.1, item).unwrap();
        if outcome.error != ErrorCode::NONE {
            assert!(record.is_none(), "a refused change writes nothing");
        }
        outcome.error
    }

    #[test]
    fn alter_partition_commits_one_change_and_answers_the_new_state() {
        let mut state = cluster(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], &[]);
        // Shrink to 1, 3 (epochs as registered, or -1 to skip the check).
        let (outcome, record) =
            alter_partition(&state, 1, 10, &item(5, 0, &[(1, 10), (3, -1)])).unwrap();
        assert_eq!(
            outcome,
            AlterPartitionOutcome {
                error: ErrorCode::NONE,
                leader_id: 1,
                leader_epoch: 5,
                partition_epoch: 1,
                isr: vec![1, 3],
            }
        );
        assert_eq!(record, Some(pc(0, 1, 5, vec![1, 3])));
        state.apply_entry(2, record.into_iter().collect());
        let p = partition(&state, 0);
        assert_eq!((p.partition_epoch, p.isr.clone()), (1, vec![1, 3]));
        // Expand back, naming the new partition epoch.
        let (outcome, record) =
            alter_partition(&state, 1, 10, &item(5, 1, &[(1, 10), (3, 30), (2, 20)])).unwrap();
        assert_eq!(
            (outcome.partition_epoch, outcome.isr.clone()),
            (2, vec![1, 3, 2])
        );
        assert_eq!(record, Some(pc(0, 1, 5, vec![1, 3, 2])));
        // The ISR it already has: nothing to write, the current state answered.
        let (outcome, record) =
            alter_partition(&state, 1, 10, &item(5, 1, &[(1, 10), (3, 30)])).unwrap();
        assert_eq!(
            (outcome.error, outcome.partition_epoch),
            (ErrorCode::NONE, 1)
        );
        assert!(record.is_none());
    }

    #[test]
    fn alter_partition_refuses_as_kafka_does() {
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 1),
                (vec![1, 2, 4], vec![1, 2], 1),
            ],
            &[],
        );
        let ok = [(1, 10), (2, 20)];
        // A sender whose registration is not the one it names: the whole request.
        assert!(matches!(
            alter_partition(&state, 1, 11, &item(5, 0, &ok)),
            Err(MetadataError::StaleBrokerEpoch)
        ));
        assert!(matches!(
            alter_partition(&state, 9, 10, &item(5, 0, &ok)),
            Err(MetadataError::StaleBrokerEpoch)
        ));
        let leader = (1, 10);
        let mut unknown_topic = item(5, 0, &ok);
        unknown_topic.topic_id = Uuid::from_u128(7);
        assert_eq!(
            error_of(&state, leader, &unknown_topic),
            ErrorCode::UNKNOWN_TOPIC_ID
        );
        let mut unknown_partition = item(5, 0, &ok);
        unknown_partition.partition = 2;
        assert_eq!(
            error_of(&state, leader, &unknown_partition),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        unknown_partition.partition = -1;
        assert_eq!(
            error_of(&state, leader, &unknown_partition),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        // Epochs ahead of the controller's: it is not the controller to ask.
        assert_eq!(
            error_of(&state, leader, &item(6, 0, &ok)),
            ErrorCode::NOT_CONTROLLER
        );
        assert_eq!(
            error_of(&state, leader, &item(5, 1, &ok)),
            ErrorCode::NOT_CONTROLLER
        );
        // A stale leader epoch.
        assert_eq!(
            error_of(&state, leader, &item(4, 0, &ok)),
            ErrorCode::FENCED_LEADER_EPOCH
        );
        // A broker that is not the leader (Kafka: INVALID_REQUEST), or names another leader.
        let mut from_follower = item(5, 0, &ok);
        from_follower.leader_id = 2;
        assert_eq!(
            error_of(&state, (2, 20), &from_follower),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            error_of(&state, leader, &from_follower),
            ErrorCode::INVALID_REQUEST
        );
        // A stale partition epoch: the change was decided on an older version.
        let mut later = cluster(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], &[]);
        later.apply_entry(2, vec![pc(0, 1, 5, vec![1, 2]), pc(0, 1, 5, vec![1, 2, 3])]);
        assert_eq!(partition(&later, 0).partition_epoch, 2);
        assert_eq!(
            error_of(&later, leader, &item(5, 1, &ok)),
            ErrorCode::INVALID_UPDATE_VERSION
        );
        // ISRs that are not replicas, repeat one, miss the leader or are empty.
        for bad in [
            vec![(1, 10), (5, -1)],
            vec![(1, 10), (2, 20), (2, 20)],
            vec![(2, 20), (3, 30)],
            vec![],
            vec![(1, 10), (-1, -1)],
        ] {
            assert_eq!(
                error_of(&state, leader, &item(5, 0, &bad)),
                ErrorCode::INVALID_REQUEST,
                "{bad:?}"
            );
        }
        // Members that are fenced or named with another registration's epoch.
        let mut fenced_member = item(5, 0, &[(1, 10), (4, 40)]);
        fenced_member.partition = 1;
        assert_eq!(
            error_of(&state, leader, &fenced_member),
            ErrorCode::INELIGIBLE_REPLICA
        );
        assert_eq!(
            error_of(&state, leader, &item(5, 0, &[(1, 10), (2, 21)])),
            ErrorCode::INELIGIBLE_REPLICA
        );
        // A refusal tells the partition as it is.
        let (outcome, _) = alter_partition(&state, 1, 10, &item(4, 0, &ok)).unwrap();
        assert_eq!(
            (
                outcome.leader_id,
                outcome.leader_epoch,
                outcome.partition_epoch,
                outcome.isr
            ),
            (1, 5, 0, vec![1, 2, 3])
        );
    }

    fn asked(partitions: &[i32]) -> Vec<ElectionTopic> {
        vec![ElectionTopic {
            topic: "t".into(),
            partitions: partitions.to_vec(),
        }]
    }

    fn codes(outcomes: &[ElectionOutcome]) -> Vec<(i32, ErrorCode)> {
        outcomes.iter().map(|o| (o.partition, o.error)).collect()
    }

    #[test]
    fn a_preferred_election_moves_leadership_back_to_the_first_replica() {
        // 0: led by 2, preferred 1 live and in the ISR -> elected, leader epoch 6.
        // 1: already led by its preferred replica -> ELECTION_NOT_NEEDED.
        // 2: preferred 4 fenced -> PREFERRED_LEADER_NOT_AVAILABLE.
        // 3: preferred 3 live but out of the ISR -> PREFERRED_LEADER_NOT_AVAILABLE.
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 2),
                (vec![2, 3, 1], vec![2, 3, 1], 2),
                (vec![4, 1, 2], vec![4, 1, 2], 1),
                (vec![3, 1, 2], vec![1, 2], 1),
            ],
            &[],
        );
        let (outcomes, records) = elect_leaders(&state, 0, Some(&asked(&[0, 1, 2, 3])));
        assert_eq!(
            codes(&outcomes),
            vec![
                (0, ErrorCode::NONE),
                (1, ErrorCode::ELECTION_NOT_NEEDED),
                (2, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE),
                (3, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE),
            ]
        );
        assert_eq!(outcomes[0].message, None);
        assert_eq!(
            outcomes[1].message.as_deref(),
            Some("Leader election not needed for topic partition.")
        );
        assert_eq!(
            outcomes[2].message.as_deref(),
            Some("The preferred leader was not available.")
        );
        assert_eq!(records, vec![pc(0, 1, 6, vec![1, 2, 3])]);
    }

    #[test]
    fn a_preferred_election_of_a_leaderless_partition_takes_the_next_isr_member() {
        // Preferred 4 is fenced; the partition has no leader: PartitionChangeBuilder's preferred
        // election still elects the first usable ISR member, and reports success.
        let state = cluster(&[(vec![4, 2, 3], vec![4, 2], -1)], &[]);
        let (outcomes, records) = elect_leaders(&state, 0, Some(&asked(&[0])));
        assert_eq!(codes(&outcomes), vec![(0, ErrorCode::NONE)]);
        assert_eq!(records, vec![pc(0, 2, 6, vec![4, 2])]);
        // With no usable ISR member at all, nothing is elected.
        let state = cluster(&[(vec![4, 2, 3], vec![4], -1)], &[]);
        let (outcomes, records) = elect_leaders(&state, 0, Some(&asked(&[0])));
        assert_eq!(
            codes(&outcomes),
            vec![(0, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE)]
        );
        assert!(records.is_empty());
    }

    #[test]
    fn an_unclean_election_only_fills_a_partition_without_a_leader() {
        // 0: has a leader -> ELECTION_NOT_NEEDED (even though it is not the preferred one).
        // 1: no leader, ISR {4} fenced, replica 2 live -> 2 leads alone in the ISR.
        // 2: no leader, live ISR member 3 -> 3 leads, ISR kept.
        // 3: no leader, no live replica at all -> ELIGIBLE_LEADERS_NOT_AVAILABLE.
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 2),
                (vec![4, 2], vec![4], -1),
                (vec![4, 3], vec![4, 3], -1),
                (vec![4], vec![4], -1),
            ],
            &[],
        );
        let (outcomes, records) = elect_leaders(&state, 1, Some(&asked(&[0, 1, 2, 3])));
        assert_eq!(
            codes(&outcomes),
            vec![
                (0, ErrorCode::ELECTION_NOT_NEEDED),
                (1, ErrorCode::NONE),
                (2, ErrorCode::NONE),
                (3, ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE),
            ]
        );
        assert_eq!(
            outcomes[3].message.as_deref(),
            Some("Eligible topic partition leaders are not available.")
        );
        assert_eq!(records, vec![pc(1, 2, 6, vec![2]), pc(2, 3, 6, vec![4, 3])]);
    }

    #[test]
    fn unknown_topics_and_partitions_are_refused_with_kafkas_messages() {
        let state = cluster(&[(vec![1, 2, 3], vec![1, 2, 3], 2)], &[]);
        let topics = vec![
            ElectionTopic {
                topic: "nope".into(),
                partitions: vec![0],
            },
            ElectionTopic {
                topic: "t".into(),
                partitions: vec![7, -1, 0, 0],
            },
        ];
        let (outcomes, records) = elect_leaders(&state, 0, Some(&topics));
        let seen: Vec<(&str, i32, ErrorCode, Option<&str>)> = outcomes
            .iter()
            .map(|o| (o.topic.as_str(), o.partition, o.error, o.message.as_deref()))
            .collect();
        let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
        assert_eq!(
            seen,
            vec![
                ("nope", 0, unknown, Some("No such topic as nope")),
                ("t", 7, unknown, Some("No such partition as t-7")),
                ("t", -1, unknown, Some("No such partition as t--1")),
                ("t", 0, ErrorCode::NONE, None),
                ("t", 0, ErrorCode::NONE, None),
            ]
        );
        // Named twice, elected once.
        assert_eq!(records, vec![pc(0, 1, 6, vec![1, 2, 3])]);
    }

    #[test]
    fn electing_every_partition_answers_only_those_that_needed_it() {
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 2),
                (vec![2, 3, 1], vec![2, 3, 1], 2),
                (vec![4, 1, 2], vec![4, 1, 2], 1),
            ],
            &[],
        );
        let (outcomes, records) = elect_leaders(&state, 0, None);
        assert_eq!(
            codes(&outcomes),
            vec![
                (0, ErrorCode::NONE),
                (2, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE)
            ]
        );
        assert_eq!(records, vec![pc(0, 1, 6, vec![1, 2, 3])]);
    }

    #[test]
    fn the_automatic_rebalance_elects_every_available_preferred_leader() {
        let state = cluster(
            &[
                (vec![1, 2, 3], vec![1, 2, 3], 2),
                (vec![2, 3, 1], vec![2, 3, 1], 2),
                (vec![4, 1, 2], vec![4, 1, 2], 1),
                (vec![3, 1, 2], vec![3, 1, 2], 1),
                (vec![3, 1, 2], vec![1, 2], 1),
            ],
            &[],
        );
        let (records, more) = balance_leaders(&state);
        assert!(!more);
        assert_eq!(
            records,
            vec![pc(0, 1, 6, vec![1, 2, 3]), pc(3, 3, 6, vec![3, 1, 2])]
        );
        // Once applied, the cluster is balanced as far as it can be: nothing more to do.
        let mut state = state;
        state.apply_entry(2, records);
        assert_eq!(balance_leaders(&state), (Vec::new(), false));
    }

    #[test]
    fn the_automatic_rebalance_stops_at_its_budget_and_asks_for_another_round() {
        let partitions: Vec<(Vec<i32>, Vec<i32>, i32)> = (0..ELECTIONS_PER_IMBALANCE_MAX + 3)
            .map(|_| (vec![1, 2], vec![1, 2], 2))
            .collect();
        let mut state = cluster(&partitions, &[]);
        let (records, more) = balance_leaders(&state);
        assert!(more);
        assert_eq!(records.len(), ELECTIONS_PER_IMBALANCE_MAX);
        state.apply_entry(2, records);
        let (records, more) = balance_leaders(&state);
        assert!(!more);
        assert_eq!(records.len(), 3);
    }
}
