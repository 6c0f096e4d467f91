//! Where a new partition goes: on a single node, onto the shard holding the fewest partitions,
//! so that shards fill evenly. The choice is recorded in the metadata log and never recomputed.

/// Picks shards for `count` new partitions given the current partitions per shard.
pub fn place_partitions(load: &mut [usize], count: usize) -> Vec<u16> {
    assert!(!load.is_empty(), "at least one data shard");
    (0..count)
        .map(|_| {
            let (shard, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(i, l)| (**l, *i))
                .expect("load is not empty");
            load[shard] += 1;
            shard as u16
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_emptiest_shard_first() {
        let mut load = vec![2, 0, 1, 0];
        assert_eq!(place_partitions(&mut load, 5), vec![1, 3, 1, 2, 3]);
        assert_eq!(load, vec![2, 2, 2, 2]);
    }
}
