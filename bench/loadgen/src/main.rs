//! `sluice-loadgen`: a Kafka-protocol load generator in the manner of the
//! OpenMessaging Benchmark. Producers and consumers are threads with their own
//! blocking TCP connections; the protocol is `sluice-protocol`'s. See
//! bench/README.md ("Native load generator") and `sluice-loadgen --help`.

mod batch;
mod client;
mod clock;
mod consumer;
mod error;
mod producer;
mod stats;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

use client::Conn;
use clock::Clock;
use consumer::{Consumer, ConsumerConfig, ConsumerResult};
use error::{Error, Result};
use producer::{ProducerConfig, ProducerResult};
use stats::{Json, Latency};

const MIB: f64 = 1_048_576.0;

const HELP: &str = "\
sluice-loadgen: Kafka-protocol load generator (OpenMessaging Benchmark style)

  sluice-loadgen --bootstrap HOST:PORT --topic T [options]

Topic:
  --partitions N          partitions when creating the topic (default 16)
  --create                create the topic (replication factor 1) unless it exists
  --topic-config K=V      topic config for --create (repeatable)
Load:
  --producers N           producer threads, one connection each (default 1)
  --consumers N           consumer threads, one connection each; partition p goes
                          to consumer p % N (default 1; 0 = none)
  --rate R                total records/s over all producers; 0 = max rate (default 0)
  --message-size B        value bytes, >= 8 (default 1024)
  --acks A                0, 1 or -1/all (default 1)
  --batch-bytes B         close a partition's batch at this size (default 131072)
  --linger-ms L           ... or L ms after its first record (default 5)
  --max-in-flight K       outstanding Produce requests per connection (default 5)
  --max-request-bytes B   Produce request size bound (default 1048576)
  --buffer-bytes B        closed batches queued before the writer blocks (default 33554432)
Time:
  --records N             producers stop after N records in total (a fill; default: none)
  --delete-after          delete the topic at the end (frees the disk between runs)
  --warmup S              seconds not measured at the start (default 5)
  --duration S            measured seconds (default 30)
Consume:
  --from latest|earliest  consumers' start offsets (default latest)
  --until-end             catch-up read: stop when the end offsets taken at the start
                          are reached (every record counts; --duration is the time limit)
  --fetch-max-wait-ms MS  (default 500)   --fetch-min-bytes B (default 1)
  --fetch-max-bytes B     (default 52428800)  --partition-max-bytes B (default 1048576)
  --no-fetch-session      full Fetch requests naming every partition; by default the
                          consumers keep a KIP-227 fetch session, as the Java consumer does
Output:
  --json PATH             write the result there (default: stdout)

Exit status 0 when nothing failed, 1 when any record or request failed, 2 on bad usage.
";

#[derive(Debug, Clone)]
struct Args {
    bootstrap: String,
    topic: String,
    partitions: i32,
    create: bool,
    topic_configs: Vec<(String, String)>,
    producers: usize,
    consumers: usize,
    rate: f64,
    message_size: usize,
    acks: i16,
    batch_bytes: usize,
    linger_ms: u64,
    max_in_flight: usize,
    max_request_bytes: usize,
    buffer_bytes: usize,
    warmup_s: f64,
    duration_s: f64,
    from_earliest: bool,
    until_end: bool,
    fetch_max_wait_ms: i32,
    fetch_min_bytes: i32,
    fetch_max_bytes: i32,
    partition_max_bytes: i32,
    json: Option<String>,
    records: u64,
    delete_after: bool,
    fetch_session: bool,
}

fn parse_args(argv: &[String]) -> Result<Option<Args>> {
    let mut a = Args {
        bootstrap: String::new(),
        topic: String::new(),
        partitions: 16,
        create: false,
        topic_configs: Vec::new(),
        producers: 1,
        consumers: 1,
        rate: 0.0,
        message_size: 1024,
        acks: 1,
        batch_bytes: 131_072,
        linger_ms: 5,
        max_in_flight: 5,
        max_request_bytes: 1_048_576,
        buffer_bytes: 33_554_432,
        warmup_s: 5.0,
        duration_s: 30.0,
        from_earliest: false,
        until_end: false,
        fetch_max_wait_ms: 500,
        fetch_min_bytes: 1,
        fetch_max_bytes: 52_428_800,
        partition_max_bytes: 1_048_576,
        json: None,
        records: 0,
        delete_after: false,
        fetch_session: true,
    };
    fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T> {
        v.parse()
            .map_err(|_| Error::Usage(format!("{flag}: not a number: {v}")))
    }
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let flag = flag.as_str();
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        if matches!(
            flag,
            "--create" | "--until-end" | "--delete-after" | "--no-fetch-session"
        ) {
            match flag {
                "--create" => a.create = true,
                "--delete-after" => a.delete_after = true,
                "--no-fetch-session" => a.fetch_session = false,
                _ => a.until_end = true,
            }
            continue;
        }
        let v = it
            .next()
            .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))?
            .as_str();
        match flag {
            "--bootstrap" => a.bootstrap = v.to_string(),
            "--topic" => a.topic = v.to_string(),
            "--partitions" => a.partitions = num(flag, v)?,
            "--topic-config" => {
                let (k, val) = v
                    .split_once('=')
                    .ok_or_else(|| Error::Usage(format!("{flag}: expected K=V, got {v}")))?;
                a.topic_configs.push((k.to_string(), val.to_string()));
            }
            "--producers" => a.producers = num(flag, v)?,
            "--consumers" => a.consumers = num(flag, v)?,
            "--rate" => a.rate = num(flag, v)?,
            "--message-size" => a.message_size = num(flag, v)?,
            "--acks" => {
                a.acks = if v == "all" { -1 } else { num(flag, v)? };
            }
            "--batch-bytes" => a.batch_bytes = num(flag, v)?,
            "--linger-ms" => a.linger_ms = num(flag, v)?,
            "--max-in-flight" => a.max_in_flight = num(flag, v)?,
            "--max-request-bytes" => a.max_request_bytes = num(flag, v)?,
            "--buffer-bytes" => a.buffer_bytes = num(flag, v)?,
            "--warmup" => a.warmup_s = num(flag, v)?,
            "--duration" => a.duration_s = num(flag, v)?,
            "--from" => {
                a.from_earliest = match v {
                    "earliest" => true,
                    "latest" => false,
                    _ => return Err(Error::Usage(format!("--from: latest or earliest, not {v}"))),
                }
            }
            "--fetch-max-wait-ms" => a.fetch_max_wait_ms = num(flag, v)?,
            "--fetch-min-bytes" => a.fetch_min_bytes = num(flag, v)?,
            "--fetch-max-bytes" => a.fetch_max_bytes = num(flag, v)?,
            "--partition-max-bytes" => a.partition_max_bytes = num(flag, v)?,
            "--json" => a.json = Some(v.to_string()),
            "--records" => a.records = num(flag, v)?,
            _ => return Err(Error::Usage(format!("unknown option {flag} (see --help)"))),
        }
    }
    if a.bootstrap.is_empty() || a.topic.is_empty() {
        return Err(Error::Usage("--bootstrap and --topic are required".into()));
    }
    if a.message_size < batch::STAMP_LEN {
        return Err(Error::Usage("--message-size must be at least 8".into()));
    }
    if !matches!(a.acks, -1..=1) {
        return Err(Error::Usage("--acks must be 0, 1 or -1/all".into()));
    }
    if a.max_in_flight == 0 || a.producers + a.consumers == 0 {
        return Err(Error::Usage(
            "--max-in-flight >= 1 and at least one producer or consumer".into(),
        ));
    }
    if !(a.rate >= 0.0 && a.warmup_s >= 0.0 && a.duration_s > 0.0) {
        return Err(Error::Usage(
            "--rate >= 0, --warmup >= 0, --duration > 0".into(),
        ));
    }
    Ok(Some(a))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("sluice-loadgen: {e}");
            return ExitCode::from(2);
        }
    };
    let (json, failed) = match run(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sluice-loadgen: {e}");
            (
                Json::obj(vec![
                    ("ok", Json::Bool(false)),
                    ("fatal", Json::Str(e.to_string())),
                ]),
                true,
            )
        }
    };
    let text = json.render() + "\n";
    let written = match &args.json {
        Some(path) => std::fs::write(path, &text),
        None => std::io::stdout().write_all(text.as_bytes()),
    };
    if let Err(e) = written {
        eprintln!("sluice-loadgen: writing the result: {e}");
        return ExitCode::from(1);
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn run(a: &Args) -> Result<(Json, bool)> {
    let mut admin = Conn::connect(&a.bootstrap, "sluice-loadgen-admin")?;
    if a.create {
        admin.create_topic(&a.topic, a.partitions, &a.topic_configs)?;
    }
    let (partitions, topic_id) = admin.wait_topic(&a.topic, Duration::from_secs(60))?;
    // the metadata names a leader before the broker serves the partition (Kafka creates a new
    // topic's partitions one by one): ListOffsets on all of them, retried, says it does
    admin.list_offsets(&a.topic, &partitions, -1)?;
    let versions = admin.versions;
    let t_setup = Instant::now();

    // consumers first, positioned before any producer starts
    let mut consumers = Vec::new();
    for i in 0..a.consumers {
        let mine: Vec<i32> = partitions
            .iter()
            .copied()
            .filter(|p| (*p as usize) % a.consumers == i)
            .collect();
        if mine.is_empty() {
            continue;
        }
        let conn = Conn::connect(&a.bootstrap, &format!("sluice-loadgen-consumer-{i}"))?;
        let cfg = ConsumerConfig {
            topic: a.topic.clone(),
            topic_id,
            partitions: mine,
            until_end: a.until_end,
            max_wait_ms: a.fetch_max_wait_ms,
            min_bytes: a.fetch_min_bytes,
            max_bytes: a.fetch_max_bytes,
            partition_max_bytes: a.partition_max_bytes,
            fetch_session: a.fetch_session,
        };
        let from = if a.from_earliest { -2 } else { -1 };
        consumers.push(Consumer::position(conn, cfg, from)?);
    }
    let mut producer_conns = Vec::new();
    for i in 0..a.producers {
        producer_conns.push(Conn::connect(
            &a.bootstrap,
            &format!("sluice-loadgen-producer-{i}"),
        )?);
    }
    let clock = Clock::new(
        Duration::from_millis(200),
        Duration::from_secs_f64(if a.until_end { 0.0 } else { a.warmup_s }),
        Duration::from_secs_f64(a.duration_s),
    );
    // markers on stderr for a harness that samples the broker over the measured window
    let marker = thread::spawn(move || {
        let wait = |t: Instant| thread::sleep(t.saturating_duration_since(Instant::now()));
        wait(clock.measure);
        eprintln!("sluice-loadgen: measure start");
        wait(clock.end);
        eprintln!("sluice-loadgen: measure end");
    });
    let c_handles: Vec<_> = consumers
        .into_iter()
        .map(|c| thread::spawn(move || c.run(clock)))
        .collect();
    let p_handles: Vec<_> = producer_conns
        .into_iter()
        .enumerate()
        .map(|(i, conn)| {
            let cfg = ProducerConfig {
                topic: a.topic.clone(),
                partitions: partitions.clone(),
                message_size: a.message_size,
                rate: a.rate / a.producers as f64,
                acks: a.acks,
                batch_bytes: a.batch_bytes,
                linger: Duration::from_millis(a.linger_ms),
                max_in_flight: a.max_in_flight,
                max_request_bytes: a.max_request_bytes,
                buffer_bytes: a.buffer_bytes,
                timeout_ms: 30_000,
                index: i * partitions.len() / a.producers.max(1),
                max_records: if a.records > 0 {
                    // spread N over the producers; the first ones take the remainder
                    a.records / a.producers as u64
                        + u64::from((i as u64) < a.records % a.producers as u64)
                } else {
                    0
                },
            };
            thread::spawn(move || producer::run(conn, cfg, clock))
        })
        .collect();
    let mut fatal: Vec<String> = Vec::new();
    let mut presults: Vec<ProducerResult> = Vec::new();
    for h in p_handles {
        match h.join() {
            Ok(r) => presults.push(r),
            Err(_) => fatal.push(Error::Panic("producer".into()).to_string()),
        }
    }
    let mut cresults: Vec<ConsumerResult> = Vec::new();
    for h in c_handles {
        match h.join() {
            Ok(r) => cresults.push(r),
            Err(_) => fatal.push(Error::Panic("consumer".into()).to_string()),
        }
    }
    let _ = t_setup;
    if !a.until_end && a.records == 0 {
        let _ = marker.join();
    }
    // A fill ends when its records are acknowledged, long before `--duration` (its time limit).
    let clock = if a.records > 0 {
        clock.ended_at(Instant::now())
    } else {
        clock
    };
    if a.delete_after {
        if let Err(e) = admin.delete_topic(&a.topic) {
            fatal.push(format!("deleting the topic: {e}"));
        }
    }
    Ok(report(
        a,
        &versions,
        &partitions,
        clock,
        presults,
        cresults,
        fatal,
    ))
}

fn report(
    a: &Args,
    versions: &client::Versions,
    partitions: &[i32],
    clock: Clock,
    presults: Vec<ProducerResult>,
    cresults: Vec<ConsumerResult>,
    mut fatal: Vec<String>,
) -> (Json, bool) {
    let secs = clock.measured_s();
    let per_s = |n: u64| n as f64 / secs;
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();

    // producers
    let mut publish = Latency::new();
    let (mut acked, mut sent, mut acked_total, mut sent_total, mut scheduled) = (0, 0, 0, 0, 0);
    let (mut requests, mut request_bytes) = (0u64, 0u64);
    let mut behind: f64 = 0.0;
    for (i, r) in presults.iter().enumerate() {
        publish.merge(&r.latency);
        acked += r.acked_in_window;
        sent += r.sent_in_window;
        acked_total += r.acked_total;
        sent_total += r.sent_total;
        scheduled += r.scheduled_in_window;
        requests += r.requests_in_window;
        request_bytes += r.request_bytes_in_window;
        behind = behind.max(r.max_behind_ms);
        for (k, v) in &r.errors {
            *errors.entry(format!("produce: {k}")).or_default() += v;
        }
        if let Some(f) = &r.fatal {
            fatal.push(format!("producer {i}: {f}"));
        }
    }
    let value_mb = |n: u64| n as f64 * a.message_size as f64 / MIB;
    let produce = Json::obj(vec![
        ("producers", Json::Int(presults.len() as i64)),
        (
            "target_msgs_per_s",
            if a.rate > 0.0 {
                Json::Num(a.rate)
            } else {
                Json::Null
            },
        ),
        ("msgs_per_s", Json::Num(per_s(acked))),
        ("mb_per_s", Json::Num(value_mb(acked) / secs)),
        ("sent_msgs_per_s", Json::Num(per_s(sent))),
        // the issue compares CPU per GiB between brokers that answer at different speeds: a
        // faster answer means smaller batches and more requests per GiB, so both are reported
        ("requests", Json::Int(requests as i64)),
        (
            "bytes_per_request",
            if requests > 0 {
                Json::Num(request_bytes as f64 / requests as f64)
            } else {
                Json::Null
            },
        ),
        ("records_acked", Json::Int(acked as i64)),
        ("records_acked_total", Json::Int(acked_total as i64)),
        ("records_sent_total", Json::Int(sent_total as i64)),
        (
            "records_scheduled",
            if a.rate > 0.0 {
                Json::Int(scheduled as i64)
            } else {
                Json::Null
            },
        ),
        ("max_behind_schedule_ms", Json::Num(behind)),
        ("publish_latency", publish.to_json()),
    ]);

    // consumers
    let mut e2e = Latency::new();
    let (mut recs, mut bytes, mut recs_total, mut target, mut fetches) = (0, 0, 0, 0, 0);
    let mut session_resets = 0;
    let mut caught: Option<Instant> = None;
    let mut all_caught = true;
    for (i, r) in cresults.iter().enumerate() {
        e2e.merge(&r.latency);
        recs += r.records;
        bytes += r.bytes;
        recs_total += r.records_total;
        target += r.target_records;
        fetches += r.fetches;
        session_resets += r.session_resets;
        match r.caught_up {
            Some(t) => caught = Some(caught.map_or(t, |c: Instant| c.max(t))),
            None => all_caught = false,
        }
        for (k, v) in &r.errors {
            *errors.entry(format!("consume: {k}")).or_default() += v;
        }
        if let Some(f) = &r.fatal {
            fatal.push(format!("consumer {i}: {f}"));
        }
    }
    let consume_secs = if a.until_end {
        caught
            .filter(|_| all_caught)
            .map(|c| c.saturating_duration_since(clock.start).as_secs_f64())
            .unwrap_or_else(|| {
                clock
                    .end
                    .saturating_duration_since(clock.start)
                    .as_secs_f64()
            })
    } else {
        secs
    };
    if a.until_end && !all_caught && !cresults.is_empty() {
        fatal.push(format!(
            "catch-up read did not reach the end offsets within {} s ({recs_total} of {target} records)",
            a.duration_s
        ));
    }
    let consume = Json::obj(vec![
        ("consumers", Json::Int(cresults.len() as i64)),
        ("msgs_per_s", Json::Num(recs as f64 / consume_secs)),
        ("mb_per_s", Json::Num(bytes as f64 / MIB / consume_secs)),
        ("records", Json::Int(recs as i64)),
        ("records_total", Json::Int(recs_total as i64)),
        ("seconds", Json::Num(consume_secs)),
        (
            "target_records",
            if a.until_end {
                Json::Int(target as i64)
            } else {
                Json::Null
            },
        ),
        ("fetches", Json::Int(fetches as i64)),
        ("fetch_session", Json::Bool(a.fetch_session)),
        ("fetch_session_resets", Json::Int(session_resets as i64)),
        ("e2e_latency", e2e.to_json()),
    ]);
    let error_count: u64 = errors.values().sum();
    let failed = error_count > 0 || !fatal.is_empty();
    let config = Json::obj(vec![
        ("bootstrap", Json::Str(a.bootstrap.clone())),
        ("topic", Json::Str(a.topic.clone())),
        ("partitions", Json::Int(partitions.len() as i64)),
        ("producers", Json::Int(a.producers as i64)),
        ("consumers", Json::Int(a.consumers as i64)),
        ("rate", Json::Num(a.rate)),
        ("message_size", Json::Int(a.message_size as i64)),
        ("acks", Json::Int(i64::from(a.acks))),
        ("batch_bytes", Json::Int(a.batch_bytes as i64)),
        ("linger_ms", Json::Int(a.linger_ms as i64)),
        ("max_in_flight", Json::Int(a.max_in_flight as i64)),
        ("max_request_bytes", Json::Int(a.max_request_bytes as i64)),
        ("buffer_bytes", Json::Int(a.buffer_bytes as i64)),
        ("warmup_s", Json::Num(a.warmup_s)),
        ("duration_s", Json::Num(a.duration_s)),
        (
            "from",
            Json::Str(
                if a.from_earliest {
                    "earliest"
                } else {
                    "latest"
                }
                .into(),
            ),
        ),
        ("until_end", Json::Bool(a.until_end)),
        (
            "fetch_max_wait_ms",
            Json::Int(i64::from(a.fetch_max_wait_ms)),
        ),
        ("fetch_max_bytes", Json::Int(i64::from(a.fetch_max_bytes))),
        (
            "partition_max_bytes",
            Json::Int(i64::from(a.partition_max_bytes)),
        ),
    ]);
    let versions = Json::obj(vec![
        ("produce", Json::Int(i64::from(versions.produce))),
        ("fetch", Json::Int(i64::from(versions.fetch))),
        ("metadata", Json::Int(i64::from(versions.metadata))),
        ("list_offsets", Json::Int(i64::from(versions.list_offsets))),
    ]);
    let json = Json::obj(vec![
        ("ok", Json::Bool(!failed)),
        ("config", config),
        ("api_versions", versions),
        ("measured_s", Json::Num(secs)),
        ("produce", produce),
        ("consume", consume),
        ("error_count", Json::Int(error_count as i64)),
        (
            "errors",
            Json::Obj(
                errors
                    .into_iter()
                    .map(|(k, v)| (k, Json::Int(v as i64)))
                    .collect(),
            ),
        ),
        (
            "fatal",
            Json::Arr(fatal.into_iter().map(Json::Str).collect()),
        ),
    ]);
    (json, failed)
}
