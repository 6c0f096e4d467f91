//! Which partitions this broker may serve, from the metadata image: the check Kafka's
//! ReplicaManager makes before any partition work (`getPartitionOrException`), and the leader a
//! NOT_LEADER_OR_FOLLOWER answer points the client to (KIP-951, `KafkaApis.getCurrentLeader`).
//!
//! Produce, Fetch, ListOffsets and DeleteRecords all resolve their partitions here, so "known
//! but led elsewhere" means the same thing to each of them.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::produce::{LeaderIdAndEpoch, NodeEndpoint};
use sluice_replica::TopicIdPartition;
use sluice_shard::{MetadataImage, PartitionImage, ShardId, TopicImage};

/// A partition this broker leads (or, from [`local_replica`], hosts), ready to be routed to the
/// shard that owns it here.
#[derive(Debug, Clone, Copy)]
pub struct Led<'a> {
    /// The partition as the image describes it.
    pub partition: &'a PartitionImage,
    /// Its id.
    pub tp: TopicIdPartition,
    /// The shard that owns it on this broker.
    pub shard: ShardId,
}

/// Resolves partition `index` of `topic` (a topic of `image`) to its owner shard on this
/// broker. UNKNOWN_TOPIC_OR_PARTITION when the topic has no such partition;
/// NOT_LEADER_OR_FOLLOWER when the partition exists but this broker does not lead it: another
/// broker leads it, none does (-1), or it has no replica here — as Kafka answers for a
/// partition in its metadata cache that it does not lead, so that the client refreshes its
/// metadata and goes to the leader.
pub fn local_leader<'a>(
    image: &MetadataImage,
    topic: &'a TopicImage,
    index: i32,
) -> Result<Led<'a>, ErrorCode> {
    let partition = topic
        .partition(index)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if partition.leader != image.local_node_id {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    hosted(image, topic, partition, index)
}

/// The shard hosting `partition` (index `index` of `topic`) here; NOT_LEADER_OR_FOLLOWER when
/// the shard table has none for it.
fn hosted<'a>(
    image: &MetadataImage,
    topic: &'a TopicImage,
    partition: &'a PartitionImage,
    index: i32,
) -> Result<Led<'a>, ErrorCode> {
    let tp = TopicIdPartition {
        topic_id: topic.topic_id,
        partition: index,
    };
    let shard = image
        .shard_table
        .shard_of(&tp)
        .ok_or(ErrorCode::NOT_LEADER_OR_FOLLOWER)?;
    Ok(Led {
        partition,
        tp,
        shard,
    })
}

/// Resolves partition `index` of `topic` for a read any replica may serve (a consumer's fetch
/// with client metadata, KIP-392): as [`local_leader`], but a follower hosted here is accepted
/// too — Kafka's `localLogWithEpochOrThrow` without `requireLeader`. NOT_LEADER_OR_FOLLOWER when
/// this broker holds no replica of it.
pub fn local_replica<'a>(
    image: &MetadataImage,
    topic: &'a TopicImage,
    index: i32,
) -> Result<Led<'a>, ErrorCode> {
    let partition = topic
        .partition(index)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if partition.leader != image.local_node_id && !partition.replicas.contains(&image.local_node_id)
    {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    hosted(image, topic, partition, index)
}

/// `local_leader` for a topic named by the request; an unknown name is
/// UNKNOWN_TOPIC_OR_PARTITION.
pub fn local_leader_by_name<'i>(
    image: &'i MetadataImage,
    topic: &str,
    index: i32,
) -> Result<Led<'i>, ErrorCode> {
    let topic = image
        .topic(topic)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    local_leader(image, topic, index)
}

/// The leader named in a NOT_LEADER_OR_FOLLOWER answer (KIP-951): its id and epoch from the
/// image ((-1, -1) for an unknown partition), and its endpoint when it is a live broker — so
/// the client can go there without a Metadata round trip.
pub fn current_leader(
    image: &MetadataImage,
    topic: Option<&TopicImage>,
    index: i32,
) -> (LeaderIdAndEpoch, Option<NodeEndpoint>) {
    let Some(partition) = topic.and_then(|t| t.partition(index)) else {
        return (LeaderIdAndEpoch::default(), None);
    };
    let leader = LeaderIdAndEpoch {
        leader_id: partition.leader,
        leader_epoch: partition.leader_epoch,
    };
    let endpoint = image.broker(partition.leader).map(|b| NodeEndpoint {
        node_id: b.node_id,
        host: b.host.clone(),
        port: b.port,
        rack: b.rack.clone(),
    });
    (leader, endpoint)
}

/// Adds `endpoint` to a response's `NodeEndpoints` once per node, kept in node id order.
pub fn add_endpoint(endpoints: &mut Vec<NodeEndpoint>, endpoint: Option<NodeEndpoint>) {
    let Some(endpoint) = endpoint else {
        return;
    };
    if let Err(at) = endpoints.binary_search_by_key(&endpoint.node_id, |e| e.node_id) {
        endpoints.insert(at, endpoint);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use sluice_protocol::codec::Uuid;
    use sluice_shard::BrokerImage;

    use super::*;

    /// This broker in the test images.
    pub const LOCAL: i32 = 1;
    /// Another live broker.
    pub const OTHER: i32 = 2;

    pub fn broker(node_id: i32) -> BrokerImage {
        BrokerImage {
            node_id,
            host: format!("broker-{node_id}"),
            port: 9090 + node_id,
            rack: None,
            broker_epoch: 1,
        }
    }

    /// A three-broker image seen from `LOCAL`, with brokers 1 and 2 live and 3 fenced. Topic
    /// "t" (id 7): partition 0 led here (shard 0), 1 led by `OTHER`, 2 leaderless (its only
    /// replica, broker 3, is fenced), 3 leaderless with its replica here (this broker was
    /// fenced and is back), all at leader epoch 5.
    pub fn cluster_image() -> MetadataImage {
        let mut image = MetadataImage {
            local_node_id: LOCAL,
            cluster_id: "cluster".to_string(),
            controller_id: 3000,
            brokers: vec![broker(LOCAL), broker(OTHER)],
            ..MetadataImage::default()
        };
        image.put_topic(topic(
            "t",
            7,
            &[(LOCAL, LOCAL), (OTHER, OTHER), (-1, 3), (-1, LOCAL)],
        ));
        image
    }

    /// A topic whose partitions have one replica each: (leader, replica).
    pub fn topic(name: &str, id: u128, partitions: &[(i32, i32)]) -> TopicImage {
        TopicImage {
            name: name.to_string(),
            topic_id: Uuid::from_u128(id),
            partitions: partitions
                .iter()
                .enumerate()
                .map(|(i, (leader, replica))| PartitionImage {
                    partition: i as i32,
                    leader: *leader,
                    leader_epoch: 5,
                    partition_epoch: 0,
                    replicas: vec![*replica],
                    isr: if *leader == -1 {
                        Vec::new()
                    } else {
                        vec![*replica]
                    },
                    eligible_leader_replicas: Vec::new(),
                    last_known_elr: Vec::new(),
                    adding_replicas: Vec::new(),
                    removing_replicas: Vec::new(),
                    shard: ShardId(0),
                })
                .collect(),
            configs: BTreeMap::new(),
        }
    }

    /// The single-node image of before clustering: this broker leads everything.
    pub fn single_node_image() -> MetadataImage {
        let mut image = MetadataImage {
            local_node_id: LOCAL,
            cluster_id: "cluster".to_string(),
            controller_id: LOCAL,
            brokers: vec![broker(LOCAL)],
            ..MetadataImage::default()
        };
        image.put_topic(topic("t", 7, &[(LOCAL, LOCAL), (LOCAL, LOCAL)]));
        image
    }

    fn resolve(image: &MetadataImage, index: i32) -> Result<ShardId, ErrorCode> {
        let topic = image.topic("t").expect("topic t");
        local_leader(image, topic, index).map(|led| led.shard)
    }

    #[test]
    fn only_partitions_led_here_are_served() {
        let image = cluster_image();
        assert_eq!(resolve(&image, 0), Ok(ShardId(0)));
        assert_eq!(resolve(&image, 1), Err(ErrorCode::NOT_LEADER_OR_FOLLOWER));
        assert_eq!(resolve(&image, 2), Err(ErrorCode::NOT_LEADER_OR_FOLLOWER));
        // Hosted here but leaderless: still not served.
        assert_eq!(resolve(&image, 3), Err(ErrorCode::NOT_LEADER_OR_FOLLOWER));
        assert_eq!(
            resolve(&image, 4),
            Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            resolve(&image, -1),
            Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            local_leader_by_name(&image, "nope", 0).map(|led| led.shard),
            Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
        assert_eq!(
            local_leader_by_name(&image, "t", 1).map(|led| led.shard),
            Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)
        );
    }

    #[test]
    fn single_node_serves_everything() {
        let image = single_node_image();
        assert_eq!(resolve(&image, 0), Ok(ShardId(0)));
        assert_eq!(resolve(&image, 1), Ok(ShardId(0)));
        assert_eq!(
            resolve(&image, 2),
            Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
    }

    #[test]
    fn current_leader_names_a_live_leader_with_its_endpoint() {
        let image = cluster_image();
        let topic = image.topic("t").map(|t| &**t);
        let (leader, endpoint) = current_leader(&image, topic, 1);
        assert_eq!(
            leader,
            LeaderIdAndEpoch {
                leader_id: OTHER,
                leader_epoch: 5
            }
        );
        let endpoint = endpoint.expect("live leader has an endpoint");
        assert_eq!(
            (endpoint.node_id, endpoint.host.as_str(), endpoint.port),
            (OTHER, "broker-2", 9092)
        );
        let (leader, endpoint) = current_leader(&image, topic, 2);
        assert_eq!(
            leader,
            LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: 5
            }
        );
        assert!(endpoint.is_none());
        assert_eq!(
            current_leader(&image, topic, 9),
            (LeaderIdAndEpoch::default(), None)
        );
        assert_eq!(
            current_leader(&image, None, 0),
            (LeaderIdAndEpoch::default(), None)
        );
    }

    #[test]
    fn endpoints_are_listed_once_in_node_order() {
        let image = cluster_image();
        let topic = image.topic("t").map(|t| &**t);
        let mut endpoints = Vec::new();
        for index in [1, 0, 1, 2] {
            add_endpoint(&mut endpoints, current_leader(&image, topic, index).1);
        }
        let ids: Vec<i32> = endpoints.iter().map(|e| e.node_id).collect();
        assert_eq!(ids, vec![LOCAL, OTHER]);
    }
}
