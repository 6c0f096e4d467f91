//! The cleaner's view of the records inside a v2 batch, and the batch rewrite (Kafka's
//! `MemoryRecords.filterTo` / `buildRetainedRecordsInto` for magic 2): a rewritten batch keeps
//! its base offset, `lastOffsetDelta`, producer fields, leader epoch and max timestamp; each
//! kept record keeps its bytes (so its offset delta), only its timestamp delta is re-encoded
//! when the batch gets a delete horizon; the CRC is recomputed.
//!
//! Uncompressed records are walked in place (no allocation per record). A compressed batch is
//! decompressed (one buffer per batch) and walked the same way; one that keeps some but not all
//! of its records is rewritten uncompressed, not re-compressed (see `filter_batch`).

use std::collections::HashMap;

use sluice_protocol::record_batch::{self, RecordBatchHeader, LOG_OVERHEAD};

use super::offset_map::OffsetMap;
use crate::batch::RECORD_BATCH_OVERHEAD;

const ATTRIBUTES_OFFSET: usize = 21;
const CRC_OFFSET: usize = 17;
const BATCH_LENGTH_OFFSET: usize = 8;
const BASE_TIMESTAMP_OFFSET: usize = 27;
const RECORDS_COUNT_OFFSET: usize = 57;
const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
/// KIP-534: `baseTimestamp` holds the batch's delete horizon (when its tombstones may go).
pub(crate) const DELETE_HORIZON_BIT: i16 = 0x40;

/// A record the cleaner cannot parse (the segment is left alone; Kafka marks such a
/// partition uncleanable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MalformedRecord(pub &'static str);

/// One record of an uncompressed batch, as positions in the records section.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordView<'a> {
    /// Start (the length varint) and end of the whole record.
    pub start: usize,
    pub end: usize,
    /// Where the bytes after the timestamp delta start (offset delta, key, value, headers).
    pub after_timestamp: usize,
    pub attributes: u8,
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub has_value: bool,
}

/// Walks the records of an uncompressed records section.
pub(crate) struct RecordWalker<'a> {
    body: &'a [u8],
    pos: usize,
    remaining: usize,
}

impl<'a> RecordWalker<'a> {
    pub fn new(body: &'a [u8], count: i32) -> Self {
        Self {
            body,
            pos: 0,
            remaining: usize::try_from(count).unwrap_or(0),
        }
    }

    fn varlong(&mut self) -> Result<i64, MalformedRecord> {
        let mut raw: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .body
                .get(self.pos)
                .ok_or(MalformedRecord("truncated varint"))?;
            self.pos += 1;
            raw |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(MalformedRecord("varint too long"))
    }

    fn varint(&mut self) -> Result<i32, MalformedRecord> {
        i32::try_from(self.varlong()?).map_err(|_| MalformedRecord("varint out of range"))
    }

    /// A length-prefixed field (`-1`: null).
    fn nullable(&mut self, end: usize) -> Result<Option<&'a [u8]>, MalformedRecord> {
        let len = self.varint()?;
        if len < 0 {
            return Ok(None);
        }
        let to = self.pos + len as usize;
        if to > end {
            return Err(MalformedRecord("field past the record end"));
        }
        let field = &self.body[self.pos..to];
        self.pos = to;
        Ok(Some(field))
    }

    fn record(&mut self) -> Result<RecordView<'a>, MalformedRecord> {
        let start = self.pos;
        let length = self.varint()?;
        let length = usize::try_from(length).map_err(|_| MalformedRecord("negative length"))?;
        let end = self
            .pos
            .checked_add(length)
            .filter(|e| *e <= self.body.len())
            .ok_or(MalformedRecord("record past the batch end"))?;
        let attributes = *self
            .body
            .get(self.pos)
            .ok_or(MalformedRecord("truncated record"))?;
        self.pos += 1;
        let timestamp_delta = self.varlong()?;
        let after_timestamp = self.pos;
        let offset_delta = self.varint()?;
        let key = self.nullable(end)?;
        let has_value = self.nullable(end)?.is_some();
        if self.pos > end {
            return Err(MalformedRecord("record longer than its length"));
        }
        self.pos = end;
        Ok(RecordView {
            start,
            end,
            after_timestamp,
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            has_value,
        })
    }
}

impl<'a> Iterator for RecordWalker<'a> {
    type Item = Result<RecordView<'a>, MalformedRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let r = self.record();
        if r.is_err() {
            self.remaining = 0;
        }
        Some(r)
    }
}

/// Calls `f(offset, key)` for every keyed record of a data batch (decompressing if needed);
/// keyless records are skipped (the cleaner drops them).
pub(crate) fn for_each_key(
    batch: &[u8],
    header: &RecordBatchHeader,
    mut f: impl FnMut(i64, &[u8]) -> bool,
) -> Result<(), MalformedRecord> {
    if header.attributes & COMPRESSION_MASK == 0 {
        let body = &batch[RECORD_BATCH_OVERHEAD..];
        for r in RecordWalker::new(body, header.records_count) {
            let r = r?;
            if let Some(key) = r.key {
                if !f(header.base_offset + i64::from(r.offset_delta), key) {
                    return Ok(());
                }
            }
        }
        return Ok(());
    }
    let records = record_batch::read_records(batch)
        .map_err(|_| MalformedRecord("compressed records unreadable"))?;
    for r in records {
        if let Some(key) = &r.key {
            if !f(header.base_offset + i64::from(r.offset_delta), key) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// What the cleaner does with one batch below the end of the offset map.
pub(crate) struct FilterContext<'a> {
    pub map: &'a OffsetMap,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    /// producer id -> base offset of its last batch the cleaner saw: that batch is kept (empty
    /// if need be) so the producer's sequence state survives, as Kafka keeps
    /// `lastRecordsOfActiveProducers`.
    pub producer_last_batch: &'a HashMap<i64, i64>,
}

/// What `filter_batch` wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filtered {
    /// Copied unchanged.
    Kept,
    /// Rewritten with fewer records (or a new delete horizon).
    Rewritten {
        delete_horizon_ms: Option<i64>,
    },
    /// Only the header is kept (no record, offsets still reserved).
    Emptied,
    Dropped,
}

/// Kafka's `shouldRetainRecord`: a keyless record goes; a record with a newer offset for its
/// key in the map goes; a tombstone stays until its batch's delete horizon has passed (a
/// batch without one gets it in this clean).
fn retain(
    ctx: &FilterContext<'_>,
    offset: i64,
    key: Option<&[u8]>,
    has_value: bool,
    horizon: Option<i64>,
) -> bool {
    let Some(key) = key else {
        return false;
    };
    if ctx.map.get(key).is_some_and(|latest| offset < latest) {
        return false;
    }
    has_value || horizon.is_none_or(|h| ctx.now_ms < h)
}

/// Records of transactions are the place later work slots into (Kafka's cleaner removes
/// aborted data with the transaction index and markers after their delete horizon). Until
/// Sluice keeps a transaction index, every transactional data batch and every control batch
/// is copied as is, and its records are not put in the offset map either (an aborted record
/// must never hide an older committed one).
pub(crate) fn keep_transactional_batch_as_is(header: &RecordBatchHeader) -> bool {
    header.attributes & (TRANSACTIONAL_BIT | CONTROL_BIT) != 0
}

/// Appends to `out` what the cleaner keeps of `batch` (one whole batch, CRC already checked
/// by the reader). Transactional and control batches are kept as is (see
/// `keep_transactional_batch_as_is`).
pub(crate) fn filter_batch(
    batch: &[u8],
    header: &RecordBatchHeader,
    ctx: &FilterContext<'_>,
    out: &mut Vec<u8>,
) -> Result<Filtered, MalformedRecord> {
    if keep_transactional_batch_as_is(header) {
        out.extend_from_slice(batch);
        return Ok(Filtered::Kept);
    }
    let horizon = (header.attributes & DELETE_HORIZON_BIT != 0).then_some(header.base_timestamp);
    let mut kept = 0usize;
    let mut tombstones_kept = false;
    // A compressed batch is decided on its decompressed records; one that keeps only some
    // of them is rewritten uncompressed (Kafka re-compresses it with the same codec; Sluice
    // has no compressors yet). One that keeps all of them stays as it is, compressed.
    let compressed = header.attributes & COMPRESSION_MASK != 0;
    let decompressed;
    let body = if compressed {
        decompressed = record_batch::decompressed_records_section(batch)
            .map_err(|_| MalformedRecord("compressed records unreadable"))?;
        &decompressed[..]
    } else {
        &batch[RECORD_BATCH_OVERHEAD..]
    };
    let total = usize::try_from(header.records_count).unwrap_or(0);
    for r in RecordWalker::new(body, header.records_count) {
        let r = r?;
        let offset = header.base_offset + i64::from(r.offset_delta);
        if retain(ctx, offset, r.key, r.has_value, horizon) {
            kept += 1;
            tombstones_kept |= !r.has_value;
        }
    }
    if kept == 0 {
        return Ok(empty_or_drop(batch, header, ctx, out));
    }
    let new_horizon = (tombstones_kept && horizon.is_none())
        .then(|| ctx.now_ms.saturating_add(ctx.delete_retention_ms));
    if kept == total && new_horizon.is_none() {
        out.extend_from_slice(batch);
        return Ok(Filtered::Kept);
    }
    let start = out.len();
    out.extend_from_slice(&batch[..RECORD_BATCH_OVERHEAD]);
    let old_base_timestamp = header.base_timestamp;
    for r in RecordWalker::new(body, header.records_count) {
        let r = r?;
        let offset = header.base_offset + i64::from(r.offset_delta);
        if !retain(ctx, offset, r.key, r.has_value, horizon) {
            continue;
        }
        match new_horizon {
            None => out.extend_from_slice(&body[r.start..r.end]),
            Some(h) => {
                // The base timestamp becomes the horizon: the delta is re-based so the
                // record's timestamp reads the same.
                let ts = old_base_timestamp.wrapping_add(r.timestamp_delta);
                let delta = ts.wrapping_sub(h);
                let rest = &body[r.after_timestamp..r.end];
                let len = 1 + varlong_len(delta) + rest.len();
                put_varlong(out, len as i64);
                out.push(r.attributes);
                put_varlong(out, delta);
                out.extend_from_slice(rest);
            }
        }
    }
    let batch_out = &mut out[start..];
    let mut attributes = header.attributes & !COMPRESSION_MASK;
    if let Some(h) = new_horizon {
        attributes |= DELETE_HORIZON_BIT;
        batch_out[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&h.to_be_bytes());
    }
    batch_out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    finish_header(batch_out, kept as i32);
    Ok(Filtered::Rewritten {
        delete_horizon_ms: new_horizon,
    })
}

/// An emptied batch: dropped, unless it is its producer's last batch (then only its header
/// stays, uncompressed, as Kafka's `writeEmptyHeader`).
fn empty_or_drop(
    batch: &[u8],
    header: &RecordBatchHeader,
    ctx: &FilterContext<'_>,
    out: &mut Vec<u8>,
) -> Filtered {
    let last_of_producer = header.producer_id >= 0
        && ctx.producer_last_batch.get(&header.producer_id) == Some(&header.base_offset);
    if !last_of_producer {
        return Filtered::Dropped;
    }
    push_empty_header(batch, header, out);
    Filtered::Emptied
}

/// Appends the header of `batch` as an empty batch: same offsets, producer fields and
/// timestamps, no records, no compression.
pub(crate) fn push_empty_header(batch: &[u8], header: &RecordBatchHeader, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&batch[..RECORD_BATCH_OVERHEAD]);
    let attributes = header.attributes & (TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT);
    out[start + ATTRIBUTES_OFFSET..start + ATTRIBUTES_OFFSET + 2]
        .copy_from_slice(&attributes.to_be_bytes());
    finish_header(&mut out[start..], 0);
}

/// Sets `batchLength` and `recordsCount` of a rebuilt batch and recomputes its CRC32C.
fn finish_header(batch: &mut [u8], records: i32) {
    let batch_length = (batch.len() - LOG_OVERHEAD) as i32;
    batch[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4]
        .copy_from_slice(&batch_length.to_be_bytes());
    batch[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&records.to_be_bytes());
    let crc = sluice_protocol::crc::crc32c(&batch[ATTRIBUTES_OFFSET..]);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

fn varlong_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use sluice_protocol::record_batch::{
        parse_header, read_records, validate_crc, RecordBatchBuilder,
    };

    fn header(b: &[u8]) -> RecordBatchHeader {
        parse_header(b).unwrap()
    }

    /// The map after a dirty section whose latest "a" is at offset 102 and "b" at 101.
    fn map_a102_b101() -> OffsetMap {
        let mut map = OffsetMap::new(1 << 12);
        map.put(b"a", 102);
        map.put(b"b", 101);
        map
    }

    /// What the cleaner keeps of `batch` under `ctx`, and the bytes it wrote.
    fn filter(batch: &[u8], ctx: &FilterContext<'_>) -> (Filtered, Vec<u8>) {
        let mut out = Vec::new();
        let got = filter_batch(batch, &header(batch), ctx, &mut out).unwrap();
        (got, out)
    }

    /// A clean at 10,000 ms with `delete.retention.ms` 500.
    fn at_10_000_ms<'a>(map: &'a OffsetMap, producers: &'a HashMap<i64, i64>) -> FilterContext<'a> {
        FilterContext {
            map,
            now_ms: 10_000,
            delete_retention_ms: 500,
            producer_last_batch: producers,
        }
    }

    #[test]
    fn rewrite_keeps_offsets_and_sets_the_delete_horizon() {
        let batch: Bytes = RecordBatchBuilder::new(5_000)
            .base_offset(100)
            .record_at(1, Some(b"a"), Some(b"1"))
            .record_at(2, Some(b"b"), None)
            .record_at(3, Some(b"a"), Some(b"2"))
            .build();
        let map = map_a102_b101();
        let producers = HashMap::new();
        let ctx = at_10_000_ms(&map, &producers);
        let (got, out) = filter(&batch, &ctx);
        assert_eq!(
            got,
            Filtered::Rewritten {
                delete_horizon_ms: Some(10_500)
            }
        );
        validate_crc(&out).unwrap();
        let h = header(&out);
        assert_eq!(
            (h.base_offset, h.last_offset_delta, h.records_count),
            (100, 2, 2)
        );
        assert_eq!(h.attributes & DELETE_HORIZON_BIT, DELETE_HORIZON_BIT);
        let records = read_records(&out).unwrap();
        let seen: Vec<_> = records
            .iter()
            .map(|r| (r.offset_delta, r.timestamp, r.key.clone(), r.value.clone()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (1, 5_002, Some(Bytes::from_static(b"b")), None),
                (
                    2,
                    5_003,
                    Some(Bytes::from_static(b"a")),
                    Some(Bytes::from_static(b"2"))
                ),
            ]
        );
        // Past the horizon the tombstone goes too.
        let later = FilterContext {
            now_ms: 10_500,
            ..ctx
        };
        let mut again = Vec::new();
        filter_batch(&out, &header(&out), &later, &mut again).unwrap();
        let records = read_records(&again).unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].offset_delta, 2);
        assert_eq!(records[0].timestamp, 5_003);
    }

    /// `batch` with its records section lz4-compressed, as a producer with
    /// `compression.type=lz4` sends it.
    fn lz4(batch: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
        encoder
            .write_all(&batch[RECORD_BATCH_OVERHEAD..])
            .expect("lz4");
        let body = encoder.finish().expect("lz4");
        let mut out = batch[..RECORD_BATCH_OVERHEAD].to_vec();
        out.extend_from_slice(&body);
        let attributes = header(batch).attributes | 3;
        out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
        finish_header(&mut out, header(batch).records_count);
        out
    }

    #[test]
    fn a_partly_stale_compressed_batch_is_rewritten_with_the_records_it_keeps() {
        let batch = lz4(&RecordBatchBuilder::new(5_000)
            .base_offset(100)
            .record_at(1, Some(b"a"), Some(b"1"))
            .record_at(2, Some(b"b"), Some(b"1"))
            .record_at(3, Some(b"a"), Some(b"2"))
            .build());
        assert_eq!(header(&batch).attributes & COMPRESSION_MASK, 3);
        let map = map_a102_b101();
        let producers = HashMap::new();
        let ctx = at_10_000_ms(&map, &producers);
        let (got, out) = filter(&batch, &ctx);
        assert_eq!(
            got,
            Filtered::Rewritten {
                delete_horizon_ms: None
            }
        );
        validate_crc(&out).unwrap();
        let h = header(&out);
        assert_eq!(h.attributes & COMPRESSION_MASK, 0, "written uncompressed");
        assert_eq!((h.base_offset, h.records_count), (100, 2));
        let seen: Vec<_> = read_records(&out)
            .unwrap()
            .iter()
            .map(|r| (r.offset_delta, r.timestamp, r.key.clone(), r.value.clone()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    1,
                    5_002,
                    Some(Bytes::from_static(b"b")),
                    Some(Bytes::from_static(b"1"))
                ),
                (
                    2,
                    5_003,
                    Some(Bytes::from_static(b"a")),
                    Some(Bytes::from_static(b"2"))
                ),
            ]
        );

        // Every record current: the compressed batch stays byte for byte.
        let map = map_a102_b101();
        let live = lz4(&RecordBatchBuilder::new(5_000)
            .base_offset(101)
            .record_at(0, Some(b"b"), Some(b"1"))
            .record_at(1, Some(b"a"), Some(b"2"))
            .build());
        let ctx = FilterContext { map: &map, ..ctx };
        let mut kept = Vec::new();
        let got = filter_batch(&live, &header(&live), &ctx, &mut kept).unwrap();
        assert_eq!((got, kept), (Filtered::Kept, live));

        // Every record superseded: the batch goes.
        let mut map = OffsetMap::new(1 << 12);
        map.put(b"a", 500);
        map.put(b"b", 500);
        let ctx = FilterContext { map: &map, ..ctx };
        let mut none = Vec::new();
        let got = filter_batch(&batch, &header(&batch), &ctx, &mut none).unwrap();
        assert_eq!((got, none.len()), (Filtered::Dropped, 0));
    }

    #[test]
    fn emptied_batch_of_a_producer_keeps_its_header_when_last() {
        let batch: Bytes = RecordBatchBuilder::new(1)
            .base_offset(7)
            .producer(42, 0, 3)
            .record(Some(b"k"), Some(b"v"))
            .build();
        let mut map = OffsetMap::new(1 << 12);
        map.put(b"k", 50);
        let producers = HashMap::new();
        let ctx = |p| FilterContext {
            map: &map,
            now_ms: 0,
            delete_retention_ms: 0,
            producer_last_batch: p,
        };
        let ctx = &ctx;
        let mut out = Vec::new();
        assert_eq!(
            filter_batch(&batch, &header(&batch), &ctx(&producers), &mut out).unwrap(),
            Filtered::Dropped
        );
        let producers = HashMap::from([(42, 7)]);
        assert_eq!(
            filter_batch(&batch, &header(&batch), &ctx(&producers), &mut out).unwrap(),
            Filtered::Emptied
        );
        validate_crc(&out).unwrap();
        let h = header(&out);
        assert_eq!(
            (h.records_count, h.producer_id, h.base_sequence),
            (0, 42, 3)
        );
        assert_eq!(out.len(), RECORD_BATCH_OVERHEAD);
    }

    #[test]
    fn keyless_records_are_removed_and_walker_rejects_garbage() {
        let batch: Bytes = RecordBatchBuilder::new(1)
            .record(None, Some(b"x"))
            .record(Some(b"k"), Some(b"y"))
            .build();
        let map = OffsetMap::new(1 << 12);
        let producers = HashMap::new();
        let ctx = FilterContext {
            map: &map,
            now_ms: 0,
            delete_retention_ms: 0,
            producer_last_batch: &producers,
        };
        let mut out = Vec::new();
        filter_batch(&batch, &header(&batch), &ctx, &mut out).unwrap();
        assert_eq!(read_records(&out).unwrap().len(), 1);
        let garbage = [0xffu8; 12];
        assert!(RecordWalker::new(&garbage, 1).next().unwrap().is_err());
    }
}
