//! In-memory sparse offset index of one segment.
//!
//! Same entries as Kafka's `.index` file (relative offset -> file position,
//! one per `index.interval.bytes` of log, keyed by the last offset of the
//! indexed batch), so that a later issue can persist it unchanged.

/// Sparse map from offsets to file positions within one segment.
#[derive(Debug, Default)]
pub(crate) struct OffsetIndex {
    /// (offset - segment base, position of the batch holding that offset),
    /// strictly increasing in both.
    entries: Vec<(u32, u32)>,
    bytes_since_last_entry: u64,
}

impl OffsetIndex {
    /// Accounts one batch appended at `position`; adds an entry when more than
    /// the interval has been appended since the last one (Kafka's rule).
    pub fn on_batch(&mut self, relative_last_offset: u32, position: u32, size: u64, interval: u32) {
        if self.bytes_since_last_entry > u64::from(interval) {
            self.push(relative_last_offset, position);
            self.bytes_since_last_entry = 0;
        }
        self.bytes_since_last_entry += size;
    }

    fn push(&mut self, relative_offset: u32, position: u32) {
        if let Some(&(o, p)) = self.entries.last() {
            assert!(o < relative_offset && p < position, "index must grow");
        }
        self.entries.push((relative_offset, position));
    }

    /// Position from which a forward scan finds the batch holding
    /// `relative_offset`: the greatest entry at or below it, else the start.
    pub fn lookup(&self, relative_offset: u32) -> u32 {
        let i = self.entries.partition_point(|&(o, _)| o <= relative_offset);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].1
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_returns_floor_entry() {
        let mut idx = OffsetIndex::default();
        // 10 batches of 100 bytes, 2 offsets each, interval 250.
        for i in 0..10u32 {
            idx.on_batch(i * 2 + 1, i * 100, 100, 250);
        }
        // Entries after 300 bytes: at batch 3 (last offset 7, pos 300), then
        // batch 6 (13, 600), batch 9 (19, 900).
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.lookup(0), 0);
        assert_eq!(idx.lookup(6), 0);
        assert_eq!(idx.lookup(7), 300);
        assert_eq!(idx.lookup(12), 300);
        assert_eq!(idx.lookup(13), 600);
        assert_eq!(idx.lookup(1000), 900);
    }
}
