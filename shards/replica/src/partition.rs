use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;
use sluice_log::{Log, LogAppendInfo, LogError};
use sluice_protocol::record_batch::RecordBatches;

use crate::{ReplicaError, TopicIdPartition};

/// Bytes read per step when a timestamp lookup scans the log.
const TIMESTAMP_SCAN_CHUNK_BYTES: usize = 1 << 20;

/// One partition on this shard, with its log.
pub struct Partition {
    /// Routing identity.
    pub tp: TopicIdPartition,
    /// The topic's name, for logs and directory names.
    pub topic: Rc<str>,
    log: Rc<Log>,
    leader_epoch: Cell<i32>,
}

/// What a fetch read from one partition.
#[derive(Debug)]
pub struct FetchPartitionData {
    /// Whole batches as stored.
    pub records: Bytes,
    /// The high watermark when the read was made.
    pub high_watermark: i64,
    /// The log start offset.
    pub log_start_offset: i64,
}

/// An offset found by ListOffsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetAndTimestamp {
    /// The offset.
    pub offset: i64,
    /// The timestamp at that offset, or -1 when the lookup was not by time.
    pub timestamp: i64,
}

impl Partition {
    /// Wraps an opened log.
    pub fn new(tp: TopicIdPartition, topic: Rc<str>, log: Rc<Log>, leader_epoch: i32) -> Partition {
        Partition {
            tp,
            topic,
            log,
            leader_epoch: Cell::new(leader_epoch),
        }
    }

    /// Bounds the in-memory copy of the newest appends.
    pub fn set_tail_cache_bytes(&self, bytes: usize) {
        self.log.set_tail_cache_bytes(bytes);
    }

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.get()
    }

    /// The high watermark: the end of what consumers may read. With one replica, every write
    /// that completed is committed.
    pub fn high_watermark(&self) -> i64 {
        self.log.readable_end_offset()
    }

    /// The first offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    /// The next offset to be assigned.
    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// Bytes a fetch from `offset` could return right now, for `fetch.min.bytes` accounting.
    pub fn readable_bytes_from(&self, offset: i64) -> u64 {
        self.log.readable_bytes_from(offset)
    }

    /// Appends validated batches as leader.
    pub async fn append_records_to_leader(
        &self,
        batches: &[u8],
    ) -> Result<LogAppendInfo, ReplicaError> {
        Ok(self.log.append(batches).await?)
    }

    /// Reads whole batches from `fetch_offset` up to the high watermark.
    pub async fn read_records(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        min_one_message: bool,
    ) -> Result<FetchPartitionData, ReplicaError> {
        let high_watermark = self.high_watermark();
        let log_start_offset = self.log_start_offset();
        if fetch_offset < log_start_offset || fetch_offset > high_watermark {
            return Err(ReplicaError::OffsetOutOfRange {
                offset: fetch_offset,
                log_start_offset,
                log_end_offset: high_watermark,
            });
        }
        let read = self
            .log
            .read(
                fetch_offset,
                max_bytes,
                min_one_message,
                Some(high_watermark),
            )
            .await
            .map_err(out_of_range_or_storage)?;
        Ok(FetchPartitionData {
            records: read.records,
            high_watermark,
            log_start_offset,
        })
    }

    /// Resolves once the high watermark passes `offset` (an append landed after it).
    pub async fn wait_for_append(&self, offset: i64) {
        self.log.wait_for_append(offset).await
    }

    /// The first offset whose batch has a timestamp at or after `timestamp`, by scanning batch
    /// headers (batch granularity). The time index of the segment engine replaces the scan.
    pub async fn fetch_offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<OffsetAndTimestamp>, ReplicaError> {
        let mut found = None;
        self.scan_batches(|base_offset, _last, max_timestamp| {
            if max_timestamp >= timestamp {
                found = Some(OffsetAndTimestamp {
                    offset: base_offset,
                    timestamp: max_timestamp,
                });
                return false;
            }
            true
        })
        .await?;
        Ok(found)
    }

    /// The batch holding the largest timestamp (its last offset), as ListOffsets MAX_TIMESTAMP.
    pub async fn fetch_max_timestamp_offset(
        &self,
    ) -> Result<Option<OffsetAndTimestamp>, ReplicaError> {
        let mut best: Option<OffsetAndTimestamp> = None;
        self.scan_batches(|_base, last_offset, max_timestamp| {
            if best.is_none_or(|b| max_timestamp > b.timestamp) {
                best = Some(OffsetAndTimestamp {
                    offset: last_offset,
                    timestamp: max_timestamp,
                });
            }
            true
        })
        .await?;
        Ok(best)
    }

    /// Visits (base offset, last offset, max timestamp) of every committed batch until `visit`
    /// returns false.
    async fn scan_batches(
        &self,
        mut visit: impl FnMut(i64, i64, i64) -> bool,
    ) -> Result<(), ReplicaError> {
        let mut offset = self.log_start_offset();
        let end = self.high_watermark();
        while offset < end {
            let read = self
                .log
                .read(offset, TIMESTAMP_SCAN_CHUNK_BYTES, true, Some(end))
                .await
                .map_err(out_of_range_or_storage)?;
            if read.records.is_empty() {
                break;
            }
            for batch in RecordBatches::new(read.records) {
                let Ok((header, _)) = batch else { break };
                offset = header.last_offset() + 1;
                if !visit(
                    header.base_offset,
                    header.last_offset(),
                    header.max_timestamp,
                ) {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Flushes and closes the log for a clean shutdown.
    pub async fn close(&self) -> Result<(), ReplicaError> {
        Ok(self.log.close().await?)
    }

    /// Removes the partition's files.
    pub async fn delete(&self) -> Result<(), ReplicaError> {
        Ok(self.log.delete().await?)
    }
}

fn out_of_range_or_storage(error: LogError) -> ReplicaError {
    match error {
        LogError::OffsetOutOfRange {
            offset,
            log_start_offset,
            log_end_offset,
        } => ReplicaError::OffsetOutOfRange {
            offset,
            log_start_offset,
            log_end_offset,
        },
        other => ReplicaError::Storage(other),
    }
}
