//! The metadata log on disk: `<log.dirs>/__cluster_metadata-0/metadata.log`, a sequence of
//! frames `[payload length: u32][crc32c of payload: u32][payload: one MetadataRecord]`.
//!
//! Every append is fsynced before it is acknowledged: metadata is small and rare, and a topic
//! the client was told exists must exist after a crash. At load, a torn or corrupt tail (a crash
//! in the middle of an append) is cut off; everything before it was acknowledged intact.

use std::path::{Path, PathBuf};

use glommio::io::{BufferedFile, OpenOptions};
use tracing::warn;

use crate::records::{MetadataRecord, RecordError};

const FRAME_HEADER_BYTES: usize = 8;
/// A record larger than this is corruption, not data (the largest real one is a config value).
const RECORD_BYTES_MAX: usize = 1 << 20;
const READ_CHUNK_BYTES: usize = 1 << 20;

/// Why the metadata log failed.
#[derive(Debug, thiserror::Error)]
pub enum MetadataLogError {
    /// Disk I/O failed.
    #[error("metadata log I/O on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A record that passed its CRC did not decode: a bug or an incompatible version.
    #[error("metadata log {path}: {source}")]
    Record {
        /// The file.
        path: PathBuf,
        /// The error.
        source: RecordError,
    },
}

/// The open metadata log.
pub struct MetadataLog {
    path: PathBuf,
    file: BufferedFile,
    size_bytes: u64,
}

impl MetadataLog {
    /// Opens (creating) the log under `log_dir` and returns it with every intact record.
    pub async fn open(
        log_dir: &Path,
    ) -> Result<(MetadataLog, Vec<MetadataRecord>), MetadataLogError> {
        let dir = log_dir.join("__cluster_metadata-0");
        let path = dir.join("metadata.log");
        let io = |source| MetadataLogError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .buffered_open(&path)
            .await
            .map_err(|e| io(e.into()))?;
        let size_bytes = file.file_size().await.map_err(|e| io(e.into()))?;
        let bytes = read_all(&file, size_bytes).await.map_err(io)?;
        let (records, valid_bytes) =
            parse_frames(&bytes).map_err(|source| MetadataLogError::Record {
                path: path.clone(),
                source,
            })?;
        if (valid_bytes as u64) < size_bytes {
            warn!(path = %path.display(), cut_bytes = size_bytes - valid_bytes as u64, "cutting torn tail of the metadata log");
            file.truncate(valid_bytes as u64)
                .await
                .map_err(|e| io(e.into()))?;
            file.fdatasync().await.map_err(|e| io(e.into()))?;
        }
        let log = MetadataLog {
            path: path.clone(),
            file,
            size_bytes: valid_bytes as u64,
        };
        Ok((log, records))
    }

    /// Appends records and fsyncs them; when this returns they survive a crash.
    pub async fn append(&mut self, records: &[MetadataRecord]) -> Result<(), MetadataLogError> {
        let mut buf = Vec::new();
        let mut payload = Vec::new();
        for record in records {
            payload.clear();
            record.encode(&mut payload);
            buf.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            buf.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
            buf.extend_from_slice(&payload);
        }
        let len = buf.len() as u64;
        let io = |e: glommio::GlommioError<()>| MetadataLogError::Io {
            path: self.path.clone(),
            source: e.into(),
        };
        self.file.write_at(buf, self.size_bytes).await.map_err(io)?;
        self.file.fdatasync().await.map_err(io)?;
        self.size_bytes += len;
        Ok(())
    }
}

async fn read_all(file: &BufferedFile, size_bytes: u64) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(size_bytes.min(64 << 20) as usize);
    let mut pos = 0u64;
    while pos < size_bytes {
        let want = READ_CHUNK_BYTES.min((size_bytes - pos) as usize);
        let chunk = file
            .read_at(pos, want)
            .await
            .map_err(std::io::Error::from)?;
        if chunk.is_empty() {
            break;
        }
        out.extend_from_slice(&chunk);
        pos += chunk.len() as u64;
    }
    Ok(out)
}

/// Splits `bytes` into records; returns them and the length of the intact prefix.
fn parse_frames(bytes: &[u8]) -> Result<(Vec<MetadataRecord>, usize), RecordError> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while let Some(header) = bytes.get(pos..pos + FRAME_HEADER_BYTES) {
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if len == 0 || len > RECORD_BYTES_MAX {
            break;
        }
        let start = pos + FRAME_HEADER_BYTES;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        if crc32c::crc32c(payload) != crc {
            break;
        }
        records.push(MetadataRecord::decode(payload)?);
        pos = start + len;
    }
    Ok((records, pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_tail_is_cut_at_every_length() {
        let records = vec![
            MetadataRecord::ClusterId {
                cluster_id: "c".into(),
            },
            MetadataRecord::RemoveTopic {
                topic_id: sluice_protocol::codec::Uuid::from_u128(9),
            },
        ];
        let mut bytes = Vec::new();
        let mut boundaries = vec![0];
        for record in &records {
            let mut payload = Vec::new();
            record.encode(&mut payload);
            bytes.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            bytes.extend_from_slice(&crc32c::crc32c(&payload).to_be_bytes());
            bytes.extend_from_slice(&payload);
            boundaries.push(bytes.len());
        }
        for cut in 0..=bytes.len() {
            let (parsed, valid) = parse_frames(&bytes[..cut]).unwrap();
            let expected_valid = *boundaries.iter().filter(|b| **b <= cut).max().unwrap();
            assert_eq!(valid, expected_valid, "cut at {cut}");
            assert_eq!(
                parsed.as_slice(),
                &records[..boundaries.iter().position(|b| *b == valid).unwrap()]
            );
        }
        let mut corrupt = bytes.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert_eq!(parse_frames(&corrupt).unwrap().1, boundaries[1]);
    }
}
