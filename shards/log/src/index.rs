//! Sparse indexes of one segment, as Kafka lays them out on disk.
//!
//! - `OffsetIndex` (`<base>.index`): 8-byte entries (relative offset u32 BE,
//!   file position u32 BE), one per `index.interval.bytes` of log, keyed by
//!   the last offset of the indexed batch.
//! - `TimeIndex` (`<base>.timeindex`): 12-byte entries, the segment's
//!   largest timestamp so far i64 BE + relative offset u32 BE of the batch
//!   that first reached it; appended when an offset index entry is due and
//!   the largest timestamp grew since the last time entry, and once more when
//!   the segment stops being active (roll, close), so that its last entry
//!   holds the segment's largest timestamp.
//!
//! Both are kept in memory (a `Vec` each) for lookups; the files are only
//! appended to (`entries_written` is where the next entry goes) and read
//! back whole when a cleanly closed or already-recovered segment is loaded.

use std::fmt;

pub(crate) const OFFSET_ENTRY_BYTES: usize = 8;
pub(crate) const TIME_ENTRY_BYTES: usize = 12;

/// `RecordBatch.NO_TIMESTAMP`.
pub(crate) const NO_TIMESTAMP: i64 = -1;

/// Why an index file was rejected (it is then rebuilt from the log).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexError {
    Size(u64),
    NotIncreasing(usize),
    BeyondLog(usize),
}

impl fmt::Display for IndexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Size(s) => write!(f, "size {s} is not a multiple of the entry size"),
            Self::NotIncreasing(i) => write!(f, "entry {i} does not increase"),
            Self::BeyondLog(i) => write!(f, "entry {i} points beyond the log"),
        }
    }
}

/// Sparse map from offsets to file positions within one segment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct OffsetIndex {
    /// (offset - segment base, position of the batch holding that offset),
    /// strictly increasing in both.
    entries: Vec<(u32, u32)>,
    /// Log bytes appended since the last entry (Kafka's
    /// `bytesSinceLastIndexEntry`).
    pub bytes_since_last_entry: u64,
}

impl OffsetIndex {
    /// Accounts one batch appended at `position`; adds an entry when more than
    /// the interval has been appended since the last one (Kafka's rule).
    /// Returns whether an entry was added.
    pub fn on_batch(
        &mut self,
        relative_last_offset: u32,
        position: u32,
        size: u64,
        interval: u32,
    ) -> bool {
        let due = self.bytes_since_last_entry > u64::from(interval);
        if due {
            self.push(relative_last_offset, position);
            self.bytes_since_last_entry = 0;
        }
        self.bytes_since_last_entry += size;
        due
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

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Kafka's `OffsetIndex.truncateTo`: drops the entries for batches ending at or after
    /// `relative_offset` (the log is cut at the batch holding it). The caller sets
    /// `bytes_since_last_entry` from the log that remains.
    pub fn truncate_to(&mut self, relative_offset: u32) {
        let keep = self.entries.partition_point(|&(o, _)| o < relative_offset);
        self.entries.truncate(keep);
    }

    /// Position of the last entry whose offset is below `relative_offset` (0 without one):
    /// where the batches that a truncation to it keeps after the kept entries begin.
    pub fn floor_below(&self, relative_offset: u32) -> u32 {
        let i = self.entries.partition_point(|&(o, _)| o < relative_offset);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].1
        }
    }

    /// The farthest batch boundary an entry names in `(after, up_to]`, counting only entries
    /// whose batch ends below `relative_limit`: every batch before that position is whole within
    /// `up_to` and ends below the limit too (offsets and positions grow together), so a read
    /// may end there without walking the headers in between.
    pub fn boundary_within(&self, after: u32, up_to: u32, relative_limit: u32) -> Option<u32> {
        let i = self
            .entries
            .partition_point(|&(o, p)| p <= up_to && o < relative_limit);
        let (_, position) = *self.entries.get(i.checked_sub(1)?)?;
        (position > after).then_some(position)
    }

    pub fn last(&self) -> Option<(u32, u32)> {
        self.entries.last().copied()
    }

    /// File bytes of the entries from `from` on.
    pub fn encode_from(&self, from: usize) -> Vec<u8> {
        self.encode_range(from, self.entries.len())
    }

    /// File bytes of the entries `[from, to)`.
    pub fn encode_range(&self, from: usize, to: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity((to - from) * OFFSET_ENTRY_BYTES);
        for &(o, p) in &self.entries[from..to] {
            out.extend_from_slice(&o.to_be_bytes());
            out.extend_from_slice(&p.to_be_bytes());
        }
        out
    }

    /// Parses and sanity-checks an `.index` file: whole entries, strictly
    /// increasing, positions inside the log (`log_size`), offsets below
    /// `offset_limit` (relative; the next segment's base or the log end).
    pub fn decode(bytes: &[u8], log_size: u64, offset_limit: u64) -> Result<Self, IndexError> {
        if !bytes
            .chunks_exact(OFFSET_ENTRY_BYTES)
            .remainder()
            .is_empty()
        {
            return Err(IndexError::Size(bytes.len() as u64));
        }
        let mut entries = Vec::with_capacity(bytes.len() / OFFSET_ENTRY_BYTES);
        for (i, e) in bytes.chunks_exact(OFFSET_ENTRY_BYTES).enumerate() {
            let o = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
            let p = u32::from_be_bytes([e[4], e[5], e[6], e[7]]);
            if let Some(&(lo, lp)) = entries.last() {
                if o <= lo || p <= lp {
                    return Err(IndexError::NotIncreasing(i));
                }
            }
            let header_end = u64::from(p) + crate::batch::RECORD_BATCH_OVERHEAD as u64;
            if header_end > log_size || u64::from(o) >= offset_limit || o > i32::MAX as u32 {
                return Err(IndexError::BeyondLog(i));
            }
            entries.push((o, p));
        }
        Ok(Self {
            entries,
            bytes_since_last_entry: 0,
        })
    }
}

/// Sparse map from timestamps to offsets within one segment, plus the
/// segment's largest timestamp so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TimeIndex {
    /// (largest timestamp so far, relative offset of the batch that first
    /// reached it), strictly increasing in both.
    entries: Vec<(i64, u32)>,
    /// Largest batch max timestamp in the segment (Kafka's
    /// `maxTimestampSoFar`), `NO_TIMESTAMP` if none.
    pub max_timestamp: i64,
    /// Relative last offset of the first batch holding `max_timestamp`
    /// (Kafka's `shallowOffsetOfMaxTimestampSoFar`).
    pub offset_of_max_timestamp: u32,
}

impl Default for TimeIndex {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            max_timestamp: NO_TIMESTAMP,
            offset_of_max_timestamp: 0,
        }
    }
}

impl TimeIndex {
    /// Accounts one batch (its max timestamp and relative last offset).
    pub fn observe(&mut self, max_timestamp: i64, relative_last_offset: u32) {
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = relative_last_offset;
        }
    }

    /// Kafka's `maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)`:
    /// adds an entry if the largest timestamp grew since the last entry.
    pub fn maybe_append(&mut self) -> bool {
        let last_ts = self.entries.last().map_or(NO_TIMESTAMP, |e| e.0);
        if self.max_timestamp <= last_ts {
            return false;
        }
        if let Some(&(_, o)) = self.entries.last() {
            assert!(o < self.offset_of_max_timestamp, "time index must grow");
        }
        self.entries
            .push((self.max_timestamp, self.offset_of_max_timestamp));
        true
    }

    /// Relative offset from which batches may reach `timestamp`: that of the
    /// greatest entry at or below it (every earlier batch is older), else 0.
    pub fn lookup(&self, timestamp: i64) -> u32 {
        let i = self.entries.partition_point(|&(t, _)| t <= timestamp);
        if i == 0 {
            0
        } else {
            self.entries[i - 1].1
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Kafka's `TimeIndex.truncateTo`: drops the entries whose offset is at or after
    /// `relative_offset`; the largest timestamp so far falls back to the last entry kept (the
    /// caller observes the batches after it that remain).
    pub fn truncate_to(&mut self, relative_offset: u32) {
        let keep = self.entries.partition_point(|&(_, o)| o < relative_offset);
        self.entries.truncate(keep);
        (self.max_timestamp, self.offset_of_max_timestamp) =
            self.entries.last().copied().unwrap_or((NO_TIMESTAMP, 0));
    }

    pub fn encode_from(&self, from: usize) -> Vec<u8> {
        self.encode_range(from, self.entries.len())
    }

    /// File bytes of the entries `[from, to)`.
    pub fn encode_range(&self, from: usize, to: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity((to - from) * TIME_ENTRY_BYTES);
        for &(t, o) in &self.entries[from..to] {
            out.extend_from_slice(&t.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
        }
        out
    }

    /// Parses and sanity-checks a `.timeindex` file (whole entries, strictly
    /// increasing, offsets below `offset_limit`, relative). The largest
    /// timestamp so far is taken from the last entry.
    pub fn decode(bytes: &[u8], offset_limit: u64) -> Result<Self, IndexError> {
        if !bytes.chunks_exact(TIME_ENTRY_BYTES).remainder().is_empty() {
            return Err(IndexError::Size(bytes.len() as u64));
        }
        let mut index = TimeIndex::default();
        for (i, e) in bytes.chunks_exact(TIME_ENTRY_BYTES).enumerate() {
            let mut t = [0u8; 8];
            t.copy_from_slice(&e[..8]);
            let t = i64::from_be_bytes(t);
            let o = u32::from_be_bytes([e[8], e[9], e[10], e[11]]);
            if let Some(&(lt, lo)) = index.entries.last() {
                if t <= lt || o <= lo {
                    return Err(IndexError::NotIncreasing(i));
                }
            } else if t <= NO_TIMESTAMP {
                return Err(IndexError::NotIncreasing(i));
            }
            if u64::from(o) >= offset_limit || o > i32::MAX as u32 {
                return Err(IndexError::BeyondLog(i));
            }
            index.entries.push((t, o));
        }
        if let Some(&(t, o)) = index.entries.last() {
            index.max_timestamp = t;
            index.offset_of_max_timestamp = o;
        }
        Ok(index)
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

    #[test]
    fn boundary_within_stays_inside_the_read_and_below_the_limit() {
        let mut idx = OffsetIndex::default();
        // As above: entries (7, 300), (13, 600), (19, 900).
        for i in 0..10u32 {
            idx.on_batch(i * 2 + 1, i * 100, 100, 250);
        }
        // A read of [100, 700): the farthest entry inside it is at 600.
        assert_eq!(idx.boundary_within(100, 700, u32::MAX), Some(600));
        // Inclusive at the end: a boundary exactly at the read's end is whole.
        assert_eq!(idx.boundary_within(100, 600, u32::MAX), Some(600));
        // Nothing past `after`: the caller keeps walking headers.
        assert_eq!(idx.boundary_within(600, 899, u32::MAX), None);
        assert_eq!(idx.boundary_within(0, 299, u32::MAX), None);
        // The batch at 600 ends at offset 13, at the limit: its entry only says the batches
        // before it end below 14, so with the limit at 13 the boundary falls back to 300
        // (the batch there ends at 7) and the caller walks on from it.
        assert_eq!(idx.boundary_within(100, 1000, 13), Some(300));
        assert_eq!(idx.boundary_within(100, 1000, 14), Some(600));
        assert_eq!(idx.boundary_within(100, 1000, 20), Some(900));
        assert_eq!(idx.boundary_within(100, 1000, 7), None);
    }

    #[test]
    fn files_round_trip_and_reject_damage() {
        let mut idx = OffsetIndex::default();
        let mut tidx = TimeIndex::default();
        for i in 0..50u32 {
            tidx.observe(1000 + i64::from(i % 7) * i64::from(i), i);
            if idx.on_batch(i, i * 100, 100, 150) {
                tidx.maybe_append();
            }
        }
        tidx.maybe_append();
        let bytes = idx.encode_from(0);
        assert_eq!(bytes.len(), idx.len() * OFFSET_ENTRY_BYTES);
        let mut back = OffsetIndex::decode(&bytes, 5000, 50).unwrap();
        back.bytes_since_last_entry = idx.bytes_since_last_entry;
        assert_eq!(back, idx);
        let tbytes = tidx.encode_from(0);
        assert_eq!(TimeIndex::decode(&tbytes, 50).unwrap(), tidx);
        // Damage: partial entry, decreasing entry, beyond the log.
        assert_eq!(
            OffsetIndex::decode(&bytes[..bytes.len() - 3], 5000, 50),
            Err(IndexError::Size(bytes.len() as u64 - 3))
        );
        let mut swapped = bytes.clone();
        swapped[8..16].copy_from_slice(&bytes[..8]);
        assert!(matches!(
            OffsetIndex::decode(&swapped, 5000, 50),
            Err(IndexError::NotIncreasing(_))
        ));
        assert!(matches!(
            OffsetIndex::decode(&bytes, 4000, 50),
            Err(IndexError::BeyondLog(_))
        ));
        assert!(matches!(
            OffsetIndex::decode(&bytes, 5000, 40),
            Err(IndexError::BeyondLog(_))
        ));
        assert!(TimeIndex::decode(&tbytes[..tbytes.len() - 1], 50).is_err());
        assert!(TimeIndex::decode(&tbytes, 10).is_err());
        assert!(TimeIndex::decode(&[0u8; 24], 50).is_err());
    }
}
