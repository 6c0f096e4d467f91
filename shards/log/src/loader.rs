//! `LogLoader` (Kafka's): opens a partition directory and recovers it.
//!
//! Rules:
//! - After a clean shutdown (`.clean_shutdown` present) no segment is
//!   scanned: each segment's `.index`/`.timeindex` are read back and
//!   sanity-checked, and only the active segment's tail after its last index
//!   entry is walked (framing only) to find the log end, which must match the
//!   marker; a mismatch falls back to recovery as after a crash.
//! - After a crash, segments before the one holding the recovery point
//!   (`recovery-point` checkpoint; the log start without one) are loaded from
//!   their index files; that segment and every later one are scanned: every
//!   batch is checked for framing (length, magic, offsets following on) and
//!   CRC, and their indexes are rebuilt. The first batch that fails, and
//!   everything after it (including later segments), is truncated away.
//! - A missing or corrupt index file (size not a multiple of the entry size,
//!   entries not increasing, positions beyond the `.log`) is rebuilt by a
//!   checked scan of its segment.
//! - The log start offset is the `log-start-offset` checkpoint, clamped to
//!   the segments present.

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use glommio::io::{BufferedFile, Directory};
use tracing::{info, warn};

use crate::batch::{check_crc, parse_header, BatchError, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::checkpoint::{is_temp_of, read_checkpoint, LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE};
use crate::config::LogConfig;
use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::index::{IndexError, OffsetIndex, TimeIndex};
use crate::leader_epoch::LEADER_EPOCH_CHECKPOINT_FILE;
use crate::log::{segment_paths, CLEANER_OFFSET_CHECKPOINT_FILE, DELETED_SUFFIX, SWAP_SUFFIX};
use crate::segment::{
    create_index_files, offset_index_file_name, open_index_file, open_rw, parse_file_name,
    parse_segment_file_name, segment_file_name, time_index_file_name, IndexFiles, LogSegment,
};

/// Name of the marker `Log::close` leaves: its content is the log end offset
/// at close, so a mismatch on open falls back to full recovery.
pub(crate) const CLEAN_SHUTDOWN_FILE: &str = ".clean_shutdown";

/// Bytes read per I/O while scanning a segment.
const RECOVERY_READ_BYTES: usize = 1 << 20;

/// What the loader did (tests and logs).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadStats {
    /// Segments scanned batch by batch with CRC checks.
    pub crc_scanned_segments: usize,
    /// Segments whose index files were missing or corrupt and rebuilt.
    pub rebuilt_indexes: usize,
    /// Segments loaded from their index files.
    pub loaded_indexes: usize,
    /// Whether the clean shutdown marker was trusted.
    pub clean: bool,
}

/// What a loaded log starts from.
pub(crate) struct LoadedLog {
    pub segments: BTreeMap<i64, Rc<LogSegment>>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub recovery_point: i64,
    /// Checkpoint values found on disk, so the log rewrites only changes.
    pub checkpointed_recovery_point: Option<i64>,
    pub checkpointed_log_start_offset: Option<i64>,
    /// (epoch, base offset) of each scanned batch whose leader epoch is above every earlier
    /// one's, in log order: the epoch cache assigns them (Kafka's `LogSegment.recover`), so a
    /// checkpoint that missed an epoch before a crash gets it back.
    pub scanned_epochs: Vec<(i32, i64)>,
    pub stats: LoadStats,
}

pub(crate) struct LogLoader<'a> {
    dir: &'a Path,
    config: &'a LogConfig,
    now_ms: i64,
}

/// What the directory holds.
#[derive(Default)]
struct Listing {
    bases: Vec<i64>,
    marker: bool,
}

/// How segments are loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Clean shutdown: index files, tail walk of the active segment, whose
    /// end must be this offset.
    Clean(i64),
    /// Crash: index files before the segment holding this offset, checked
    /// scans from it on.
    Recover(i64),
}

/// Where the scan of one segment stopped.
struct SegmentScan {
    valid_bytes: u64,
    /// Base offset the next batch must have; `None` before the first batch
    /// of a tail walk (accepted as found).
    next_offset: Option<i64>,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    first_batch: Option<BatchHeader>,
    /// Why the bytes after `valid_bytes` were rejected, if any remain.
    problem: Option<BatchError>,
    /// New leader epochs met, as (epoch, base offset) (see `LoadedLog::scanned_epochs`).
    epochs: Vec<(i32, i64)>,
}

impl SegmentScan {
    fn new(position: u64, next_offset: Option<i64>) -> Self {
        Self {
            valid_bytes: position,
            next_offset,
            offset_index: OffsetIndex::default(),
            time_index: TimeIndex::default(),
            first_batch: None,
            problem: None,
            epochs: Vec::new(),
        }
    }
}

/// One loaded segment before the map is built.
struct Loaded {
    segment: LogSegment,
    /// The indexes were rebuilt by a scan: write the files.
    rebuilt: bool,
    /// Offset after the segment's last batch, when known (scanned).
    next_offset: Option<i64>,
}

impl<'a> LogLoader<'a> {
    pub fn new(dir: &'a Path, config: &'a LogConfig, now_ms: i64) -> Self {
        Self {
            dir,
            config,
            now_ms,
        }
    }

    pub async fn load(&self) -> Result<LoadedLog, LogError> {
        self.create_dir().await?;
        self.recover_swaps().await?;
        let listing = self.list_dir().await?;
        let clean_end = if listing.marker {
            self.read_marker(&self.dir.join(CLEAN_SHUTDOWN_FILE)).await
        } else {
            None
        };
        let checkpointed_recovery_point = read_checkpoint(self.dir, RECOVERY_POINT_FILE).await;
        let checkpointed_log_start_offset = read_checkpoint(self.dir, LOG_START_OFFSET_FILE).await;
        let crash_mode = Mode::Recover(checkpointed_recovery_point.unwrap_or(i64::MIN));
        let mut stats = LoadStats::default();
        let mode = clean_end.map_or(crash_mode, Mode::Clean);
        let mut scanned_epochs = Vec::new();
        let mut loaded = self
            .load_segments(&listing.bases, mode, &mut stats, &mut scanned_epochs)
            .await;
        if let Mode::Clean(end) = mode {
            let found = loaded.as_ref().ok().map(|l| l.1);
            if found != Some(end) {
                warn!(dir = %self.dir.display(), marker = end, ?found,
                    "clean shutdown marker disagrees with the log; running recovery");
                let bases = self.list_dir().await?.bases;
                scanned_epochs.clear();
                loaded = self
                    .load_segments(&bases, crash_mode, &mut stats, &mut scanned_epochs)
                    .await;
            } else {
                stats.clean = true;
            }
        }
        let (mut segments, log_end_offset) = loaded?;
        if listing.marker {
            self.remove_marker().await?;
        }
        if segments.is_empty() {
            let seg = self.new_segment(0).await?;
            segments.insert(0, Rc::new(seg));
            // A new log: make its directory and first segment durable names.
            sync_dir(self.dir).await?;
            if let Some(parent) = self.dir.parent() {
                sync_dir(parent).await?;
            }
        }
        let first_base = segments.keys().next().copied().unwrap_or(0);
        let log_start_offset = checkpointed_log_start_offset
            .unwrap_or(first_base)
            .clamp(first_base, log_end_offset.max(first_base));
        let recovery_point = if stats.clean {
            log_end_offset
        } else {
            checkpointed_recovery_point
                .unwrap_or(first_base)
                .clamp(first_base, log_end_offset.max(first_base))
        };
        info!(dir = %self.dir.display(), log_start_offset, log_end_offset, recovery_point,
            clean = stats.clean, crc_scanned = stats.crc_scanned_segments,
            rebuilt_indexes = stats.rebuilt_indexes, "log loaded");
        Ok(LoadedLog {
            segments,
            log_start_offset,
            log_end_offset,
            recovery_point,
            checkpointed_recovery_point,
            checkpointed_log_start_offset,
            scanned_epochs,
            stats,
        })
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

    /// Segment base offsets (sorted), index files and the clean shutdown
    /// marker. Removes leftovers: checkpoint temp files and index files
    /// without a segment.
    async fn list_dir(&self) -> Result<Listing, LogError> {
        let dir = self.dir.to_path_buf();
        let names = glommio::executor()
            .spawn_blocking(move || -> std::io::Result<Vec<String>> {
                std::fs::read_dir(dir)?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .await
            .map_err(|e| LogError::io(self.dir, e))?;
        let mut listing = Listing::default();
        let mut leftovers = Vec::new();
        let mut index_files = Vec::new();
        for name in names {
            if name == CLEAN_SHUTDOWN_FILE {
                listing.marker = true;
            } else if let Some(base) = parse_segment_file_name(&name) {
                listing.bases.push(base);
            } else if let Some(base) =
                parse_file_name(&name, ".index").or_else(|| parse_file_name(&name, ".timeindex"))
            {
                index_files.push((base, name));
            } else if is_temp_of(&name, RECOVERY_POINT_FILE)
                || is_temp_of(&name, LOG_START_OFFSET_FILE)
                || is_temp_of(&name, LEADER_EPOCH_CHECKPOINT_FILE)
                || is_temp_of(&name, CLEANER_OFFSET_CHECKPOINT_FILE)
            {
                leftovers.push(name);
            } else if name.ends_with(".log") {
                warn!(dir = %self.dir.display(), file = %name, "ignoring badly named segment file");
            }
        }
        listing.bases.sort_unstable();
        for (base, name) in index_files {
            if listing.bases.binary_search(&base).is_err() {
                leftovers.push(name);
            }
        }
        for name in leftovers {
            remove_if_exists(&self.dir.join(&name)).await?;
        }
        Ok(listing)
    }

    /// Finishes or undoes a cleaner swap a crash interrupted (Kafka's `LogLoader` handling of
    /// `.cleaned`, `.swap` and `.deleted` files): `.cleaned` files (a clean that had not
    /// reached its swap) are removed; a `<base>.log.swap` (the cleaned segment, fully written
    /// and synced) replaces every segment whose base lies in [base, its last offset] — the
    /// segments it was cleaned from — and takes the live name, with its index files if they
    /// are still `.swap` (else the live index files are the new ones, or missing and
    /// rebuilt); then the `.deleted` files and stray index `.swap` files go.
    async fn recover_swaps(&self) -> Result<(), LogError> {
        let names = self.read_names().await?;
        let mut swaps = Vec::new();
        let mut done = false;
        for name in &names {
            if name.ends_with(".cleaned") {
                remove_if_exists(&self.dir.join(name)).await?;
                done = true;
            } else if let Some(base) = name
                .strip_suffix(SWAP_SUFFIX)
                .and_then(parse_segment_file_name)
            {
                swaps.push(base);
            }
        }
        swaps.sort_unstable();
        let mut live: Vec<i64> = names
            .iter()
            .filter_map(|n| parse_segment_file_name(n))
            .collect();
        live.sort_unstable();
        for base in swaps {
            done = true;
            let swap = segment_paths(self.dir, base, SWAP_SUFFIX);
            let Some(last) = self.last_offset_of(&swap[0], base).await? else {
                warn!(file = %swap[0].display(), "removing a cleaned segment without a whole batch");
                for p in &swap {
                    remove_if_exists(p).await?;
                }
                continue;
            };
            for &old in live.iter().filter(|&&b| b >= base && b <= last) {
                delete_segment_files(self.dir, old).await?;
            }
            live.retain(|&b| b < base || b > last);
            let target = segment_paths(self.dir, base, "");
            for i in [1, 2, 0] {
                match glommio::io::rename(&swap[i], &target[i]).await {
                    Ok(()) => {}
                    Err(e) => {
                        let e = std::io::Error::from(e);
                        if e.kind() != std::io::ErrorKind::NotFound || i == 0 {
                            return Err(LogError::io(&swap[i], e));
                        }
                    }
                }
            }
            info!(dir = %self.dir.display(), base, last, "completed an interrupted cleaner swap");
        }
        for name in self.read_names().await? {
            if name.ends_with(DELETED_SUFFIX) || name.ends_with(SWAP_SUFFIX) {
                remove_if_exists(&self.dir.join(name)).await?;
                done = true;
            }
        }
        if done {
            sync_dir(self.dir).await?;
        }
        Ok(())
    }

    async fn read_names(&self) -> Result<Vec<String>, LogError> {
        let dir = self.dir.to_path_buf();
        glommio::executor()
            .spawn_blocking(move || -> std::io::Result<Vec<String>> {
                std::fs::read_dir(dir)?
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .await
            .map_err(|e| LogError::io(self.dir, e))
    }

    /// Last offset of the whole, CRC-valid batches at the start of `path`.
    async fn last_offset_of(&self, path: &Path, base: i64) -> Result<Option<i64>, LogError> {
        let file = open_rw(path, false).await?;
        let size = file.file_size().await.map_err(|e| LogError::io(path, e))?;
        let scan = self
            .scan_segment(
                &file,
                path,
                base,
                size,
                SegmentScan::new(0, Some(base)),
                true,
            )
            .await;
        let _ = file.close().await;
        Ok(scan?.next_offset.filter(|&n| n > base).map(|n| n - 1))
    }

    async fn read_marker(&self, path: &Path) -> Option<i64> {
        let file = BufferedFile::open(path).await.ok()?;
        let data = file.read_at(0, 32).await.ok();
        let _ = file.close().await;
        std::str::from_utf8(&data?).ok()?.trim().parse().ok()
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
        let path = self.dir.join(segment_file_name(base_offset));
        let file = open_rw(&path, true).await?;
        let seg = LogSegment::loaded(base_offset, path, file, self.now_ms);
        let files = create_index_files(&seg.offset_index_path(), &seg.time_index_path()).await?;
        seg.set_index_files(Some(files));
        Ok(seg)
    }

    /// Loads the segments in order (see the module docs), truncating at the
    /// first bad batch and deleting every segment after it. Returns the
    /// segments and the log end offset.
    async fn load_segments(
        &self,
        bases: &[i64],
        mode: Mode,
        stats: &mut LoadStats,
        epochs: &mut Vec<(i32, i64)>,
    ) -> Result<(BTreeMap<i64, Rc<LogSegment>>, i64), LogError> {
        let scan_from = match mode {
            Mode::Clean(_) => bases.len(),
            Mode::Recover(rp) => bases.partition_point(|&b| b <= rp).saturating_sub(1),
        };
        let mut out: Vec<Loaded> = Vec::with_capacity(bases.len());
        // Offset the next segment must start at, when known.
        let mut next_offset: Option<i64> = bases.first().copied();
        let mut cut_bytes = 0u64;
        let mut reason = None;
        for (i, &base) in bases.iter().enumerate() {
            if next_offset.is_some_and(|n| base < n) {
                // A segment must start at or after the end of the previous one (after it
                // when the cleaner removed the previous one's last batches: offsets
                // increase, with gaps, as in Kafka); one that overlaps is the start of
                // damage. Drop it and what follows.
                cut_bytes += self.delete_segments(&bases[i..]).await?;
                reason = Some(format!(
                    "segment {base} does not start at offset {next_offset:?}"
                ));
                break;
            }
            let path = self.dir.join(segment_file_name(base));
            let file = open_rw(&path, false).await?;
            let size = file.file_size().await.map_err(|e| LogError::io(&path, e))?;
            let next_base = bases.get(i + 1).copied();
            let is_last = next_base.is_none();
            let seg = LogSegment::loaded(base, path.clone(), file, self.now_ms);
            seg.set_loaded_size(size);
            if i < scan_from {
                let end_limit = match (next_base, mode) {
                    (Some(n), _) => Some(n),
                    (None, Mode::Clean(end)) => Some(end),
                    (None, Mode::Recover(_)) => None,
                };
                match self.load_indexes(&seg, size, end_limit).await {
                    Ok(()) => {
                        stats.loaded_indexes += 1;
                        let end = if is_last {
                            match self.walk_tail(&seg, size).await? {
                                Some(end) => Some(end),
                                // Tail does not add up: the caller falls
                                // back to recovery.
                                None => Some(-1),
                            }
                        } else {
                            None
                        };
                        next_offset = next_base.or(end);
                        out.push(Loaded {
                            segment: seg,
                            rebuilt: false,
                            next_offset: end,
                        });
                        continue;
                    }
                    Err(e) => {
                        warn!(segment = %path.display(), error = %e,
                            "rebuilding missing or corrupt index files");
                        stats.rebuilt_indexes += 1;
                    }
                }
            }
            // Checked scan from the segment start, rebuilding the indexes.
            stats.crc_scanned_segments += 1;
            let file = seg.file().await?;
            let scan = self
                .scan_segment(
                    &file,
                    &path,
                    base,
                    size,
                    SegmentScan::new(0, Some(base)),
                    true,
                )
                .await?;
            let valid = scan.valid_bytes;
            let scan_end = scan.next_offset.unwrap_or(base);
            for &(epoch, offset) in &scan.epochs {
                // `None < Some(_)`: the first epoch is always new.
                if epochs.last().map(|&(latest, _)| latest) < Some(epoch) {
                    epochs.push((epoch, offset));
                }
            }
            seg.set_loaded_size(valid);
            *seg.offset_index.borrow_mut() = scan.offset_index;
            *seg.time_index.borrow_mut() = scan.time_index;
            seg.rolling_based_timestamp
                .set(scan.first_batch.map(|h| h.max_timestamp));
            let truncated = valid < size;
            if truncated {
                truncate(&seg, &path, valid).await?;
                cut_bytes += size - valid;
                cut_bytes += self.delete_segments(&bases[i + 1..]).await?;
                reason = scan
                    .problem
                    .map(|p| format!("{p} at byte {valid} of {}", path.display()));
            }
            next_offset = Some(scan_end);
            out.push(Loaded {
                segment: seg,
                rebuilt: true,
                next_offset: Some(scan_end),
            });
            if truncated {
                break;
            }
        }
        if cut_bytes > 0 {
            warn!(dir = %self.dir.display(), cut_bytes, log_end_offset = ?next_offset,
                reason = reason.as_deref().unwrap_or("unknown"),
                "truncated torn or corrupt log tail during recovery");
        }
        let log_end_offset = out
            .last()
            .and_then(|l| l.next_offset)
            .unwrap_or_else(|| bases.first().copied().unwrap_or(0));
        let count = out.len();
        let mut segments = BTreeMap::new();
        for (i, l) in out.into_iter().enumerate() {
            let active = i + 1 == count;
            if l.rebuilt {
                if !active {
                    // A closed segment's time index ends with its largest
                    // timestamp, as if it had been rolled.
                    l.segment.time_index.borrow_mut().maybe_append();
                }
                let files = self.write_index_files(&l.segment).await?;
                l.segment.mark_index_on_disk();
                if active {
                    l.segment.set_index_files(Some(files));
                } else {
                    close_index_files(files).await;
                }
            } else if active {
                let files = IndexFiles {
                    offset: open_index_file(&l.segment.offset_index_path(), false).await?,
                    time: open_index_file(&l.segment.time_index_path(), false).await?,
                };
                l.segment.set_index_files(Some(files));
            }
            segments.insert(l.segment.base_offset, Rc::new(l.segment));
        }
        Ok((segments, log_end_offset))
    }

    /// Reads and checks a segment's `.index` and `.timeindex`. `end_limit`:
    /// the offset the segment must end before, if known.
    async fn load_indexes(
        &self,
        seg: &LogSegment,
        log_size: u64,
        end_limit: Option<i64>,
    ) -> Result<(), LoadIndexError> {
        let limit = end_limit.map_or(u64::MAX, |e| {
            e.saturating_sub(seg.base_offset).max(0) as u64
        });
        let offset_bytes = read_whole(&seg.offset_index_path()).await?;
        let time_bytes = read_whole(&seg.time_index_path()).await?;
        let offset_index = OffsetIndex::decode(&offset_bytes, log_size, limit)?;
        let time_index = TimeIndex::decode(&time_bytes, limit)?;
        *seg.offset_index.borrow_mut() = offset_index;
        *seg.time_index.borrow_mut() = time_index;
        seg.mark_index_on_disk();
        Ok(())
    }

    /// Walks the active segment from its last index entry to its end
    /// (framing only): the log end offset, the index state for further
    /// appends, the first batch's timestamp. `None` if the tail does not add
    /// up (torn, or the index entry does not point at its batch).
    async fn walk_tail(&self, seg: &LogSegment, size: u64) -> Result<Option<i64>, LogError> {
        let last = seg.offset_index.borrow().last();
        let (position, expect_last) = match last {
            Some((rel, pos)) => (u64::from(pos), Some(seg.base_offset + i64::from(rel))),
            None => (0, None),
        };
        let next = if position == 0 {
            Some(seg.base_offset)
        } else {
            None
        };
        let file = seg.file().await?;
        let scan = self
            .scan_segment(
                &file,
                &seg.path,
                seg.base_offset,
                size,
                SegmentScan::new(position, next),
                false,
            )
            .await?;
        if scan.valid_bytes != size {
            return Ok(None);
        }
        if let (Some(expected), Some(first)) = (expect_last, scan.first_batch) {
            if first.last_offset() != expected {
                return Ok(None);
            }
        }
        if position != 0 && expect_last.is_some() && scan.first_batch.is_none() {
            return Ok(None);
        }
        seg.offset_index.borrow_mut().bytes_since_last_entry = size - position;
        {
            let mut time = seg.time_index.borrow_mut();
            let tail = &scan.time_index;
            time.observe(tail.max_timestamp, tail.offset_of_max_timestamp);
        }
        let first_ts = if position == 0 {
            scan.first_batch.map(|h| h.max_timestamp)
        } else {
            let head = read_exact(&file, &seg.path, 0, RECORD_BATCH_OVERHEAD).await?;
            parse_header(&head).ok().map(|h| h.max_timestamp)
        };
        seg.rolling_based_timestamp.set(first_ts);
        Ok(Some(scan.next_offset.unwrap_or(seg.base_offset)))
    }

    /// Writes a segment's rebuilt index files (fdatasync'ed) and returns
    /// their handles.
    async fn write_index_files(&self, seg: &LogSegment) -> Result<IndexFiles, LogError> {
        let files = create_index_files(&seg.offset_index_path(), &seg.time_index_path()).await?;
        let offset = seg.offset_index.borrow().encode_from(0);
        let time = seg.time_index.borrow().encode_from(0);
        let offset_path = seg.offset_index_path();
        let time_path = seg.time_index_path();
        if !offset.is_empty() {
            write_all(&files.offset, &offset_path, offset, 0).await?;
        }
        if !time.is_empty() {
            write_all(&files.time, &time_path, time, 0).await?;
        }
        files
            .offset
            .fdatasync()
            .await
            .map_err(|e| LogError::io(&offset_path, e))?;
        files
            .time
            .fdatasync()
            .await
            .map_err(|e| LogError::io(&time_path, e))?;
        Ok(files)
    }

    /// Deletes whole segments (they follow damage) with their index files;
    /// returns their bytes.
    async fn delete_segments(&self, bases: &[i64]) -> Result<u64, LogError> {
        let mut bytes = 0;
        for &base in bases {
            let path = self.dir.join(segment_file_name(base));
            let file = open_rw(&path, false).await?;
            bytes += file.file_size().await.map_err(|e| LogError::io(&path, e))?;
            let _ = file.close().await;
            delete_segment_files(self.dir, base).await?;
        }
        Ok(bytes)
    }

    /// Scans a segment from `scan.valid_bytes`, checking every batch, building
    /// the indexes. Stops at the first batch that is torn or invalid.
    async fn scan_segment(
        &self,
        file: &BufferedFile,
        path: &Path,
        base: i64,
        size: u64,
        mut scan: SegmentScan,
        check_crc: bool,
    ) -> Result<SegmentScan, LogError> {
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
            scan.time_index.observe(header.max_timestamp, relative);
            if scan.offset_index.on_batch(
                relative,
                position,
                header.size as u64,
                self.config.index_interval_bytes,
            ) {
                scan.time_index.maybe_append();
            }
            scan.first_batch.get_or_insert(header);
            let epoch = header.partition_leader_epoch;
            if epoch >= 0 && scan.epochs.last().map(|&(latest, _)| latest) < Some(epoch) {
                scan.epochs.push((epoch, header.base_offset));
            }
            scan.valid_bytes += header.size as u64;
            scan.next_offset = Some(header.last_offset() + 1);
            off += header.size;
        }
    }
}

/// Why stored index files cannot be used.
#[derive(Debug)]
enum LoadIndexError {
    Io(LogError),
    Invalid(IndexError),
}

impl std::fmt::Display for LoadIndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => e.fmt(f),
            Self::Invalid(e) => e.fmt(f),
        }
    }
}

impl From<LogError> for LoadIndexError {
    fn from(e: LogError) -> Self {
        Self::Io(e)
    }
}

impl From<IndexError> for LoadIndexError {
    fn from(e: IndexError) -> Self {
        Self::Invalid(e)
    }
}

/// The whole content of a (small) file.
async fn read_whole(path: &Path) -> Result<bytes::Bytes, LogError> {
    let file = BufferedFile::open(path)
        .await
        .map_err(|e| LogError::io(path, e))?;
    let data = async {
        let size = file.file_size().await.map_err(|e| LogError::io(path, e))?;
        if size == 0 {
            return Ok(bytes::Bytes::new());
        }
        read_exact(&file, path, 0, size as usize).await
    }
    .await;
    let _ = file.close().await;
    data
}

async fn close_index_files(files: IndexFiles) {
    let _ = files.offset.close().await;
    let _ = files.time.close().await;
}

/// Unlinks a segment's `.log`, `.index` and `.timeindex` (the index files
/// may be missing).
pub(crate) async fn delete_segment_files(dir: &Path, base: i64) -> Result<(), LogError> {
    let log = dir.join(segment_file_name(base));
    glommio::io::remove(&log)
        .await
        .map_err(|e| LogError::io(&log, e))?;
    for name in [offset_index_file_name(base), time_index_file_name(base)] {
        remove_if_exists(&dir.join(name)).await?;
    }
    Ok(())
}

/// Unlinks a file; one that is already gone is fine.
pub(crate) async fn remove_if_exists(path: &Path) -> Result<(), LogError> {
    ok_if_missing(path, glommio::io::remove(path).await)
}

/// A file operation's result where a missing file counts as done (its error is mapped to
/// `LogError::Io` for `path` otherwise).
pub(crate) fn ok_if_missing(path: &Path, result: glommio::Result<(), ()>) -> Result<(), LogError> {
    match result {
        Ok(()) => Ok(()),
        Err(e) => {
            let e = std::io::Error::from(e);
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(())
            } else {
                Err(LogError::io(path, e))
            }
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
    // Offsets increase; a compacted log has gaps between batches (Kafka only requires them
    // to increase too).
    let expected = scan.next_offset.unwrap_or(header.base_offset);
    if header.base_offset < expected || header.base_offset < base {
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
