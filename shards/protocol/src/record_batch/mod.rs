//! Zero-copy views over v2 record batches (Kafka "magic 2" message format).
//!
//! Layout of the 61-byte batch header (offsets in bytes):
//! `base_offset` i64 @0, `batch_length` i32 @8 (counts from offset 12),
//! `partition_leader_epoch` i32 @12, `magic` i8 @16, `crc` u32 @17 (CRC-32C over
//! offset 21 to the end), `attributes` i16 @21, `last_offset_delta` i32 @23,
//! `base_timestamp` i64 @27, `max_timestamp` i64 @35, `producer_id` i64 @43,
//! `producer_epoch` i16 @51, `base_sequence` i32 @53, `records_count` i32 @57.

mod builder;
mod iter;
mod records;

pub use builder::RecordBatchBuilder;
pub use iter::{frame_first_batch, RecordBatches};
pub use records::{
    decompressed_records_section, keyless_record_indexes, read_records, Record, RecordsError,
    DECOMPRESSED_BYTES_MAX,
};

use thiserror::Error;

/// Size of the fixed batch header; also the size of an empty batch.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Bytes before `batch_length` starts counting (`base_offset` + `batch_length`).
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal `batch_length`.
pub const MIN_BATCH_LENGTH: i32 = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;

const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const MAX_TIMESTAMP_OFFSET: usize = 35;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;

/// Why a record batch is unusable.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordBatchError {
    /// The buffer ends inside the batch. Fetch responses may legally end this
    /// way; in a log it marks a torn tail to cut.
    #[error("truncated batch: needed {needed} bytes, {remaining} available")]
    Truncated {
        /// Bytes the batch needs.
        needed: usize,
        /// Bytes available.
        remaining: usize,
    },
    /// `batch_length` below the header size.
    #[error("invalid batch length {0}")]
    InvalidBatchLength(i32),
    /// Not a v2 batch.
    #[error("unsupported magic {0}")]
    InvalidMagic(i8),
    /// Stored CRC does not match the contents.
    #[error("crc mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    CrcMismatch {
        /// CRC in the header.
        stored: u32,
        /// CRC of the bytes.
        computed: u32,
    },
    /// Negative record count.
    #[error("invalid records count {0}")]
    InvalidRecordsCount(i32),
    /// `last_offset_delta` does not fit `records_count`.
    #[error("last offset delta {last_offset_delta} inconsistent with {records_count} records")]
    InvalidOffsetRange {
        /// Header `last_offset_delta`.
        last_offset_delta: i32,
        /// Header `records_count`.
        records_count: i32,
    },
    /// Compression codec id 5..=7.
    #[error("unknown compression codec {0}")]
    UnknownCompression(u8),
    /// Clients may not write control batches.
    #[error("control batch from a client")]
    ControlBatchFromClient,
}

/// Compression codec from the low three attribute bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// gzip.
    Gzip,
    /// Snappy (xerial framing).
    Snappy,
    /// LZ4 frame.
    Lz4,
    /// Zstandard.
    Zstd,
    /// Codec id Kafka does not define.
    Unknown(u8),
}

/// The decoded fixed header of a v2 batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after this field (total size minus 12).
    pub batch_length: i32,
    /// Leader epoch stamped by the broker on append.
    pub partition_leader_epoch: i32,
    /// Format version; 2 for this layout.
    pub magic: i8,
    /// CRC-32C of everything from `attributes` to the end.
    pub crc: u32,
    /// Compression, timestamp type, transactional and control bits.
    pub attributes: i16,
    /// Offset of the last record relative to `base_offset`.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// Largest timestamp in the batch (or the log-append time).
    pub max_timestamp: i64,
    /// Idempotent producer id, -1 if none.
    pub producer_id: i64,
    /// Producer epoch, -1 if none.
    pub producer_epoch: i16,
    /// Sequence of the first record, -1 if none.
    pub base_sequence: i32,
    /// Number of records.
    pub records_count: i32,
}

impl RecordBatchHeader {
    /// Compression codec.
    pub fn compression(&self) -> Compression {
        match (self.attributes & COMPRESSION_MASK) as u8 {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => Compression::Unknown(other),
        }
    }

    /// True if timestamps are broker log-append times.
    pub fn timestamp_type_log_append(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_BIT != 0
    }

    /// True for transactional batches.
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// True for control (transaction marker) batches.
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// Offset the next batch starts at.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }

    /// Total bytes of the batch including offset and length fields.
    pub fn size_bytes(&self) -> usize {
        usize::try_from(self.batch_length).unwrap_or(0) + LOG_OVERHEAD
    }
}

fn field<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(at..at + N) {
        out.copy_from_slice(src);
    }
    out
}

fn need(buf: &[u8], needed: usize) -> Result<(), RecordBatchError> {
    if buf.len() < needed {
        Err(RecordBatchError::Truncated {
            needed,
            remaining: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Decodes the 61-byte header at the start of `buf` (which may hold more).
/// Checks only that the header is present and `batch_length` is not below the
/// header size, so that `size_bytes()` can be trusted to skip the batch.
pub fn parse_header(buf: &[u8]) -> Result<RecordBatchHeader, RecordBatchError> {
    need(buf, RECORD_BATCH_OVERHEAD)?;
    let header = RecordBatchHeader {
        base_offset: i64::from_be_bytes(field(buf, 0)),
        batch_length: i32::from_be_bytes(field(buf, 8)),
        partition_leader_epoch: i32::from_be_bytes(field(buf, PARTITION_LEADER_EPOCH_OFFSET)),
        magic: i8::from_be_bytes(field(buf, MAGIC_OFFSET)),
        crc: u32::from_be_bytes(field(buf, CRC_OFFSET)),
        attributes: i16::from_be_bytes(field(buf, ATTRIBUTES_OFFSET)),
        last_offset_delta: i32::from_be_bytes(field(buf, 23)),
        base_timestamp: i64::from_be_bytes(field(buf, 27)),
        max_timestamp: i64::from_be_bytes(field(buf, MAX_TIMESTAMP_OFFSET)),
        producer_id: i64::from_be_bytes(field(buf, 43)),
        producer_epoch: i16::from_be_bytes(field(buf, 51)),
        base_sequence: i32::from_be_bytes(field(buf, 53)),
        records_count: i32::from_be_bytes(field(buf, 57)),
    };
    if header.batch_length < MIN_BATCH_LENGTH {
        return Err(RecordBatchError::InvalidBatchLength(header.batch_length));
    }
    Ok(header)
}

/// CRC-32C of a whole batch's checksummed region (offset 21 to its end).
fn compute_crc(batch: &[u8]) -> u32 {
    crate::crc::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or_default())
}

/// Checks the integrity of one batch at the start of `buf`: fully present, v2,
/// CRC intact. No rule on the header's counts or codec: this is what a log's
/// recovery checks (Kafka's `ensureValid`); [`validate_batch`] adds the rest.
pub fn validate_crc(buf: &[u8]) -> Result<RecordBatchHeader, RecordBatchError> {
    let header = parse_header(buf)?;
    let size = header.size_bytes();
    need(buf, size)?;
    if header.magic != 2 {
        return Err(RecordBatchError::InvalidMagic(header.magic));
    }
    let computed = compute_crc(buf.get(..size).unwrap_or_default());
    if computed != header.crc {
        return Err(RecordBatchError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    Ok(header)
}

/// Checks one batch at the start of `buf`: fully present, v2, CRC intact, and
/// header fields consistent (non-negative count; `last_offset_delta` covering
/// the records, which compaction may thin out but never exceed; known codec).
pub fn validate_batch(buf: &[u8]) -> Result<RecordBatchHeader, RecordBatchError> {
    let header = validate_crc(buf)?;
    check_counts(&header)?;
    if let Compression::Unknown(id) = header.compression() {
        return Err(RecordBatchError::UnknownCompression(id));
    }
    Ok(header)
}

fn check_counts(h: &RecordBatchHeader) -> Result<(), RecordBatchError> {
    if h.records_count < 0 {
        return Err(RecordBatchError::InvalidRecordsCount(h.records_count));
    }
    let bad_range = h.last_offset_delta < 0
        || (h.records_count > 0 && h.last_offset_delta < h.records_count - 1);
    if bad_range {
        return Err(RecordBatchError::InvalidOffsetRange {
            last_offset_delta: h.last_offset_delta,
            records_count: h.records_count,
        });
    }
    Ok(())
}

/// [`validate_batch`] plus the stricter rules Kafka's LogValidator applies to
/// batches arriving in a Produce request: at least one record, offsets dense
/// (`last_offset_delta + 1 == records_count`), and no control batches.
pub fn validate_produce_batch(buf: &[u8]) -> Result<RecordBatchHeader, RecordBatchError> {
    let header = validate_batch(buf)?;
    if header.records_count <= 0 {
        return Err(RecordBatchError::InvalidRecordsCount(header.records_count));
    }
    if i64::from(header.last_offset_delta) + 1 != i64::from(header.records_count) {
        return Err(RecordBatchError::InvalidOffsetRange {
            last_offset_delta: header.last_offset_delta,
            records_count: header.records_count,
        });
    }
    if header.is_control() {
        return Err(RecordBatchError::ControlBatchFromClient);
    }
    Ok(header)
}

/// Rewrites `base_offset` (not covered by the CRC, so no recompute).
pub fn set_base_offset(buf: &mut [u8], base_offset: i64) -> Result<(), RecordBatchError> {
    write_at(buf, 0, &base_offset.to_be_bytes())
}

/// Rewrites `partition_leader_epoch` (not covered by the CRC).
pub fn set_partition_leader_epoch(buf: &mut [u8], epoch: i32) -> Result<(), RecordBatchError> {
    write_at(buf, PARTITION_LEADER_EPOCH_OFFSET, &epoch.to_be_bytes())
}

/// Stamps a batch with the broker's log-append time: sets `max_timestamp`, the
/// timestamp-type attribute bit, and recomputes the CRC (both are covered).
pub fn set_max_timestamp_and_log_append_time(
    buf: &mut [u8],
    max_timestamp: i64,
) -> Result<(), RecordBatchError> {
    let header = parse_header(buf)?;
    let size = header.size_bytes();
    need(buf, size)?;
    let attributes = header.attributes | TIMESTAMP_TYPE_BIT;
    write_at(buf, ATTRIBUTES_OFFSET, &attributes.to_be_bytes())?;
    write_at(buf, MAX_TIMESTAMP_OFFSET, &max_timestamp.to_be_bytes())?;
    let crc = compute_crc(buf.get(..size).unwrap_or_default());
    write_at(buf, CRC_OFFSET, &crc.to_be_bytes())
}

fn write_at(buf: &mut [u8], at: usize, value: &[u8]) -> Result<(), RecordBatchError> {
    let remaining = buf.len();
    match buf.get_mut(at..at + value.len()) {
        Some(slot) => {
            slot.copy_from_slice(value);
            Ok(())
        }
        None => Err(RecordBatchError::Truncated {
            needed: at + value.len(),
            remaining,
        }),
    }
}

#[cfg(test)]
mod tests;
