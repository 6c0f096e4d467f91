//! The writing half of the codec.

use bytes::{BufMut, Bytes, BytesMut};

use super::Uuid;
use crate::file_region::{FileRegion, Segment};

/// Tagged fields collected for one encode; each value is pre-encoded because the
/// wire format puts its size before it.
#[derive(Debug, Default)]
pub struct TaggedFields {
    fields: Vec<(u32, BytesMut)>,
}

impl TaggedFields {
    /// No fields.
    pub fn new() -> TaggedFields {
        TaggedFields::default()
    }

    /// Adds field `tag`, encoded by `f`.
    pub fn add(&mut self, tag: u32, f: impl FnOnce(&mut Encoder)) {
        let mut e = Encoder::new();
        f(&mut e);
        self.fields.push((tag, e.into_inner()));
    }

    /// True when no field was added.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// Writer for Kafka wire types. Encoding is infallible: values that cannot be
/// represented (strings over 32767 bytes in non-flexible versions) are truncated
/// so the output always stays well-formed; callers validate lengths beforehand.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    /// Completed output segments, used only by vectored encoders: record data
    /// is kept as its own segment (shared bytes or a file region) instead of being copied.
    segments: Vec<Segment>,
    vectored: bool,
}

impl Encoder {
    /// Empty encoder.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// Empty encoder with `capacity` reserved.
    pub fn with_capacity(capacity: usize) -> Encoder {
        Encoder::from_buf(BytesMut::with_capacity(capacity))
    }

    /// Appends to an existing buffer.
    pub fn from_buf(buf: BytesMut) -> Encoder {
        Encoder {
            buf,
            ..Encoder::default()
        }
    }

    /// An encoder whose `records` fields (see [`Encoder::put_nullable_records`])
    /// become separate zero-copy segments; collect them with
    /// [`Encoder::into_segments`] and write them with vectored I/O.
    pub fn vectored() -> Encoder {
        Encoder {
            vectored: true,
            ..Encoder::default()
        }
    }

    /// The encoded bytes as one buffer (segments, if any, are copied in).
    pub fn into_inner(self) -> BytesMut {
        if self.segments.is_empty() {
            return self.buf;
        }
        let mut out = BytesMut::with_capacity(self.len());
        for s in &self.segments {
            match s {
                Segment::Bytes(b) => out.put_slice(b),
                Segment::File(f) => put_file_bytes(&mut out, f),
            }
        }
        out.put_slice(&self.buf);
        out
    }

    /// The encoded bytes as segments in order; record data is not copied.
    pub fn into_segments(mut self) -> Vec<Segment> {
        if !self.buf.is_empty() {
            self.end_segment();
        }
        self.segments
    }

    /// Bytes in the current (last) segment; for a non-vectored encoder, all of them.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// Number of bytes written, across all segments.
    pub fn len(&self) -> usize {
        self.segments.iter().map(Segment::len).sum::<usize>() + self.buf.len()
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Overwrites 4 bytes at `at` (used to back-patch size prefixes).
    pub fn patch_i32(&mut self, at: usize, value: i32) {
        if let Some(slot) = self.buf.get_mut(at..at + 4) {
            slot.copy_from_slice(&value.to_be_bytes());
        }
    }

    /// Appends raw bytes.
    pub fn put_raw(&mut self, raw: &[u8]) {
        self.buf.put_slice(raw);
    }

    /// Writes an `int8`.
    pub fn put_i8(&mut self, v: i8) {
        self.buf.put_i8(v);
    }

    /// Writes one unsigned byte.
    pub fn put_u8(&mut self, v: u8) {
        self.buf.put_u8(v);
    }

    /// Writes an `int16`.
    pub fn put_i16(&mut self, v: i16) {
        self.buf.put_i16(v);
    }

    /// Writes a `uint16`.
    pub fn put_u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }

    /// Writes an `int32`.
    pub fn put_i32(&mut self, v: i32) {
        self.buf.put_i32(v);
    }

    /// Writes a `uint32`.
    pub fn put_u32(&mut self, v: u32) {
        self.buf.put_u32(v);
    }

    /// Writes an `int64`.
    pub fn put_i64(&mut self, v: i64) {
        self.buf.put_i64(v);
    }

    /// Writes a `uint64` (Sluice's own formats).
    pub fn put_u64(&mut self, v: u64) {
        self.buf.put_u64(v);
    }

    /// Writes a `float64`.
    pub fn put_f64(&mut self, v: f64) {
        self.buf.put_f64(v);
    }

    /// Writes a `bool`.
    pub fn put_bool(&mut self, v: bool) {
        self.buf.put_u8(u8::from(v));
    }

    /// Writes a `uuid`.
    pub fn put_uuid(&mut self, v: Uuid) {
        self.buf.put_slice(&v.0);
    }

    /// Writes an unsigned varint.
    pub fn put_unsigned_varint(&mut self, v: u32) {
        self.put_unsigned_varlong(u64::from(v));
    }

    /// Writes an unsigned varlong.
    pub fn put_unsigned_varlong(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.put_u8((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.put_u8(v as u8);
    }

    /// Writes a zigzag varint.
    pub fn put_varint(&mut self, v: i32) {
        self.put_unsigned_varint(((v << 1) ^ (v >> 31)) as u32);
    }

    /// Writes a zigzag varlong.
    pub fn put_varlong(&mut self, v: i64) {
        self.put_unsigned_varlong(((v << 1) ^ (v >> 63)) as u64);
    }

    /// Writes a non-nullable string.
    pub fn put_string(&mut self, s: &str, flexible: bool) {
        self.put_nullable_string(Some(s), flexible);
    }

    /// Writes a nullable string.
    pub fn put_nullable_string(&mut self, s: Option<&str>, flexible: bool) {
        let Some(s) = s else {
            self.put_null_len(flexible, false);
            return;
        };
        let s = if flexible {
            s
        } else {
            truncate_str(s, i16::MAX as usize)
        };
        if flexible {
            self.put_unsigned_varint(len_plus_one(s.len()));
        } else {
            self.put_i16(s.len() as i16);
        }
        self.buf.put_slice(s.as_bytes());
    }

    /// Writes non-nullable bytes.
    pub fn put_bytes(&mut self, b: &[u8], flexible: bool) {
        self.put_nullable_bytes(Some(b), flexible);
    }

    /// Writes nullable bytes (Kafka's `records` type too).
    pub fn put_nullable_bytes(&mut self, b: Option<&[u8]>, flexible: bool) {
        let Some(b) = b else {
            self.put_null_len(flexible, true);
            return;
        };
        let b = b.get(..b.len().min(i32::MAX as usize)).unwrap_or_default();
        if flexible {
            self.put_unsigned_varint(len_plus_one(b.len()));
        } else {
            self.put_i32(b.len() as i32);
        }
        self.buf.put_slice(b);
    }

    /// Writes a `records` field (nullable bytes). A vectored encoder emits the
    /// data as its own segment sharing `records`' buffer; others copy it.
    pub fn put_nullable_records(&mut self, records: Option<&Bytes>, flexible: bool) {
        match records {
            Some(r) if self.vectored && !r.is_empty() && r.len() <= i32::MAX as usize => {
                self.put_records_len(r.len(), flexible);
                self.end_segment();
                self.segments.push(Segment::Bytes(r.clone()));
            }
            _ => self.put_nullable_bytes(records.map(|r| &r[..]), flexible),
        }
    }

    /// Writes a `records` field whose data is a file region. A vectored encoder emits the
    /// region as its own segment, to be sent with `sendfile`; others read it in.
    pub fn put_records_file(&mut self, region: &FileRegion, flexible: bool) {
        self.put_records_len(region.len().min(i32::MAX as usize), flexible);
        if self.vectored {
            self.end_segment();
            self.segments.push(Segment::File(region.clone()));
        } else {
            put_file_bytes(&mut self.buf, region);
        }
    }

    /// Writes a `records` field whose data is `pieces` back to back. A vectored encoder emits
    /// each piece as its own segment (no copy); others copy them in.
    pub fn put_records_pieces(&mut self, pieces: &[Bytes], flexible: bool) {
        let len = pieces.iter().map(Bytes::len).sum::<usize>();
        assert!(
            len <= i32::MAX as usize,
            "a records field fits an i32 length"
        );
        self.put_records_len(len, flexible);
        if self.vectored {
            self.end_segment();
            self.segments.extend(
                pieces
                    .iter()
                    .filter(|p| !p.is_empty())
                    .cloned()
                    .map(Segment::Bytes),
            );
        } else {
            for piece in pieces {
                self.buf.put_slice(piece);
            }
        }
    }

    /// A non-null `records` field's length (`len` fits an i32).
    fn put_records_len(&mut self, len: usize, flexible: bool) {
        if flexible {
            self.put_unsigned_varint(len_plus_one(len));
        } else {
            self.put_i32(len as i32);
        }
    }

    /// Closes the bytes written so far as a segment, so that record data can follow as its own.
    fn end_segment(&mut self) {
        self.segments
            .push(Segment::Bytes(self.buf.split().freeze()));
    }

    fn put_null_len(&mut self, flexible: bool, wide: bool) {
        match (flexible, wide) {
            (true, _) => self.put_unsigned_varint(0),
            (false, false) => self.put_i16(-1),
            (false, true) => self.put_i32(-1),
        }
    }

    /// Writes an array length.
    pub fn put_array_len(&mut self, len: usize, flexible: bool) {
        self.put_nullable_array_len(Some(len), flexible);
    }

    /// Writes a nullable array length (`None` is the null array).
    pub fn put_nullable_array_len(&mut self, len: Option<usize>, flexible: bool) {
        match len {
            None => self.put_null_len(flexible, true),
            Some(n) if flexible => self.put_unsigned_varint(len_plus_one(n)),
            Some(n) => self.put_i32(i32::try_from(n).unwrap_or(i32::MAX)),
        }
    }

    /// Writes an array, encoding each element with `f`.
    pub fn put_array<T>(
        &mut self,
        items: &[T],
        flexible: bool,
        mut f: impl FnMut(&mut Encoder, &T),
    ) {
        self.put_array_len(items.len(), flexible);
        for item in items {
            f(self, item);
        }
    }

    /// Writes a nullable array.
    pub fn put_nullable_array<T>(
        &mut self,
        items: Option<&[T]>,
        flexible: bool,
        f: impl FnMut(&mut Encoder, &T),
    ) {
        match items {
            None => self.put_nullable_array_len(None, flexible),
            Some(items) => self.put_array(items, flexible, f),
        }
    }

    /// Writes an empty tagged-field section.
    pub fn put_empty_tagged_fields(&mut self) {
        self.put_unsigned_varint(0);
    }

    /// Writes a tagged-field section in ascending tag order, as Kafka requires.
    pub fn put_tagged_fields(&mut self, mut fields: TaggedFields) {
        fields.fields.sort_by_key(|(tag, _)| *tag);
        self.put_unsigned_varint(len_u32(fields.fields.len()));
        for (tag, value) in &fields.fields {
            self.put_unsigned_varint(*tag);
            self.put_unsigned_varint(len_u32(value.len()));
            self.buf.put_slice(value);
        }
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Appends a file region's bytes (a non-vectored encoder's fallback). The length prefix is
/// already written, so a region that cannot be read is written as zeros: the record batch
/// CRC then fails in the client, which fetches again, as after any corrupt read.
fn put_file_bytes(out: &mut BytesMut, region: &FileRegion) {
    match region.read_to_bytes() {
        Ok(bytes) => out.put_slice(&bytes),
        Err(_) => out.put_bytes(0, region.len()),
    }
}

fn len_plus_one(n: usize) -> u32 {
    len_u32(n).saturating_add(1)
}

/// Longest prefix of `s` of at most `max` bytes ending on a char boundary.
fn truncate_str(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}
