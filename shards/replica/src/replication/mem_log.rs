//! Tests only: a partition log in memory, the model the simulation replicates. One record per
//! batch, each with the leader epoch it was written in and a unique id; a flushed prefix that
//! survives a crash (the unflushed tail is lost, like the page cache at power loss); the
//! leader epoch cache, kept durable on every change as Kafka writes its checkpoint; and the
//! high watermark with its last checkpointed value.

use sluice_log::LeaderEpochFileCache;

/// One record: the epoch it was written in and the producer's id for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) epoch: i32,
    pub(crate) id: u64,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct MemLog {
    /// Record at offset i is `records[i]` (the log start offset stays 0: nothing is deleted).
    pub(crate) records: Vec<Record>,
    /// Records below this survive a crash (the recovery point).
    pub(crate) flushed: usize,
    pub(crate) cache: LeaderEpochFileCache,
    pub(crate) high_watermark: i64,
    /// The `replication-offset-checkpoint` value: the high watermark at the last flush.
    pub(crate) high_watermark_checkpoint: i64,
}

impl MemLog {
    pub(crate) fn log_end_offset(&self) -> i64 {
        self.records.len() as i64
    }

    /// Appends as leader in `epoch`; returns the first offset.
    pub(crate) fn append_as_leader(&mut self, epoch: i32, ids: &[u64]) -> i64 {
        let base = self.log_end_offset();
        self.cache.assign(epoch, base).expect("valid epoch entry");
        self.records
            .extend(ids.iter().map(|&id| Record { epoch, id }));
        base
    }

    /// Appends fetched records at the log end, each batch's epoch offered to the cache as
    /// `UnifiedLog.appendAsFollower` does.
    pub(crate) fn append_as_follower(&mut self, base: i64, records: &[Record]) {
        assert_eq!(
            base,
            self.log_end_offset(),
            "a fetch appends at the log end"
        );
        for record in records {
            let offset = self.log_end_offset();
            self.cache
                .assign(record.epoch, offset)
                .expect("valid epoch entry");
            self.records.push(*record);
        }
    }

    /// Truncates to `offset` (`UnifiedLog.truncateTo`): records, epochs, high watermark.
    pub(crate) fn truncate_to(&mut self, offset: i64) {
        let offset = offset.max(0);
        if offset >= self.log_end_offset() {
            // Kafka truncates the epoch cache anyway: a replica that led, assigned its epoch
            // at the log end and wrote nothing under it keeps an entry no leader knows, and
            // would fetch with it forever (found by the simulation, seed 59).
            let end = self.log_end_offset();
            self.cache.truncate_from_end(end);
            return;
        }
        self.records.truncate(offset as usize);
        self.flushed = self.flushed.min(offset as usize);
        self.cache.truncate_from_end(offset);
        self.high_watermark = self.high_watermark.min(offset);
        self.high_watermark_checkpoint = self.high_watermark_checkpoint.min(offset);
    }

    pub(crate) fn flush(&mut self) {
        self.flushed = self.records.len();
        self.high_watermark_checkpoint = self.high_watermark;
    }

    /// What a restart finds after a power loss: the flushed prefix, the epochs up to it (the
    /// loader truncates the cache to the recovered log end), the checkpointed high watermark.
    pub(crate) fn after_power_loss(&self) -> MemLog {
        let mut log = MemLog {
            records: self.records[..self.flushed].to_vec(),
            flushed: self.flushed,
            cache: self.cache.clone(),
            high_watermark: 0,
            high_watermark_checkpoint: self.high_watermark_checkpoint,
        };
        let end = log.log_end_offset();
        log.cache.truncate_from_end(end);
        log.high_watermark = log.high_watermark_checkpoint.min(end);
        log.high_watermark_checkpoint = log.high_watermark;
        log
    }

    pub(crate) fn read(&self, from: i64, max_records: usize) -> Vec<Record> {
        let from = from.max(0) as usize;
        let to = (from + max_records).min(self.records.len());
        self.records
            .get(from..to)
            .map(<[Record]>::to_vec)
            .unwrap_or_default()
    }
}
