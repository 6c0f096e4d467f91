//! Partitions hosted on one shard, and the shard's `ReplicaManager`.
//!
//! A `Partition` wraps the partition's log with what replication needs around it: the leader
//! epoch, the high watermark (today: the log's readable end, as the leader is the only replica),
//! and a way to wait for appends. Everything here lives on the shard that owns the partition and
//! is never touched by another thread: other shards reach it through shard messages.

#![forbid(unsafe_code)]

mod error;
mod partition;
pub mod producer_state;
mod replica_manager;
pub mod replication;
mod snapshot;
mod topic_config;

pub use error::ReplicaError;
pub use partition::{
    ActiveProducer, ConsumerRead, FetchPartitionData, FollowerFetchRequest, FollowerFetchResult,
    FollowerFetchState, OffsetAndTimestamp, Partition, PartitionLogDirInfo, ReadReplicaView, Role,
};
pub use producer_state::{
    ProducerStateEntry, ProducerStateError, ProducerStateManager, DEFAULT_PRODUCER_ID_EXPIRATION_MS,
};
pub use replica_manager::ReplicaManager;
pub use sluice_log::{LogAppendInfo, LogConfig};
pub use topic_config::log_config_with_overrides;

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use sluice_protocol::codec::Uuid;

/// A partition, identified the way the broker routes it: by topic id, not name, so that a
/// topic deleted and re-created under the same name is never confused with the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicIdPartition {
    /// The topic's id.
    pub topic_id: Uuid,
    /// The partition index.
    pub partition: i32,
}

/// A map keyed by partition on the data path, hashed by [`PartitionHasher`].
pub type PartitionMap<V> = HashMap<TopicIdPartition, V, BuildHasherDefault<PartitionHasher>>;

/// The hasher of partition-keyed maps that requests look up once per partition (a fetch names
/// up to thousands): FxHash's rotate-xor-multiply over the key's words (~2 ns) instead of the
/// standard SipHash (~20 ns for the 24 bytes of a key). Flooding resistance buys nothing here:
/// the maps hold only partitions the metadata image created, whose topic ids are random UUIDs
/// the controller assigned, and a lookup of a client's key only probes.
#[derive(Default, Clone, Copy)]
pub struct PartitionHasher(u64);

impl PartitionHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for PartitionHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_i32(&mut self, n: i32) {
        self.add(u64::from(n as u32));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod partition_hasher_tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::*;

    /// Keys differing in the partition or in any byte of the topic id hash apart, and a map
    /// keyed by them finds every one.
    #[test]
    fn partition_keys_hash_apart_and_are_found() {
        let build = BuildHasherDefault::<PartitionHasher>::default();
        let key = |id: u8, partition: i32| TopicIdPartition {
            topic_id: Uuid([id; 16]),
            partition,
        };
        let mut hashes: Vec<u64> = (0..1000).map(|p| build.hash_one(key(7, p))).collect();
        for byte in 0..16 {
            let mut id = [7u8; 16];
            id[byte] = 8;
            hashes.push(build.hash_one(TopicIdPartition {
                topic_id: Uuid(id),
                partition: 0,
            }));
        }
        let count = hashes.len();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), count, "no two keys share a hash");
        let mut map: PartitionMap<i32> = PartitionMap::default();
        for id in 0..10 {
            for p in 0..100 {
                map.insert(key(id, p), p);
            }
        }
        assert_eq!(map.len(), 1000);
        assert!((0..10).all(|id| (0..100).all(|p| map.get(&key(id, p)) == Some(&p))));
        assert_eq!(map.get(&key(10, 0)), None);
    }
}
