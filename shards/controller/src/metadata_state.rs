//! The metadata state one node rebuilds from the committed metadata log (KRaft's
//! MetadataDelta applied to the MetadataImage): topics, partitions, configs, broker
//! registrations and the producer-id high mark.
//!
//! Every node applies the same committed records in the same order: the controllers to decide
//! the next changes, the brokers to build the image their shards serve. What differs per node is
//! only the local view: which partitions live on this node and on which of its shards.

use std::collections::{BTreeMap, HashMap};

use sluice_protocol::codec::Uuid;
use sluice_shard::{BrokerImage, MetadataImage, PartitionImage, ShardId, TopicImage};
use tracing::warn;

use crate::records::MetadataRecord;

/// A broker as registered in the metadata log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerRegistration {
    /// `node.id`.
    pub broker_id: i32,
    /// The process start that registered.
    pub incarnation_id: Uuid,
    /// The registration's epoch.
    pub broker_epoch: i64,
    /// Advertised client host.
    pub host: String,
    /// Advertised client port.
    pub port: i32,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// Fenced brokers lead nothing and are not shown to clients.
    pub fenced: bool,
    /// Index of the entry that registered it: the broker is caught up once it applied it.
    pub registered_index: u64,
}

/// The state rebuilt from the log.
pub struct MetadataState {
    /// The image handed to shards (topics, live brokers, local shard table).
    pub image: MetadataImage,
    /// Every registered broker, fenced or not.
    pub brokers: BTreeMap<i32, BrokerRegistration>,
    /// The first producer id not yet handed out.
    pub next_producer_id: i64,
    /// The highest broker epoch given out.
    pub broker_epoch_max: i64,
    /// Index of the last applied metadata log entry.
    pub applied_index: u64,
    /// Local partitions per shard, for placing new ones on the emptiest.
    pub(crate) shard_load: Vec<usize>,
    local_shards: HashMap<(Uuid, i32), ShardId>,
}

impl MetadataState {
    /// An empty state for node `local_node_id` with `shard_count` data shards (0 for a
    /// controller-only process).
    pub fn new(local_node_id: i32, shard_count: usize) -> MetadataState {
        let image = MetadataImage {
            local_node_id,
            controller_id: -1,
            finalized_features: sluice_shard::default_finalized_features(),
            ..MetadataImage::default()
        };
        MetadataState {
            image,
            brokers: BTreeMap::new(),
            next_producer_id: 0,
            broker_epoch_max: 0,
            applied_index: 0,
            shard_load: vec![0; shard_count.max(1)],
            local_shards: HashMap::new(),
        }
    }

    /// Applies one committed entry's records.
    pub fn apply_entry(&mut self, index: u64, records: Vec<MetadataRecord>) {
        assert!(
            index > self.applied_index,
            "entry {index} applied after {}",
            self.applied_index
        );
        let mut touched: BTreeMap<Uuid, TopicImage> = BTreeMap::new();
        let mut brokers_changed = false;
        for record in records {
            brokers_changed |= self.apply(index, record, &mut touched);
        }
        for (_, topic) in touched {
            self.image.put_topic(topic);
        }
        if brokers_changed {
            self.refresh_live_brokers();
        }
        self.applied_index = index;
        self.image.offset = index as i64;
    }

    /// Records that no longer change anything still advance the applied index (a new leader's
    /// empty entry).
    pub fn skip_entry(&mut self, index: u64) {
        assert!(index > self.applied_index);
        self.applied_index = index;
        self.image.offset = index as i64;
    }

    /// Unfenced brokers, sorted by id.
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.brokers.values().filter(|b| !b.fenced)
    }

    /// Returns whether the broker set changed.
    fn apply(
        &mut self,
        index: u64,
        record: MetadataRecord,
        touched: &mut BTreeMap<Uuid, TopicImage>,
    ) -> bool {
        match record {
            MetadataRecord::ClusterId { cluster_id } => self.image.cluster_id = cluster_id,
            MetadataRecord::Topic { name, topic_id } => {
                touched.insert(
                    topic_id,
                    TopicImage {
                        name,
                        topic_id,
                        partitions: Vec::new(),
                        configs: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
            } => {
                let local = replicas.contains(&self.image.local_node_id);
                let shard = self.place_local(topic_id, partition, local);
                let Some(topic) = self.touch(topic_id, touched) else {
                    warn!(%topic_id, "partition record for an unknown topic; skipped");
                    return false;
                };
                topic.partitions.retain(|p| p.partition != partition);
                topic.partitions.push(PartitionImage {
                    partition,
                    leader,
                    leader_epoch,
                    partition_epoch: 0,
                    replicas,
                    isr,
                    // A new partition's ISR is its replicas: no ELR yet (as Kafka's
                    // PartitionRecord at creation).
                    eligible_leader_replicas: Vec::new(),
                    last_known_elr: Vec::new(),
                    adding_replicas: Vec::new(),
                    removing_replicas: Vec::new(),
                    shard,
                });
                topic.partitions.sort_by_key(|p| p.partition);
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                leader_epoch,
                isr,
                eligible_leader_replicas,
                last_known_elr,
            } => {
                let Some(p) = self.changed_partition(topic_id, partition, touched) else {
                    return false;
                };
                p.leader = leader;
                p.leader_epoch = leader_epoch;
                p.isr = isr;
                // Absent means unchanged (Kafka's nullable tagged fields).
                if let Some(elr) = eligible_leader_replicas {
                    p.eligible_leader_replicas = elr;
                }
                if let Some(last_known_elr) = last_known_elr {
                    p.last_known_elr = last_known_elr;
                }
                // As KRaft's PartitionRegistration.merge: every change is a new version, which
                // an AlterPartition must name.
                p.partition_epoch += 1;
            }
            MetadataRecord::PartitionAssignmentChange {
                topic_id,
                partition,
                leader,
                leader_epoch,
                isr,
                replicas,
                adding_replicas,
                removing_replicas,
            } => {
                // A broker newly named in the replicas hosts the partition from now on (on the
                // emptiest shard); one no longer named stops hosting it.
                let local = replicas.contains(&self.image.local_node_id);
                let shard = if local {
                    self.place_local(topic_id, partition, true)
                } else {
                    self.forget_local_partition(topic_id, partition);
                    ShardId(0)
                };
                let Some(p) = self.changed_partition(topic_id, partition, touched) else {
                    return false;
                };
                p.leader = leader;
                p.leader_epoch = leader_epoch;
                p.isr = isr;
                p.replicas = replicas;
                p.adding_replicas = adding_replicas;
                p.removing_replicas = removing_replicas;
                p.shard = shard;
                p.partition_epoch += 1;
            }
            MetadataRecord::Config {
                topic_id,
                name,
                value,
            } => {
                if let Some(topic) = self.touch(topic_id, touched) {
                    topic.configs.insert(name, value);
                }
            }
            MetadataRecord::RemoveConfig { topic_id, name } => {
                if let Some(topic) = self.touch(topic_id, touched) {
                    topic.configs.remove(&name);
                }
            }
            MetadataRecord::BrokerConfig {
                resource_name,
                name,
                value,
            } => {
                let configs = self.image.broker_configs.entry(resource_name.clone());
                match value {
                    Some(value) => {
                        configs.or_default().insert(name, value);
                    }
                    None => {
                        if let std::collections::btree_map::Entry::Occupied(mut entry) = configs {
                            entry.get_mut().remove(&name);
                            if entry.get().is_empty() {
                                entry.remove();
                            }
                        }
                    }
                }
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                self.next_producer_id = self.next_producer_id.max(next_producer_id);
            }
            MetadataRecord::FeatureLevel {
                name,
                feature_level,
            } => {
                // Level 0 is "off": Kafka drops the feature from the finalized set.
                if feature_level == 0 {
                    self.image.finalized_features.remove(&name);
                } else {
                    self.image.finalized_features.insert(name, feature_level);
                }
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                touched.remove(&topic_id);
                if let Some(name) = self.image.topic_names.get(&topic_id).cloned() {
                    self.image.remove_topic(&name);
                }
                self.forget_local(topic_id);
            }
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
            } => {
                self.broker_epoch_max = self.broker_epoch_max.max(broker_epoch);
                self.brokers.insert(
                    broker_id,
                    BrokerRegistration {
                        broker_id,
                        incarnation_id,
                        broker_epoch,
                        host,
                        port,
                        rack,
                        fenced: true,
                        registered_index: index,
                    },
                );
                return true;
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => return self.set_fenced(broker_id, broker_epoch, true),
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => return self.set_fenced(broker_id, broker_epoch, false),
        }
        false
    }

    fn set_fenced(&mut self, broker_id: i32, broker_epoch: i64, fenced: bool) -> bool {
        match self.brokers.get_mut(&broker_id) {
            Some(b) if b.broker_epoch == broker_epoch => {
                b.fenced = fenced;
                true
            }
            // A record for an older registration: the broker registered again since.
            _ => false,
        }
    }

    fn refresh_live_brokers(&mut self) {
        let image_of = |b: &BrokerRegistration| BrokerImage {
            node_id: b.broker_id,
            host: b.host.clone(),
            port: b.port,
            rack: b.rack.clone(),
            broker_epoch: b.broker_epoch,
        };
        self.image.brokers = self.live_brokers().map(image_of).collect();
        // DescribeCluster v2 lists these when asked (KIP-1073).
        self.image.fenced_brokers = self
            .brokers
            .values()
            .filter(|b| b.fenced)
            .map(image_of)
            .collect();
    }

    /// The shard of a partition hosted here: kept once given, new ones go to the emptiest
    /// shard. Only this process uses the choice, so it is not in the log.
    fn place_local(&mut self, topic_id: Uuid, partition: i32, local: bool) -> ShardId {
        let tp = (topic_id, partition);
        if let Some(shard) = self.local_shards.get(&tp) {
            return *shard;
        }
        if !local {
            return ShardId(0);
        }
        let (index, _) = self
            .shard_load
            .iter()
            .enumerate()
            .min_by_key(|(i, load)| (**load, *i))
            .expect("at least one shard");
        self.shard_load[index] += 1;
        let shard = ShardId(index as u16);
        self.local_shards.insert(tp, shard);
        shard
    }

    /// A partition whose replicas no longer include this broker (a reassignment moved it).
    fn forget_local_partition(&mut self, topic_id: Uuid, partition: i32) {
        if let Some(shard) = self.local_shards.remove(&(topic_id, partition)) {
            self.shard_load[shard.index()] -= 1;
        }
    }

    fn forget_local(&mut self, topic_id: Uuid) {
        let shard_load = &mut self.shard_load;
        self.local_shards.retain(|tp, shard| {
            let keep = tp.0 != topic_id;
            if !keep {
                shard_load[shard.index()] -= 1;
            }
            keep
        });
    }

    /// The partition a change record names, in the copy of its topic being changed; an
    /// unknown topic or partition is logged and the record skipped.
    fn changed_partition<'a>(
        &self,
        topic_id: Uuid,
        partition: i32,
        touched: &'a mut BTreeMap<Uuid, TopicImage>,
    ) -> Option<&'a mut PartitionImage> {
        let Some(topic) = self.touch(topic_id, touched) else {
            warn!(%topic_id, "partition change for an unknown topic; skipped");
            return None;
        };
        let found = topic
            .partitions
            .iter_mut()
            .find(|p| p.partition == partition);
        if found.is_none() {
            warn!(%topic_id, partition, "change of an unknown partition; skipped");
        }
        found
    }

    fn touch<'a>(
        &self,
        topic_id: Uuid,
        touched: &'a mut BTreeMap<Uuid, TopicImage>,
    ) -> Option<&'a mut TopicImage> {
        match touched.entry(topic_id) {
            std::collections::btree_map::Entry::Occupied(entry) => Some(entry.into_mut()),
            std::collections::btree_map::Entry::Vacant(entry) => {
                let existing = self.image.topic_by_id(&topic_id)?;
                Some(entry.insert(TopicImage::clone(existing)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_level_records_set_and_remove_finalized_levels() {
        let mut state = MetadataState::new(1, 1);
        assert_eq!(
            state.image.finalized_features,
            sluice_shard::default_finalized_features()
        );
        let level = |name: &str, feature_level| MetadataRecord::FeatureLevel {
            name: name.into(),
            feature_level,
        };
        state.apply_entry(
            1,
            vec![level("group.version", 1), level("metadata.version", 7)],
        );
        assert_eq!(
            state.image.finalized_features.get("group.version"),
            Some(&1)
        );
        assert_eq!(
            state.image.finalized_features.get("metadata.version"),
            Some(&7)
        );
        // Level 0 is "off": gone from the finalized set, as Kafka replays it.
        state.apply_entry(2, vec![level("group.version", 0)]);
        assert_eq!(state.image.finalized_features.get("group.version"), None);
        assert_eq!(state.image.offset, 2);
    }

    fn register(id: i32, epoch: i64) -> MetadataRecord {
        MetadataRecord::RegisterBroker {
            broker_id: id,
            incarnation_id: Uuid::from_u128(id as u128),
            broker_epoch: epoch,
            host: "127.0.0.1".into(),
            port: 9000 + id,
            rack: None,
        }
    }

    #[test]
    fn brokers_start_fenced_and_only_live_ones_are_in_the_image() {
        let mut state = MetadataState::new(4, 2);
        state.apply_entry(1, vec![register(4, 1), register(5, 2)]);
        assert!(state.image.brokers.is_empty());
        let fenced: Vec<i32> = state
            .image
            .fenced_brokers
            .iter()
            .map(|b| b.node_id)
            .collect();
        assert_eq!(fenced, vec![4, 5]);
        state.apply_entry(
            2,
            vec![MetadataRecord::UnfenceBroker {
                broker_id: 5,
                broker_epoch: 2,
            }],
        );
        assert_eq!(state.image.brokers.len(), 1);
        assert_eq!(state.image.brokers[0].node_id, 5);
        assert_eq!(state.image.fenced_brokers.len(), 1);
        assert_eq!(state.image.fenced_brokers[0].node_id, 4);
        // A fence for an older registration changes nothing.
        state.apply_entry(3, vec![register(5, 3)]);
        state.apply_entry(
            4,
            vec![MetadataRecord::UnfenceBroker {
                broker_id: 5,
                broker_epoch: 2,
            }],
        );
        assert!(state.image.brokers.is_empty());
        assert_eq!(state.broker_epoch_max, 3);
    }

    #[test]
    fn local_partitions_spread_over_shards_and_remote_ones_are_not_hosted() {
        let topic_id = Uuid::from_u128(7);
        let mut state = MetadataState::new(4, 2);
        let mut records = vec![MetadataRecord::Topic {
            name: "t".into(),
            topic_id,
        }];
        for p in 0..6 {
            let node = if p % 3 == 0 { 5 } else { 4 };
            records.push(MetadataRecord::Partition {
                topic_id,
                partition: p,
                replicas: vec![node],
                isr: vec![node],
                leader: node,
                leader_epoch: 0,
            });
        }
        state.apply_entry(1, records);
        let shards: Vec<u16> = (0..6)
            .filter(|p| p % 3 != 0)
            .map(|p| state.local_shards[&(topic_id, p)].0)
            .collect();
        assert_eq!(shards, vec![0, 1, 0, 1]);
        assert_eq!(state.shard_load, vec![2, 2]);
        state.apply_entry(
            2,
            vec![MetadataRecord::PartitionChange {
                topic_id,
                partition: 1,
                leader: -1,
                leader_epoch: 1,
                isr: vec![4],
                eligible_leader_replicas: None,
                last_known_elr: None,
            }],
        );
        let p1 = &state.image.topic("t").unwrap().partitions[1];
        assert_eq!((p1.leader, p1.leader_epoch, p1.shard), (-1, 1, ShardId(0)));
        // The ELR fields change only when the record carries them (Kafka's nullable tagged
        // fields); every change is a new partition epoch.
        let change = |elr: Option<Vec<i32>>, last_known_elr: Option<Vec<i32>>| {
            vec![MetadataRecord::PartitionChange {
                topic_id,
                partition: 1,
                leader: -1,
                leader_epoch: 1,
                isr: vec![],
                eligible_leader_replicas: elr,
                last_known_elr,
            }]
        };
        state.apply_entry(3, change(Some(vec![4, 5]), Some(vec![4])));
        state.apply_entry(4, change(None, None));
        let p1 = &state.image.topic("t").unwrap().partitions[1];
        assert_eq!(
            (
                p1.isr.clone(),
                p1.eligible_leader_replicas.clone(),
                p1.last_known_elr.clone()
            ),
            (vec![], vec![4, 5], vec![4])
        );
        assert_eq!(p1.partition_epoch, 3);
        state.apply_entry(5, change(Some(vec![]), None));
        let p1 = &state.image.topic("t").unwrap().partitions[1];
        assert_eq!(
            (
                p1.eligible_leader_replicas.clone(),
                p1.last_known_elr.clone()
            ),
            (vec![], vec![4])
        );
        state.apply_entry(6, vec![MetadataRecord::RemoveTopic { topic_id }]);
        assert_eq!(state.shard_load, vec![0, 0]);
        assert!(state.image.topic("t").is_none());
    }
}
