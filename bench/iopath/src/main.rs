//! The log's disk paths alone, measured on this host: how much CPU (the process's, and the whole
//! machine's, which includes the kernel's writeback threads) a GiB costs when appended or read
//! through the page cache (io_uring buffered as Sluice does today, or plain `pwrite`/`pread` as
//! Kafka does) or with O_DIRECT from aligned buffers (glommio's DmaFile).
//!
//! One invocation runs one mode and prints one JSON line; `bench/iopath/run` runs every mode
//! several times, interleaved, and writes the table. Appends are unaligned (131,000 bytes by
//! default, like real record batches), so the O_DIRECT writer pays what a log pays: it rewrites
//! the partial last block of every append.
//!
//! `log-append` and `log-read` run the same loads through Sluice's own `sluice_log::Log` (each
//! file a partition directory, appends of 1 KiB-record v2 batches, tail cache off so reads come
//! from the files) and also report the bytes the log copied per byte appended or read, counted
//! by `sluice_log::io_copies`: user-space copies and the kernel's, so a change in either path
//! shows up as a number.
//!
//! `crc32c` and `crc32c-sse42` time the CRC-32C every produced batch is checked with, alone:
//! Sluice's (`sluice_protocol::crc`) against the `crc32c` crate's SSE4.2 loop it replaced, over
//! `--append-bytes` buffers; no files.

use std::cell::RefCell;
use std::error::Error;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::io::{BufferedFile, DmaFile};
use glommio::{LocalExecutorBuilder, Placement};
use sluice_log::{io_copies, Log, LogConfig, Records};
use sluice_protocol::record_batch::{RecordBatchBuilder, RecordBatches};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: sluice-iopath --dir DIR --mode MODE [--total-mib N] [--append-bytes N] [--files N] [--read-kib N] [--drop-caches]
modes: write-uring-buffered  write-pwrite  write-pwrite-nowait  write-direct
       read-uring-buffered  read-pread  read-pread-nowait  read-direct
       log-append  log-read   (through sluice_log::Log; --files is the partition count)
       log-append-window  (log-append with the shard's page-cache window, --window-mib N, 256)
       crc32c  crc32c-sse42  (the batch CRC alone over --append-bytes buffers, --total-mib in all)
A read mode reads the files the last write mode left in DIR.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    WriteUringBuffered,
    WritePwrite,
    WritePwriteNowait,
    WriteDirect,
    ReadUringBuffered,
    ReadPread,
    ReadPreadNowait,
    ReadDirect,
    LogAppend,
    LogAppendWindow,
    LogRead,
    LogSend,
    Crc32c,
    Crc32cSse42,
}

impl Mode {
    fn parse(name: &str) -> Option<Mode> {
        Some(match name {
            "write-uring-buffered" => Mode::WriteUringBuffered,
            "write-pwrite" => Mode::WritePwrite,
            "write-pwrite-nowait" => Mode::WritePwriteNowait,
            "write-direct" => Mode::WriteDirect,
            "read-uring-buffered" => Mode::ReadUringBuffered,
            "read-pread" => Mode::ReadPread,
            "read-pread-nowait" => Mode::ReadPreadNowait,
            "read-direct" => Mode::ReadDirect,
            "log-append" => Mode::LogAppend,
            "log-append-window" => Mode::LogAppendWindow,
            "log-read" => Mode::LogRead,
            "log-send" => Mode::LogSend,
            "crc32c" => Mode::Crc32c,
            "crc32c-sse42" => Mode::Crc32cSse42,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Mode::WriteUringBuffered => "write-uring-buffered",
            Mode::WritePwrite => "write-pwrite",
            Mode::WritePwriteNowait => "write-pwrite-nowait",
            Mode::WriteDirect => "write-direct",
            Mode::ReadUringBuffered => "read-uring-buffered",
            Mode::ReadPread => "read-pread",
            Mode::ReadPreadNowait => "read-pread-nowait",
            Mode::ReadDirect => "read-direct",
            Mode::LogAppend => "log-append",
            Mode::LogAppendWindow => "log-append-window",
            Mode::LogRead => "log-read",
            Mode::LogSend => "log-send",
            Mode::Crc32c => "crc32c",
            Mode::Crc32cSse42 => "crc32c-sse42",
        }
    }

    fn is_write(self) -> bool {
        matches!(
            self,
            Mode::WriteUringBuffered
                | Mode::WritePwrite
                | Mode::WritePwriteNowait
                | Mode::WriteDirect
                | Mode::LogAppend
                | Mode::LogAppendWindow
        )
    }
}

struct Args {
    dir: PathBuf,
    mode: Mode,
    total_bytes: u64,
    append_bytes: usize,
    files: usize,
    read_bytes: usize,
    drop_caches: bool,
    window_bytes: u64,
}

fn parse_args() -> Result<Args> {
    let mut dir = None;
    let mut mode = None;
    let mut total_mib: u64 = 2048;
    let mut append_bytes: usize = 131_000;
    let mut files: usize = 16;
    let mut read_kib: usize = 1024;
    let mut drop_caches = false;
    let mut window_mib: u64 = 256;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--mode" => {
                let name = value()?;
                mode = Some(Mode::parse(&name).ok_or(format!("unknown mode {name}\n{USAGE}"))?);
            }
            "--total-mib" => total_mib = value()?.parse()?,
            "--append-bytes" => append_bytes = value()?.parse()?,
            "--files" => files = value()?.parse()?,
            "--read-kib" => read_kib = value()?.parse()?,
            "--drop-caches" => drop_caches = true,
            "--window-mib" => window_mib = value()?.parse()?,
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg}\n{USAGE}").into()),
        }
    }
    let (Some(dir), Some(mode)) = (dir, mode) else {
        return Err(USAGE.into());
    };
    if files == 0 || append_bytes == 0 || read_kib == 0 {
        return Err("--files, --append-bytes and --read-kib must be positive".into());
    }
    Ok(Args {
        dir,
        mode,
        total_bytes: total_mib * 1024 * 1024,
        append_bytes,
        files,
        read_bytes: read_kib * 1024,
        drop_caches,
        window_bytes: window_mib << 20,
    })
}

/// CPU seconds of this process (every thread, io_uring's io-wq workers included) and of the
/// whole machine (busy time of every CPU: includes the kernel's writeback and interrupt work).
#[derive(Clone, Copy)]
struct CpuSample {
    process_s: f64,
    machine_busy_s: f64,
}

fn cpu_sample() -> Result<CpuSample> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage the call may fill.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let process_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().ok_or("empty /proc/stat")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse::<u64>())
        .collect::<std::result::Result<_, _>>()?;
    // user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    // USER_HZ is 100 on every Linux ABI.
    let machine_busy_s = (total - idle) as f64 / 100.0;
    Ok(CpuSample {
        process_s,
        machine_busy_s,
    })
}

fn file_path(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("{index:08}.log"))
}

/// The bytes every append writes: a fixed pattern (content does not matter to the kernel).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 % 251) as u8).collect()
}

#[derive(Default)]
struct Tally {
    /// Bytes handed to the kernel (O_DIRECT: whole blocks, the rewritten partial one included).
    device_bytes: u64,
    /// Per-operation latency, microseconds.
    latencies_us: Vec<u32>,
    /// `RWF_NOWAIT` operations the kernel refused because they would block (then done plainly).
    would_block_ops: u64,
    /// What `sluice_log` counted (the log modes only).
    copies: io_copies::Copies,
}

async fn write_uring_buffered(path: PathBuf, bytes: u64, src: Rc<Vec<u8>>) -> Result<Tally> {
    let file = BufferedFile::create(&path).await?;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < bytes {
        let started = Instant::now();
        // What Sluice's Log::append does today: glommio's write_at takes an owned Vec.
        let written = file.write_at(src.to_vec(), pos).await?;
        if written != src.len() {
            return Err(format!("short write {written} of {}", src.len()).into());
        }
        tally.latencies_us.push(elapsed_us(started));
        pos += written as u64;
        tally.device_bytes += written as u64;
    }
    file.close().await?;
    Ok(tally)
}

fn write_pwrite(path: PathBuf, bytes: u64, src: &[u8]) -> Result<Tally> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < bytes {
        let started = Instant::now();
        file.write_all_at(src, pos)?;
        tally.latencies_us.push(elapsed_us(started));
        pos += src.len() as u64;
        tally.device_bytes += src.len() as u64;
    }
    Ok(tally)
}

/// `pwritev2(RWF_NOWAIT)`: what a shard could do on its own thread without ever blocking it,
/// falling back (here: to a plain pwrite; in a broker: to io_uring) when the kernel says it would.
fn write_pwrite_nowait(path: PathBuf, bytes: u64, src: &[u8]) -> Result<Tally> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < bytes {
        let started = Instant::now();
        let mut done = 0usize;
        while done < src.len() {
            match rw_nowait(&file, RwOp::Write(&src[done..]), pos + done as u64) {
                Ok(n) => done += n,
                Err(e) if would_block(&e) => {
                    tally.would_block_ops += 1;
                    file.write_all_at(&src[done..], pos + done as u64)?;
                    done = src.len();
                }
                Err(e) => return Err(e.into()),
            }
        }
        tally.latencies_us.push(elapsed_us(started));
        pos += src.len() as u64;
        tally.device_bytes += src.len() as u64;
    }
    Ok(tally)
}

enum RwOp<'a> {
    Write(&'a [u8]),
    Read(&'a mut [u8]),
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN) | Some(libc::EOPNOTSUPP)
    )
}

fn rw_nowait(file: &std::fs::File, op: RwOp<'_>, pos: u64) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    let offset = pos as libc::off_t;
    // SAFETY: the iovec points into a live slice of the stated length for the whole call.
    let n = unsafe {
        match op {
            RwOp::Write(buf) => {
                let iov = libc::iovec {
                    iov_base: buf.as_ptr() as *mut libc::c_void,
                    iov_len: buf.len(),
                };
                libc::pwritev2(fd, &iov, 1, offset, libc::RWF_NOWAIT)
            }
            RwOp::Read(buf) => {
                let iov = libc::iovec {
                    iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                    iov_len: buf.len(),
                };
                libc::preadv2(fd, &iov, 1, offset, libc::RWF_NOWAIT)
            }
        }
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Appends as a log on O_DIRECT must: every write starts at the block holding the previous
/// append's end, so the partial last block is written again with the new bytes after it.
async fn write_direct(path: PathBuf, bytes: u64, src: Rc<Vec<u8>>) -> Result<Tally> {
    let file = DmaFile::create(&path).await?;
    let align = file.alignment() as usize;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    let mut tail: Vec<u8> = Vec::with_capacity(align);
    while pos < bytes {
        let started = Instant::now();
        let start = pos - tail.len() as u64;
        let len = tail.len() + src.len();
        let aligned_len = len.div_ceil(align) * align;
        let mut buf = file.alloc_dma_buffer(aligned_len);
        let out = buf.as_bytes_mut();
        out[..tail.len()].copy_from_slice(&tail);
        out[tail.len()..len].copy_from_slice(&src);
        out[len..].fill(0);
        let written = file.write_at(buf, start).await?;
        if written != aligned_len {
            return Err(format!("short direct write {written} of {aligned_len}").into());
        }
        tally.latencies_us.push(elapsed_us(started));
        tally.device_bytes += aligned_len as u64;
        pos += src.len() as u64;
        let keep = (pos % align as u64) as usize;
        tail.clear();
        tail.extend_from_slice(&src[src.len() - keep.min(src.len())..]);
        assert_eq!(tail.len(), keep, "appends are longer than a block");
    }
    // The padding past the last append is not data.
    file.truncate(pos).await?;
    file.close().await?;
    Ok(tally)
}

async fn read_uring_buffered(path: PathBuf, chunk: usize) -> Result<Tally> {
    let file = BufferedFile::open(&path).await?;
    let size = file.file_size().await?;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < size {
        let started = Instant::now();
        let read = file.read_at(pos, chunk).await?;
        // What Sluice's Log::read does today: the bytes are copied out of glommio's buffer.
        let owned = read.to_vec();
        tally.latencies_us.push(elapsed_us(started));
        if owned.is_empty() {
            break;
        }
        pos += owned.len() as u64;
        tally.device_bytes += owned.len() as u64;
    }
    file.close().await?;
    Ok(tally)
}

fn read_pread(path: PathBuf, chunk: usize) -> Result<Tally> {
    let file = std::fs::File::open(&path)?;
    let size = file.metadata()?.len();
    let mut buf = vec![0u8; chunk];
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < size {
        let started = Instant::now();
        let read = file.read_at(&mut buf, pos)?;
        tally.latencies_us.push(elapsed_us(started));
        if read == 0 {
            break;
        }
        pos += read as u64;
        tally.device_bytes += read as u64;
    }
    Ok(tally)
}

/// `preadv2(RWF_NOWAIT)`: served from the page cache without blocking, or refused (then read
/// plainly here; in a broker, through io_uring).
fn read_pread_nowait(path: PathBuf, chunk: usize) -> Result<Tally> {
    let file = std::fs::File::open(&path)?;
    let size = file.metadata()?.len();
    let mut buf = vec![0u8; chunk];
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < size {
        let started = Instant::now();
        let read = match rw_nowait(&file, RwOp::Read(&mut buf), pos) {
            Ok(n) => n,
            Err(e) if would_block(&e) => {
                tally.would_block_ops += 1;
                file.read_at(&mut buf, pos)?
            }
            Err(e) => return Err(e.into()),
        };
        tally.latencies_us.push(elapsed_us(started));
        if read == 0 {
            break;
        }
        pos += read as u64;
        tally.device_bytes += read as u64;
    }
    Ok(tally)
}

async fn read_direct(path: PathBuf, chunk: usize) -> Result<Tally> {
    let file = DmaFile::open(&path).await?;
    let size = file.file_size().await?;
    let mut tally = Tally::default();
    let mut pos = 0u64;
    while pos < size {
        let started = Instant::now();
        let read = file.read_at_aligned(pos, chunk).await?;
        tally.latencies_us.push(elapsed_us(started));
        if read.is_empty() {
            break;
        }
        pos += read.len() as u64;
        tally.device_bytes += read.len() as u64;
    }
    file.close().await?;
    Ok(tally)
}

/// The record size of the log modes' batches, as the bench's producers send.
const LOG_RECORD_BYTES: usize = 1024;

fn log_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 30,
        tail_cache_bytes: 0,
        ..LogConfig::default()
    }
}

/// Appends batches of 1 KiB records, about `append_bytes` each, to a fresh log until it holds
/// `bytes`; the latency is one `Log::append` (written to the page cache).
async fn log_append(dir: PathBuf, bytes: u64, append_bytes: usize) -> Result<Tally> {
    let _ = std::fs::remove_dir_all(&dir);
    let log = Log::open(dir, log_config()).await?;
    let records = (append_bytes / (LOG_RECORD_BYTES + 20)).max(1);
    let batch = RecordBatchBuilder::new(0)
        .records(records, &pattern(LOG_RECORD_BYTES))
        .build();
    let mut tally = Tally::default();
    let mut written = 0u64;
    while written < bytes {
        let started = Instant::now();
        let info = log.append(&batch).await?;
        tally.latencies_us.push(elapsed_us(started));
        written += info.bytes as u64;
    }
    tally.device_bytes = written;
    log.close().await?;
    Ok(tally)
}

/// Reads the log `log-append` left, front to back, `chunk` bytes per `Log::read`.
async fn log_read(dir: PathBuf, chunk: usize) -> Result<Tally> {
    let log = Log::open(dir, log_config()).await?;
    let mut tally = Tally::default();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let started = Instant::now();
        let data = log.read(offset, chunk, true, None).await?;
        tally.latencies_us.push(elapsed_us(started));
        let Some(last) = RecordBatches::new(data.records.clone()).last() else {
            return Err(format!("no batch at offset {offset}").into());
        };
        offset = last?.0.last_offset() + 1;
        tally.device_bytes += data.records.len() as u64;
    }
    log.close().await?;
    Ok(tally)
}

/// Reads the log as the Fetch handler does (`Log::read_for_send`): what the page cache holds
/// comes back as file regions, which a broker sends with `sendfile` and this bench does not
/// send at all (the next offset comes from the region's batch headers, read here uncounted).
async fn log_send(dir: PathBuf, chunk: usize) -> Result<Tally> {
    let log = Log::open(dir, log_config()).await?;
    let mut tally = Tally::default();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let started = Instant::now();
        let records = log.read_for_send(offset, chunk, true, None).await?;
        tally.latencies_us.push(elapsed_us(started));
        let last = match &records {
            Records::Memory(bytes) => match RecordBatches::new(bytes.clone()).last() {
                Some(batch) => batch?.0.last_offset(),
                None => return Err(format!("no batch at offset {offset}").into()),
            },
            Records::File(region) => last_offset_in(region)?,
            // The tail cache's pieces (a log reopened here has none cached; kept for the type).
            Records::Pieces(pieces) => match pieces
                .last()
                .and_then(|p| RecordBatches::new(p.clone()).last())
            {
                Some(batch) => batch?.0.last_offset(),
                None => return Err(format!("no batch at offset {offset}").into()),
            },
        };
        offset = last + 1;
        tally.device_bytes += records.len() as u64;
    }
    log.close().await?;
    Ok(tally)
}

/// The last offset of the batches in `region`, from their headers.
fn last_offset_in(region: &sluice_protocol::FileRegion) -> Result<i64> {
    let file = std::fs::File::from(region.fd().try_clone_to_owned()?);
    let mut at = region.position();
    let end = at + region.len() as u64;
    let mut header = [0u8; sluice_protocol::RECORD_BATCH_OVERHEAD];
    let mut last = None;
    while at < end {
        file.read_exact_at(&mut header, at)?;
        let h = sluice_protocol::parse_header(&header)?;
        last = Some(h.last_offset());
        at += u64::try_from(h.batch_length)? + 12;
    }
    last.ok_or_else(|| "an empty region".into())
}

fn elapsed_us(since: Instant) -> u32 {
    since.elapsed().as_micros().min(u32::MAX as u128) as u32
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Runs the mode on one executor (pinned to CPU 0, as a shard is), one task per file.
fn run(args: &Args) -> Result<Tally> {
    let mode = args.mode;
    let dir = args.dir.clone();
    let files = args.files;
    let per_file = args.total_bytes / files as u64;
    let append_bytes = args.append_bytes;
    let read_bytes = args.read_bytes;
    let window_bytes = match mode {
        Mode::LogAppendWindow => args.window_bytes,
        _ => 0,
    };
    let handle = LocalExecutorBuilder::new(Placement::Fixed(0))
        .name("iopath")
        .spawn(move || async move {
            sluice_log::page_cache::set_window_bytes(window_bytes);
            let copies_before = io_copies::snapshot();
            let src = Rc::new(pattern(append_bytes));
            let total = Rc::new(RefCell::new(Tally::default()));
            let mut tasks = Vec::with_capacity(files);
            for index in 0..files {
                let path = file_path(&dir, index);
                let src = src.clone();
                let total = total.clone();
                tasks.push(glommio::spawn_local(async move {
                    let tally = match mode {
                        Mode::WriteUringBuffered => write_uring_buffered(path, per_file, src).await,
                        Mode::WritePwrite => write_pwrite(path, per_file, &src),
                        Mode::WritePwriteNowait => write_pwrite_nowait(path, per_file, &src),
                        Mode::WriteDirect => write_direct(path, per_file, src).await,
                        Mode::ReadUringBuffered => read_uring_buffered(path, read_bytes).await,
                        Mode::ReadPread => read_pread(path, read_bytes),
                        Mode::ReadPreadNowait => read_pread_nowait(path, read_bytes),
                        Mode::ReadDirect => read_direct(path, read_bytes).await,
                        Mode::LogAppend | Mode::LogAppendWindow => {
                            log_append(path, per_file, append_bytes).await
                        }
                        Mode::LogRead => log_read(path, read_bytes).await,
                        Mode::LogSend => log_send(path, read_bytes).await,
                        // `main` runs these without files (`checksum_run`).
                        Mode::Crc32c | Mode::Crc32cSse42 => Ok(Tally::default()),
                    }
                    .map_err(|e| e.to_string())?;
                    let mut total = total.borrow_mut();
                    total.device_bytes += tally.device_bytes;
                    total.latencies_us.extend(tally.latencies_us);
                    total.would_block_ops += tally.would_block_ops;
                    Ok::<(), String>(())
                }));
            }
            for task in tasks {
                task.await?;
            }
            let mut tally = std::mem::take(&mut *total.borrow_mut());
            tally.copies = io_copies::snapshot().since(&copies_before);
            Ok::<Tally, String>(tally)
        })?;
    let tally = handle
        .join()
        .map_err(|e| format!("executor: {e}"))?
        .map_err(|e| -> Box<dyn Error> { e.into() })?;
    Ok(tally)
}

fn logical_bytes(args: &Args) -> Result<u64> {
    let mut sum = 0;
    for index in 0..args.files {
        for path in data_files(args, index)? {
            sum += std::fs::metadata(path)?.len();
        }
    }
    Ok(sum)
}

/// The files holding file `index`'s data: itself, or a log directory's segments.
fn data_files(args: &Args, index: usize) -> Result<Vec<PathBuf>> {
    let path = file_path(&args.dir, index);
    if !matches!(
        args.mode,
        Mode::LogAppend | Mode::LogAppendWindow | Mode::LogRead | Mode::LogSend
    ) {
        return Ok(vec![path]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&path)? {
        let entry = entry?.path();
        if entry.extension().is_some_and(|e| e == "log") {
            out.push(entry);
        }
    }
    Ok(out)
}

/// Writeback of what the page cache still holds, so buffered modes pay for it here.
fn sync_files(args: &Args) -> Result<()> {
    for index in 0..args.files {
        for path in data_files(args, index)? {
            std::fs::File::open(path)?.sync_data()?;
        }
    }
    Ok(())
}

fn drop_caches() -> Result<()> {
    // SAFETY: sync(2) has no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .map_err(|e| format!("--drop-caches needs root: {e}"))?;
    Ok(())
}

/// Checksums `--total-mib` of `--append-bytes` buffers with the mode's CRC-32C and prints its
/// rate and CPU per GiB; the two implementations must agree on the buffer first.
fn checksum_run(args: &Args) -> Result<()> {
    let buf: Vec<u8> = (0..args.append_bytes as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    if sluice_protocol::crc::crc32c(&buf) != crc32c::crc32c(&buf) {
        return Err("the two CRC-32C implementations disagree".into());
    }
    let crc: fn(&[u8]) -> u32 = match args.mode {
        Mode::Crc32c => sluice_protocol::crc::crc32c,
        _ => crc32c::crc32c,
    };
    let rounds = (args.total_bytes / buf.len().max(1) as u64).max(1);
    let before = cpu_sample()?;
    let started = Instant::now();
    let mut fold = 0u32;
    for _ in 0..rounds {
        fold ^= crc(std::hint::black_box(&buf));
    }
    let phase_s = started.elapsed().as_secs_f64();
    let after = cpu_sample()?;
    let bytes = rounds * buf.len() as u64;
    let gib = bytes as f64 / (1u64 << 30) as f64;
    println!(
        "{{\"mode\":\"{}\",\"append_bytes\":{},\"bytes\":{},\"phase_s\":{:.3},\"mb_per_s\":{:.1},\
\"process_cpu_s_per_gib\":{:.4},\"fold\":{}}}",
        args.mode.name(),
        args.append_bytes,
        bytes,
        phase_s,
        bytes as f64 / phase_s / 1e6,
        (after.process_s - before.process_s) / gib,
        fold,
    );
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    if matches!(args.mode, Mode::Crc32c | Mode::Crc32cSse42) {
        return checksum_run(&args);
    }
    std::fs::create_dir_all(&args.dir)?;
    if args.drop_caches {
        drop_caches()?;
    }
    let before = cpu_sample()?;
    let started = Instant::now();
    let mut tally = run(&args)?;
    let phase_s = started.elapsed().as_secs_f64();
    let after_phase = cpu_sample()?;
    // Writes: make them durable and let writeback finish, and measure that as a second figure.
    let sync_started = Instant::now();
    if args.mode.is_write() {
        sync_files(&args)?;
        std::thread::sleep(Duration::from_millis(200));
    }
    let sync_s = sync_started.elapsed().as_secs_f64();
    let after_sync = cpu_sample()?;
    let bytes = logical_bytes(&args)?;
    let gib = bytes as f64 / (1u64 << 30) as f64;
    tally.latencies_us.sort_unstable();
    let c = tally.copies;
    println!(
        "{{\"mode\":\"{}\",\"files\":{},\"append_bytes\":{},\"read_bytes\":{},\"drop_caches\":{},\
\"bytes\":{},\"device_bytes\":{},\"phase_s\":{:.3},\"mb_per_s\":{:.1},\
\"process_cpu_s_per_gib\":{:.3},\"machine_cpu_s_per_gib\":{:.3},\
\"sync_s\":{:.3},\"process_cpu_s_per_gib_with_sync\":{:.3},\"machine_cpu_s_per_gib_with_sync\":{:.3},\
\"op_p50_us\":{},\"op_p99_us\":{},\"op_max_us\":{},\"ops\":{},\"would_block_ops\":{},\
\"user_copies_per_byte\":{:.3},\"kernel_copies_per_byte\":{:.3},\"uring_read_fraction\":{:.3},\
\"region_fraction\":{:.3}}}",
        args.mode.name(),
        args.files,
        args.append_bytes,
        args.read_bytes,
        args.drop_caches,
        bytes,
        tally.device_bytes,
        phase_s,
        bytes as f64 / phase_s / 1e6,
        (after_phase.process_s - before.process_s) / gib,
        (after_phase.machine_busy_s - before.machine_busy_s) / gib,
        sync_s,
        (after_sync.process_s - before.process_s) / gib,
        (after_sync.machine_busy_s - before.machine_busy_s) / gib,
        percentile(&tally.latencies_us, 0.50),
        percentile(&tally.latencies_us, 0.99),
        percentile(&tally.latencies_us, 1.0),
        tally.latencies_us.len(),
        tally.would_block_ops,
        (c.append_user_copy_bytes + c.read_user_copy_bytes + c.tail_join_copy_bytes) as f64 / bytes.max(1) as f64,
        (c.write_bytes + c.read_nowait_bytes + c.read_uring_bytes) as f64 / bytes.max(1) as f64,
        c.read_uring_bytes as f64 / (c.read_nowait_bytes + c.read_uring_bytes).max(1) as f64,
        c.region_bytes as f64 / bytes.max(1) as f64,
    );
    Ok(())
}
