//! Primitive readers and writers for Kafka's wire types.
//!
//! The [`Decoder`] reads from a `Bytes` frame with a cursor. It never indexes
//! past the end (every read is length-checked first), never allocates more than
//! the input could justify, and returns byte fields as zero-copy slices of the
//! frame. "flexible" selects the compact encodings (KIP-482) used by flexible
//! message versions: unsigned-varint lengths biased by one, and tagged fields.
//!
//! The same pair reads and writes Sluice's own binary formats (metadata records, the
//! controller RPC, `__consumer_offsets` records, producer-state snapshots, the quorum log):
//! their fields are these primitives, and their decoding must be just as hostile-input safe.

use bytes::{Bytes, BytesMut};

use crate::error::{ProtocolError, Result};
use std::sync::Arc;

use crate::memory_records::{FrameHold, MemoryRecords};
pub use crate::uuid::Uuid;
pub use encoder::{Encoder, TaggedFields};

mod encoder;

/// Upper bound on the bytes an array decode reserves up front. Element structs
/// can be much larger in memory than on the wire, so trusting a wire length for
/// `Vec::with_capacity` would let a small frame request a large allocation;
/// beyond this bound the vector grows only as elements actually decode.
const MAX_PREALLOC_BYTES: usize = 16 * 1024;

/// Cursor over one frame.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Input,
    /// Cursor into `buf`.
    pos: usize,
    /// Bytes split off the front of an owned input (consumed before `buf` starts).
    consumed: usize,
}

/// The frame a [`Decoder`] reads.
#[derive(Debug, Clone)]
enum Input {
    /// Byte fields are slices sharing the frame.
    Shared(Bytes),
    /// The frame is the decoder's alone: byte fields are split off it, each a writable view of
    /// its own range (`BytesMut::split_to`, no copy), so a Produce request's records can be
    /// patched in place by the log (base offsets, leader epochs) instead of copied.
    Owned(BytesMut, Arc<FrameHold>),
}

impl Decoder {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: Bytes) -> Decoder {
        Decoder {
            buf: Input::Shared(buf),
            pos: 0,
            consumed: 0,
        }
    }

    /// Starts reading at the beginning of `buf`, which this decoder owns: byte fields come
    /// out as disjoint pieces of it ([`Decoder::nullable_records`] writable ones).
    /// The frame is counted in [`crate::frame_bytes_held`] until every piece is dropped.
    pub fn owned(buf: BytesMut) -> Decoder {
        let hold = FrameHold::new(buf.len());
        Decoder {
            buf: Input::Owned(buf, hold),
            pos: 0,
            consumed: 0,
        }
    }

    fn data(&self) -> &[u8] {
        match &self.buf {
            Input::Shared(b) => b,
            Input::Owned(b, _) => b,
        }
    }

    /// Splits the next `n` bytes off an owned input (checked by the caller), dropping the
    /// consumed bytes before them.
    fn split_owned(
        buf: &mut BytesMut,
        pos: &mut usize,
        consumed: &mut usize,
        n: usize,
    ) -> BytesMut {
        let mut head = buf.split_to(*pos + n);
        let piece = head.split_off(*pos);
        *consumed += *pos + n;
        *pos = 0;
        piece
    }

    /// Reads a copy of `buf`: for input held in a borrowed buffer (a file read, a socket
    /// buffer); one copy of the whole input, never one per field.
    pub fn from_slice(buf: &[u8]) -> Decoder {
        Decoder::new(Bytes::copy_from_slice(buf))
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.data().len().saturating_sub(self.pos)
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.consumed + self.pos
    }

    /// The unread rest of the input, without consuming it (a copy when the input is owned).
    pub fn rest(&self) -> Bytes {
        match &self.buf {
            Input::Shared(b) => b.slice(self.pos.min(b.len())..),
            Input::Owned(b, _) => Bytes::copy_from_slice(b.get(self.pos..).unwrap_or_default()),
        }
    }

    /// Errors with `TrailingBytes` unless the input was consumed exactly.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(ProtocolError::TrailingBytes)
        }
    }

    fn check(&self, needed: usize) -> Result<()> {
        let remaining = self.remaining();
        if needed > remaining {
            Err(ProtocolError::Truncated { needed, remaining })
        } else {
            Ok(())
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        self.check(n)?;
        let start = self.pos;
        self.pos += n;
        self.data()
            .get(start..start + n)
            .ok_or(ProtocolError::Truncated {
                needed: n,
                remaining: 0,
            })
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Zero-copy slice of the next `n` bytes.
    pub fn take_bytes(&mut self, n: usize) -> Result<Bytes> {
        self.check(n)?;
        match &mut self.buf {
            Input::Shared(b) => {
                let start = self.pos;
                self.pos += n;
                Ok(b.slice(start..start + n))
            }
            Input::Owned(b, _) => {
                Ok(Self::split_owned(b, &mut self.pos, &mut self.consumed, n).freeze())
            }
        }
    }

    /// The next `n` bytes as [`MemoryRecords`]: writable and uncopied from an owned input, a shared
    /// slice otherwise.
    fn take_records(&mut self, n: usize) -> Result<MemoryRecords> {
        self.check(n)?;
        match &mut self.buf {
            Input::Shared(_) => self.take_bytes(n).map(MemoryRecords::Shared),
            Input::Owned(b, hold) => Ok(MemoryRecords::Owned(
                Self::split_owned(b, &mut self.pos, &mut self.consumed, n),
                hold.clone(),
            )),
        }
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.take(n).map(|_| ())
    }

    /// Reads an `int8`.
    pub fn i8(&mut self) -> Result<i8> {
        Ok(i8::from_be_bytes(self.take_array()?))
    }

    /// Reads one unsigned byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(u8::from_be_bytes(self.take_array()?))
    }

    /// Reads an `int16`.
    pub fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.take_array()?))
    }

    /// Reads a `uint16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.take_array()?))
    }

    /// Reads an `int32`.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.take_array()?))
    }

    /// Reads a `uint32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.take_array()?))
    }

    /// Reads an `int64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.take_array()?))
    }

    /// Reads a `uint64` (not a Kafka type: Sluice's own formats carry Raft's terms and indexes).
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take_array()?))
    }

    /// Reads a `float64`.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_be_bytes(self.take_array()?))
    }

    /// Reads a `bool`; like Kafka, any non-zero byte is true.
    pub fn bool(&mut self) -> Result<bool> {
        Ok(self.u8()? != 0)
    }

    /// Reads a `uuid`.
    pub fn uuid(&mut self) -> Result<Uuid> {
        Ok(Uuid(self.take_array()?))
    }

    /// Reads an unsigned LEB128 varint of at most 5 bytes. As in Kafka's
    /// `ByteUtils.readUnsignedVarint`, the fifth byte must end the varint but may
    /// carry bits beyond the 32 a `u32` holds: they are dropped, not refused.
    pub fn unsigned_varint(&mut self) -> Result<u32> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.u8()?;
            value |= u32::from(b & 0x7f).wrapping_shl(7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtocolError::InvalidVarint)
    }

    /// Reads an unsigned LEB128 varlong of at most 10 bytes; like Kafka, bits of
    /// the tenth byte beyond the 64 a `u64` holds are dropped.
    pub fn unsigned_varlong(&mut self) -> Result<u64> {
        let mut value: u64 = 0;
        for i in 0..10 {
            let b = self.u8()?;
            value |= u64::from(b & 0x7f).wrapping_shl(7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtocolError::InvalidVarint)
    }

    /// Reads a zigzag-encoded signed varint.
    pub fn varint(&mut self) -> Result<i32> {
        let v = self.unsigned_varint()?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// Reads a zigzag-encoded signed varlong.
    pub fn varlong(&mut self) -> Result<i64> {
        let v = self.unsigned_varlong()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// Length of a compact field: the unsigned varint minus one, computed as
    /// Kafka does in a Java `int`, so a varint of 2^31 or more is a negative
    /// length (null), not a huge one.
    fn compact_len(&mut self) -> Result<i64> {
        Ok(i64::from(self.unsigned_varint()? as i32) - 1)
    }

    /// Length prefix of a string (`int16`) or compact string (varint - 1); `None` is null.
    /// Kafka refuses compact string lengths above `i16::MAX` (the classic limit).
    fn string_len(&mut self, flexible: bool) -> Result<Option<usize>> {
        let len = if flexible {
            self.compact_len()?
        } else {
            i64::from(self.i16()?)
        };
        if len > i64::from(i16::MAX) {
            return Err(ProtocolError::InvalidLength(len));
        }
        self.checked_len(len)
    }

    /// Length prefix of bytes (`int32`) or compact bytes (varint - 1); `None` is null.
    fn bytes_len(&mut self, flexible: bool) -> Result<Option<usize>> {
        let len = if flexible {
            self.compact_len()?
        } else {
            i64::from(self.i32()?)
        };
        self.checked_len(len)
    }

    /// Negative lengths mean null (as in Kafka); lengths beyond the input are
    /// rejected before anything is reserved for them.
    fn checked_len(&self, len: i64) -> Result<Option<usize>> {
        if len < 0 {
            return Ok(None);
        }
        match usize::try_from(len) {
            Ok(n) if n <= self.remaining() => Ok(Some(n)),
            _ => Err(ProtocolError::InvalidLength(len)),
        }
    }

    /// Kafka decodes strings with `new String(bytes, UTF_8)`, which replaces
    /// malformed sequences with U+FFFD instead of failing, so a bad byte in a
    /// topic or group name reaches the handler's name validation rather than
    /// closing the connection. Do the same.
    fn utf8(&mut self, n: usize) -> Result<String> {
        Ok(lossy_utf8(self.take(n)?))
    }

    /// Reads `n` bytes of strictly valid UTF-8. Sluice's own formats use it: their encoders
    /// only ever write `str`s, so a malformed sequence is corruption, and replacing it would
    /// make a decoded value encode to other bytes than it came from.
    pub fn utf8_exact(&mut self, n: usize) -> Result<String> {
        std::str::from_utf8(self.take(n)?)
            .map(str::to_owned)
            .map_err(|_| ProtocolError::InvalidValue("string is not UTF-8"))
    }

    /// Reads a non-nullable `string` / `compact_string`.
    pub fn string(&mut self, flexible: bool) -> Result<String> {
        self.nullable_string(flexible)?
            .ok_or(ProtocolError::InvalidValue("null in non-nullable string"))
    }

    /// Reads a `nullable_string` / `compact_nullable_string`.
    pub fn nullable_string(&mut self, flexible: bool) -> Result<Option<String>> {
        match self.string_len(flexible)? {
            None => Ok(None),
            Some(n) => self.utf8(n).map(Some),
        }
    }

    /// Reads non-nullable `bytes` / `compact_bytes` as a zero-copy slice.
    pub fn bytes(&mut self, flexible: bool) -> Result<Bytes> {
        self.nullable_bytes(flexible)?
            .ok_or(ProtocolError::InvalidValue("null in non-nullable bytes"))
    }

    /// Reads `nullable_bytes` / `compact_nullable_bytes` (also Kafka's `records`)
    /// as a zero-copy slice of the frame.
    pub fn nullable_bytes(&mut self, flexible: bool) -> Result<Option<Bytes>> {
        match self.bytes_len(flexible)? {
            None => Ok(None),
            Some(n) => self.take_bytes(n).map(Some),
        }
    }

    /// Reads nullable bytes holding record batches (Produce's `records`): see
    /// [`Decoder::owned`].
    pub fn nullable_records(&mut self, flexible: bool) -> Result<Option<MemoryRecords>> {
        match self.bytes_len(flexible)? {
            None => Ok(None),
            Some(n) => self.take_records(n).map(Some),
        }
    }

    /// Reads an array length; `None` is a null array. Every element occupies at
    /// least one byte, so lengths above the remaining input are rejected.
    pub fn array_len(&mut self, flexible: bool) -> Result<Option<usize>> {
        let len = if flexible {
            self.compact_len()?
        } else {
            i64::from(self.i32()?)
        };
        self.checked_len(len)
    }

    /// Reads a non-nullable array, decoding each element with `f`.
    pub fn array<T>(
        &mut self,
        flexible: bool,
        f: impl FnMut(&mut Decoder) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.nullable_array(flexible, f)?
            .ok_or(ProtocolError::InvalidValue("null in non-nullable array"))
    }

    /// Reads a nullable array, decoding each element with `f`.
    pub fn nullable_array<T>(
        &mut self,
        flexible: bool,
        mut f: impl FnMut(&mut Decoder) -> Result<T>,
    ) -> Result<Option<Vec<T>>> {
        let Some(len) = self.array_len(flexible)? else {
            return Ok(None);
        };
        let per_item = std::mem::size_of::<T>().max(1);
        let mut items = Vec::with_capacity(len.min(MAX_PREALLOC_BYTES / per_item));
        for _ in 0..len {
            items.push(f(self)?);
        }
        Ok(Some(items))
    }

    /// Skips a tagged-field section, ignoring every field.
    pub fn tagged_fields(&mut self) -> Result<()> {
        self.read_tagged_fields(|_, _| Ok(()))
    }

    /// Reads a tagged-field section, handing each field to `f` as its tag and a
    /// decoder over exactly that field's bytes. `f` ignores tags it does not know,
    /// which is how unknown tagged fields are skipped.
    pub fn read_tagged_fields(
        &mut self,
        mut f: impl FnMut(u32, &mut Decoder) -> Result<()>,
    ) -> Result<()> {
        let count = self.unsigned_varint()?;
        // Each field needs at least a tag byte and a size byte.
        if count as usize > self.remaining() / 2 {
            return Err(ProtocolError::InvalidLength(i64::from(count)));
        }
        for _ in 0..count {
            let tag = self.unsigned_varint()?;
            let size = self.unsigned_varint()? as usize;
            let mut field = Decoder::new(self.take_bytes(size)?);
            f(tag, &mut field)?;
        }
        Ok(())
    }
}

/// `String::from_utf8_lossy` with one allocation of exactly the output size:
/// each malformed sequence becomes U+FFFD (3 bytes), so the output is at most
/// three times the input and never over-reserved by amortized growth.
pub(crate) fn lossy_utf8(raw: &[u8]) -> String {
    if let Ok(s) = std::str::from_utf8(raw) {
        return s.to_owned();
    }
    let replacement = char::REPLACEMENT_CHARACTER.len_utf8();
    let size: usize = raw
        .utf8_chunks()
        .map(|c| {
            c.valid().len()
                + if c.invalid().is_empty() {
                    0
                } else {
                    replacement
                }
        })
        .sum();
    let mut out = String::with_capacity(size);
    for chunk in raw.utf8_chunks() {
        out.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}

#[cfg(test)]
mod tests;
