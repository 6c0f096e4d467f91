//! Producer-state snapshot files: `<partition dir>/<20-digit offset>.snapshot`, the state of
//! every batch before that offset (Kafka's file name). Written to a temp file and renamed, so a
//! reader sees a whole file or none; a torn or corrupt file fails its CRC and is ignored (the
//! caller falls back to an older snapshot or a full scan). Not fsynced: losing one costs a
//! longer scan, never correctness.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, OpenOptions};

/// Snapshot files kept per partition (the newest ones).
const SNAPSHOTS_KEPT: usize = 2;
/// Snapshots larger than this are not read (a corrupt length, not a real state).
const SNAPSHOT_BYTES_MAX: u64 = 256 << 20;

const SUFFIX: &str = ".snapshot";

/// The snapshot file for `offset`.
pub fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{SUFFIX}"))
}

/// Offsets of the snapshot files in `dir`, newest first.
pub async fn list_snapshots(dir: &Path) -> Vec<i64> {
    let owned = dir.to_path_buf();
    let names = glommio::executor()
        .spawn_blocking(move || -> std::io::Result<Vec<String>> {
            std::fs::read_dir(owned)?
                .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .await
        .unwrap_or_default();
    let mut offsets: Vec<i64> = names
        .iter()
        .filter_map(|n| n.strip_suffix(SUFFIX))
        .filter(|stem| stem.len() == 20)
        .filter_map(|stem| stem.parse().ok())
        .collect();
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    offsets
}

/// Reads a snapshot file whole; `None` if it cannot be read.
pub async fn read_snapshot(path: &Path) -> Option<Vec<u8>> {
    let file = BufferedFile::open(path).await.ok()?;
    let data = async {
        let size = file.file_size().await.ok()?;
        if size > SNAPSHOT_BYTES_MAX {
            return None;
        }
        let mut out = Vec::with_capacity(size as usize);
        while (out.len() as u64) < size {
            let chunk = file
                .read_at(out.len() as u64, size as usize - out.len())
                .await
                .ok()?;
            if chunk.is_empty() {
                return None;
            }
            out.extend_from_slice(&chunk);
        }
        Some(out)
    }
    .await;
    let _ = file.close().await;
    data
}

/// Writes the snapshot for `offset` (temp file, then rename) and removes all but the newest
/// [`SNAPSHOTS_KEPT`] snapshots.
pub async fn write_snapshot(dir: &Path, offset: i64, data: Vec<u8>) -> std::io::Result<()> {
    let path = snapshot_path(dir, offset);
    let tmp = dir.join(format!("{offset:020}{SUFFIX}.tmp"));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .buffered_open(&tmp)
        .await?;
    let len = data.len();
    let written = file.write_at(data, 0).await;
    file.close().await?;
    if written? != len {
        let _ = glommio::io::remove(&tmp).await;
        return Err(std::io::Error::new(
            std::io::ErrorKind::WriteZero,
            "short snapshot write",
        ));
    }
    glommio::io::rename(&tmp, &path).await?;
    for old in list_snapshots(dir).await.into_iter().skip(SNAPSHOTS_KEPT) {
        let _ = glommio::io::remove(snapshot_path(dir, old)).await;
    }
    Ok(())
}

/// Removes a snapshot file (ignored if already gone).
pub async fn remove_snapshot(dir: &Path, offset: i64) {
    let _ = glommio::io::remove(snapshot_path(dir, offset)).await;
}
