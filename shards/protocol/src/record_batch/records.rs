//! The records inside a v2 batch, decompressed when the batch is compressed.
//!
//! The data path never needs this — batches are stored and served as sent — but lookups that
//! must name one record do (ListOffsets by timestamp returns the first *record* at or after a
//! time), and so will compaction. Decompression is bounded: a batch may not inflate beyond
//! `DECOMPRESSED_BYTES_MAX`, so a small hostile batch cannot exhaust memory.

use std::io::Read;

use bytes::Bytes;

use super::{parse_header, Compression, RECORD_BATCH_OVERHEAD};

/// Largest decompressed record section accepted (Kafka's default max.message.bytes is 1 MiB;
/// compression ratios of 60x are unusual but legal).
pub const DECOMPRESSED_BYTES_MAX: usize = 64 << 20;

/// xerial snappy framing (snappy-java's stream format, which Kafka's Java client writes).
const XERIAL_MAGIC: &[u8] = &[0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_BYTES: usize = 16;

/// Why the records could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The batch header is not valid.
    #[error("batch header: {0}")]
    Header(#[from] super::RecordBatchError),
    /// The compressed data is corrupt or uses an unknown codec.
    #[error("cannot decompress {codec:?} records: {message}")]
    Decompress {
        /// The codec.
        codec: Compression,
        /// What failed.
        message: String,
    },
    /// The records inflate past `DECOMPRESSED_BYTES_MAX`.
    #[error("records inflate past {DECOMPRESSED_BYTES_MAX} bytes")]
    TooLarge,
    /// A record is malformed.
    #[error("malformed record: {0}")]
    Malformed(&'static str),
}

/// One record, as far as lookups need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    /// Absolute timestamp (base timestamp + delta; the batch's max timestamp for log-append time).
    pub timestamp: i64,
    /// Key, if any.
    pub key: Option<Bytes>,
    /// Value, if any (None is a tombstone).
    pub value: Option<Bytes>,
}

/// Reads every record of one whole batch (the CRC is not checked here).
pub fn read_records(batch: &[u8]) -> Result<Vec<Record>, RecordsError> {
    let header = parse_header(batch)?;
    let body = batch
        .get(RECORD_BATCH_OVERHEAD..header.size_bytes().min(batch.len()))
        .unwrap_or_default();
    let data = decompress(header.compression(), body)?;
    let log_append_time = header
        .timestamp_type_log_append()
        .then_some(header.max_timestamp);
    let count = usize::try_from(header.records_count)
        .map_err(|_| RecordsError::Malformed("negative count"))?;
    let mut reader = Reader {
        buf: Bytes::from(data),
        pos: 0,
    };
    // Every record takes at least 7 bytes, so the count cannot force a large allocation.
    let mut records = Vec::with_capacity(count.min(reader.buf.len() / 7 + 1));
    for _ in 0..count {
        let record = reader.record(header.base_timestamp, log_append_time)?;
        records.push(record);
    }
    Ok(records)
}

/// The records section of `batch` decompressed (as it would be in an uncompressed batch of
/// the same records), bounded like [`read_records`]. The log cleaner rewrites the records it
/// keeps of a compressed batch from it.
pub fn decompressed_records_section(batch: &[u8]) -> Result<Vec<u8>, RecordsError> {
    let header = parse_header(batch)?;
    let body = batch
        .get(RECORD_BATCH_OVERHEAD..header.size_bytes().min(batch.len()))
        .unwrap_or_default();
    decompress(header.compression(), body)
}

/// Indexes (within the batch) of the records without a key, for Kafka's `validateKey`: a
/// compacted topic refuses them. An uncompressed batch is walked in place (nothing allocated
/// unless a keyless record is found); a compressed one is decompressed first.
pub fn keyless_record_indexes(batch: &[u8]) -> Result<Vec<i32>, RecordsError> {
    let header = parse_header(batch)?;
    let count = usize::try_from(header.records_count)
        .map_err(|_| RecordsError::Malformed("negative count"))?;
    let mut keyless = Vec::new();
    if header.compression() != Compression::None {
        for (i, r) in read_records(batch)?.iter().enumerate() {
            if r.key.is_none() {
                keyless.push(i as i32);
            }
        }
        return Ok(keyless);
    }
    let body = batch
        .get(RECORD_BATCH_OVERHEAD..header.size_bytes().min(batch.len()))
        .unwrap_or_default();
    let mut walker = SliceReader { buf: body, pos: 0 };
    for i in 0..count {
        let length = usize::try_from(walker.varlong()?)
            .map_err(|_| RecordsError::Malformed("negative record length"))?;
        let end = walker
            .pos
            .checked_add(length)
            .filter(|end| *end <= body.len())
            .ok_or(RecordsError::Malformed("record past the batch end"))?;
        walker.pos += 1; // attributes
        walker.varlong()?; // timestamp delta
        walker.varlong()?; // offset delta
        if walker.varlong()? < 0 {
            keyless.push(i as i32);
        }
        walker.pos = end;
    }
    Ok(keyless)
}

/// Varints over a borrowed slice (no copy of the records).
struct SliceReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl SliceReader<'_> {
    fn varlong(&mut self) -> Result<i64, RecordsError> {
        let mut raw: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .buf
                .get(self.pos)
                .ok_or(RecordsError::Malformed("truncated record"))?;
            self.pos += 1;
            raw |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(RecordsError::Malformed("varint too long"))
    }
}

fn decompress(codec: Compression, body: &[u8]) -> Result<Vec<u8>, RecordsError> {
    let failed = |message: String| RecordsError::Decompress { codec, message };
    match codec {
        Compression::None => Ok(body.to_vec()),
        Compression::Gzip => read_bounded(flate2::read::GzDecoder::new(body)).map_err(failed),
        Compression::Lz4 => read_bounded(lz4_flex::frame::FrameDecoder::new(body)).map_err(failed),
        Compression::Zstd => {
            let decoder =
                ruzstd::decoding::StreamingDecoder::new(body).map_err(|e| failed(e.to_string()))?;
            read_bounded(decoder).map_err(failed)
        }
        Compression::Snappy => snappy(body).map_err(failed),
        Compression::Unknown(id) => Err(failed(format!("codec id {id}"))),
    }
}

fn read_bounded(reader: impl Read) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let read = reader
        .take(DECOMPRESSED_BYTES_MAX as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if read > DECOMPRESSED_BYTES_MAX {
        return Err(RecordsError::TooLarge.to_string());
    }
    Ok(out)
}

/// Kafka's Java client writes xerial-framed snappy; librdkafka may write raw snappy.
fn snappy(body: &[u8]) -> Result<Vec<u8>, String> {
    if !body.starts_with(XERIAL_MAGIC) {
        return snappy_block(body, 0);
    }
    let mut out = Vec::new();
    let mut rest = body
        .get(XERIAL_HEADER_BYTES..)
        .ok_or("short xerial header")?;
    while !rest.is_empty() {
        let len_bytes: [u8; 4] = rest
            .get(..4)
            .ok_or("short xerial block length")?
            .try_into()
            .map_err(|_| "length")?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        let block = rest.get(4..4 + len).ok_or("short xerial block")?;
        out.extend(snappy_block(block, out.len())?);
        rest = &rest[4 + len..];
    }
    Ok(out)
}

fn snappy_block(block: &[u8], already: usize) -> Result<Vec<u8>, String> {
    let len = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
    if already + len > DECOMPRESSED_BYTES_MAX {
        return Err(RecordsError::TooLarge.to_string());
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| e.to_string())
}

struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    fn record(
        &mut self,
        base_timestamp: i64,
        log_append_time: Option<i64>,
    ) -> Result<Record, RecordsError> {
        let length = self.varint()?;
        let length = usize::try_from(length)
            .map_err(|_| RecordsError::Malformed("negative record length"))?;
        let end = self
            .pos
            .checked_add(length)
            .filter(|end| *end <= self.buf.len());
        let end = end.ok_or(RecordsError::Malformed("record past the batch end"))?;
        self.byte()?; // attributes: unused in v2
        let timestamp_delta = self.varlong()?;
        let offset_delta = self.varint()?;
        let key = self.bytes()?;
        let value = self.bytes()?;
        // Headers are skipped: the record's length says where it ends.
        self.pos = end;
        Ok(Record {
            offset_delta,
            timestamp: log_append_time.unwrap_or(base_timestamp.wrapping_add(timestamp_delta)),
            key,
            value,
        })
    }

    fn byte(&mut self) -> Result<u8, RecordsError> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(RecordsError::Malformed("truncated record"))?;
        self.pos += 1;
        Ok(b)
    }

    fn varlong(&mut self) -> Result<i64, RecordsError> {
        let mut raw: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            raw |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(RecordsError::Malformed("varint too long"))
    }

    fn varint(&mut self) -> Result<i32, RecordsError> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| RecordsError::Malformed("varint out of range"))
    }

    fn bytes(&mut self) -> Result<Option<Bytes>, RecordsError> {
        let len = self.varint()?;
        if len < 0 {
            return Ok(None);
        }
        let end = self
            .pos
            .checked_add(len as usize)
            .filter(|end| *end <= self.buf.len());
        let end = end.ok_or(RecordsError::Malformed("field past the record end"))?;
        let out = self.buf.slice(self.pos..end);
        self.pos = end;
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record_batch::RecordBatchBuilder;

    #[test]
    fn uncompressed_records_read_back_with_their_timestamps() {
        let batch = RecordBatchBuilder::new(1_000)
            .record_at(0, Some(b"k0"), Some(b"v0"))
            .record_at(250, None, Some(b"v1"))
            .record_at(500, Some(b"k2"), None)
            .build();
        let records = read_records(&batch).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[1].offset_delta, 1);
        assert_eq!(records[1].timestamp, 1_250);
        assert_eq!(records[0].key.as_deref(), Some(&b"k0"[..]));
        assert_eq!(records[2].value, None);
    }

    #[test]
    fn keyless_records_are_found_by_index() {
        let batch = RecordBatchBuilder::new(1_000)
            .record(Some(b"k0"), Some(b"v0"))
            .record(None, Some(b"v1"))
            .record(Some(b""), None)
            .record(None, None)
            .build();
        assert_eq!(keyless_record_indexes(&batch).unwrap(), vec![1, 3]);
        let keyed = RecordBatchBuilder::new(1).record(Some(b"k"), None).build();
        assert!(keyless_record_indexes(&keyed).unwrap().is_empty());
        assert!(keyless_record_indexes(&batch[..batch.len() - 3]).is_err());
    }

    #[test]
    fn every_truncation_and_flip_is_an_error_or_a_value_never_a_panic() {
        let batch = RecordBatchBuilder::new(7).records(20, b"value").build();
        for len in 0..batch.len() {
            let _ = read_records(&batch[..len]);
        }
        for i in RECORD_BATCH_OVERHEAD..batch.len() {
            for bit in 0..8 {
                let mut copy = batch.to_vec();
                copy[i] ^= 1 << bit;
                let _ = read_records(&copy);
            }
        }
    }

    #[test]
    fn a_decompression_bomb_is_refused() {
        use std::io::Write;
        let zeros = vec![0u8; DECOMPRESSED_BYTES_MAX + 1024];
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&zeros).unwrap();
        let compressed = encoder.finish().unwrap();
        assert!(matches!(
            decompress(Compression::Gzip, &compressed),
            Err(RecordsError::Decompress { .. })
        ));
    }
}
