//! A request's record batches in memory (Kafka's `MemoryRecords`): who owns the bytes decides
//! whether the log can write them without a copy.

use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

/// Bytes of request frames that `Owned` records (and whatever keeps their bytes: the log's
/// write, its tail cache) still hold, process-wide.
static FRAME_BYTES_HELD: AtomicUsize = AtomicUsize::new(0);

/// Bytes of request frames held right now by records split off them ([`MemoryRecords::Owned`])
/// and what keeps those records' bytes. One piece of a frame keeps the whole frame's memory,
/// so a broker that keeps pieces (its tail caches) bounds this, copying instead past a budget.
pub fn frame_bytes_held() -> usize {
    FRAME_BYTES_HELD.load(Ordering::Relaxed)
}

/// One decoded frame's share of [`frame_bytes_held`]: counted when the frame is decoded owned,
/// uncounted when the last holder of any of its pieces lets go.
#[derive(Debug)]
pub struct FrameHold {
    bytes: usize,
}

impl FrameHold {
    /// Counts a frame of `bytes`.
    pub fn new(bytes: usize) -> Arc<FrameHold> {
        FRAME_BYTES_HELD.fetch_add(bytes, Ordering::Relaxed);
        Arc::new(FrameHold { bytes })
    }
}

impl Drop for FrameHold {
    fn drop(&mut self) {
        FRAME_BYTES_HELD.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Bookkeeping, not content: records compare by their bytes.
impl PartialEq for FrameHold {
    fn eq(&self, _: &FrameHold) -> bool {
        true
    }
}

impl Eq for FrameHold {}

/// The record batches of one partition in a Produce request.
///
/// Decoded by the broker from a frame its connection owns ([`crate::Decoder::owned`]), they
/// are `Owned`: a writable view of exactly their range of the frame, which the log patches in
/// place (base offsets, leader epochs) and writes and caches as they are. Built by a client (the
/// load generator, tests), or decoded from a shared frame, they are `Shared` and the log copies
/// them once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryRecords {
    /// A shared, read-only slice.
    Shared(Bytes),
    /// The only view of these bytes, and the hold on the frame they are part of.
    Owned(BytesMut, Arc<FrameHold>),
}

impl MemoryRecords {
    /// Whether the bytes are this value's alone (no copy needed to write them).
    pub fn is_owned(&self) -> bool {
        matches!(self, MemoryRecords::Owned(..))
    }
}

impl Deref for MemoryRecords {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            MemoryRecords::Shared(b) => b,
            MemoryRecords::Owned(b, _) => b,
        }
    }
}

impl Default for MemoryRecords {
    fn default() -> Self {
        MemoryRecords::Shared(Bytes::new())
    }
}

impl From<Bytes> for MemoryRecords {
    fn from(b: Bytes) -> Self {
        MemoryRecords::Shared(b)
    }
}
