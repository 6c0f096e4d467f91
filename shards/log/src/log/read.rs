//! Read: whole batches from the tail cache or the segment files (index lookup, then a scan of
//! batch headers), the readable-bytes estimate for fetch `min_bytes`, and waiting for appends
//! (the fetch long poll).

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use sluice_protocol::{record_batch, FileRegion};

use super::{readable_size, FetchDataInfo, Log, LogState, Records};
use crate::batch::{self, parse_header, BatchHeader, RECORD_BATCH_OVERHEAD};
use crate::error::LogError;
use crate::file_io::{fd_is_cached, is_cached, read_cached, read_exact, read_in};
use crate::page_cache::FileMark;
use crate::segment::LogSegment;
use crate::tail_cache::{FileSpot, TailSpan};

/// Header bytes read per I/O while looking for a batch in a segment.
const MIN_SCAN_READ_BYTES: u64 = 16 * 1024;
/// Reads up to this size are read ahead with the first scan read (one I/O for a small
/// fetch). Larger ones scan first and then read exactly from the batch found: the index entry
/// in front of a read is usually the previous append's (Kafka's entries carry a batch's last
/// offset), so a read-ahead from there missed the answer's end and the whole answer was read
/// again — 2.0 bytes copied from the page cache per byte read (`bench/iopath` `log-read`).
const MAX_SPECULATIVE_READ_BYTES: usize = 64 * 1024;
/// Batch headers a region answer may read to find its end (a `preadv2` of 61 bytes each,
/// ~1 µs): 128 of them cost about what copying 1 MiB twice (page cache to memory, memory to
/// socket) does, so batches smaller than `len / 128` (8 KiB for a 1 MiB read) are copied.
const MAX_REGION_HEADER_READS: usize = 128;
/// Batch headers [`locate_cached`] reads from the index position before it leaves the search
/// to the scan: an index interval (4 KiB by default) holds a few batches unless they are tiny.
const MAX_LOCATE_HEADER_READS: usize = 16;

impl Log {
    /// Resolves once `readable_end_offset() > beyond_offset`, or when the log
    /// stops advancing (failed, closed, deleted). For the fetch long-poll:
    /// race it against a timer, then re-check.
    pub async fn wait_for_append(&self, beyond_offset: i64) {
        WaitFor::new(self, WaitTarget::ReadableEnd, beyond_offset, None).await
    }

    /// [`Log::wait_for_append`] that also resolves when a truncation happened after the
    /// `truncations` count the caller read (what it waited for may never come).
    pub(super) async fn wait_readable(&self, beyond_offset: i64, truncations: u64) {
        WaitFor::new(
            self,
            WaitTarget::ReadableEnd,
            beyond_offset,
            Some(truncations),
        )
        .await
    }

    /// Number of truncations so far (see `LogState::truncations`).
    pub(super) fn truncations(&self) -> u64 {
        self.state.borrow().truncations
    }

    /// Reads whole batches starting with the one holding `start_offset`, at
    /// most `max_bytes` (but one whole batch anyway if `min_one_message`),
    /// never past the readable end nor past `max_offset`.
    pub async fn read(
        &self,
        start_offset: i64,
        max_bytes: usize,
        min_one_message: bool,
        max_offset: Option<i64>,
    ) -> Result<FetchDataInfo, LogError> {
        let read = ReadShape {
            max_bytes,
            min_one: min_one_message,
            region_ok: false,
            pieces_ok: false,
        };
        match self.read_records(start_offset, read, max_offset).await? {
            Records::Memory(records) => Ok(FetchDataInfo::new(records)),
            Records::File(_) | Records::Pieces(_) => {
                unreachable!("a region or pieces are only made when asked for")
            }
        }
    }

    /// [`Log::read`] for a response: a read larger than one speculative read whose batches
    /// the page cache holds is answered as a file region, sent by `sendfile` without being
    /// copied into user space (Kafka's `FileRecords`); anything else as bytes in memory.
    pub async fn read_for_send(
        &self,
        start_offset: i64,
        max_bytes: usize,
        min_one_message: bool,
        max_offset: Option<i64>,
    ) -> Result<Records, LogError> {
        let read = ReadShape::for_send(max_bytes, min_one_message);
        self.read_records(start_offset, read, max_offset).await
    }

    /// [`Log::read_for_send`] when it needs no file I/O: `Some` answers an offset out of range,
    /// a read at the end, or one the tail cache holds; `None` means the read goes to the
    /// segment files. A fetch of many caught-up partitions answers them all this way, without
    /// a future per partition.
    pub fn read_for_send_now(
        &self,
        start_offset: i64,
        max_bytes: usize,
        min_one_message: bool,
        max_offset: Option<i64>,
    ) -> Option<Result<Records, LogError>> {
        let read = ReadShape::for_send(max_bytes, min_one_message);
        match self.read_without_io(start_offset, read, max_offset) {
            Ok(Ok(records)) => Some(Ok(records)),
            Ok(Err(_limit)) => None,
            Err(error) => Some(Err(error)),
        }
    }

    async fn read_records(
        &self,
        start_offset: i64,
        read: ReadShape,
        max_offset: Option<i64>,
    ) -> Result<Records, LogError> {
        match self.read_without_io(start_offset, read, max_offset)? {
            Ok(records) => Ok(records),
            Err(limit) => self.read_from_segments(start_offset, limit, read).await,
        }
    }

    /// The part of a read that needs no I/O: `Ok(records)` when the answer is known here,
    /// `Err(limit)` (the offset the read stops before) when it must go to the files.
    fn read_without_io(
        &self,
        start_offset: i64,
        read: ReadShape,
        max_offset: Option<i64>,
    ) -> Result<Result<Records, i64>, LogError> {
        let st = self.state.borrow();
        if start_offset < st.log_start_offset || start_offset > st.log_end_offset {
            return Err(LogError::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: st.log_start_offset,
                log_end_offset: st.log_end_offset,
            });
        }
        let limit = max_offset.map_or(st.readable_end.offset, |m| m.min(st.readable_end.offset));
        if start_offset >= limit {
            return Ok(Ok(Records::Memory(Bytes::new())));
        }
        let Some(span) = st
            .tail_cache
            .span(start_offset, limit, read.max_bytes, read.min_one)
        else {
            if let Some(region) = recent_region(&st, start_offset, limit, read) {
                return Ok(Ok(Records::File(region)));
            }
            return Ok(Err(limit));
        };
        if read.region_ok && span.len() >= MIN_TAIL_REGION_BYTES {
            if let Some(region) = tail_region(&st, &span) {
                return Ok(Ok(Records::File(region)));
            }
        }
        Ok(Ok(st.tail_cache.records(&span, read.pieces_ok)))
    }

    /// File read path: the segment holding `start`, and the next ones if it
    /// holds no batch at or after `start`. Reads stay within one segment, except past a
    /// segment whose rest holds only record-less batches (see below).
    async fn read_from_segments(
        &self,
        start: i64,
        limit: i64,
        read: ReadShape,
    ) -> Result<Records, LogError> {
        let mut from = start;
        let mut read = read;
        // Record-less batches read so far: a segment the cleaner emptied keeps its last
        // batch's header (no records) so that its offsets stay covered. An answer of such
        // batches alone carries no record, and librdkafka takes an answer without a record
        // for a batch too large for its fetch size: it doubles that per answer and fails
        // ("might be too large to fetch") after a few emptied segments in a row (measured:
        // bench/cleaner, 10,000,000 updates, 17 emptied 64 MiB segments). Kafka's cleaner
        // leaves those segments empty and its read skips them; here the read goes on into
        // the next segment. Rare (only before a cleaned log's first kept record): the copy
        // costs nothing on the usual path.
        let mut empties: Option<BytesMut> = None;
        while from < limit {
            let Some(plan) = self.plan_read(from) else {
                break;
            };
            let found = self.read_segment(&plan, from, limit, read).await?;
            if let Some(records) = found {
                let Records::Memory(records) = records else {
                    // A region: never after record-less batches (they turn regions off).
                    assert!(empties.is_none(), "an answer is assembled in memory");
                    return Ok(records);
                };
                let record_less = !records.is_empty()
                    && records.len() < read.max_bytes
                    && plan.next_segment_base.is_some()
                    && batch::HeaderWalker::new(&records).all(|(p, _)| {
                        record_batch::parse_header(&records[p..])
                            .is_ok_and(|h| h.records_count == 0)
                    });
                match (record_less, plan.next_segment_base) {
                    (true, Some(next)) => {
                        read.max_bytes -= records.len();
                        read.region_ok = false;
                        empties
                            .get_or_insert_with(BytesMut::new)
                            .extend_from_slice(&records);
                        from = next;
                        continue;
                    }
                    _ => {
                        return Ok(Records::Memory(match empties {
                            Some(mut e) => {
                                e.extend_from_slice(&records);
                                e.freeze()
                            }
                            None => records,
                        }))
                    }
                }
            }
            match plan.next_segment_base {
                Some(next) => from = next,
                None => break,
            }
        }
        Ok(Records::Memory(
            empties.map_or_else(Bytes::new, BytesMut::freeze),
        ))
    }

    /// Where to look for `offset`: its segment, the index position to scan
    /// from and the readable end of that segment.
    fn plan_read(&self, offset: i64) -> Option<ReadPlan> {
        let st = self.state.borrow();
        let (_, segment) = st.segments.range(..=offset).next_back()?;
        let next_segment_base = st
            .segments
            .range(segment.base_offset + 1..)
            .next()
            .map(|(&b, _)| b);
        Some(ReadPlan {
            scan_from: segment.index_lookup(offset),
            readable_size: readable_size(&st, segment),
            segment: segment.clone(),
            next_segment_base,
        })
    }

    async fn read_segment(
        &self,
        plan: &ReadPlan,
        start: i64,
        limit: i64,
        read: ReadShape,
    ) -> Result<Option<Records>, LogError> {
        let file = plan.segment.file().await?;
        let path = &plan.segment.path;
        let scan_extra = if read.max_bytes <= MAX_SPECULATIVE_READ_BYTES {
            read.max_bytes as u64
        } else {
            0
        };
        let cached = if read.region_ok && scan_extra == 0 {
            locate_cached(&file, path, plan, start)?
        } else {
            None
        };
        let found = match cached {
            Some(found) => Some(found),
            None => {
                self.locate(&file, path, plan, scan_extra, |h| h.last_offset() >= start)
                    .await?
            }
        };
        let Some(found) = found else {
            return Ok(None);
        };
        let first = found.header;
        if first.last_offset() >= limit || (first.size > read.max_bytes && !read.min_one) {
            return Ok(Some(Records::Memory(Bytes::new())));
        }
        let available = (plan.readable_size - found.position) as usize;
        let len = read.max_bytes.max(first.size).min(available);
        // The scan read usually holds the answer already; read again only
        // for what it does not cover.
        let covered = found.chunk.len() - found.chunk_offset >= len;
        if read.region_ok && !covered {
            if let Some(region) = self.region(plan, &file, &found, len, limit)? {
                return Ok(Some(Records::File(region)));
            }
            // Past the page-cache window, or pages still being read ahead (the kernel counts
            // them as cached, but `RWF_NOWAIT` refuses them): bring the pages in off the
            // shard's thread (it never waits for the disk) and send them as a region. Read
            // into memory, the bytes were copied three times (into glommio's buffer, into the
            // answer, into the socket).
            if walk_start(&plan.segment, &found, len, limit).is_some() {
                let send_fd = plan.segment.send_fd(&file)?;
                read_in(&file, path, send_fd, found.position, len).await?;
                if let Some(region) = self.region(plan, &file, &found, len, limit)? {
                    return Ok(Some(Records::File(region)));
                }
            }
        }
        let data = if covered {
            found
                .chunk
                .slice(found.chunk_offset..found.chunk_offset + len)
        } else {
            read_exact(&file, path, found.position, len).await?
        };
        let end = batch::HeaderWalker::new(&data)
            .take_while(|(_, h)| h.last_offset() < limit)
            .last()
            .map_or(0, |(p, h)| p + h.size);
        assert!(end >= first.size, "the first batch is readable");
        Ok(Some(Records::Memory(data.slice(..end))))
    }

    /// `found`'s batches as a region of the segment file, if the page cache holds them all
    /// (see [`Log::read_for_send`]).
    fn region(
        &self,
        plan: &ReadPlan,
        file: &glommio::io::BufferedFile,
        found: &Located,
        len: usize,
        limit: i64,
    ) -> Result<Option<FileRegion>, LogError> {
        let Some(end) = region_end(file, &plan.segment, found, len, limit)? else {
            return Ok(None);
        };
        if !is_cached(file, found.position, end) {
            return Ok(None);
        }
        let Some(fd) = plan.segment.send_fd(file)? else {
            return Ok(None);
        };
        // A segment no append of this process touched (loaded at start) gets its mark here,
        // so that what a consumer reads back from it leaves the page cache again.
        let mark = if crate::page_cache::window_bytes() > 0 {
            plan.segment.page_cache_mark(file)?
        } else {
            plan.segment.existing_page_cache_mark()
        };
        Ok(Some(sent_region(fd, mark, found.position, end)))
    }

    /// Scans batch headers from the index position to the first batch that
    /// satisfies `wanted` (for reads: the batch holding the start offset);
    /// `None` if the segment's readable part has none. The first read also
    /// covers `scan_extra` bytes past the index interval, so that it usually
    /// contains the data to return as well.
    pub(super) async fn locate(
        &self,
        file: &glommio::io::BufferedFile,
        path: &Path,
        plan: &ReadPlan,
        scan_extra: u64,
        wanted: impl Fn(&BatchHeader) -> bool,
    ) -> Result<Option<Located>, LogError> {
        let scan_len =
            MIN_SCAN_READ_BYTES.max(2 * u64::from(self.config.borrow().index_interval_bytes));
        let mut chunk_len = scan_len + scan_extra;
        let mut pos = plan.scan_from;
        while pos < plan.readable_size {
            let len = chunk_len.min(plan.readable_size - pos) as usize;
            let chunk = read_exact(file, path, pos, len).await?;
            let mut off = 0usize;
            while off + RECORD_BATCH_OVERHEAD <= chunk.len() {
                let header = parse_header(&chunk[off..]).map_err(|e| LogError::Corrupt {
                    path: path.to_path_buf(),
                    position: pos + off as u64,
                    reason: e.to_string(),
                })?;
                if wanted(&header) {
                    return Ok(Some(Located {
                        position: pos + off as u64,
                        header,
                        chunk,
                        chunk_offset: off,
                    }));
                }
                off += header.size;
            }
            if off == 0 {
                return Err(LogError::Corrupt {
                    path: path.to_path_buf(),
                    position: pos,
                    reason: "readable data ends inside a batch header".into(),
                });
            }
            pos += off as u64;
            chunk_len = scan_len;
        }
        Ok(None)
    }

    /// Estimate of the bytes readable from `offset` to the readable end, for
    /// fetch `min_bytes` accounting. No I/O; rounds up to the index interval.
    pub fn readable_bytes_from(&self, offset: i64) -> u64 {
        let st = self.state.borrow();
        if offset >= st.readable_end.offset {
            return 0;
        }
        let Some((&base, first)) = st.segments.range(..=offset).next_back() else {
            return 0;
        };
        let skipped = first.index_lookup(offset);
        let total: u64 = st
            .segments
            .range(base..)
            .map(|(_, s)| readable_size(&st, s))
            .sum();
        total.saturating_sub(skipped)
    }
}

/// A tail-cache read of at least this many bytes is sent as the file range its appends were
/// written to, from the page cache (`sendfile`: no copy), rather than as the appends' bytes
/// in memory (`sendmsg`: the kernel copies them into the socket). See [`tail_region`].
const MIN_TAIL_REGION_BYTES: usize = 64 * 1024;

/// `span` of the tail cache as a region of the segment file its appends were written to, when
/// they lie back to back in one segment whose send descriptor is at hand and the page cache
/// holds every page (it does unless memory pressure evicted them: the appends are the newest,
/// inside the page-cache window). The cache's bytes would be copied into the socket by
/// `sendmsg`; `sendfile` takes references to the page-cache pages instead (ARCHITECTURE.md,
/// "Newest data sent from the page cache"). Its readable end bounds `span`, so the bytes are
/// written.
fn tail_region(st: &LogState, span: &TailSpan) -> Option<FileRegion> {
    let spot = st.tail_cache.file_range(span)?;
    appended_region(st, spot, span.len())
}

/// `len` bytes appended by this process at `spot` as a region to send, when the segment is
/// still there, its send descriptor is at hand and the page cache holds every page.
fn appended_region(st: &LogState, spot: FileSpot, len: usize) -> Option<FileRegion> {
    let segment = st.segments.get(&spot.segment_base)?;
    // Below the readable end, so written: inside the segment's readable part.
    debug_assert!(spot.position + len as u64 <= readable_size(st, segment));
    let fd = segment.send_fd_now()?;
    if !fd_is_cached(fd.as_raw_fd(), spot.position, len) {
        return None;
    }
    let mark = segment.existing_page_cache_mark();
    Some(sent_region(fd, mark, spot.position, len))
}

/// A read behind the tail cache's bytes as a region, found from the places of recent appends
/// ([`TailCache::recent_run`](crate::tail_cache::TailCache::recent_run)) instead of by reading
/// batch headers ([`locate_cached`], [`region_end`]): when the read would be a region anyway
/// (larger than a speculative read, as in [`Log::read_segment`]), the place names its first
/// batch, and the page cache holds every page. Anything else goes to the files as before.
fn recent_region(st: &LogState, start: i64, limit: i64, read: ReadShape) -> Option<FileRegion> {
    if !read.region_ok || read.max_bytes <= MAX_SPECULATIVE_READ_BYTES {
        return None;
    }
    let (spot, len) = st
        .tail_cache
        .recent_run(start, limit, read.max_bytes, read.min_one)?;
    appended_region(st, spot, len)
}

/// `[position, position + len)` of a segment's send descriptor `fd` as a region to send:
/// counted (`io_copies` `region_bytes`), and told to the page-cache window through the file's
/// `mark`, which drops what a consumer reads back from below the window again.
fn sent_region(
    fd: Arc<OwnedFd>,
    mark: Option<Rc<FileMark>>,
    position: u64,
    len: usize,
) -> FileRegion {
    crate::file_io::copies::add_region(len);
    if let Some(mark) = mark {
        crate::page_cache::sent(&mark, position, position + len as u64);
    }
    FileRegion::new(fd, position, len)
}

/// What a read may return: at most `max_bytes` (but one whole batch if `min_one`), as a file
/// region when `region_ok`.
#[derive(Clone, Copy)]
struct ReadShape {
    max_bytes: usize,
    min_one: bool,
    region_ok: bool,
    /// A tail-cache read spanning appends may answer their pieces ([`Records::Pieces`]).
    pieces_ok: bool,
}

impl ReadShape {
    /// A read for a response: a file region where the page cache holds it, the tail cache's
    /// pieces where a read spans appends.
    fn for_send(max_bytes: usize, min_one: bool) -> Self {
        Self {
            max_bytes,
            min_one,
            region_ok: true,
            pieces_ok: true,
        }
    }
}

/// For a read that may be answered as a region: finds the batch holding `start` by reading
/// the batch headers from the index position out of the page cache, one `preadv2(RWF_NOWAIT)`
/// of a header each (Kafka's `searchForOffsetWithSize` also reads only headers), where
/// [`Log::locate`] copies a 16 KiB scan chunk. The index entry in front of a read is usually
/// the previous batch's, so a 128 KiB batch made `locate` read two chunks: 32 KiB copied per
/// partition per fetch, 3 % of the bytes sent, and `_copy_to_iter` 14 % of the broker's
/// samples reading past the page-cache window (ARCHITECTURE.md, issue 17). The found batch
/// carries no scan chunk, so the answer is a region or an exact read. `None` (scan the
/// ordinary way) when a header is not cached, the readable part ends first or the walk
/// takes more than [`MAX_LOCATE_HEADER_READS`] headers.
fn locate_cached(
    file: &glommio::io::BufferedFile,
    path: &Path,
    plan: &ReadPlan,
    start: i64,
) -> Result<Option<Located>, LogError> {
    let mut bytes = [0u8; RECORD_BATCH_OVERHEAD];
    let mut pos = plan.scan_from;
    for _ in 0..MAX_LOCATE_HEADER_READS {
        if pos + RECORD_BATCH_OVERHEAD as u64 > plan.readable_size
            || !read_cached(file, path, &mut bytes, pos)?
        {
            return Ok(None);
        }
        let header = parse_header(&bytes).map_err(|e| LogError::Corrupt {
            path: path.to_path_buf(),
            position: pos,
            reason: e.to_string(),
        })?;
        if header.last_offset() >= start {
            return Ok(Some(Located {
                position: pos,
                header,
                chunk: Bytes::new(),
                chunk_offset: 0,
            }));
        }
        pos += header.size as u64;
    }
    Ok(None)
}

/// Where a region answer from `found` ends: the end of its last whole batch within `len`
/// bytes and below `limit` (whole batches, as the copying path answers). The offset index
/// names a boundary near the end (an entry per `index.interval.bytes`); the batch headers
/// past it, or past the scan read without one, are read one by one from the page cache.
/// `None` (read the ordinary way) when one is not cached or the batches are so small that
/// walking them costs more than copying.
fn region_end(
    file: &glommio::io::BufferedFile,
    segment: &LogSegment,
    found: &Located,
    len: usize,
    limit: i64,
) -> Result<Option<usize>, LogError> {
    let path = &segment.path;
    let Some(mut end) = walk_start(segment, found, len, limit) else {
        return Ok(None);
    };
    let mut header = [0u8; RECORD_BATCH_OVERHEAD];
    let mut reads = 0;
    while end + RECORD_BATCH_OVERHEAD <= len {
        let in_chunk = found.chunk_offset + end;
        let bytes: &[u8] = if in_chunk + RECORD_BATCH_OVERHEAD <= found.chunk.len() {
            &found.chunk[in_chunk..]
        } else {
            reads += 1;
            if reads > MAX_REGION_HEADER_READS
                || !read_cached(file, path, &mut header, found.position + end as u64)?
            {
                return Ok(None);
            }
            &header
        };
        let next = parse_header(bytes).map_err(|e| LogError::Corrupt {
            path: path.to_path_buf(),
            position: found.position + end as u64,
            reason: e.to_string(),
        })?;
        if next.last_offset() >= limit || end + next.size > len {
            break;
        }
        end += next.size;
    }
    Ok(Some(end))
}

/// Where [`region_end`]'s walk of batch headers starts, relative to `found`: the farthest
/// boundary the offset index names within the read, or else the first batch's end. The next
/// entry past an indexed boundary is beyond the read or at the limit, so the walk from there
/// covers at most an index interval (and a batch). `None` when no boundary is indexed and the
/// batches are so small that walking them costs more than copying.
fn walk_start(segment: &LogSegment, found: &Located, len: usize, limit: i64) -> Option<usize> {
    match indexed_boundary(segment, found, len, limit) {
        Some(position) => Some((position - found.position) as usize),
        None if found.header.size.saturating_mul(MAX_REGION_HEADER_READS) < len => None,
        None => Some(found.header.size),
    }
}

/// The farthest batch boundary past `found`'s first batch that the segment's offset index
/// names within `len` bytes of it and below `limit` (a file position), if any.
fn indexed_boundary(segment: &LogSegment, found: &Located, len: usize, limit: i64) -> Option<u64> {
    let after = u32::try_from(found.position + found.header.size as u64).ok()?;
    let up_to = u32::try_from(found.position + len as u64).ok()?;
    let index = segment.offset_index.borrow();
    let position = index.boundary_within(after, up_to, segment.relative(limit))?;
    Some(u64::from(position))
}

/// The batch a read starts with, and the scan read it was found in.
pub(super) struct Located {
    pub(super) position: u64,
    pub(super) header: BatchHeader,
    pub(super) chunk: Bytes,
    /// Where the batch starts in `chunk` (its header is inside it).
    pub(super) chunk_offset: usize,
}

pub(super) struct ReadPlan {
    pub(super) segment: Rc<LogSegment>,
    pub(super) scan_from: u64,
    pub(super) readable_size: u64,
    pub(super) next_segment_base: Option<i64>,
}

/// What a [`WaitFor`] waits on.
#[derive(Clone, Copy)]
pub(super) enum WaitTarget {
    ReadableEnd,
    HighWatermark,
}

/// Future of `Log::wait_for_append` and `Log::wait_for_high_watermark`: resolves once the
/// target offset passes `beyond`, the log stops, or (if `truncations` is set) a truncation
/// happened since. Unregisters itself when dropped.
pub(super) struct WaitFor<'a> {
    log: &'a Log,
    target: WaitTarget,
    beyond: i64,
    truncations: Option<u64>,
    id: Option<u64>,
}

impl<'a> WaitFor<'a> {
    pub(super) fn new(
        log: &'a Log,
        target: WaitTarget,
        beyond: i64,
        truncations: Option<u64>,
    ) -> Self {
        Self {
            log,
            target,
            beyond,
            truncations,
            id: None,
        }
    }

    fn waiters(&self) -> &'a std::cell::RefCell<crate::waiters::Waiters> {
        match self.target {
            WaitTarget::ReadableEnd => &self.log.waiters,
            WaitTarget::HighWatermark => &self.log.hw_waiters,
        }
    }

    fn done(&self) -> bool {
        let st = self.log.state.borrow();
        let value = match self.target {
            WaitTarget::ReadableEnd => st.readable_end.offset,
            WaitTarget::HighWatermark => st.high_watermark,
        };
        value > self.beyond || self.truncations.is_some_and(|t| t != st.truncations)
    }
}

impl Future for WaitFor<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.done() || self.log.stopped() {
            if let Some(id) = self.id.take() {
                self.waiters().borrow_mut().remove(id);
            }
            return Poll::Ready(());
        }
        let beyond = self.beyond;
        let waiters = self.waiters();
        waiters
            .borrow_mut()
            .register(&mut self.id, beyond, cx.waker());
        Poll::Pending
    }
}

impl Drop for WaitFor<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.waiters().borrow_mut().remove(id);
        }
    }
}
