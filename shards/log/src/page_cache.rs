//! The shard's page-cache window: how much of the newest appended log data a shard leaves in
//! the page cache. Appends beyond the window push the oldest appended ranges out: their
//! writeback is started early (`sync_file_range(SYNC_FILE_RANGE_WRITE)`) and, once they leave
//! the window, their pages are dropped (`posix_fadvise(POSIX_FADV_DONTNEED)`).
//!
//! Writeback of a range starts when half a window of newer appends follows it; when it leaves,
//! the drop waits for what is still being written (only when the disk is half a window behind).
//!
//! Why (ARCHITECTURE.md, "Decisions"): a broker writes new bytes for ever, and each appended
//! byte lands in a page-cache page the kernel must find first. With the page cache left to
//! grow, that page is a free page nobody touched for a while; on this host (a VM whose free
//! memory is handed back to the hypervisor) the first touch of such a page cost 2.05–2.40 CPU s
//! per GiB written against 0.43–0.46 with a 64–256 MiB window whose dropped pages the next
//! appends reuse (`/tmp`-style sequential 128 KiB `pwrite`s of 3 GiB, process CPU, writeback
//! submission included). On a host whose page cache is full, the window saves the reclaim the
//! kernel would otherwise do for every new page. The price: reads of data older than the
//! window come from the disk (paged in off the shard's thread, never blocking it), as they
//! would once Kafka's page cache has evicted it. `sluice.shard.page.cache.window.bytes = 0`
//! turns the window off (Kafka's behaviour: the kernel alone decides).
//!
//! Pages a fetch brings back from below a file's drop point (a consumer behind the window: the
//! kernel's read-ahead, or the log's `read_in`) are counted in a read-back window of a quarter
//! of the window, newest kept, and dropped as they leave it ([`sent`]), so that the next pages
//! read back reuse them. Before, they stayed: the page cache grew by every byte a lagging
//! consumer read, into memory the host had taken back, and the consumer's first touch of each
//! such page (its copy out of the socket, on loopback) cost it 1.8 CPU s per GiB against 0.25
//! (ARCHITECTURE.md, the page-cache window's rows).
//!
//! The system calls all this takes (`sync_file_range`, `posix_fadvise`, `fallocate` for
//! [`FileMark::preallocate`] and the `ftruncate` of [`FileMark::trim`]) run on the shard's file
//! worker, a thread of its own fed by a bounded queue ([`FileJob`]), not on the shard: they
//! block. Traced on the bench host, the shard spent 9 % of a 1,000-partition run in D state
//! inside them (`wbt_wait` on the block layer's writeback throttle, `ext4_wait_block_bitmap` in
//! block allocation), and they were
//! 21.6 % of its CPU samples in a produce-only run (ARCHITECTURE.md, "The window's system calls
//! on a file worker"). While the worker is behind (256 MiB of drops or 512 jobs queued: the
//! disk is), appends wait for it in call order ([`wait_for_file_worker`]) and the shard goes on
//! serving fetches; a job runs on the shard only past 512 MiB of drops or a full queue (a trim
//! is skipped instead), so the page cache never gets more than that ahead of the window. The
//! worker takes its jobs in batches ([`FILE_WORKER_BATCH_DELAY`]), so that a job does not cost
//! the shard a wake and two context switches.
//!
//! One window per shard thread (a thread-local, as the shard owns its partitions and its
//! thread): the partitions of a shard share it, oldest append out first. Each segment file
//! holds a [`FileMark`] with the positions written back and dropped so far; the window holds
//! weak references, so a deleted segment's file is closed when the segment goes, and its
//! entries are only counted out. Ranges are dropped from the file's previous drop point on,
//! so pages (and large folios) a range ended inside go with the next range of the same file.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Arc;

use futures_channel::oneshot;

const PAGE_BYTES: u64 = 4096;
/// The largest page-cache folio (a PMD on x86-64): folios are aligned to their size, so a
/// range of whole such blocks never cuts one.
const FOLIO_MAX_BYTES: u64 = 2 << 20;

/// Appends to one file (one busy partition) in a row share a range up to this size, so that a
/// range leaves the window in one short `DONTNEED`.
const RANGE_MAX_BYTES: u64 = 4 << 20;
/// A file's writeback is started, and its pages dropped, in steps of at least this much: 16
/// partitions' interleaved appends of ~64 KiB would otherwise cost two system calls each and
/// hand the disk small writes. What a quiet partition leaves below a step stays to the kernel.
const FILE_STEP_BYTES: u64 = 1 << 20;
/// Most ranges the window remembers (24 bytes each). Past this the oldest range is forgotten,
/// not dropped: its pages go with its file's next drop (the file's cursor covers them) or are
/// left to the kernel. A backstop only: ranges are at least [`Window::step_bytes`] each, so a
/// window holds about `RANGES_TARGET` of them.
const RANGES_MAX: usize = 1 << 16;
/// How many ranges a full window is meant to hold: a file's appends wait in its mark until
/// they add up to a window's `1 / RANGES_TARGET` (the step), and then enter as one range.
/// Before, every append that did not follow one to the same file was a range of its own, and
/// ProducerPerformance's ~12 KB appends interleaved over 16 partitions filled `RANGES_MAX`
/// long before the default 5.9 GiB window: the oldest were forgotten, the window's count never
/// reached its limit, nothing was dropped, and the page cache grew into free memory whose
/// first touch faults in the hypervisor (`copy_folio_from_iter_atomic` 55-60 % of the
/// broker's samples, 1.76-1.80 CPU s per GiB produced against 1.15 with the ranges kept;
/// ARCHITECTURE.md, the page-cache window's row).
const RANGES_TARGET: u64 = (RANGES_MAX / 4) as u64;

/// Per segment file: what the window has done to it so far.
#[derive(Debug)]
pub struct FileMark {
    fd: Arc<OwnedFd>,
    written_back_to: Cell<u64>,
    dropped_to: Cell<u64>,
    /// Bytes appended to this file and not yet in the window: fewer than a step.
    pending_bytes: Cell<u64>,
    /// Where the last drop of read-back pages of this file ended.
    read_back_dropped_to: Cell<u64>,
    /// Where the file's blocks are (being) preallocated to: see [`FileMark::preallocate`].
    preallocated_to: Cell<u64>,
    /// Counted in this shard's files taking part in preallocation.
    preallocating: Cell<bool>,
    /// Answers once the file worker has run this file's trim ([`FileMark::trim`]).
    trimmed: RefCell<Option<oneshot::Receiver<()>>>,
}

impl Drop for FileMark {
    fn drop(&mut self) {
        self.leave_preallocation();
    }
}

impl FileMark {
    /// A mark for `fd` (the segment's own descriptor: the mark keeps it open) whose first
    /// `floor` bytes this process did not append: a segment loaded at start (or written by
    /// the cleaner) has them on the disk already, so the window starts past them, and a
    /// region sent from below `floor` is read back ([`sent`]) like one behind the window.
    pub fn new(fd: Arc<OwnedFd>, floor: u64) -> Rc<FileMark> {
        Rc::new(FileMark {
            fd,
            written_back_to: Cell::new(floor),
            dropped_to: Cell::new(floor),
            pending_bytes: Cell::new(0),
            read_back_dropped_to: Cell::new(0),
            preallocated_to: Cell::new(0),
            preallocating: Cell::new(false),
            trimmed: RefCell::new(None),
        })
    }

    fn start_writeback(&self, end: u64) {
        let from = self.written_back_to.get();
        if end <= from {
            return;
        }
        // A failure only leaves the pages to the kernel's own writeback; the append that
        // wrote them already succeeded and a later fsync reports any I/O error.
        self.written_back_to.set(end);
        count(|s| s.writeback_calls += 1);
        submit(FileJob::StartWriteback {
            fd: self.fd.clone(),
            from,
            to: end,
        });
    }

    fn drop_pages(&self, end: u64) {
        // Whole pages only: the page `end` falls in may still take appends.
        let from = self.dropped_to.get() / PAGE_BYTES * PAGE_BYTES;
        let to = end / PAGE_BYTES * PAGE_BYTES;
        if to <= from {
            return;
        }
        self.dropped_to.set(to);
        count(|s| {
            s.drop_calls += 1;
            s.dropped_bytes += to - from;
        });
        submit(FileJob::DropPages {
            fd: self.fd.clone(),
            from,
            to,
        });
    }

    /// Drops the clean read-back pages of `[start, end)` in whole 2 MiB blocks, from this
    /// file's previous read-back drop point when `start` follows it closely (the block the
    /// range ends inside goes with the file's next range).
    fn drop_read_back(&self, start: u64, end: u64) {
        // Whole folio-sized blocks: read-ahead fills the page cache with large folios (up to
        // 2 MiB), and `DONTNEED` skips a folio that reaches outside its range, so ~1 MiB
        // ranges dropped one by one left nearly every page cached. What a range ends inside
        // goes with the file's next range when that one follows within a few MiB (a consumer
        // reads a partition front to back).
        // Elsewhere, a new run starts at the block `start` is in (the pages in front of it
        // are read back too: the range lies below the drop point).
        let cursor = self.read_back_dropped_to.get();
        let from = if cursor <= start && start - cursor <= 2 * RANGE_MAX_BYTES {
            cursor
        } else {
            start / FOLIO_MAX_BYTES * FOLIO_MAX_BYTES
        };
        self.read_back_dropped_to.set(from);
        let to = end / FOLIO_MAX_BYTES * FOLIO_MAX_BYTES;
        if to <= from {
            return;
        }
        self.read_back_dropped_to.set(to);
        count(|s| {
            s.read_back_drop_calls += 1;
            s.read_back_dropped_bytes += to - from;
        });
        submit(FileJob::DropReadBack {
            fd: self.fd.clone(),
            from,
            to,
        });
    }

    /// Before an append ending at `end` is written: keeps the file's blocks allocated a step
    /// or two ahead of it (`fallocate(FALLOC_FL_KEEP_SIZE)` on the file worker, never past
    /// `limit`: the segment's size). The step is 4 MiB; a file joins only while this shard's
    /// preallocation budget ([`set_preallocate_bytes`]) over twice the files taking part
    /// leaves it a whole step, so the blocks allocated ahead of the shard's appends stay
    /// within the budget and a shard with many busy files preallocates for the first few only
    /// ([`PREALLOCATE_STEP_BYTES`]).
    ///
    /// Why (ARCHITECTURE.md, "Preallocated segment blocks"): a buffered append into blocks not
    /// yet allocated reserves them (ext4's delayed allocation: `ext4_da_get_block_prep`), and
    /// the writeback that follows allocates them while holding the file's `i_data_sem`, which
    /// the next append then waits for. Into preallocated blocks neither happens. The file's
    /// size is unchanged (`KEEP_SIZE`): recovery and readers see the bytes appended only, and
    /// a rolled segment's unused blocks are freed ([`Self::trim`]).
    pub fn preallocate(&self, end: u64, limit: u64) {
        let joining = !self.preallocating.get();
        // A file joining (a segment loaded after a restart, say) starts at its end: what it
        // holds is allocated already.
        let floor = if joining {
            end / PAGE_BYTES * PAGE_BYTES
        } else {
            0
        };
        let from = self.preallocated_to.get().max(floor);
        if from >= limit {
            return;
        }
        let Some(step_bytes) = preallocate_step_bytes(joining) else {
            return;
        };
        if end + step_bytes <= from {
            return;
        }
        let to = ((end / step_bytes + 2) * step_bytes).min(limit.max(end));
        if to <= from {
            return;
        }
        if joining {
            self.preallocating.set(true);
            PREALLOCATING_FILES.with(|n| n.set(n.get() + 1));
        }
        self.preallocated_to.set(to);
        count(|s| s.preallocate_calls += 1);
        submit(FileJob::Preallocate {
            fd: self.fd.clone(),
            from,
            to,
        });
    }

    /// Leaves the files taking part in preallocation.
    fn leave_preallocation(&self) {
        if self.preallocating.replace(false) {
            PREALLOCATING_FILES.with(|n| n.set(n.get() - 1));
        }
    }

    /// Frees the blocks preallocated past `size`: a rolled segment's final size, all of it
    /// reserved by appends (nothing is appended to it again). `ftruncate` to the size it has
    /// (ext4 frees the blocks past the end then; a hole punched there is ignored), on the file
    /// worker: on the shard's thread it is a synchronous discard on a `discard` mount, which
    /// waits behind whatever the device has queued (1.2 s once, behind a deleted topic's
    /// discards, every partition of the shard stalled with it). A truncation of the file
    /// waits for it first ([`Self::trimmed`]), or the job would lengthen the file again after
    /// the cut. With the worker's queue full the trim is skipped: the blocks stay allocated
    /// (a step, at most 4 MiB) until the segment is deleted.
    pub fn trim(&self, size: u64) {
        self.leave_preallocation();
        if self.preallocated_to.replace(0) <= size {
            return;
        }
        let (done, trimmed) = oneshot::channel();
        let job = FileJob::Trim {
            fd: self.fd.clone(),
            size,
            done,
        };
        if try_submit(job).is_none() {
            count(|s| s.trim_calls += 1);
            *self.trimmed.borrow_mut() = Some(trimmed);
        }
    }

    /// Waits until a trim queued for this file has run; at once if none is queued.
    pub async fn trimmed(&self) {
        let queued = self.trimmed.borrow_mut().take();
        if let Some(trimmed) = queued {
            // A worker gone with its thread ran nothing more: the cut can go ahead as well.
            let _ = trimmed.await;
        }
    }
}

/// A system call the shard's file worker runs for it (see the module comment): the file and
/// the bytes `[from, to)`.
#[derive(Debug)]
enum FileJob {
    /// `sync_file_range(SYNC_FILE_RANGE_WRITE)`: starts writeback.
    StartWriteback {
        fd: Arc<OwnedFd>,
        from: u64,
        to: u64,
    },
    /// Waits for the range's writeback (starting what is still dirty), then
    /// `posix_fadvise(DONTNEED)`.
    DropPages {
        fd: Arc<OwnedFd>,
        from: u64,
        to: u64,
    },
    /// `posix_fadvise(DONTNEED)` of clean pages read back.
    DropReadBack {
        fd: Arc<OwnedFd>,
        from: u64,
        to: u64,
    },
    /// `fallocate(FALLOC_FL_KEEP_SIZE)`.
    Preallocate {
        fd: Arc<OwnedFd>,
        from: u64,
        to: u64,
    },
    /// `ftruncate` to the file's size, freeing the blocks preallocated past it
    /// ([`FileMark::trim`]); answers on `done`.
    Trim {
        fd: Arc<OwnedFd>,
        size: u64,
        done: oneshot::Sender<()>,
    },
    /// Answers once every job queued before it has run ([`settle`]).
    Settle(SyncSender<()>),
    /// Holds the worker until the sender goes: tests fill its queue behind it.
    #[cfg(test)]
    Hold(mpsc::Receiver<()>),
}

impl FileJob {
    /// Runs the system call. Failures are left: each only leaves pages or blocks to the
    /// kernel's own management; appends and fsyncs report their own errors.
    fn run(self) {
        match self {
            FileJob::StartWriteback { fd, from, to } => {
                sync_range(&fd, from, to, libc::SYNC_FILE_RANGE_WRITE);
            }
            FileJob::DropPages { fd, from, to } => {
                // Dirty pages or pages under writeback are not dropped. Their writeback started
                // half a window ago, so this waits only when the disk is that far behind.
                sync_range(
                    &fd,
                    from,
                    to,
                    libc::SYNC_FILE_RANGE_WAIT_BEFORE
                        | libc::SYNC_FILE_RANGE_WRITE
                        | libc::SYNC_FILE_RANGE_WAIT_AFTER,
                );
                fadvise_dontneed(&fd, from, to);
            }
            FileJob::DropReadBack { fd, from, to } => fadvise_dontneed(&fd, from, to),
            FileJob::Preallocate { fd, from, to } => fallocate(&fd, from, to),
            FileJob::Trim { fd, size, done } => {
                // SAFETY: ftruncate reads the descriptor and the number only; the job owns
                // the descriptor.
                unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) };
                let _ = done.send(());
            }
            FileJob::Settle(done) => {
                let _ = done.send(());
            }
            #[cfg(test)]
            FileJob::Hold(release) => {
                let _ = release.recv();
            }
        }
    }

    /// Bytes of pages the job drops.
    fn drop_bytes(&self) -> u64 {
        match self {
            FileJob::DropPages { from, to, .. } | FileJob::DropReadBack { from, to, .. } => {
                to - from
            }
            _ => 0,
        }
    }
}

/// `sync_file_range` of `[from, to)` with `flags`.
fn sync_range(fd: &OwnedFd, from: u64, to: u64, flags: libc::c_uint) {
    // SAFETY: sync_file_range reads the descriptor and the numbers only; the job owns the
    // descriptor.
    unsafe {
        libc::sync_file_range(
            fd.as_raw_fd(),
            from as libc::off64_t,
            (to - from) as libc::off64_t,
            flags,
        );
    }
}

fn fadvise_dontneed(fd: &OwnedFd, from: u64, to: u64) {
    // SAFETY: fadvise reads the descriptor and the numbers only; the job owns the descriptor.
    unsafe {
        libc::posix_fadvise(
            fd.as_raw_fd(),
            from as libc::off_t,
            (to - from) as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        );
    }
}

/// `fallocate(FALLOC_FL_KEEP_SIZE)` of `[from, to)`.
fn fallocate(fd: &OwnedFd, from: u64, to: u64) {
    // SAFETY: fallocate reads the descriptor and the numbers only; the job owns the descriptor.
    unsafe {
        libc::fallocate(
            fd.as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            from as libc::off_t,
            (to - from) as libc::off_t,
        );
    }
}

/// How long the file worker sleeps when its queue empties before it looks again (then it
/// blocks until the next job): jobs that come meanwhile wait at most this long.
const FILE_WORKER_BATCH_DELAY: std::time::Duration = std::time::Duration::from_millis(2);
/// How often the releaser looks whether a deleted file it holds is still in use elsewhere.
const RELEASE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Deleted segment files whose blocks the releasers freed (`ftruncate(0)` before the last
/// close), all shards together.
static RELEASED_FILES: AtomicU64 = AtomicU64::new(0);

/// How many deleted segment files the file workers have released so far.
pub fn released_files() -> u64 {
    RELEASED_FILES.load(Ordering::Relaxed)
}

/// Hands the descriptor of a segment file that was just unlinked to the shard's releaser, a
/// thread of its own: it keeps the descriptor until every other holder (the segment and its
/// mark, responses sending regions of it, queued file jobs) let theirs go, then truncates the
/// file to nothing and closes it. Why: the last close of an unlinked file frees its blocks
/// (ext4 evicts the inode: a 1 GiB segment took 362 ms on this host's `discard` mount) and used
/// to run on the shard, stalling every partition of it. Apart from the file worker, the
/// window's jobs do not wait behind the freeing of a deleted topic's GBs; and its channel
/// never refuses a file, where a full job queue would have left the last close to the shard.
/// Kafka deletes segment files on a scheduler thread, after `file.delete.delay.ms`. Call it
/// only for a file no longer linked: its data goes.
pub fn release_when_unused(fd: Arc<OwnedFd>) {
    RELEASER.with(|r| {
        // No releaser (no thread could be started): the last holder closes it.
        if let Some(releaser) = r.borrow_mut().get_or_insert_with(start_releaser) {
            let _ = releaser.send(fd);
        }
    });
}

thread_local! {
    /// This shard's releaser, started by the first deleted file; `None` inside: no thread
    /// could be started.
    static RELEASER: RefCell<Option<Option<mpsc::Sender<Arc<OwnedFd>>>>> =
        const { RefCell::new(None) };
}

/// The releaser's deleted files: each one it holds the last reference of is truncated and
/// closed here.
fn release_unused(releasing: &mut Vec<Arc<OwnedFd>>) {
    releasing.retain(|fd| {
        // Only the releaser holds it: nobody can clone it any more, so nobody reads it again.
        if Arc::strong_count(fd) > 1 {
            return true;
        }
        // SAFETY: ftruncate on a descriptor the releaser holds the last reference of. A
        // failure leaves the freeing to the close.
        unsafe { libc::ftruncate(fd.as_raw_fd(), 0) };
        RELEASED_FILES.fetch_add(1, Ordering::Relaxed);
        false
    });
}

/// Jobs queued for the file worker at most.
const FILE_JOBS_MAX: usize = 1024;
/// Bytes of page drops queued for the file worker past which appends wait
/// ([`wait_for_file_worker`]): what the window let go of and the kernel has not yet dropped.
/// 64 jobs left the shard running drops itself (and waiting in them) in bursts with 1,000
/// partitions.
const FILE_JOBS_DROP_BYTES_MAX: u64 = 256 << 20;
/// Jobs queued past which appends wait, leaving room for the jobs of appends already past the
/// gate.
const FILE_JOBS_BACKLOG: u64 = (FILE_JOBS_MAX / 2) as u64;
/// Bytes of page drops queued at most: past it (appends that passed the gate before the
/// backlog formed) a drop runs on the shard.
const FILE_JOBS_DROP_BYTES_HARD_MAX: u64 = 2 * FILE_JOBS_DROP_BYTES_MAX;
/// How often an append waiting at the gate looks at the backlog again.
const FILE_WORKER_GATE_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// The sending end of a shard's file worker.
struct FileWorker {
    jobs: SyncSender<FileJob>,
    /// Bytes of page drops queued: added here, taken off by the worker once dropped.
    queued_drop_bytes: Arc<AtomicU64>,
    /// Jobs queued: added here, taken off by the worker once run.
    queued_jobs: Arc<AtomicU64>,
}

thread_local! {
    /// This shard's file worker, started by the first job; `None` inside: no thread could be
    /// started, and jobs run on the shard.
    static FILE_WORKER: RefCell<Option<Option<FileWorker>>> = const { RefCell::new(None) };
}

/// Hands `job` to this thread's file worker; runs it here only when the worker's queue is
/// full past its hard bounds (appends wait at [`wait_for_file_worker`] well before that) or
/// there is no worker.
fn submit(job: FileJob) {
    if let Some(job) = try_submit(job) {
        count(|s| s.inline_jobs += 1);
        job.run();
    }
}

/// Queues `job` for this shard's file worker; gives it back when the queue refuses it (full,
/// past its bytes to drop, or no worker).
fn try_submit(job: FileJob) -> Option<FileJob> {
    FILE_WORKER.with(|w| {
        let mut w = w.borrow_mut();
        let Some(worker) = w.get_or_insert_with(start_file_worker) else {
            return Some(job);
        };
        let drop_bytes = job.drop_bytes();
        let queued = worker.queued_drop_bytes.load(Ordering::Relaxed);
        if drop_bytes > 0 && queued + drop_bytes > FILE_JOBS_DROP_BYTES_HARD_MAX {
            return Some(job);
        }
        worker
            .queued_drop_bytes
            .fetch_add(drop_bytes, Ordering::Relaxed);
        worker.queued_jobs.fetch_add(1, Ordering::Relaxed);
        match worker.jobs.try_send(job) {
            Ok(()) => None,
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                worker
                    .queued_drop_bytes
                    .fetch_sub(drop_bytes, Ordering::Relaxed);
                worker.queued_jobs.fetch_sub(1, Ordering::Relaxed);
                Some(job)
            }
        }
    })
}

/// Starts the file worker of this thread (named after it); it ends when the thread's sender
/// goes, with the thread.
fn start_file_worker() -> Option<FileWorker> {
    let (jobs, queue) = mpsc::sync_channel::<FileJob>(FILE_JOBS_MAX);
    let queued_drop_bytes = Arc::new(AtomicU64::new(0));
    let queued_jobs = Arc::new(AtomicU64::new(0));
    let queued = queued_drop_bytes.clone();
    let jobs_left = queued_jobs.clone();
    let name = std::thread::current().name().unwrap_or("shard").to_owned();
    // Linux keeps 15 bytes of a thread's name: "shard-0-1" + "-files".
    let name = format!("{}-files", name.chars().take(9).collect::<String>());
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            // Blocks for the first job; then, while jobs keep coming, takes them in batches a
            // short sleep apart: a sleeping worker is not woken by the shard's sends, so the
            // shard pays no futex wake and no switch per job (one per append range at 1,000
            // partitions, one per region a catch-up read sends from below the window).
            let mut next = queue.recv().ok();
            while let Some(job) = next {
                let drop_bytes = job.drop_bytes();
                job.run();
                queued.fetch_sub(drop_bytes, Ordering::Relaxed);
                jobs_left.fetch_sub(1, Ordering::Relaxed);
                next = match queue.try_recv() {
                    Ok(job) => Some(job),
                    Err(mpsc::TryRecvError::Empty) => {
                        std::thread::sleep(FILE_WORKER_BATCH_DELAY);
                        queue.try_recv().ok().or_else(|| queue.recv().ok())
                    }
                    Err(mpsc::TryRecvError::Disconnected) => None,
                };
            }
        })
        .ok()?;
    Some(FileWorker {
        jobs,
        queued_drop_bytes,
        queued_jobs,
    })
}

/// Whether this shard's file worker is behind: more than its backlog of jobs, or of page drops,
/// queued (the disk is behind the appends).
fn file_worker_backlogged() -> bool {
    FILE_WORKER.with(|w| {
        let w = w.borrow();
        let Some(Some(worker)) = w.as_ref() else {
            return false;
        };
        worker.queued_drop_bytes.load(Ordering::Relaxed) > FILE_JOBS_DROP_BYTES_MAX
            || worker.queued_jobs.load(Ordering::Relaxed) > FILE_JOBS_BACKLOG
    })
}

/// The gate appends pass in call order: tickets of the appends waiting, and those given up.
struct Gate {
    /// The next ticket to hand out.
    next: u64,
    /// The ticket whose turn it is; equal to `next` when no append waits.
    serving: u64,
    /// Tickets whose waits were dropped before their turn (their requests went).
    abandoned: std::collections::BTreeSet<u64>,
}

impl Gate {
    /// Passes the turn on, over abandoned tickets.
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
        assert!(self.serving <= self.next);
    }
}

thread_local! {
    static GATE: RefCell<Gate> = const {
        RefCell::new(Gate { next: 0, serving: 0, abandoned: std::collections::BTreeSet::new() })
    };
}

/// One append's place at the gate. Dropped on its turn (the append passes) it passes the turn
/// on; dropped before (the wait given up, its request gone) it gives the place up.
struct Ticket {
    number: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        GATE.with(|g| {
            let mut g = g.borrow_mut();
            if g.serving == self.number {
                g.advance();
            } else {
                g.abandoned.insert(self.number);
            }
        });
    }
}

/// Waits, before an append is written, while this shard's file worker is behind (the disk
/// is): appends wait their turn here, in call order, instead of the shard running the window's
/// drops itself and waiting in them for the disk. The shard goes on serving fetches from the
/// page cache meanwhile, so the consumers keep reading the window while the producers are
/// slowed to what the disk takes (a writer in the kernel's dirty throttling, with Kafka's
/// request threads, waits the same way while its network threads go on). Returns at once when
/// the worker keeps up and no append waits.
pub async fn wait_for_file_worker() {
    let number = GATE.with(|g| {
        let mut g = g.borrow_mut();
        if g.serving == g.next && !file_worker_backlogged() {
            return None;
        }
        g.next += 1;
        Some(g.next - 1)
    });
    let Some(number) = number else {
        return;
    };
    let ticket = Ticket { number };
    count(|s| s.gate_waits += 1);
    loop {
        let turn = GATE.with(|g| g.borrow().serving == number);
        if turn && !file_worker_backlogged() {
            break;
        }
        glommio::timer::sleep(FILE_WORKER_GATE_POLL).await;
    }
    drop(ticket);
}

/// Starts this shard's releaser (named after the shard); it ends when the shard's sender goes.
fn start_releaser() -> Option<mpsc::Sender<Arc<OwnedFd>>> {
    let (files, deleted) = mpsc::channel::<Arc<OwnedFd>>();
    let name = std::thread::current().name().unwrap_or("shard").to_owned();
    // "shard-0-1" + "-free", within Linux's 15 bytes.
    let name = format!("{}-free", name.chars().take(9).collect::<String>());
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let mut releasing: Vec<Arc<OwnedFd>> = Vec::new();
            while let Some(fd) = wait_for_file(&deleted, &mut releasing) {
                releasing.push(fd);
                release_unused(&mut releasing);
            }
        })
        .ok()?;
    Some(files)
}

/// The releaser's wait for the next deleted file (`None`: the shard is gone). While it holds
/// deleted files it wakes every `RELEASE_POLL` to release those no one else holds; else it
/// blocks.
fn wait_for_file(
    deleted: &mpsc::Receiver<Arc<OwnedFd>>,
    releasing: &mut Vec<Arc<OwnedFd>>,
) -> Option<Arc<OwnedFd>> {
    while !releasing.is_empty() {
        match deleted.recv_timeout(RELEASE_POLL) {
            Ok(fd) => return Some(fd),
            Err(mpsc::RecvTimeoutError::Timeout) => release_unused(releasing),
            // The shard is gone: what is still held elsewhere is closed there.
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
    deleted.recv().ok()
}

/// Waits until the file worker has run every job this thread queued before: for tests, which
/// look at the page cache after the window's calls.
pub fn settle() {
    let (done, wait) = mpsc::sync_channel(1);
    submit(FileJob::Settle(done));
    let _ = wait.recv();
}

/// A file is preallocated ahead in steps of this: 4 MiB steps gave the gains measured. A file
/// joins only while the budget leaves it a whole step, so at most `budget / 8 MiB` files take
/// part (32 at the default 256 MiB). With many files at smaller
/// steps (256 KiB, or 1 MiB with an 8-times budget) 1,000 partitions were slower: the disk's
/// writes averaged 550 KiB at 21 ms against 966 KiB at 31 ms without preallocation, the file
/// worker ran ~1,300 `fallocate`s a second, and the appends waited at its gate
/// (ARCHITECTURE.md, "Preallocated segment blocks").
const PREALLOCATE_STEP_BYTES: u64 = 4 << 20;

thread_local! {
    /// This shard's budget of blocks allocated ahead of its appends; 0 turns preallocation off.
    static PREALLOCATE_BYTES: Cell<u64> = const { Cell::new(0) };
    /// Segment files of this shard taking part (each at most two steps ahead).
    static PREALLOCATING_FILES: Cell<u64> = const { Cell::new(0) };
}

/// Sets this shard's preallocation budget ([`FileMark::preallocate`]); 0 turns it off.
pub fn set_preallocate_bytes(budget_bytes: u64) {
    PREALLOCATE_BYTES.with(|s| s.set(budget_bytes));
}

/// The step of a file taking part (`joining`: one more file would), if the budget leaves it
/// a whole [`PREALLOCATE_STEP_BYTES`].
fn preallocate_step_bytes(joining: bool) -> Option<u64> {
    let budget_bytes = PREALLOCATE_BYTES.with(Cell::get);
    let files = PREALLOCATING_FILES.with(Cell::get) + u64::from(joining);
    (budget_bytes / (2 * files.max(1)) >= PREALLOCATE_STEP_BYTES).then_some(PREALLOCATE_STEP_BYTES)
}

/// One append's range in the window: the file and where the range ends.
struct Held {
    file: Weak<FileMark>,
    end: u64,
    bytes: u64,
}

/// What the window did on this thread, for tests and the bench.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// Appended bytes currently counted in the window.
    pub held_bytes: u64,
    /// `sync_file_range` calls.
    pub writeback_calls: u64,
    /// `posix_fadvise(DONTNEED)` calls.
    pub drop_calls: u64,
    /// Bytes handed to `posix_fadvise(DONTNEED)`.
    pub dropped_bytes: u64,
    /// Ranges forgotten because the window held `RANGES_MAX` of them.
    pub forgotten_ranges: u64,
    /// `posix_fadvise(DONTNEED)` calls for pages read back (see [`sent`]).
    pub read_back_drop_calls: u64,
    /// Bytes of read-back pages handed to `posix_fadvise(DONTNEED)`.
    pub read_back_dropped_bytes: u64,
    /// `fallocate` calls preallocating blocks ahead of appends.
    pub preallocate_calls: u64,
    /// Trims queued: `ftruncate`s freeing a rolled segment's unused preallocated blocks.
    pub trim_calls: u64,
    /// Jobs run on the shard, not the file worker: its queue was full (or it had none).
    pub inline_jobs: u64,
    /// Appends that waited at the gate for the file worker ([`wait_for_file_worker`]).
    pub gate_waits: u64,
}

struct Window {
    limit_bytes: u64,
    held: VecDeque<Held>,
    /// Index in `held` of the first range whose writeback has not been started.
    unstarted: usize,
    /// Bytes of the ranges from `unstarted` on.
    unstarted_bytes: u64,
    stats: WindowStats,
}

thread_local! {
    static WINDOW: RefCell<Window> = const {
        RefCell::new(Window {
            limit_bytes: 0,
            held: VecDeque::new(),
            unstarted: 0,
            unstarted_bytes: 0,
            stats: WindowStats {
                held_bytes: 0,
                writeback_calls: 0,
                drop_calls: 0,
                dropped_bytes: 0,
                forgotten_ranges: 0,
                read_back_drop_calls: 0,
                read_back_dropped_bytes: 0,
                preallocate_calls: 0,
                trim_calls: 0,
                inline_jobs: 0,
                gate_waits: 0,
            },
        })
    };
}

fn count(f: impl FnOnce(&mut WindowStats)) {
    WINDOW.with(|w| f(&mut w.borrow_mut().stats));
}

/// Sets this shard's window; 0 turns it off (ranges already held, read back ones too, are
/// forgotten, their pages left to the kernel).
pub fn set_window_bytes(limit_bytes: u64) {
    WINDOW.with(|w| {
        let mut w = w.borrow_mut();
        w.limit_bytes = limit_bytes;
        if limit_bytes == 0 {
            w.held.clear();
            w.unstarted = 0;
            w.unstarted_bytes = 0;
            w.stats.held_bytes = 0;
        }
    });
    if limit_bytes == 0 {
        READ_BACK.with(|r| {
            let mut r = r.borrow_mut();
            r.held.clear();
            r.held_bytes = 0;
        });
    }
}

/// This shard's window setting.
pub fn window_bytes() -> u64 {
    WINDOW.with(|w| w.borrow().limit_bytes)
}

/// This thread's counts.
pub fn stats() -> WindowStats {
    WINDOW.with(|w| w.borrow().stats)
}

/// Notes `len` bytes appended to `file` ending at `end`, then starts writeback and drops pages
/// as the window requires. Called after the bytes were written.
pub fn appended(file: &Rc<FileMark>, end: u64, len: u64) {
    // Marks are taken out of the window before the syscalls run: the window's RefCell is not
    // held across them (they do not re-enter, but the counts they add do).
    let (writeback, drop) = WINDOW.with(|w| w.borrow_mut().push(file, end, len));
    for (mark, end) in writeback {
        mark.start_writeback(end);
    }
    for (mark, end) in drop {
        mark.drop_pages(end);
    }
}

/// Pages a fetch brought back into the page cache from below a file's drop point (the
/// kernel's read-ahead or the log's `read_in`, for a consumer behind the window) stay for at
/// most this share of the window, newest kept: then they are dropped, so that the next pages
/// read back reuse them instead of growing the page cache into memory the host took back.
const READ_BACK_SHARE: u64 = 4;

/// Read-back ranges kept at most; past this the oldest is dropped early (its pages are clean).
const READ_BACK_RANGES_MAX: usize = 1 << 14;

/// One range of read-back pages: the file and the bytes `[start, end)`.
struct ReadBack {
    file: Weak<FileMark>,
    start: u64,
    end: u64,
}

struct ReadBackWindow {
    held: VecDeque<ReadBack>,
    held_bytes: u64,
}

thread_local! {
    static READ_BACK: RefCell<ReadBackWindow> = const {
        RefCell::new(ReadBackWindow { held: VecDeque::new(), held_bytes: 0 })
    };
}

/// Notes that a fetch is sending `[start, end)` of `file` from the page cache. Below the
/// file's drop point those pages were read back from the disk; they join the read-back
/// window, and the oldest ranges past its share of the window are dropped.
pub fn sent(file: &Rc<FileMark>, start: u64, end: u64) {
    let limit_bytes = window_bytes() / READ_BACK_SHARE;
    if limit_bytes == 0 || end > file.dropped_to.get() || end <= start {
        return;
    }
    let drop: Vec<(Rc<FileMark>, u64, u64)> = READ_BACK.with(|r| {
        let mut r = r.borrow_mut();
        r.held.push_back(ReadBack {
            file: Rc::downgrade(file),
            start,
            end,
        });
        r.held_bytes += end - start;
        let mut drop = Vec::new();
        while r.held_bytes > limit_bytes || r.held.len() > READ_BACK_RANGES_MAX {
            let Some(h) = r.held.pop_front() else {
                break;
            };
            r.held_bytes -= h.end - h.start;
            if let Some(mark) = h.file.upgrade() {
                drop.push((mark, h.start, h.end));
            }
        }
        drop
    });
    for (mark, start, end) in drop {
        mark.drop_read_back(start, end);
    }
}

type Work = Vec<(Rc<FileMark>, u64)>;

impl Window {
    fn push(&mut self, file: &Rc<FileMark>, end: u64, len: u64) -> (Work, Work) {
        if self.limit_bytes == 0 {
            return (Vec::new(), Vec::new());
        }
        let back_unstarted = self.unstarted < self.held.len();
        let step_bytes = self.step_bytes();
        let bytes = file.pending_bytes.get() + len;
        match self.held.back_mut() {
            // The same file again (one busy partition): one range, so the window stays short.
            Some(back)
                if back_unstarted
                    && back.file.as_ptr() == Rc::as_ptr(file)
                    && back.end <= end
                    && back.bytes < RANGE_MAX_BYTES =>
            {
                back.end = end;
                back.bytes += bytes;
            }
            _ if bytes >= step_bytes => self.held.push_back(Held {
                file: Rc::downgrade(file),
                end,
                bytes,
            }),
            // Interleaved with other files' appends: wait in the mark for a step's worth.
            _ => {
                file.pending_bytes.set(bytes);
                return (Vec::new(), Vec::new());
            }
        }
        file.pending_bytes.set(0);
        self.stats.held_bytes += bytes;
        self.unstarted_bytes += bytes;
        // Writeback starts half a window before a range leaves, so that it is clean by then.
        let lag_bytes = self.limit_bytes / 2;
        let mut writeback = Vec::new();
        while self.unstarted_bytes > lag_bytes && self.unstarted < self.held.len() {
            let h = &self.held[self.unstarted];
            self.unstarted_bytes -= h.bytes;
            self.unstarted += 1;
            if let Some(mark) = h.file.upgrade() {
                if h.end >= mark.written_back_to.get() + FILE_STEP_BYTES {
                    writeback.push((mark, h.end));
                }
            }
        }
        while self.held.len() > RANGES_MAX {
            self.pop_front();
            self.stats.forgotten_ranges += 1;
        }
        let mut drop = Vec::new();
        while self.stats.held_bytes > self.limit_bytes {
            let Some(h) = self.pop_front() else {
                break;
            };
            if let Some(mark) = h.file.upgrade() {
                if h.end >= mark.dropped_to.get() + FILE_STEP_BYTES {
                    drop.push((mark, h.end));
                }
            }
        }
        assert!(self.unstarted <= self.held.len() && self.held.len() <= RANGES_MAX);
        (writeback, drop)
    }

    /// The least a range holds unless it follows a range of the same file: a window's
    /// `1 / RANGES_TARGET`, at least a page.
    fn step_bytes(&self) -> u64 {
        (self.limit_bytes / RANGES_TARGET).max(PAGE_BYTES)
    }

    /// Takes the oldest range out of the window's counts.
    fn pop_front(&mut self) -> Option<Held> {
        let h = self.held.pop_front()?;
        if self.unstarted == 0 {
            // Left before its writeback started (a window smaller than the lag).
            self.unstarted_bytes -= h.bytes;
        } else {
            self.unstarted -= 1;
        }
        self.stats.held_bytes -= h.bytes;
        Some(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::FileExt;
    use std::time::Duration;

    /// A new segment file (read and write) in its own directory, its mark, this thread's window
    /// set to 16 MiB, and the 131,000 bytes the tests append. Under the build's target
    /// directory, on the repository's disk: /tmp may be a tmpfs, whose pages cannot be dropped.
    fn file_with_16_mib_window(
        tag: &str,
    ) -> (
        std::path::PathBuf,
        std::path::PathBuf,
        std::fs::File,
        Rc<FileMark>,
        Vec<u8>,
    ) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target")
            .join(format!("sluice-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("00000000000000000000.log");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        // SAFETY: a fresh descriptor of the file, owned by the mark.
        let fd = unsafe { OwnedFd::from_raw_fd(libc::dup(file.as_raw_fd())) };
        let mark = FileMark::new(Arc::new(fd), 0);
        set_window_bytes(16 << 20);
        let chunk = (0..131_000u32).map(|i| (i % 251) as u8).collect();
        (dir, path, file, mark, chunk)
    }

    /// A consumer behind the window reads 40 MiB of a file back (the page cache fills with the
    /// kernel's read-ahead, in large folios) and each fetch's ~1 MiB is noted as sent: the
    /// read-back pages stay within their share of the window (and the folios a range ends
    /// inside), where before they stayed for ever; a range inside the window is not one; the
    /// list of ranges has its bound.
    #[test]
    fn pages_read_back_behind_the_window_leave_the_page_cache() {
        let (dir, _, mut file, mark, chunk) = file_with_16_mib_window("pcr");
        let mut end = 0u64;
        while end < 64 << 20 {
            file.write_all(&chunk).unwrap();
            end += chunk.len() as u64;
            appended(&mark, end, chunk.len() as u64);
        }
        let dropped_to = mark.dropped_to.get();
        assert!(
            dropped_to >= 40 << 20,
            "the window dropped up to {dropped_to}"
        );
        let read_back = |from: u64, to: u64| {
            crate::file_io::cached_pages(mark.fd.as_raw_fd(), from, to - from)
                .expect("cachestat (Linux 6.5+)")
                * PAGE_BYTES
        };
        // Fetches of 1,040,000 bytes from an offset inside the file, each read (the kernel
        // reads ahead of it) and then sent.
        let share_bytes = (16 << 20) / READ_BACK_SHARE;
        let fetch_bytes = 1_040_000u64;
        let mut buf = vec![0u8; fetch_bytes as usize];
        let first = (10 << 20) + 12_345;
        let mut at = first;
        while at + fetch_bytes <= 40 << 20 {
            file.read_exact_at(&mut buf, at).unwrap();
            sent(&mark, at, at + fetch_bytes);
            settle();
            at += fetch_bytes;
            let behind_to = at.saturating_sub(share_bytes + 2 * FOLIO_MAX_BYTES);
            if behind_to > first {
                let behind = read_back(first, behind_to);
                assert_eq!(
                    behind, 0,
                    "{behind} bytes still cached behind the reader at {at}"
                );
            }
        }
        assert!(stats().read_back_drop_calls > 0);
        let held = READ_BACK.with(|r| r.borrow().held_bytes);
        assert!(held <= share_bytes, "{held} read-back bytes held");
        // Inside the window: not read back, not held.
        sent(&mark, dropped_to, dropped_to + fetch_bytes);
        assert_eq!(READ_BACK.with(|r| r.borrow().held_bytes), held);
        // Many tiny ranges: the list stays within its bound.
        for i in 0..(READ_BACK_RANGES_MAX as u64 + 100) {
            sent(&mark, i * 100, i * 100 + 10);
        }
        assert!(READ_BACK.with(|r| r.borrow().held.len()) <= READ_BACK_RANGES_MAX);
        set_window_bytes(0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Writes 64 MiB with a 16 MiB window into a real file: the ranges that left the window
    /// are gone from the page cache (all but what writeback had not finished), the window's
    /// count stays at its bound, and the file reads back whole.
    #[test]
    fn appends_past_the_window_leave_the_page_cache() {
        let (dir, path, mut file, mark, chunk) = file_with_16_mib_window("pcw");
        let mut end = 0u64;
        while end < 64 << 20 {
            file.write_all(&chunk).unwrap();
            end += chunk.len() as u64;
            appended(&mark, end, chunk.len() as u64);
            assert!(stats().held_bytes <= (16 << 20) + chunk.len() as u64);
        }
        // What left the window was clean when dropped (the drop waits for its writeback): at
        // most the window, a file step and a page stay cached.
        settle();
        let cached_bytes = crate::file_io::cached_pages(mark.fd.as_raw_fd(), 0, end)
            .expect("cachestat (Linux 6.5+)")
            * PAGE_BYTES;
        assert!(
            cached_bytes <= stats().held_bytes + FILE_STEP_BYTES + PAGE_BYTES,
            "{cached_bytes} cached against a window holding {}",
            stats().held_bytes
        );
        assert!(stats().drop_calls > 0 && stats().writeback_calls > 0);
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len() as u64, end);
        assert!(back.chunks(chunk.len()).all(|c| c == &chunk[..c.len()]));
        set_window_bytes(0);
        assert_eq!(stats().held_bytes, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A deleted segment's ranges are counted out without touching its (closed) file.
    #[test]
    fn ranges_of_a_dropped_mark_are_only_counted_out() {
        set_window_bytes(1 << 20);
        let file = tempfile_fd();
        let mark = FileMark::new(Arc::new(file), 0);
        appended(&mark, 512 << 10, 512 << 10);
        drop(mark);
        let other = FileMark::new(Arc::new(tempfile_fd()), 0);
        let before = stats();
        appended(&other, 1 << 20, 1 << 20);
        let after = stats();
        assert_eq!(after.held_bytes, 1 << 20);
        assert_eq!(
            after.drop_calls, before.drop_calls,
            "the dead mark's range was not dropped"
        );
        set_window_bytes(0);
    }

    /// Small appends interleaved over many files enter the window a step at a time: the range
    /// list stays near `RANGES_TARGET` however small the appends, nothing is forgotten, and the
    /// window fills to its limit and drops what leaves it. (When every such append was a range
    /// of its own, `RANGES_MAX` of them were reached long before the limit: the oldest were
    /// forgotten and nothing was ever dropped.)
    #[test]
    fn small_interleaved_appends_enter_in_steps_and_leave() {
        let limit_bytes = 64 << 20;
        set_window_bytes(limit_bytes);
        let step_bytes = WINDOW.with(|w| w.borrow().step_bytes());
        let marks: Vec<_> = (0..16)
            .map(|_| FileMark::new(Arc::new(tempfile_fd()), 0))
            .collect();
        let mut ends = vec![0u64; marks.len()];
        let before = stats();
        let record_bytes = 100;
        let mut ranges_most = 0;
        for i in 0..3 * limit_bytes / record_bytes {
            let file = (i % marks.len() as u64) as usize;
            ends[file] += record_bytes;
            appended(&marks[file], ends[file], record_bytes);
            ranges_most = ranges_most.max(WINDOW.with(|w| w.borrow().held.len()));
        }
        let after = stats();
        assert_eq!(after.forgotten_ranges, before.forgotten_ranges);
        assert!(
            ranges_most as u64 <= RANGES_TARGET + 1,
            "{ranges_most} ranges held"
        );
        assert!(
            after.held_bytes <= limit_bytes && after.held_bytes + 2 * step_bytes > limit_bytes,
            "{} held",
            after.held_bytes
        );
        let appended_bytes: u64 = ends.iter().sum();
        let dropped_bytes = after.dropped_bytes - before.dropped_bytes;
        // Drops go a file step at a time per file: all but the window and a step per file left.
        assert!(
            dropped_bytes + limit_bytes + marks.len() as u64 * (FILE_STEP_BYTES + step_bytes)
                >= appended_bytes,
            "{dropped_bytes} of {appended_bytes} dropped"
        );
        set_window_bytes(0);
    }

    /// The range list's backstop: a window already holding `RANGES_MAX` ranges forgets its
    /// oldest, without dropping it, to take a new one. (The steps keep a real window near
    /// `RANGES_TARGET` ranges, so the full list is built by hand.)
    #[test]
    fn a_full_range_list_forgets_its_oldest_range() {
        let mark = FileMark::new(Arc::new(tempfile_fd()), 0);
        let full_bytes = RANGES_MAX as u64 * PAGE_BYTES;
        let mut window = Window {
            limit_bytes: 1 << 40,
            held: (1..=RANGES_MAX as u64)
                .map(|i| Held {
                    file: Rc::downgrade(&mark),
                    end: i * PAGE_BYTES,
                    bytes: PAGE_BYTES,
                })
                .collect(),
            unstarted: 0,
            unstarted_bytes: full_bytes,
            stats: WindowStats {
                held_bytes: full_bytes,
                ..WindowStats::default()
            },
        };
        let other = FileMark::new(Arc::new(tempfile_fd()), 0);
        let step_bytes = window.step_bytes();
        let (writeback, drop) = window.push(&other, step_bytes, step_bytes);
        assert!(
            writeback.is_empty() && drop.is_empty(),
            "forgotten, not dropped"
        );
        assert_eq!(window.held.len(), RANGES_MAX);
        assert_eq!(window.stats.forgotten_ranges, 1);
        assert_eq!(
            window.stats.held_bytes,
            full_bytes - PAGE_BYTES + step_bytes
        );
        assert_eq!(window.unstarted_bytes, window.stats.held_bytes);
        assert_eq!(window.held.front().map(|h| h.end), Some(2 * PAGE_BYTES));
    }

    /// With the worker held, drops queue up to the queue's hard bytes bound (appends would
    /// have waited at the gate long before); the ones past it run on the shard (here, the
    /// test's thread) at once, and everything runs once it is released.
    #[test]
    fn a_full_file_worker_queue_runs_jobs_on_the_shard() {
        let mark = FileMark::new(Arc::new(tempfile_fd()), 0);
        settle(); // the worker is started
        let (release, held) = mpsc::sync_channel(0);
        submit(FileJob::Hold(held));
        let before = stats().inline_jobs;
        let drop_bytes = 4 << 20;
        let jobs = 2 * FILE_JOBS_DROP_BYTES_HARD_MAX / drop_bytes;
        for i in 0..jobs {
            submit(FileJob::DropReadBack {
                fd: mark.fd.clone(),
                from: i * drop_bytes,
                to: (i + 1) * drop_bytes,
            });
        }
        let queued = queued_drop_bytes();
        assert_eq!(
            queued, FILE_JOBS_DROP_BYTES_HARD_MAX,
            "queued up to the bound"
        );
        assert_eq!(
            stats().inline_jobs - before,
            jobs - FILE_JOBS_DROP_BYTES_HARD_MAX / drop_bytes,
            "the rest ran here"
        );
        drop(release);
        settle();
        let queued = queued_drop_bytes();
        assert_eq!(queued, 0, "all run once released");
    }

    /// While the worker is behind, appends wait at the gate, none passes, and they pass in
    /// the order they came once it catches up; a wait given up before its turn (its request
    /// gone) does not hold the ones after it.
    #[test]
    fn appends_wait_in_call_order_while_the_file_worker_is_behind() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let mark = FileMark::new(Arc::new(tempfile_fd()), 0);
                settle(); // the worker is started
                let before = stats().gate_waits;
                wait_for_file_worker().await;
                assert_eq!(stats().gate_waits, before, "a worker keeping up: no wait");
                let (release, held) = mpsc::sync_channel(0);
                submit(FileJob::Hold(held));
                let drop_bytes = 4 << 20;
                for i in 0..=FILE_JOBS_DROP_BYTES_MAX / drop_bytes {
                    submit(FileJob::DropReadBack {
                        fd: mark.fd.clone(),
                        from: i * drop_bytes,
                        to: (i + 1) * drop_bytes,
                    });
                }
                assert!(file_worker_backlogged());
                assert_eq!(
                    stats().inline_jobs,
                    0,
                    "a backlog is no reason to run jobs here"
                );
                let passed = Rc::new(RefCell::new(Vec::new()));
                let waiter = |id: u32| {
                    let passed = passed.clone();
                    glommio::spawn_local(async move {
                        wait_for_file_worker().await;
                        passed.borrow_mut().push(id);
                    })
                };
                let first = waiter(1);
                // The second gives up its place: a timeout drops its wait.
                let given_up = glommio::spawn_local(async {
                    futures_lite::future::or(
                        async {
                            wait_for_file_worker().await;
                            true
                        },
                        async {
                            glommio::timer::sleep(Duration::from_millis(5)).await;
                            false
                        },
                    )
                    .await
                });
                let third = waiter(3);
                let fourth = waiter(4);
                assert!(
                    !given_up.await,
                    "no append passes while the worker is behind"
                );
                glommio::timer::sleep(Duration::from_millis(20)).await;
                assert!(passed.borrow().is_empty(), "none passed while held");
                assert_eq!(stats().gate_waits - before, 4);
                drop(release);
                first.await;
                third.await;
                fourth.await;
                assert_eq!(*passed.borrow(), vec![1, 3, 4], "in the order they came");
                assert!(!file_worker_backlogged());
                let waits = stats().gate_waits;
                wait_for_file_worker().await;
                assert_eq!(stats().gate_waits, waits, "the gate is open again");
            })
            .expect("executor")
            .join()
            .expect("test executor");
    }

    /// Bytes of page drops queued for this thread's file worker.
    fn queued_drop_bytes() -> u64 {
        FILE_WORKER.with(|w| {
            let w = w.borrow();
            let worker = w.as_ref().and_then(Option::as_ref).expect("a file worker");
            worker.queued_drop_bytes.load(Ordering::Relaxed)
        })
    }

    /// Bytes of disk blocks the file holds.
    fn allocated_bytes(file: &std::fs::File) -> u64 {
        use std::os::unix::fs::MetadataExt;
        file.metadata().unwrap().blocks() * 512
    }

    /// Blocks are allocated a step or two ahead of the appends (the file's size unchanged),
    /// the unused ones go when the segment is trimmed, and however many files take part the
    /// blocks allocated ahead stay within the shard's budget.
    #[test]
    fn preallocation_runs_ahead_of_appends_within_the_budget() {
        let (dir, path, mut file, mark, chunk) = file_with_16_mib_window("pre");
        set_window_bytes(0);
        let budget_bytes = 64 << 20;
        set_preallocate_bytes(budget_bytes);
        let mut end = 0u64;
        while end < 10 << 20 {
            mark.preallocate(end + chunk.len() as u64, 1 << 30);
            file.write_all(&chunk).unwrap();
            end += chunk.len() as u64;
            settle();
            let ahead = allocated_bytes(&file).saturating_sub(end);
            assert!(
                ahead >= PREALLOCATE_STEP_BYTES - chunk.len() as u64
                    && ahead <= 2 * PREALLOCATE_STEP_BYTES,
                "{ahead} bytes allocated ahead at {end}"
            );
        }
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            end,
            "size unchanged"
        );
        mark.trim(end);
        settle();
        assert!(allocated_bytes(&file) < end + PAGE_BYTES * 16);
        assert_eq!(
            PREALLOCATING_FILES.with(Cell::get),
            0,
            "a trimmed file left"
        );
        // Many files: the first budget / 8 MiB join, each with a whole step, and the rest
        // none.
        let marks: Vec<_> = (0..300)
            .map(|_| FileMark::new(Arc::new(tempfile_fd()), 0))
            .collect();
        for m in &marks {
            m.preallocate(4096, 1 << 30);
        }
        settle();
        let joined = PREALLOCATING_FILES.with(Cell::get);
        assert_eq!(joined, budget_bytes / (2 * PREALLOCATE_STEP_BYTES));
        let ahead_bytes: u64 = marks.iter().map(|m| m.preallocated_to.get()).sum();
        assert!(
            marks
                .iter()
                .all(|m| [0, 2 * PREALLOCATE_STEP_BYTES].contains(&m.preallocated_to.get())),
            "a whole step's blocks or none"
        );
        assert!(ahead_bytes <= budget_bytes + joined * PREALLOCATE_STEP_BYTES);
        drop(marks);
        assert_eq!(PREALLOCATING_FILES.with(Cell::get), 0, "dropped files left");
        set_preallocate_bytes(0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A rolled segment's trim runs on the file worker, never on the shard's thread (there a
    /// synchronous discard stalled every partition), and `trimmed` waits until it has run, as
    /// a truncation of the file must.
    #[test]
    fn a_trim_runs_on_the_file_worker_and_trimmed_waits_for_it() {
        use futures_lite::future::{block_on, poll_once};
        let (dir, path, mut file, mark, chunk) = file_with_16_mib_window("trim");
        set_window_bytes(0);
        set_preallocate_bytes(64 << 20);
        let end = chunk.len() as u64;
        mark.preallocate(end, 1 << 30);
        file.write_all(&chunk).unwrap();
        settle();
        let preallocated = end + PREALLOCATE_STEP_BYTES / 2;
        assert!(allocated_bytes(&file) >= preallocated, "preallocated ahead");
        let (release, held) = mpsc::sync_channel(0);
        submit(FileJob::Hold(held));
        mark.trim(end);
        assert!(
            allocated_bytes(&file) >= preallocated,
            "not trimmed on this thread"
        );
        let mut trimmed = Box::pin(mark.trimmed());
        assert!(
            block_on(poll_once(&mut trimmed)).is_none(),
            "waits for the worker"
        );
        drop(release);
        block_on(trimmed);
        assert!(allocated_bytes(&file) < end + PAGE_BYTES * 16, "trimmed");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), end, "size kept");
        block_on(mark.trimmed()); // nothing queued: at once
        set_preallocate_bytes(0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A deleted file handed to the releaser is freed and closed there only once the releaser
    /// holds its last reference: a response still sending from it reads it whole.
    #[test]
    fn a_released_file_is_freed_once_only_the_releaser_holds_it() {
        use std::io::Write;
        let path = std::env::temp_dir().join(format!(
            "sluice-pcw-release-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        let mut file = std::fs::File::create(&path).unwrap();
        let bytes = 8u64 << 20;
        file.write_all(&vec![7u8; bytes as usize]).unwrap();
        file.sync_all().unwrap();
        // A file of its own (not a holder of the descriptor) to watch the inode through.
        let probe = std::fs::File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let fd = Arc::new(OwnedFd::from(file));
        let in_flight = fd.clone();
        let released_before = released_files();
        release_when_unused(fd);
        // The releaser looks when a file comes and every `RELEASE_POLL`: after two, it has
        // looked and left the file.
        std::thread::sleep(2 * RELEASE_POLL);
        assert_eq!(
            probe.metadata().unwrap().len(),
            bytes,
            "still held: left whole"
        );
        drop(in_flight);
        use std::os::unix::fs::MetadataExt;
        // The size drops before the blocks are freed: both are waited for.
        let freed = || {
            let meta = probe.metadata().unwrap();
            (meta.len(), meta.blocks())
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while freed() != (0, 0) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(freed(), (0, 0), "freed by the releaser");
        assert!(released_files() > released_before);
    }

    /// The releaser polls only while it holds a deleted file: once it released the last one it
    /// blocks until the next comes, so a broker that deleted a segment once does not wake a
    /// thread every `RELEASE_POLL` for the rest of its life. Watched from outside, through the
    /// kernel's count of the thread's voluntary context switches (each wake from a wait is one).
    #[test]
    fn the_releaser_stops_waking_once_it_holds_nothing() {
        // A "shard" thread of a name of its own, so its releaser is found by name; it lives
        // (and with it the releaser's channel) until the test drops `hand`.
        let (hand, files) = mpsc::channel::<Arc<OwnedFd>>();
        let shard = std::thread::Builder::new()
            .name("relwake".into())
            .spawn(move || {
                for fd in files {
                    release_when_unused(fd);
                }
            })
            .unwrap();
        let mut file = std::fs::File::from(tempfile_fd());
        file.write_all(&[1u8; 1 << 16]).unwrap();
        // A descriptor of its own (not a holder of the shared one) to watch the size through.
        let probe = file.try_clone().unwrap();
        let fd = Arc::new(OwnedFd::from(file));
        let held = fd.clone();
        hand.send(fd).unwrap();
        let releaser = wait_for_thread("relwake-free");
        let polls = 4 * RELEASE_POLL;

        let before = voluntary_switches(releaser);
        std::thread::sleep(polls);
        let woken = voluntary_switches(releaser) - before;
        assert!(
            woken >= 2,
            "holding a file, it polls: {woken} wakes in {polls:?}"
        );

        drop(held);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while probe.metadata().unwrap().len() != 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(probe.metadata().unwrap().len(), 0, "released");
        // The release ran in a poll's wake; the next wait is the blocking one.
        std::thread::sleep(RELEASE_POLL);
        let before = voluntary_switches(releaser);
        std::thread::sleep(polls);
        let woken = voluntary_switches(releaser) - before;
        assert_eq!(woken, 0, "holding nothing, it waits without waking");

        drop(hand);
        shard.join().unwrap();
    }

    /// The id of this process's thread named `name`, waited for up to 10 s.
    fn wait_for_thread(name: &str) -> u32 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            for task in std::fs::read_dir("/proc/self/task").unwrap() {
                let task = task.unwrap().path();
                if std::fs::read_to_string(task.join("comm")).is_ok_and(|c| c.trim() == name) {
                    return task.file_name().unwrap().to_str().unwrap().parse().unwrap();
                }
            }
            assert!(std::time::Instant::now() < deadline, "no thread {name}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The kernel's count of the times thread `tid` of this process waited voluntarily.
    fn voluntary_switches(tid: u32) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    fn tempfile_fd() -> OwnedFd {
        let path = std::env::temp_dir().join(format!(
            "sluice-pcw-fd-{}-{}",
            std::process::id(),
            rand_suffix()
        ));
        let file = std::fs::File::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file.into()
    }

    /// Unique in the process: the tests run on threads of their own.
    fn rand_suffix() -> u64 {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}
