//! Bounded in-memory copy of the newest appends, so that consumers keeping
//! up with the log are served without I/O. Each append's place in its segment file is kept
//! beside it, so that a large read can be sent from the page cache instead (`Log::read_for_send`),
//! and kept a while longer than its bytes, so that a read a little behind the cache finds its
//! batches in the files without reading their headers ([`TailCache::recent_run`]).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use sluice_protocol::FrameHold;

use crate::batch::{parse_header, HeaderWalker};
use crate::log::Records;

/// A read spanning appends is answered as one piece per append only while the pieces average
/// at least this many bytes; smaller ones are joined by a copy. At 1,000 partitions (appends of
/// ~1-4 KiB) sending every piece as it is showed no gain (`bench/results/2026-12-04-tail-pieces-ab.md`).
const MIN_MEAN_PIECE_BYTES: usize = 8 * 1024;

/// Places of recent appends kept per byte of the cache's bound (see [`RecentAppend`]), within
/// [`RECENT_APPENDS_MIN`] and [`RECENT_APPENDS_MAX`] a partition: ~2.5 MiB a shard for the
/// default 32 MiB of tail caches however they are shared (65,536 places of 40 bytes), 16 a
/// partition from 4,096 partitions on.
const BYTES_PER_RECENT_APPEND: usize = 512;
const RECENT_APPENDS_MIN: usize = 16;
const RECENT_APPENDS_MAX: usize = 256;

/// Where an append's bytes were written: the segment (its base offset) and the position in
/// its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileSpot {
    pub segment_base: i64,
    pub position: u64,
}

/// One append's batches, offsets `[base_offset, next_offset)`.
struct Chunk {
    base_offset: i64,
    next_offset: i64,
    data: Bytes,
    /// Where `data` starts in its segment file.
    spot: FileSpot,
    /// `data` is a piece of this request frame (a produce's records, appended uncopied): the
    /// frame stays counted in `sluice_protocol::frame_bytes_held` while the chunk is here.
    _frame_hold: Option<Arc<FrameHold>>,
}

/// Where a recent append of one batch was written, kept after the cache dropped its bytes:
/// with 1,000 partitions a consumer's position is often a few appends behind a partition's
/// share of the cache, and each such read had looked for its first batch and its end by
/// reading batch headers from the page cache, a `preadv2` each (ARCHITECTURE.md, "Recent
/// appends' places kept past the tail cache"). Appends of several batches (a follower's) are
/// not kept: a read cannot start inside one without its headers.
#[derive(Clone, Copy, Debug)]
struct RecentAppend {
    base_offset: i64,
    next_offset: i64,
    spot: FileSpot,
    len: usize,
}

/// Run of the most recent appends, at most `limit` bytes.
/// Invariant: chunks are in offset order without overlap and end at the log end
/// offset. They are back to back except where a follower append skipped offsets
/// (a compacted leader's gap): a read starting inside such a gap misses the cache
/// and goes to the files, which answer with the next batch.
pub(crate) struct TailCache {
    chunks: VecDeque<Chunk>,
    bytes: usize,
    limit: usize,
    /// The places of the newest one-batch appends, in offset order, at most `recent_max`;
    /// they outlive the chunks and are dropped with them by `clear` and `truncate_to`.
    recent: VecDeque<RecentAppend>,
    recent_max: usize,
}

/// Where a read out of the cache ends: chunk index and byte within it.
#[derive(Clone, Copy)]
struct Cursor {
    chunk: usize,
    pos: usize,
}

/// The whole batches a read takes out of the cache, `len` bytes from `begin` to `end`: sent as
/// bytes ([`TailCache::records`]) or as the file range they were written to
/// ([`TailCache::file_range`]).
pub(crate) struct TailSpan {
    begin: Cursor,
    end: Cursor,
    len: usize,
}

impl TailSpan {
    pub fn len(&self) -> usize {
        self.len
    }
}

impl TailCache {
    pub fn new(limit: usize) -> Self {
        Self {
            chunks: VecDeque::new(),
            bytes: 0,
            limit,
            recent: VecDeque::new(),
            recent_max: recent_appends_max(limit),
        }
    }

    /// Records an append (already offset-patched). An append larger than
    /// the whole cache empties it, since the cache must stay contiguous.
    pub fn push(
        &mut self,
        base_offset: i64,
        next_offset: i64,
        data: Bytes,
        frame_hold: Option<Arc<FrameHold>>,
        spot: FileSpot,
    ) {
        if let Some(last) = self.chunks.back() {
            assert!(
                last.next_offset <= base_offset,
                "tail cache chunks must follow on in offset order"
            );
        }
        self.note_recent(base_offset, next_offset, &data, spot);
        if data.len() > self.limit {
            self.chunks.clear();
            self.bytes = 0;
            return;
        }
        while self.bytes + data.len() > self.limit {
            let Some(old) = self.chunks.pop_front() else {
                break;
            };
            self.bytes -= old.data.len();
        }
        self.bytes += data.len();
        self.chunks.push_back(Chunk {
            base_offset,
            next_offset,
            data,
            spot,
            _frame_hold: frame_hold,
        });
    }

    /// Keeps the place of a one-batch append, forgetting the oldest past `recent_max`.
    fn note_recent(&mut self, base_offset: i64, next_offset: i64, data: &[u8], spot: FileSpot) {
        if self.recent_max == 0 || !parse_header(data).is_ok_and(|h| h.size == data.len()) {
            return;
        }
        if let Some(last) = self.recent.back() {
            assert!(
                last.next_offset <= base_offset,
                "recent appends must follow on in offset order"
            );
        }
        if self.recent.len() >= self.recent_max {
            self.recent.pop_front();
        }
        self.recent.push_back(RecentAppend {
            base_offset,
            next_offset,
            spot,
            len: data.len(),
        });
    }

    /// Changes the bound, dropping the oldest chunks (and places) that no longer fit.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
        while self.bytes > self.limit {
            let Some(old) = self.chunks.pop_front() else {
                break;
            };
            self.bytes -= old.data.len();
        }
        self.recent_max = recent_appends_max(limit);
        let excess = self.recent.len().saturating_sub(self.recent_max);
        self.recent.drain(..excess);
        if self.recent.capacity() > 2 * self.recent_max.max(RECENT_APPENDS_MIN) {
            self.recent.shrink_to_fit();
        }
    }

    /// The bound in bytes; 0 disables the cache.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Forgets every append, bytes and places (the files under them changed).
    pub fn clear(&mut self) {
        self.chunks.clear();
        self.bytes = 0;
        self.recent.clear();
    }

    /// The log was truncated to `offset` (whole batches: the one holding it went too): drops
    /// the chunks from it on and cuts a chunk that straddles it after its last batch below it.
    pub fn truncate_to(&mut self, offset: i64) {
        // A kept place is of one batch: one reaching `offset` went whole.
        while self.recent.back().is_some_and(|r| r.next_offset > offset) {
            self.recent.pop_back();
        }
        while let Some(last) = self.chunks.back_mut() {
            if last.next_offset <= offset {
                return;
            }
            let keep = HeaderWalker::new(&last.data)
                .take_while(|(_, h)| h.last_offset() < offset)
                .last()
                .map(|(pos, h)| (pos + h.size, h.last_offset() + 1));
            match keep {
                Some((len, next_offset)) => {
                    self.bytes -= last.data.len() - len;
                    last.data.truncate(len);
                    last.next_offset = next_offset;
                    return;
                }
                None => {
                    self.bytes -= last.data.len();
                    self.chunks.pop_back();
                }
            }
        }
    }

    /// Whole batches from the one holding `start` while their last offset is
    /// below `limit_offset`, at most `max_bytes` (but one batch anyway when
    /// `min_one`). `None` when the cache does not reach back to `start`. With `pieces_ok`, a
    /// read spanning appends may be [`Records::Pieces`]; otherwise it is always
    /// [`Records::Memory`].
    #[cfg(test)]
    pub fn read(
        &self,
        start: i64,
        limit_offset: i64,
        max_bytes: usize,
        min_one: bool,
        pieces_ok: bool,
    ) -> Option<Records> {
        let span = self.span(start, limit_offset, max_bytes, min_one)?;
        Some(self.records(&span, pieces_ok))
    }

    /// The batches [`TailCache::read`] would answer, not yet taken out. `None` when the cache
    /// does not reach back to `start`.
    pub fn span(
        &self,
        start: i64,
        limit_offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Option<TailSpan> {
        let first = self.chunks.partition_point(|c| c.next_offset <= start);
        let chunk = self.chunks.get(first)?;
        if chunk.base_offset > start {
            return None;
        }
        let begin = Cursor {
            chunk: first,
            pos: self.find_batch(first, start)?,
        };
        let (end, len) = self.extend(begin, limit_offset, max_bytes, min_one);
        Some(TailSpan { begin, end, len })
    }

    /// `span`'s bytes, with `pieces_ok` as in [`TailCache::read`].
    pub fn records(&self, span: &TailSpan, pieces_ok: bool) -> Records {
        self.records_between(span.begin, span.end, pieces_ok)
    }

    /// Where `span`'s bytes start in the segment files, when its appends were written back to
    /// back in one segment (so that the span is one range of one file); `None` when they were
    /// not (a span across a roll, or across a follower's truncation).
    pub fn file_range(&self, span: &TailSpan) -> Option<FileSpot> {
        let first = &self.chunks[span.begin.chunk];
        let mut next = first.spot.position + first.data.len() as u64;
        for chunk in self.chunks.range(span.begin.chunk + 1..=span.end.chunk) {
            if chunk.spot.segment_base != first.spot.segment_base || chunk.spot.position != next {
                return None;
            }
            next += chunk.data.len() as u64;
        }
        Some(FileSpot {
            segment_base: first.spot.segment_base,
            position: first.spot.position + span.begin.pos as u64,
        })
    }

    /// Where the batches from the one holding `start` lie in the segment files, from the places
    /// of recent appends (which outlive their bytes): `(place, bytes)` of whole batches, back to
    /// back in one segment, their last offsets below `limit_offset`, at most `max_bytes` (but one
    /// batch anyway when `min_one`). `None` when no kept place holds `start` (an append of
    /// several batches, or too old) or the first batch does not fit: the read goes to the files.
    pub fn recent_run(
        &self,
        start: i64,
        limit_offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Option<(FileSpot, usize)> {
        let first = self.recent.partition_point(|r| r.next_offset <= start);
        let head = self.recent.get(first)?;
        let fits = head.len <= max_bytes || min_one;
        if head.base_offset > start || head.next_offset > limit_offset || !fits {
            return None;
        }
        let mut len = head.len;
        let mut next_offset = head.next_offset;
        for r in self.recent.range(first + 1..) {
            let follows = r.base_offset == next_offset
                && r.spot.segment_base == head.spot.segment_base
                && r.spot.position == head.spot.position + len as u64;
            if !follows || r.next_offset > limit_offset || len + r.len > max_bytes {
                break;
            }
            len += r.len;
            next_offset = r.next_offset;
        }
        Some((head.spot, len))
    }

    /// Byte position in chunk `i` of the batch holding `offset`.
    fn find_batch(&self, i: usize, offset: i64) -> Option<usize> {
        HeaderWalker::new(&self.chunks[i].data)
            .find(|(_, h)| h.last_offset() >= offset)
            .map(|(pos, _)| pos)
    }

    /// Advances from `begin` over whole batches within the limits; the end and the bytes taken.
    fn extend(
        &self,
        begin: Cursor,
        limit_offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> (Cursor, usize) {
        let mut end = begin;
        let mut taken = 0usize;
        for i in begin.chunk..self.chunks.len() {
            let from = if i == begin.chunk { begin.pos } else { 0 };
            for (p, h) in HeaderWalker::new(&self.chunks[i].data[from..]) {
                let fits = taken + h.size <= max_bytes || (taken == 0 && min_one);
                if h.last_offset() >= limit_offset || !fits {
                    return (end, taken);
                }
                taken += h.size;
                end = Cursor {
                    chunk: i,
                    pos: from + p + h.size,
                };
            }
        }
        (end, taken)
    }

    /// The bytes between two cursors: a zero-copy slice within one chunk. A range spanning
    /// chunks is a zero-copy slice of each when `pieces_ok` and they are large enough to be
    /// worth it (`MIN_MEAN_PIECE_BYTES`), else one copy: joining them was ~10 % of the broker's
    /// CPU at max rate with consumers keeping up (`bench/ab/run`, 2026-12-04).
    fn records_between(&self, begin: Cursor, end: Cursor, pieces_ok: bool) -> Records {
        if begin.chunk == end.chunk {
            return Records::Memory(self.chunks[begin.chunk].data.slice(begin.pos..end.pos));
        }
        // Each chunk's byte range; a `Bytes` handle is made only for a piece that is sent.
        let ranges = (begin.chunk..=end.chunk).map(|i| {
            let data = &self.chunks[i].data;
            let from = if i == begin.chunk { begin.pos } else { 0 };
            let to = if i == end.chunk { end.pos } else { data.len() };
            (data, from..to)
        });
        let count = end.chunk - begin.chunk + 1;
        let len: usize = ranges.clone().map(|(_, range)| range.len()).sum();
        if pieces_ok && len >= count * MIN_MEAN_PIECE_BYTES {
            return Records::Pieces(ranges.map(|(data, range)| data.slice(range)).collect());
        }
        let mut out = BytesMut::with_capacity(len);
        for (data, range) in ranges {
            out.extend_from_slice(&data[range]);
        }
        crate::file_io::copies::add_tail_join_copy(len);
        Records::Memory(out.freeze())
    }
}

/// Recent appends' places kept for a cache bound of `limit` bytes (none when the cache is off).
fn recent_appends_max(limit: usize) -> usize {
    if limit == 0 {
        return 0;
    }
    (limit / BYTES_PER_RECENT_APPEND).clamp(RECENT_APPENDS_MIN, RECENT_APPENDS_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::testing::make_batch;
    use crate::file_io::copies;

    /// A read without pieces, as bytes.
    fn joined(c: &TailCache, start: i64, limit: i64, max: usize, min_one: bool) -> Option<Bytes> {
        match c.read(start, limit, max, min_one, false)? {
            Records::Memory(b) => Some(b),
            other => panic!("a read without pieces answered {other:?}"),
        }
    }

    /// Pushes an append written right after the last one, in segment 0.
    fn append(c: &mut TailCache, base: i64, next: i64, data: Bytes) {
        let position = c
            .chunks
            .back()
            .map_or(0, |l| l.spot.position + l.data.len() as u64);
        let spot = FileSpot {
            segment_base: 0,
            position,
        };
        c.push(base, next, data, None, spot);
    }

    fn chunk(base: i64, sizes: &[(i32, usize)]) -> (i64, Bytes) {
        let mut v = Vec::new();
        let mut o = base;
        for &(n, p) in sizes {
            v.extend(make_batch(o, n, p, 0));
            o += i64::from(n);
        }
        (o, Bytes::from(v))
    }

    #[test]
    fn serves_covered_ranges_and_evicts() {
        let mut c = TailCache::new(1000);
        let (n1, a) = chunk(0, &[(2, 39), (3, 39)]); // 2 x 100 bytes
        append(&mut c, 0, n1, a.clone());
        let (n2, b) = chunk(n1, &[(1, 139)]); // 200 bytes
        append(&mut c, n1, n2, b.clone());
        assert_eq!(joined(&c, 1, 100, 1000, false).unwrap().len(), 400);
        assert_eq!(joined(&c, 2, 100, 150, false).unwrap(), a.slice(100..200));
        assert_eq!(joined(&c, 2, 100, 0, false).unwrap().len(), 0);
        assert_eq!(joined(&c, 2, 100, 0, true).unwrap().len(), 100);
        assert_eq!(joined(&c, 0, 5, 1000, false).unwrap(), a);
        assert_eq!(joined(&c, 5, 6, 1000, false).unwrap(), b);
        // Evict the first chunk.
        let (n3, d) = chunk(n2, &[(1, 639)]);
        append(&mut c, n2, n3, d);
        assert!(joined(&c, 0, 100, 1000, false).is_none());
        assert_eq!(joined(&c, 5, 100, 1000, false).unwrap().len(), 900);
    }

    #[test]
    fn truncation_cuts_whole_batches_and_pushes_follow_on() {
        let mut c = TailCache::new(1000);
        let (n1, a) = chunk(0, &[(2, 39), (3, 39)]); // offsets 0..2, 2..5
        append(&mut c, 0, n1, a.clone());
        let (n2, b) = chunk(n1, &[(1, 139)]); // offset 5
        append(&mut c, n1, n2, b);
        // Offset 3 lies in the second batch of the first chunk: that batch and the second
        // chunk go.
        c.truncate_to(3);
        assert_eq!(c.bytes, 100);
        assert_eq!(joined(&c, 0, 100, 1000, false).unwrap(), a.slice(..100));
        assert!(joined(&c, 2, 100, 1000, false).is_none());
        // Appends continue from offset 2; a follower's gap is allowed and misses the cache.
        let (n3, d) = chunk(2, &[(1, 39)]);
        append(&mut c, 2, n3, d.clone());
        let (_, e) = chunk(10, &[(1, 39)]);
        append(&mut c, 10, 11, e.clone());
        assert_eq!(joined(&c, 2, 100, 1000, false).unwrap().len(), 200);
        assert!(joined(&c, 5, 100, 1000, false).is_none());
        assert_eq!(joined(&c, 10, 100, 1000, false).unwrap(), e);
        c.truncate_to(0);
        assert_eq!(c.bytes, 0);
        assert!(joined(&c, 0, 100, 1000, false).is_none());
    }

    #[test]
    fn a_read_spanning_appends_is_their_pieces_when_large() {
        let mut c = TailCache::new(1 << 20);
        let (n1, a) = chunk(0, &[(1, 9_939), (1, 9_939)]); // 2 x 10,000 bytes
        append(&mut c, 0, n1, a.clone());
        let (n2, b) = chunk(n1, &[(1, 9_939)]);
        append(&mut c, n1, n2, b.clone());
        let (n3, d) = chunk(n2, &[(1, 9_939)]);
        append(&mut c, n2, n3, d.clone());
        // From the second batch of the first append to the end: three uncopied pieces, the
        // same bytes a joined read gives.
        let before = copies::snapshot();
        let pieces = c.read(1, 100, 1 << 20, false, true).unwrap();
        assert_eq!(copies::snapshot().since(&before).tail_join_copy_bytes, 0);
        assert_eq!(
            pieces,
            Records::Pieces(vec![a.slice(10_000..), b.clone(), d.clone()])
        );
        assert_eq!(pieces.len(), 30_000);
        let before = copies::snapshot();
        let whole = joined(&c, 1, 100, 1 << 20, false).unwrap();
        assert_eq!(
            copies::snapshot().since(&before).tail_join_copy_bytes,
            30_000
        );
        assert_eq!(&whole[..10_000], &a[10_000..]);
        assert_eq!(&whole[10_000..20_000], &b[..]);
        assert_eq!(&whole[20_000..], &d[..]);
        // Not past `max_bytes`: the pieces end with the last whole batch that fits.
        assert_eq!(
            c.read(1, 100, 25_000, false, true).unwrap(),
            Records::Pieces(vec![a.slice(10_000..), b.clone()])
        );
        // Within one append: one slice.
        assert_eq!(
            c.read(0, n1, 1 << 20, false, true).unwrap(),
            Records::Memory(a.clone())
        );
        // Pieces averaging under MIN_MEAN_PIECE_BYTES are joined.
        let (n4, e) = chunk(n3, &[(1, 39)]); // 100 bytes
        append(&mut c, n3, n4, e.clone());
        let (n5, f) = chunk(n4, &[(1, 39)]);
        append(&mut c, n4, n5, f.clone());
        let small = c.read(n3, 100, 1 << 20, false, true).unwrap();
        assert_eq!(
            small,
            Records::Memory(Bytes::from([&e[..], &f[..]].concat()))
        );
    }

    #[test]
    fn recent_appends_places_outlive_their_bytes() {
        // A 1,000-byte cache keeps 16 places (the minimum): appends of 300 bytes leave the
        // bytes of the last three, the places of the last sixteen.
        let mut c = TailCache::new(1000);
        let mut next = 0;
        for _ in 0..20 {
            let (n, d) = chunk(next, &[(2, 239)]);
            append(&mut c, next, n, d);
            next = n;
        }
        assert_eq!(c.recent.len(), RECENT_APPENDS_MIN);
        // Offsets 0..8 were forgotten; 8 is the oldest kept (append 4, at byte 1,200).
        assert!(c.recent_run(7, next, 1 << 20, false).is_none());
        assert!(
            joined(&c, 8, next, 1 << 20, false).is_none(),
            "its bytes are gone"
        );
        let at = |first_append: u64| FileSpot {
            segment_base: 0,
            position: first_append * 300,
        };
        assert_eq!(
            c.recent_run(8, next, 1 << 20, false),
            Some((at(4), 16 * 300))
        );
        // From inside a batch (offset 9 is its second record): the whole batch, as a read does.
        assert_eq!(
            c.recent_run(9, next, 1 << 20, false),
            Some((at(4), 16 * 300))
        );
        // Below the limit only, whole batches, within max_bytes.
        assert_eq!(c.recent_run(8, 14, 1 << 20, false), Some((at(4), 3 * 300)));
        assert!(
            c.recent_run(8, 9, 1 << 20, false).is_none(),
            "the first batch reaches the limit"
        );
        assert_eq!(c.recent_run(8, next, 1000, false), Some((at(4), 900)));
        assert!(c.recent_run(8, next, 299, false).is_none());
        assert_eq!(c.recent_run(8, next, 299, true), Some((at(4), 300)));
        // Truncation drops the places of what it cut; a new append follows on.
        c.truncate_to(31);
        assert_eq!(
            c.recent_run(8, 100, 1 << 20, false),
            Some((at(4), 11 * 300))
        );
        assert!(c.recent_run(30, 100, 1 << 20, false).is_none());
        let (n, d) = chunk(30, &[(1, 239)]);
        append(&mut c, 30, n, d);
        c.clear();
        assert!(c.recent_run(8, 100, 1 << 20, false).is_none());
    }

    #[test]
    fn a_run_of_recent_appends_stops_where_the_file_or_offsets_do_not_follow_on() {
        let mut c = TailCache::new(1 << 20);
        let (n1, a) = chunk(0, &[(1, 239)]);
        c.push(
            0,
            n1,
            a,
            None,
            FileSpot {
                segment_base: 0,
                position: 0,
            },
        );
        let (n2, b) = chunk(n1, &[(1, 239)]);
        c.push(
            n1,
            n2,
            b,
            None,
            FileSpot {
                segment_base: 0,
                position: 300,
            },
        );
        // A roll: the next append starts a new segment.
        let (n3, d) = chunk(n2, &[(1, 239)]);
        c.push(
            n2,
            n3,
            d,
            None,
            FileSpot {
                segment_base: n2,
                position: 0,
            },
        );
        // A follower's gap in offsets (a compacted leader's).
        let (n4, e) = chunk(n3 + 5, &[(1, 239)]);
        c.push(
            n3 + 5,
            n4,
            e,
            None,
            FileSpot {
                segment_base: n2,
                position: 300,
            },
        );
        let spot = |segment_base, position| FileSpot {
            segment_base,
            position,
        };
        assert_eq!(
            c.recent_run(0, 100, 1 << 20, false),
            Some((spot(0, 0), 600))
        );
        assert_eq!(
            c.recent_run(n2, 100, 1 << 20, false),
            Some((spot(n2, 0), 300))
        );
        assert_eq!(
            c.recent_run(n3 + 5, 100, 1 << 20, false),
            Some((spot(n2, 300), 300))
        );
        // An append of several batches keeps no place: a read from it goes to the files.
        let (n5, f) = chunk(n4, &[(1, 239), (1, 239)]);
        c.push(
            n4,
            n5,
            f,
            None,
            FileSpot {
                segment_base: n2,
                position: 600,
            },
        );
        assert!(c.recent_run(n4, 100, 1 << 20, false).is_none());
        // A smaller bound keeps fewer places, the newest.
        let (n6, g) = chunk(n5, &[(1, 239)]);
        c.push(
            n5,
            n6,
            g,
            None,
            FileSpot {
                segment_base: n2,
                position: 1200,
            },
        );
        assert_eq!(c.recent.len(), 5);
        c.set_limit(0);
        assert!(c.recent.is_empty());
        c.set_limit(1000);
        assert_eq!(c.recent_max, RECENT_APPENDS_MIN);
    }
}
