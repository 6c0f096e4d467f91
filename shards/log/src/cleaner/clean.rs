//! One clean of one log (Kafka's `Cleaner.doClean`, `buildOffsetMap`, `groupSegmentsBySize`,
//! `cleanSegments`, `cleanInto`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use bytes::Bytes;
use glommio::io::BufferedFile;
use sluice_protocol::record_batch::{self, RecordBatchHeader};

use super::offset_map::OffsetMap;
use super::records::{
    filter_batch, for_each_key, keep_transactional_batch_as_is, push_empty_header, FilterContext,
    Filtered, DELETE_HORIZON_BIT,
};
use super::{LogToClean, Throttler};
use crate::batch::RECORD_BATCH_OVERHEAD;
use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::index::{OffsetIndex, TimeIndex, OFFSET_ENTRY_BYTES, TIME_ENTRY_BYTES};
use crate::log::Log;
use crate::segment::{open_index_file, open_rw, LogSegment};

/// What one clean did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanerStats {
    /// Bytes read (map building and copying).
    pub bytes_read: u64,
    /// Of `bytes_read`, those read while building the offset map.
    pub map_bytes_read: u64,
    /// Bytes of the batches gone through (map building and copying; a batch read again
    /// because it straddled a read counts once), as Kafka's cleaner stats count them.
    pub log_bytes: u64,
    /// Of `log_bytes`, the map building's (Kafka's "Indexed" MB; the rest is its "MB of log
    /// processed").
    pub map_log_bytes: u64,
    /// Memory of this clean's offset map.
    pub map_bytes: usize,
    /// Bytes written into cleaned segments.
    pub bytes_written: u64,
    /// Segments replaced (the old ones).
    pub segments_cleaned: usize,
    /// Keys in the offset map.
    pub map_keys: usize,
    /// Offsets below this are clean now (the next first dirty offset).
    pub end_offset: i64,
    /// Whether the log changed under the clean (truncation, retention) so it stopped early.
    pub aborted: bool,
}

/// A segment the cleaner wrote, ready to be swapped in.
pub(crate) struct CleanedSegment {
    pub base_offset: i64,
    pub file: BufferedFile,
    pub size: u64,
    pub offset_index: OffsetIndex,
    pub time_index: TimeIndex,
    pub rolling_based_timestamp: Option<i64>,
    /// Smallest delete horizon of a batch kept with one (a later clean removes tombstones
    /// when it passes).
    pub next_delete_horizon_ms: Option<i64>,
}

/// `<base>.log.cleaned` and its index files.
pub(crate) fn cleaned_paths(dir: &Path, base: i64) -> [PathBuf; 3] {
    [
        dir.join(format!("{base:020}.log.cleaned")),
        dir.join(format!("{base:020}.index.cleaned")),
        dir.join(format!("{base:020}.timeindex.cleaned")),
    ]
}

/// Reads the batches of a closed segment in `io_buffer` chunks, CRC-checked.
struct SegmentReader {
    file: Rc<BufferedFile>,
    path: PathBuf,
    size: u64,
    chunk_pos: u64,
    chunk: Bytes,
    off: usize,
    io_buffer: usize,
}

impl SegmentReader {
    async fn open(seg: &LogSegment, io_buffer: usize) -> Result<Self, LogError> {
        Ok(Self {
            file: seg.file().await?,
            path: seg.path.clone(),
            size: seg.size.get(),
            chunk_pos: 0,
            chunk: Bytes::new(),
            off: 0,
            io_buffer,
        })
    }

    fn corrupt(&self, position: u64, reason: String) -> LogError {
        LogError::Corrupt {
            path: self.path.clone(),
            position,
            reason,
        }
    }

    async fn next(
        &mut self,
        throttler: &Throttler,
        stats: &mut CleanerStats,
    ) -> Result<Option<(RecordBatchHeader, Bytes)>, LogError> {
        loop {
            let rest = &self.chunk[self.off..];
            let position = self.chunk_pos + self.off as u64;
            let mut need = RECORD_BATCH_OVERHEAD;
            if rest.len() >= RECORD_BATCH_OVERHEAD {
                let h = record_batch::parse_header(rest)
                    .map_err(|e| self.corrupt(position, e.to_string()))?;
                if h.size_bytes() <= rest.len() {
                    let batch = self.chunk.slice(self.off..self.off + h.size_bytes());
                    record_batch::validate_crc(&batch)
                        .map_err(|e| self.corrupt(position, e.to_string()))?;
                    self.off += h.size_bytes();
                    stats.log_bytes += h.size_bytes() as u64;
                    throttler.end_slice_if_due().await;
                    return Ok(Some((h, batch)));
                }
                need = h.size_bytes();
            }
            if position >= self.size {
                return Ok(None);
            }
            let len = self
                .io_buffer
                .max(need)
                .min((self.size - position) as usize);
            if len < need {
                return Err(self.corrupt(position, "truncated batch".into()));
            }
            self.chunk = read_exact(&self.file, &self.path, position, len).await?;
            self.chunk_pos = position;
            self.off = 0;
            stats.bytes_read += len as u64;
            throttler.maybe_throttle(len).await;
        }
    }
}

/// The closed segments a clean may touch, with the base of the segment after each.
pub(crate) struct CleanSegments {
    pub segments: Vec<(Rc<LogSegment>, i64)>,
    pub log_start_offset: i64,
    /// The log's truncation count when taken: the swap checks it did not move.
    pub truncations: u64,
    pub config: crate::config::LogConfig,
    pub now_ms: i64,
}

pub(crate) async fn clean_log(
    log: &Log,
    todo: LogToClean,
    map: &mut OffsetMap,
    throttler: &Throttler,
    io_buffer: usize,
) -> Result<CleanerStats, LogError> {
    let mut stats = CleanerStats::default();
    let Some(view) = log.clean_segments(todo.first_uncleanable_offset) else {
        stats.aborted = true;
        return Ok(stats);
    };
    map.clear();
    let mut producers = HashMap::new();
    let end_offset = build_offset_map(
        &view,
        todo,
        map,
        &mut producers,
        throttler,
        io_buffer,
        &mut stats,
    )
    .await?;
    stats.map_bytes_read = stats.bytes_read;
    stats.map_log_bytes = stats.log_bytes;
    stats.map_keys = map.len();
    stats.end_offset = end_offset;
    let groups = group_segments_by_size(&view, end_offset);
    let ctx = FilterContext {
        map,
        now_ms: view.now_ms,
        delete_retention_ms: view.config.delete_retention_ms,
        producer_last_batch: &producers,
    };
    let mut next_horizon: Option<i64> = None;
    for group in groups {
        let cleaned = clean_segments(
            log, &view, &group, end_offset, &ctx, throttler, io_buffer, &mut stats,
        )
        .await?;
        if let Some(h) = cleaned.next_delete_horizon_ms {
            next_horizon = Some(next_horizon.map_or(h, |n| n.min(h)));
        }
        let old: Vec<Rc<LogSegment>> = group.iter().map(|(s, _)| s.clone()).collect();
        if !log
            .replace_segments(&old, cleaned, view.truncations)
            .await?
        {
            stats.aborted = true;
            return Ok(stats);
        }
        stats.segments_cleaned += old.len();
    }
    log.cleaned_to(end_offset, next_horizon).await?;
    Ok(stats)
}

/// Kafka's `buildOffsetMap`: keys of the dirty batches, from the first dirty offset on, until
/// the first uncleanable offset or the map is full. Returns where the map ends (this clean
/// covers the offsets below it). Also notes each producer's last batch (from the log start).
async fn build_offset_map(
    view: &CleanSegments,
    todo: LogToClean,
    map: &mut OffsetMap,
    producers: &mut HashMap<i64, i64>,
    throttler: &Throttler,
    io_buffer: usize,
    stats: &mut CleanerStats,
) -> Result<i64, LogError> {
    let limit = todo.first_uncleanable_offset;
    let first_dirty = todo.first_dirty_offset;
    for (seg, _) in &view.segments {
        if seg.base_offset >= limit {
            break;
        }
        let mut reader = SegmentReader::open(seg, io_buffer).await?;
        while let Some((h, batch)) = reader.next(throttler, stats).await? {
            if h.last_offset() >= limit {
                return Ok(limit);
            }
            if h.producer_id >= 0 {
                producers.insert(h.producer_id, h.base_offset);
            }
            if h.last_offset() < first_dirty || keep_transactional_batch_as_is(&h) {
                continue;
            }
            let count = usize::try_from(h.records_count).unwrap_or(0);
            if count > map.free_entries() && map.len() > 0 {
                // Full: this clean ends before this batch; the next one goes on from here.
                return Ok(h.base_offset);
            }
            let mut last_put = None;
            let mut full = false;
            for_each_key(&batch, &h, |offset, key| {
                if map.put(key, offset) {
                    last_put = Some(offset);
                    true
                } else {
                    full = true;
                    false
                }
            })
            .map_err(|e| LogError::Corrupt {
                path: seg.path.clone(),
                position: 0,
                reason: format!("batch at offset {}: {}", h.base_offset, e.0),
            })?;
            if full {
                // A single batch larger than the whole map: the part mapped is cleaned, the
                // batch itself is copied whole (it reaches the map's end).
                return Ok(last_put.map_or(h.base_offset, |o| o + 1));
            }
        }
    }
    Ok(limit)
}

/// Kafka's `groupSegmentsBySize`: consecutive segments from the log start below `end_offset`
/// while the group's log stays within `segment.bytes`, its indexes within
/// `segment.index.bytes` and its offsets within `i32` of its base. A group never ends with an
/// empty segment (crash recovery finds the segments a swap replaces from the cleaned
/// segment's last batch, which must reach the last one's base).
fn group_segments_by_size(
    view: &CleanSegments,
    end_offset: i64,
) -> Vec<Vec<(Rc<LogSegment>, i64)>> {
    let max_size = view.config.effective_segment_bytes();
    let max_index = u64::from(view.config.segment_index_bytes);
    let segs: Vec<&(Rc<LogSegment>, i64)> = view
        .segments
        .iter()
        .filter(|(s, next)| *next > view.log_start_offset && s.base_offset < end_offset)
        .collect();
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let first = segs[i];
        let mut group = vec![first.clone()];
        let mut log_size = first.0.size.get();
        let mut offset_index = first.0.offset_index.borrow().len() * OFFSET_ENTRY_BYTES;
        let mut time_index = first.0.time_index.borrow().len() * TIME_ENTRY_BYTES;
        i += 1;
        while i < segs.len() {
            let (s, next) = segs[i];
            let oi = s.offset_index.borrow().len() * OFFSET_ENTRY_BYTES;
            let ti = s.time_index.borrow().len() * TIME_ENTRY_BYTES;
            let fits = log_size + s.size.get() <= max_size
                && (offset_index + oi) as u64 <= max_index
                && (time_index + ti) as u64 <= max_index
                && next - 1 - first.0.base_offset <= i64::from(i32::MAX);
            if !fits {
                break;
            }
            group.push(segs[i].clone());
            log_size += s.size.get();
            offset_index += oi;
            time_index += ti;
            i += 1;
        }
        while group.last().is_some_and(|(s, _)| s.size.get() == 0) {
            group.pop();
        }
        if !group.is_empty() {
            groups.push(group);
        }
    }
    groups
}

/// The cleaned segment being written.
struct CleanedWriter {
    base: i64,
    file: BufferedFile,
    path: PathBuf,
    buf: Vec<u8>,
    written: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    index_interval: u32,
    first_timestamp: Option<i64>,
    next_horizon: Option<i64>,
    now_ms: i64,
}

impl CleanedWriter {
    /// Indexes the batch just appended to `buf` at `start`.
    fn index_batch(&mut self, start: usize) -> Result<(), LogError> {
        let h = record_batch::parse_header(&self.buf[start..]).map_err(|e| LogError::Corrupt {
            path: self.path.clone(),
            position: self.written + start as u64,
            reason: e.to_string(),
        })?;
        let position = self.written + start as u64;
        let relative = (h.last_offset() - self.base) as u32;
        self.time_index.observe(h.max_timestamp, relative);
        if self.offset_index.on_batch(
            relative,
            position as u32,
            h.size_bytes() as u64,
            self.index_interval,
        ) {
            self.time_index.maybe_append();
        }
        self.first_timestamp.get_or_insert(h.max_timestamp);
        // A horizon already passed has had its tombstones removed by this clean: only those
        // still ahead call for another clean.
        if h.attributes & DELETE_HORIZON_BIT != 0 && h.base_timestamp > self.now_ms {
            let at = h.base_timestamp;
            self.next_horizon = Some(self.next_horizon.map_or(at, |n| n.min(at)));
        }
        Ok(())
    }

    async fn flush(
        &mut self,
        throttler: &Throttler,
        stats: &mut CleanerStats,
    ) -> Result<(), LogError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let cap = self.buf.capacity();
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(cap));
        let len = data.len();
        write_all(&self.file, &self.path, data, self.written).await?;
        self.written += len as u64;
        stats.bytes_written += len as u64;
        throttler.maybe_throttle(len).await;
        Ok(())
    }
}

/// Kafka's `cleanSegments`: copies what the cleaner keeps of `group` into
/// `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`), all fdatasync'ed.
#[allow(clippy::too_many_arguments)]
async fn clean_segments(
    log: &Log,
    view: &CleanSegments,
    group: &[(Rc<LogSegment>, i64)],
    end_offset: i64,
    ctx: &FilterContext<'_>,
    throttler: &Throttler,
    io_buffer: usize,
    stats: &mut CleanerStats,
) -> Result<CleanedSegment, LogError> {
    let base = group[0].0.base_offset;
    let [log_path, index_path, time_path] = cleaned_paths(log.dir(), base);
    let file = open_rw(&log_path, true).await?;
    let mut w = CleanedWriter {
        base,
        file,
        path: log_path.clone(),
        buf: Vec::with_capacity(io_buffer + RECORD_BATCH_OVERHEAD),
        written: 0,
        offset_index: OffsetIndex::default(),
        time_index: TimeIndex::default(),
        index_interval: view.config.index_interval_bytes,
        first_timestamp: None,
        next_horizon: None,
        now_ms: view.now_ms,
    };
    let written = copy_group(&mut w, group, end_offset, ctx, throttler, io_buffer, stats).await;
    if let Err(e) = written {
        let _ = w.file.close().await;
        remove_cleaned(log.dir(), base).await;
        return Err(e);
    }
    w.time_index.maybe_append();
    let synced = async {
        w.file
            .fdatasync()
            .await
            .map_err(|e| LogError::io(&log_path, e))?;
        write_index_file(&index_path, w.offset_index.encode_from(0)).await?;
        write_index_file(&time_path, w.time_index.encode_from(0)).await
    }
    .await;
    if let Err(e) = synced {
        let _ = w.file.close().await;
        remove_cleaned(log.dir(), base).await;
        return Err(e);
    }
    super::crash_point("cleaned");
    Ok(CleanedSegment {
        base_offset: base,
        file: w.file,
        size: w.written,
        offset_index: w.offset_index,
        time_index: w.time_index,
        rolling_based_timestamp: w.first_timestamp,
        next_delete_horizon_ms: w.next_horizon,
    })
}

async fn copy_group(
    w: &mut CleanedWriter,
    group: &[(Rc<LogSegment>, i64)],
    end_offset: i64,
    ctx: &FilterContext<'_>,
    throttler: &Throttler,
    io_buffer: usize,
    stats: &mut CleanerStats,
) -> Result<(), LogError> {
    for (i, (seg, _)) in group.iter().enumerate() {
        let is_last = i + 1 == group.len();
        let mut reader = SegmentReader::open(seg, io_buffer).await?;
        let mut wrote_any = false;
        let mut last_batch: Option<(RecordBatchHeader, Bytes)> = None;
        while let Some((h, batch)) = reader.next(throttler, stats).await? {
            let start = w.buf.len();
            if h.last_offset() >= end_offset {
                // Beyond the offset map: dirty data this clean did not cover, kept as is.
                w.buf.extend_from_slice(&batch);
            } else {
                let outcome =
                    filter_batch(&batch, &h, ctx, &mut w.buf).map_err(|e| LogError::Corrupt {
                        path: seg.path.clone(),
                        position: 0,
                        reason: format!("batch at offset {}: {}", h.base_offset, e.0),
                    })?;
                debug_assert!(outcome == Filtered::Dropped || w.buf.len() > start);
            }
            if w.buf.len() > start {
                wrote_any = true;
                w.index_batch(start)?;
            }
            if is_last {
                last_batch = Some((h, batch));
            }
            if w.buf.len() >= io_buffer {
                w.flush(throttler, stats).await?;
            }
        }
        if is_last && !wrote_any {
            // Keep the last batch's offsets (as an empty batch) so the cleaned segment reaches
            // this segment's base: crash recovery relies on it.
            if let Some((h, batch)) = last_batch {
                let start = w.buf.len();
                push_empty_header(&batch, &h, &mut w.buf);
                w.index_batch(start)?;
            }
        }
    }
    w.flush(throttler, stats).await
}

async fn write_index_file(path: &Path, bytes: Vec<u8>) -> Result<(), LogError> {
    let file = open_index_file(path, true).await?;
    let result = async {
        if !bytes.is_empty() {
            write_all(&file, path, bytes, 0).await?;
        }
        file.fdatasync().await.map_err(|e| LogError::io(path, e))
    }
    .await;
    let _ = file.close().await;
    result
}

/// Removes a clean's `.cleaned` files (best effort: the loader removes leftovers too).
pub(crate) async fn remove_cleaned(dir: &Path, base: i64) {
    for path in cleaned_paths(dir, base) {
        let _ = glommio::io::remove(&path).await;
    }
}
