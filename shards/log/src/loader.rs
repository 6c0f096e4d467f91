//! `LogLoader`: opens a partition directory and recovers its segments.
//!
//! Recovery rules (Kafka's, minus the checkpoint files a later issue adds):
//! every batch after the recovery point is checked for framing (length,
//! magic, offsets following on from the previous batch) and CRC; the first
//! batch that fails, and everything after it, is truncated away. Without a
//! recovery-point checkpoint the recovery point is the log start after an
//! unclean shutdown, and the log end after a clean one (marker present), in
//! which case only framing is checked — the scan is still needed to rebuild
//! the in-memory index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::io::{BufferedFile, Directory};
use tracing::{info, warn};

use crate::batch::{check_crc, parse_header, BatchError, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::index::OffsetIndex;
use crate::segment::{open_rw, parse_segment_file_name, LogSegment};

/// Name of the marker `Log::close` leaves: its content is the log end offset
/// at close, so a mismatch on open falls back to full recovery.
pub(crate) const CLEAN_SHUTDOWN_FILE: &str = ".clean_shutdown";

/// Bytes read per I/O while scanning a segment.
const RECOVERY_READ_BYTES: usize = 1 << 20;

/// What a loaded log starts from.
pub(crate) struct LoadedLog {
    pub segments: BTreeMap<i64, Rc<LogSegment>>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

pub(crate) struct LogLoader<'a> {
    dir: &'a Path,
    config: &'a LogConfig,
}

/// Where the scan of one segment stopped.
struct SegmentScan {
    valid_bytes: u64,
    next_offset: i64,
    index: OffsetIndex,
    /// Why the bytes after `valid_bytes` were rejected, if any remain.
    problem: Option<BatchError>,
}

impl<'a> LogLoader<'a> {
    pub fn new(dir: &'a Path, config: &'a LogConfig) -> Self {
        Self { dir, config }
    }

    pub async fn load(&self) -> Result<LoadedLog, LogError> {
        self.create_dir().await?;
        let (bases, marker) = self.list_dir().await?;
        let clean_end = match marker {
            Some(p) => self.read_marker(&p).await,
            None => None,
        };
        let mut loaded = self.load_segments(&bases, clean_end.is_none()).await?;
        if let Some(end) = clean_end {
            if end != loaded.log_end_offset {
                warn!(dir = %self.dir.display(), marker = end, found = loaded.log_end_offset,
                    "clean shutdown marker disagrees with the log; running full recovery");
                let bases: Vec<i64> = loaded.segments.keys().copied().collect();
                loaded = self.load_segments(&bases, true).await?;
            }
            self.remove_marker().await?;
        }
        if loaded.segments.is_empty() {
            let seg = self.new_segment(0).await?;
            loaded.segments.insert(0, Rc::new(seg));
            // A new log: make its directory and first segment durable names.
            sync_dir(self.dir).await?;
            if let Some(parent) = self.dir.parent() {
                sync_dir(parent).await?;
            }
        }
        Ok(loaded)
    }

    async fn create_dir(&self) -> Result<(), LogError> {
        let dir = self.dir.to_path_buf();
        // Directory creation is not file I/O and glommio's mkdir is not
        // recursive; run it on glommio's blocking pool, off the reactor.
        glommio::executor()
            .spawn_blocking(move || std::fs::create_dir_all(dir))
            .await
            .map_err(|e| LogError::io(self.dir, e))
    }

    /// Segment base offsets (sorted) and the clean shutdown marker, if any.
    async fn list_dir(&self) -> Result<(Vec<i64>, Option<PathBuf>), LogError> {
        let dir = self.dir.to_path_buf();
        let names = glommio::executor()
            .spawn_blocking(move || -> std::io::Result<Vec<String>> {
                std::fs::read_dir(dir)?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .await
            .map_err(|e| LogError::io(self.dir, e))?;
        let mut bases = Vec::new();
        let mut marker = None;
        for name in names {
            if name == CLEAN_SHUTDOWN_FILE {
                marker = Some(self.dir.join(&name));
            } else if let Some(base) = parse_segment_file_name(&name) {
                bases.push(base);
            } else if name.ends_with(".log") {
                warn!(dir = %self.dir.display(), file = %name, "ignoring badly named segment file");
            }
        }
        bases.sort_unstable();
        Ok((bases, marker))
    }

    async fn read_marker(&self, path: &Path) -> Option<i64> {
        let file = BufferedFile::open(path).await.ok()?;
        let data = file.read_at(0, 32).await.ok()?;
        std::str::from_utf8(&data).ok()?.trim().parse().ok()
    }

    /// Removes the marker durably before the log takes appends, so that a
    /// crash later cannot be mistaken for a clean shutdown.
    async fn remove_marker(&self) -> Result<(), LogError> {
        let path = self.dir.join(CLEAN_SHUTDOWN_FILE);
        glommio::io::remove(&path)
            .await
            .map_err(|e| LogError::io(&path, e))?;
        sync_dir(self.dir).await
    }

    async fn new_segment(&self, base_offset: i64) -> Result<LogSegment, LogError> {
        let path = self
            .dir
            .join(crate::segment::segment_file_name(base_offset));
        let file = open_rw(&path, true).await?;
        Ok(LogSegment::with_file(base_offset, path, file, 0))
    }

    /// Opens and scans the segments in order, truncating at the first bad
    /// batch and deleting every segment after it.
    async fn load_segments(&self, bases: &[i64], check_crc: bool) -> Result<LoadedLog, LogError> {
        let mut segments = BTreeMap::new();
        let start = bases.first().copied().unwrap_or(0);
        let mut next_offset = start;
        let mut cut_bytes = 0u64;
        let mut reason = None;
        for (i, &base) in bases.iter().enumerate() {
            let path = self.dir.join(crate::segment::segment_file_name(base));
            let file = open_rw(&path, false).await?;
            let size = file.file_size().await.map_err(|e| LogError::io(&path, e))?;
            if base != next_offset {
                // A segment must start where the previous one ended; one that
                // does not is the start of damage. Drop it and what follows.
                cut_bytes += self.delete_segments(&bases[i..]).await?;
                reason = Some(format!(
                    "segment {base} does not start at offset {next_offset}"
                ));
                break;
            }
            let scan = self
                .scan_segment(&file, &path, base, size, check_crc)
                .await?;
            next_offset = scan.next_offset;
            let valid = scan.valid_bytes;
            let mut seg = LogSegment::with_file(base, path.clone(), file, valid);
            seg.index = std::cell::RefCell::new(scan.index);
            segments.insert(base, Rc::new(seg));
            if valid < size {
                truncate(&segments[&base], &path, valid).await?;
                cut_bytes += size - valid;
                cut_bytes += self.delete_segments(&bases[i + 1..]).await?;
                reason = scan
                    .problem
                    .map(|p| format!("{p} at byte {valid} of {}", path.display()));
                break;
            }
        }
        if cut_bytes > 0 {
            warn!(dir = %self.dir.display(), cut_bytes, log_end_offset = next_offset,
                reason = reason.as_deref().unwrap_or("unknown"),
                "truncated torn or corrupt log tail during recovery");
        } else if !bases.is_empty() {
            info!(dir = %self.dir.display(), log_end_offset = next_offset, check_crc, "log loaded");
        }
        Ok(LoadedLog {
            segments,
            log_start_offset: start,
            log_end_offset: next_offset,
        })
    }

    /// Deletes whole segments (they follow damage); returns their bytes.
    async fn delete_segments(&self, bases: &[i64]) -> Result<u64, LogError> {
        let mut bytes = 0;
        for &base in bases {
            let path = self.dir.join(crate::segment::segment_file_name(base));
            let file = open_rw(&path, false).await?;
            bytes += file.file_size().await.map_err(|e| LogError::io(&path, e))?;
            file.remove().await.map_err(|e| LogError::io(&path, e))?;
        }
        Ok(bytes)
    }

    /// Scans a segment from its start, checking every batch, building the
    /// index. Stops at the first batch that is torn or invalid.
    async fn scan_segment(
        &self,
        file: &BufferedFile,
        path: &Path,
        base: i64,
        size: u64,
        check_crc: bool,
    ) -> Result<SegmentScan, LogError> {
        let mut scan = SegmentScan {
            valid_bytes: 0,
            next_offset: base,
            index: OffsetIndex::default(),
            problem: None,
        };
        let mut want = RECOVERY_READ_BYTES;
        while scan.valid_bytes < size {
            let len = want.min((size - scan.valid_bytes) as usize);
            let chunk = read_exact(file, path, scan.valid_bytes, len).await?;
            let at_file_end = scan.valid_bytes + len as u64 == size;
            match self.scan_chunk(&chunk, at_file_end, check_crc, base, &mut scan) {
                ChunkEnd::Done => return Ok(scan),
                ChunkEnd::NeedMore(n) => want = n.max(RECOVERY_READ_BYTES),
            }
        }
        Ok(scan)
    }

    /// Accepts the whole valid batches at the start of `chunk` (read at
    /// `scan.valid_bytes`).
    fn scan_chunk(
        &self,
        chunk: &[u8],
        at_file_end: bool,
        check_crc: bool,
        base: i64,
        scan: &mut SegmentScan,
    ) -> ChunkEnd {
        let mut off = 0usize;
        loop {
            let rest = &chunk[off..];
            if rest.is_empty() {
                return ChunkEnd::NeedMore(0);
            }
            // A batch is never shorter than its header: read on for it.
            if rest.len() < RECORD_BATCH_OVERHEAD && !at_file_end {
                return ChunkEnd::NeedMore(0);
            }
            let header = match validate(rest, at_file_end, check_crc, scan, base) {
                Ok(Some(h)) => h,
                Ok(None) if off == 0 => return ChunkEnd::NeedMore(needed(rest)),
                Ok(None) => return ChunkEnd::NeedMore(0),
                Err(e) => {
                    scan.problem = Some(e);
                    return ChunkEnd::Done;
                }
            };
            let position = scan.valid_bytes as u32;
            let relative = (header.last_offset() - base) as u32;
            scan.index.on_batch(
                relative,
                position,
                header.size as u64,
                self.config.index_interval_bytes,
            );
            scan.valid_bytes += header.size as u64;
            scan.next_offset = header.last_offset() + 1;
            off += header.size;
        }
    }
}

enum ChunkEnd {
    /// Stopped at a bad batch (recorded in the scan).
    Done,
    /// Read on from `valid_bytes`, at least this many bytes (0: default).
    NeedMore(usize),
}

/// Bytes the batch starting `rest` occupies (it did not fit the chunk).
fn needed(rest: &[u8]) -> usize {
    parse_header(rest).map(|h| h.size).unwrap_or(0)
}

/// Checks the batch at the start of `rest`: `Ok(None)` if it continues past
/// the chunk (read more), `Err` if it is torn or invalid.
fn validate(
    rest: &[u8],
    at_file_end: bool,
    verify_crc: bool,
    scan: &SegmentScan,
    base: i64,
) -> Result<Option<BatchHeader>, BatchError> {
    let header = parse_header(rest)?;
    if header.size > rest.len() {
        return if at_file_end {
            Err(BatchError::Truncated)
        } else {
            Ok(None)
        };
    }
    if header.base_offset != scan.next_offset {
        return Err(BatchError::BadOffset(header.base_offset));
    }
    // Positions and relative offsets are u32 in the index, as in Kafka.
    let fits = scan.valid_bytes + header.size as u64 <= u32::MAX as u64
        && header.last_offset() - base <= i32::MAX as i64;
    if !fits {
        return Err(BatchError::BadOffset(header.base_offset));
    }
    if verify_crc {
        check_crc(&rest[..header.size])?;
    }
    Ok(Some(header))
}

async fn truncate(seg: &LogSegment, path: &Path, len: u64) -> Result<(), LogError> {
    let file = seg.file().await?;
    file.truncate(len)
        .await
        .map_err(|e| LogError::io(path, e))?;
    file.fdatasync().await.map_err(|e| LogError::io(path, e))
}

/// fsyncs a directory so that file creations and removals in it are durable.
pub(crate) async fn sync_dir(dir: &Path) -> Result<(), LogError> {
    let d = Directory::open(dir)
        .await
        .map_err(|e| LogError::io(dir, e))?;
    d.sync().await.map_err(|e| LogError::io(dir, e))?;
    d.close().await.map_err(|e| LogError::io(dir, e))
}

/// Writes the clean shutdown marker holding `log_end_offset`. Called after
/// every segment was fdatasync'ed, so the marker never vouches for data that
/// is not durable; it needs no fsync itself (a lost or torn marker only
/// costs a full recovery).
pub(crate) async fn write_clean_shutdown_marker(
    dir: &Path,
    log_end_offset: i64,
) -> Result<(), LogError> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let file = BufferedFile::create(&path)
        .await
        .map_err(|e| LogError::io(&path, e))?;
    write_all(&file, &path, format!("{log_end_offset}\n").into_bytes(), 0).await?;
    file.close().await.map_err(|e| LogError::io(&path, e))
}
