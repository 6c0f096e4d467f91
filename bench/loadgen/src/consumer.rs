//! A consumer: one connection, its partitions assigned (no group), from the
//! latest or earliest offsets, one long-poll Fetch at a time (as the Java
//! consumer has one fetch in flight per broker). Every batch's CRC is checked
//! (`check.crcs=true` is the Java default); the send-time stamp at the start
//! of each value gives the end-to-end latency.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
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
            let body = RequestBody::Fetch(FetchRequest {
                max_wait_ms: self.cfg.max_wait_ms,
                min_bytes: self.cfg.min_bytes,
                max_bytes: self.cfg.max_bytes,
                session_id: 0,
                session_epoch: -1, // a full fetch, no session
                topics: vec![FetchTopic {
                    topic: if by_id {
                        String::new()
                    } else {
                        self.cfg.topic.clone()
                    },
                    topic_id: if by_id { self.cfg.topic_id } else { Uuid::ZERO },
                    partitions: order
                        .iter()
                        .filter(|&&i| self.offsets[i] < self.ends[i])
                        .map(|&i| FetchPartition {
                            partition: self.cfg.partitions[i],
                            fetch_offset: self.offsets[i],
                            partition_max_bytes: self.cfg.partition_max_bytes,
                            ..Default::default()
                        })
                        .collect(),
                }],
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
            if resp.error_code != 0 {
                *out.errors
                    .entry(error_name(resp.error_code).to_string())
                    .or_default() += 1;
                std::thread::sleep(Duration::from_millis(100));
                continue;
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
