//! Socket reads and writes that glommio's stream does not offer: a read into the spare capacity
//! of the frame buffer (no zero-filling per read) and a gathering write of response segments
//! (record data goes out from the log's buffers without being copied into the response).
//!
//! Both try the non-blocking system call first and fall back to glommio only to wait: `peek` of
//! one byte waits for readability, `write_all` of the current segment waits for writability.

use std::io;
use std::os::fd::AsRawFd;

use bytes::{Bytes, BytesMut};
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

/// Segments gathered per system call (well under IOV_MAX).
const IOVECS_MAX: usize = 64;

/// Reads at least one byte into `buf`'s spare capacity (reserving `want` first); 0 at end of
/// stream.
pub async fn read_into(stream: &TcpStream, buf: &mut BytesMut, want: usize) -> io::Result<usize> {
    buf.reserve(want);
    loop {
        let spare = buf.spare_capacity_mut();
        // SAFETY: recv writes at most `spare.len()` bytes into memory we own; `set_len` below
        // covers exactly the bytes it reports as written.
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            let n = n as usize;
            // SAFETY: the kernel initialised these `n` bytes.
            unsafe { buf.set_len(buf.len() + n) };
            return Ok(n);
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::WouldBlock => {
                // Wait until readable without consuming anything.
                let mut probe = [0u8; 1];
                if stream.peek(&mut probe).await? == 0 {
                    return Ok(0);
                }
            }
            io::ErrorKind::Interrupted => {}
            _ => return Err(error),
        }
    }
}

/// Turns on SO_KEEPALIVE (with the kernel's probe timings), as Kafka does for accepted
/// sockets: a peer host that vanished without a FIN is noticed even on an idle connection.
pub fn set_keepalive(stream: &TcpStream) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a live local; the descriptor is
    // the stream's, open for this borrow.
    let result = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes every segment, in order, gathering up to `IOVECS_MAX` per system call.
pub async fn write_segments(stream: &mut TcpStream, segments: &[Bytes]) -> io::Result<()> {
    let mut index = 0;
    let mut offset = 0;
    while index < segments.len() {
        let iovecs: Vec<libc::iovec> = segments[index..]
            .iter()
            .take(IOVECS_MAX)
            .enumerate()
            .map(|(i, s)| {
                let skip = if i == 0 { offset } else { 0 };
                libc::iovec {
                    iov_base: s[skip..].as_ptr() as *mut libc::c_void,
                    iov_len: s.len() - skip,
                }
            })
            .collect();
        // SAFETY: a zeroed msghdr is valid; we point it at iovecs that live across the call.
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_iov = iovecs.as_ptr() as *mut libc::iovec;
        message.msg_iovlen = iovecs.len();
        // SAFETY: sendmsg only reads the buffers described by `message`.
        let sent = unsafe {
            libc::sendmsg(
                stream.as_raw_fd(),
                &message,
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
        if sent >= 0 {
            (index, offset) = advance(segments, index, offset, sent as usize);
            continue;
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::WouldBlock => {
                // Let glommio wait for room and write the rest of this segment.
                stream.write_all(&segments[index][offset..]).await?;
                index += 1;
                offset = 0;
            }
            io::ErrorKind::Interrupted => {}
            _ => return Err(error),
        }
    }
    Ok(())
}

/// Moves (segment, offset) forward by `sent` bytes.
fn advance(
    segments: &[Bytes],
    mut index: usize,
    mut offset: usize,
    mut sent: usize,
) -> (usize, usize) {
    while sent > 0 {
        let left = segments[index].len() - offset;
        if sent < left {
            return (index, offset + sent);
        }
        sent -= left;
        index += 1;
        offset = 0;
    }
    // Skip empty segments so the loop never builds an empty iovec list.
    while index < segments.len() && segments[index].len() == offset {
        index += 1;
        offset = 0;
    }
    (index, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advance_walks_segment_boundaries() {
        let segments = vec![
            Bytes::from_static(b"abc"),
            Bytes::new(),
            Bytes::from_static(b"de"),
        ];
        assert_eq!(advance(&segments, 0, 0, 2), (0, 2));
        assert_eq!(advance(&segments, 0, 0, 3), (2, 0));
        assert_eq!(advance(&segments, 0, 2, 2), (2, 1));
        assert_eq!(advance(&segments, 0, 0, 5), (3, 0));
    }
}
