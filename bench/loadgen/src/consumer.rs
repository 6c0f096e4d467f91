//! A consumer: one connection, its partitions assigned (no group), from the
//! latest or earliest offsets, one long-poll Fetch at a time (as the Java
//! consumer has one fetch in flight per broker). Every batch's CRC is checked
//! (`check.crcs=true` is the Java default); the send-time stamp at the start
//! of each value gives the end-to-end latency.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic, ForgottenTopic};
use sluice_protocol::record_batch::read_records;
use sluice_protocol::{
    validate_batch, Compression, RecordBatchError, RecordBatches, RequestBody, ResponseBody, Uuid,
};

use crate::batch::{for_each_value, stamp_of};
use crate::client::Conn;
use crate::clock::Clock;
use crate::error::{error_name, Result};
use crate::stats::Latency;

/// What one consumer does.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// Topic to read.
    pub topic: String,
    /// Its id (Fetch v13+ names topics by id).
    pub topic_id: Uuid,
    /// Partitions assigned to this consumer.
    pub partitions: Vec<i32>,
    /// Stop once every partition reached the end offsets taken at the start
    /// (catch-up read) instead of at the clock's end.
    pub until_end: bool,
    /// Fetch `max_wait_ms`.
    pub max_wait_ms: i32,
    /// Fetch `min_bytes`.
    pub min_bytes: i32,
    /// Fetch `max_bytes`.
    pub max_bytes: i32,
    /// Per-partition limit.
    pub partition_max_bytes: i32,
    /// Fetch through a KIP-227 session (Fetch v7+), as the Java consumer does: after a full
    /// first request, each request names only the partitions whose position moved, and each
    /// response only the partitions with something to say.
    pub fetch_session: bool,
}

/// Fetch session errors (KIP-227): the broker lost or refused the session; the next request
/// is a full one that opens a new session, as the Java consumer's `FetchSessionHandler` does.
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// The client side of a fetch session: its id and next epoch, and the position the broker
/// holds for each partition in it (by index into the consumer's partitions).
#[derive(Default)]
struct FetchSession {
    id: i32,
    epoch: i32,
    sent: HashMap<usize, i64>,
}

impl FetchSession {
    /// Epoch of the next request: 0 asks for a new session (a full request).
    fn request_epoch(&self) -> i32 {
        if self.id == 0 {
            0
        } else {
            self.epoch
        }
    }

    /// Which of `wanted` the next request names, and which session partitions it forgets.
    fn delta(&self, wanted: &[usize], offsets: &[i64]) -> (Vec<usize>, Vec<usize>) {
        if self.id == 0 {
            return (wanted.to_vec(), Vec::new());
        }
        let named = wanted
            .iter()
            .copied()
            .filter(|i| self.sent.get(i) != Some(&offsets[*i]))
            .collect();
        // Membership by index, not `wanted.contains` per session partition: that was 250,000
        // comparisons per fetch at 500 partitions, on the load generator's own CPU.
        let mut is_wanted = vec![false; offsets.len()];
        for &i in wanted {
            is_wanted[i] = true;
        }
        let mut forgotten: Vec<usize> = self
            .sent
            .keys()
            .copied()
            .filter(|&i| !is_wanted[i])
            .collect();
        forgotten.sort_unstable();
        (named, forgotten)
    }

    /// The broker answered the request that named `named` at `offsets` and forgot `forgotten`.
    fn answered(&mut self, session_id: i32, named: &[usize], forgotten: &[usize], offsets: &[i64]) {
        if self.id == 0 {
            if session_id == 0 {
                return; // declined: the next request is full again
            }
            self.id = session_id;
            self.epoch = 0;
            self.sent.clear();
        }
        for &i in named {
            self.sent.insert(i, offsets[i]);
        }
        for i in forgotten {
            self.sent.remove(i);
        }
        // Kafka's nextEpoch: after i32::MAX comes 1 (0 would open a new session).
        self.epoch = if self.epoch == i32::MAX {
            1
        } else {
            self.epoch + 1
        };
    }
}

/// What one consumer measured.
#[derive(Debug, Default)]
pub struct ConsumerResult {
    /// Records received in the measured window (catch-up: all).
    pub records: u64,
    /// Value bytes received in the measured window (catch-up: all).
    pub bytes: u64,
    /// Records received in total.
    pub records_total: u64,
    /// End-to-end latency (intended send → received) of records intended in the window.
    pub latency: Latency,
    /// Partition errors and bad batches, by name.
    pub errors: BTreeMap<String, u64>,
    /// Catch-up: when the end offsets were reached.
    pub caught_up: Option<Instant>,
    /// Catch-up: records to read (end − start offsets at the start).
    pub target_records: u64,
    /// Fetch requests sent.
    pub fetches: u64,
    /// Fetch sessions the broker lost or refused (each answered by a full request).
    pub session_resets: u64,
    /// A fatal error that stopped this consumer.
    pub fatal: Option<String>,
}

/// A consumer positioned at its start offsets, ready to run.
pub struct Consumer {
    conn: Conn,
    cfg: ConsumerConfig,
    offsets: Vec<i64>,
    ends: Vec<i64>,
}

impl Consumer {
    /// Takes the start offsets (`timestamp` -1: latest, -2: earliest) and,
    /// for a catch-up read, the end offsets.
    pub fn position(mut conn: Conn, cfg: ConsumerConfig, timestamp: i64) -> Result<Consumer> {
        let index: HashMap<i32, usize> = cfg
            .partitions
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i))
            .collect();
        let mut offsets = vec![0i64; cfg.partitions.len()];
        for (p, o) in conn.list_offsets(&cfg.topic, &cfg.partitions, timestamp)? {
            if let Some(&i) = index.get(&p) {
                offsets[i] = o;
            }
        }
        let mut ends = vec![i64::MAX; cfg.partitions.len()];
        if cfg.until_end {
            for (p, o) in conn.list_offsets(&cfg.topic, &cfg.partitions, -1)? {
                if let Some(&i) = index.get(&p) {
                    ends[i] = o;
                }
            }
        }
        Ok(Consumer {
            conn,
            cfg,
            offsets,
            ends,
        })
    }

    /// Reads until `clock.end` (or, catch-up, until the end offsets or `clock.end`).
    pub fn run(mut self, clock: Clock) -> ConsumerResult {
        let mut out = ConsumerResult::default();
        if self.cfg.until_end {
            out.target_records = self
                .ends
                .iter()
                .zip(&self.offsets)
                .map(|(e, o)| (e - o).max(0) as u64)
                .sum();
        }
        if let Err(e) = self.fetch_loop(clock, &mut out) {
            out.fatal = Some(e.to_string());
        }
        out
    }

    fn done(&self) -> bool {
        self.cfg.until_end && self.offsets.iter().zip(&self.ends).all(|(o, e)| o >= e)
    }

    fn fetch_loop(&mut self, clock: Clock, out: &mut ConsumerResult) -> Result<()> {
        let index: HashMap<i32, usize> = self
            .cfg
            .partitions
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i))
            .collect();
        let by_id = self.conn.versions.fetch >= 13;
        let measure_us = clock.unix_us(clock.measure);
        let end_us = clock.unix_us(clock.end);
        let deadline = clock.end;
        // Fetch order: a partition that returned records goes to the end of the next request, as
        // the Java consumer does; without it a broker that fills a response in request order
        // (Kafka, without fetch sessions) would starve the last partitions of a busy topic
        let mut order: Vec<usize> = (0..self.cfg.partitions.len()).collect();
        let use_session = self.cfg.fetch_session && self.conn.versions.fetch >= 7;
        let mut session = FetchSession::default();
        let start = clock.start.saturating_duration_since(Instant::now());
        std::thread::sleep(start);
        loop {
            if self.done() {
                out.caught_up = Some(Instant::now());
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Ok(());
            }
            let wanted: Vec<usize> = order
                .iter()
                .copied()
                .filter(|&i| self.offsets[i] < self.ends[i])
                .collect();
            let (named, forgotten) = if use_session {
                session.delta(&wanted, &self.offsets)
            } else {
                (wanted, Vec::new())
            };
            let topic = if by_id {
                String::new()
            } else {
                self.cfg.topic.clone()
            };
            let topic_id = if by_id { self.cfg.topic_id } else { Uuid::ZERO };
            let body = RequestBody::Fetch(FetchRequest {
                max_wait_ms: self.cfg.max_wait_ms,
                min_bytes: self.cfg.min_bytes,
                max_bytes: self.cfg.max_bytes,
                session_id: if use_session { session.id } else { 0 },
                // -1: a full fetch outside any session
                session_epoch: if use_session {
                    session.request_epoch()
                } else {
                    -1
                },
                // An incremental request with nothing moved names no topic (as the Java
                // consumer's): the broker long-polls every partition of the session.
                topics: if named.is_empty() {
                    Vec::new()
                } else {
                    vec![FetchTopic {
                        topic: topic.clone(),
                        topic_id,
                        partitions: named
                            .iter()
                            .map(|&i| FetchPartition {
                                partition: self.cfg.partitions[i],
                                fetch_offset: self.offsets[i],
                                partition_max_bytes: self.cfg.partition_max_bytes,
                                ..Default::default()
                            })
                            .collect(),
                    }]
                },
                forgotten_topics_data: if forgotten.is_empty() {
                    Vec::new()
                } else {
                    vec![ForgottenTopic {
                        topic,
                        topic_id,
                        partitions: forgotten.iter().map(|&i| self.cfg.partitions[i]).collect(),
                    }]
                },
                ..Default::default()
            });
            let resp = match self.conn.call(body)? {
                ResponseBody::Fetch(f) => f,
                other => {
                    return Err(crate::error::Error::Unexpected(format!(
                        "{:?}",
                        other.api_key()
                    )))
                }
            };
            out.fetches += 1;
            let now = Instant::now();
            let now_us = clock.unix_us(now);
            let counting = self.cfg.until_end || clock.in_window(now);
            if use_session
                && matches!(
                    resp.error_code,
                    FETCH_SESSION_ID_NOT_FOUND | INVALID_FETCH_SESSION_EPOCH
                )
            {
                // The broker evicted or refused the session: open a new one at once.
                session = FetchSession::default();
                out.session_resets += 1;
                continue;
            }
            if resp.error_code != 0 {
                // As the Java consumer's handler: after any other error, a full request that
                // opens a new session.
                session = FetchSession::default();
                *out.errors
                    .entry(error_name(resp.error_code).to_string())
                    .or_default() += 1;
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            if use_session {
                session.answered(resp.session_id, &named, &forgotten, &self.offsets);
            }
            let mut got_data: Vec<usize> = Vec::new();
            for t in resp.responses {
                for p in t.partitions {
                    let Some(&i) = index.get(&p.partition_index) else {
                        continue;
                    };
                    if p.error_code != 0 {
                        *out.errors
                            .entry(error_name(p.error_code).to_string())
                            .or_default() += 1;
                        continue;
                    }
                    let Some(records) = p.records else { continue };
                    if !records.is_empty() {
                        got_data.push(i);
                    }
                    let from = self.offsets[i];
                    for item in RecordBatches::new(records) {
                        let (h, batch) = match item {
                            Ok(x) => x,
                            // a partial batch at the end of a fetch is normal
                            Err(RecordBatchError::Truncated { .. }) => break,
                            Err(e) => {
                                *out.errors.entry(format!("BATCH: {e}")).or_default() += 1;
                                break;
                            }
                        };
                        if let Err(e) = validate_batch(&batch) {
                            *out.errors.entry(format!("BATCH: {e}")).or_default() += 1;
                            break;
                        }
                        let next = h.base_offset + i64::from(h.last_offset_delta) + 1;
                        if next <= from {
                            continue;
                        }
                        let mut n = 0u64;
                        let mut bytes = 0u64;
                        let mut visit = |delta: i64, value: &[u8]| {
                            if h.base_offset + delta < from {
                                return;
                            }
                            n += 1;
                            bytes += value.len() as u64;
                            if let Some(stamp) = stamp_of(value) {
                                if counting && stamp >= measure_us && stamp <= end_us {
                                    out.latency.record(now_us.saturating_sub(stamp));
                                }
                            }
                        };
                        let ok = if h.compression() == Compression::None {
                            for_each_value(&batch, h.records_count.max(0) as usize, &mut visit)
                                .is_some()
                        } else {
                            match read_records(&batch) {
                                Ok(recs) => {
                                    for r in recs {
                                        visit(
                                            i64::from(r.offset_delta),
                                            r.value.as_deref().unwrap_or_default(),
                                        );
                                    }
                                    true
                                }
                                Err(_) => false,
                            }
                        };
                        if !ok {
                            *out.errors
                                .entry("BATCH: malformed record".to_string())
                                .or_default() += 1;
                            break;
                        }
                        out.records_total += n;
                        if counting {
                            out.records += n;
                            out.bytes += bytes;
                        }
                        self.offsets[i] = next;
                    }
                }
            }
            if !got_data.is_empty() {
                let mut moved = vec![false; order.len()];
                for &i in &got_data {
                    moved[i] = true;
                }
                order.retain(|&i| !moved[i]);
                order.extend(got_data);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_names_only_the_partitions_whose_position_moved() {
        let mut s = FetchSession::default();
        let mut offsets = vec![10, 20, 30];
        // No session yet: a full request, epoch 0 (asks for one).
        let (named, forgotten) = s.delta(&[0, 1, 2], &offsets);
        assert_eq!(
            (named.as_slice(), forgotten.as_slice()),
            (&[0, 1, 2][..], &[][..])
        );
        assert_eq!(s.request_epoch(), 0);
        s.answered(7, &named, &forgotten, &offsets);
        assert_eq!((s.id, s.request_epoch()), (7, 1));
        // Nothing moved: an empty incremental request, the broker long-polls the session.
        assert_eq!(s.delta(&[0, 1, 2], &offsets), (vec![], vec![]));
        // Partition 1 got records; partition 2 reached its end and leaves the session.
        offsets[1] = 25;
        let (named, forgotten) = s.delta(&[0, 1], &offsets);
        assert_eq!(
            (named.as_slice(), forgotten.as_slice()),
            (&[1][..], &[2][..])
        );
        s.answered(7, &named, &forgotten, &offsets);
        assert_eq!(s.request_epoch(), 2);
        assert_eq!(s.sent.len(), 2);
        assert_eq!(s.delta(&[0, 1], &offsets), (vec![], vec![]));
    }

    #[test]
    fn a_declined_session_keeps_full_requests_and_the_epoch_wraps_to_one() {
        let mut s = FetchSession::default();
        let offsets = vec![1, 2];
        s.answered(0, &[0, 1], &[], &offsets);
        assert_eq!((s.id, s.request_epoch()), (0, 0));
        assert_eq!(s.delta(&[0, 1], &offsets).0, vec![0, 1]);
        s.answered(3, &[0, 1], &[], &offsets);
        s.epoch = i32::MAX;
        s.answered(3, &[], &[], &offsets);
        assert_eq!(s.request_epoch(), 1, "after i32::MAX comes 1, never 0");
    }
}
