//! The log's side of compaction (the cleaner itself is `crate::cleaner`): what is cleanable
//! (Kafka's `LogCleanerManager.cleanableOffsets`), the crash-safe swap of cleaned segments
//! (Kafka's `replaceSegments`) and the `cleaner-offset-checkpoint`.

use std::rc::Rc;

use super::{Log, Status};
use crate::checkpoint::write_checkpoint_bytes;
use crate::cleaner::clean::{cleaned_paths, CleanSegments, CleanedSegment};
use crate::cleaner::{crash_point, LogToClean};
use crate::error::LogError;
use crate::loader::{remove_if_exists, sync_dir};
use crate::segment::{offset_index_file_name, segment_file_name, time_index_file_name, LogSegment};

/// Kafka's per-log-dir file of first dirty offsets. Sluice keeps one per partition directory
/// (a partition's shard owns the file, no cross-thread writer), in Kafka's format with one
/// entry: `0\n1\n<topic> <partition> <offset>\n`.
pub const CLEANER_OFFSET_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";

/// Suffix of segment files a swap is replacing (removed once it completed).
pub(crate) const DELETED_SUFFIX: &str = ".deleted";
/// Suffix of a cleaned segment being swapped in.
pub(crate) const SWAP_SUFFIX: &str = ".swap";

/// The three files of segment `base` with `suffix` appended (`""`: the live names).
pub(crate) fn segment_paths(
    dir: &std::path::Path,
    base: i64,
    suffix: &str,
) -> [std::path::PathBuf; 3] {
    [
        dir.join(format!("{}{suffix}", segment_file_name(base))),
        dir.join(format!("{}{suffix}", offset_index_file_name(base))),
        dir.join(format!("{}{suffix}", time_index_file_name(base))),
    ]
}

impl Log {
    /// What a clean of this log would cover now, `None` when the log is not compacted, not
    /// open, or nothing lies below its first uncleanable offset. The first uncleanable offset
    /// is the least of the high watermark, the active segment's base (the readable end's
    /// segment's while writes are in flight) and, with `min.compaction.lag.ms`, the base of the
    /// first segment from the dirty part on whose largest timestamp is newer than that lag.
    pub fn log_to_clean(&self) -> Option<LogToClean> {
        let config = self.config.borrow();
        if !config.cleanup_policy_compact {
            return None;
        }
        let now_ms = self.clock.now_ms();
        let st = self.state.borrow();
        if st.status != Status::Open || st.truncating {
            return None;
        }
        let (&active_base, _) = st.segments.last_key_value()?;
        let first_dirty = match self.first_dirty_offset.get() {
            Some(o) if o >= st.log_start_offset && o <= st.log_end_offset => o,
            _ => st.log_start_offset,
        };
        let mut first_uncleanable = st
            .high_watermark
            .min(active_base)
            .min(st.readable_end.segment_base);
        let closed: Vec<(&Rc<LogSegment>, i64)> = st
            .segments
            .values()
            .zip(st.segments.keys().skip(1).copied())
            .collect();
        if config.min_compaction_lag_ms > 0 {
            let horizon = now_ms.saturating_sub(config.min_compaction_lag_ms);
            if let Some((s, _)) = closed
                .iter()
                .filter(|(_, next)| *next > first_dirty)
                .find(|(s, _)| s.largest_timestamp() > horizon)
            {
                first_uncleanable = first_uncleanable.min(s.base_offset);
            }
        }
        if first_uncleanable <= st.log_start_offset {
            return None;
        }
        let mut clean_bytes = 0;
        let mut dirty_bytes = 0;
        let mut first_dirty_timestamp = None;
        for (s, next) in &closed {
            if s.base_offset >= first_uncleanable || *next <= st.log_start_offset {
                continue;
            }
            if *next <= first_dirty {
                clean_bytes += s.size.get();
            } else if first_dirty < first_uncleanable {
                dirty_bytes += s.size.get();
                if first_dirty_timestamp.is_none() {
                    first_dirty_timestamp = s.rolling_based_timestamp.get();
                }
            }
        }
        let lag_passed = first_dirty_timestamp.is_some_and(|ts| {
            ts >= 0
                && config.max_compaction_lag_ms < i64::MAX
                && now_ms.saturating_sub(ts) > config.max_compaction_lag_ms
        });
        let horizon_passed = self
            .next_delete_horizon_ms
            .get()
            .is_some_and(|h| h <= now_ms);
        Some(LogToClean {
            first_dirty_offset: first_dirty.min(first_uncleanable),
            first_uncleanable_offset: first_uncleanable,
            clean_bytes,
            dirty_bytes,
            forced: lag_passed || horizon_passed,
        })
    }

    /// The closed segments below `first_uncleanable`, for one clean.
    pub(crate) fn clean_segments(&self, first_uncleanable: i64) -> Option<CleanSegments> {
        let st = self.state.borrow();
        if st.status != Status::Open || st.truncating {
            return None;
        }
        let segments = st
            .segments
            .values()
            .zip(st.segments.keys().skip(1).copied())
            .take_while(|(s, _)| s.base_offset < first_uncleanable)
            .map(|(s, next)| (s.clone(), next))
            .collect();
        Some(CleanSegments {
            segments,
            log_start_offset: st.log_start_offset,
            truncations: st.truncations,
            config: self.config.borrow().clone(),
            now_ms: self.clock.now_ms(),
        })
    }

    /// Kafka's `replaceSegments`, crash-safe at every step (the loader completes or undoes
    /// it). With appends and truncations held (as a truncation holds them) and the old
    /// segments checked unchanged: the `.cleaned` files are renamed `.swap` (the log's last:
    /// its name is the commit point), the old segments' files are renamed `.deleted`, the
    /// `.swap` files take the live names, the segment map changes in one step; then the
    /// `.deleted` files go. Returns `false` (and
    /// removes the cleaned files) when the log changed since the clean began (a truncation, or
    /// retention removed one of `old`): the next round starts over.
    pub(crate) async fn replace_segments(
        &self,
        old: &[Rc<LogSegment>],
        cleaned: CleanedSegment,
        truncations: u64,
    ) -> Result<bool, LogError> {
        let base = cleaned.base_offset;
        let from = cleaned_paths(&self.dir, base);
        let swap = segment_paths(&self.dir, base, SWAP_SUFFIX);
        // Held before the `.swap` names exist: a `.swap` on disk is what recovery installs,
        // so no truncation may change the old segments from then on.
        let guard = match self.begin_truncation().await {
            Ok(guard) => guard,
            Err(e) => {
                let _ = cleaned.file.close().await;
                self.remove_files(&from).await;
                return Err(e);
            }
        };
        let unchanged = {
            let st = self.state.borrow();
            st.truncations == truncations
                && old.iter().all(|s| {
                    st.segments
                        .get(&s.base_offset)
                        .is_some_and(|m| Rc::ptr_eq(m, s))
                })
        };
        if !unchanged {
            drop(guard);
            let _ = cleaned.file.close().await;
            self.remove_files(&from).await;
            return Ok(false);
        }
        let renamed = async {
            for i in [1, 2, 0] {
                rename(&from[i], &swap[i]).await?;
            }
            sync_dir(&self.dir).await?;
            crash_point("swap");
            for s in old {
                s.set_index_files(None);
                let live = segment_paths(&self.dir, s.base_offset, "");
                let doomed = segment_paths(&self.dir, s.base_offset, DELETED_SUFFIX);
                for (from, to) in live.iter().zip(&doomed) {
                    rename_if_exists(from, to).await?;
                }
            }
            sync_dir(&self.dir).await?;
            crash_point("deleted");
            let live = segment_paths(&self.dir, base, "");
            for i in [1, 2, 0] {
                rename(&swap[i], &live[i]).await?;
            }
            sync_dir(&self.dir).await
        }
        .await;
        if let Err(e) = renamed {
            // Half swapped on disk: the loader finishes it at the next open.
            self.fail();
            return Err(e);
        }
        crash_point("renamed");
        let now_ms = self.clock.now_ms();
        let seg = LogSegment::loaded(
            base,
            self.dir.join(segment_file_name(base)),
            cleaned.file,
            now_ms,
        );
        seg.set_loaded_size(cleaned.size);
        *seg.offset_index.borrow_mut() = cleaned.offset_index;
        *seg.time_index.borrow_mut() = cleaned.time_index;
        // The cleaner wrote the cleaned segment's index files whole.
        seg.mark_index_on_disk();
        seg.rolling_based_timestamp
            .set(cleaned.rolling_based_timestamp);
        if let Some(last) = old.last() {
            // Kafka keeps the replaced segments' last modification time (time retention
            // without timestamps).
            seg.last_modified_ms.set(last.last_modified_ms.get());
        }
        {
            let mut st = self.state.borrow_mut();
            for s in old {
                st.segments.remove(&s.base_offset);
            }
            st.segments.insert(base, Rc::new(seg));
            // The tail cache may hold batches of the replaced segments as they were.
            st.tail_cache.clear();
        }
        drop(guard);
        for s in old {
            if self
                .remove_files(&segment_paths(&self.dir, s.base_offset, DELETED_SUFFIX))
                .await
            {
                s.release_deleted();
            }
        }
        crash_point("done");
        Ok(true)
    }

    /// Removes `paths` (missing ones count as removed); whether all are gone.
    async fn remove_files(&self, paths: &[std::path::PathBuf]) -> bool {
        let mut removed = true;
        for p in paths {
            if let Err(e) = remove_if_exists(p).await {
                tracing::warn!(path = %p.display(), error = %e, "could not remove a cleaner file");
                removed = false;
            }
        }
        removed
    }

    /// Records that the offsets below `end_offset` are clean (checkpointed) and the earliest
    /// delete horizon the clean left.
    pub(crate) async fn cleaned_to(
        &self,
        end_offset: i64,
        next_delete_horizon_ms: Option<i64>,
    ) -> Result<(), LogError> {
        self.next_delete_horizon_ms.set(next_delete_horizon_ms);
        self.first_dirty_offset.set(Some(end_offset));
        let _permit = self.checkpoint_permit().await?;
        if self.state.borrow().status == Status::Deleted {
            return Ok(());
        }
        let (topic, partition) = topic_partition(&self.dir);
        let text = format!("0\n1\n{topic} {partition} {end_offset}\n");
        write_checkpoint_bytes(
            &self.dir,
            CLEANER_OFFSET_CHECKPOINT_FILE,
            self.checkpoint_writer,
            text.into_bytes(),
        )
        .await
    }

    /// The first dirty offset the cleaner recorded (`None`: the log start).
    pub fn first_dirty_offset(&self) -> Option<i64> {
        self.first_dirty_offset.get()
    }
}

/// `<topic>-<partition>` of a partition directory (the whole name and 0 otherwise).
fn topic_partition(dir: &std::path::Path) -> (String, i32) {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rsplit_once('-') {
        Some((topic, p)) if p.parse::<i32>().is_ok() => (topic.to_string(), p.parse().unwrap_or(0)),
        _ => (name, 0),
    }
}

/// Parses `cleaner-offset-checkpoint`: the offset of its single entry.
pub(crate) fn parse_cleaner_checkpoint(bytes: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "0" {
        return None;
    }
    let count: usize = lines.next()?.trim().parse().ok()?;
    if count != 1 {
        return None;
    }
    let offset: i64 = lines.next()?.rsplit(' ').next()?.parse().ok()?;
    (offset >= 0).then_some(offset)
}

async fn rename(from: &std::path::Path, to: &std::path::Path) -> Result<(), LogError> {
    glommio::io::rename(from, to)
        .await
        .map_err(|e| LogError::io(from, e))
}

async fn rename_if_exists(from: &std::path::Path, to: &std::path::Path) -> Result<(), LogError> {
    crate::loader::ok_if_missing(from, glommio::io::rename(from, to).await)
}
