//! When the log writes its `recovery-point` and `log-start-offset` checkpoint files (the file
//! format is `crate::checkpoint`): only when the value changed, one writer at a time.

use std::cell::Cell;

use super::{Log, Status};
use crate::checkpoint::{write_checkpoint, LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE};
use crate::error::LogError;

impl Log {
    /// Writes the `recovery-point` checkpoint if it changed.
    pub(super) async fn checkpoint_recovery_point(&self) -> Result<(), LogError> {
        self.checkpoint(
            RECOVERY_POINT_FILE,
            Self::recovery_point,
            &self.checkpointed_recovery_point,
        )
        .await
    }

    /// Writes the `log-start-offset` checkpoint if it changed.
    pub(super) async fn checkpoint_log_start_offset(&self) -> Result<(), LogError> {
        self.checkpoint(
            LOG_START_OFFSET_FILE,
            Self::log_start_offset,
            &self.checkpointed_log_start_offset,
        )
        .await
    }

    /// Writes checkpoint `file` with `value` (read under the permit, so the newest value wins)
    /// unless `written` says it already holds it.
    async fn checkpoint(
        &self,
        file: &str,
        value: fn(&Log) -> i64,
        written: &Cell<Option<i64>>,
    ) -> Result<(), LogError> {
        let _permit = self.checkpoint_permit().await?;
        if self.state.borrow().status == Status::Deleted {
            return Ok(());
        }
        let value = value(self);
        if written.get() == Some(value) {
            return Ok(());
        }
        write_checkpoint(&self.dir, file, self.checkpoint_writer, value).await?;
        written.set(Some(value));
        Ok(())
    }

    pub(super) async fn checkpoint_permit(&self) -> Result<glommio::sync::Permit<'_>, LogError> {
        self.checkpoint_lock
            .acquire_permit(1)
            .await
            .map_err(|e| LogError::io(&self.dir, std::io::Error::other(e.to_string())))
    }
}
