//! Kafka's `SkimpyOffsetMap`: key hash -> latest offset, in a fixed block of memory
//! (`log.cleaner.dedupe.buffer.size` divided among the shards), open addressing with linear
//! probing. Keys are not stored, only a 128-bit hash of them (two SipHash-1-3 passes with the
//! map's random keys), so the memory per key is fixed (24 bytes) and a collision — which
//! would make the cleaner drop a record whose key only shares the hash — is as unlikely as
//! with Kafka's MD5. A map is allocated per clean, sized to its dirty section within the shard's
//! budget (`LogCleaner`), and freed after it.

use std::hash::{BuildHasher, RandomState};

/// Bytes per slot: the hash (16) and the offset (8).
pub(crate) const SLOT_BYTES: usize = 24;
/// Kafka's `log.cleaner.io.buffer.load.factor` default: slots used at most, so probes stay short.
pub(crate) const LOAD_FACTOR: f64 = 0.9;

#[derive(Clone, Copy)]
struct Slot {
    hash: [u64; 2],
    /// -1: free.
    offset: i64,
}

const FREE: Slot = Slot {
    hash: [0; 2],
    offset: -1,
};

pub(crate) struct OffsetMap {
    slots: Vec<Slot>,
    entries: usize,
    max_entries: usize,
    /// Largest offset put since the last `clear`, -1 if none.
    latest_offset: i64,
    hasher: RandomState,
}

impl OffsetMap {
    /// A map using about `memory_bytes` (at least a few slots).
    pub fn new(memory_bytes: usize) -> Self {
        let slots = (memory_bytes / SLOT_BYTES).max(4);
        Self {
            slots: vec![FREE; slots],
            entries: 0,
            max_entries: ((slots as f64 * LOAD_FACTOR) as usize).max(1),
            latest_offset: -1,
            hasher: RandomState::new(),
        }
    }

    fn hash(&self, key: &[u8]) -> [u64; 2] {
        [
            self.hasher.hash_one((0u8, key)),
            self.hasher.hash_one((1u8, key)),
        ]
    }

    fn find(&self, hash: [u64; 2]) -> usize {
        let n = self.slots.len();
        let mut i = (hash[0] % n as u64) as usize;
        loop {
            let s = &self.slots[i];
            if s.offset < 0 || s.hash == hash {
                return i;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
    }

    /// Records `offset` as the latest for `key`; `false` (nothing changed) when the key is new
    /// and the map is full.
    pub fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let hash = self.hash(key);
        let i = self.find(hash);
        if self.slots[i].offset < 0 {
            if self.is_full() {
                return false;
            }
            self.entries += 1;
        }
        self.slots[i] = Slot { hash, offset };
        self.latest_offset = self.latest_offset.max(offset);
        true
    }

    /// The latest offset put for `key`.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        let s = &self.slots[self.find(self.hash(key))];
        (s.offset >= 0).then_some(s.offset)
    }

    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    /// Keys the map can still take.
    pub fn free_entries(&self) -> usize {
        self.max_entries - self.entries
    }

    pub fn len(&self) -> usize {
        self.entries
    }

    #[cfg(test)]
    pub fn latest_offset(&self) -> i64 {
        self.latest_offset
    }

    pub fn clear(&mut self) {
        self.slots.fill(FREE);
        self.entries = 0;
        self.latest_offset = -1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_latest_offset_and_refuses_new_keys_when_full() {
        let mut map = OffsetMap::new(10 * SLOT_BYTES);
        assert_eq!(map.max_entries, 9);
        for i in 0..9u32 {
            assert!(map.put(&i.to_be_bytes(), i64::from(i)));
        }
        assert!(map.is_full());
        assert!(!map.put(b"new", 100));
        assert!(map.put(&3u32.to_be_bytes(), 50), "known keys still update");
        assert_eq!(map.get(&3u32.to_be_bytes()), Some(50));
        assert_eq!(map.get(b"new"), None);
        assert_eq!(map.latest_offset(), 50);
        map.clear();
        assert_eq!((map.len(), map.get(&3u32.to_be_bytes())), (0, None));
    }
}
