//! Partition leadership and ISR changes, as KRaft's controller decides them
//! (`ReplicationControlManager.alterPartition`, `handleBrokerFenced`, `handleBrokerUnfenced`,
//! `handleBrokerInControlledShutdown`, with `PartitionChangeBuilder`'s election): pure functions
//! of the metadata state that return the PartitionChange records to commit.
//!
//! The rules kept from Kafka (metadata version 4.x; ELR as `eligible.leader.replicas.version`
//! 1, which Kafka 4.4 finalizes for new clusters):
//! - a leader is elected from the ISR only, in replica order, among unfenced brokers — or,
//!   when the ISR is empty, from the eligible leader replicas (KIP-966); when none can lead, the
//!   partition has no leader (-1) unless `unclean.leader.election.enable` holds for the topic
//!   (its override, else the broker default): then the first live replica leads, and the ISR
//!   is that replica alone;
//! - ELR (KIP-966): while the ISR is below `min.insync.replicas` the high watermark does not
//!   move, so whoever leaves the ISR then holds everything committed and becomes an eligible
//!   leader replica (ELR); an ISR back at min ISR, an unclean election, a broker's unclean
//!   shutdown (for that broker) or a change of `min.insync.replicas` clears it; LastKnownElr
//!   keeps the last leader once the ISR empties (Kafka 4.4's "balanced recovery": that leader
//!   may lead again when it returns, if no ISR or ELR member can);
//! - a broker that goes away leaves the ISR of every partition; with ELR off the last member
//!   stays (it is the one that can lead again with everything committed), with ELR on it
//!   leaves too and stays eligible;
//! - the leader epoch moves only when the leader changes; an ISR change alone keeps it (since
//!   metadata version 3.6), and every change is a new partition epoch (applied in
//!   `MetadataState`);
//! - a broker coming back is not put back in any ISR by the controller: the leader does it
//!   with AlterPartition once the replica has caught up (an ELR member elected is the only
//!   member of its new ISR).

use std::collections::BTreeSet;

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_shard::{
    AlterPartitionItem, AlterPartitionOutcome, ElectionOutcome, ElectionTopic, MetadataError,
    PartitionImage, TopicImage, ELECTION_TYPE_UNCLEAN, ELIGIBLE_LEADER_REPLICAS_VERSION,
};

use crate::metadata_state::MetadataState;
use crate::reassignment::{assignment_change, ReassignmentReplicas};
use crate::records::MetadataRecord;

/// Kafka's topic config (and broker default) allowing a replica outside the ISR to lead.
const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";
/// Kafka's topic config (and broker default) below which the ISR keeps an ELR.
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

/// The broker defaults an election decides with when the topic does not override them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElectionDefaults {
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// `min.insync.replicas`.
    pub min_insync_replicas: i32,
}

impl Default for ElectionDefaults {
    /// Kafka's defaults: no unclean election, min ISR 1.
    fn default() -> ElectionDefaults {
        ElectionDefaults {
            unclean_leader_election_enable: false,
            min_insync_replicas: 1,
        }
    }
}

/// Whether `topic` may elect a leader outside its ISR: its override, else the broker default.
pub fn unclean_election_enabled(topic: &TopicImage, broker_default: bool) -> bool {
    topic
        .configs
        .get(UNCLEAN_LEADER_ELECTION_ENABLE)
        .map_or(broker_default, |value| {
            value.trim().eq_ignore_ascii_case("true")
        })
}

/// The topic's effective `min.insync.replicas` (Kafka's `getTopicEffectiveMinIsr`): its
/// override, else the broker default.
fn min_insync_replicas(topic: &TopicImage, broker_default: i32) -> usize {
    let value = topic
        .configs
        .get(MIN_INSYNC_REPLICAS)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .unwrap_or(broker_default);
    value.max(1) as usize
}

/// Whether the finalized `eligible.leader.replicas.version` turns ELR on (level 1 and up).
pub fn elr_enabled(state: &MetadataState) -> bool {
    state
        .image
        .finalized_features
        .get(ELIGIBLE_LEADER_REPLICAS_VERSION)
        .is_some_and(|level| *level >= 1)
}

/// Whether `broker_id` is registered and unfenced.
pub(crate) fn unfenced(state: &MetadataState, broker_id: i32) -> bool {
    state.brokers.get(&broker_id).is_some_and(|b| !b.fenced)
}

/// PartitionChangeBuilder's election types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Election {
    /// The first replica if it can lead, else as `Online`.
    Preferred,
    /// From the ISR (or, with the ISR empty, the ELR) only.
    Online,
    /// As `Online`, else any live replica (which may lose committed records).
    Unclean,
}

/// The leader and ISR of `p` once its ISR is `isr`, for a reassignment's change (which never
/// empties the ISR, so ELR plays no part): the current leader stays if it is still in the ISR
/// and usable; else the first replica, in replica order, that is in the ISR and usable; else,
/// when unclean election is allowed, the first usable replica, alone in the ISR; else no
/// leader.
pub(crate) fn elect_assignment_leader(
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

/// One partition change as Kafka's `PartitionChangeBuilder.build` decides it.
struct Change<'a> {
    topic: &'a TopicImage,
    p: &'a PartitionImage,
    /// The ISR asked for (before the election may replace it).
    target_isr: Vec<i32>,
    election: Election,
    /// `Some(min ISR)` when ELR is on.
    elr_min_isr: Option<usize>,
    /// Replicas whose last process did not shut down cleanly: never eligible (KIP-966).
    unclean_shutdown: Option<i32>,
}

impl Change<'_> {
    fn new<'a>(
        state: &MetadataState,
        topic: &'a TopicImage,
        p: &'a PartitionImage,
        target_isr: Vec<i32>,
        defaults: &ElectionDefaults,
    ) -> Change<'a> {
        let election = if unclean_election_enabled(topic, defaults.unclean_leader_election_enable) {
            Election::Unclean
        } else {
            Election::Online
        };
        let elr_min_isr =
            elr_enabled(state).then(|| min_insync_replicas(topic, defaults.min_insync_replicas));
        Change {
            topic,
            p,
            target_isr,
            election,
            elr_min_isr,
            unclean_shutdown: None,
        }
    }

    /// The record taking the partition where the rules say, if that changes anything.
    /// The leader epoch moves with the leader only.
    fn build(self, usable: &impl Fn(i32) -> bool) -> Option<MetadataRecord> {
        let p = self.p;
        let elr_on = self.elr_min_isr.is_some();
        let mut isr = self.target_isr;
        let mut elr = p.eligible_leader_replicas.clone();
        // KIP-966: at or above min ISR there is no ELR; below it, whoever was in the ISR (or
        // already eligible) and is not in the new ISR stays eligible — the high watermark does
        // not move below min ISR, so they hold everything committed — unless its broker lost
        // its unflushed tail in an unclean shutdown.
        if let Some(min_isr) = self.elr_min_isr {
            if isr.len() >= min_isr {
                elr.clear();
            } else {
                let candidates: BTreeSet<i32> = elr.iter().chain(&p.isr).copied().collect();
                elr = candidates
                    .into_iter()
                    .filter(|id| !isr.contains(id) && self.unclean_shutdown != Some(*id))
                    .collect();
            }
        }
        let (leader, unclean) = elect(p, &isr, &elr, elr_on, self.election, usable);
        let leader_changed = leader != p.leader;
        let mut record_isr = None;
        if leader_changed {
            if elr.contains(&leader) {
                // Led from the ELR: it is the whole ISR, and no longer merely eligible.
                isr = vec![leader];
                elr.retain(|id| *id != leader);
            }
            if unclean {
                record_isr = Some(vec![leader]);
            }
        }
        // An unclean election (or ELR off) forgets the ELR.
        if record_isr.is_some() || !elr_on {
            elr.clear();
        }
        let record_elr = (elr != p.eligible_leader_replicas).then_some(elr);
        // With ELR on the ISR may become empty; off, its last member stays (it can lead again
        // with everything committed).
        if record_isr.is_none() && (!isr.is_empty() || elr_on) && isr != p.isr {
            record_isr = Some(isr);
        }
        // Kafka 4.4 keeps the last known leader in LastKnownElr: set when the ISR first
        // empties, cleared once the partition has (or keeps) a leader.
        let mut record_last_known_elr = None;
        if elr_on {
            let record_leader = leader_changed.then_some(leader);
            if record_isr.as_ref().is_some_and(Vec::is_empty) && p.last_known_elr != [p.leader] {
                record_last_known_elr = Some(vec![p.leader]);
            } else if (record_leader.is_some_and(|l| l >= 0)
                || (p.leader != -1 && record_leader != Some(-1)))
                && !p.last_known_elr.is_empty()
            {
                record_last_known_elr = Some(Vec::new());
            }
        }
        if !leader_changed
            && record_isr.is_none()
            && record_elr.is_none()
            && record_last_known_elr.is_none()
        {
            return None;
        }
        Some(MetadataRecord::PartitionChange {
            topic_id: self.topic.topic_id,
            partition: p.partition,
            leader,
            leader_epoch: if leader_changed {
                p.leader_epoch + 1
            } else {
                p.leader_epoch
            },
            isr: record_isr.unwrap_or_else(|| p.isr.clone()),
            eligible_leader_replicas: record_elr,
            last_known_elr: record_last_known_elr,
        })
    }
}

/// PartitionChangeBuilder's election: the new leader and whether the election was unclean.
/// A replica can lead if it is usable and in the ISR, or — the ISR empty — in the ELR. The
/// current leader stays if it still can (the preferred replica first, for a preferred
/// election); else the first replica in replica order that can; else, with ELR on, ISR and ELR
/// empty, the last known leader if it is usable (Kafka 4.4's "balanced recovery", counted as
/// unclean); else, for an unclean election, the first usable replica; else none.
fn elect(
    p: &PartitionImage,
    isr: &[i32],
    elr: &[i32],
    elr_on: bool,
    election: Election,
    usable: &impl Fn(i32) -> bool,
) -> (i32, bool) {
    let valid = |id: i32| {
        id >= 0 && (isr.contains(&id) || (isr.is_empty() && elr.contains(&id))) && usable(id)
    };
    if election == Election::Preferred {
        if let Some(first) = p.replicas.first().copied().filter(|id| valid(*id)) {
            return (first, false);
        }
    }
    if valid(p.leader) {
        return (p.leader, false);
    }
    if let Some(leader) = p.replicas.iter().copied().find(|id| valid(*id)) {
        return (leader, false);
    }
    let last_known_leader =
        elr_on && elr.is_empty() && isr.is_empty() && p.last_known_elr.len() == 1;
    if last_known_leader && usable(p.last_known_elr[0]) {
        return (p.last_known_elr[0], true);
    }
    if election == Election::Unclean {
        if let Some(leader) = p.replicas.iter().copied().find(|id| usable(*id)) {
            return (leader, true);
        }
    }
    (-1, false)
}

/// Broker `broker_id` is going away — fenced (its session expired, or it asked in a controlled
/// shutdown) or registered anew (its previous process is gone, and may have lost what it had
/// not flushed): it leaves the ISR of every partition, and the partitions it led get a new
/// leader (Kafka's `handleBrokerFenced` / `handleBrokerInControlledShutdown`). With ELR on, an
/// ISR falling below min ISR keeps its former members as eligible leaders, and the last member
/// leaves too (the ISR empties, the ELR holds it); with ELR off the last member stays. When
/// `unclean_shutdown` (a registration whose previous process did not shut down cleanly:
/// Kafka's `handleBrokerUncleanShutdown`), it leaves every ELR too. The records go in the same
/// entry as the fencing or registration.
pub fn broker_removed(
    state: &MetadataState,
    broker_id: i32,
    defaults: &ElectionDefaults,
    unclean_shutdown: bool,
) -> Vec<MetadataRecord> {
    let usable = |id: i32| id != broker_id && unfenced(state, id);
    let mut records = Vec::new();
    for topic in state.image.topics.values() {
        for p in &topic.partitions {
            let in_elr = unclean_shutdown && p.eligible_leader_replicas.contains(&broker_id);
            if p.leader != broker_id && !p.isr.contains(&broker_id) && !in_elr {
                continue;
            }
            let isr = p
                .isr
                .iter()
                .copied()
                .filter(|id| *id != broker_id)
                .collect();
            let mut change = Change::new(state, topic, p, isr, defaults);
            if unclean_shutdown {
                change.unclean_shutdown = Some(broker_id);
            }
            records.extend(change.build(&usable));
        }
    }
    records
}

/// Broker `broker_id` is unfenced: the partitions without a leader get one if the broker (or,
/// with unclean election, any live replica) can lead them — from the ELR too when the ISR is
/// empty (Kafka's `handleBrokerUnfenced`). Its own ISR memberships are not touched: the
/// leaders add it back once it has caught up.
pub fn broker_unfenced(
    state: &MetadataState,
    broker_id: i32,
    defaults: &ElectionDefaults,
) -> Vec<MetadataRecord> {
    let usable = |id: i32| id == broker_id || unfenced(state, id);
    let mut records = Vec::new();
    for topic in state.image.topics.values() {
        for p in topic.partitions.iter().filter(|p| p.leader == -1) {
            let change = Change::new(state, topic, p, p.isr.clone(), defaults);
            records.extend(change.build(&usable));
        }
    }
    records
}

/// `min.insync.replicas` of `topic_id` changed (Kafka's ClearElrRecord): its partitions forget
/// their ELR and last known ELR, which were kept against the old value.
pub fn min_isr_changed(state: &MetadataState, topic_id: &Uuid) -> Vec<MetadataRecord> {
    let Some(topic) = state.image.topic_by_id(topic_id) else {
        return Vec::new();
    };
    topic
        .partitions
        .iter()
        .filter(|p| !p.eligible_leader_replicas.is_empty() || !p.last_known_elr.is_empty())
        .map(|p| MetadataRecord::PartitionChange {
            topic_id: topic.topic_id,
            partition: p.partition,
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            isr: p.isr.clone(),
            eligible_leader_replicas: Some(Vec::new()),
            last_known_elr: Some(Vec::new()),
        })
        .collect()
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
    defaults: &ElectionDefaults,
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
    let record = if reassignment.in_progress() {
        // The ISR change may complete the reassignment (PartitionChangeBuilder's
        // `completeReassignmentIfNeeded`): then the replicas, the ISR and maybe the leader
        // change in the same record. Completion never needs an unclean election: it waits for
        // an ISR that keeps a member.
        assignment_change(state, topic, p, reassignment, isr, false)
    } else {
        // The same builder as every other change: with ELR on, members leaving an ISR below
        // min ISR become eligible leaders, and an ISR back at min ISR clears the ELR.
        let usable = |id: i32| unfenced(state, id);
        Change::new(state, topic, p, isr, defaults).build(&usable)
    };
    let Some(record) = record else {
        return Ok((current(ErrorCode::NONE), None));
    };
    let (leader, leader_epoch, isr) = match &record {
        MetadataRecord::PartitionChange {
            leader,
            leader_epoch,
            isr,
            ..
        }
        | MetadataRecord::PartitionAssignmentChange {
            leader,
            leader_epoch,
            isr,
            ..
        } => (*leader, *leader_epoch, isr.clone()),
        _ => return Ok((current(ErrorCode::NONE), None)),
    };
    let outcome = AlterPartitionOutcome {
        error: ErrorCode::NONE,
        leader_id: leader,
        leader_epoch,
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

/// Kafka's `ReplicationControlManager.electLeader` for one partition: the record to commit,
/// or the partition's error and Kafka's message for it.
fn elect_leader(
    state: &MetadataState,
    topic_name: &str,
    partition: i32,
    unclean: bool,
    defaults: &ElectionDefaults,
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
    let mut change = Change::new(state, topic, p, p.isr.clone(), defaults);
    change.election = if unclean {
        Election::Unclean
    } else {
        Election::Preferred
    };
    match change.build(&usable) {
        Some(record) if matches!(record, MetadataRecord::PartitionChange { leader, .. } if leader >= 0) => {
            Ok(record)
        }
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
    defaults: &ElectionDefaults,
) -> (Vec<ElectionOutcome>, Vec<MetadataRecord>) {
    let unclean = election_type == ELECTION_TYPE_UNCLEAN;
    let mut outcomes = Vec::new();
    let mut records: Vec<MetadataRecord> = Vec::new();
    let mut decide = |topic: &str, partition: i32, all: bool| {
        let (error, message) = match elect_leader(state, topic, partition, unclean, defaults) {
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
pub fn balance_leaders(
    state: &MetadataState,
    defaults: &ElectionDefaults,
) -> (Vec<MetadataRecord>, bool) {
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
            let mut change = Change::new(state, topic, p, p.isr.clone(), defaults);
            change.election = Election::Preferred;
            match change.build(&usable) {
                Some(record @ MetadataRecord::PartitionChange { leader, .. }) if leader >= 0 => {
                    records.push(record)
                }
                _ => {}
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

    /// As [`cluster_elr`], with ELR off (`eligible.leader.replicas.version` 0): the rules of
    /// Kafka before KIP-966, which most tests here pin.
    fn cluster(
        partitions: &[(Vec<i32>, Vec<i32>, i32)],
        configs: &[(&str, &str)],
    ) -> MetadataState {
        let state = cluster_with(partitions, configs, false);
        assert!(!elr_enabled(&state));
        state
    }

    /// Brokers 1, 2, 3 live (epochs 10, 20, 30), 4 registered and fenced; topic "t" with the
    /// given (replicas, isr, leader) per partition, at leader epoch 5; `configs` as overrides.
    /// ELR on, as a new cluster has it.
    fn cluster_elr(
        partitions: &[(Vec<i32>, Vec<i32>, i32)],
        configs: &[(&str, &str)],
    ) -> MetadataState {
        let state = cluster_with(partitions, configs, true);
        assert!(elr_enabled(&state));
        state
    }

    fn cluster_with(
        partitions: &[(Vec<i32>, Vec<i32>, i32)],
        configs: &[(&str, &str)],
        elr: bool,
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
        if !elr {
            records.push(MetadataRecord::FeatureLevel {
                name: ELIGIBLE_LEADER_REPLICAS_VERSION.into(),
                feature_level: 0,
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
            eligible_leader_replicas: None,
            last_known_elr: None,
        }
    }

    /// `pc` that also sets the ELR fields (`None`: unchanged).
    fn pc_elr(
        (partition, leader, leader_epoch): (i32, i32, i32),
        isr: Vec<i32>,
        elr: Option<Vec<i32>>,
        last_known_elr: Option<Vec<i32>>,
    ) -> MetadataRecord {
        MetadataRecord::PartitionChange {
            topic_id: Uuid::from_u128(TOPIC),
            partition,
            leader,
            leader_epoch,
            isr,
            eligible_leader_replicas: elr,
            last_known_elr,
        }
    }

    fn defaults(unclean: bool) -> ElectionDefaults {
        ElectionDefaults {
            unclean_leader_election_enable: unclean,
            ..ElectionDefaults::default()
        }
    }

    // The decisions with Kafka's broker defaults (min ISR 1), the unclean default as given.
    fn broker_removed(state: &MetadataState, broker_id: i32, unclean: bool) -> Vec<MetadataRecord> {
        super::broker_removed(state, broker_id, &defaults(unclean), false)
    }

    fn broker_unfenced(
        state: &MetadataState,
        broker_id: i32,
        unclean: bool,
    ) -> Vec<MetadataRecord> {
        super::broker_unfenced(state, broker_id, &defaults(unclean))
    }

    fn alter_partition(
        state: &MetadataState,
        broker_id: i32,
        broker_epoch: i64,
        item: &AlterPartitionItem,
    ) -> Result<(AlterPartitionOutcome, Option<MetadataRecord>), MetadataError> {
        super::alter_partition(state, broker_id, broker_epoch, item, &defaults(false))
    }

    fn elect_leaders(
        state: &MetadataState,
        election_type: u8,
        topics: Option<&[ElectionTopic]>,
    ) -> (Vec<ElectionOutcome>, Vec<MetadataRecord>) {
        super::elect_leaders(state, election_type, topics, &defaults(false))
    }

    fn balance_leaders(state: &MetadataState) -> (Vec<MetadataRecord>, bool) {
        super::balance_leaders(state, &defaults(false))
    }

    /// Next free entry index of `state`.
    fn next(state: &MetadataState) -> u64 {
        state.applied_index + 1
    }

    fn fence(state: &mut MetadataState, index: u64, broker_id: i32, unclean: bool) {
        let epoch = state.brokers[&broker_id].broker_epoch;
        let mut records = vec![MetadataRecord::FenceBroker {
            broker_id,
            broker_epoch: epoch,
        }];
        records.extend(broker_removed(state, broker_id, unclean));
        state.apply_entry(index.max(next(state)), records);
    }

    fn unfence(state: &mut MetadataState, broker_id: i32) {
        let epoch = state.brokers[&broker_id].broker_epoch;
        let mut records = vec![MetadataRecord::UnfenceBroker {
            broker_id,
            broker_epoch: epoch,
        }];
        records.extend(broker_unfenced(state, broker_id, false));
        state.apply_entry(next(state), records);
    }

    /// (leader, isr, elr, last known elr) of partition `p`.
    fn elr_state(state: &MetadataState, p: i32) -> (i32, Vec<i32>, Vec<i32>, Vec<i32>) {
        let p = partition(state, p);
        (
            p.leader,
            p.isr,
            p.eligible_leader_replicas,
            p.last_known_elr,
        )
    }

    const MIN_ISR_2: &[(&str, &str)] = &[(MIN_INSYNC_REPLICAS, "2")];

    #[test]
    fn elr_the_isr_shrinking_below_min_isr_keeps_its_former_members_eligible() {
        let mut state = cluster_elr(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], MIN_ISR_2);
        // 3 goes: the ISR [1, 2] is still at min ISR, no ELR.
        assert_eq!(
            broker_removed(&state, 3, false),
            vec![pc(0, 1, 5, vec![1, 2])]
        );
        fence(&mut state, 2, 3, false);
        // 2 goes: the ISR [1] is below min ISR; 2 holds everything committed (the high
        // watermark stopped at min ISR), so it is eligible. The leader stays.
        assert_eq!(
            broker_removed(&state, 2, false),
            vec![pc_elr((0, 1, 5), vec![1], Some(vec![2]), None)]
        );
        fence(&mut state, 3, 2, false);
        // 1, the last member, goes too: the ISR empties (ELR on), both are eligible, the
        // partition has no leader and LastKnownElr keeps the last leader.
        assert_eq!(
            broker_removed(&state, 1, false),
            vec![pc_elr((0, -1, 6), vec![], Some(vec![1, 2]), Some(vec![1]))]
        );
        fence(&mut state, 4, 1, false);
        assert_eq!(elr_state(&state, 0), (-1, vec![], vec![1, 2], vec![1]));
        // Kafka's DescribeTopicPartitions shows exactly these.
        let p = partition(&state, 0);
        assert_eq!(p.partition_epoch, 3);
    }

    #[test]
    fn elr_an_eligible_replica_leads_once_the_isr_is_empty_and_a_replica_outside_does_not() {
        let mut state = cluster_elr(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], MIN_ISR_2);
        for (index, broker) in [(2, 3), (3, 2), (4, 1)] {
            fence(&mut state, index, broker, false);
        }
        // 3 left while the ISR was at min ISR: not eligible, it does not lead.
        assert!(broker_unfenced(&state, 3, false).is_empty());
        unfence(&mut state, 3);
        // 2 is eligible: it leads, alone in the ISR, out of the ELR; the last known leader is
        // forgotten once the partition has a leader.
        assert_eq!(
            broker_unfenced(&state, 2, false),
            vec![pc_elr((0, 2, 7), vec![2], Some(vec![1]), Some(vec![]))]
        );
        unfence(&mut state, 2);
        assert_eq!(elr_state(&state, 0), (2, vec![2], vec![1], vec![]));
        // Its followers rejoin through AlterPartition: at min ISR the ELR is cleared.
        let from_2 = AlterPartitionItem {
            leader_id: 2,
            ..item(7, 4, &[(2, 20), (3, 30)])
        };
        let (outcome, record) = alter_partition(&state, 2, 20, &from_2).unwrap();
        assert_eq!(outcome.error, ErrorCode::NONE);
        assert_eq!(outcome.isr, vec![2, 3]);
        assert_eq!(
            record,
            Some(pc_elr((0, 2, 7), vec![2, 3], Some(vec![]), None))
        );
    }

    #[test]
    fn elr_an_unclean_shutdown_removes_the_broker_from_every_elr() {
        let mut state = cluster_elr(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], MIN_ISR_2);
        for (index, broker) in [(2, 3), (3, 2), (4, 1)] {
            fence(&mut state, index, broker, false);
        }
        // 2 registers again, its previous process gone without a clean shutdown: it may have
        // lost its unflushed tail, so it is eligible no more.
        assert_eq!(
            super::broker_removed(&state, 2, &defaults(false), true),
            vec![pc_elr((0, -1, 6), vec![], Some(vec![1]), None)]
        );
        // A clean one changes nothing: it is in no ISR and leads nothing.
        assert!(super::broker_removed(&state, 2, &defaults(false), false).is_empty());
        state.apply_entry(
            next(&state),
            super::broker_removed(&state, 2, &defaults(false), true),
        );
        // Then neither 2 nor 3 may lead; 1 may.
        assert!(broker_unfenced(&state, 2, false).is_empty());
        assert_eq!(
            broker_unfenced(&state, 1, false),
            vec![pc_elr((0, 1, 7), vec![1], Some(vec![]), Some(vec![]))]
        );
    }

    #[test]
    fn elr_alter_partition_below_min_isr_makes_the_removed_members_eligible() {
        let state = cluster_elr(
            &[(vec![1, 2, 3], vec![1, 2, 3], 1)],
            &[(MIN_INSYNC_REPLICAS, "3")],
        );
        let (outcome, record) =
            alter_partition(&state, 1, 10, &item(5, 0, &[(1, 10), (2, 20)])).unwrap();
        assert_eq!((outcome.error, outcome.isr), (ErrorCode::NONE, vec![1, 2]));
        assert_eq!(
            record,
            Some(pc_elr((0, 1, 5), vec![1, 2], Some(vec![3]), None))
        );
    }

    #[test]
    fn elr_the_last_known_leader_leads_when_isr_and_elr_are_empty() {
        // RF 1 under the default min ISR 1: the broker's controlled shutdown empties the ISR
        // and keeps it eligible; back, it leads from the ELR.
        let mut state = cluster_elr(&[(vec![1], vec![1], 1)], &[]);
        assert_eq!(
            broker_removed(&state, 1, false),
            vec![pc_elr((0, -1, 6), vec![], Some(vec![1]), Some(vec![1]))]
        );
        fence(&mut state, 2, 1, false);
        assert_eq!(
            broker_unfenced(&state, 1, false),
            vec![pc_elr((0, 1, 7), vec![1], Some(vec![]), Some(vec![]))]
        );
        // Had it crashed, its registration takes it out of the ELR; LastKnownElr still names
        // it, and as the only replica that can come back it leads (Kafka 4.4's balanced
        // recovery, an unclean election).
        let mut state = cluster_elr(&[(vec![1], vec![1], 1)], &[]);
        fence(&mut state, 2, 1, false);
        state.apply_entry(
            next(&state),
            super::broker_removed(&state, 1, &defaults(false), true),
        );
        assert_eq!(elr_state(&state, 0), (-1, vec![], vec![], vec![1]));
        assert_eq!(
            broker_unfenced(&state, 1, false),
            vec![pc_elr((0, 1, 7), vec![1], None, Some(vec![]))]
        );
    }

    #[test]
    fn elr_an_unclean_election_forgets_the_elr() {
        // 4 eligible but fenced for good; 3 outside the ISR and ELR; once the topic allows
        // unclean elections, 3 leads alone, and the ELR goes.
        let mut state = cluster_elr(
            &[(vec![4, 3], vec![4], 4)],
            &[(UNCLEAN_LEADER_ELECTION_ENABLE, "false")],
        );
        // 4 is fenced already in `cluster_elr`; its removal empties the ISR.
        state.apply_entry(next(&state), broker_removed(&state, 4, false));
        assert_eq!(elr_state(&state, 0), (-1, vec![], vec![4], vec![4]));
        let state = {
            let mut s = state;
            s.apply_entry(
                next(&s),
                vec![MetadataRecord::Config {
                    topic_id: Uuid::from_u128(TOPIC),
                    name: UNCLEAN_LEADER_ELECTION_ENABLE.into(),
                    value: "true".into(),
                }],
            );
            s
        };
        assert_eq!(
            broker_unfenced(&state, 3, false),
            vec![pc_elr((0, 3, 7), vec![3], Some(vec![]), Some(vec![]))]
        );
    }

    #[test]
    fn elr_a_new_min_isr_clears_elr_and_last_known_elr() {
        let mut state = cluster_elr(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], MIN_ISR_2);
        for (index, broker) in [(2, 3), (3, 2)] {
            fence(&mut state, index, broker, false);
        }
        assert_eq!(elr_state(&state, 0), (1, vec![1], vec![2], vec![]));
        assert_eq!(
            min_isr_changed(&state, &Uuid::from_u128(TOPIC)),
            vec![pc_elr((0, 1, 5), vec![1], Some(vec![]), Some(vec![]))]
        );
        assert!(min_isr_changed(&state, &Uuid::from_u128(99)).is_empty());
    }

    #[test]
    fn elr_off_keeps_the_rules_before_kip_966() {
        let mut state = cluster(&[(vec![1, 2, 3], vec![1, 2, 3], 1)], MIN_ISR_2);
        fence(&mut state, 3, 3, false);
        fence(&mut state, 4, 2, false);
        assert_eq!(elr_state(&state, 0), (1, vec![1], vec![], vec![]));
        // The last member stays in the ISR.
        assert_eq!(
            broker_removed(&state, 1, false),
            vec![pc(0, -1, 6, vec![1])]
        );
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
