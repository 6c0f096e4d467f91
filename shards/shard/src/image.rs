//! The metadata image: the cluster as the controller last published it. Every shard holds the
//! same immutable image (an `Arc`), replaced whole on each metadata update, so reading it needs
//! no lock and no cross-shard trip.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sluice_protocol::codec::Uuid;
use sluice_replica::TopicIdPartition;

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
}

/// One partition of a topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionImage {
    /// Partition index.
    pub partition: i32,
    /// Leader node id.
    pub leader: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Replica node ids.
    pub replicas: Vec<i32>,
    /// In-sync replica node ids.
    pub isr: Vec<i32>,
    /// The shard that owns it on its leader, chosen once at creation and recorded.
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

/// Partition → owning shard, as every core holds it.
#[derive(Clone, Debug, Default)]
pub struct ShardTable {
    owners: HashMap<TopicIdPartition, ShardId>,
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
    /// Node id of the active controller.
    pub controller_id: i32,
    /// Live brokers.
    pub brokers: Vec<BrokerImage>,
    /// Topics by name.
    pub topics: BTreeMap<String, Arc<TopicImage>>,
    /// Topic names by id.
    pub topic_names: HashMap<Uuid, String>,
    /// Partition owners.
    pub shard_table: ShardTable,
}

impl MetadataImage {
    /// Looks a topic up by name.
    pub fn topic(&self, name: &str) -> Option<&Arc<TopicImage>> {
        self.topics.get(name)
    }

    /// Looks a topic up by id.
    pub fn topic_by_id(&self, id: &Uuid) -> Option<&Arc<TopicImage>> {
        self.topic_names
            .get(id)
            .and_then(|name| self.topics.get(name))
    }

    /// Adds or replaces a topic, keeping the indexes in step.
    pub fn put_topic(&mut self, topic: TopicImage) {
        for p in &topic.partitions {
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

    fn topic(name: &str, id: u128, shards: &[u16]) -> TopicImage {
        TopicImage {
            name: name.to_string(),
            topic_id: Uuid::from_u128(id),
            partitions: shards
                .iter()
                .enumerate()
                .map(|(i, s)| PartitionImage {
                    partition: i as i32,
                    leader: 1,
                    leader_epoch: 0,
                    replicas: vec![1],
                    isr: vec![1],
                    shard: ShardId(*s),
                })
                .collect(),
            configs: BTreeMap::new(),
        }
    }

    #[test]
    fn shard_table_follows_topics_in_and_out() {
        let mut image = MetadataImage::default();
        image.put_topic(topic("a", 1, &[0, 1, 1]));
        image.put_topic(topic("b", 2, &[1]));
        assert_eq!(image.shard_table.load(2), vec![1, 3]);
        let tp = TopicIdPartition {
            topic_id: Uuid::from_u128(1),
            partition: 2,
        };
        assert_eq!(image.shard_table.shard_of(&tp), Some(ShardId(1)));
        assert_eq!(
            image
                .topic_by_id(&Uuid::from_u128(2))
                .map(|t| t.name.as_str()),
            Some("b")
        );
        image.remove_topic("a");
        assert_eq!(image.shard_table.shard_of(&tp), None);
        assert_eq!(image.shard_table.load(2), vec![0, 1]);
        assert!(image.topic_by_id(&Uuid::from_u128(1)).is_none());
    }
}
