//! The leader epoch cache (Kafka's `LeaderEpochFileCache`, `crate::leader_epoch`) the log owns:
//! read from `leader-epoch-checkpoint` at open, changed by appends, truncations and the log
//! start moving, and written back (temp file, fdatasync, rename, dir fsync) after each change.

use std::cell::Ref;

use super::{Log, Status};
use crate::error::LogError;
use crate::leader_epoch::{LeaderEpochFileCache, UNDEFINED_EPOCH_OFFSET};

impl Log {
    /// The latest leader epoch with data (or assigned at become-leader), if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epoch_cache.borrow().latest_epoch()
    }

    /// Kafka's `UnifiedLog.endOffsetForEpoch`: the largest epoch ≤ `epoch` this log knows
    /// and the offset that epoch ends at (the start of the next epoch, or the log end offset
    /// for the latest); `None` when the cache cannot say (`epoch` unknown and above every
    /// known one, or an empty cache).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, i64)> {
        let (found_epoch, end_offset) = self
            .epoch_cache
            .borrow()
            .end_offset_for(epoch, self.log_end_offset());
        (end_offset != UNDEFINED_EPOCH_OFFSET).then_some((found_epoch, end_offset))
    }

    /// The epoch cache itself, read-only (for the replication core). Do not hold the `Ref`
    /// across an `.await`: appends change the cache.
    pub fn epoch_cache(&self) -> Ref<'_, LeaderEpochFileCache> {
        self.epoch_cache.borrow()
    }

    /// Kafka's `maybeAssignEpochStartOffset` (a replica becoming leader assigns its new epoch
    /// at its log end offset): records that `epoch` starts at `start_offset`, by the cache's
    /// rules, and writes the checkpoint when that changed it.
    pub async fn assign_epoch_start_offset(
        &self,
        epoch: i32,
        start_offset: i64,
    ) -> Result<(), LogError> {
        let changed = self.epoch_cache.borrow_mut().assign(epoch, start_offset)?;
        if changed {
            self.epoch_cache_changed();
            self.checkpoint_epoch_cache().await?;
        }
        Ok(())
    }

    /// Notes that `epoch_cache` changed (the next `checkpoint_epoch_cache` writes it).
    pub(super) fn epoch_cache_changed(&self) {
        self.epoch_cache_version
            .set(self.epoch_cache_version.get() + 1);
    }

    /// Drops the epoch entries that start at or after `end_offset` (the log was cut there).
    pub(super) fn truncate_epochs_from_end(&self, end_offset: i64) {
        if self.epoch_cache.borrow_mut().truncate_from_end(end_offset) {
            self.epoch_cache_changed();
        }
    }

    /// Moves the epoch cache's start up to the log start offset (retention, DeleteRecords).
    pub(super) fn truncate_epochs_from_start(&self, start_offset: i64) {
        if self
            .epoch_cache
            .borrow_mut()
            .truncate_from_start(start_offset)
        {
            self.epoch_cache_changed();
        }
    }

    /// Writes `leader-epoch-checkpoint` if the cache changed since the file was last written
    /// (under the checkpoint permit, so the newest entries win).
    pub(super) async fn checkpoint_epoch_cache(&self) -> Result<(), LogError> {
        let _permit = self.checkpoint_permit().await?;
        if self.state.borrow().status == Status::Deleted {
            return Ok(());
        }
        let version = self.epoch_cache_version.get();
        if self.epoch_checkpointed_version.get() == version {
            return Ok(());
        }
        let cache = self.epoch_cache.borrow().clone();
        self.epoch_checkpoint.write(&cache).await?;
        self.epoch_checkpointed_version.set(version);
        Ok(())
    }
}
