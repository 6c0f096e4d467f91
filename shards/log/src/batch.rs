//! The log's view of record batch v2 framing, built on
//! `sluice_protocol::record_batch`.
//!
//! The log only needs the framing fields (offsets, length, magic, CRC,
//! timestamps) to assign offsets, build its index and recover; the parsing
//! and CRC checking are the protocol crate's. What stays here is what is the
//! log's own: its stricter header rules (magic and `lastOffsetDelta` checked
//! on every header, not only on validation), its error kinds (recovery adds
//! offset continuity) and a header walker over plain byte slices.

use sluice_protocol::record_batch::{self, RecordBatchError, RecordBatchHeader};

pub(crate) use sluice_protocol::record_batch::RECORD_BATCH_OVERHEAD;

pub(crate) const MAGIC_V2: i8 = 2;

/// Why bytes are not a well-formed batch. Recovery treats all of them alike
/// (truncate here); the append path reports them as `LogError::InvalidBatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchError {
    /// Fewer bytes than the header or than `batchLength` says.
    Truncated,
    /// `batchLength` smaller than a header.
    BadLength(i32),
    BadMagic(i8),
    BadCrc,
    BadLastOffsetDelta(i32),
    /// Base offset not where the previous batch ended (recovery only).
    BadOffset(i64),
    /// Any other rule of the protocol crate (not raised by the checks the
    /// log asks for, kept so that the mapping is total).
    Other(RecordBatchError),
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Truncated => write!(f, "truncated batch"),
            Self::BadLength(l) => write!(f, "invalid batch length {l}"),
            Self::BadMagic(m) => write!(f, "unsupported magic {m}"),
            Self::BadCrc => write!(f, "CRC mismatch"),
            Self::BadLastOffsetDelta(d) => write!(f, "invalid lastOffsetDelta {d}"),
            Self::BadOffset(o) => write!(f, "unexpected base offset {o}"),
            Self::Other(e) => e.fmt(f),
        }
    }
}

impl From<RecordBatchError> for BatchError {
    fn from(e: RecordBatchError) -> Self {
        match e {
            RecordBatchError::Truncated { .. } => Self::Truncated,
            RecordBatchError::InvalidBatchLength(l) => Self::BadLength(l),
            RecordBatchError::InvalidMagic(m) => Self::BadMagic(m),
            RecordBatchError::CrcMismatch { .. } => Self::BadCrc,
            other => Self::Other(other),
        }
    }
}

/// The framing fields of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub base_offset: i64,
    /// Whole batch size on disk: `batchLength + 12`.
    pub size: usize,
    pub last_offset_delta: i32,
    /// Timestamp of the first record (CreateTime; -1 for none).
    pub base_timestamp: i64,
    /// Largest timestamp in the batch, reported back by appends.
    pub max_timestamp: i64,
    /// The leader epoch the batch was appended under (-1: none), outside the CRC.
    pub partition_leader_epoch: i32,
}

impl BatchHeader {
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    /// Offsets the batch occupies (lastOffsetDelta + 1; compaction may leave
    /// fewer records, but offsets are still reserved for the whole range).
    pub fn offset_count(&self) -> i64 {
        i64::from(self.last_offset_delta) + 1
    }
}

impl From<RecordBatchHeader> for BatchHeader {
    fn from(h: RecordBatchHeader) -> Self {
        Self {
            base_offset: h.base_offset,
            size: h.size_bytes(),
            last_offset_delta: h.last_offset_delta,
            base_timestamp: h.base_timestamp,
            max_timestamp: h.max_timestamp,
            partition_leader_epoch: h.partition_leader_epoch,
        }
    }
}

/// Parses the header of the batch starting at `buf[0]`
/// ([`record_batch::parse_header`]: the whole 61-byte header must be present,
/// `batchLength` at least a header), and also requires magic 2 and a
/// non-negative `lastOffsetDelta`. Does not require the whole batch to be
/// present (the caller compares `size` with what it has).
pub(crate) fn parse_header(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    // A batch shorter than its own header cannot be valid; this is also
    // what catches zero-filled tails left by a crash.
    let header = record_batch::parse_header(buf)?;
    if header.magic != MAGIC_V2 {
        return Err(BatchError::BadMagic(header.magic));
    }
    if header.last_offset_delta < 0 {
        return Err(BatchError::BadLastOffsetDelta(header.last_offset_delta));
    }
    Ok(header.into())
}

/// Checks that `batch` (exactly one whole batch) has a full header and a
/// matching CRC32C ([`record_batch::validate_crc`]: integrity only, as
/// Kafka's recovery; the content rules are the produce path's).
pub(crate) fn check_crc(batch: &[u8]) -> Result<(), BatchError> {
    record_batch::validate_crc(batch)?;
    Ok(())
}

/// Rewrites the base offset in place. The CRC does not cover it, so the batch
/// stays valid.
pub(crate) fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    // Callers pass batches whose header they have parsed.
    record_batch::set_base_offset(batch, base_offset).expect("batch header present");
}

/// Rewrites `partitionLeaderEpoch` in place (outside the CRC, as the base offset).
pub(crate) fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    // Callers pass batches whose header they have parsed.
    record_batch::set_partition_leader_epoch(batch, epoch).expect("batch header present");
}

/// Stamps the batch at `batch[0]` with the broker's append time (LogAppendTime): its
/// `maxTimestamp` and timestamp-type attribute change and its CRC is recomputed, as Kafka's
/// `setMaxTimestamp(LOG_APPEND_TIME, now)`.
pub(crate) fn stamp_log_append_time(batch: &mut [u8], now_ms: i64) {
    // Callers pass batches whose header and length they have checked.
    record_batch::set_max_timestamp_and_log_append_time(batch, now_ms)
        .expect("whole batch present");
}

/// Number of records the producer says the batch holds (informational).
#[cfg(test)]
pub(crate) fn records_count(batch: &[u8]) -> i32 {
    record_batch::parse_header(batch).map_or(-1, |h| h.records_count)
}

/// Iterates over the headers of the whole batches at the start of `buf`,
/// yielding `(position, header)`; stops at the first incomplete or malformed
/// batch. `end_position()` then tells how far the whole batches reach.
///
/// Unlike `sluice_protocol::record_batch::RecordBatches` it works on any byte
/// slice (no `Bytes` needed) and applies the log's header rules.
pub(crate) struct HeaderWalker<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> HeaderWalker<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    #[cfg(test)]
    pub fn end_position(&self) -> usize {
        self.pos
    }
}

impl Iterator for HeaderWalker<'_> {
    type Item = (usize, BatchHeader);

    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.buf[self.pos..];
        let header = parse_header(rest).ok()?;
        if header.size > rest.len() {
            return None;
        }
        let at = self.pos;
        self.pos += header.size;
        Some((at, header))
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builds syntactically valid v2 batches for tests (records are opaque
    //! filler: the log never looks inside them).
    use super::*;
    use sluice_protocol::record_batch::LOG_OVERHEAD;

    /// A batch claiming `records` offsets with `payload` filler bytes and a
    /// correct CRC. The base offset is left at `base_offset`. Field positions
    /// as in `sluice_protocol::record_batch`'s layout.
    pub fn make_batch(base_offset: i64, records: i32, payload: usize, fill: u8) -> Vec<u8> {
        make_batch_ts(
            base_offset,
            records,
            payload,
            fill,
            1_000 + i64::from(records),
        )
    }

    /// [`make_batch`] with the given `maxTimestamp` (baseTimestamp at most 1,000).
    pub fn make_batch_ts(
        base_offset: i64,
        records: i32,
        payload: usize,
        fill: u8,
        max_timestamp: i64,
    ) -> Vec<u8> {
        let base_timestamp = max_timestamp.min(1_000);
        make_batch_times(
            base_offset,
            records,
            payload,
            fill,
            base_timestamp,
            max_timestamp,
        )
    }

    /// [`make_batch`] with the given `baseTimestamp` and `maxTimestamp`.
    pub fn make_batch_times(
        base_offset: i64,
        records: i32,
        payload: usize,
        fill: u8,
        base_timestamp: i64,
        max_timestamp: i64,
    ) -> Vec<u8> {
        assert!(records >= 1);
        let size = RECORD_BATCH_OVERHEAD + payload;
        let mut b = vec![0u8; size];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(0, &base_offset.to_be_bytes());
        put(8, &((size - LOG_OVERHEAD) as i32).to_be_bytes());
        put(16, &[MAGIC_V2 as u8]);
        put(23, &(records - 1).to_be_bytes()); // lastOffsetDelta
        put(27, &base_timestamp.to_be_bytes()); // baseTimestamp
        put(35, &max_timestamp.to_be_bytes()); // maxTimestamp
        put(43, &(-1i64).to_be_bytes()); // producerId
        put(51, &(-1i16).to_be_bytes()); // producerEpoch
        put(53, &(-1i32).to_be_bytes()); // baseSequence
        put(57, &records.to_be_bytes()); // recordsCount
        for (i, x) in b[RECORD_BATCH_OVERHEAD..].iter_mut().enumerate() {
            *x = fill.wrapping_add(i as u8);
        }
        // The CRC (at 17) covers everything from `attributes` (at 21) on.
        let crc = sluice_protocol::crc::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::testing::make_batch;
    use super::*;

    #[test]
    fn parses_and_checks_generated_batch() {
        let b = make_batch(7, 3, 10, 1);
        let h = parse_header(&b).unwrap();
        assert_eq!(h.base_offset, 7);
        assert_eq!(h.size, b.len());
        assert_eq!(h.last_offset(), 9);
        assert_eq!(records_count(&b), 3);
        check_crc(&b).unwrap();
    }

    #[test]
    fn detects_corruption() {
        let mut b = make_batch(0, 1, 5, 1);
        b[40] ^= 1;
        assert_eq!(check_crc(&b), Err(BatchError::BadCrc));
        let mut z = b.clone();
        z[8..12].copy_from_slice(&0i32.to_be_bytes());
        assert_eq!(parse_header(&z), Err(BatchError::BadLength(0)));
        assert_eq!(parse_header(&b[..20]), Err(BatchError::Truncated));
    }

    #[test]
    fn set_base_offset_keeps_crc_valid() {
        let mut b = make_batch(0, 2, 5, 1);
        set_base_offset(&mut b, 1234);
        assert_eq!(parse_header(&b).unwrap().base_offset, 1234);
        check_crc(&b).unwrap();
    }

    #[test]
    fn walker_stops_at_partial_batch() {
        let mut buf = make_batch(0, 1, 3, 0);
        buf.extend(make_batch(1, 2, 4, 0));
        let whole = buf.len();
        buf.extend(&make_batch(3, 1, 9, 0)[..30]);
        let mut w = HeaderWalker::new(&buf);
        assert_eq!(w.by_ref().count(), 2);
        assert_eq!(w.end_position(), whole);
    }
}
