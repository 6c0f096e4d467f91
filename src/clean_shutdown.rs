//! Kafka's clean shutdown file (`.kafka_cleanshutdown` in the data directory, KIP-966): a broker
//! that stopped cleanly — every shard drained and its logs closed — records the broker epoch of
//! its last registration; the next start takes that epoch out (deleting the file) and sends it
//! as `PreviousBrokerEpoch` when it registers. A crash leaves no file, so the controller sees
//! -1, unlike the registration it has, and takes the broker out of every ELR: it may have lost
//! its unflushed tail.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

/// Kafka's name for the file.
const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// Takes the epoch a clean shutdown recorded in `dir`, -1 when there is none (or it is not
/// readable as Kafka's `{"version":0,"brokerEpoch":N}`). The file is removed, durably, first:
/// a crash of this run must not be taken for a clean stop.
pub fn take_previous_broker_epoch(dir: &Path) -> Result<i64, String> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(-1),
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    fs::remove_file(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
    sync_dir(dir)?;
    Ok(parse_broker_epoch(&text).unwrap_or(-1))
}

/// Records a clean shutdown of the registration with `broker_epoch` in `dir` (written aside,
/// fsynced, renamed, the directory fsynced: never half a file).
pub fn record_clean_shutdown(dir: &Path, broker_epoch: i64) -> Result<(), String> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let tmp = dir.join(format!("{CLEAN_SHUTDOWN_FILE}.tmp"));
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&tmp)?;
        write!(file, "{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}")?;
        file.sync_all()?;
        fs::rename(&tmp, &path)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", dir.display()))
}

/// The `brokerEpoch` of Kafka's JSON.
fn parse_broker_epoch(text: &str) -> Option<i64> {
    let (_, rest) = text.split_once("\"brokerEpoch\"")?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_shutdown_is_taken_once() {
        let dir = std::env::temp_dir().join(format!("sluice-clean-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(take_previous_broker_epoch(&dir), Ok(-1));
        record_clean_shutdown(&dir, 42).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join(CLEAN_SHUTDOWN_FILE)).unwrap(),
            r#"{"version":0,"brokerEpoch":42}"#
        );
        assert_eq!(take_previous_broker_epoch(&dir), Ok(42));
        // Taken: a crash of the next run leaves nothing behind.
        assert_eq!(take_previous_broker_epoch(&dir), Ok(-1));
        fs::write(dir.join(CLEAN_SHUTDOWN_FILE), "garbage").unwrap();
        assert_eq!(take_previous_broker_epoch(&dir), Ok(-1));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kafkas_format_is_read() {
        assert_eq!(
            parse_broker_epoch(r#"{"version": 0, "brokerEpoch": 1234}"#),
            Some(1234)
        );
        assert_eq!(parse_broker_epoch(r#"{"version":0}"#), None);
    }
}
