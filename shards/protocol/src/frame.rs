//! Size-prefixed framing: every Kafka request and response is a 4-byte
//! big-endian length followed by that many bytes.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{ProtocolError, Result};

/// Length of the size prefix.
pub const SIZE_PREFIX_LEN: usize = 4;

/// Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_REQUEST_SIZE: usize = 100 * 1024 * 1024;

/// Validates a size prefix: negative sizes and sizes above `max` are errors, so
/// the caller never reserves a buffer on the word of an unauthenticated peer.
pub fn frame_size(prefix: [u8; SIZE_PREFIX_LEN], max: usize) -> Result<usize> {
    let size = i32::from_be_bytes(prefix);
    match usize::try_from(size) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(ProtocolError::FrameTooLarge {
            size: i64::from(size),
            max,
        }),
    }
}

/// Reads and validates the size prefix at the start of `buf`; `Ok(None)` if
/// fewer than 4 bytes are buffered.
pub fn peek_frame_size(buf: &[u8], max: usize) -> Result<Option<usize>> {
    match buf.get(..SIZE_PREFIX_LEN) {
        Some(&[a, b, c, d]) => frame_size([a, b, c, d], max).map(Some),
        _ => Ok(None),
    }
}

/// If `buf` holds a whole frame, removes it (prefix included) from `buf` and
/// returns the frame body without its prefix; `Ok(None)` if more bytes are needed.
pub fn split_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>> {
    let Some(size) = peek_frame_size(buf, max)? else {
        return Ok(None);
    };
    if buf.len() - SIZE_PREFIX_LEN < size {
        return Ok(None);
    }
    buf.advance(SIZE_PREFIX_LEN);
    Ok(Some(buf.split_to(size).freeze()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_negative_and_oversize() {
        assert_eq!(frame_size([0, 0, 0, 5], 10), Ok(5));
        assert!(frame_size([0xff, 0xff, 0xff, 0xff], 10).is_err());
        assert!(frame_size([0, 0, 0, 11], 10).is_err());
        assert_eq!(frame_size([0, 0, 0, 0], 10), Ok(0));
    }

    #[test]
    fn splits_whole_frames_only() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 9][..]);
        assert_eq!(split_frame(&mut buf, 100), Ok(None));
        buf.extend_from_slice(&[8, 0, 0]);
        assert_eq!(
            split_frame(&mut buf, 100),
            Ok(Some(Bytes::from_static(&[9, 8])))
        );
        assert_eq!(&buf[..], &[0, 0]);
        assert_eq!(split_frame(&mut buf, 100), Ok(None));
    }
}
