//! One client connection: read size-prefixed frames, handle each request in order, write each
//! response in request order.
//!
//! Requests are read ahead (a client may pipeline many: they wait in the read buffer, which
//! holds at most the frame being assembled plus one read chunk), but handled one at a time, as
//! Kafka does:
//! that keeps a producer's batches to a partition in the order it sent them, which idempotence
//! and `max.in.flight.requests.per.connection` > 1 rely on.

use std::rc::Rc;

use bytes::{Buf, Bytes, BytesMut};
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use tracing::{debug, info};

use crate::context::ShardContext;
use crate::dispatch::{dispatch, Outcome};
use crate::socket_io;

/// Read buffer growth step; large frames are read in as few system calls as their size allows.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Socket error.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// A frame size that is negative or over `socket.request.max.bytes`.
    #[error("frame of {size} bytes is outside [0, {max}]")]
    FrameSize {
        /// The size read.
        size: i64,
        /// The limit.
        max: u32,
    },
    /// The request could not be answered (see the log line before).
    #[error("request could not be answered; closing")]
    Unanswerable,
}

/// Serves one connection until the client closes it, an error, or shutdown.
pub async fn serve(ctx: Rc<ShardContext>, mut stream: TcpStream) {
    let peer = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "?".to_string());
    let _ = stream.set_nodelay(true);
    let client_host = stream
        .peer_addr()
        .map(|a| format!("/{}", a.ip()))
        .unwrap_or_else(|_| "/".to_string());
    let mut reader = FrameReader::new(ctx.config.socket_request_max_bytes);
    match serve_frames(&ctx, &mut stream, &mut reader, &client_host).await {
        Ok(()) => debug!(%peer, "connection closed"),
        Err(ConnectionError::Io(error)) => {
            debug!(%peer, %error, "connection closed on socket error")
        }
        Err(error) => info!(%peer, %error, "closing connection"),
    }
    let _ = stream.close().await;
}

async fn serve_frames(
    ctx: &ShardContext,
    stream: &mut TcpStream,
    reader: &mut FrameReader,
    client_host: &str,
) -> Result<(), ConnectionError> {
    loop {
        let frame = if reader.has_frame()? {
            reader.take_frame()
        } else {
            let read = futures_lite::future::or(async { Some(reader.fill(stream).await) }, async {
                ctx.shutdown.wait().await;
                None
            });
            match read.await {
                None => return Ok(()),
                Some(Ok(true)) => continue,
                Some(Ok(false)) => return Ok(()),
                Some(Err(error)) => return Err(error),
            }
        };
        match dispatch(ctx, frame, client_host).await {
            Outcome::Respond(segments) => socket_io::write_segments(stream, &segments).await?,
            Outcome::NoResponse => {}
            Outcome::Close => return Err(ConnectionError::Unanswerable),
        }
        if ctx.shutdown.is_triggered() && !reader.has_frame()? {
            return Ok(());
        }
    }
}

/// Splits the byte stream into frames without copying them: each frame is a `Bytes` slice of
/// the read buffer, and record batches inside are in turn slices of the frame.
struct FrameReader {
    buf: BytesMut,
    frame_bytes_max: u32,
}

impl FrameReader {
    fn new(frame_bytes_max: u32) -> FrameReader {
        FrameReader {
            buf: BytesMut::new(),
            frame_bytes_max,
        }
    }

    /// Size of the next frame if its header is buffered.
    fn next_size(&self) -> Result<Option<usize>, ConnectionError> {
        let Some(header) = self.buf.get(..4) else {
            return Ok(None);
        };
        let size = i32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        if size < 0 || size as u32 > self.frame_bytes_max {
            return Err(ConnectionError::FrameSize {
                size: size as i64,
                max: self.frame_bytes_max,
            });
        }
        Ok(Some(size as usize))
    }

    fn has_frame(&self) -> Result<bool, ConnectionError> {
        Ok(self
            .next_size()?
            .is_some_and(|size| self.buf.len() >= 4 + size))
    }

    fn take_frame(&mut self) -> Bytes {
        let size = self
            .next_size()
            .ok()
            .flatten()
            .expect("take_frame follows has_frame");
        self.buf.advance(4);
        self.buf.split_to(size).freeze()
    }

    /// Reads more bytes; false at end of stream.
    async fn fill(&mut self, stream: &mut TcpStream) -> Result<bool, ConnectionError> {
        let wanted = match self.next_size()? {
            Some(size) => (4 + size)
                .saturating_sub(self.buf.len())
                .max(READ_CHUNK_BYTES),
            None => READ_CHUNK_BYTES,
        };
        let n = socket_io::read_into(stream, &mut self.buf, wanted).await?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_split_and_bad_sizes_refused() {
        let mut reader = FrameReader::new(100);
        reader
            .buf
            .extend_from_slice(&[0, 0, 0, 3, 1, 2, 3, 0, 0, 0, 1]);
        assert!(reader.has_frame().unwrap());
        assert_eq!(&reader.take_frame()[..], &[1, 2, 3]);
        assert!(!reader.has_frame().unwrap());
        reader.buf.extend_from_slice(&[9]);
        assert_eq!(&reader.take_frame()[..], &[9]);
        let mut reader = FrameReader::new(100);
        reader.buf.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert!(reader.has_frame().is_err());
        let mut reader = FrameReader::new(100);
        reader.buf.extend_from_slice(&[0, 0, 0, 101]);
        assert!(reader.has_frame().is_err());
    }
}
