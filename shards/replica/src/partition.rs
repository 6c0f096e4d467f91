use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;
use sluice_log::{Log, LogAppendInfo, LogError};
use sluice_protocol::record_batch::{read_records, RecordBatchHeader, RecordBatches};

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

    /// The first record with a timestamp at or after `timestamp` (ListOffsets by time, as
    /// `offsetsForTimes` uses it): batches whose max timestamp is earlier are skipped by their
    /// header, the first candidate batch is opened (decompressed if need be) to find the record.
    /// The segment engine's time index replaces the header scan.
    pub async fn fetch_offset_for_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<OffsetAndTimestamp>, ReplicaError> {
        let mut found = None;
        self.scan_batches(|header, batch| {
            if header.max_timestamp < timestamp {
                return true;
            }
            found = first_record_at_or_after(&header, batch, timestamp);
            found.is_none()
        })
        .await?;
        Ok(found)
    }

    /// The record holding the largest timestamp (ListOffsets MAX_TIMESTAMP): the first batch
    /// with the largest max timestamp, and in it the first record carrying that timestamp.
    pub async fn fetch_max_timestamp_offset(
        &self,
    ) -> Result<Option<OffsetAndTimestamp>, ReplicaError> {
        let mut best: Option<(RecordBatchHeader, Bytes)> = None;
        self.scan_batches(|header, batch| {
            if best
                .as_ref()
                .is_none_or(|(b, _)| header.max_timestamp > b.max_timestamp)
            {
                best = Some((header, batch.clone()));
            }
            true
        })
        .await?;
        Ok(best.and_then(|(header, batch)| {
            first_record_at_or_after(&header, &batch, header.max_timestamp)
        }))
    }

    /// Visits every committed batch (header and bytes) until `visit` returns false.
    async fn scan_batches(
        &self,
        mut visit: impl FnMut(RecordBatchHeader, &Bytes) -> bool,
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
                let Ok((header, bytes)) = batch else { break };
                offset = header.last_offset() + 1;
                if !visit(header, &bytes) {
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

/// The first record of `batch` whose timestamp is at or after `timestamp`. A batch whose
/// records cannot be read (it passed its CRC, so this is a codec this broker cannot open)
/// answers with its base offset and max timestamp, the batch-level answer.
fn first_record_at_or_after(
    header: &RecordBatchHeader,
    batch: &Bytes,
    timestamp: i64,
) -> Option<OffsetAndTimestamp> {
    match read_records(batch) {
        Ok(records) => {
            records
                .iter()
                .find(|r| r.timestamp >= timestamp)
                .map(|r| OffsetAndTimestamp {
                    offset: header.base_offset + i64::from(r.offset_delta),
                    timestamp: r.timestamp,
                })
        }
        Err(error) => {
            tracing::warn!(%error, base_offset = header.base_offset, "cannot read records; answering at batch level");
            Some(OffsetAndTimestamp {
                offset: header.base_offset,
                timestamp: header.max_timestamp,
            })
        }
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
