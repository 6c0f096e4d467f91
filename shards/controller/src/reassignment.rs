//! Partition reassignment (KIP-455) as KRaft's controller decides it
//! (`ReplicationControlManager.alterPartitionReassignments` / `listPartitionReassignments`,
//! `PartitionReassignmentReplicas`, `PartitionReassignmentRevert`, and the reassignment steps
//! of `PartitionChangeBuilder`): pure functions of the metadata state that return the records
//! to commit.
//!
//! A reassignment of a partition from replicas `R` to target `T`:
//! 1. starts with one record: replicas = `T` then `R − T` (the union, target first),
//!    adding = `T − R`, removing = `R − T`, ISR unchanged. The added brokers create the log and
//!    fetch from the leader;
//! 2. completes when every adding replica is in the ISR (the leader's AlterPartition that
//!    expands the ISR, or at once when nothing is added): replicas = `T`, the removing replicas
//!    leave the ISR, adding and removing are cleared; a leader that is removed hands over to the
//!    first target replica in the ISR, and the leader epoch moves whenever a replica is removed
//!    (so that a removed replica's fetches are fenced), as Kafka's
//!    `triggerLeaderEpochBumpForReplicaReassignmentIfNeeded`;
//! 3. or is cancelled (null target): replicas = `R`, the adding replicas leave the ISR.

use sluice_protocol::error::ErrorCode;
use sluice_shard::{
    OngoingReassignment, PartitionImage, ReassignmentOutcome, ReassignmentQuery, ReassignmentTopic,
    TopicImage,
};

use crate::metadata_state::MetadataState;
use crate::partition_change::{elect_assignment_leader, unclean_election_enabled, unfenced};
use crate::records::MetadataRecord;

/// Kafka's message for NO_REASSIGNMENT_IN_PROGRESS.
const NO_REASSIGNMENT_IN_PROGRESS_MESSAGE: &str = "No partition reassignment is in progress.";

/// A partition's replicas during a reassignment (Kafka's `PartitionReassignmentReplicas`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassignmentReplicas {
    /// The target replicas, then the ones being removed.
    pub replicas: Vec<i32>,
    /// Target replicas not in the current set.
    pub adding: Vec<i32>,
    /// Current replicas not in the target.
    pub removing: Vec<i32>,
}

impl ReassignmentReplicas {
    /// The move from `current` to `target`.
    pub fn new(current: &[i32], target: &[i32]) -> ReassignmentReplicas {
        let removing: Vec<i32> = current
            .iter()
            .copied()
            .filter(|id| !target.contains(id))
            .collect();
        let adding = target
            .iter()
            .copied()
            .filter(|id| !current.contains(id))
            .collect();
        let mut replicas = target.to_vec();
        replicas.extend(&removing);
        ReassignmentReplicas {
            replicas,
            adding,
            removing,
        }
    }

    /// The partition's replicas as they stand.
    pub fn of(p: &PartitionImage) -> ReassignmentReplicas {
        ReassignmentReplicas {
            replicas: p.replicas.clone(),
            adding: p.adding_replicas.clone(),
            removing: p.removing_replicas.clone(),
        }
    }

    /// Whether a reassignment is in progress.
    pub fn in_progress(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// The replicas and ISR once the reassignment completes with `isr`, if it can: every
    /// adding replica is in the ISR, and the ISR keeps a member once the removing replicas
    /// leave it (Kafka's `maybeCompleteReassignment`).
    pub fn maybe_complete(&self, isr: &[i32]) -> Option<(Vec<i32>, Vec<i32>)> {
        if !self.in_progress() {
            return None;
        }
        let new_isr: Vec<i32> = isr
            .iter()
            .copied()
            .filter(|id| !self.removing.contains(id))
            .collect();
        if new_isr.is_empty() || !self.adding.iter().all(|id| new_isr.contains(id)) {
            return None;
        }
        let replicas = self
            .replicas
            .iter()
            .copied()
            .filter(|id| !self.removing.contains(id))
            .collect();
        Some((replicas, new_isr))
    }
}

/// The record taking `p` to `target` with `isr` (PartitionChangeBuilder with target replicas,
/// adding and removing): the reassignment completes if the ISR allows, the leader is elected
/// again if it is no longer a replica in the ISR, and the leader epoch moves with the leader or
/// when a replica is removed. `None` when nothing changes.
pub fn assignment_change(
    state: &MetadataState,
    topic: &TopicImage,
    p: &PartitionImage,
    target: ReassignmentReplicas,
    isr: Vec<i32>,
    unclean: bool,
) -> Option<MetadataRecord> {
    let (replicas, isr, adding, removing) = match target.maybe_complete(&isr) {
        Some((replicas, isr)) => (replicas, isr, Vec::new(), Vec::new()),
        None => (target.replicas, isr, target.adding, target.removing),
    };
    let mut next = p.clone();
    next.replicas = replicas.clone();
    if !replicas.contains(&next.leader) {
        next.leader = -1;
    }
    let usable = |id: i32| unfenced(state, id);
    let (leader, isr) = elect_assignment_leader(&next, isr, &usable, unclean);
    if leader == p.leader
        && isr == p.isr
        && replicas == p.replicas
        && adding == p.adding_replicas
        && removing == p.removing_replicas
    {
        return None;
    }
    let replica_removed = p.replicas.iter().any(|id| !replicas.contains(id));
    let leader_epoch = if leader != p.leader || replica_removed {
        p.leader_epoch + 1
    } else {
        p.leader_epoch
    };
    Some(MetadataRecord::PartitionAssignmentChange {
        topic_id: topic.topic_id,
        partition: p.partition,
        leader,
        leader_epoch,
        isr,
        replicas,
        adding_replicas: adding,
        removing_replicas: removing,
    })
}

/// Kafka's `validateManualPartitionAssignment` for a reassignment target: not empty, no
/// broker twice, every broker registered.
fn check_target(state: &MetadataState, target: &[i32]) -> Result<(), String> {
    if target.is_empty() {
        return Err("The manual partition assignment includes an empty replica list.".into());
    }
    for (i, id) in target.iter().enumerate() {
        if target[..i].contains(id) {
            return Err(format!(
                "The manual partition assignment includes the broker {id} more than once."
            ));
        }
        if !state.brokers.contains_key(id) {
            return Err(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            ));
        }
    }
    Ok(())
}

/// One partition of an AlterPartitionReassignments request: its record, or its error and
/// Kafka's message.
fn reassign_partition(
    state: &MetadataState,
    topic_name: &str,
    partition: i32,
    target: Option<&[i32]>,
    allow_replication_factor_change: bool,
    unclean_default: bool,
) -> Result<Option<MetadataRecord>, (ErrorCode, String)> {
    let topic = state.image.topic(topic_name).ok_or_else(|| {
        (
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("Unable to find a topic named {topic_name}."),
        )
    })?;
    let p = topic.partition(partition).ok_or_else(|| {
        (
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("Unable to find partition {topic_name}:{partition}."),
        )
    })?;
    let unclean = unclean_election_enabled(topic, unclean_default);
    let current = ReassignmentReplicas::of(p);
    let Some(target) = target else {
        // Cancel (Kafka's `PartitionReassignmentRevert`): back to the replicas before the
        // reassignment, without the ones it was adding.
        if !current.in_progress() {
            return Err((
                ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                NO_REASSIGNMENT_IN_PROGRESS_MESSAGE.into(),
            ));
        }
        let original: Vec<i32> = p
            .replicas
            .iter()
            .copied()
            .filter(|id| !p.adding_replicas.contains(id))
            .collect();
        let isr: Vec<i32> = p
            .isr
            .iter()
            .copied()
            .filter(|id| original.contains(id))
            .collect();
        if isr.is_empty() && !unclean {
            return Err((
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "Unable to revert partition assignment for {topic_name}:{partition} because it would require an unclean leader election."
                ),
            ));
        }
        let revert = ReassignmentReplicas {
            replicas: original,
            adding: Vec::new(),
            removing: Vec::new(),
        };
        return Ok(assignment_change(state, topic, p, revert, isr, unclean));
    };
    check_target(state, target).map_err(|m| (ErrorCode::INVALID_REPLICA_ASSIGNMENT, m))?;
    // KIP-860 compares with the replica count before any reassignment in progress.
    let replication_factor = p.replicas.len() - p.adding_replicas.len();
    if !allow_replication_factor_change && target.len() != replication_factor {
        return Err((
            ErrorCode::INVALID_REPLICATION_FACTOR,
            format!(
                "The replication factor is changed from {replication_factor} to {}",
                target.len()
            ),
        ));
    }
    // From the replicas as they stand (the union, during a reassignment): a new target
    // replaces the one in progress.
    let next = ReassignmentReplicas::new(&p.replicas, target);
    Ok(assignment_change(
        state,
        topic,
        p,
        next,
        p.isr.clone(),
        unclean,
    ))
}

/// AlterPartitionReassignments (Kafka's `ReplicationControlManager.alterPartitionReassignments`):
/// one outcome per partition asked, in request order, and the records to commit (one per
/// partition that changes; a partition named twice takes its last target).
pub fn alter_partition_reassignments(
    state: &MetadataState,
    topics: &[ReassignmentTopic],
    allow_replication_factor_change: bool,
    unclean_default: bool,
) -> (Vec<ReassignmentOutcome>, Vec<MetadataRecord>) {
    let mut outcomes = Vec::new();
    let mut records: Vec<MetadataRecord> = Vec::new();
    for topic in topics {
        for target in &topic.partitions {
            let decided = reassign_partition(
                state,
                &topic.topic,
                target.partition,
                target.replicas.as_deref(),
                allow_replication_factor_change,
                unclean_default,
            );
            let (error, message) = match decided {
                Ok(record) => {
                    if let Some(record) = record {
                        records.retain(|r| !same_partition(r, &record));
                        records.push(record);
                    }
                    (ErrorCode::NONE, None)
                }
                // Kafka's `ApiError.fromThrowable` answers no message when the exception's is
                // the error code's own (NO_REASSIGNMENT_IN_PROGRESS's).
                Err((error, message)) if message == NO_REASSIGNMENT_IN_PROGRESS_MESSAGE => {
                    (error, None)
                }
                Err((error, message)) => (error, Some(message)),
            };
            outcomes.push(ReassignmentOutcome {
                topic: topic.topic.clone(),
                partition: target.partition,
                error,
                message,
            });
        }
    }
    (outcomes, records)
}

fn same_partition(a: &MetadataRecord, b: &MetadataRecord) -> bool {
    match (a, b) {
        (
            MetadataRecord::PartitionAssignmentChange {
                topic_id: ta,
                partition: pa,
                ..
            },
            MetadataRecord::PartitionAssignmentChange {
                topic_id: tb,
                partition: pb,
                ..
            },
        ) => ta == tb && pa == pb,
        _ => false,
    }
}

/// ListPartitionReassignments (Kafka's `ReplicationControlManager.listPartitionReassignments`):
/// the partitions being reassigned, among those named (unknown topics and partitions, and
/// partitions not being reassigned, are left out), or among all when `topics` is `None`.
pub fn list_partition_reassignments(
    state: &MetadataState,
    topics: Option<&[ReassignmentQuery]>,
) -> Vec<OngoingReassignment> {
    let ongoing = |topic: &TopicImage, p: &PartitionImage| {
        ReassignmentReplicas::of(p)
            .in_progress()
            .then(|| OngoingReassignment {
                topic: topic.name.clone(),
                partition: p.partition,
                replicas: p.replicas.clone(),
                adding_replicas: p.adding_replicas.clone(),
                removing_replicas: p.removing_replicas.clone(),
            })
    };
    match topics {
        None => state
            .image
            .topics
            .values()
            .flat_map(|topic| {
                topic
                    .partitions
                    .iter()
                    .filter_map(|p| ongoing(topic, p))
                    .collect::<Vec<_>>()
            })
            .collect(),
        Some(queries) => {
            let mut found = Vec::new();
            for query in queries {
                let Some(topic) = state.image.topic(&query.topic) else {
                    continue;
                };
                for partition in &query.partitions {
                    if let Some(entry) = topic.partition(*partition).and_then(|p| ongoing(topic, p))
                    {
                        if !found.contains(&entry) {
                            found.push(entry);
                        }
                    }
                }
            }
            found
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition_change::{alter_partition, ElectionDefaults};
    use sluice_protocol::codec::Uuid;
    use sluice_shard::{AlterPartitionItem, ReassignmentTarget};

    const TOPIC: u128 = 42;

    /// Brokers 1, 2, 3 live (epochs 10, 20, 30), 4 registered and fenced; topic "t" with one
    /// partition on `replicas` (all in the ISR, the first leading, leader epoch 5), seen from
    /// node `local` with 2 shards.
    fn cluster(local: i32, replicas: &[i32]) -> MetadataState {
        let topic_id = Uuid::from_u128(TOPIC);
        let mut records = Vec::new();
        for id in 1..=4 {
            records.push(MetadataRecord::RegisterBroker {
                broker_id: id,
                incarnation_id: Uuid::from_u128(id as u128),
                broker_epoch: i64::from(id) * 10,
                host: "h".into(),
                port: 1,
                rack: None,
            });
            if id != 4 {
                records.push(MetadataRecord::UnfenceBroker {
                    broker_id: id,
                    broker_epoch: i64::from(id) * 10,
                });
            }
        }
        records.push(MetadataRecord::Topic {
            name: "t".into(),
            topic_id,
        });
        records.push(MetadataRecord::Partition {
            topic_id,
            partition: 0,
            replicas: replicas.to_vec(),
            isr: replicas.to_vec(),
            leader: replicas[0],
            leader_epoch: 5,
        });
        let mut state = MetadataState::new(local, 2);
        state.apply_entry(1, records);
        state
    }

    fn target(replicas: Option<Vec<i32>>) -> Vec<ReassignmentTopic> {
        vec![ReassignmentTopic {
            topic: "t".into(),
            partitions: vec![ReassignmentTarget {
                partition: 0,
                replicas,
            }],
        }]
    }

    /// Reassigns partition 0 and applies the records; returns the outcome.
    fn reassign(state: &mut MetadataState, replicas: Option<Vec<i32>>) -> ReassignmentOutcome {
        let (mut outcomes, records) =
            alter_partition_reassignments(state, &target(replicas), true, false);
        let index = state.applied_index + 1;
        state.apply_entry(index, records);
        assert_eq!(outcomes.len(), 1);
        outcomes.remove(0)
    }

    fn p0(state: &MetadataState) -> PartitionImage {
        state
            .image
            .topic("t")
            .unwrap()
            .partition(0)
            .unwrap()
            .clone()
    }

    /// The leader's AlterPartition asking for `isr`, applied; returns the outcome's error,
    /// leader and ISR.
    fn expand(state: &mut MetadataState, isr: &[i32]) -> (ErrorCode, i32, Vec<i32>) {
        let p = p0(state);
        let item = AlterPartitionItem {
            topic_id: Uuid::from_u128(TOPIC),
            partition: 0,
            leader_id: p.leader,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: isr.iter().map(|id| (*id, i64::from(*id) * 10)).collect(),
        };
        let broker_epoch = i64::from(p.leader) * 10;
        let (outcome, record) = alter_partition(
            state,
            p.leader,
            broker_epoch,
            &item,
            &ElectionDefaults::default(),
        )
        .unwrap();
        if let Some(record) = record {
            let index = state.applied_index + 1;
            state.apply_entry(index, vec![record]);
        }
        (outcome.error, outcome.leader_id, outcome.isr)
    }

    fn ok() -> ReassignmentOutcome {
        ReassignmentOutcome {
            topic: "t".into(),
            partition: 0,
            error: ErrorCode::NONE,
            message: None,
        }
    }

    #[test]
    fn replicas_during_a_move_are_the_target_then_the_removed_ones() {
        let r = ReassignmentReplicas::new(&[1, 2], &[2, 3]);
        assert_eq!(
            (
                r.replicas.as_slice(),
                r.adding.as_slice(),
                r.removing.as_slice()
            ),
            (&[2, 3, 1][..], &[3][..], &[1][..])
        );
        assert!(r.in_progress());
        // Not complete until every added replica is in the ISR.
        assert_eq!(r.maybe_complete(&[1, 2]), None);
        assert_eq!(r.maybe_complete(&[1, 2, 3]), Some((vec![2, 3], vec![2, 3])));
        // Never to an empty ISR.
        let r = ReassignmentReplicas::new(&[1], &[2]);
        assert_eq!(r.maybe_complete(&[1]), None);
        assert!(!ReassignmentReplicas::new(&[1, 2], &[1, 2]).in_progress());
    }

    #[test]
    fn a_move_starts_with_the_union_and_completes_when_the_targets_are_in_sync() {
        let mut state = cluster(1, &[1, 2]);
        assert_eq!(reassign(&mut state, Some(vec![2, 3])), ok());
        let p = p0(&state);
        assert_eq!(
            (p.replicas, p.adding_replicas, p.removing_replicas, p.isr),
            (vec![2, 3, 1], vec![3], vec![1], vec![1, 2])
        );
        // Nothing removed yet: same leader, same leader epoch; a new partition epoch.
        assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (1, 5, 1));
        // Metadata answers the union meanwhile; the list shows the move.
        assert_eq!(
            list_partition_reassignments(&state, None),
            vec![OngoingReassignment {
                topic: "t".into(),
                partition: 0,
                replicas: vec![2, 3, 1],
                adding_replicas: vec![3],
                removing_replicas: vec![1],
            }]
        );
        // An ISR change that does not hold the added replica completes nothing.
        let (error, leader, isr) = expand(&mut state, &[1]);
        assert_eq!((error, leader, isr), (ErrorCode::NONE, 1, vec![1]));
        assert_eq!(p0(&state).adding_replicas, vec![3]);
        let (error, leader, isr) = expand(&mut state, &[1, 3]);
        // Replica 2 is out of the ISR, replica 3 in: complete. The removed leader (1) hands over
        // to the first target replica in the ISR (3), and the leader epoch moves.
        assert_eq!((error, leader, isr), (ErrorCode::NONE, 3, vec![3]));
        let p = p0(&state);
        assert_eq!(
            (p.replicas, p.adding_replicas, p.removing_replicas, p.isr),
            (vec![2, 3], vec![], vec![], vec![3])
        );
        assert_eq!((p.leader, p.leader_epoch), (3, 6));
        assert!(list_partition_reassignments(&state, None).is_empty());
    }

    #[test]
    fn completion_keeps_a_leader_that_stays_and_still_moves_the_epoch() {
        let mut state = cluster(1, &[1, 2]);
        reassign(&mut state, Some(vec![1, 3]));
        let (error, leader, isr) = expand(&mut state, &[1, 2, 3]);
        assert_eq!((error, leader, isr), (ErrorCode::NONE, 1, vec![1, 3]));
        let p = p0(&state);
        assert_eq!((p.replicas, p.leader, p.leader_epoch), (vec![1, 3], 1, 6));
    }

    #[test]
    fn a_shrink_only_move_completes_at_once() {
        let mut state = cluster(1, &[1, 2, 3]);
        assert_eq!(reassign(&mut state, Some(vec![2, 3])), ok());
        let p = p0(&state);
        assert_eq!(
            (p.replicas, p.adding_replicas, p.removing_replicas, p.isr),
            (vec![2, 3], vec![], vec![], vec![2, 3])
        );
        assert_eq!((p.leader, p.leader_epoch), (2, 6));
    }

    #[test]
    fn cancelling_reverts_to_the_original_replicas() {
        let mut state = cluster(1, &[1, 2]);
        reassign(&mut state, Some(vec![2, 3]));
        assert_eq!(reassign(&mut state, None), ok());
        let p = p0(&state);
        // As Kafka's `PartitionReassignmentRevert`: the replicas during the move without the
        // added ones, in their order then (the target first).
        assert_eq!(
            (p.replicas, p.adding_replicas, p.removing_replicas, p.isr),
            (vec![2, 1], vec![], vec![], vec![1, 2])
        );
        // Replica 3 left the replica set: its fetches must be fenced.
        assert_eq!((p.leader, p.leader_epoch), (1, 6));
        // Nothing left to cancel.
        let outcome = reassign(&mut state, None);
        assert_eq!(
            (outcome.error, outcome.message),
            (ErrorCode::NO_REASSIGNMENT_IN_PROGRESS, None)
        );
    }

    #[test]
    fn the_same_replicas_change_nothing() {
        let mut state = cluster(1, &[1, 2]);
        let (outcomes, records) =
            alter_partition_reassignments(&state, &target(Some(vec![1, 2])), true, false);
        assert_eq!((outcomes, records), (vec![ok()], vec![]));
        // A new target during a move replaces it: back to [1, 2] completes at once.
        reassign(&mut state, Some(vec![2, 3]));
        assert_eq!(reassign(&mut state, Some(vec![1, 2])), ok());
        let p = p0(&state);
        assert_eq!(
            (p.replicas, p.adding_replicas, p.isr),
            (vec![1, 2], vec![], vec![1, 2])
        );
    }

    #[test]
    fn bad_targets_get_kafkas_errors() {
        let state = cluster(1, &[1, 2]);
        let error = |topic: &str, partition: i32, replicas: Option<Vec<i32>>, allow_rf: bool| {
            let topics = vec![ReassignmentTopic {
                topic: topic.into(),
                partitions: vec![ReassignmentTarget {
                    partition,
                    replicas,
                }],
            }];
            let (outcomes, records) =
                alter_partition_reassignments(&state, &topics, allow_rf, false);
            assert_eq!(records.is_empty(), outcomes[0].error != ErrorCode::NONE);
            (
                outcomes[0].error,
                outcomes[0].message.clone().unwrap_or_default(),
            )
        };
        assert_eq!(
            error("t", 0, Some(vec![]), true),
            (
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.".into()
            )
        );
        assert_eq!(
            error("t", 0, Some(vec![2, 2]), true),
            (
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes the broker 2 more than once.".into()
            )
        );
        assert_eq!(
            error("t", 0, Some(vec![2, 9]), true),
            (
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes broker 9, but no such broker is registered."
                    .into()
            )
        );
        assert_eq!(
            error("t", 1, Some(vec![2]), true).0,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(
            error("u", 0, Some(vec![2]), true).0,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(
            error("u", 0, None, true).0,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        // KIP-860: the replica count may not change when the request says so.
        assert_eq!(
            error("t", 0, Some(vec![3]), false).0,
            ErrorCode::INVALID_REPLICATION_FACTOR
        );
        // A fenced but registered broker is a valid target (it catches up once back).
        assert_eq!(error("t", 0, Some(vec![1, 4]), false).0, ErrorCode::NONE);
    }

    #[test]
    fn listing_names_only_partitions_being_moved() {
        let mut state = cluster(1, &[1, 2]);
        let query = |topic: &str, partitions: Vec<i32>| ReassignmentQuery {
            topic: topic.into(),
            partitions,
        };
        assert!(list_partition_reassignments(&state, Some(&[query("t", vec![0])])).is_empty());
        reassign(&mut state, Some(vec![2, 3]));
        let listed = list_partition_reassignments(
            &state,
            Some(&[query("t", vec![0, 0, 7]), query("nope", vec![0])]),
        );
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].adding_replicas, vec![3]);
    }

    #[test]
    fn brokers_gain_and_lose_the_partition_with_the_replicas() {
        // The partitions this node hosts, per shard.
        let load = |state: &MetadataState| state.image.shard_table.load(2);
        // Broker 3 gains it when the move starts, on one of its shards.
        let mut gaining = cluster(3, &[1, 2]);
        assert_eq!(load(&gaining), vec![0, 0]);
        reassign(&mut gaining, Some(vec![2, 3]));
        assert_eq!(load(&gaining), vec![1, 0]);
        // Broker 1 keeps it while it is being removed, and loses it on completion.
        let mut losing = cluster(1, &[1, 2]);
        reassign(&mut losing, Some(vec![2, 3]));
        assert_eq!(load(&losing), vec![1, 0]);
        expand(&mut losing, &[1, 2, 3]);
        assert_eq!(load(&losing), vec![0, 0]);
        assert_eq!(losing.shard_load, vec![0, 0]);
    }
}
