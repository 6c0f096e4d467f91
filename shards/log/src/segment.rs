//! One segment file of a partition log.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::task::{Poll, Waker};

use glommio::io::{BufferedFile, OpenOptions};

use crate::error::LogError;
use crate::index::OffsetIndex;

/// Kafka's segment file name: the base offset as 20 zero-padded digits.
pub(crate) fn segment_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

/// Parses a segment file name back into its base offset.
pub(crate) fn parse_segment_file_name(name: &str) -> Option<i64> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The file of a segment. A segment is rolled synchronously (when an append
/// reserves its offsets) but its file is created asynchronously by that
/// append's write task; appends reserved into it meanwhile wait here.
enum FileSlot {
    Opening(Vec<Waker>),
    Ready(Rc<BufferedFile>),
    Failed,
}

/// A segment: `<base offset>.log` holding whole v2 batches back to back.
pub(crate) struct LogSegment {
    pub base_offset: i64,
    pub path: PathBuf,
    file: RefCell<FileSlot>,
    /// Bytes reserved in the file, including appends still being written.
    pub size: Cell<u64>,
    pub index: RefCell<OffsetIndex>,
}

impl LogSegment {
    pub fn with_file(base_offset: i64, path: PathBuf, file: BufferedFile, size: u64) -> Self {
        Self {
            base_offset,
            path,
            file: RefCell::new(FileSlot::Ready(Rc::new(file))),
            size: Cell::new(size),
            index: RefCell::new(OffsetIndex::default()),
        }
    }

    /// A freshly rolled segment whose file `create_file` will provide.
    pub fn rolling(base_offset: i64, dir: &Path) -> Self {
        Self {
            base_offset,
            path: dir.join(segment_file_name(base_offset)),
            file: RefCell::new(FileSlot::Opening(Vec::new())),
            size: Cell::new(0),
            index: RefCell::new(OffsetIndex::default()),
        }
    }

    /// Creates the file of a rolled segment (truncating any stale leftover)
    /// and hands it to the appends waiting for it.
    pub async fn create_file(&self) -> Result<(), LogError> {
        let (slot, result) = match open_rw(&self.path, true).await {
            Ok(f) => (FileSlot::Ready(Rc::new(f)), Ok(())),
            Err(e) => (FileSlot::Failed, Err(e)),
        };
        if let FileSlot::Opening(wakers) = self.file.replace(slot) {
            wakers.into_iter().for_each(Waker::wake);
        }
        result
    }

    /// The open file, waiting while a roll is still creating it.
    pub async fn file(&self) -> Result<Rc<BufferedFile>, LogError> {
        poll_fn(|cx| match &mut *self.file.borrow_mut() {
            FileSlot::Ready(f) => Poll::Ready(Ok(f.clone())),
            FileSlot::Failed => Poll::Ready(Err(LogError::io(
                &self.path,
                std::io::Error::other("segment file could not be created"),
            ))),
            FileSlot::Opening(wakers) => {
                if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        })
        .await
    }

    /// Position from which a forward scan finds the batch holding `offset`.
    pub fn index_lookup(&self, offset: i64) -> u64 {
        let relative = offset
            .saturating_sub(self.base_offset)
            .clamp(0, u32::MAX as i64) as u32;
        u64::from(self.index.borrow().lookup(relative))
    }
}

/// Opens a segment file for reading and writing through io_uring.
/// `create` also truncates: it is only used for brand-new segments.
pub(crate) async fn open_rw(path: &Path, create: bool) -> Result<BufferedFile, LogError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(create)
        .buffered_open(path)
        .await
        .map_err(|e| LogError::io(path, e))
}
