//! One segment file of a partition log.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};

use glommio::io::{BufferedFile, OpenOptions};

use crate::error::LogError;
use crate::file_io::{dup_fd, write_all};
use crate::index::{OffsetIndex, TimeIndex, OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES};
use crate::page_cache::FileMark;

/// Kafka's segment file name: the base offset as 20 zero-padded digits.
pub(crate) fn segment_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.log")
}

/// `<base>.index`: the offset index of a segment.
pub(crate) fn offset_index_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.index")
}

/// `<base>.timeindex`: the time index of a segment.
pub(crate) fn time_index_file_name(base_offset: i64) -> String {
    format!("{base_offset:020}.timeindex")
}

/// Parses a segment file name back into its base offset.
pub(crate) fn parse_segment_file_name(name: &str) -> Option<i64> {
    parse_file_name(name, ".log")
}

/// Parses `<20 digits><suffix>` back into the base offset.
pub(crate) fn parse_file_name(name: &str, suffix: &str) -> Option<i64> {
    let digits = name.strip_suffix(suffix)?;
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

/// Open handles of a segment's `.index` and `.timeindex` (kept for segments
/// that are appended to: the active one and those rolled in this process).
pub(crate) struct IndexFiles {
    pub offset: BufferedFile,
    pub time: BufferedFile,
}

/// Index entries written to the files together at least: an append adds one entry per
/// `index.interval.bytes` (4 KiB) at most, so small batches over many partitions wrote one
/// or two 8- and 12-byte `pwrite`s per append (4.6 % of the shard's samples with 1,000
/// partitions). The files only matter after a flush or a clean shutdown (the loader rebuilds
/// the indexes of segments past the recovery point), and both write what is pending first.
const INDEX_ENTRIES_PER_WRITE: usize = 64;

/// A segment (Kafka's `LogSegment`): `<base offset>.log` holding whole v2
/// batches back to back, with its offset and time indexes.
pub(crate) struct LogSegment {
    pub base_offset: i64,
    /// Path of the `.log` file.
    pub path: PathBuf,
    file: RefCell<FileSlot>,
    index_files: RefCell<Option<Rc<IndexFiles>>>,
    /// Bytes reserved in the file, including appends still being written.
    pub size: Cell<u64>,
    pub offset_index: RefCell<OffsetIndex>,
    pub time_index: RefCell<TimeIndex>,
    /// Max timestamp of the first batch (Kafka's `rollingBasedTimestamp`),
    /// `None` while the segment is empty.
    pub rolling_based_timestamp: Cell<Option<i64>>,
    /// When this process created or loaded the segment (time roll without
    /// timestamps).
    pub created_ms: Cell<i64>,
    /// Last append (or load) time, standing in for Kafka's file mtime when
    /// the segment holds no timestamps (time retention).
    pub last_modified_ms: Cell<i64>,
    /// Rolled in this process, and the append that rolled past it has not
    /// yet written its final time index entry.
    pub final_index_pending: Cell<bool>,
    /// A dup of the file's descriptor that file regions share (made by the first region):
    /// one descriptor per segment however many responses are in flight, and it keeps the
    /// file readable for them after the segment is deleted or replaced.
    send_fd: RefCell<Option<Arc<OwnedFd>>>,
    /// What the shard's page-cache window did to this file (`page_cache.rs`), made by the
    /// first append, or by the first region sent while a window is set.
    page_cache_mark: RefCell<Option<Rc<FileMark>>>,
    /// Bytes the file held when this process loaded it (at start, or from the cleaner): not
    /// appended here, so outside the page-cache window; the mark's floor.
    loaded_bytes: Cell<u64>,
    /// Entries of (`offset_index`, `time_index`) in their files; those after are written by
    /// [`LogSegment::write_index`].
    index_on_disk: Cell<(usize, usize)>,
}

impl LogSegment {
    /// A loaded segment.
    pub fn loaded(base_offset: i64, path: PathBuf, file: BufferedFile, now_ms: i64) -> Self {
        Self {
            base_offset,
            path,
            file: RefCell::new(FileSlot::Ready(Rc::new(file))),
            index_files: RefCell::new(None),
            size: Cell::new(0),
            offset_index: RefCell::default(),
            time_index: RefCell::default(),
            rolling_based_timestamp: Cell::new(None),
            created_ms: Cell::new(now_ms),
            last_modified_ms: Cell::new(now_ms),
            final_index_pending: Cell::new(false),
            send_fd: RefCell::new(None),
            page_cache_mark: RefCell::new(None),
            loaded_bytes: Cell::new(0),
            index_on_disk: Cell::new((0, 0)),
        }
    }

    /// A freshly rolled segment whose file `create_file` will provide.
    pub fn rolling(base_offset: i64, dir: &Path, now_ms: i64) -> Self {
        Self {
            base_offset,
            path: dir.join(segment_file_name(base_offset)),
            file: RefCell::new(FileSlot::Opening(Vec::new())),
            index_files: RefCell::new(None),
            size: Cell::new(0),
            offset_index: RefCell::default(),
            time_index: RefCell::default(),
            rolling_based_timestamp: Cell::new(None),
            created_ms: Cell::new(now_ms),
            last_modified_ms: Cell::new(now_ms),
            final_index_pending: Cell::new(false),
            send_fd: RefCell::new(None),
            page_cache_mark: RefCell::new(None),
            loaded_bytes: Cell::new(0),
            index_on_disk: Cell::new((0, 0)),
        }
    }

    pub fn offset_index_path(&self) -> PathBuf {
        self.path.with_extension("index")
    }

    pub fn time_index_path(&self) -> PathBuf {
        self.path.with_extension("timeindex")
    }

    /// Creates the files of a rolled segment (truncating any stale leftover)
    /// and hands them to the appends waiting for them.
    pub async fn create_file(&self) -> Result<(), LogError> {
        let created = async {
            let log = open_rw(&self.path, true).await?;
            let index =
                create_index_files(&self.offset_index_path(), &self.time_index_path()).await?;
            Ok::<_, LogError>((log, index))
        }
        .await;
        let (slot, result) = match created {
            Ok((f, index)) => {
                self.set_index_files(Some(index));
                (FileSlot::Ready(Rc::new(f)), Ok(()))
            }
            Err(e) => (FileSlot::Failed, Err(e)),
        };
        if let FileSlot::Opening(wakers) = self.file.replace(slot) {
            wakers.into_iter().for_each(Waker::wake);
        }
        result
    }

    /// The descriptor file regions of this segment send from (see `send_fd`); `None` when
    /// the process is out of descriptors (the caller reads the ordinary way).
    pub fn send_fd(&self, file: &BufferedFile) -> Result<Option<Arc<OwnedFd>>, LogError> {
        if let Some(fd) = &*self.send_fd.borrow() {
            return Ok(Some(fd.clone()));
        }
        let Some(fd) = dup_fd(file, &self.path)? else {
            return Ok(None);
        };
        let fd = Arc::new(fd);
        *self.send_fd.borrow_mut() = Some(fd.clone());
        Ok(Some(fd))
    }

    /// [`LogSegment::send_fd`] without waiting: `None` while the file is being created, or
    /// when no descriptor can be made now (out of descriptors, or `dup` failed: the caller
    /// sends the bytes another way).
    pub fn send_fd_now(&self) -> Option<Arc<OwnedFd>> {
        if let Some(fd) = &*self.send_fd.borrow() {
            return Some(fd.clone());
        }
        let file = match &*self.file.borrow() {
            FileSlot::Ready(file) => file.clone(),
            FileSlot::Opening(_) | FileSlot::Failed => return None,
        };
        self.send_fd(&file).ok().flatten()
    }

    /// The size of a segment this process loaded (at start, or from the cleaner) rather than
    /// appended to: its bytes so far are on the disk, not in the page-cache window.
    pub fn set_loaded_size(&self, size: u64) {
        self.size.set(size);
        self.loaded_bytes.set(size);
    }

    /// After a truncation to `size`: the bytes loaded that are left.
    pub fn truncated_to(&self, size: u64) {
        self.size.set(size);
        self.loaded_bytes.set(self.loaded_bytes.get().min(size));
    }

    /// This file's mark in the shard's page-cache window; `None` when the process is out of
    /// descriptors (the kernel alone then manages the file's pages).
    pub fn page_cache_mark(&self, file: &BufferedFile) -> Result<Option<Rc<FileMark>>, LogError> {
        if let Some(mark) = &*self.page_cache_mark.borrow() {
            return Ok(Some(mark.clone()));
        }
        let Some(fd) = self.send_fd(file)? else {
            return Ok(None);
        };
        let mark = FileMark::new(fd, self.loaded_bytes.get());
        *self.page_cache_mark.borrow_mut() = Some(mark.clone());
        Ok(Some(mark))
    }

    /// Once this segment's files are unlinked: its descriptor goes to the shard's releaser,
    /// which frees the file's blocks and closes it when nothing else holds it
    /// ([`crate::page_cache::release_when_unused`]); the shard would otherwise free them in
    /// its last close. Call it only after the unlink succeeded.
    pub fn release_deleted(&self) {
        let file = match &*self.file.borrow() {
            FileSlot::Ready(file) => file.clone(),
            FileSlot::Opening(_) | FileSlot::Failed => return,
        };
        // No descriptor left for a dup: the last close frees the blocks, as before.
        if let Ok(Some(fd)) = self.send_fd(&file) {
            crate::page_cache::release_when_unused(fd);
        }
    }

    /// This file's mark in the page-cache window if an append made one.
    pub fn existing_page_cache_mark(&self) -> Option<Rc<FileMark>> {
        self.page_cache_mark.borrow().clone()
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

    pub fn set_index_files(&self, files: Option<IndexFiles>) {
        *self.index_files.borrow_mut() = files.map(Rc::new);
    }

    /// Open index file handles, if this segment keeps them.
    pub fn open_index_files(&self) -> Option<Rc<IndexFiles>> {
        self.index_files.borrow().clone()
    }

    /// Index file handles, opening the existing files if not yet open.
    pub async fn index_files(&self) -> Result<Rc<IndexFiles>, LogError> {
        if let Some(f) = self.open_index_files() {
            return Ok(f);
        }
        let offset = open_index_file(&self.offset_index_path(), false).await?;
        let time = open_index_file(&self.time_index_path(), false).await?;
        let files = Rc::new(IndexFiles { offset, time });
        // A concurrent opener may have won meanwhile: keep one.
        let mut slot = self.index_files.borrow_mut();
        Ok(slot.get_or_insert(files).clone())
    }

    /// Writes one append's index entries (after the segment file exists).
    /// Writes the index entries not yet in the files: all of them with `all`, else only once
    /// [`INDEX_ENTRIES_PER_WRITE`] are pending.
    pub async fn write_index(&self, all: bool) -> Result<(), LogError> {
        let (offset_from, time_from) = self.index_on_disk.get();
        let (offset_to, time_to) = self.index_lens();
        assert!(
            offset_from <= offset_to && time_from <= time_to,
            "entries on disk are kept"
        );
        let pending = offset_to - offset_from + time_to - time_from;
        if pending == 0 || (!all && pending < INDEX_ENTRIES_PER_WRITE) {
            return Ok(());
        }
        // Taken before the writes: another append's write meanwhile takes the entries after.
        self.index_on_disk.set((offset_to, time_to));
        let offset = self
            .offset_index
            .borrow()
            .encode_range(offset_from, offset_to);
        let time = self.time_index.borrow().encode_range(time_from, time_to);
        let files = self.index_files().await?;
        if !offset.is_empty() {
            let pos = (offset_from * OFFSET_ENTRY_BYTES) as u64;
            write_all(&files.offset, &self.offset_index_path(), offset, pos).await?;
        }
        if !time.is_empty() {
            let pos = (time_from * TIME_ENTRY_BYTES) as u64;
            write_all(&files.time, &self.time_index_path(), time, pos).await?;
        }
        Ok(())
    }

    /// After the in-memory indexes were cut (a truncation): the entries the files hold are
    /// at most those left; the files are cut to them next (`truncate_files`).
    pub fn index_cut(&self) {
        let (offset_on_disk, time_on_disk) = self.index_on_disk.get();
        let (offset_len, time_len) = self.index_lens();
        self.index_on_disk
            .set((offset_on_disk.min(offset_len), time_on_disk.min(time_len)));
    }

    /// Notes that the index files hold every entry in memory (loaded from them, or written).
    pub fn mark_index_on_disk(&self) {
        self.index_on_disk.set(self.index_lens());
    }

    fn index_lens(&self) -> (usize, usize) {
        (
            self.offset_index.borrow().len(),
            self.time_index.borrow().len(),
        )
    }

    /// fdatasyncs the index files if this segment has them open.
    pub async fn sync_index_files(&self) -> Result<(), LogError> {
        self.write_index(true).await?;
        if let Some(files) = self.open_index_files() {
            files
                .offset
                .fdatasync()
                .await
                .map_err(|e| LogError::io(self.offset_index_path(), e))?;
            files
                .time
                .fdatasync()
                .await
                .map_err(|e| LogError::io(self.time_index_path(), e))?;
        }
        Ok(())
    }

    /// Cuts the `.log` to `log_bytes` and the index files to the entries kept in memory, and
    /// fdatasyncs all three: a truncation must be durable before appends reuse its offsets,
    /// or a crash could bring back old batches behind new ones.
    pub async fn truncate_files(&self, log_bytes: u64) -> Result<(), LogError> {
        // A trim of the rolled file still queued would lengthen it again after the cut.
        if let Some(mark) = self.existing_page_cache_mark() {
            mark.trimmed().await;
        }
        let file = self.file().await?;
        file.truncate(log_bytes)
            .await
            .map_err(|e| LogError::io(&self.path, e))?;
        file.fdatasync()
            .await
            .map_err(|e| LogError::io(&self.path, e))?;
        let offset_bytes = (self.offset_index.borrow().len() * OFFSET_ENTRY_BYTES) as u64;
        let time_bytes = (self.time_index.borrow().len() * TIME_ENTRY_BYTES) as u64;
        let files = self.index_files().await?;
        for (index, path, len) in [
            (&files.offset, self.offset_index_path(), offset_bytes),
            (&files.time, self.time_index_path(), time_bytes),
        ] {
            index
                .truncate(len)
                .await
                .map_err(|e| LogError::io(&path, e))?;
            index
                .fdatasync()
                .await
                .map_err(|e| LogError::io(&path, e))?;
        }
        Ok(())
    }

    /// Position from which a forward scan finds the batch holding `offset`.
    pub fn index_lookup(&self, offset: i64) -> u64 {
        u64::from(self.offset_index.borrow().lookup(self.relative(offset)))
    }

    /// `offset - base_offset`, clamped into `u32`.
    pub fn relative(&self, offset: i64) -> u32 {
        offset
            .saturating_sub(self.base_offset)
            .clamp(0, u32::MAX as i64) as u32
    }

    /// Largest timestamp in the segment (Kafka's `largestTimestamp`): the
    /// batches' max, or the last modification time if none has one.
    pub fn largest_timestamp(&self) -> i64 {
        let max = self.time_index.borrow().max_timestamp;
        if max >= 0 {
            max
        } else {
            self.last_modified_ms.get()
        }
    }

    /// Appends the final time index entry (the segment's largest timestamp)
    /// when it stops being active; whether it did ([`Self::write_index`] writes it).
    pub fn final_time_index_entry(&self) -> bool {
        self.time_index.borrow_mut().maybe_append()
    }
}

/// Opens (optionally creating and truncating) an index file.
pub(crate) async fn open_index_file(path: &Path, create: bool) -> Result<BufferedFile, LogError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(create)
        .buffered_open(path)
        .await
        .map_err(|e| LogError::io(path, e))
}

/// Creates empty `.index` and `.timeindex` files.
pub(crate) async fn create_index_files(offset: &Path, time: &Path) -> Result<IndexFiles, LogError> {
    Ok(IndexFiles {
        offset: open_index_file(offset, true).await?,
        time: open_index_file(time, true).await?,
    })
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
