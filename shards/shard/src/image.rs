//! The metadata image: the cluster as the controller last published it. Every shard holds the
//! same immutable image (an `Arc`), replaced whole on each metadata update, so reading it needs
//! no lock and no cross-shard trip.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sluice_protocol::codec::Uuid;
use sluice_replica::{PartitionMap, TopicIdPartition};

use crate::ShardId;

/// A broker as clients see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerImage {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: i32,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
    /// The epoch of its current registration: a replica's fetches and the leader's ISR
    /// changes (AlterPartition) carry it, so that a restarted broker's old self is told apart.
    pub broker_epoch: i64,
}

/// One partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionImage {
    /// Partition index.
    pub partition: i32,
    /// Leader node id; -1 when the partition has no leader (its broker is fenced or gone).
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Partition epoch (KRaft's): 0 at creation, one more for every change of its leader or
    /// ISR. An AlterPartition must name the current one.
    pub partition_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids (empty when every member left with ELR on: KIP-966).
    pub isr: Vec<i32>,
    /// Eligible leader replicas (KIP-966): replicas that left the ISR while it was below
    /// `min.insync.replicas`, so hold everything committed, and may lead once the ISR is empty.
    pub eligible_leader_replicas: Vec<i32>,
    /// Last known ELR (KIP-966; as Kafka 4.4 keeps it: the last leader once the ISR emptied).
    pub last_known_elr: Vec<i32>,
    /// Replicas a reassignment in progress adds (KIP-455); empty when none is.
    pub adding_replicas: Vec<i32>,
    /// Replicas a reassignment in progress removes once the added ones are in the ISR.
    pub removing_replicas: Vec<i32>,
    /// The shard that owns it on the broker hosting it, chosen once at creation and recorded.
    /// Meaningful only for partitions whose `replicas` contain this broker.
    pub shard: ShardId,
}

/// One topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicImage {
    /// Name.
    pub name: String,
    /// Id.
    pub topic_id: Uuid,
    /// Partitions, indexed by partition number.
    pub partitions: Vec<PartitionImage>,
    /// Topic-level config overrides.
    pub configs: BTreeMap<String, String>,
}

impl TopicImage {
    /// Partition `index`, if the topic has it (`partitions` is indexed by partition number).
    pub fn partition(&self, index: i32) -> Option<&PartitionImage> {
        let p = self.partitions.get(usize::try_from(index).ok()?)?;
        (p.partition == index).then_some(p)
    }
}

/// Partition → owning shard for the partitions that have data on this broker (those whose
/// replicas include it), as every core holds it.
#[derive(Clone, Debug, Default)]
pub struct ShardTable {
    owners: PartitionMap<ShardId>,
}

impl ShardTable {
    /// The shard owning `tp`, if the partition exists.
    pub fn shard_of(&self, tp: &TopicIdPartition) -> Option<ShardId> {
        self.owners.get(tp).copied()
    }

    /// Partitions owned by `shard`.
    pub fn partitions_of(&self, shard: ShardId) -> impl Iterator<Item = TopicIdPartition> + '_ {
        self.owners
            .iter()
            .filter(move |(_, owner)| **owner == shard)
            .map(|(tp, _)| *tp)
    }

    /// Number of partitions per shard, for placing new ones.
    pub fn load(&self, shard_count: usize) -> Vec<usize> {
        let mut load = vec![0; shard_count];
        for owner in self.owners.values() {
            if let Some(slot) = load.get_mut(owner.index()) {
                *slot += 1;
            }
        }
        load
    }
}

/// The cluster metadata image.
#[derive(Clone, Debug, Default)]
pub struct MetadataImage {
    /// Offset of the last metadata record applied.
    pub offset: i64,
    /// The cluster id.
    pub cluster_id: String,
    /// This broker's `node.id`. It decides which partitions enter `shard_table`, and the
    /// filter is applied as topics are put: set it before the first `put_topic`.
    pub local_node_id: i32,
    /// Node id of the active controller. Clients are not told this id (see
    /// `client_controller_id`).
    pub controller_id: i32,
    /// Live brokers (registered and unfenced), sorted by node id. This broker is missing from
    /// it while fenced.
    pub brokers: Vec<BrokerImage>,
    /// Registered brokers that are fenced, sorted by node id: shown only to a DescribeCluster
    /// v2+ that asks for them (KIP-1073), never offered as leaders or endpoints.
    pub fenced_brokers: Vec<BrokerImage>,
    /// Topics by name.
    pub topics: BTreeMap<String, Arc<TopicImage>>,
    /// Topic names by id.
    pub topic_names: HashMap<Uuid, String>,
    /// Owners of the partitions hosted on this broker.
    pub shard_table: ShardTable,
    /// Finalized feature levels above 0 (FeatureLevel records; `metadata.version` always).
    pub finalized_features: BTreeMap<String, i16>,
    /// Dynamic broker configs by resource name: a broker id as text, or empty for the
    /// cluster-wide default (KRaft's BROKER ConfigRecords).
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
}

impl MetadataImage {
    /// Looks a topic up by name.
    pub fn topic(&self, name: &str) -> Option<&Arc<TopicImage>> {
        self.topics.get(name)
    }

    /// Broker `node_id`'s dynamic config `name`: its own value, else the cluster-wide default,
    /// with whether it is the default (Kafka's DYNAMIC_BROKER_CONFIG or
    /// DYNAMIC_DEFAULT_BROKER_CONFIG).
    pub fn dynamic_broker_config(&self, node_id: i32, name: &str) -> Option<(&str, bool)> {
        let own = self
            .broker_configs
            .get(&node_id.to_string())
            .and_then(|c| c.get(name));
        match own {
            Some(value) => Some((value, false)),
            None => self
                .broker_configs
                .get("")
                .and_then(|c| c.get(name))
                .map(|v| (v.as_str(), true)),
        }
    }

    /// Looks a topic up by id.
    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Arc<TopicImage>> {
        self.topic_names
            .get(id)
            .and_then(|name| self.topics.get(name))
    }

    /// The live broker `node_id`, if it is one.
    pub fn broker(&self, node_id: i32) -> Option<&BrokerImage> {
        self.brokers.iter().find(|b| b.node_id == node_id)
    }

    /// The registered broker `node_id`, live or fenced: a fenced broker still has its
    /// registration's epoch (its replicas fetch with it, and it is fenced by it).
    pub fn registered_broker(&self, node_id: i32) -> Option<&BrokerImage> {
        self.broker(node_id)
            .or_else(|| self.fenced_brokers.iter().find(|b| b.node_id == node_id))
    }

    /// Whether `node_id` is a live broker.
    pub fn is_live(&self, node_id: i32) -> bool {
        self.broker(node_id).is_some()
    }

    /// The controller id told to clients (Metadata, DescribeCluster). As a KRaft broker in
    /// Kafka, a live broker rather than the active controller, which clients cannot reach:
    /// they send controller-bound requests to it and it forwards them. This broker when it is
    /// live (no extra hop), else the lowest live id, else -1.
    pub fn client_controller_id(&self) -> i32 {
        if self.is_live(self.local_node_id) {
            return self.local_node_id;
        }
        self.brokers.iter().map(|b| b.node_id).min().unwrap_or(-1)
    }

    /// Adds or replaces a topic, keeping the indexes in step. Only partitions with a replica
    /// on this broker (`local_node_id`) enter the shard table: those are the ones with data
    /// here, which the shards open.
    pub fn put_topic(&mut self, topic: TopicImage) {
        // A replaced topic may have lost partitions here (or been recreated under a new id):
        // drop its old entries before adding the new ones.
        if let Some(old) = self.topics.get(&topic.name).cloned() {
            for p in &old.partitions {
                self.shard_table.owners.remove(&TopicIdPartition {
                    topic_id: old.topic_id,
                    partition: p.partition,
                });
            }
            if old.topic_id != topic.topic_id {
                self.topic_names.remove(&old.topic_id);
            }
        }
        for p in &topic.partitions {
            if !p.replicas.contains(&self.local_node_id) {
                continue;
            }
            let tp = TopicIdPartition {
                topic_id: topic.topic_id,
                partition: p.partition,
            };
            self.shard_table.owners.insert(tp, p.shard);
        }
        self.topic_names.insert(topic.topic_id, topic.name.clone());
        self.topics.insert(topic.name.clone(), Arc::new(topic));
    }

    /// Removes a topic and its partitions.
    pub fn remove_topic(&mut self, name: &str) -> Option<Arc<TopicImage>> {
        let topic = self.topics.remove(name)?;
        self.topic_names.remove(&topic.topic_id);
        self.shard_table
            .owners
            .retain(|tp, _| tp.topic_id != topic.topic_id);
        Some(topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This broker's node id in the tests.
    const LOCAL: i32 = 1;

    /// A topic whose partitions are all led by `LOCAL`, on the given shards.
    fn topic(name: &str, id: u128, shards: &[u16]) -> TopicImage {
        let hosts: Vec<(i32, u16)> = shards.iter().map(|s| (LOCAL, *s)).collect();
        topic_on(name, id, &hosts)
    }

    /// A topic with one replica per partition: (node id, shard on that node).
    fn topic_on(name: &str, id: u128, hosts: &[(i32, u16)]) -> TopicImage {
        TopicImage {
            name: name.to_string(),
            topic_id: Uuid::from_u128(id),
            partitions: hosts
                .iter()
                .enumerate()
                .map(|(i, (node, s))| PartitionImage {
                    partition: i as i32,
                    leader: *node,
                    leader_epoch: 0,
                    partition_epoch: 0,
                    replicas: vec![*node],
                    isr: vec![*node],
                    eligible_leader_replicas: Vec::new(),
                    last_known_elr: Vec::new(),
                    adding_replicas: Vec::new(),
                    removing_replicas: Vec::new(),
                    shard: ShardId(*s),
                })
                .collect(),
            configs: BTreeMap::new(),
        }
    }

    fn local_image() -> MetadataImage {
        MetadataImage {
            local_node_id: LOCAL,
            ..MetadataImage::default()
        }
    }

    fn broker(node_id: i32) -> BrokerImage {
        BrokerImage {
            node_id,
            host: format!("b{node_id}"),
            port: 9092,
            rack: None,
            broker_epoch: i64::from(node_id),
        }
    }

    fn tp(id: u128, partition: i32) -> TopicIdPartition {
        TopicIdPartition {
            topic_id: Uuid::from_u128(id),
            partition,
        }
    }

    #[test]
    fn shard_table_follows_topics_in_and_out() {
        let mut image = local_image();
        image.put_topic(topic("a", 1, &[0, 1, 1]));
        image.put_topic(topic("b", 2, &[1]));
        assert_eq!(image.shard_table.load(2), vec![1, 3]);
        assert_eq!(image.shard_table.shard_of(&tp(1, 2)), Some(ShardId(1)));
        assert_eq!(
            image
                .topic_by_id(&Uuid::from_u128(2))
                .map(|t| t.name.as_str()),
            Some("b")
        );
        image.remove_topic("a");
        assert_eq!(image.shard_table.shard_of(&tp(1, 2)), None);
        assert_eq!(image.shard_table.load(2), vec![0, 1]);
        assert!(image.topic_by_id(&Uuid::from_u128(1)).is_none());
    }

    #[test]
    fn partitions_of_other_brokers_are_not_in_the_shard_table() {
        let mut image = local_image();
        image.put_topic(topic_on("a", 1, &[(LOCAL, 0), (2, 0), (3, 1), (LOCAL, 1)]));
        assert_eq!(image.shard_table.shard_of(&tp(1, 0)), Some(ShardId(0)));
        assert_eq!(image.shard_table.shard_of(&tp(1, 1)), None);
        assert_eq!(image.shard_table.shard_of(&tp(1, 2)), None);
        assert_eq!(image.shard_table.shard_of(&tp(1, 3)), Some(ShardId(1)));
        let mut ours: Vec<i32> = (0..2)
            .flat_map(|s| image.shard_table.partitions_of(ShardId(s)))
            .map(|tp| tp.partition)
            .collect();
        ours.sort();
        assert_eq!(ours, vec![0, 3]);
        assert_eq!(image.shard_table.load(2), vec![1, 1]);
        // Every partition is still described, wherever it lives.
        assert_eq!(image.topic("a").map(|t| t.partitions.len()), Some(4));
    }

    #[test]
    fn a_leaderless_partition_with_a_local_replica_stays_in_the_shard_table() {
        let mut image = local_image();
        let mut t = topic("a", 1, &[0]);
        t.partitions[0].leader = -1;
        image.put_topic(t);
        assert_eq!(image.shard_table.shard_of(&tp(1, 0)), Some(ShardId(0)));
    }

    #[test]
    fn replacing_a_topic_drops_partitions_that_left_this_broker() {
        let mut image = local_image();
        image.put_topic(topic("a", 1, &[0, 1]));
        image.put_topic(topic_on("a", 1, &[(LOCAL, 0), (2, 1)]));
        assert_eq!(image.shard_table.shard_of(&tp(1, 0)), Some(ShardId(0)));
        assert_eq!(image.shard_table.shard_of(&tp(1, 1)), None);
        // Recreated under a new id: the old id's entries and name index go.
        image.put_topic(topic("a", 9, &[1]));
        assert_eq!(image.shard_table.shard_of(&tp(1, 0)), None);
        assert_eq!(image.shard_table.shard_of(&tp(9, 0)), Some(ShardId(1)));
        assert!(image.topic_by_id(&Uuid::from_u128(1)).is_none());
    }

    #[test]
    fn topic_partition_lookup_checks_the_index() {
        let t = topic("a", 1, &[0, 0]);
        assert_eq!(t.partition(1).map(|p| p.partition), Some(1));
        assert!(t.partition(2).is_none());
        assert!(t.partition(-1).is_none());
    }

    #[test]
    fn clients_are_told_a_live_broker_as_controller() {
        let mut image = MetadataImage {
            local_node_id: 2,
            controller_id: 3000,
            brokers: vec![broker(1), broker(2), broker(3)],
            ..MetadataImage::default()
        };
        assert_eq!(image.client_controller_id(), 2);
        // Fenced: not among the live brokers, so the lowest live one.
        image.brokers = vec![broker(3), broker(1)];
        assert_eq!(image.client_controller_id(), 1);
        image.brokers.clear();
        assert_eq!(image.client_controller_id(), -1);
    }

    #[test]
    fn live_brokers_are_looked_up_by_id() {
        let image = MetadataImage {
            brokers: vec![broker(1), broker(3)],
            ..MetadataImage::default()
        };
        assert_eq!(image.broker(3).map(|b| b.host.as_str()), Some("b3"));
        assert!(image.is_live(1));
        assert!(!image.is_live(2));
        assert!(!image.is_live(-1));
    }

    #[test]
    fn a_fenced_broker_keeps_its_registration_epoch() {
        let mut image = MetadataImage {
            brokers: vec![broker(1)],
            fenced_brokers: vec![broker(2)],
            ..MetadataImage::default()
        };
        image.fenced_brokers[0].broker_epoch = 17;
        assert!(image.broker(2).is_none());
        assert_eq!(image.registered_broker(2).map(|b| b.broker_epoch), Some(17));
        assert_eq!(image.registered_broker(1).map(|b| b.broker_epoch), Some(1));
        assert!(image.registered_broker(3).is_none());
    }
}
