//! Topic, partition and config decisions (KRaft's ReplicationControlManager and
//! ConfigurationControlManager): checks against the current image and the records that carry
//! out a change. Pure functions of the image, so the active controller decides and every node
//! replays the same records.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sluice_config::topic::{self as topic_config, ConfigType};
use sluice_protocol::codec::Uuid;
use sluice_shard::{
    check_dynamic_broker_config, BrokerConfigChanges, ConfigOp, DeletedTopic, MetadataError,
    MetadataImage, NewPartitions, NewTopic, TopicConfigChanges, TopicRef, DYNAMIC_BROKER_CONFIGS,
};

use crate::metadata_state::MetadataState;
use crate::placement::{place_replicas, rack_alternated, PlacementBroker};
use crate::records::MetadataRecord;
use crate::topic_name::{collides, validate_topic_name};

/// Checks a topic to create against the image and the topics earlier in the same request.
pub fn check_new_topic(
    image: &MetadataImage,
    topic: &NewTopic,
    earlier_in_request: &[&str],
) -> Result<(), MetadataError> {
    validate_topic_name(&topic.name).map_err(MetadataError::InvalidTopic)?;
    if image.topic(&topic.name).is_some() || earlier_in_request.contains(&topic.name.as_str()) {
        return Err(MetadataError::TopicAlreadyExists(topic.name.clone()));
    }
    if let Some(other) = image
        .topics
        .keys()
        .find(|other| collides(other, &topic.name))
    {
        return Err(MetadataError::InvalidTopic(format!(
            "topic '{}' collides with existing topic '{other}' ('.' and '_' are interchangeable in metric names)",
            topic.name
        )));
    }
    if topic.num_partitions <= 0 {
        return Err(MetadataError::InvalidPartitions(format!(
            "number of partitions must be larger than 0, got {}",
            topic.num_partitions
        )));
    }
    // A manual assignment's sizes are checked per partition, in Kafka's words (an empty list).
    if topic.assignments.is_none() && topic.replication_factor <= 0 {
        return Err(MetadataError::InvalidReplicationFactor(format!(
            "replication factor must be larger than 0, got {}",
            topic.replication_factor
        )));
    }
    // Replicas go on live (unfenced) brokers only, as Kafka's StripedReplicaPlacer; its words
    // (Kafka 4.4's, which name cordoned log directories; Sluice has no cordoning).
    // A manual assignment is checked partition by partition instead (`manual_partition`).
    let brokers = image.brokers.len();
    if topic.assignments.is_none() && topic.replication_factor as usize > brokers {
        return Err(MetadataError::InvalidReplicationFactor(format!(
            "Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only {brokers} broker(s) are registered or some brokers have all their log directories cordoned.",
            rf = topic.replication_factor
        )));
    }
    for (name, value) in &topic.configs {
        topic_config::validate(name, value).map_err(MetadataError::InvalidConfig)?;
    }
    Ok(())
}

/// The records that take a broker resource (a broker id, or empty for the cluster-wide
/// default) from its dynamic configs to the changed ones (Kafka's BROKER ConfigRecords). Only
/// [`DYNAMIC_BROKER_CONFIGS`] change at run time; any other name is refused as Kafka refuses a
/// config it cannot update dynamically.
pub fn broker_config_records(
    image: &MetadataImage,
    changes: &BrokerConfigChanges,
) -> Result<Vec<MetadataRecord>, MetadataError> {
    let resource = &changes.resource_name;
    let static_names: Vec<&str> = changes
        .changes
        .iter()
        .map(|c| c.name.as_str())
        .filter(|name| !DYNAMIC_BROKER_CONFIGS.contains(name))
        .collect();
    if !static_names.is_empty() {
        return Err(MetadataError::InvalidRequest(format!(
            "Invalid config value for resource ConfigResource(type=BROKER, name='{resource}'): Cannot update these configs dynamically: Set({})",
            static_names.join(", ")
        )));
    }
    let mut seen = BTreeSet::new();
    for change in &changes.changes {
        if !seen.insert(change.name.as_str()) {
            return Err(MetadataError::InvalidRequest(format!(
                "Error due to duplicate config keys: {}",
                change.name
            )));
        }
    }
    let current = image
        .broker_configs
        .get(resource)
        .cloned()
        .unwrap_or_default();
    let mut configs = if changes.replace_all {
        BTreeMap::new()
    } else {
        current.clone()
    };
    for change in &changes.changes {
        let name = change.name.as_str();
        match &change.op {
            ConfigOp::Set(value) => {
                let value = check_dynamic_broker_config(name, value)
                    .map_err(MetadataError::InvalidConfig)?;
                configs.insert(name.to_string(), value);
            }
            ConfigOp::Delete => {
                configs.remove(name);
            }
            ConfigOp::Append(_) | ConfigOp::Subtract(_) => {
                let append = matches!(change.op, ConfigOp::Append(_));
                return Err(MetadataError::InvalidConfig(format!(
                    "Can't {} to key {name} because its type is not LIST.",
                    if append { "APPEND" } else { "SUBTRACT" }
                )));
            }
        }
    }
    let mut records = Vec::new();
    for (name, value) in &configs {
        if current.get(name) != Some(value) {
            records.push(MetadataRecord::BrokerConfig {
                resource_name: resource.clone(),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
    }
    for name in current.keys().filter(|name| !configs.contains_key(*name)) {
        records.push(MetadataRecord::BrokerConfig {
            resource_name: resource.clone(),
            name: name.clone(),
            value: None,
        });
    }
    Ok(records)
}

/// The records that take a topic from its current overrides to the changed ones; each topic's
/// changes are validated as a whole (Kafka's names, types and ranges).
pub fn config_records(
    image: &MetadataImage,
    changes: &TopicConfigChanges,
) -> Result<Vec<MetadataRecord>, MetadataError> {
    let topic = image
        .topic(&changes.topic)
        .ok_or(MetadataError::UnknownTopicOrPartition)?;
    let mut seen = BTreeSet::new();
    for change in &changes.changes {
        if !seen.insert(change.name.as_str()) {
            return Err(MetadataError::InvalidRequest(format!(
                "Error due to duplicate config keys: {}",
                change.name
            )));
        }
    }
    let mut configs = if changes.replace_all {
        BTreeMap::new()
    } else {
        topic.configs.clone()
    };
    for change in &changes.changes {
        let name = change.name.as_str();
        let def = topic_config::find(name).ok_or_else(|| {
            MetadataError::InvalidConfig(format!("Unknown topic config name: {name}"))
        })?;
        let checked =
            |value: &str| topic_config::validate(name, value).map_err(MetadataError::InvalidConfig);
        match &change.op {
            ConfigOp::Set(value) => {
                configs.insert(name.to_string(), checked(value)?);
            }
            ConfigOp::Delete => {
                configs.remove(name);
            }
            ConfigOp::Append(value) | ConfigOp::Subtract(value) => {
                let append = matches!(change.op, ConfigOp::Append(_));
                if def.config_type != ConfigType::List {
                    return Err(MetadataError::InvalidConfig(format!(
                        "Can't {} to key {name} because its type is not LIST.",
                        if append { "APPEND" } else { "SUBTRACT" }
                    )));
                }
                let current = configs
                    .get(name)
                    .map_or(def.default, String::as_str)
                    .to_string();
                let mut items = topic_config::split_list(&current);
                for item in topic_config::split_list(value) {
                    if append {
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    } else {
                        items.retain(|i| *i != item);
                    }
                }
                configs.insert(name.to_string(), checked(&items.join(","))?);
            }
        }
    }
    let topic_id = topic.topic_id;
    let mut records = Vec::new();
    for (name, value) in &configs {
        if topic.configs.get(name) != Some(value) {
            records.push(MetadataRecord::Config {
                topic_id,
                name: name.clone(),
                value: value.clone(),
            });
        }
    }
    for name in topic.configs.keys() {
        if !configs.contains_key(name) {
            records.push(MetadataRecord::RemoveConfig {
                topic_id,
                name: name.clone(),
            });
        }
    }
    Ok(records)
}

/// The topic a delete names.
pub fn find_topic(image: &MetadataImage, topic: &TopicRef) -> Result<DeletedTopic, MetadataError> {
    let image = match topic {
        TopicRef::Name(name) => image
            .topic(name)
            .ok_or(MetadataError::UnknownTopicOrPartition)?,
        TopicRef::Id(id) => image.topic_by_id(id).ok_or(MetadataError::UnknownTopicId)?,
    };
    Ok(DeletedTopic {
        name: image.name.clone(),
        topic_id: image.topic_id,
    })
}

/// CreatePartitions (KRaft's `ReplicationControlManager.createPartitions`): one result per
/// topic, in order, and the Partition records of every topic that may grow, together so that
/// the caller commits the whole request as one entry (a topic grows atomically; the records of
/// a refused topic are never among them). Error messages are Kafka 4.1's, word for word.
///
/// A name given twice is refused each time without being looked at (Kafka's controller does
/// the same before deciding). `partitions_max` (`sluice.broker.partitions.max`) bounds the
/// partitions any broker hosts, counting the ones granted earlier in the same request.
pub fn partition_increase(
    state: &MetadataState,
    topics: &[NewPartitions],
    partitions_max: usize,
) -> (Vec<Result<(), MetadataError>>, Vec<MetadataRecord>) {
    let mut occurrences: HashMap<&str, usize> = HashMap::new();
    for topic in topics {
        *occurrences.entry(topic.name.as_str()).or_default() += 1;
    }
    let mut hosted = hosted_per_broker(&state.image);
    let mut results = Vec::with_capacity(topics.len());
    let mut records = Vec::new();
    for topic in topics {
        let result = if occurrences[topic.name.as_str()] > 1 {
            Err(MetadataError::InvalidRequest(
                "Duplicate topic name.".into(),
            ))
        } else {
            new_partition_records(state, topic, &mut hosted, partitions_max)
                .map(|new| records.extend(new))
        };
        results.push(result);
    }
    (results, records)
}

/// Replicas per broker, over every partition of the image.
fn hosted_per_broker(image: &MetadataImage) -> BTreeMap<i32, usize> {
    let mut hosted = BTreeMap::new();
    for topic in image.topics.values() {
        for p in &topic.partitions {
            for r in &p.replicas {
                *hosted.entry(*r).or_insert(0) += 1;
            }
        }
    }
    hosted
}

/// The checks and records of one topic's increase; `hosted` takes the new replicas only when
/// the topic is accepted.
fn new_partition_records(
    state: &MetadataState,
    topic: &NewPartitions,
    hosted: &mut BTreeMap<i32, usize>,
    partitions_max: usize,
) -> Result<Vec<MetadataRecord>, MetadataError> {
    let image = state
        .image
        .topic(&topic.name)
        .ok_or(MetadataError::UnknownTopicOrPartition)?;
    let current = image.partitions.len();
    // i64: a negative count from the wire must compare as negative, not wrap.
    let count = i64::from(topic.count);
    if count == current as i64 {
        return Err(MetadataError::InvalidPartitions(format!(
            "Topic already has {current} partition(s)."
        )));
    }
    if count < current as i64 {
        return Err(MetadataError::InvalidPartitions(format!(
            "The topic {} currently has {current} partition(s); {count} would not be an increase.",
            topic.name
        )));
    }
    let additional = (count - current as i64) as usize;
    if let Some(assignments) = &topic.assignments {
        if assignments.len() != additional {
            return Err(MetadataError::InvalidReplicaAssignment(format!(
                "Attempted to add {additional} additional partition(s), but only {} assignment(s) were specified.",
                assignments.len()
            )));
        }
    }
    // The topic keeps the replication factor it has: that of its first partition.
    let Some(first) = image.partitions.first() else {
        // Cannot happen (a topic is created with at least one partition); refused rather than
        // guessed at, with Kafka's words for it.
        return Err(MetadataError::InvalidPartitions(format!(
            "Invalid state: topic {} appears to have no partitions.",
            topic.name
        )));
    };
    let replication_factor = first.replicas.len();
    // Replicas and ISR of each new partition, in partition order.
    let mut placed: Vec<(Vec<i32>, Vec<i32>)> = Vec::with_capacity(additional.min(1 << 16));
    match &topic.assignments {
        Some(assignments) => {
            for (i, replicas) in assignments.iter().enumerate() {
                placed.push(manual_partition(
                    state,
                    replicas,
                    replication_factor,
                    current + i,
                )?);
            }
        }
        None => {
            let brokers: Vec<PlacementBroker> = state
                .live_brokers()
                .map(|b| PlacementBroker {
                    id: b.broker_id,
                    rack: b.rack.clone(),
                })
                .collect();
            // Kafka's placer's checks, first; `place_replicas` needs 1 <= rf <= brokers.
            if brokers.is_empty() {
                return Err(MetadataError::InvalidReplicationFactor(
                    "All brokers are currently fenced.".into(),
                ));
            }
            if replication_factor == 0 {
                return Err(MetadataError::InvalidReplicationFactor(
                    "Invalid replication factor 0: the replication factor must be positive.".into(),
                ));
            }
            if replication_factor > brokers.len() {
                return Err(MetadataError::InvalidReplicationFactor(format!(
                    "The target replication factor of {replication_factor} cannot be reached because only {} broker(s) are registered or some brokers have all their log directories cordoned.",
                    brokers.len()
                )));
            }
            // A count the live brokers cannot hold within their budget is refused before
            // anything is placed, so a huge count costs no memory.
            let room: usize = brokers
                .iter()
                .map(|b| partitions_max.saturating_sub(hosted.get(&b.id).copied().unwrap_or(0)))
                .sum();
            if additional.saturating_mul(replication_factor) > room {
                return Err(MetadataError::InvalidPartitions(format!(
                    "{additional} more partitions of {replication_factor} replica(s) do not fit on the {} live broker(s) within sluice.broker.partitions.max ({partitions_max})",
                    brokers.len()
                )));
            }
            // Continue the topic's round robin where its partitions end (as Kafka's
            // AdminUtils did for added partitions): the same start as partition 0's leader,
            // placed over all partitions, of which the new ones are the tail. With the same
            // live brokers this is exactly how the topic would have been placed had it been
            // created this large.
            let start = first
                .replicas
                .first()
                .and_then(|leader| rack_alternated(&brokers).iter().position(|id| id == leader))
                .unwrap_or(0);
            let all = place_replicas(&brokers, current + additional, replication_factor, start);
            placed.extend(all.into_iter().skip(current).map(|r| (r.clone(), r)));
        }
    }
    let mut after = hosted.clone();
    for (replicas, _) in &placed {
        for id in replicas {
            *after.entry(*id).or_insert(0) += 1;
        }
    }
    if let Some((id, count)) = after.iter().find(|(_, count)| **count > partitions_max) {
        return Err(MetadataError::InvalidPartitions(format!(
            "{additional} more partitions would put {count} on broker {id}, above sluice.broker.partitions.max ({partitions_max})"
        )));
    }
    *hosted = after;
    Ok(placed
        .into_iter()
        .enumerate()
        .map(|(i, (replicas, isr))| MetadataRecord::Partition {
            topic_id: image.topic_id,
            partition: (current + i) as i32,
            leader: isr[0],
            isr,
            replicas,
            leader_epoch: 0,
        })
        .collect())
}

/// One manually assigned partition, checked as Kafka does (`validateManualPartitionAssignment`,
/// then a live replica): its replicas and its ISR, the live ones among them (fenced replicas
/// stay out of the ISR; the first of the ISR leads).
pub fn manual_partition(
    state: &MetadataState,
    replicas: &[i32],
    replication_factor: usize,
    partition: usize,
) -> Result<(Vec<i32>, Vec<i32>), MetadataError> {
    check_manual_assignment(state, replicas, replication_factor)?;
    let isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|id| state.brokers.get(id).is_some_and(|b| !b.fenced))
        .collect();
    if isr.is_empty() {
        return Err(MetadataError::InvalidReplicaAssignment(format!(
            "All brokers specified in the manual partition assignment for partition {partition} are fenced or in controlled shutdown."
        )));
    }
    Ok((replicas.to_vec(), isr))
}

/// Kafka's checks of one manually assigned partition (`validateManualPartitionAssignment`):
/// some replicas, each a registered broker, none twice, as many as the topic's other
/// partitions have.
fn check_manual_assignment(
    state: &MetadataState,
    replicas: &[i32],
    replication_factor: usize,
) -> Result<(), MetadataError> {
    if replicas.is_empty() {
        return Err(MetadataError::InvalidReplicaAssignment(
            "The manual partition assignment includes an empty replica list.".into(),
        ));
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    for (i, id) in sorted.iter().enumerate() {
        if !state.brokers.contains_key(id) {
            return Err(MetadataError::InvalidReplicaAssignment(format!(
                "The manual partition assignment includes broker {id}, but no such broker is registered."
            )));
        }
        if i > 0 && sorted[i - 1] == *id {
            return Err(MetadataError::InvalidReplicaAssignment(format!(
                "The manual partition assignment includes the broker {id} more than once."
            )));
        }
    }
    if sorted.len() != replication_factor {
        return Err(MetadataError::InvalidReplicaAssignment(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {replication_factor} replica(s).",
            sorted.len()
        )));
    }
    Ok(())
}

/// A fresh topic id.
pub fn new_topic_id() -> Uuid {
    loop {
        let id = Uuid(random_bytes());
        // Kafka reserves the zero id and ids whose base64 begins with '-' (command-line trouble).
        if id != Uuid::ZERO && id.0[0] & 0xfc != 0xf8 {
            return id;
        }
    }
}

/// A fresh cluster id.
pub fn new_cluster_id() -> String {
    Uuid(random_bytes()).to_string()
}

fn random_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    // getrandom(2) cannot fail for 16 bytes once the pool is initialised; fall back to the clock
    // (ids need uniqueness, not secrecy) if it ever does.
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_err()
    {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes = (nanos ^ (std::process::id() as u128) << 64).to_be_bytes();
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Broker `id` registered (epoch `id`), unfenced when `live`.
    fn broker(id: i32, rack: &str, live: bool) -> Vec<MetadataRecord> {
        let mut records = vec![MetadataRecord::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u128(id as u128),
            broker_epoch: i64::from(id),
            host: "127.0.0.1".into(),
            port: 9000 + id,
            rack: Some(rack.into()),
        }];
        if live {
            records.push(MetadataRecord::UnfenceBroker {
                broker_id: id,
                broker_epoch: i64::from(id),
            });
        }
        records
    }

    /// A topic whose partition `p` has the replicas `placement[p]`.
    fn topic(name: &str, id: u128, placement: &[Vec<i32>]) -> Vec<MetadataRecord> {
        let topic_id = Uuid::from_u128(id);
        let mut records = vec![MetadataRecord::Topic {
            name: name.into(),
            topic_id,
        }];
        for (p, replicas) in placement.iter().enumerate() {
            records.push(MetadataRecord::Partition {
                topic_id,
                partition: p as i32,
                replicas: replicas.clone(),
                isr: replicas.clone(),
                leader: replicas[0],
                leader_epoch: 0,
            });
        }
        records
    }

    fn state(records: Vec<MetadataRecord>) -> MetadataState {
        let mut state = MetadataState::new(1, 2);
        state.apply_entry(1, records);
        state
    }

    /// Brokers 1, 2 and 3 (all live) and topic "t" with partitions on 1 and 2.
    fn three_brokers() -> MetadataState {
        let mut records = Vec::new();
        for id in 1..=3 {
            records.extend(broker(id, "r", true));
        }
        records.extend(topic("t", 7, &[vec![1], vec![2]]));
        state(records)
    }

    fn grow(name: &str, count: i32, assignments: Option<Vec<Vec<i32>>>) -> NewPartitions {
        NewPartitions {
            name: name.into(),
            count,
            assignments,
        }
    }

    /// The one error of a one-topic request, and that nothing is to be written.
    fn refused(state: &MetadataState, topic: NewPartitions, max: usize) -> MetadataError {
        let (results, records) = partition_increase(state, &[topic], max);
        assert!(records.is_empty(), "{records:?}");
        match results.as_slice() {
            [Err(error)] => error.clone(),
            other => panic!("expected one error, got {other:?}"),
        }
    }

    fn message(error: MetadataError) -> String {
        match error {
            MetadataError::InvalidPartitions(m)
            | MetadataError::InvalidReplicaAssignment(m)
            | MetadataError::InvalidReplicationFactor(m)
            | MetadataError::InvalidRequest(m) => m,
            other => panic!("no message in {other:?}"),
        }
    }

    /// MirrorMaker 2 copies a Kafka 4.4 topic's configs as one IncrementalAlterConfigs: SET for the
    /// source's overrides, DELETE for every config it reports at its default, Kafka 4.4's newest
    /// names among them (share groups' dead-letter queue, tiered storage's copy lag, the
    /// decompressed record limit). Every one must be known, or the whole request fails.
    #[test]
    fn a_kafka_4_4_topics_whole_config_list_is_accepted() {
        use sluice_shard::ConfigChange;
        let state = three_brokers();
        let mut changes = vec![ConfigChange {
            name: "retention.ms".into(),
            op: ConfigOp::Set("3600000".into()),
        }];
        for name in [
            "errors.deadletterqueue.group.enable",
            "max.decompressed.message.bytes",
            "remote.copy.lag.bytes",
            "remote.copy.lag.ms",
            "cleanup.policy",
            "segment.bytes",
        ] {
            changes.push(ConfigChange {
                name: name.into(),
                op: ConfigOp::Delete,
            });
        }
        let request = TopicConfigChanges {
            topic: "t".into(),
            changes,
            replace_all: false,
        };
        let records = config_records(&state.image, &request).expect("accepted");
        assert_eq!(
            records,
            vec![MetadataRecord::Config {
                topic_id: Uuid::from_u128(7),
                name: "retention.ms".into(),
                value: "3600000".into(),
            }]
        );
        // Their values are checked as Kafka 4.4 checks them.
        for (name, value, accepted) in [
            ("errors.deadletterqueue.group.enable", "true", true),
            ("errors.deadletterqueue.group.enable", "yes", false),
            ("max.decompressed.message.bytes", "1048576", true),
            ("max.decompressed.message.bytes", "0", false),
            ("max.decompressed.message.bytes", "2147483640", false),
            ("remote.copy.lag.ms", "-1", true),
            ("remote.copy.lag.ms", "-2", false),
            ("remote.copy.lag.bytes", "-1", true),
            ("remote.copy.lag.bytes", "-2", false),
        ] {
            let request = TopicConfigChanges {
                topic: "t".into(),
                changes: vec![ConfigChange {
                    name: name.into(),
                    op: ConfigOp::Set(value.into()),
                }],
                replace_all: false,
            };
            let result = config_records(&state.image, &request);
            assert_eq!(result.is_ok(), accepted, "{name}={value}: {result:?}");
        }
        let unknown = TopicConfigChanges {
            topic: "t".into(),
            changes: vec![ConfigChange {
                name: "no.such.config".into(),
                op: ConfigOp::Delete,
            }],
            replace_all: false,
        };
        assert!(matches!(
            config_records(&state.image, &unknown),
            Err(MetadataError::InvalidConfig(m)) if m == "Unknown topic config name: no.such.config"
        ));
    }

    #[test]
    fn new_partitions_continue_the_round_robin_in_one_list_of_records() {
        let mut state = three_brokers();
        let (results, records) = partition_increase(&state, &[grow("t", 5, None)], 100);
        assert!(matches!(results.as_slice(), [Ok(())]), "{results:?}");
        // Partition 0 leads on broker 1, so the topic continues as if created with 5: 1,2,3,1,2.
        let expected: Vec<MetadataRecord> = [(2, 3), (3, 1), (4, 2)]
            .into_iter()
            .map(|(partition, node)| MetadataRecord::Partition {
                topic_id: Uuid::from_u128(7),
                partition,
                replicas: vec![node],
                isr: vec![node],
                leader: node,
                leader_epoch: 0,
            })
            .collect();
        assert_eq!(records, expected);
        // Applied as one entry, the topic has its 5 partitions, in order.
        state.apply_entry(2, records);
        let t = state.image.topic("t").unwrap();
        let parts: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
        assert_eq!(parts, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_count_must_grow() {
        let state = three_brokers();
        let error = refused(&state, grow("t", 2, None), 100);
        assert!(matches!(error, MetadataError::InvalidPartitions(_)));
        assert_eq!(message(error), "Topic already has 2 partition(s).");
        for (count, shown) in [(1, "1"), (0, "0"), (-5, "-5"), (i32::MIN, "-2147483648")] {
            let error = refused(&state, grow("t", count, None), 100);
            assert!(matches!(error, MetadataError::InvalidPartitions(_)));
            assert_eq!(
                message(error),
                format!(
                    "The topic t currently has 2 partition(s); {shown} would not be an increase."
                )
            );
        }
    }

    #[test]
    fn unknown_topics_are_refused() {
        let state = three_brokers();
        let error = refused(&state, grow("nope", 4, None), 100);
        assert!(matches!(error, MetadataError::UnknownTopicOrPartition));
    }

    #[test]
    fn a_duplicated_name_is_refused_each_time_and_the_others_still_grow() {
        let mut records = Vec::new();
        for id in 1..=3 {
            records.extend(broker(id, "r", true));
        }
        records.extend(topic("t", 7, &[vec![1]]));
        records.extend(topic("u", 8, &[vec![2]]));
        let state = state(records);
        let (results, records) = partition_increase(
            &state,
            &[grow("t", 3, None), grow("u", 2, None), grow("t", 4, None)],
            100,
        );
        assert_eq!(results.len(), 3);
        for i in [0, 2] {
            match &results[i] {
                Err(MetadataError::InvalidRequest(m)) => assert_eq!(m, "Duplicate topic name."),
                other => panic!("{other:?}"),
            }
        }
        assert!(results[1].is_ok());
        assert_eq!(records.len(), 1);
        assert!(matches!(
            &records[0],
            MetadataRecord::Partition { topic_id, partition: 1, .. } if *topic_id == Uuid::from_u128(8)
        ));
    }

    #[test]
    fn manual_assignments_are_used_as_given() {
        let state = three_brokers();
        let (results, records) =
            partition_increase(&state, &[grow("t", 4, Some(vec![vec![3], vec![3]]))], 100);
        assert!(matches!(results.as_slice(), [Ok(())]));
        let placed: Vec<(i32, Vec<i32>, i32)> = records
            .iter()
            .map(|r| match r {
                MetadataRecord::Partition {
                    partition,
                    replicas,
                    leader,
                    ..
                } => (*partition, replicas.clone(), *leader),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(placed, vec![(2, vec![3], 3), (3, vec![3], 3)]);
    }

    #[test]
    fn manual_assignments_must_cover_the_new_partitions_exactly() {
        let state = three_brokers();
        for given in [vec![vec![1]], vec![vec![1], vec![2], vec![3], vec![1]]] {
            let n = given.len();
            let error = refused(&state, grow("t", 5, Some(given)), 100);
            assert!(matches!(error, MetadataError::InvalidReplicaAssignment(_)));
            assert_eq!(
                message(error),
                format!(
                    "Attempted to add 3 additional partition(s), but only {n} assignment(s) were specified."
                )
            );
        }
    }

    #[test]
    fn manual_assignments_follow_kafkas_rules() {
        // Brokers 1, 2 live, 3 registered but fenced; topic "w" has 2 replicas per partition.
        let mut records = broker(1, "r", true);
        records.extend(broker(2, "r", true));
        records.extend(broker(3, "r", false));
        records.extend(topic("w", 9, &[vec![1, 2]]));
        let state = state(records);
        let cases: Vec<(Vec<i32>, String)> = vec![
            (
                vec![],
                "The manual partition assignment includes an empty replica list.".into(),
            ),
            (
                vec![2, 9],
                "The manual partition assignment includes broker 9, but no such broker is registered."
                    .into(),
            ),
            (
                vec![2, 2],
                "The manual partition assignment includes the broker 2 more than once.".into(),
            ),
            (
                vec![1],
                "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."
                    .into(),
            ),
            (
                vec![1, 2, 3],
                "The manual partition assignment includes a partition with 3 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."
                    .into(),
            ),
        ];
        for (replicas, expected) in cases {
            let error = refused(&state, grow("w", 2, Some(vec![replicas.clone()])), 100);
            assert!(
                matches!(error, MetadataError::InvalidReplicaAssignment(_)),
                "{replicas:?}: {error:?}"
            );
            assert_eq!(message(error), expected, "{replicas:?}");
        }
        // A fenced replica is kept but stays out of the ISR; the leader is the first live one.
        let (results, records) =
            partition_increase(&state, &[grow("w", 2, Some(vec![vec![3, 2]]))], 100);
        assert!(matches!(results.as_slice(), [Ok(())]));
        assert_eq!(
            records,
            vec![MetadataRecord::Partition {
                topic_id: Uuid::from_u128(9),
                partition: 1,
                replicas: vec![3, 2],
                isr: vec![2],
                leader: 2,
                leader_epoch: 0,
            }]
        );
    }

    #[test]
    fn a_manual_partition_needs_a_live_replica() {
        let mut records = broker(1, "r", true);
        records.extend(broker(3, "r", false));
        records.extend(topic("t", 7, &[vec![1]]));
        let state = state(records);
        let error = refused(&state, grow("t", 3, Some(vec![vec![1], vec![3]])), 100);
        assert!(matches!(error, MetadataError::InvalidReplicaAssignment(_)));
        assert_eq!(
            message(error),
            "All brokers specified in the manual partition assignment for partition 2 are fenced or in controlled shutdown."
        );
    }

    #[test]
    fn placement_needs_enough_live_brokers() {
        let mut records = broker(1, "r", false);
        records.extend(topic("t", 7, &[vec![1]]));
        let error = refused(&state(records), grow("t", 2, None), 100);
        assert!(matches!(error, MetadataError::InvalidReplicationFactor(_)));
        assert_eq!(message(error), "All brokers are currently fenced.");

        let mut records = broker(1, "r", true);
        records.extend(broker(2, "r", false));
        records.extend(topic("w", 9, &[vec![1, 2]]));
        let error = refused(&state(records), grow("w", 2, None), 100);
        assert!(matches!(error, MetadataError::InvalidReplicationFactor(_)));
        assert_eq!(
            message(error),
            "The target replication factor of 2 cannot be reached because only 1 broker(s) are registered or some brokers have all their log directories cordoned."
        );
    }

    #[test]
    fn the_broker_partition_budget_holds_across_the_request() {
        // One broker, budget 5: "t" has 2 partitions, "u" 1.
        let mut records = broker(1, "r", true);
        records.extend(topic("t", 7, &[vec![1], vec![1]]));
        records.extend(topic("u", 8, &[vec![1]]));
        let state = state(records);
        // "t" takes the 2 places left; "u" then finds none, by placement or by hand.
        let (results, records) =
            partition_increase(&state, &[grow("t", 4, None), grow("u", 2, None)], 5);
        assert!(results[0].is_ok(), "{results:?}");
        assert!(matches!(
            &results[1],
            Err(MetadataError::InvalidPartitions(_))
        ));
        assert_eq!(records.len(), 2);
        let (results, _) = partition_increase(
            &state,
            &[grow("t", 4, None), grow("u", 2, Some(vec![vec![1]]))],
            5,
        );
        match &results[1] {
            Err(MetadataError::InvalidPartitions(m)) => assert_eq!(
                m,
                "1 more partitions would put 6 on broker 1, above sluice.broker.partitions.max (5)"
            ),
            other => panic!("{other:?}"),
        }
        // A count far beyond the budget is refused before anything is placed.
        let error = refused(&state, grow("t", i32::MAX, None), 5);
        assert!(
            matches!(error, MetadataError::InvalidPartitions(_)),
            "{error:?}"
        );
    }
}
