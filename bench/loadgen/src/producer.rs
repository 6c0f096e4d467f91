//! A producer: one connection, a writer thread that schedules records, packs
//! them into per-partition batches and sends Produce requests, and (for acks
//! 1/-1) a reader thread that takes the responses in order and records the
//! publish latency.
//!
//! Partitioning is sticky, like the Java producer's for records without a key:
//! records go to one partition until its batch is closed (full at
//! `batch_bytes`, or `linger` after its first record), then to the next one.
//! A request carries at most one batch per partition and `max_request_bytes`;
//! at most `max_in_flight` requests are outstanding per connection; ready
//! batches wait while they are (up to `buffer_bytes`, after which the writer
//! blocks, as `buffer.memory` makes `send()` block).
//!
//! Rate: with a fixed rate, record k is *intended* at `start + k / rate`; it is
//! appended once that time has come, and its latencies count from the intended
//! time, so a stall of the writer (or a full pipeline) shows up in the
//! latencies of the records it delayed (no coordinated omission). At max rate
//! the intended time is the time of the append.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::TcpStream;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use sluice_protocol::{ApiKey, RequestBody, ResponseBody, Uuid};

use crate::batch::{BatchWriter, STAMP_LEN};
use crate::client::{decode, read_frame, write_request, Conn};
use crate::clock::Clock;
use crate::error::{error_name, Error, Result};
use crate::stats::Latency;

/// What one producer does.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// Topic to write.
    pub topic: String,
    /// Partitions of the topic.
    pub partitions: Vec<i32>,
    /// Value size in bytes (≥ 8: the first 8 are the send-time stamp).
    pub message_size: usize,
    /// Records per second for this producer; 0 = as fast as possible.
    pub rate: f64,
    /// 0, 1 or -1.
    pub acks: i16,
    /// A batch is closed at this size.
    pub batch_bytes: usize,
    /// ... or this long after its first record.
    pub linger: Duration,
    /// Requests outstanding per connection.
    pub max_in_flight: usize,
    /// Request size bound.
    pub max_request_bytes: usize,
    /// Closed batches waiting to be sent before the writer blocks.
    pub buffer_bytes: usize,
    /// Produce timeout sent to the broker.
    pub timeout_ms: i32,
    /// This producer's number (spreads the sticky partitions' start).
    pub index: usize,
    /// Stop after this many records (0: run until the clock's end).
    pub max_records: u64,
}

/// What one producer measured.
#[derive(Debug, Default)]
pub struct ProducerResult {
    /// Records written to the socket during the measured window.
    pub sent_in_window: u64,
    /// Records acknowledged without error during the window (acks=0: sent).
    pub acked_in_window: u64,
    /// Records acknowledged in total.
    pub acked_total: u64,
    /// Records written in total.
    pub sent_total: u64,
    /// Produce requests written during the measured window.
    pub requests_in_window: u64,
    /// Record batch bytes in those requests (what the broker appends).
    pub request_bytes_in_window: u64,
    /// Records scheduled in the measured window (fixed rate: the target).
    pub scheduled_in_window: u64,
    /// Publish latency (intended send → ack) of records intended in the window.
    pub latency: Latency,
    /// Records that failed, by error name.
    pub errors: BTreeMap<String, u64>,
    /// How far behind its schedule the writer got at worst (fixed rate), ms.
    pub max_behind_ms: f64,
    /// A fatal error that stopped this producer.
    pub fatal: Option<String>,
}

struct InFlight {
    correlation_id: i32,
    /// Per partition: the intended times of its records.
    parts: Vec<(i32, Vec<Instant>)>,
}

struct Ready {
    partition: i32,
    batch: Bytes,
    intended: Vec<Instant>,
}

struct Open {
    partition: i32,
    writer: BatchWriter,
    intended: Vec<Instant>,
    first: Instant,
}

/// Shared between writer and reader: requests outstanding.
struct Slots {
    n: Mutex<usize>,
    cv: Condvar,
}

impl Slots {
    fn get(&self) -> usize {
        self.n.lock().map(|g| *g).unwrap_or(0)
    }
    fn add(&self, d: isize) {
        if let Ok(mut g) = self.n.lock() {
            *g = (*g as isize + d).max(0) as usize;
        }
        self.cv.notify_all();
    }
    /// Waits until fewer than `max` are outstanding (or the timeout passes).
    fn wait_below(&self, max: usize, timeout: Duration) {
        if let Ok(g) = self.n.lock() {
            let _ = self.cv.wait_timeout_while(g, timeout, |n| *n >= max);
        }
    }
}

/// A deterministic, incompressible-looking filler (xorshift64*).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Runs one producer on `conn` until `clock.end`, then drains.
pub fn run(conn: Conn, cfg: ProducerConfig, clock: Clock) -> ProducerResult {
    let mut result = ProducerResult::default();
    let (w, r, client_id, versions) = match conn.into_halves() {
        Ok(x) => x,
        Err(e) => {
            result.fatal = Some(e.to_string());
            return result;
        }
    };
    let slots = Arc::new(Slots {
        n: Mutex::new(0),
        cv: Condvar::new(),
    });
    let (tx, rx) = mpsc::channel::<InFlight>();
    let reader = if cfg.acks != 0 {
        let slots = Arc::clone(&slots);
        let version = versions.produce;
        // a broker that stops answering ends the run instead of hanging it
        let _ = r.set_read_timeout(Some(Duration::from_secs(60)));
        Some(thread::spawn(move || reader(r, rx, version, clock, slots)))
    } else {
        drop(rx);
        None
    };
    let mut writer = Writer {
        cfg: &cfg,
        clock,
        stream: w,
        client_id,
        version: versions.produce,
        tx: if cfg.acks != 0 { Some(tx) } else { None },
        slots: &slots,
        next_correlation: 1,
        ready: VecDeque::new(),
        ready_bytes: 0,
        open: None,
        next_partition: cfg.index % cfg.partitions.len().max(1),
        appended: 0,
        result: &mut result,
    };
    let outcome = writer.run();
    // no more requests: the reader ends after the outstanding responses
    writer.tx = None;
    if let Err(e) = outcome {
        writer.result.fatal = Some(e.to_string());
        let _ = writer.stream.shutdown(std::net::Shutdown::Both);
    }
    let stream = writer.stream;
    if let Some(handle) = reader {
        match handle.join() {
            Ok(rr) => {
                result.acked_in_window += rr.acked_in_window;
                result.acked_total += rr.acked_total;
                result.latency = rr.latency;
                for (k, v) in rr.errors {
                    *result.errors.entry(k).or_default() += v;
                }
                if result.fatal.is_none() {
                    result.fatal = rr.fatal;
                }
            }
            Err(_) => result.fatal = Some("producer reader thread panicked".into()),
        }
    } else {
        result.acked_in_window = result.sent_in_window;
        result.acked_total = result.sent_total;
    }
    drop(stream);
    result
}

struct Writer<'a> {
    cfg: &'a ProducerConfig,
    clock: Clock,
    stream: TcpStream,
    client_id: String,
    version: i16,
    tx: Option<mpsc::Sender<InFlight>>,
    slots: &'a Slots,
    next_correlation: i32,
    ready: VecDeque<Ready>,
    ready_bytes: usize,
    open: Option<Open>,
    next_partition: usize,
    appended: u64,
    result: &'a mut ProducerResult,
}

impl Writer<'_> {
    fn run(&mut self) -> Result<()> {
        let cfg = self.cfg;
        let rest = payload(
            cfg.message_size.saturating_sub(STAMP_LEN),
            0x9E37 + cfg.index as u64,
        );
        let fixed = cfg.rate > 0.0;
        let mut k: u64 = 0;
        let clock = self.clock;
        let due = |k: u64| clock.start + Duration::from_secs_f64(k as f64 / cfg.rate);
        let sleep_until = |t: Instant| {
            let now = Instant::now();
            if t > now {
                thread::sleep(t - now);
            }
        };
        sleep_until(clock.start);
        loop {
            let now = Instant::now();
            if now >= self.clock.end || self.limit_reached() {
                break;
            }
            if fixed {
                // every record whose time has come, each stamped with its intended time
                let mut next = due(k);
                while next <= now && self.ready_bytes < cfg.buffer_bytes && !self.limit_reached() {
                    self.append(next, &rest);
                    if self.clock.in_window(next) {
                        self.result.scheduled_in_window += 1;
                    }
                    let behind = now.saturating_duration_since(next).as_secs_f64() * 1000.0;
                    self.result.max_behind_ms = self.result.max_behind_ms.max(behind);
                    k += 1;
                    next = due(k);
                }
            } else if self.ready_bytes < cfg.buffer_bytes {
                // max rate: fill the open batch to the brim
                loop {
                    let t = Instant::now();
                    if self.append(t, &rest) || self.limit_reached() {
                        break;
                    }
                }
            }
            if let Some(o) = &self.open {
                if now.saturating_duration_since(o.first) >= cfg.linger {
                    self.close_open();
                }
            }
            let in_flight = self.slots.get();
            if !self.ready.is_empty() && (self.tx.is_none() || in_flight < cfg.max_in_flight) {
                self.send_request()?;
                continue;
            }
            if self.ready_bytes >= cfg.buffer_bytes {
                // buffer full: block until a response frees a slot (send() blocks in Java)
                self.slots
                    .wait_below(cfg.max_in_flight, Duration::from_millis(100));
                continue;
            }
            if fixed {
                let mut wake = due(k);
                if let Some(o) = &self.open {
                    wake = wake.min(o.first + cfg.linger);
                }
                if !self.ready.is_empty() {
                    // waiting for a slot: poll it
                    self.slots
                        .wait_below(cfg.max_in_flight, wake.saturating_duration_since(now));
                } else {
                    sleep_until(wake);
                }
            }
        }
        // the end: send what is open and ready, then wait for the responses
        self.close_open();
        let drain_deadline = Instant::now() + Duration::from_secs(30);
        while !self.ready.is_empty() && Instant::now() < drain_deadline {
            if self.tx.is_none() || self.slots.get() < cfg.max_in_flight {
                self.send_request()?;
            } else {
                self.slots
                    .wait_below(cfg.max_in_flight, Duration::from_millis(100));
            }
        }
        while self.tx.is_some() && self.slots.get() > 0 && Instant::now() < drain_deadline {
            self.slots.wait_below(1, Duration::from_millis(100));
        }
        Ok(())
    }

    fn limit_reached(&self) -> bool {
        self.cfg.max_records > 0 && self.appended >= self.cfg.max_records
    }

    /// Appends one record intended at `t`; returns true if it closed the batch.
    fn append(&mut self, t: Instant, rest: &[u8]) -> bool {
        let cfg = self.cfg;
        let stamp = self.clock.unix_us(t);
        let ts_ms = (stamp / 1000) as i64;
        if self.open.is_none() {
            let partition = cfg.partitions[self.next_partition % cfg.partitions.len()];
            self.next_partition = (self.next_partition + 1) % cfg.partitions.len();
            self.open = Some(Open {
                partition,
                writer: BatchWriter::new(ts_ms, cfg.batch_bytes + cfg.message_size + 64),
                intended: Vec::with_capacity(cfg.batch_bytes / cfg.message_size.max(1) + 1),
                first: Instant::now(),
            });
        }
        let full = match self.open.as_mut() {
            Some(o) => {
                o.writer.append(ts_ms, stamp, rest);
                o.intended.push(t);
                self.appended += 1;
                o.writer.size() + cfg.message_size + 16 > cfg.batch_bytes
            }
            None => false,
        };
        if full {
            self.close_open();
        }
        full
    }

    fn close_open(&mut self) {
        if let Some(o) = self.open.take() {
            if o.writer.count() == 0 {
                return;
            }
            let batch = o.writer.finish();
            self.ready_bytes += batch.len();
            self.ready.push_back(Ready {
                partition: o.partition,
                batch,
                intended: o.intended,
            });
        }
    }

    /// Sends one request: ready batches in order, one per partition, up to
    /// `max_request_bytes` (always at least one).
    fn send_request(&mut self) -> Result<()> {
        let cfg = self.cfg;
        let mut taken: Vec<Ready> = Vec::new();
        let mut skipped: VecDeque<Ready> = VecDeque::new();
        let mut bytes = 0usize;
        let mut seen: HashMap<i32, ()> = HashMap::new();
        while let Some(r) = self.ready.pop_front() {
            let fits = taken.is_empty() || bytes + r.batch.len() <= cfg.max_request_bytes;
            if !fits {
                self.ready.push_front(r);
                break;
            }
            if seen.insert(r.partition, ()).is_some() {
                skipped.push_back(r);
                continue;
            }
            bytes += r.batch.len();
            taken.push(r);
        }
        while let Some(r) = skipped.pop_back() {
            self.ready.push_front(r);
        }
        self.ready_bytes = self.ready_bytes.saturating_sub(bytes);
        let corr = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        let body = RequestBody::Produce(ProduceRequest {
            transactional_id: None,
            acks: cfg.acks,
            timeout_ms: cfg.timeout_ms,
            topic_data: vec![TopicProduceData {
                name: cfg.topic.clone(),
                topic_id: Uuid::ZERO,
                partition_data: taken
                    .iter()
                    .map(|r| PartitionProduceData {
                        index: r.partition,
                        records: Some(r.batch.clone().into()),
                    })
                    .collect(),
            }],
        });
        let records: u64 = taken.iter().map(|r| r.intended.len() as u64).sum();
        if let Some(tx) = &self.tx {
            self.slots.add(1);
            let parts = taken
                .into_iter()
                .map(|r| (r.partition, r.intended))
                .collect();
            tx.send(InFlight {
                correlation_id: corr,
                parts,
            })
            .map_err(|_| Error::Unexpected("the response reader stopped".into()))?;
        }
        write_request(&mut self.stream, &self.client_id, corr, self.version, &body)?;
        let now = Instant::now();
        self.result.sent_total += records;
        if self.clock.in_window(now) {
            self.result.sent_in_window += records;
            self.result.requests_in_window += 1;
            self.result.request_bytes_in_window += bytes as u64;
        }
        Ok(())
    }
}

#[derive(Default)]
struct ReaderResult {
    acked_in_window: u64,
    acked_total: u64,
    latency: Latency,
    errors: BTreeMap<String, u64>,
    fatal: Option<String>,
}

fn reader(
    mut r: TcpStream,
    rx: mpsc::Receiver<InFlight>,
    version: i16,
    clock: Clock,
    slots: Arc<Slots>,
) -> ReaderResult {
    let mut out = ReaderResult::default();
    while let Ok(f) = rx.recv() {
        let frame = match read_frame(&mut r) {
            Ok(f) => f,
            Err(e) => {
                out.fatal = Some(format!("reading a Produce response: {e}"));
                break;
            }
        };
        let body = match decode(frame, ApiKey::Produce, version, f.correlation_id) {
            Ok(ResponseBody::Produce(p)) => p,
            Ok(other) => {
                out.fatal = Some(format!("unexpected {:?} response", other.api_key()));
                break;
            }
            Err(e) => {
                out.fatal = Some(format!("decoding a Produce response: {e}"));
                break;
            }
        };
        let now = Instant::now();
        let mut codes: HashMap<i32, i16> = HashMap::new();
        for t in &body.responses {
            for p in &t.partition_responses {
                codes.insert(p.index, p.error_code);
            }
        }
        for (partition, intended) in &f.parts {
            match codes.get(partition) {
                Some(0) => {
                    out.acked_total += intended.len() as u64;
                    if clock.in_window(now) {
                        out.acked_in_window += intended.len() as u64;
                    }
                    for &t in intended {
                        if clock.in_window(t) {
                            out.latency
                                .record(now.saturating_duration_since(t).as_micros() as u64);
                        }
                    }
                }
                Some(&code) => {
                    *out.errors.entry(error_name(code).to_string()).or_default() +=
                        intended.len() as u64;
                }
                None => {
                    *out.errors
                        .entry("NO_PARTITION_RESPONSE".to_string())
                        .or_default() += intended.len() as u64;
                }
            }
        }
        slots.add(-1);
    }
    // a failed reader frees every slot so the writer does not wait for nothing
    slots.add(-(1 << 20));
    out
}
