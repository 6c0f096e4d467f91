//! Iteration over concatenated batches.

use bytes::Bytes;

use super::{parse_header, RecordBatchError, RecordBatchHeader, LOG_OVERHEAD, MIN_BATCH_LENGTH};

/// Iterator over the batches in a `records` field or log segment slice. Yields
/// each batch's header and a zero-copy slice of exactly that batch. Batches are
/// framed but not validated (call [`super::validate_batch`] for that). After the
/// first error (e.g. a partial trailing batch, `Truncated`) it yields nothing
/// more; [`RecordBatches::position`] then tells where the good prefix ends.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    buf: Bytes,
    pos: usize,
    failed: bool,
}

impl RecordBatches {
    /// Iterates over `buf`.
    pub fn new(buf: Bytes) -> RecordBatches {
        RecordBatches {
            buf,
            pos: 0,
            failed: false,
        }
    }

    /// Byte offset of the next batch (the end of the last good one).
    pub fn position(&self) -> usize {
        self.pos
    }

    fn next_batch(&mut self) -> Result<(RecordBatchHeader, Bytes), RecordBatchError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let (header, total) = frame_first_batch(rest)?;
        let batch = self.buf.slice(self.pos..self.pos + total);
        self.pos += total;
        Ok((header, batch))
    }
}

/// The header and the size (log overhead included) of the batch `buf` starts with, framed as
/// [`RecordBatches`] frames each batch (not validated); for callers holding the bytes borrowed.
pub fn frame_first_batch(buf: &[u8]) -> Result<(RecordBatchHeader, usize), RecordBatchError> {
    // Read the length first so a short tail reports the size it would need.
    let size = match buf.get(8..LOG_OVERHEAD) {
        Some(&[a, b, c, d]) => i32::from_be_bytes([a, b, c, d]),
        _ => {
            return Err(RecordBatchError::Truncated {
                needed: LOG_OVERHEAD,
                remaining: buf.len(),
            })
        }
    };
    if size < MIN_BATCH_LENGTH {
        return Err(RecordBatchError::InvalidBatchLength(size));
    }
    let total = size as usize + LOG_OVERHEAD;
    if buf.len() < total {
        return Err(RecordBatchError::Truncated {
            needed: total,
            remaining: buf.len(),
        });
    }
    Ok((parse_header(buf)?, total))
}

impl Iterator for RecordBatches {
    type Item = Result<(RecordBatchHeader, Bytes), RecordBatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let item = self.next_batch();
        self.failed = item.is_err();
        Some(item)
    }
}
