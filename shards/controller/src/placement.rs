//! Where a new partition's replicas go: Kafka's rack-aware round robin
//! (`StripedReplicaPlacer`'s predecessor, `AdminUtils.assignReplicasToBrokers`). Brokers are
//! ordered so that racks alternate (r1, r2, r3, r1, …); partition `p`'s first replica is the
//! broker at `(start + p) % n`, and its further replicas follow at a shift that grows every
//! `n` partitions, so leaders and followers both spread. Which shard of the broker holds a
//! partition is the broker's own choice.

use std::collections::BTreeMap;

/// A broker that can take replicas: its id and rack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementBroker {
    /// `node.id`.
    pub id: i32,
    /// `broker.rack`.
    pub rack: Option<String>,
}

/// Orders brokers so that consecutive ones are on different racks when racks are known:
/// take one broker from each rack in turn (racks and brokers in id order).
pub fn rack_alternated(brokers: &[PlacementBroker]) -> Vec<i32> {
    let mut by_rack: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for b in brokers {
        by_rack
            .entry(b.rack.as_deref().unwrap_or(""))
            .or_default()
            .push(b.id);
    }
    for ids in by_rack.values_mut() {
        ids.sort_unstable();
    }
    let mut out = Vec::with_capacity(brokers.len());
    let mut round = 0;
    while out.len() < brokers.len() {
        for ids in by_rack.values() {
            if let Some(id) = ids.get(round) {
                out.push(*id);
            }
        }
        round += 1;
    }
    out
}

/// Replica lists for `partitions` new partitions with `replication_factor` replicas each
/// (1 ≤ rf ≤ brokers), the first being the preferred leader. `start` picks where the round
/// robin begins (Kafka draws it at random so that topics do not all start on one broker).
pub fn place_replicas(
    brokers: &[PlacementBroker],
    partitions: usize,
    replication_factor: usize,
    start: usize,
) -> Vec<Vec<i32>> {
    let order = rack_alternated(brokers);
    let n = order.len();
    assert!(n > 0, "no broker to place on");
    assert!(
        (1..=n).contains(&replication_factor),
        "replication factor {replication_factor} with {n} brokers"
    );
    let first = start % n;
    let mut shift = if n > 1 { start % (n - 1) } else { 0 };
    (0..partitions)
        .map(|p| {
            if p > 0 && p % n == 0 {
                shift += 1;
            }
            let leader = (first + p) % n;
            let mut replicas = vec![order[leader]];
            for j in 0..replication_factor - 1 {
                // Kafka's replicaIndex: followers at 1 + (shift + j) % (n - 1) past the leader.
                let offset = 1 + (shift + j) % (n - 1);
                replicas.push(order[(leader + offset) % n]);
            }
            replicas
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(racks: &[(i32, &str)]) -> Vec<PlacementBroker> {
        racks
            .iter()
            .map(|(id, rack)| PlacementBroker {
                id: *id,
                rack: Some(rack.to_string()),
            })
            .collect()
    }

    #[test]
    fn twelve_partitions_spread_evenly_over_three_brokers() {
        let b = brokers(&[(4, "r1"), (5, "r2"), (6, "r3")]);
        for start in 0..3 {
            let placed = place_replicas(&b, 12, 1, start);
            let mut count = BTreeMap::new();
            for r in &placed {
                assert_eq!(r.len(), 1);
                *count.entry(r[0]).or_insert(0) += 1;
            }
            assert_eq!(count.values().copied().collect::<Vec<_>>(), vec![4, 4, 4]);
        }
    }

    #[test]
    fn racks_alternate_and_replicas_of_a_partition_are_distinct() {
        let b = brokers(&[(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c")]);
        assert_eq!(rack_alternated(&b), vec![1, 3, 5, 2, 4]);
        for rf in 1..=5 {
            for r in place_replicas(&b, 20, rf, 7) {
                let mut sorted = r.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), rf, "{r:?}");
            }
        }
    }
}
