mod replication;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use sluice_log::{AppendBatches, Log, LogAppendInfo, LogConfig, LogError, QuietMark, Records};
use sluice_protocol::record_batch::{parse_header, read_records, RecordBatchHeader, RecordBatches};
use tracing::{debug, info, warn};

use crate::producer_state::{AppendCheck, BatchMetadata, ProducerBatch, ProducerStateManager};
use crate::replication::EpochEndOffset;
use crate::snapshot;
use crate::{ReplicaError, TopicIdPartition};

pub use replication::{
    FollowerFetchRequest, FollowerFetchResult, FollowerFetchState, ReadReplicaView, Role,
};

/// Bytes read per step when a timestamp lookup scans the log.
const TIMESTAMP_SCAN_CHUNK_BYTES: usize = 1 << 20;

/// A producer-state snapshot is written once this much was appended since the last one, so a
/// restart after a crash rescans at most about this much of the log (plus what the newest
/// snapshot missed). Also written at clean close.
const SNAPSHOT_INTERVAL_BYTES: u64 = 64 << 20;

/// One partition on this shard, with its log.
pub struct Partition {
    /// Routing identity.
    pub tp: TopicIdPartition,
    /// The topic's name, for logs and directory names.
    pub topic: Rc<str>,
    log: Rc<Log>,
    leader_epoch: Cell<i32>,
    dir: PathBuf,
    producers: RefCell<ProducerStateManager>,
    bytes_since_snapshot: Cell<u64>,
    snapshot_running: Rc<Cell<bool>>,
    /// This broker's id (`node.id`).
    local_broker_id: i32,
    /// Leader (with its followers' states), follower, or not told yet.
    role: RefCell<Role>,
    /// Bumped at every role or ISR change; delayed produces wait on it.
    role_generation: Cell<u64>,
    role_wakers: RefCell<Vec<(u64, std::task::Waker)>>,
    role_waiter_next: Cell<u64>,
}

/// A consumer's read of one partition: the fetch's fields for it, and Kafka's
/// `FetchParams.fetchOnlyLeader` (a consumer without client metadata, before Fetch v11, reads
/// leaders only; otherwise a follower serves the read too, KIP-392).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerRead {
    pub fetch_offset: i64,
    pub max_bytes: usize,
    pub min_one_message: bool,
    /// -1: any epoch.
    pub current_leader_epoch: i32,
    pub fetch_only_leader: bool,
}

/// What a fetch read from one partition.
#[derive(Debug)]
pub struct FetchPartitionData {
    /// Whole batches as stored: in memory, or (a consumer's read) a region of a segment
    /// file to send as it is.
    pub records: Records,
    /// The high watermark when the read was made.
    pub high_watermark: i64,
    /// The log start offset.
    pub log_start_offset: i64,
    /// A follower's log diverges from this leader's (KIP-320): it truncates first.
    pub diverging_epoch: Option<EpochEndOffset>,
    /// KIP-392: the replica the consumer should fetch from instead of this leader (nothing
    /// was read then).
    pub preferred_read_replica: Option<i32>,
    /// A consumer's read that found nothing new (caught up to the high watermark, no error):
    /// the log's fetch stamp as it was, so that a fetch session can leave the partition out of
    /// its reads until the stamp moves (`sluice_log::FetchStamp`).
    pub quiet: Option<QuietMark>,
}

impl FetchPartitionData {
    /// A consumer's read: records up to the high watermark, no replication fields.
    fn consumed(records: Records, high_watermark: i64, log_start_offset: i64) -> Self {
        Self {
            records,
            high_watermark,
            log_start_offset,
            diverging_epoch: None,
            preferred_read_replica: None,
            quiet: None,
        }
    }
}

/// One partition's log as DescribeLogDirs reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionLogDirInfo {
    /// The topic's name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
    /// Bytes of the log's segments.
    pub size_bytes: u64,
    /// High watermark minus log end offset, never below 0.
    pub offset_lag: i64,
}

/// One producer's state on a partition, as DescribeProducers reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveProducer {
    /// Producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub producer_epoch: i16,
    /// Sequence of its last record written (-1: none remembered).
    pub last_sequence: i32,
    /// Max timestamp of its last batch (-1: none remembered).
    pub last_timestamp: i64,
    /// Epoch of the transaction coordinator that wrote its last marker (-1: none).
    pub coordinator_epoch: i32,
    /// First offset of its open transaction (-1: none).
    pub current_txn_start_offset: i64,
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
    /// Wraps an opened log stored in `dir`, with no producer state and no role yet: call
    /// [`Partition::load_producer_state`], then [`Partition::make_leader`] or
    /// [`Partition::make_follower`], before taking appends.
    pub fn new(
        tp: TopicIdPartition,
        topic: Rc<str>,
        log: Rc<Log>,
        local_broker_id: i32,
        dir: PathBuf,
        producer_id_expiration_ms: i64,
    ) -> Partition {
        Partition {
            tp,
            topic,
            log,
            leader_epoch: Cell::new(-1),
            dir,
            producers: RefCell::new(ProducerStateManager::new(producer_id_expiration_ms)),
            bytes_since_snapshot: Cell::new(0),
            snapshot_running: Rc::new(Cell::new(false)),
            local_broker_id,
            role: RefCell::new(Role::None),
            role_generation: Cell::new(0),
            role_wakers: RefCell::new(Vec::new()),
            role_waiter_next: Cell::new(0),
        }
    }

    /// Bounds the in-memory copy of the newest appends.
    pub fn set_tail_cache_bytes(&self, bytes: usize) {
        self.log.set_tail_cache_bytes(bytes);
    }

    /// Replaces the log's settings at run time (the topic's configs were altered): the next
    /// append, roll check and retention run use them; existing segments stay as they are.
    pub fn update_config(&self, config: LogConfig) {
        self.log.update_config(config);
    }

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.get()
    }

    /// The high watermark: the end of what consumers may read, what every in-sync replica
    /// holds (the leader's `LeaderState` moves it; a follower takes the leader's).
    pub fn high_watermark(&self) -> i64 {
        self.log.high_watermark()
    }

    /// The partition's log (the shard's log cleaner compacts it).
    pub fn log(&self) -> Rc<Log> {
        self.log.clone()
    }

    /// The first offset still in the log.
    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    /// The next offset to be assigned.
    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// What DescribeLogDirs reports for this partition's log: its size in bytes and how far
    /// its end is behind the high watermark (Kafka's `getLogEndOffsetLag`: never below 0, so
    /// 0 on a leader). A failed log is an offline directory in Kafka's terms.
    pub fn log_dir_info(&self) -> Result<PartitionLogDirInfo, ReplicaError> {
        if let Some(error) = self.log.failure() {
            return Err(ReplicaError::Storage(error));
        }
        Ok(PartitionLogDirInfo {
            topic: self.topic.to_string(),
            partition: self.tp.partition,
            size_bytes: self.log.size_bytes(),
            offset_lag: (self.high_watermark() - self.log_end_offset()).max(0),
        })
    }

    /// The producers with state on this partition, by producer id (DescribeProducers; Kafka's
    /// `UnifiedLog.activeProducers`). Sluice has no transactions yet, so no producer has a
    /// coordinator epoch or an open transaction.
    pub fn active_producers(&self) -> Vec<ActiveProducer> {
        let producers = self.producers.borrow();
        let mut active: Vec<ActiveProducer> = producers
            .entries()
            .map(|(producer_id, entry)| {
                let last = entry.batches.back();
                ActiveProducer {
                    producer_id,
                    producer_epoch: entry.epoch,
                    last_sequence: last.map_or(-1, |b| b.last_seq),
                    // Kafka's entry keeps the last batch's max timestamp.
                    last_timestamp: last.map_or(-1, |b| b.max_timestamp),
                    coordinator_epoch: -1,
                    current_txn_start_offset: -1,
                }
            })
            .collect();
        active.sort_unstable_by_key(|p| p.producer_id);
        active
    }

    /// Bytes of the partition's log (all segments), for the log size metric.
    pub fn log_size_bytes(&self) -> u64 {
        self.log.size_bytes()
    }

    /// Bytes a fetch from `offset` could return right now, for `fetch.min.bytes` accounting.
    pub fn readable_bytes_from(&self, offset: i64) -> u64 {
        self.log.readable_bytes_from(offset)
    }

    /// Appends validated batches as leader. A batch with a producer id is checked against the
    /// producer's state first (Kafka's `ProducerStateManager`): a retry of one of its last five
    /// batches is answered with the original offsets and not written again, a stale epoch is
    /// fenced, a sequence gap is refused. Produce carries exactly one batch per partition; the
    /// first batch's producer fields stand for the append.
    ///
    /// Only the leader appends, and acks=all (`required_acks` -1) is refused while the ISR is
    /// below `min.insync.replicas`; the caller then waits with
    /// [`Partition::wait_for_replication`].
    pub async fn append_records_to_leader<'a>(
        &self,
        batches: impl Into<AppendBatches<'a>>,
        required_acks: i16,
    ) -> Result<LogAppendInfo, ReplicaError> {
        let batches = batches.into();
        let leader_epoch = self.check_leader_append(required_acks)?;
        let producer = parse_header(batches.as_slice())
            .ok()
            .and_then(|h| ProducerBatch::from_header(&h));
        let Some(producer) = producer else {
            let info = self.log.append_as_leader(batches, leader_epoch).await?;
            self.after_append(&info);
            self.after_leader_append_high_watermark();
            return Ok(info);
        };
        // The log assigns offsets synchronously in call order when `append` is first polled,
        // which happens below without an await in between: the next offset is exactly where
        // this batch lands, and the reservation is visible to the next append in flight.
        let first_offset = self.log.log_end_offset();
        let check =
            self.producers
                .borrow_mut()
                .check_and_reserve(&producer, first_offset, now_ms())?;
        let reservation = match check {
            AppendCheck::Duplicate(original) => {
                debug!(topic = %self.topic, partition = self.tp.partition, producer_id = producer.producer_id, first_seq = producer.first_seq, offset = original.first_offset, "duplicate batch; answering with its original offsets");
                return self.answer_duplicate(original).await;
            }
            AppendCheck::Reserved(reservation) => reservation,
        };
        match self.log.append_as_leader(batches, leader_epoch).await {
            Ok(info) => {
                self.producers.borrow_mut().settle(
                    &reservation,
                    info.first_offset,
                    info.last_offset,
                );
                self.after_append(&info);
                self.after_leader_append_high_watermark();
                Ok(info)
            }
            Err(error) => {
                self.producers.borrow_mut().cancel(reservation);
                Err(error.into())
            }
        }
    }

    /// A retried batch already in the log (or still being written by the first attempt): once
    /// the original is readable, answer with its offsets.
    async fn answer_duplicate(
        &self,
        original: BatchMetadata,
    ) -> Result<LogAppendInfo, ReplicaError> {
        if self.log.readable_end_offset() <= original.last_offset {
            // The first attempt is in flight; it resolves (or the log stops) before long.
            self.log.wait_for_append(original.last_offset).await;
            if self.log.readable_end_offset() <= original.last_offset {
                return Err(ReplicaError::DuplicateOfFailedAppend);
            }
        }
        Ok(LogAppendInfo {
            first_offset: original.first_offset,
            last_offset: original.last_offset,
            max_timestamp: original.max_timestamp,
            // The first attempt's answer carried the append time; the retry's is not kept.
            log_append_time_ms: -1,
            log_start_offset: self.log.log_start_offset(),
            bytes: 0,
        })
    }

    /// Counts appended bytes and starts a producer-state snapshot every
    /// [`SNAPSHOT_INTERVAL_BYTES`], when no append is in flight (the snapshot then covers
    /// exactly the log up to its end).
    fn after_append(&self, info: &LogAppendInfo) {
        let total = self.bytes_since_snapshot.get() + info.bytes as u64;
        self.bytes_since_snapshot.set(total);
        if total < SNAPSHOT_INTERVAL_BYTES
            || self.snapshot_running.get()
            || self.log.readable_end_offset() != self.log.log_end_offset()
        {
            return;
        }
        let end = self.log.log_end_offset();
        let data = self.producers.borrow().encode_snapshot(end);
        self.bytes_since_snapshot.set(0);
        self.snapshot_running.set(true);
        let dir = self.dir.clone();
        let running = self.snapshot_running.clone();
        // The write runs as its own task (the append that crossed the threshold is not held
        // up); the flag keeps at most one in progress.
        glommio::spawn_local(async move {
            if let Err(error) = snapshot::write_snapshot(&dir, end, data).await {
                warn!(dir = %dir.display(), %error, "cannot write producer state snapshot");
            }
            running.set(false);
        })
        .detach();
    }

    /// Rebuilds the producer state: from the newest usable snapshot, then the batch headers
    /// after it; a full scan of the log when no snapshot is usable (missing, corrupt, or past
    /// the log end after a crash cut the log back). Idle producers are then expired.
    pub async fn load_producer_state(&self) -> Result<(), ReplicaError> {
        let expiration_ms = self.producers.borrow().expiration_ms();
        let log_end = self.log.log_end_offset();
        let log_start = self.log.log_start_offset();
        let mut state = ProducerStateManager::new(expiration_ms);
        let mut from = log_start;
        for offset in snapshot::list_snapshots(&self.dir).await {
            if offset > log_end {
                // Taken before a crash lost the log's tail: describes batches no longer there.
                snapshot::remove_snapshot(&self.dir, offset).await;
                continue;
            }
            let path = snapshot::snapshot_path(&self.dir, offset);
            let decoded = snapshot::read_snapshot(&path)
                .await
                .and_then(|data| ProducerStateManager::decode_snapshot(&data, expiration_ms));
            match decoded {
                Some((end, loaded)) if end == offset => {
                    state = loaded;
                    from = offset.max(log_start);
                    break;
                }
                _ => warn!(path = %path.display(), "ignoring corrupt producer state snapshot"),
            }
        }
        let scan_from = from;
        let mut batches = 0usize;
        // Every written batch counts, committed or not: a follower's uncommitted tail is its
        // producers' latest state too.
        let written_end = self.log.readable_end_offset();
        self.scan_batches_from(from, written_end, |header, _| {
            state.apply_from_log(&header);
            batches += 1;
            true
        })
        .await?;
        let expired = state.remove_expired(now_ms(), log_end);
        if !state.is_empty() || scan_from > log_start {
            info!(topic = %self.topic, partition = self.tp.partition, producers = state.len(), snapshot = scan_from, batches_scanned = batches, expired, "producer state loaded");
        }
        *self.producers.borrow_mut() = state;
        Ok(())
    }

    /// Forgets producers idle for `producer.id.expiration.ms` (the shard's periodic sweep).
    pub fn remove_expired_producers(&self, now_ms: i64) -> usize {
        let readable_end = self.log.readable_end_offset();
        self.producers
            .borrow_mut()
            .remove_expired(now_ms, readable_end)
    }

    /// A copy of one producer's state on this partition (tests, diagnostics).
    pub fn producer_state(&self, producer_id: i64) -> Option<crate::ProducerStateEntry> {
        self.producers.borrow().entry(producer_id).cloned()
    }

    /// Writes a producer-state snapshot at the log end, if no append is in flight.
    pub async fn snapshot_producer_state(&self) {
        let end = self.log.log_end_offset();
        if self.log.readable_end_offset() != end {
            return;
        }
        let data = self.producers.borrow().encode_snapshot(end);
        if let Err(error) = snapshot::write_snapshot(&self.dir, end, data).await {
            warn!(dir = %self.dir.display(), %error, "cannot write producer state snapshot");
        }
        self.bytes_since_snapshot.set(0);
    }

    /// A consumer's read: whole batches from `fetch_offset` up to this replica's high
    /// watermark, in the leader epoch the consumer names (-1: any), as Kafka's `fetchRecords`.
    /// `fetch_only_leader` (Kafka's `FetchParams.fetchOnlyLeader`: a consumer without client
    /// metadata, before Fetch v11) refuses a follower; otherwise a follower serves the read too
    /// (KIP-392), bounded by its own high watermark.
    pub async fn read_records(
        &self,
        read: ConsumerRead,
    ) -> Result<FetchPartitionData, ReplicaError> {
        let (high_watermark, log_start_offset) = self.consumer_read_bounds(&read)?;
        if read.fetch_offset >= high_watermark {
            return Ok(self.caught_up(high_watermark, log_start_offset));
        }
        let records = self
            .log
            .read_for_send(
                read.fetch_offset,
                read.max_bytes,
                read.min_one_message,
                Some(high_watermark),
            )
            .await
            .map_err(out_of_range_or_storage)?;
        Ok(FetchPartitionData::consumed(
            records,
            high_watermark,
            log_start_offset,
        ))
    }

    /// [`Partition::read_records`] when it needs no file I/O (an error, nothing new, or
    /// records the log's tail cache holds); `None`: call `read_records`.
    pub fn read_records_now(
        &self,
        read: &ConsumerRead,
    ) -> Option<Result<FetchPartitionData, ReplicaError>> {
        let (high_watermark, log_start_offset) = match self.consumer_read_bounds(read) {
            Ok(bounds) => bounds,
            Err(error) => return Some(Err(error)),
        };
        if read.fetch_offset >= high_watermark {
            return Some(Ok(self.caught_up(high_watermark, log_start_offset)));
        }
        let records = self.log.read_for_send_now(
            read.fetch_offset,
            read.max_bytes,
            read.min_one_message,
            Some(high_watermark),
        )?;
        Some(
            records
                .map(|records| {
                    FetchPartitionData::consumed(records, high_watermark, log_start_offset)
                })
                .map_err(out_of_range_or_storage),
        )
    }

    /// A consumer's read at the high watermark: no records, and the log's fetch stamp as the
    /// bounds were read. Only this shard changes what the stamp covers, and nothing awaits
    /// between the bounds and the mark, so the mark is of the state the answer was made from.
    fn caught_up(&self, high_watermark: i64, log_start_offset: i64) -> FetchPartitionData {
        FetchPartitionData {
            quiet: Some(self.log.fetch_stamp().mark()),
            ..FetchPartitionData::consumed(Records::default(), high_watermark, log_start_offset)
        }
    }

    /// What a consumer's read is checked against before any record is read: the log has not
    /// failed, this replica may serve it in the epoch named, and the offset is within
    /// `[log start, end]`. Returns the high watermark and the log start offset.
    fn consumer_read_bounds(&self, read: &ConsumerRead) -> Result<(i64, i64), ReplicaError> {
        let ConsumerRead {
            fetch_offset,
            current_leader_epoch,
            fetch_only_leader,
            ..
        } = *read;
        // A failed log never moves again: answer KAFKA_STORAGE_ERROR (an offline partition, in
        // Kafka's terms) rather than let a long poll wait on it.
        if let Some(error) = self.log.failure() {
            return Err(ReplicaError::Storage(error));
        }
        let leader = match &*self.role.borrow() {
            Role::Leader(state) => {
                state.check_leader_epoch(current_leader_epoch)?;
                true
            }
            Role::Follower { leader_epoch, .. } if !fetch_only_leader => {
                check_follower_epoch(current_leader_epoch, *leader_epoch)?;
                false
            }
            _ => return Err(ReplicaError::NotLeaderOrFollower),
        };
        let high_watermark = self.high_watermark();
        let log_start_offset = self.log_start_offset();
        // The leader refuses an offset past its high watermark. A follower's high watermark
        // trails the leader's, so a consumer sent here may ask for an offset the leader has
        // committed and this log has not: Kafka's `LocalLog.read` answers that with no records
        // (the long poll waits for this high watermark), and only an offset past this log's
        // end is out of range, which sends the consumer back to the leader.
        let end = if leader {
            high_watermark
        } else {
            self.log.log_end_offset()
        };
        if fetch_offset < log_start_offset || fetch_offset > end {
            return Err(ReplicaError::OffsetOutOfRange {
                offset: fetch_offset,
                log_start_offset,
                log_end_offset: end,
            });
        }
        Ok((high_watermark, log_start_offset))
    }

    /// Reads whole batches from `fetch_offset` up to the log end, committed or not (Kafka's
    /// `FetchIsolation.LOG_END`): for the broker's own loads, as the group coordinator's of
    /// `__consumer_offsets`, which Kafka also reads to the log end — after a restart the high
    /// watermark is not known until the followers fetch again.
    pub async fn read_to_log_end(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
    ) -> Result<Bytes, ReplicaError> {
        if let Some(error) = self.log.failure() {
            return Err(ReplicaError::Storage(error));
        }
        let read = self
            .log
            .read(fetch_offset, max_bytes, true, None)
            .await
            .map_err(out_of_range_or_storage)?;
        Ok(read.records)
    }

    /// Resolves once the high watermark passes `offset` (a consumer's long poll).
    pub async fn wait_for_high_watermark(&self, offset: i64) {
        self.log.wait_for_high_watermark(offset).await
    }

    /// Resolves once the log end passes `offset` (a follower's long poll on the leader).
    pub async fn wait_for_log_end(&self, offset: i64) {
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
        // The time index names the first batch that may hold it; scanning starts there.
        let Some((start, _)) = self
            .log
            .offset_for_timestamp(timestamp)
            .await
            .map_err(out_of_range_or_storage)?
        else {
            return Ok(None);
        };
        let mut found = None;
        self.scan_batches_from(start, self.high_watermark(), |header, batch| {
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
        let Some((start, max_timestamp)) = self
            .log
            .max_timestamp_offset()
            .await
            .map_err(out_of_range_or_storage)?
        else {
            return Ok(None);
        };
        let mut found = None;
        self.scan_batches_from(start, self.high_watermark(), |header, batch| {
            found = first_record_at_or_after(&header, batch, max_timestamp);
            false
        })
        .await?;
        Ok(found)
    }

    /// Visits every batch below `end` from the one holding `offset`, until `visit` returns
    /// false.
    async fn scan_batches_from(
        &self,
        mut offset: i64,
        end: i64,
        mut visit: impl FnMut(RecordBatchHeader, &Bytes) -> bool,
    ) -> Result<(), ReplicaError> {
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

    /// Kafka's DeleteRecords on the leader: moves the log start offset up to `offset` (-1: the
    /// high watermark) and returns the new log start offset (the low watermark). An offset past
    /// the high watermark (or below 0) is out of range.
    pub async fn delete_records_before(&self, offset: i64) -> Result<i64, ReplicaError> {
        let high_watermark = self.high_watermark();
        let offset = if offset == -1 { high_watermark } else { offset };
        if offset < 0 || offset > high_watermark {
            return Err(ReplicaError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: high_watermark,
            });
        }
        self.log
            .delete_records_before(offset)
            .await
            .map_err(out_of_range_or_storage)
    }

    /// Deletes closed segments past `retention.ms` / `retention.bytes`, at most `segments_max`
    /// per call so one tick does a bounded amount of work.
    pub async fn run_retention(
        &self,
        now_ms: i64,
        segments_max: usize,
    ) -> Result<usize, ReplicaError> {
        Ok(self.log.run_retention(now_ms, segments_max).await?)
    }

    /// Flushes and closes the log for a clean shutdown.
    pub async fn close(&self) -> Result<(), ReplicaError> {
        self.snapshot_producer_state().await;
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

/// Kafka's `localLogWithEpochOrThrow` on a follower: the consumer's leader epoch (-1: it did
/// not say) against the epoch this replica follows.
fn check_follower_epoch(
    current_leader_epoch: i32,
    leader_epoch: i32,
) -> Result<(), crate::replication::ReplicationError> {
    use crate::replication::ReplicationError;
    if current_leader_epoch < 0 || current_leader_epoch == leader_epoch {
        Ok(())
    } else if current_leader_epoch < leader_epoch {
        Err(ReplicationError::FencedLeaderEpoch {
            request: current_leader_epoch,
            current: leader_epoch,
        })
    } else {
        Err(ReplicationError::UnknownLeaderEpoch {
            request: current_leader_epoch,
            current: leader_epoch,
        })
    }
}

pub(crate) fn out_of_range_or_storage(error: LogError) -> ReplicaError {
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

/// Wall-clock milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
