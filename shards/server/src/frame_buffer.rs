//! The read side of a Kafka connection (a client's requests, or another broker's responses):
//! the byte stream split into size-prefixed frames, each frame handed out as its own `BytesMut`
//! view of the buffer it was read into, without copying it.
//!
//! A frame lives as long as any piece of it does (a Produce request's record batches stay in
//! the tail cache), so once the buffer must grow, bytes read past a frame's end cannot stay in
//! its allocation: they are copied into a new one. Reading in fixed chunks copied the first
//! chunk of every frame larger than a chunk and the start of the next frame read with it (2.9 %
//! of the broker's CPU samples under ProducerPerformance, whose requests are ~170 KB). Reading
//! the 4-byte size alone before each frame removed the copy but cost a system call per frame
//! (measured no better, `bench/results/2026-12-03-java-producer-ab.md`). So a frame larger than
//! a chunk is read into an allocation of exactly its size, and the read that completes it goes
//! on into a 4-byte side buffer for the next frame's size, in the same `recvmsg`: the next
//! frame's allocation is then sized before any of its body is read. Small frames are still read
//! a chunk at a time, many per system call. `copied_bytes` counts what is moved.

use std::io;

use bytes::{Buf, BytesMut};
use glommio::net::TcpStream;
use sluice_protocol::frame::{peek_frame_size, SIZE_PREFIX_LEN};
use sluice_protocol::ProtocolError;

use crate::socket_io;

/// Bytes read per system call when frames are small; a larger frame gets its own allocation.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Read-buffer capacity kept between frames; a larger one is dropped once empty, so that one
/// large frame does not pin its size for the connection's whole life.
const READ_BUFFER_RETAINED_BYTES: usize = 1 << 20;

pub struct FrameBuffer {
    buf: BytesMut,
    frame_bytes_max: usize,
    /// The size prefix of the frame after the one `buf` ends with, read by the system call
    /// that completed a large frame. Only ever filled when `buf` ends exactly at a frame's end.
    next_prefix: [u8; SIZE_PREFIX_LEN],
    next_prefix_len: usize,
    /// The last frame taken was larger than a chunk: read the next one's size alone first.
    after_large_frame: bool,
    /// Bytes moved to a new allocation to make room (a partial frame), over the buffer's life.
    copied_bytes: u64,
}

impl FrameBuffer {
    pub fn new(frame_bytes_max: usize) -> FrameBuffer {
        FrameBuffer {
            buf: BytesMut::new(),
            frame_bytes_max,
            next_prefix: [0; SIZE_PREFIX_LEN],
            next_prefix_len: 0,
            after_large_frame: false,
            copied_bytes: 0,
        }
    }

    /// Bytes received and not yet taken as frames (a connection handed to another shard takes
    /// them along). Call only after taking a frame.
    pub fn buffered(&self) -> &[u8] {
        assert_eq!(self.next_prefix_len, 0, "a size prefix outside the buffer");
        &self.buf
    }

    /// Appends bytes read elsewhere (a connection handed over with what it had read).
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        assert_eq!(self.next_prefix_len, 0, "a size prefix outside the buffer");
        self.buf.extend_from_slice(bytes);
    }

    #[cfg(test)]
    fn copied_bytes(&self) -> u64 {
        self.copied_bytes
    }

    /// Size of the next frame if its size prefix is buffered; an error if it is negative or
    /// over the limit (the caller closes the connection: nothing is reserved for it).
    fn next_size(&self) -> Result<Option<usize>, ProtocolError> {
        peek_frame_size(&self.buf, self.frame_bytes_max)
    }

    pub fn has_frame(&self) -> Result<bool, ProtocolError> {
        Ok(self
            .next_size()?
            .is_some_and(|size| self.buf.len() >= SIZE_PREFIX_LEN + size))
    }

    /// The next whole frame without its size prefix, if one is buffered.
    pub fn take_frame(&mut self) -> Result<Option<BytesMut>, ProtocolError> {
        let Some(size) = self.next_size()? else {
            return Ok(None);
        };
        if self.buf.len() < SIZE_PREFIX_LEN + size {
            return Ok(None);
        }
        self.after_large_frame = SIZE_PREFIX_LEN + size > READ_CHUNK_BYTES;
        self.buf.advance(SIZE_PREFIX_LEN);
        let frame = self.buf.split_to(size);
        if self.next_prefix_len > 0 {
            assert!(
                self.buf.is_empty(),
                "a size prefix read past buffered bytes"
            );
            self.start_next_frame();
        }
        Ok(Some(frame))
    }

    /// Moves the next frame's size prefix, read with the end of the frame just taken, into a
    /// buffer of the next frame's size (or a chunk, for a small one).
    fn start_next_frame(&mut self) {
        let prefix = &self.next_prefix[..self.next_prefix_len];
        let capacity = match peek_frame_size(prefix, self.frame_bytes_max) {
            Ok(Some(size)) => (SIZE_PREFIX_LEN + size).max(READ_CHUNK_BYTES),
            // A partial prefix is completed alone; a bad one is refused by the next take.
            _ => SIZE_PREFIX_LEN,
        };
        self.buf = BytesMut::with_capacity(capacity);
        self.buf.extend_from_slice(prefix);
        self.next_prefix_len = 0;
    }

    /// Reads more bytes from `stream`; 0 at end of stream. Call only without a whole frame
    /// buffered.
    pub async fn fill(&mut self, stream: &TcpStream) -> Result<usize, FillError> {
        let (limit, prefix_too) = self.prepare_read()?;
        let after = if prefix_too {
            &mut self.next_prefix[..]
        } else {
            &mut []
        };
        let (into_buf, into_prefix) =
            socket_io::read_into(stream, &mut self.buf, limit, after).await?;
        self.next_prefix_len = into_prefix;
        Ok(into_buf + into_prefix)
    }

    /// Makes room for the next read and returns how many bytes it may put in the buffer (never
    /// past the end of a frame larger than a chunk) and whether it may go on into the next
    /// frame's size prefix.
    fn prepare_read(&mut self) -> Result<(usize, bool), ProtocolError> {
        assert_eq!(
            self.next_prefix_len, 0,
            "prepare_read with a whole frame buffered"
        );
        if self.buf.is_empty() && self.buf.capacity() > READ_BUFFER_RETAINED_BYTES {
            self.buf = BytesMut::new();
        }
        let len = self.buf.len();
        match self.next_size()? {
            Some(size) if SIZE_PREFIX_LEN + size > READ_CHUNK_BYTES => {
                let end = SIZE_PREFIX_LEN + size;
                assert!(len < end, "prepare_read with a whole frame buffered");
                self.make_room(end - len, end);
                Ok((end - len, true))
            }
            Some(size) => {
                let rest = (SIZE_PREFIX_LEN + size).saturating_sub(len);
                self.make_room(rest.max(READ_CHUNK_BYTES), READ_CHUNK_BYTES);
                Ok((usize::MAX, false))
            }
            None if self.after_large_frame => {
                self.make_room(SIZE_PREFIX_LEN - len, SIZE_PREFIX_LEN);
                Ok((SIZE_PREFIX_LEN - len, false))
            }
            None => {
                self.make_room(READ_CHUNK_BYTES, READ_CHUNK_BYTES);
                Ok((usize::MAX, false))
            }
        }
    }

    /// Keeps the allocation if it has `spare_bytes` free after what is buffered; otherwise moves
    /// what is buffered (part of one frame, or the start of several small ones) into a new
    /// allocation of at least `capacity`.
    fn make_room(&mut self, spare_bytes: usize, capacity: usize) {
        let len = self.buf.len();
        if self.buf.capacity() - len >= spare_bytes {
            return;
        }
        let mut fresh = BytesMut::with_capacity(capacity.max(len + spare_bytes));
        fresh.extend_from_slice(&self.buf);
        self.copied_bytes += len as u64;
        self.buf = fresh;
    }
}

/// Why a read into the frame buffer failed.
#[derive(Debug, thiserror::Error)]
pub enum FillError {
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    #[error("{0}")]
    Frame(#[from] ProtocolError),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plays the kernel's part: the bytes `prepare_read` lets in, at most `segment` per call,
    /// the buffer first, then the next size prefix.
    fn receive(reader: &mut FrameBuffer, wire: &mut &[u8], segment: usize) -> usize {
        let (limit, prefix_too) = reader.prepare_read().unwrap();
        let spare = reader.buf.spare_capacity_mut();
        let n = limit.min(spare.len()).min(segment).min(wire.len());
        for (slot, byte) in spare.iter_mut().zip(&wire[..n]) {
            slot.write(*byte);
        }
        // SAFETY: the loop above initialised these `n` bytes.
        unsafe { reader.buf.set_len(reader.buf.len() + n) };
        *wire = &wire[n..];
        let mut m = 0;
        if prefix_too && n == limit {
            m = SIZE_PREFIX_LEN.min(segment - n).min(wire.len());
            reader.next_prefix[..m].copy_from_slice(&wire[..m]);
            reader.next_prefix_len = m;
            *wire = &wire[m..];
        }
        n + m
    }

    fn framed(sizes: &[usize]) -> Vec<u8> {
        let mut wire = Vec::new();
        for (i, &size) in sizes.iter().enumerate() {
            wire.extend_from_slice(&(size as i32).to_be_bytes());
            wire.extend((0..size).map(|j| (i + j) as u8));
        }
        wire
    }

    /// Reads every frame of `wire`, checking each against its size and content, while holding
    /// them all (as the tail cache holds produced records); returns the bytes copied.
    fn read_all(sizes: &[usize], segment: usize) -> u64 {
        let wire = framed(sizes);
        let mut rest = &wire[..];
        let mut reader = FrameBuffer::new(1 << 24);
        let mut held = Vec::new();
        while held.len() < sizes.len() {
            match reader.take_frame().unwrap() {
                Some(frame) => held.push(frame),
                None => assert!(receive(&mut reader, &mut rest, segment) > 0),
            }
        }
        for (i, (frame, &size)) in held.iter().zip(sizes).enumerate() {
            assert_eq!(frame.len(), size);
            assert!(frame.iter().enumerate().all(|(j, &b)| b == (i + j) as u8));
        }
        assert!(rest.is_empty());
        reader.copied_bytes()
    }

    #[test]
    fn large_frames_are_read_into_their_own_allocation_without_copies() {
        // 40 requests of ~170 KB arriving back to back, as ProducerPerformance sends them: only
        // the first frame's first chunk is copied, once its size is known.
        let sizes = vec![171_000; 40];
        let copied = read_all(&sizes, usize::MAX);
        assert!(copied <= READ_CHUNK_BYTES as u64, "{copied} bytes copied");
        // The same in TCP-sized pieces.
        let copied = read_all(&sizes, 1448);
        assert!(copied <= READ_CHUNK_BYTES as u64, "{copied} bytes copied");
    }

    #[test]
    fn small_frames_share_chunks_and_mixed_sizes_copy_little() {
        // 2,000 small frames: the partial frame at each chunk's end is all that moves.
        let small = vec![100; 2000];
        let copied = read_all(&small, usize::MAX);
        let chunks = (small.len() * 104).div_ceil(READ_CHUNK_BYTES) as u64;
        assert!(copied <= chunks * 104, "{copied} bytes copied");
        // Large and small interleaved (a producer's metadata refresh among its requests).
        let mixed: Vec<usize> = (0..60)
            .map(|i| if i % 5 == 4 { 90 } else { 200_000 + i })
            .collect();
        let copied = read_all(&mixed, usize::MAX);
        let small_frames = mixed.iter().filter(|&&s| s == 90).count() as u64;
        // At most a chunk after each small frame, and the first frame's first chunk.
        assert!(
            copied <= (small_frames + 1) * READ_CHUNK_BYTES as u64,
            "{copied} bytes copied"
        );
    }

    #[test]
    fn empty_frames_after_large_ones_are_whole_at_once() {
        let sizes = [200_000, 0, 200_000, 0, 0, 300_000, 1, 70_000];
        for segment in [usize::MAX, 1448, 5, 3] {
            let copied = read_all(&sizes, segment);
            // After a small frame a chunk is read: at most a chunk of each large frame that
            // follows small ones (3 here) is copied, and of the first.
            assert!(
                copied <= 4 * READ_CHUNK_BYTES as u64,
                "{copied} bytes copied"
            );
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        let mut reader = FrameBuffer::new(100);
        reader.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert!(reader.has_frame().is_err());
        assert!(reader.take_frame().is_err());
        let mut reader = FrameBuffer::new(100);
        reader.extend_from_slice(&[0, 0, 0, 101]);
        assert!(reader.has_frame().is_err());
        assert!(reader.prepare_read().is_err());
        let mut reader = FrameBuffer::new(100);
        reader.extend_from_slice(&[0, 0, 0, 3, 1, 2, 3, 0, 0, 0]);
        assert_eq!(&reader.take_frame().unwrap().unwrap()[..], &[1, 2, 3]);
        assert!(reader.take_frame().unwrap().is_none());
    }

    #[test]
    fn a_large_frame_does_not_pin_its_buffer() {
        let size = 4usize << 20;
        let copied = read_all(&[size, 10, size], usize::MAX);
        assert!(copied <= 2 * READ_CHUNK_BYTES as u64);
        let mut reader = FrameBuffer::new(size);
        let wire = framed(&[size]);
        let mut rest = &wire[..];
        while reader.take_frame().unwrap().is_none() {
            receive(&mut reader, &mut rest, usize::MAX);
        }
        reader.buf.reserve(2 * READ_BUFFER_RETAINED_BYTES);
        reader.prepare_read().unwrap();
        assert!(reader.buf.capacity() <= READ_BUFFER_RETAINED_BYTES);
    }
}
