//! Minimal view of record batch v2 headers, private to the log.
//!
//! The log only needs the framing fields (offsets, length, magic, CRC,
//! timestamps) to assign offsets, build its index and recover; the full
//! record format lives in `sluice_protocol`. Kept private so that switching
//! to `sluice_protocol::record_batch` later touches only this file.

/// Bytes of the v2 batch header before the first record.
pub(crate) const RECORD_BATCH_OVERHEAD: usize = 61;
/// `baseOffset` + `batchLength`: the part of the header not counted by
/// `batchLength`.
pub(crate) const LOG_OVERHEAD: usize = 12;
/// Header bytes needed to know a batch's offsets and size.
pub(crate) const OFFSETS_HEADER_LEN: usize = 27;
pub(crate) const MAGIC_V2: i8 = 2;

const BASE_OFFSET_AT: usize = 0;
const BATCH_LENGTH_AT: usize = 8;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
/// The CRC covers everything from `attributes` to the end of the batch.
const CRC_COVERED_FROM: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const MAX_TIMESTAMP_AT: usize = 35;
#[cfg(test)]
const RECORDS_COUNT_AT: usize = 57;

/// Why bytes are not a well-formed batch. Recovery treats all of them alike
/// (truncate here); the append path reports them as `LogError::InvalidBatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

/// Parses the framing of the batch starting at `buf[0]`. Needs only the first
/// `OFFSETS_HEADER_LEN` bytes; does not require the whole batch to be present
/// (the caller compares `size` with what it has).
pub(crate) fn parse_header(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    if buf.len() < OFFSETS_HEADER_LEN {
        return Err(BatchError::Truncated);
    }
    let batch_length = be_i32(buf, BATCH_LENGTH_AT);
    // A batch shorter than its own header cannot be valid; this is also
    // what catches zero-filled tails left by a crash.
    if batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
        return Err(BatchError::BadLength(batch_length));
    }
    let magic = buf[MAGIC_AT] as i8;
    if magic != MAGIC_V2 {
        return Err(BatchError::BadMagic(magic));
    }
    let last_offset_delta = be_i32(buf, LAST_OFFSET_DELTA_AT);
    if last_offset_delta < 0 {
        return Err(BatchError::BadLastOffsetDelta(last_offset_delta));
    }
    Ok(BatchHeader {
        base_offset: be_i64(buf, BASE_OFFSET_AT),
        size: batch_length as usize + LOG_OVERHEAD,
        last_offset_delta,
    })
}

/// Full-header fields the append path reports back.
pub(crate) fn max_timestamp(batch: &[u8]) -> i64 {
    debug_assert!(batch.len() >= RECORD_BATCH_OVERHEAD);
    be_i64(batch, MAX_TIMESTAMP_AT)
}

/// Checks that `batch` (exactly one whole batch) has a full header and a
/// matching CRC32C.
pub(crate) fn check_crc(batch: &[u8]) -> Result<(), BatchError> {
    if batch.len() < RECORD_BATCH_OVERHEAD {
        return Err(BatchError::Truncated);
    }
    let stored = u32::from_be_bytes([
        batch[CRC_AT],
        batch[CRC_AT + 1],
        batch[CRC_AT + 2],
        batch[CRC_AT + 3],
    ]);
    if crc32c::crc32c(&batch[CRC_COVERED_FROM..]) != stored {
        return Err(BatchError::BadCrc);
    }
    Ok(())
}

/// Rewrites the base offset in place. The CRC does not cover it, so the batch
/// stays valid.
pub(crate) fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Number of records the producer says the batch holds (informational).
#[cfg(test)]
pub(crate) fn records_count(batch: &[u8]) -> i32 {
    be_i32(batch, RECORDS_COUNT_AT)
}

/// Iterates over the headers of the whole batches at the start of `buf`,
/// yielding `(position, header)`; stops at the first incomplete or malformed
/// batch. `end_position()` then tells how far the whole batches reach.
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

    /// A batch claiming `records` offsets with `payload` filler bytes and a
    /// correct CRC. The base offset is left at `base_offset`.
    pub fn make_batch(base_offset: i64, records: i32, payload: usize, fill: u8) -> Vec<u8> {
        assert!(records >= 1);
        let size = RECORD_BATCH_OVERHEAD + payload;
        let mut b = vec![0u8; size];
        b[0..8].copy_from_slice(&base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&((size - LOG_OVERHEAD) as i32).to_be_bytes());
        b[MAGIC_AT] = MAGIC_V2 as u8;
        b[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
            .copy_from_slice(&(records - 1).to_be_bytes());
        b[27..35].copy_from_slice(&1_000i64.to_be_bytes());
        b[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8]
            .copy_from_slice(&(1_000 + i64::from(records)).to_be_bytes());
        b[43..51].copy_from_slice(&(-1i64).to_be_bytes());
        b[51..53].copy_from_slice(&(-1i16).to_be_bytes());
        b[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        b[RECORDS_COUNT_AT..RECORDS_COUNT_AT + 4].copy_from_slice(&records.to_be_bytes());
        for (i, x) in b[RECORD_BATCH_OVERHEAD..].iter_mut().enumerate() {
            *x = fill.wrapping_add(i as u8);
        }
        let crc = crc32c::crc32c(&b[CRC_COVERED_FROM..]);
        b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
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
