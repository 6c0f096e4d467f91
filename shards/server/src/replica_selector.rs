//! Fetch from the closest replica (KIP-392): which replica the leader names as a consumer's
//! `preferred_read_replica`, as Kafka's `RackAwareReplicaSelector` chooses it
//! (`replica.selector.class`), and from which candidates (`ReplicaManager.findPreferredReadReplica`).
//!
//! Kafka gathers the candidates — the leader, and the followers in the ISR whose log covers the
//! fetch offset — then the selector keeps those in the consumer's rack (`client.rack`, Fetch
//! `rack_id` from v11): none, or the leader among them, means the leader, which is never sent
//! as a preferred replica; otherwise the most caught-up. The work is split at the shard
//! boundary: the racks are in the metadata image the request handler holds
//! ([`rack_candidates`]); the followers' log ends and caught-up times are in the partition's
//! leader state on its owner shard ([`most_caught_up`]). A consumer with no rack, or a leader
//! in its rack, never leaves the handler's first step, so those fetches pay nothing.

use sluice_config::ReplicaSelectorClass;
use sluice_replica::ReadReplicaView;
use sluice_shard::{MetadataImage, PartitionImage};

/// The fetch version from which a consumer's fetch carries client metadata (its `rack_id`),
/// and so may be served by a follower and be sent to one (Kafka's `KafkaApis`).
pub const CLIENT_METADATA_MIN_VERSION: i16 = 11;

/// The followers of `partition` (led here) in the consumer's rack, that the leader may send the
/// consumer to: empty when no selector is configured, the consumer names no rack, or this
/// broker (the leader) is in its rack — the selector's answer is then the leader. Only live
/// brokers count: Kafka's view of a replica without an endpoint has no rack.
pub fn rack_candidates(
    selector: Option<ReplicaSelectorClass>,
    image: &MetadataImage,
    partition: &PartitionImage,
    client_rack: &str,
) -> Vec<i32> {
    let Some(ReplicaSelectorClass::RackAware) = selector else {
        return Vec::new();
    };
    let in_rack = |node_id: i32| {
        image
            .broker(node_id)
            .and_then(|b| b.rack.as_deref())
            .is_some_and(|rack| rack == client_rack)
    };
    if client_rack.is_empty() || in_rack(image.local_node_id) {
        return Vec::new();
    }
    partition
        .replicas
        .iter()
        .copied()
        .filter(|&id| id != image.local_node_id && in_rack(id))
        .collect()
}

/// Of the followers in the consumer's rack that may serve it (in the ISR, log covering the
/// offset), the one to name: Kafka's `ReplicaView.comparator` — the largest log end offset,
/// then the most recently caught up; equal ones go to the lowest broker id so that the answer
/// does not change from fetch to fetch. `None`: the leader serves the fetch.
pub fn most_caught_up(views: &[ReadReplicaView]) -> Option<i32> {
    views
        .iter()
        .max_by(|a, b| {
            a.log_end_offset
                .cmp(&b.log_end_offset)
                .then(
                    b.time_since_last_caught_up_ms
                        .cmp(&a.time_since_last_caught_up_ms),
                )
                .then(b.broker_id.cmp(&a.broker_id))
        })
        .map(|v| v.broker_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::broker;
    use sluice_shard::ShardId;

    const RACK_AWARE: Option<ReplicaSelectorClass> = Some(ReplicaSelectorClass::RackAware);

    /// Brokers 1 (here, the leader), 2 and 3; 1 in `local_rack`, 2 and 3 in "b"; 4 in "b" but
    /// not live.
    fn image(local_rack: &str) -> (MetadataImage, PartitionImage) {
        let racked = |id: i32, rack: &str| {
            let mut b = broker(id);
            b.rack = Some(rack.to_string());
            b
        };
        let image = MetadataImage {
            local_node_id: 1,
            brokers: vec![racked(1, local_rack), racked(2, "b"), racked(3, "b")],
            ..MetadataImage::default()
        };
        let partition = PartitionImage {
            partition: 0,
            leader: 1,
            leader_epoch: 3,
            partition_epoch: 3,
            replicas: vec![1, 2, 3, 4],
            isr: vec![1, 2, 3, 4],
            eligible_leader_replicas: Vec::new(),
            last_known_elr: Vec::new(),
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            shard: ShardId(0),
        };
        (image, partition)
    }

    #[test]
    fn candidates_are_the_live_followers_in_the_consumers_rack() {
        let (image, partition) = image("a");
        assert_eq!(
            rack_candidates(RACK_AWARE, &image, &partition, "b"),
            vec![2, 3]
        );
        // No rack in common, no rack named, no selector: the leader.
        assert!(rack_candidates(RACK_AWARE, &image, &partition, "c").is_empty());
        assert!(rack_candidates(RACK_AWARE, &image, &partition, "").is_empty());
        assert!(rack_candidates(None, &image, &partition, "b").is_empty());
    }

    #[test]
    fn a_leader_in_the_consumers_rack_is_preferred() {
        let (image, partition) = image("b");
        assert!(rack_candidates(RACK_AWARE, &image, &partition, "b").is_empty());
    }

    #[test]
    fn the_most_caught_up_follower_is_named() {
        let view = |broker_id, log_end_offset, time_since_last_caught_up_ms| ReadReplicaView {
            broker_id,
            log_end_offset,
            time_since_last_caught_up_ms,
        };
        assert_eq!(most_caught_up(&[]), None);
        assert_eq!(most_caught_up(&[view(2, 10, 0), view(3, 12, 500)]), Some(3));
        // Same log end: the one caught up more recently.
        assert_eq!(
            most_caught_up(&[view(2, 12, 300), view(3, 12, 20)]),
            Some(3)
        );
        // A full tie: the lowest id, whatever the order.
        assert_eq!(most_caught_up(&[view(3, 12, 0), view(2, 12, 0)]), Some(2));
        assert_eq!(most_caught_up(&[view(2, 12, 0), view(3, 12, 0)]), Some(2));
    }
}
