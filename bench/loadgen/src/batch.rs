//! Record batches for the producers, and the consumers' record walk.
//!
//! [`BatchWriter`] appends records to an open v2 batch as they are produced
//! (as the Java producer's `MemoryRecordsBuilder` does), so linger and batch
//! size work per record without a per-record allocation; `finish` writes the
//! header and CRC. Its output is byte-for-byte what
//! `sluice_protocol::RecordBatchBuilder` writes for the same records (tested
//! below). Every value starts with the record's intended send time in
//! microseconds since the Unix epoch (8 bytes, big endian): consumers
//! compute end-to-end latency from it.

use bytes::{BufMut, Bytes, BytesMut};
use sluice_protocol::RECORD_BATCH_OVERHEAD;

/// Size of the timestamp prefix of every value.
pub const STAMP_LEN: usize = 8;

const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

fn zigzag32(v: i32) -> u32 {
    ((v << 1) ^ (v >> 31)) as u32
}

fn zigzag64(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn uvarint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_uvarint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// An open, uncompressed, non-idempotent v2 batch.
pub struct BatchWriter {
    buf: BytesMut,
    base_timestamp: i64,
    max_timestamp: i64,
    count: i32,
}

impl BatchWriter {
    /// A new batch whose first record will have `base_timestamp` (ms).
    pub fn new(base_timestamp: i64, capacity: usize) -> BatchWriter {
        let mut buf = BytesMut::with_capacity(capacity.max(RECORD_BATCH_OVERHEAD));
        buf.put_bytes(0, RECORD_BATCH_OVERHEAD);
        BatchWriter {
            buf,
            base_timestamp,
            max_timestamp: base_timestamp,
            count: 0,
        }
    }

    /// Records in the batch.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Encoded size so far.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Appends a record without key or headers at `timestamp` (ms) whose value
    /// is `stamp_us` (8 bytes) followed by `rest`.
    pub fn append(&mut self, timestamp: i64, stamp_us: u64, rest: &[u8]) {
        let delta = timestamp - self.base_timestamp;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let value_len = STAMP_LEN + rest.len();
        let ts = zigzag64(delta);
        let off = zigzag32(self.count) as u64;
        let vlen = zigzag32(value_len as i32) as u64;
        let body_len = 1 // attributes
            + uvarint_len(ts)
            + uvarint_len(off)
            + 1 // key length -1
            + uvarint_len(vlen)
            + value_len
            + 1; // header count 0
        put_uvarint(&mut self.buf, zigzag32(body_len as i32) as u64);
        self.buf.put_u8(0);
        put_uvarint(&mut self.buf, ts);
        put_uvarint(&mut self.buf, off);
        self.buf.put_u8(1); // zigzag(-1): null key
        put_uvarint(&mut self.buf, vlen);
        self.buf.put_u64(stamp_us);
        self.buf.put_slice(rest);
        self.buf.put_u8(0);
        self.count += 1;
    }

    /// Writes the header and CRC and returns the batch.
    pub fn finish(mut self) -> Bytes {
        let len = self.buf.len();
        let mut h = &mut self.buf[..RECORD_BATCH_OVERHEAD];
        h.put_i64(0); // base offset
        h.put_i32((len - 12) as i32); // batch length
        h.put_i32(-1); // partition leader epoch
        h.put_i8(2); // magic
        h.put_u32(0); // crc, below
        h.put_i16(0); // attributes: no compression, create time
        h.put_i32((self.count - 1).max(0)); // last offset delta
        h.put_i64(self.base_timestamp);
        h.put_i64(self.max_timestamp);
        h.put_i64(-1); // producer id
        h.put_i16(-1); // producer epoch
        h.put_i32(-1); // base sequence
        h.put_i32(self.count);
        let crc = sluice_protocol::crc::crc32c(&self.buf[ATTRIBUTES_OFFSET..]);
        self.buf[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        self.buf.freeze()
    }
}

fn get_uvarint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

fn get_varint(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let v = get_uvarint(buf, pos)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// Walks the records of one uncompressed batch (validated before) and calls
/// `f(offset_delta, value)` for each. Returns `None` if a record is malformed.
pub fn for_each_value(batch: &[u8], count: usize, mut f: impl FnMut(i64, &[u8])) -> Option<()> {
    let mut pos = RECORD_BATCH_OVERHEAD;
    for _ in 0..count {
        let len = usize::try_from(get_varint(batch, &mut pos)?).ok()?;
        let end = pos.checked_add(len)?;
        let rec = batch.get(pos..end)?;
        let mut p = 1; // attributes
        get_varint(rec, &mut p)?; // timestamp delta
        let offset_delta = get_varint(rec, &mut p)?;
        let key_len = get_varint(rec, &mut p)?;
        if key_len > 0 {
            p = p.checked_add(usize::try_from(key_len).ok()?)?;
        }
        let value_len = get_varint(rec, &mut p)?;
        let value = if value_len > 0 {
            rec.get(p..p.checked_add(usize::try_from(value_len).ok()?)?)?
        } else {
            &[]
        };
        f(offset_delta, value);
        pos = end;
    }
    Some(())
}

/// The intended send time (µs since the epoch) at the start of a value.
pub fn stamp_of(value: &[u8]) -> Option<u64> {
    let b: [u8; STAMP_LEN] = value.get(..STAMP_LEN)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::{validate_batch, RecordBatchBuilder};

    #[test]
    fn same_bytes_as_the_protocol_builder() {
        let rest = vec![7u8; 1016];
        let mut w = BatchWriter::new(1_700_000_000_000, 4096);
        let mut b = RecordBatchBuilder::new(1_700_000_000_000);
        for i in 0..300u64 {
            let ts = 1_700_000_000_000 + (i as i64 / 7);
            let stamp = 1_700_000_000_000_000 + i * 13;
            w.append(ts, stamp, &rest);
            let mut v = stamp.to_be_bytes().to_vec();
            v.extend_from_slice(&rest);
            b = b.record_at(ts - 1_700_000_000_000, None, Some(&v));
        }
        let ours = w.finish();
        assert_eq!(ours, b.build());
        let h = validate_batch(&ours).expect("valid batch");
        assert_eq!(h.records_count, 300);
        let mut seen = Vec::new();
        for_each_value(&ours, 300, |d, v| seen.push((d, stamp_of(v), v.len()))).expect("walk");
        assert_eq!(seen.len(), 300);
        assert_eq!(
            seen[299],
            (299, Some(1_700_000_000_000_000 + 299 * 13), 1024)
        );
    }

    #[test]
    fn truncated_records_are_rejected_not_panicking() {
        let mut w = BatchWriter::new(0, 256);
        w.append(0, 1, &[1, 2, 3]);
        let b = w.finish();
        for cut in 0..b.len() {
            let _ = for_each_value(&b[..cut], 1, |_, _| {});
        }
        assert!(for_each_value(&b[..b.len() - 2], 1, |_, _| {}).is_none());
    }
}
