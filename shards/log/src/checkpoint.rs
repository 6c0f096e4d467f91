//! Per-partition offset checkpoint files (`recovery-point`,
//! `log-start-offset`): the text `0\n<offset>\n` (format version, offset),
//! replaced atomically: written to `<name>.<writer>.tmp`, fdatasync'ed,
//! renamed over the old file, then the directory is fsynced. All through
//! glommio. `<writer>` tells `Log` instances apart, so that a dropped log's
//! last background flush cannot race the next instance's temp file.

use std::path::Path;

use glommio::io::{BufferedFile, OpenOptions};
use tracing::warn;

use crate::error::LogError;
use crate::file_io::{read_exact, write_all};
use crate::loader::sync_dir;

pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point";
pub(crate) const LOG_START_OFFSET_FILE: &str = "log-start-offset";
const VERSION: &str = "0";

/// Whether `file` is a leftover temp file of checkpoint `name`.
pub(crate) fn is_temp_of(file: &str, name: &str) -> bool {
    file.strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('.'))
        .is_some_and(|rest| rest.ends_with(".tmp"))
}

/// A process-unique id for a checkpoint writer (one per `Log` instance).
pub(crate) fn new_writer_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Reads a checkpoint; `None` if missing or unreadable (with a warning for
/// the latter; the caller falls back to the safe default).
pub(crate) async fn read_checkpoint(dir: &Path, name: &str) -> Option<i64> {
    let path = dir.join(name);
    let file = BufferedFile::open(&path).await.ok()?;
    let parsed = async {
        let size = file.file_size().await.ok()?;
        if size > 64 {
            return None;
        }
        let data = read_exact(&file, &path, 0, size as usize).await.ok()?;
        let text = std::str::from_utf8(&data).ok()?;
        let mut lines = text.lines();
        if lines.next()? != VERSION {
            return None;
        }
        let value: i64 = lines.next()?.trim().parse().ok()?;
        (value >= 0 && lines.next().is_none()).then_some(value)
    }
    .await;
    let _ = file.close().await;
    if parsed.is_none() {
        warn!(path = %path.display(), "ignoring unreadable checkpoint file");
    }
    parsed
}

/// Reads the whole file `name` in `dir` (at most `size_max_bytes`), `None` if it does not exist;
/// unlike `read_checkpoint`, every other failure is an error for the caller to report.
pub(crate) async fn read_checkpoint_bytes(
    dir: &Path,
    name: &str,
    size_max_bytes: u64,
) -> Result<Option<Vec<u8>>, LogError> {
    let path = dir.join(name);
    let file = match BufferedFile::open(&path).await {
        Ok(file) => file,
        Err(e) => {
            let e: std::io::Error = e.into();
            if e.kind() == std::io::ErrorKind::NotFound {
                return Ok(None);
            }
            return Err(LogError::io(&path, e));
        }
    };
    let data = async {
        let size = file.file_size().await.map_err(|e| LogError::io(&path, e))?;
        if size > size_max_bytes {
            return Err(LogError::Corrupt {
                path: path.clone(),
                position: size_max_bytes,
                reason: format!(
                    "{size} bytes, more than the {size_max_bytes} a checkpoint may hold"
                ),
            });
        }
        read_exact(&file, &path, 0, size as usize).await
    }
    .await;
    let _ = file.close().await;
    data.map(|bytes| Some(bytes.to_vec()))
}

/// Replaces the checkpoint `name` in `dir` with `value`, durably.
pub(crate) async fn write_checkpoint(
    dir: &Path,
    name: &str,
    writer: u64,
    value: i64,
) -> Result<(), LogError> {
    write_checkpoint_bytes(
        dir,
        name,
        writer,
        format!("{VERSION}\n{value}\n").into_bytes(),
    )
    .await
}

/// Replaces the file `name` in `dir` with `bytes`, durably: temp file, fdatasync, rename, then
/// the directory is fsynced (shared by every checkpoint format, e.g. `leader-epoch-checkpoint`).
pub(crate) async fn write_checkpoint_bytes(
    dir: &Path,
    name: &str,
    writer: u64,
    bytes: Vec<u8>,
) -> Result<(), LogError> {
    let tmp = dir.join(format!("{name}.{writer}.tmp"));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .buffered_open(&tmp)
        .await
        .map_err(|e| LogError::io(&tmp, e))?;
    let written = async {
        write_all(&file, &tmp, bytes, 0).await?;
        file.fdatasync().await.map_err(|e| LogError::io(&tmp, e))
    }
    .await;
    file.close().await.map_err(|e| LogError::io(&tmp, e))?;
    written?;
    let path = dir.join(name);
    glommio::io::rename(&tmp, &path)
        .await
        .map_err(|e| LogError::io(&path, e))?;
    sync_dir(dir).await
}
