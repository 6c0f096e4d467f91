//! Where the quorum log's bytes live: two files behind a small trait, so the format code in
//! `quorum_log` runs unchanged on a real directory (`FileDisk`) and on the simulation's
//! crashable memory (`MemDisk`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Two files: the append-only log, and the hard state, replaced whole.
pub trait Disk {
    /// The whole log file.
    fn read_log(&mut self) -> std::io::Result<Vec<u8>>;
    /// Appends to the log file (durable only after `sync_log`).
    fn append_log(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Cuts the log file to `len_bytes` (durable only after `sync_log`).
    fn truncate_log(&mut self, len_bytes: u64) -> std::io::Result<()>;
    /// Makes every append and truncation so far durable.
    fn sync_log(&mut self) -> std::io::Result<()>;
    /// The hard-state file, if one was ever written.
    fn read_state(&mut self) -> std::io::Result<Option<Vec<u8>>>;
    /// Replaces the hard-state file atomically and durably: after a crash it holds either the
    /// old bytes or these, and these once this returns.
    fn replace_state(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// The file or directory named in errors.
    fn path(&self) -> PathBuf;
}

const LOG_FILE_NAME: &str = "quorum.log";
const STATE_FILE_NAME: &str = "quorum.state";
const STATE_TEMP_FILE_NAME: &str = "quorum.state.tmp";

/// The quorum's files in a directory: `quorum.log` and `quorum.state` (written as
/// `quorum.state.tmp`, fsynced, renamed over, directory fsynced).
///
/// Blocking `std::fs` I/O: the controller's glommio executor will want an io_uring twin of this
/// (the trait is small on purpose).
pub struct FileDisk {
    dir: PathBuf,
    log: File,
}

impl FileDisk {
    /// Opens (creating) the directory and its log file.
    pub fn open(dir: &Path) -> std::io::Result<FileDisk> {
        std::fs::create_dir_all(dir)?;
        let log_path = dir.join(LOG_FILE_NAME);
        let created = !log_path.exists();
        let log = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&log_path)?;
        if created {
            sync_dir(dir)?;
        }
        Ok(FileDisk {
            dir: dir.to_path_buf(),
            log,
        })
    }
}

impl Disk for FileDisk {
    fn read_log(&mut self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        File::open(self.dir.join(LOG_FILE_NAME))?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    fn append_log(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.log.write_all(bytes)
    }

    fn truncate_log(&mut self, len_bytes: u64) -> std::io::Result<()> {
        // The file is opened for append: later writes go to the new end.
        self.log.set_len(len_bytes)
    }

    fn sync_log(&mut self) -> std::io::Result<()> {
        // fdatasync also writes the size, which an append or a truncation changed.
        self.log.sync_data()
    }

    fn read_state(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::read(self.dir.join(STATE_FILE_NAME)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn replace_state(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let temp = self.dir.join(STATE_TEMP_FILE_NAME);
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, self.dir.join(STATE_FILE_NAME))?;
        sync_dir(&self.dir)
    }

    fn path(&self) -> PathBuf {
        self.dir.clone()
    }
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The simulation's disk: memory that keeps, across a `crash`, only what was synced (plus,
/// if asked, a torn piece of the unsynced tail).
#[derive(Clone, Debug, Default)]
pub struct MemDisk {
    log: Vec<u8>,
    log_durable: Vec<u8>,
    state: Option<Vec<u8>>,
    /// Durable operations (log syncs, state replacements) left before the power goes.
    durable_ops_before_power_loss: Option<u32>,
}

impl MemDisk {
    /// An empty disk.
    pub fn new() -> MemDisk {
        MemDisk::default()
    }

    /// Power loss: the log reverts to its last synced bytes. If what was written since merely
    /// extends them, `torn_bytes_kept` of the unsynced bytes survive (as a page that reached the
    /// platter would), the last of them flipped when `torn_byte_flipped`. The hard state is
    /// always whole: it is replaced atomically.
    pub fn crash(&mut self, torn_bytes_kept: usize, torn_byte_flipped: bool) {
        let mut after = self.log_durable.clone();
        if self.log.starts_with(&self.log_durable) {
            let unsynced = &self.log[self.log_durable.len()..];
            let kept = torn_bytes_kept.min(unsynced.len());
            after.extend_from_slice(&unsynced[..kept]);
            if torn_byte_flipped && kept > 0 {
                if let Some(last) = after.last_mut() {
                    *last ^= 0x5a;
                }
            }
        }
        self.log = after;
        self.log_durable = self.log.clone();
        self.durable_ops_before_power_loss = None;
    }

    /// The power goes during the `durable_ops`-th next durable operation (a log sync or a
    /// hard-state replacement, counted from 1): it fails with an I/O error and leaves nothing
    /// durable, and so does every one after it until `crash`.
    pub fn arm_power_loss(&mut self, durable_ops: u32) {
        self.durable_ops_before_power_loss = Some(durable_ops.max(1));
    }

    fn durable_op(&mut self) -> std::io::Result<()> {
        match &mut self.durable_ops_before_power_loss {
            Some(0) | Some(1) => {
                self.durable_ops_before_power_loss = Some(0);
                Err(std::io::Error::other("simulated power loss"))
            }
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Bytes in the log file, synced or not.
    pub fn log_len_bytes(&self) -> usize {
        self.log.len()
    }
}

impl Disk for MemDisk {
    fn read_log(&mut self) -> std::io::Result<Vec<u8>> {
        Ok(self.log.clone())
    }

    fn append_log(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.log.extend_from_slice(bytes);
        Ok(())
    }

    fn truncate_log(&mut self, len_bytes: u64) -> std::io::Result<()> {
        let len = usize::try_from(len_bytes).unwrap_or(usize::MAX);
        self.log.truncate(len);
        Ok(())
    }

    fn sync_log(&mut self) -> std::io::Result<()> {
        self.durable_op()?;
        if self.log.starts_with(&self.log_durable) {
            let synced = self.log_durable.len();
            self.log_durable.extend_from_slice(&self.log[synced..]);
        } else {
            self.log_durable.clone_from(&self.log);
        }
        Ok(())
    }

    fn read_state(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        Ok(self.state.clone())
    }

    fn replace_state(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.durable_op()?;
        self.state = Some(bytes.to_vec());
        Ok(())
    }

    fn path(&self) -> PathBuf {
        PathBuf::from("<memory>")
    }
}
