//! Writes uncompressed v2 batches (tests, load generators, control records).

use bytes::{BufMut, Bytes, BytesMut};

use super::{CRC_OFFSET, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, TRANSACTIONAL_BIT};
use crate::codec::Encoder;

struct PendingRecord {
    timestamp_delta: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

/// Builds one uncompressed v2 batch. Records carry no headers.
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    base_timestamp: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    records: Vec<PendingRecord>,
}

impl RecordBatchBuilder {
    /// A non-idempotent batch whose first record has `base_timestamp`.
    pub fn new(base_timestamp: i64) -> RecordBatchBuilder {
        RecordBatchBuilder {
            base_offset: 0,
            partition_leader_epoch: -1,
            base_timestamp,
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            records: Vec::new(),
        }
    }

    /// Sets the base offset (producers send 0; the broker rewrites it).
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets the partition leader epoch.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Marks the batch idempotent.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets the transactional attribute bit.
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Appends a record stamped at the base timestamp.
    pub fn record(self, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.record_at(0, key, value)
    }

    /// Appends a record `timestamp_delta` ms after the base timestamp.
    pub fn record_at(
        mut self,
        timestamp_delta: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Self {
        self.records.push(PendingRecord {
            timestamp_delta,
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
        });
        self
    }

    /// Appends `n` records with null keys and `value` as the value.
    pub fn records(mut self, n: usize, value: &[u8]) -> Self {
        let value = Bytes::copy_from_slice(value);
        for _ in 0..n {
            self.records.push(PendingRecord {
                timestamp_delta: 0,
                key: None,
                value: Some(value.clone()),
            });
        }
        self
    }

    /// Encodes the batch with correct lengths and CRC.
    pub fn build(&self) -> Bytes {
        let body = self.encode_records();
        let count = i32::try_from(self.records.len()).unwrap_or(i32::MAX);
        let max_delta = self
            .records
            .iter()
            .map(|r| r.timestamp_delta)
            .max()
            .unwrap_or(0);
        let mut buf = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + body.len());
        buf.put_i64(self.base_offset);
        buf.put_i32((RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + body.len()) as i32);
        buf.put_i32(self.partition_leader_epoch);
        buf.put_i8(2);
        buf.put_u32(0); // CRC, patched below
        buf.put_i16(if self.transactional {
            TRANSACTIONAL_BIT
        } else {
            0
        });
        buf.put_i32((count - 1).max(0));
        buf.put_i64(self.base_timestamp);
        buf.put_i64(self.base_timestamp.saturating_add(max_delta));
        buf.put_i64(self.producer_id);
        buf.put_i16(self.producer_epoch);
        buf.put_i32(self.base_sequence);
        buf.put_i32(count);
        buf.put_slice(&body);
        let crc = super::compute_crc(&buf);
        if let Some(slot) = buf.get_mut(CRC_OFFSET..CRC_OFFSET + 4) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        buf.freeze()
    }

    fn encode_records(&self) -> BytesMut {
        let mut out = Encoder::new();
        for (delta, r) in self.records.iter().enumerate() {
            let mut rec = Encoder::new();
            rec.put_i8(0); // record attributes: unused
            rec.put_varlong(r.timestamp_delta);
            rec.put_varint(delta as i32);
            put_varint_bytes(&mut rec, r.key.as_deref());
            put_varint_bytes(&mut rec, r.value.as_deref());
            rec.put_varint(0); // header count
            out.put_varint(rec.len() as i32);
            out.put_raw(rec.as_slice());
        }
        out.into_inner()
    }
}

/// Record keys and values use a zigzag varint length, -1 for null.
fn put_varint_bytes(e: &mut Encoder, b: Option<&[u8]>) {
    match b {
        None => e.put_varint(-1),
        Some(b) => {
            e.put_varint(b.len() as i32);
            e.put_raw(b);
        }
    }
}
