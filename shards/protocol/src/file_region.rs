//! Record data a response sends straight from a segment file (`sendfile(2)`), never read into
//! memory: a Fetch answer's records when the page cache holds them.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;

/// `len` bytes of an open file from `position`. The descriptor is the reader's own (a dup of
/// the segment's), so the region stays readable even if the segment is deleted or replaced
/// before the response is written; `Arc` because a region read on one shard is sent by the
/// connection's shard.
#[derive(Clone)]
pub struct FileRegion {
    fd: Arc<OwnedFd>,
    position: u64,
    len: usize,
}

impl FileRegion {
    /// The region `[position, position + len)` of `fd`.
    pub fn new(fd: Arc<OwnedFd>, position: u64, len: usize) -> FileRegion {
        FileRegion { fd, position, len }
    }

    /// The file.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// First byte's position in the file.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's bytes, read into memory: for an encoder that writes one buffer (never the
    /// broker's response path, which sends the region with `sendfile`). Blocking.
    pub fn read_to_bytes(&self) -> io::Result<Bytes> {
        let file = File::from(self.fd.try_clone()?);
        let mut out = vec![0u8; self.len];
        file.read_exact_at(&mut out, self.position)?;
        Ok(Bytes::from(out))
    }
}

impl PartialEq for FileRegion {
    fn eq(&self, other: &FileRegion) -> bool {
        Arc::ptr_eq(&self.fd, &other.fd) && self.position == other.position && self.len == other.len
    }
}

impl Eq for FileRegion {}

impl fmt::Debug for FileRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileRegion")
            .field("fd", &self.fd)
            .field("position", &self.position)
            .field("len", &self.len)
            .finish()
    }
}

/// One piece of an encoded frame, in order: bytes in memory, or a file region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// Bytes in memory (header fields, or record data sharing a buffer).
    Bytes(Bytes),
    /// Record data sent from a file.
    File(FileRegion),
}

impl Segment {
    /// Length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Segment::Bytes(b) => b.len(),
            Segment::File(f) => f.len(),
        }
    }

    /// True when the segment is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
