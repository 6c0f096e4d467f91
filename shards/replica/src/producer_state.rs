//! Idempotent-producer state of one partition, Kafka's `ProducerStateManager`: per producer id
//! the epoch and the sequence/offset ranges of its last five batches, so that a retried batch
//! is answered with its original offsets instead of being written twice, a gap in sequence
//! numbers is refused, and a producer with an older epoch is fenced.
//!
//! Pure state machine (no I/O, no async): `Partition` calls [`ProducerStateManager::check_and_reserve`]
//! synchronously right before the log assigns offsets, so two appends in flight on the same
//! partition see each other's reservations. The state is rebuilt at open from a snapshot
//! (`<offset>.snapshot`, encoded here) plus a scan of the batch headers after it.

use std::collections::{HashMap, VecDeque};

use sluice_protocol::codec::{Decoder, Encoder};
use sluice_protocol::record_batch::RecordBatchHeader;

/// Batches remembered per producer: Kafka's `NUM_BATCHES_TO_RETAIN`, which is also the
/// producer's `max.in.flight.requests.per.connection` ceiling with idempotence.
pub const NUM_BATCHES_TO_RETAIN: usize = 5;

/// Kafka's default `producer.id.expiration.ms` (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// One batch of a producer, as remembered for duplicate detection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Sequence of the first record.
    pub first_seq: i32,
    /// Sequence of the last record.
    pub last_seq: i32,
    /// Offset of the first record.
    pub first_offset: i64,
    /// Offset of the last record.
    pub last_offset: i64,
    /// The batch's max timestamp.
    pub max_timestamp: i64,
}

/// What a partition knows about one producer id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// The producer's current epoch.
    pub epoch: i16,
    /// The last (at most five) batches, oldest first.
    pub batches: VecDeque<BatchMetadata>,
    /// Last activity in ms: the wall clock of the last append, or the batch's max timestamp
    /// for state rebuilt from the log (as Kafka does). Idle-expiry is measured from it.
    pub last_timestamp: i64,
}

impl ProducerStateEntry {
    fn new(epoch: i16, last_timestamp: i64) -> ProducerStateEntry {
        ProducerStateEntry {
            epoch,
            batches: VecDeque::with_capacity(NUM_BATCHES_TO_RETAIN),
            last_timestamp,
        }
    }

    /// The last sequence written, if any batch is remembered.
    pub fn last_seq(&self) -> Option<i32> {
        self.batches.back().map(|b| b.last_seq)
    }

    /// The last offset written, if any batch is remembered.
    pub fn last_offset(&self) -> Option<i64> {
        self.batches.back().map(|b| b.last_offset)
    }

    fn push(&mut self, batch: BatchMetadata) {
        if self.batches.len() == NUM_BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.batches.push_back(batch);
    }

    fn duplicate_of(&self, epoch: i16, first_seq: i32, last_seq: i32) -> Option<BatchMetadata> {
        if epoch != self.epoch {
            return None;
        }
        self.batches
            .iter()
            .find(|b| b.first_seq == first_seq && b.last_seq == last_seq)
            .copied()
    }
}

/// The producer fields of one batch about to be appended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerBatch {
    /// Producer id (>= 0).
    pub producer_id: i64,
    /// Producer epoch.
    pub epoch: i16,
    /// First sequence.
    pub first_seq: i32,
    /// Last sequence (`first_seq + last_offset_delta`, wrapping past `i32::MAX` to 0).
    pub last_seq: i32,
    /// Records (offsets) in the batch: `last_offset_delta + 1`.
    pub offset_count: i64,
    /// The batch's max timestamp.
    pub max_timestamp: i64,
}

impl ProducerBatch {
    /// The producer fields of a batch header; `None` for a batch without a producer id.
    pub fn from_header(header: &RecordBatchHeader) -> Option<ProducerBatch> {
        if header.producer_id < 0 {
            return None;
        }
        Some(ProducerBatch {
            producer_id: header.producer_id,
            epoch: header.producer_epoch,
            first_seq: header.base_sequence,
            last_seq: increment_sequence(header.base_sequence, header.last_offset_delta),
            offset_count: i64::from(header.last_offset_delta) + 1,
            max_timestamp: header.max_timestamp,
        })
    }
}

/// `sequence + increment`, wrapping from `i32::MAX` to 0 (Kafka's `incrementSequence`).
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Whether `next` follows `last` (Kafka's `inSequence`): `last + 1`, or 0 after `i32::MAX`.
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// Why a producer's batch is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    /// The batch's epoch is older than the producer's current one: a zombie (fenced).
    #[error("producer {producer_id} epoch {epoch} is older than the current epoch {current}")]
    InvalidProducerEpoch {
        /// Producer id.
        producer_id: i64,
        /// The batch's epoch.
        epoch: i16,
        /// The partition's current epoch for that producer.
        current: i16,
    },
    /// The batch's first sequence does not follow the last one written.
    #[error(
        "producer {producer_id} epoch {epoch}: sequence {first_seq} does not follow {last_seq:?}"
    )]
    OutOfOrderSequence {
        /// Producer id.
        producer_id: i64,
        /// The batch's epoch.
        epoch: i16,
        /// The batch's first sequence.
        first_seq: i32,
        /// The last sequence written (`None`: nothing remembered).
        last_seq: Option<i32>,
    },
    /// A batch with a producer id but no (negative) sequence: Kafka's `InvalidRecordException`.
    #[error("producer {producer_id}: invalid sequence number {first_seq}")]
    InvalidSequence {
        /// Producer id.
        producer_id: i64,
        /// The batch's first sequence.
        first_seq: i32,
    },
}

/// The outcome of checking a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AppendCheck {
    /// A new batch: its range is reserved at `first_offset`. Keep `undo` to roll back if the
    /// append fails.
    Reserved(Reservation),
    /// A retry of one of the last five batches: answer with these original offsets, write
    /// nothing.
    Duplicate(BatchMetadata),
}

/// A reserved batch and the producer's entry before it, to roll back a failed append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Producer id.
    pub producer_id: i64,
    /// The reserved batch.
    pub batch: BatchMetadata,
    previous: Option<ProducerStateEntry>,
}

/// Every producer's state on one partition.
#[derive(Debug)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerStateEntry>,
    expiration_ms: i64,
}

impl ProducerStateManager {
    /// Empty state; idle producers expire after `expiration_ms`.
    pub fn new(expiration_ms: i64) -> ProducerStateManager {
        ProducerStateManager {
            producers: HashMap::new(),
            expiration_ms,
        }
    }

    /// `producer.id.expiration.ms`.
    pub fn expiration_ms(&self) -> i64 {
        self.expiration_ms
    }

    /// The state of one producer.
    pub fn entry(&self, producer_id: i64) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// How many producers are tracked.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is tracked.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Every producer's state.
    pub fn entries(&self) -> impl Iterator<Item = (i64, &ProducerStateEntry)> {
        self.producers.iter().map(|(id, e)| (*id, e))
    }

    fn is_expired(&self, entry: &ProducerStateEntry, now_ms: i64) -> bool {
        now_ms.saturating_sub(entry.last_timestamp) >= self.expiration_ms
    }

    /// Checks a client batch that the log will place at `first_offset`, and if it is new,
    /// records it at once (before any await), so the next batch in flight is checked against
    /// it. Order of checks, as Kafka's `ProducerAppendInfo`: duplicate of a remembered batch,
    /// then epoch, then sequence.
    pub fn check_and_reserve(
        &mut self,
        batch: &ProducerBatch,
        first_offset: i64,
        now_ms: i64,
    ) -> Result<AppendCheck, ProducerStateError> {
        let producer_id = batch.producer_id;
        if batch.first_seq < 0 {
            return Err(ProducerStateError::InvalidSequence {
                producer_id,
                first_seq: batch.first_seq,
            });
        }
        // Lazy expiry: an idle producer is forgotten as if the sweep had run.
        // (An append in flight refreshed `last_timestamp`, so it is never expired here.)
        if self
            .producers
            .get(&producer_id)
            .is_some_and(|e| self.is_expired(e, now_ms))
        {
            self.producers.remove(&producer_id);
        }
        let current = self.producers.get(&producer_id);
        if let Some(entry) = current {
            if let Some(original) = entry.duplicate_of(batch.epoch, batch.first_seq, batch.last_seq)
            {
                return Ok(AppendCheck::Duplicate(original));
            }
            if batch.epoch < entry.epoch {
                return Err(ProducerStateError::InvalidProducerEpoch {
                    producer_id,
                    epoch: batch.epoch,
                    current: entry.epoch,
                });
            }
        }
        let in_order = match current {
            // Kafka's nuance: Kafka (since KIP-360) accepts any sequence from a producer it has
            // no state for, because that state may have been removed by retention, DeleteRecords
            // or expiry while the producer was still live; the client then carries on. Sluice is
            // stricter, as specified: an unknown producer must start at sequence 0, so a
            // partition never silently accepts a gap. A producer whose state was lost gets
            // OUT_OF_ORDER_SEQUENCE_NUMBER, and the Java client resets it with an epoch bump
            // (InitProducerId with its current id and epoch) and restarts at 0.
            None => batch.first_seq == 0,
            // A new (higher) epoch starts at sequence 0.
            Some(entry) if batch.epoch != entry.epoch => batch.first_seq == 0,
            // Same epoch: the next sequence. An entry without batches (cannot happen today, but
            // a snapshot may hold one) takes only 0.
            Some(entry) => match entry.last_seq() {
                Some(last) => in_sequence(last, batch.first_seq),
                None => batch.first_seq == 0,
            },
        };
        if !in_order {
            return Err(ProducerStateError::OutOfOrderSequence {
                producer_id,
                epoch: batch.epoch,
                first_seq: batch.first_seq,
                last_seq: current
                    .filter(|e| e.epoch == batch.epoch)
                    .and_then(|e| e.last_seq()),
            });
        }
        let previous = current.cloned();
        let metadata = BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset,
            last_offset: first_offset + batch.offset_count - 1,
            max_timestamp: batch.max_timestamp,
        };
        let entry = self
            .producers
            .entry(producer_id)
            .or_insert_with(|| ProducerStateEntry::new(batch.epoch, now_ms));
        if entry.epoch != batch.epoch {
            *entry = ProducerStateEntry::new(batch.epoch, now_ms);
        }
        entry.push(metadata);
        entry.last_timestamp = now_ms;
        Ok(AppendCheck::Reserved(Reservation {
            producer_id,
            batch: metadata,
            previous,
        }))
    }

    /// Rolls a reservation back after its append failed. If later batches were reserved behind
    /// it they fail too (the log refuses appends after a write error), so the entry goes back to
    /// what it was when this batch was checked, when this batch is still its newest, and
    /// otherwise only this batch is forgotten.
    pub fn cancel(&mut self, reservation: Reservation) {
        let Some(entry) = self.producers.get_mut(&reservation.producer_id) else {
            return;
        };
        if entry.batches.back() == Some(&reservation.batch) {
            match reservation.previous {
                Some(previous) => *entry = previous,
                None => {
                    self.producers.remove(&reservation.producer_id);
                }
            }
        } else {
            entry.batches.retain(|b| *b != reservation.batch);
        }
    }

    /// Moves a reservation to the offsets the log actually assigned (they match the prediction
    /// unless the log changed how it assigns offsets).
    pub fn settle(&mut self, reservation: &Reservation, first_offset: i64, last_offset: i64) {
        if reservation.batch.first_offset == first_offset {
            return;
        }
        if let Some(entry) = self.producers.get_mut(&reservation.producer_id) {
            for b in entry.batches.iter_mut() {
                if *b == reservation.batch {
                    b.first_offset = first_offset;
                    b.last_offset = last_offset;
                }
            }
        }
    }

    /// Applies a batch read back from the log (recovery): no validation, the log is the truth.
    /// A higher epoch starts a new entry, as a new epoch resets sequences.
    pub fn apply_from_log(&mut self, header: &RecordBatchHeader) {
        let Some(batch) = ProducerBatch::from_header(header) else {
            return;
        };
        let metadata = BatchMetadata {
            first_seq: batch.first_seq,
            last_seq: batch.last_seq,
            first_offset: header.base_offset,
            last_offset: header.last_offset(),
            max_timestamp: header.max_timestamp,
        };
        let entry = self
            .producers
            .entry(batch.producer_id)
            .or_insert_with(|| ProducerStateEntry::new(batch.epoch, header.max_timestamp));
        if batch.epoch > entry.epoch {
            *entry = ProducerStateEntry::new(batch.epoch, header.max_timestamp);
        } else if batch.epoch < entry.epoch {
            return;
        }
        entry.push(metadata);
        entry.last_timestamp = entry.last_timestamp.max(header.max_timestamp);
    }

    /// Forgets producers idle for `producer.id.expiration.ms`; keeps those with an append in
    /// flight (a batch at or past `readable_end`). Returns how many were removed.
    pub fn remove_expired(&mut self, now_ms: i64, readable_end: i64) -> usize {
        let before = self.producers.len();
        let expiration_ms = self.expiration_ms;
        self.producers.retain(|_, e| {
            now_ms.saturating_sub(e.last_timestamp) < expiration_ms
                || e.last_offset().is_some_and(|o| o >= readable_end)
        });
        before - self.producers.len()
    }

    /// Forgets batches at or past `end` (state loaded from a snapshot taken after the log was
    /// cut back), and producers left with none.
    pub fn truncate_from(&mut self, end: i64) {
        self.producers.retain(|_, e| {
            e.batches.retain(|b| b.last_offset < end);
            !e.batches.is_empty()
        });
    }

    /// Encodes the state of every batch before `end` as a snapshot file body:
    /// `magic "SLPS"`, `version: i16`, `end: i64`, `count: u32`, `crc32c: u32` (of the version,
    /// end and count, then of the body), then per producer `id: i64`, `epoch: i16`,
    /// `last_timestamp: i64`, `batches: u8` and per batch `first_seq: i32`, `last_seq: i32`,
    /// `first_offset: i64`, `last_offset: i64`, `max_timestamp: i64`.
    pub fn encode_snapshot(&self, end: i64) -> Vec<u8> {
        let mut body = Encoder::new();
        let mut count: u32 = 0;
        let mut ids: Vec<&i64> = self.producers.keys().collect();
        ids.sort_unstable();
        for id in ids {
            let entry = &self.producers[id];
            let batches: Vec<&BatchMetadata> = entry
                .batches
                .iter()
                .filter(|b| b.last_offset < end)
                .collect();
            if batches.is_empty() {
                continue;
            }
            count += 1;
            body.put_i64(*id);
            body.put_i16(entry.epoch);
            body.put_i64(entry.last_timestamp);
            // At most NUM_BATCHES_TO_RETAIN.
            body.put_u8(batches.len() as u8);
            for b in batches {
                body.put_i32(b.first_seq);
                body.put_i32(b.last_seq);
                body.put_i64(b.first_offset);
                body.put_i64(b.last_offset);
                body.put_i64(b.max_timestamp);
            }
        }
        let mut out = Encoder::with_capacity(body.len() + SNAPSHOT_HEADER_BYTES);
        out.put_raw(SNAPSHOT_MAGIC);
        out.put_i16(SNAPSHOT_VERSION);
        out.put_i64(end);
        out.put_u32(count);
        let crc = sluice_protocol::crc::crc32c(&out.as_slice()[SNAPSHOT_MAGIC.len()..]);
        out.put_u32(sluice_protocol::crc::crc32c_append(crc, body.as_slice()));
        out.put_raw(body.as_slice());
        out.into_inner().into()
    }

    /// Decodes a snapshot file body: the offset it covers up to, and the state. `None` if the
    /// file is not a valid snapshot (wrong magic or version, bad CRC, truncated).
    pub fn decode_snapshot(data: &[u8], expiration_ms: i64) -> Option<(i64, ProducerStateManager)> {
        let covered = data.get(SNAPSHOT_MAGIC.len()..SNAPSHOT_HEADER_BYTES - 4)?;
        let mut d = Decoder::from_slice(data);
        if d.take_bytes(SNAPSHOT_MAGIC.len()).ok()? != SNAPSHOT_MAGIC[..] {
            return None;
        }
        if d.i16().ok()? != SNAPSHOT_VERSION {
            return None;
        }
        let end = d.i64().ok()?;
        let count = d.u32().ok()?;
        let crc = d.u32().ok()?;
        if sluice_protocol::crc::crc32c_append(sluice_protocol::crc::crc32c(covered), &d.rest())
            != crc
        {
            return None;
        }
        let mut state = ProducerStateManager::new(expiration_ms);
        for _ in 0..count {
            let producer_id = d.i64().ok()?;
            let epoch = d.i16().ok()?;
            let last_timestamp = d.i64().ok()?;
            let n = usize::from(d.u8().ok()?);
            if n == 0 || n > NUM_BATCHES_TO_RETAIN {
                return None;
            }
            let mut entry = ProducerStateEntry::new(epoch, last_timestamp);
            for _ in 0..n {
                entry.batches.push_back(BatchMetadata {
                    first_seq: d.i32().ok()?,
                    last_seq: d.i32().ok()?,
                    first_offset: d.i64().ok()?,
                    last_offset: d.i64().ok()?,
                    max_timestamp: d.i64().ok()?,
                });
            }
            state.producers.insert(producer_id, entry);
        }
        d.finish().ok()?;
        Some((end, state))
    }
}

const SNAPSHOT_MAGIC: &[u8; 4] = b"SLPS";
const SNAPSHOT_VERSION: i16 = 1;
/// Magic, version, end, count and CRC.
const SNAPSHOT_HEADER_BYTES: usize = 4 + 2 + 8 + 4 + 4;

#[cfg(test)]
mod tests;
