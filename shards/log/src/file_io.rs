//! Whole-range reads and writes on top of glommio's positional file API.

use std::path::Path;

use bytes::{Bytes, BytesMut};
use glommio::io::BufferedFile;

use crate::error::LogError;

/// Reads exactly `len` bytes at `pos`. Buffered reads of regular files only
/// come back short at end of file, which inside the log means the file is
/// shorter than its accounting: reported as an unexpected EOF.
pub(crate) async fn read_exact(
    file: &BufferedFile,
    path: &Path,
    pos: u64,
    len: usize,
) -> Result<Bytes, LogError> {
    let first = file
        .read_at(pos, len)
        .await
        .map_err(|e| LogError::io(path, e))?;
    if first.len() == len {
        return Ok(Bytes::copy_from_slice(&first));
    }
    let mut out = BytesMut::with_capacity(len);
    out.extend_from_slice(&first);
    while out.len() < len {
        let at = pos + out.len() as u64;
        let more = file
            .read_at(at, len - out.len())
            .await
            .map_err(|e| LogError::io(path, e))?;
        if more.is_empty() {
            return Err(LogError::io(
                path,
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("at byte {at}")),
            ));
        }
        out.extend_from_slice(&more);
    }
    Ok(out.freeze())
}

/// Writes all of `buf` at `pos`. glommio takes the buffer and drops it, so
/// the rest of a short write (full disk) cannot be re-sent without having
/// kept a second copy; it is reported as an error instead, which fails the
/// log (no acknowledged data depends on it).
pub(crate) async fn write_all(
    file: &BufferedFile,
    path: &Path,
    buf: Vec<u8>,
    pos: u64,
) -> Result<(), LogError> {
    let len = buf.len();
    let written = file
        .write_at(buf, pos)
        .await
        .map_err(|e| LogError::io(path, e))?;
    if written == len {
        return Ok(());
    }
    Err(LogError::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            format!("short write of {written}/{len} bytes at byte {pos}"),
        ),
    ))
}
