//! Whole-range reads and writes of the log's files.
//!
//! The decision behind these (ARCHITECTURE.md, "Decisions", `bench/iopath`): writes are
//! synchronous `pwrite`s from the shard's own thread into the page cache, as Kafka's plain
//! `write`; reads try `preadv2(RWF_NOWAIT)` first, which copies straight from the page cache
//! into the buffer that is sent, and only what the page cache does not hold is read through
//! io_uring (glommio's `BufferedFile::read_at`), so a disk read never blocks the shard.
//! glommio's buffered writes were punted to io_uring's io-wq workers: 0.71 CPU s per GiB and
//! 0.86 ms per append against `pwrite`'s 0.46 s and 31 µs on this host.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use glommio::io::BufferedFile;

use crate::error::LogError;

/// Bytes the log's paths copied on this thread (a shard's executor) since it started: what a
/// read or an append copied in user space and what the kernel copied. Counted so that
/// `bench/iopath` shows copies per byte as numbers; four thread-local adds per I/O.
pub mod copies {
    use std::cell::Cell;

    /// A snapshot of this thread's counts; subtract two to get a phase's.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Copies {
        /// Read by `preadv2(RWF_NOWAIT)`: the kernel's copy from the page cache into the
        /// buffer that is sent.
        pub read_nowait_bytes: u64,
        /// Read through io_uring (a page-cache miss): the kernel's copy into glommio's buffer.
        pub read_uring_bytes: u64,
        /// Copied again in user space after a read (out of glommio's buffer).
        pub read_user_copy_bytes: u64,
        /// Copied in user space by an append (the request's batches into the write buffer).
        pub append_user_copy_bytes: u64,
        /// Written by `pwrite`: the kernel's copy into the page cache.
        pub write_bytes: u64,
        /// Answered as file regions (sent by `sendfile`, never copied into user space).
        pub region_bytes: u64,
        /// Copied in user space by a tail-cache read spanning appends whose pieces were too
        /// small to send as they are (joined into one buffer).
        pub tail_join_copy_bytes: u64,
        /// Brought into the page cache by `read_in` without being copied (a region's pages
        /// past the page-cache window).
        pub paged_in_bytes: u64,
        /// Batch headers read one by one from the page cache to find a read's first batch or
        /// a region's end (a `preadv2` of a header's 61 bytes each): a count, not bytes.
        pub header_reads: u64,
    }

    impl Copies {
        /// The counts added since `earlier` (a snapshot of the same thread).
        pub fn since(&self, earlier: &Copies) -> Copies {
            Copies {
                read_nowait_bytes: self.read_nowait_bytes - earlier.read_nowait_bytes,
                read_uring_bytes: self.read_uring_bytes - earlier.read_uring_bytes,
                read_user_copy_bytes: self.read_user_copy_bytes - earlier.read_user_copy_bytes,
                append_user_copy_bytes: self.append_user_copy_bytes
                    - earlier.append_user_copy_bytes,
                write_bytes: self.write_bytes - earlier.write_bytes,
                region_bytes: self.region_bytes - earlier.region_bytes,
                tail_join_copy_bytes: self.tail_join_copy_bytes - earlier.tail_join_copy_bytes,
                paged_in_bytes: self.paged_in_bytes - earlier.paged_in_bytes,
                header_reads: self.header_reads - earlier.header_reads,
            }
        }
    }

    thread_local! {
        static COPIES: Cell<Copies> = Cell::new(Copies::default());
    }

    /// This thread's counts.
    pub fn snapshot() -> Copies {
        COPIES.with(Cell::get)
    }

    fn add(f: impl FnOnce(&mut Copies)) {
        COPIES.with(|c| {
            let mut v = c.get();
            f(&mut v);
            c.set(v);
        });
    }

    pub(crate) fn add_nowait(n: usize) {
        add(|c| c.read_nowait_bytes += n as u64);
    }

    pub(crate) fn add_uring(n: usize) {
        add(|c| {
            c.read_uring_bytes += n as u64;
            c.read_user_copy_bytes += n as u64;
        });
    }

    /// A read through io_uring whose bytes are discarded (the pages are sent as a region).
    pub(crate) fn add_read_in(n: usize) {
        add(|c| c.read_uring_bytes += n as u64);
    }

    /// Bytes brought into the page cache without a copy (the pages are sent as a region).
    pub(crate) fn add_paged_in(n: usize) {
        add(|c| c.paged_in_bytes += n as u64);
    }

    pub(crate) fn add_write(n: usize) {
        add(|c| c.write_bytes += n as u64);
    }

    pub(crate) fn add_region(n: usize) {
        add(|c| c.region_bytes += n as u64);
    }

    pub(crate) fn add_tail_join_copy(n: usize) {
        add(|c| c.tail_join_copy_bytes += n as u64);
    }

    pub(crate) fn add_header_read() {
        add(|c| c.header_reads += 1);
    }

    pub(crate) fn add_append_copy(n: usize) {
        add(|c| c.append_user_copy_bytes += n as u64);
    }
}

/// Reads exactly `len` bytes at `pos`. Buffered reads of regular files only
/// come back short at end of file, which inside the log means the file is
/// shorter than its accounting: reported as an unexpected EOF.
pub(crate) async fn read_exact(
    file: &BufferedFile,
    path: &Path,
    pos: u64,
    len: usize,
) -> Result<Bytes, LogError> {
    let mut out = BytesMut::with_capacity(len);
    let got = read_nowait(file, path, &mut out, pos, len)?;
    copies::add_nowait(got);
    while out.len() < len {
        let more = read_uring(file, path, pos + out.len() as u64, len - out.len()).await?;
        copies::add_uring(more.len());
        out.extend_from_slice(&more);
    }
    Ok(out.freeze())
}

/// Brings `[pos, pos + len)` of `file` into the page cache without copying it anywhere, so
/// that the region can be sent with `sendfile` from the shard's thread, which never waits for
/// the disk. On a thread of the shard's blocking pool, `sendfile` of the range from `send_fd`
/// (the segment's own send descriptor, [`crate::segment::LogSegment::send_fd`]) to
/// `/dev/null` waits for the kernel's read-ahead to fill the pages (its pipe takes references
/// to them, `/dev/null` drops them). Read through io_uring instead, every byte was copied into
/// glommio's buffer and thrown away. A short read is an unexpected EOF, as in [`read_exact`].
/// Without a send descriptor (out of descriptors) or `/dev/null`, it falls back to io_uring.
pub(crate) async fn read_in(
    file: &BufferedFile,
    path: &Path,
    send_fd: Option<Arc<OwnedFd>>,
    pos: u64,
    len: usize,
) -> Result<(), LogError> {
    // A permit first: past glommio's own queue (4,096 jobs) a job waits to be queued, and a
    // fetch dropped in that wait would leave its entry in glommio's table for good.
    let permits = READ_IN_PERMITS.with(Rc::clone);
    let _permit = permits
        .acquire_permit(1)
        .await
        .map_err(|e| LogError::io(path, std::io::Error::other(e.to_string())))?;
    let (Some(null), Some(fd)) = (dev_null(), send_fd) else {
        return read_in_uring(file, path, pos, len).await;
    };
    // The job holds the descriptor: a fetch dropped while it waits leaves nothing dangling,
    // and a deleted segment's releaser waits for it as for a response still sending.
    glommio::executor()
        .spawn_blocking(move || page_in(null, &fd, pos, len))
        .await
        .map_err(|e| LogError::io(path, e))?;
    copies::add_paged_in(len);
    Ok(())
}

/// Page-ins a shard has queued on its blocking pool at most; more wait for a permit, in order.
/// Far below glommio's queue of 4,096, so a queued job is always taken at once.
const READ_IN_JOBS_MAX: u64 = 256;

thread_local! {
    /// This shard's permits for [`read_in`]'s jobs.
    static READ_IN_PERMITS: Rc<glommio::sync::Semaphore> =
        Rc::new(glommio::sync::Semaphore::new(READ_IN_JOBS_MAX));
}

/// `/dev/null` opened for writing once per process; `None` where it cannot be.
fn dev_null() -> Option<&'static std::fs::File> {
    static DEV_NULL: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    DEV_NULL
        .get_or_init(|| {
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .ok()
        })
        .as_ref()
}

/// Reads `[pos, pos + len)` of `fd` into the page cache and waits until it is there (see
/// [`read_in`]); blocks, so it runs off the shard's thread.
fn page_in(null: &std::fs::File, fd: &OwnedFd, pos: u64, len: usize) -> std::io::Result<()> {
    let end = pos + len as u64;
    let mut at = libc::off_t::try_from(pos).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    while (at as u64) < end {
        let count = (end - at as u64) as usize;
        // SAFETY: both descriptors are live; `at` is a local the kernel advances.
        let n = unsafe { libc::sendfile(null.as_raw_fd(), fd.as_raw_fd(), &mut at, count) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("at byte {at}"),
            ));
        }
    }
    Ok(())
}

/// [`read_in`] through io_uring: every byte copied into glommio's buffer and discarded.
async fn read_in_uring(
    file: &BufferedFile,
    path: &Path,
    pos: u64,
    len: usize,
) -> Result<(), LogError> {
    let end = pos + len as u64;
    let mut at = pos;
    while at < end {
        let got = read_uring(file, path, at, (end - at) as usize).await?;
        copies::add_read_in(got.len());
        at += got.len() as u64;
    }
    Ok(())
}

/// One io_uring read of up to `len` bytes at `at` (glommio's buffer). Buffered reads of
/// regular files only come back empty at end of file, which inside the log means the file is
/// shorter than its accounting: an unexpected EOF.
async fn read_uring(
    file: &BufferedFile,
    path: &Path,
    at: u64,
    len: usize,
) -> Result<glommio::io::ReadResult, LogError> {
    let got = file
        .read_at(at, len)
        .await
        .map_err(|e| LogError::io(path, e))?;
    if got.is_empty() {
        return Err(LogError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("at byte {at}")),
        ));
    }
    Ok(got)
}

/// Reads what the page cache holds of `[pos, pos + len)` into `out`'s spare capacity
/// without blocking: `preadv2(RWF_NOWAIT)` returns EAGAIN, or fewer bytes, where the
/// kernel would have to wait for the disk. Returns the bytes read.
fn read_nowait(
    file: &BufferedFile,
    path: &Path,
    out: &mut BytesMut,
    pos: u64,
    len: usize,
) -> Result<usize, LogError> {
    assert!(out.capacity() - out.len() >= len);
    while out.len() < len {
        let spare = out.spare_capacity_mut();
        let iov = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: len - out.len(),
        };
        let at = pos + out.len() as u64;
        let Ok(offset) = libc::off_t::try_from(at) else {
            return Err(LogError::io(path, std::io::ErrorKind::InvalidInput));
        };
        // SAFETY: `iov` points into `out`'s spare capacity, which holds `iov_len` bytes
        // (asserted above); the kernel writes at most that many, and `advance_mut` below
        // marks only the bytes it reported written as initialized.
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, offset, libc::RWF_NOWAIT) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                // EAGAIN: not in the page cache; EOPNOTSUPP: a file system without
                // RWF_NOWAIT. Both fall back to io_uring.
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Unsupported => break,
                _ => return Err(LogError::io(path, e)),
            }
        }
        if n == 0 {
            break;
        }
        // SAFETY: the kernel initialized `n` bytes of the spare capacity.
        unsafe { out.advance_mut(n as usize) };
    }
    Ok(out.len())
}

/// Whether every page of `[pos, pos + len)` of `file` is in the page cache now
/// (`cachestat(2)`, Linux 6.5+): `sendfile` of cached pages never waits for the disk, so it
/// can run on the shard's thread. `false` when a page is missing or the kernel has no
/// `cachestat`: the caller reads through [`read_exact`] instead.
pub(crate) fn is_cached(file: &BufferedFile, pos: u64, len: usize) -> bool {
    fd_is_cached(file.as_raw_fd(), pos, len)
}

/// [`is_cached`] of a descriptor.
pub(crate) fn fd_is_cached(fd: std::os::fd::RawFd, pos: u64, len: usize) -> bool {
    const PAGE_BYTES: u64 = 4096;
    if len == 0 {
        return false;
    }
    let pages = (pos + len as u64).div_ceil(PAGE_BYTES) - pos / PAGE_BYTES;
    cached_pages(fd, pos, len as u64).is_some_and(|cached| cached >= pages)
}

/// Pages of `[pos, pos + len)` of `fd` the page cache holds (`cachestat(2)`; `len` 0: to the
/// end of the file); `None` when the kernel has no `cachestat`.
pub(crate) fn cached_pages(fd: std::os::fd::RawFd, pos: u64, len: u64) -> Option<u64> {
    let range = CachestatRange { off: pos, len };
    let mut stat = Cachestat::default();
    // SAFETY: cachestat reads `range` and writes `stat`, both live locals of the kernel's
    // layout (`struct cachestat_range`, `struct cachestat`); flags must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd,
            &range as *const CachestatRange,
            &mut stat as *mut Cachestat,
            0u32,
        )
    };
    (rc == 0).then_some(stat.nr_cache)
}

/// `posix_fadvise(advice)` over the whole of `fd` (tests: drop a file's clean pages, turn the
/// kernel's read-ahead off for a descriptor).
#[cfg(test)]
pub(crate) fn advise_whole_file(
    fd: std::os::fd::RawFd,
    advice: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: posix_fadvise reads its integer arguments only.
    match unsafe { libc::posix_fadvise(fd, 0, 0, advice) } {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// A new descriptor of `file` (close-on-exec) for file regions to send from; `None` when the
/// process is out of descriptors, as a broker under its limit must still answer.
pub(crate) fn dup_fd(file: &BufferedFile, path: &Path) -> Result<Option<OwnedFd>, LogError> {
    // SAFETY: F_DUPFD_CLOEXEC only reads the descriptor number.
    let dup = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        let e = std::io::Error::last_os_error();
        if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
            return Ok(None);
        }
        return Err(LogError::io(path, e));
    }
    // SAFETY: `dup` is a fresh descriptor owned by nothing else.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(dup) }))
}

/// `cachestat(2)`'s number: 451 in the generic syscall table every Linux architecture shares.
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` (include/uapi/linux/mman.h).
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` (include/uapi/linux/mman.h).
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Reads `buf.len()` bytes at `pos` from the page cache only (`preadv2(RWF_NOWAIT)`), for
/// the batch headers of a region about to be sent: `false` if the page cache does not hold
/// them all (the caller then reads the ordinary way).
pub(crate) fn read_cached(
    file: &BufferedFile,
    path: &Path,
    buf: &mut [u8],
    pos: u64,
) -> Result<bool, LogError> {
    let Ok(offset) = libc::off_t::try_from(pos) else {
        return Err(LogError::io(path, std::io::ErrorKind::InvalidInput));
    };
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    copies::add_header_read();
    loop {
        // SAFETY: `iov` describes `buf`, which the kernel writes at most `buf.len()` bytes of.
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, offset, libc::RWF_NOWAIT) };
        if n >= 0 {
            return Ok(n as usize == buf.len());
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => continue,
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Unsupported => return Ok(false),
            _ => return Err(LogError::io(path, e)),
        }
    }
}

/// Writes all of `buf` at `pos` with `pwrite` on the shard's thread (see the module
/// comment for why not io_uring). A short write is continued; one that writes nothing
/// (full disk) is an error, which fails the log (no acknowledged data depends on it).
/// `async` so the callers keep the shape they have for the io_uring calls beside it.
pub(crate) async fn write_all(
    file: &BufferedFile,
    path: &Path,
    buf: impl AsRef<[u8]>,
    pos: u64,
) -> Result<(), LogError> {
    let buf = buf.as_ref();
    let mut done = 0usize;
    while done < buf.len() {
        let at = pos + done as u64;
        let Ok(offset) = libc::off_t::try_from(at) else {
            return Err(LogError::io(path, std::io::ErrorKind::InvalidInput));
        };
        let rest = &buf[done..];
        // SAFETY: `rest` is a live slice of `rest.len()` bytes; pwrite only reads it.
        let n = unsafe { libc::pwrite(file.as_raw_fd(), rest.as_ptr().cast(), rest.len(), offset) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(LogError::io(path, e));
        }
        if n == 0 {
            return Err(LogError::io(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!("short write of {done}/{} bytes at byte {pos}", buf.len()),
                ),
            ));
        }
        done += n as usize;
    }
    copies::add_write(buf.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use glommio::LocalExecutorBuilder;

    /// Runs `test` on an executor with a new file `data` in a directory of its own, named
    /// after `tag`; `test` hands the file back, and it is closed and the directory removed.
    fn with_new_file<F, Fut>(tag: &'static str, test: F)
    where
        F: FnOnce(std::path::PathBuf, std::path::PathBuf, BufferedFile) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = BufferedFile>,
    {
        LocalExecutorBuilder::default()
            .spawn(move || async move {
                let dir = std::env::temp_dir().join(format!("sluice-{tag}-{}", std::process::id()));
                std::fs::create_dir_all(&dir).expect("dir");
                let path = dir.join("data");
                let file = crate::segment::open_rw(&path, true).await.expect("create");
                let file = test(dir.clone(), path, file).await;
                file.close().await.expect("close");
                std::fs::remove_dir_all(&dir).expect("cleanup");
            })
            .expect("executor")
            .join()
            .expect("join");
    }

    /// A page-cache hit is read by `preadv2(RWF_NOWAIT)` alone; once the file's pages are
    /// evicted, the same read completes through io_uring, and both give the written bytes.
    #[test]
    fn reads_fall_back_to_io_uring_when_the_page_cache_misses() {
        with_new_file("file-io", |dir, path, file| async move {
            let data: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
            write_all(&file, &path, &data, 0).await.expect("write");

            let before = copies::snapshot();
            let hit = read_exact(&file, &path, 4096, 1 << 20).await.expect("read");
            assert_eq!(&hit[..], &data[4096..4096 + (1 << 20)]);
            let after_hit = copies::snapshot();
            assert_eq!(
                after_hit.read_nowait_bytes - before.read_nowait_bytes,
                1 << 20,
                "served from the page cache"
            );
            assert_eq!(
                after_hit.read_uring_bytes, before.read_uring_bytes,
                "no io_uring read for a hit"
            );

            file.fdatasync().await.expect("fdatasync");
            advise_whole_file(file.as_raw_fd(), libc::POSIX_FADV_DONTNEED).expect("advise");
            let miss = read_exact(&file, &path, 1 << 20, 2 << 20)
                .await
                .expect("read");
            assert_eq!(&miss[..], &data[1 << 20..]);
            let after_miss = copies::snapshot();
            // tmpfs keeps its pages whatever the advice: there, every read is a hit.
            if !on_tmpfs(&dir) {
                assert!(
                    after_miss.read_uring_bytes > after_hit.read_uring_bytes,
                    "the evicted range went through io_uring"
                );
            }
            assert_eq!(
                (after_miss.read_nowait_bytes - after_hit.read_nowait_bytes)
                    + (after_miss.read_uring_bytes - after_hit.read_uring_bytes),
                2 << 20,
                "every byte read once"
            );
            let short = read_exact(&file, &path, (3 << 20) - 10, 20).await;
            assert!(short.is_err(), "a read past the end is an error");
            file
        });
    }

    /// `read_in` brings an evicted range into the page cache on the blocking pool without a
    /// copy (nothing counted as read through io_uring), and a range past the end is an error.
    #[test]
    fn read_in_pages_a_range_in_without_copying_it() {
        with_new_file("read-in", |dir, path, file| async move {
            let data = vec![7u8; 3 << 20];
            write_all(&file, &path, &data, 0).await.expect("write");
            file.fdatasync().await.expect("fdatasync");
            advise_whole_file(file.as_raw_fd(), libc::POSIX_FADV_DONTNEED).expect("advise");
            if !on_tmpfs(&dir) {
                assert!(!is_cached(&file, 1 << 20, 1 << 20), "evicted");
            }
            let before = copies::snapshot();
            let send_fd = dup_fd(&file, &path).expect("dup").map(Arc::new);
            read_in(&file, &path, send_fd.clone(), 1 << 20, 1 << 20)
                .await
                .expect("read in");
            let counted = copies::snapshot().since(&before);
            assert!(is_cached(&file, 1 << 20, 1 << 20), "paged in");
            assert_eq!(counted.paged_in_bytes, 1 << 20);
            assert_eq!(counted.read_uring_bytes, 0, "no copy into a buffer");
            let past_end = read_in(&file, &path, send_fd, (3 << 20) - 10, 20).await;
            assert!(past_end.is_err(), "a range past the end is an error");
            file
        });
    }

    /// Twice as many page-ins as there are permits all complete, the ones past the permits
    /// waiting their turn; those dropped while they wait or run give theirs back.
    #[test]
    fn read_ins_past_their_permits_wait_and_every_permit_comes_back() {
        with_new_file("read-in-permits", |_dir, path, file| async move {
            write_all(&file, &path, &vec![1u8; 1 << 20], 0)
                .await
                .expect("write");
            let file = Rc::new(file);
            let send_fd = dup_fd(&file, &path).expect("dup").map(Arc::new);
            let available = || READ_IN_PERMITS.with(|p| p.available());
            let spawn = |i: u64| {
                let (file, path, fd) = (file.clone(), path.clone(), send_fd.clone());
                glommio::spawn_local(async move {
                    read_in(&file, &path, fd, (i % 256) * 4096, 4096).await
                })
            };
            let dropped: Vec<_> = (0..READ_IN_JOBS_MAX / 2).map(spawn).collect();
            let kept: Vec<_> = (0..2 * READ_IN_JOBS_MAX).map(spawn).collect();
            glommio::executor().yield_now().await;
            assert!(available() < READ_IN_JOBS_MAX, "page-ins hold permits");
            drop(dropped);
            for task in kept {
                task.await.expect("paged in");
            }
            assert_eq!(available(), READ_IN_JOBS_MAX, "every permit back");
            Rc::try_unwrap(file).expect("the only holder")
        });
    }

    fn on_tmpfs(dir: &Path) -> bool {
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: statfs writes into the zeroed struct we own; `c` is a valid C string.
        unsafe {
            let mut s: libc::statfs = std::mem::zeroed();
            libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type == libc::TMPFS_MAGIC
        }
    }
}
