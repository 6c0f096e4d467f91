//! The cleaner against a model, over seeded random logs (property rounds), and kill -9 at
//! random points of a clean (crash rounds: a child process of this test binary cleans and is
//! killed; the parent reopens the log and compares it with the model).
//!
//! `SLUICE_CLEANER_SEEDS=<n>` runs more property seeds, `SLUICE_CLEANER_CRASH_ROUNDS=<n>`
//! more crash rounds, `SLUICE_CLEANER_SEED=<seed>` replays one seed of both.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::Duration;

use glommio::LocalExecutorBuilder;
use sluice_protocol::record_batch::{read_records, RecordBatchBuilder};

use super::{CleanerConfig, LogCleaner};
use crate::batch::HeaderWalker;
use crate::clock::Clock;
use crate::{Log, LogConfig};

struct TestClock(Cell<i64>);

impl Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::default()
        .spawn(f)
        .expect("spawn executor")
        .join()
        .expect("executor thread");
}

fn test_dir(name: &str) -> PathBuf {
    let dir = crate::test_dirs::root()
        .join("cleaner")
        .join(format!("{name}-0"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One record as appended: its value (`None`: tombstone) and timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    key: Vec<u8>,
    value: Option<Vec<u8>>,
    timestamp: i64,
    batch_base: i64,
}

/// Everything appended, by offset, and the delete horizons the model gave batches.
#[derive(Default)]
struct Model {
    records: BTreeMap<i64, Rec>,
    horizons: HashMap<i64, i64>,
}

impl Model {
    /// What one complete clean (all passes) at `now` with first uncleanable offset `end`
    /// leaves: below `end`, the latest record of each key, a tombstone only until its batch's
    /// delete horizon (given at the first clean that kept it). Returns the records kept.
    fn clean(&mut self, end: i64, now: i64, delete_retention_ms: i64) {
        let mut latest: HashMap<Vec<u8>, i64> = HashMap::new();
        for (&o, r) in self.records.range(..end) {
            latest.insert(r.key.clone(), o);
        }
        let mut new_horizons = Vec::new();
        self.records.retain(|&o, r| {
            if o >= end {
                return true;
            }
            if latest.get(&r.key) != Some(&o) {
                return false;
            }
            if r.value.is_some() {
                return true;
            }
            match self.horizons.get(&r.batch_base) {
                Some(&h) => now < h,
                None => {
                    new_horizons.push(r.batch_base);
                    true
                }
            }
        });
        for b in new_horizons {
            self.horizons.insert(b, now + delete_retention_ms);
        }
    }
}

/// The records the log holds, by offset, read through `Log::read` from the log start.
async fn log_records(log: &Log) -> BTreeMap<i64, Rec> {
    let mut out = BTreeMap::new();
    let mut from = log.log_start_offset();
    let end = log.readable_end_offset();
    let mut last_offset = -1;
    while from < end {
        let info = log.read(from, 1 << 20, true, None).await.expect("read");
        if info.records.is_empty() {
            break;
        }
        for (pos, h) in HeaderWalker::new(&info.records) {
            assert!(h.base_offset > last_offset, "batches in offset order");
            let batch = &info.records[pos..pos + h.size];
            crate::batch::check_crc(batch).expect("crc");
            for r in read_records(batch).expect("records") {
                let o = h.base_offset + i64::from(r.offset_delta);
                assert!(o > last_offset, "records in offset order");
                last_offset = o;
                out.insert(
                    o,
                    Rec {
                        key: r.key.map(|k| k.to_vec()).unwrap_or_default(),
                        value: r.value.map(|v| v.to_vec()),
                        timestamp: r.timestamp,
                        batch_base: h.base_offset,
                    },
                );
            }
            from = h.last_offset() + 1;
        }
    }
    out
}

/// Every kept record is found by a read starting at its offset (index lookups).
async fn check_reads(log: &Log, records: &BTreeMap<i64, Rec>) {
    for (&o, r) in records {
        let info = log.read(o, 1, true, None).await.expect("read");
        let (_, h) = HeaderWalker::new(&info.records).next().expect("a batch");
        assert!(h.base_offset <= o && o <= h.last_offset(), "offset {o}");
        assert_eq!(h.base_offset, r.batch_base, "offset {o}");
    }
}

/// The random log layout and data of one seed.
struct Scenario {
    config: LogConfig,
    keys: u64,
    tombstone_pct: u64,
    cleaner: CleanerConfig,
}

fn scenario(rng: &mut Rng) -> Scenario {
    let config = LogConfig {
        segment_bytes: 250 + rng.below(3000),
        index_interval_bytes: 64 + rng.below(1024) as u32,
        tail_cache_bytes: if rng.below(2) == 0 { 0 } else { 64 << 10 },
        cleanup_policy_compact: true,
        cleanup_policy_delete: false,
        delete_retention_ms: 1 + rng.below(2_000) as i64,
        min_compaction_lag_ms: if rng.below(3) == 0 {
            rng.below(3_000) as i64
        } else {
            0
        },
        ..LogConfig::default()
    };
    let cleaner = CleanerConfig {
        // From a handful of keys per pass to all of them.
        dedupe_buffer_bytes: super::offset_map::SLOT_BYTES * (6 + rng.below(200) as usize),
        io_buffer_bytes: 4096 + rng.below(8192) as usize,
        io_max_bytes_per_second: f64::MAX,
    };
    Scenario {
        config,
        keys: 2 + rng.below(40),
        tombstone_pct: rng.below(30),
        cleaner,
    }
}

/// Appends `batches` random batches (1-4 records) at the clock's time, advancing it.
async fn append_random(
    log: &Log,
    model: &mut Model,
    rng: &mut Rng,
    s: &Scenario,
    clock: &TestClock,
    batches: usize,
) {
    for _ in 0..batches {
        clock.0.set(clock.0.get() + rng.below(40) as i64);
        let now = clock.0.get();
        let n = 1 + rng.below(4);
        let mut b = RecordBatchBuilder::new(now);
        let mut recs = Vec::new();
        for i in 0..n {
            let key = format!("k{}", rng.below(s.keys)).into_bytes();
            let value = (rng.below(100) >= s.tombstone_pct).then(|| {
                format!(
                    "v{}-{}",
                    rng.next() % 100_000,
                    "x".repeat(rng.below(60) as usize)
                )
                .into_bytes()
            });
            b = b.record_at(i as i64, Some(&key), value.as_deref());
            recs.push((key, value, now + i as i64));
        }
        let info = log
            .append(&b.build())
            .await
            .unwrap_or_else(|e| panic!("append: {e}"));
        for (i, (key, value, timestamp)) in recs.into_iter().enumerate() {
            model.records.insert(
                info.first_offset + i as i64,
                Rec {
                    key,
                    value,
                    timestamp,
                    batch_base: info.first_offset,
                },
            );
        }
    }
}

/// Cleans until the first dirty offset reaches `end` (passes, when the map is small).
async fn clean_fully(cleaner: &LogCleaner, log: &Log, end: i64) {
    for _ in 0..10_000 {
        let stats = cleaner.clean(log).await.expect("clean");
        match stats {
            Some(s) if !s.aborted && s.end_offset < end => continue,
            _ => return,
        }
    }
    panic!("cleaning does not progress");
}

/// One seed of the property test. Seeds share one executor: glommio closes a dropped file at
/// its reactor's next I/O cycle, which an executor that ends never has (fds would pile up
/// over hundreds of seeds).
async fn property_round(seed: u64) {
    println!("property seed {seed}");
    {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let s = scenario(&mut rng);
        let dir = test_dir(&format!("prop-{seed}"));
        let clock = Rc::new(TestClock(Cell::new(1_000_000)));
        let mut log = Log::open_with_clock(dir.clone(), s.config.clone(), clock.clone())
            .await
            .expect("open");
        let cleaner = LogCleaner::new(s.cleaner.clone());
        let mut model = Model::default();
        for round in 0..4 {
            let batches = 10 + rng.below(120) as usize;
            append_random(&log, &mut model, &mut rng, &s, &clock, batches).await;
            let end = log.log_end_offset();
            // A high watermark somewhere in the last batches (a batch boundary).
            let hw_choices: Vec<i64> = model
                .records
                .values()
                .map(|r| r.batch_base)
                .filter(|&b| b > end - 20)
                .chain([end])
                .collect();
            let hw = hw_choices[rng.below(hw_choices.len() as u64) as usize];
            log.update_high_watermark(hw);
            clock.0.set(clock.0.get() + rng.below(4_000) as i64);
            let now = clock.0.get();
            let Some(todo) = log.log_to_clean() else {
                continue;
            };
            let uncleanable = todo.first_uncleanable_offset;
            assert!(uncleanable <= hw);
            let before = log_records(&log).await;
            clean_fully(&cleaner, &log, uncleanable).await;
            model.clean(uncleanable, now, s.config.delete_retention_ms);
            let after = log_records(&log).await;
            // Nothing at or above the first uncleanable offset touched.
            let untouched: Vec<_> = before.range(uncleanable..).collect();
            let still: Vec<_> = after.range(uncleanable..).collect();
            assert_eq!(
                untouched, still,
                "seed {seed} round {round}: above {uncleanable}"
            );
            assert_eq!(after, model.records, "seed {seed} round {round}");
            check_reads(&log, &after).await;
            if rng.below(2) == 0 {
                // Reopen, cleanly or as after a crash (full recovery scan of the gaps).
                log.close().await.expect("close");
                drop(log);
                if rng.below(2) == 0 {
                    let _ = std::fs::remove_file(dir.join(".clean_shutdown"));
                    let _ = std::fs::remove_file(dir.join("recovery-point"));
                }
                log = Log::open_with_clock(dir.clone(), s.config.clone(), clock.clone())
                    .await
                    .expect("reopen");
                assert_eq!(
                    log_records(&log).await,
                    model.records,
                    "seed {seed} reopened"
                );
                // The cleaner checkpoint survives: work below it is not redone.
                assert_eq!(log.first_dirty_offset(), Some(uncleanable), "seed {seed}");
            }
        }
        log.close().await.expect("close");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn cleaner_agrees_with_the_model_over_random_logs() {
    run(|| async {
        if let Some(seed) = env_u64("SLUICE_CLEANER_SEED") {
            property_round(seed).await;
            return;
        }
        for seed in 0..env_u64("SLUICE_CLEANER_SEEDS").unwrap_or(40) {
            property_round(seed).await;
        }
    });
}

#[test]
fn compact_only_log_is_not_shortened_by_retention_and_delete_log_is_not_cleaned() {
    run(|| async {
        let dir = test_dir("policy");
        let clock = Rc::new(TestClock(Cell::new(1_000_000)));
        let config = LogConfig {
            segment_bytes: 300,
            retention_ms: 1,
            cleanup_policy_compact: true,
            cleanup_policy_delete: false,
            ..LogConfig::default()
        };
        let log = Log::open_with_clock(dir.clone(), config.clone(), clock.clone())
            .await
            .unwrap();
        let mut rng = Rng(7);
        let mut model = Model::default();
        let s = Scenario {
            config: config.clone(),
            keys: 3,
            tombstone_pct: 0,
            cleaner: CleanerConfig::default(),
        };
        append_random(&log, &mut model, &mut rng, &s, &clock, 30).await;
        log.update_high_watermark(log.log_end_offset());
        clock.0.set(clock.0.get() + 1_000_000);
        assert_eq!(log.run_retention(clock.0.get(), 100).await.unwrap(), 0);
        assert!(log.log_to_clean().is_some());
        log.update_config(LogConfig {
            cleanup_policy_compact: false,
            cleanup_policy_delete: true,
            ..config
        });
        assert!(log.log_to_clean().is_none());
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

// ---- crash rounds ----

const CHILD_DIR_ENV: &str = "SLUICE_CLEANER_CHILD_DIR";
const CHILD_SEED_ENV: &str = "SLUICE_CLEANER_CHILD_SEED";
const STEPS: [&str; 5] = ["cleaned", "swap", "deleted", "renamed", "done"];

/// Parent and child derive the same scenario and clean time from the seed.
fn crash_setup(seed: u64) -> (Rng, Scenario, i64) {
    let mut rng = Rng(seed.wrapping_mul(0xD1B5_4A32_D192_ED03) | 1);
    let mut s = scenario(&mut rng);
    s.config.min_compaction_lag_ms = 0;
    s.config.tail_cache_bytes = 0;
    (rng, s, 5_000_000)
}

/// The child: opens the log the parent wrote, cleans it completely at the seed's time.
#[test]
#[ignore = "run by cleaner_survives_kill_9_at_random_points as a child process"]
fn crash_child() {
    let (Ok(dir), Some(seed)) = (std::env::var(CHILD_DIR_ENV), env_u64(CHILD_SEED_ENV)) else {
        return;
    };
    run(move || async move {
        let (_, s, now) = crash_setup(seed);
        let clock = Rc::new(TestClock(Cell::new(now)));
        let log = Log::open_with_clock(PathBuf::from(dir), s.config.clone(), clock)
            .await
            .expect("open");
        log.update_high_watermark(log.log_end_offset());
        let cleaner = LogCleaner::new(s.cleaner.clone());
        let end = log.log_to_clean().map_or(0, |t| t.first_uncleanable_offset);
        clean_fully(&cleaner, &log, end).await;
        println!("CHILD-DONE");
    });
}

fn crash_round(seed: u64) {
    let dir = test_dir(&format!("crash-{seed}"));
    let (mut rng, s, now) = crash_setup(seed);
    // Parent: write the log.
    let model = {
        let dir = dir.clone();
        let s_config = s.config.clone();
        let keys = s.keys;
        let tombstone_pct = s.tombstone_pct;
        let (tx, rx) = std::sync::mpsc::channel();
        let mut rng2 = Rng(rng.next() | 1);
        run(move || async move {
            let clock = Rc::new(TestClock(Cell::new(1_000_000)));
            let log = Log::open_with_clock(dir, s_config.clone(), clock.clone())
                .await
                .unwrap();
            let sc = Scenario {
                config: s_config,
                keys,
                tombstone_pct,
                cleaner: CleanerConfig::default(),
            };
            let mut model = Model::default();
            let batches = 50 + rng2.below(250) as usize;
            append_random(&log, &mut model, &mut rng2, &sc, &clock, batches).await;
            // Roll once more so everything written is in closed segments but the last.
            log.close().await.unwrap();
            tx.send(model.records).unwrap();
        });
        rx.recv().unwrap()
    };
    // Child: clean, killed at a step or after a random delay.
    // Half the rounds stop the child at a swap step, half kill it after a random delay.
    let by_step = rng.below(2) == 0;
    let crash_at = if by_step {
        STEPS[rng.below(STEPS.len() as u64) as usize]
    } else {
        "none"
    };
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "cleaner::tests::crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_DIR_ENV, &dir)
        .env(CHILD_SEED_ENV, seed.to_string())
        .env("SLUICE_CLEANER_CRASH_AT", crash_at)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let mut reached = "delay".to_string();
    if by_step {
        let stdout = child.stdout.take().unwrap();
        reached = "exit".to_string();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap_or_default();
            if line.starts_with("CRASH-POINT") || line.starts_with("CHILD-DONE") {
                reached = line;
                break;
            }
        }
    } else {
        let ms = rng.below(60);
        reached = format!("{reached} {ms} ms");
        std::thread::sleep(Duration::from_millis(ms));
    }
    // Shown with --nocapture: where each round's kill landed.
    println!("crash round {seed}: hook {crash_at}, killed at {reached}");
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    // Parent: reopen, compare with the model, clean to the end, compare exactly.
    let dir2 = dir.clone();
    let config = s.config.clone();
    let cleaner_config = s.cleaner.clone();
    let delete_retention_ms = s.config.delete_retention_ms;
    run(move || async move {
        let clock = Rc::new(TestClock(Cell::new(now)));
        let log = Log::open_with_clock(dir2.clone(), config, clock)
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: reopen after kill: {e}"));
        let found = log_records(&log).await;
        let end = log.log_end_offset();
        let active_base = *log.segment_bases().last().unwrap();
        let mut full = Model {
            records: model.clone(),
            horizons: HashMap::new(),
        };
        full.clean(active_base, now, delete_retention_ms);
        // Whatever point the kill hit: only records the clean may remove are gone, every
        // record it must keep is there, unchanged.
        for (o, r) in &found {
            assert_eq!(
                model.get(o),
                Some(r),
                "seed {seed}: offset {o} not as appended"
            );
        }
        for (o, r) in &full.records {
            assert_eq!(found.get(o), Some(r), "seed {seed}: kept offset {o} lost");
        }
        assert_eq!(
            end,
            model.keys().last().map_or(0, |o| o + 1),
            "seed {seed}: log end"
        );
        check_reads(&log, &found).await;
        log.update_high_watermark(end);
        let cleaner = LogCleaner::new(cleaner_config);
        clean_fully(&cleaner, &log, active_base).await;
        assert_eq!(
            log_records(&log).await,
            full.records,
            "seed {seed}: after finishing"
        );
        log.close().await.unwrap();
        let leftovers: Vec<_> = std::fs::read_dir(&dir2)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted"))
            .collect();
        assert!(leftovers.is_empty(), "seed {seed}: {leftovers:?}");
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cleaner_survives_kill_9_at_random_points() {
    if let Some(seed) = env_u64("SLUICE_CLEANER_SEED") {
        crash_round(seed);
        return;
    }
    for seed in 0..env_u64("SLUICE_CLEANER_CRASH_ROUNDS").unwrap_or(20) {
        crash_round(seed);
    }
}

/// A read from the start of a log whose first segments the cleaner emptied (each keeps only
/// its last batch's header, no records) goes on to the first record: librdkafka fails on a
/// run of answers without a record (see `Log::read_from_segments`).
#[test]
fn read_goes_past_emptied_segments_to_the_first_record() {
    run(|| async {
        let dir = test_dir("emptied");
        let clock = Rc::new(TestClock(Cell::new(1_000_000)));
        let config = LogConfig {
            // one batch per segment
            segment_bytes: 100,
            cleanup_policy_compact: true,
            cleanup_policy_delete: false,
            ..LogConfig::default()
        };
        let log = Log::open_with_clock(dir.clone(), config, clock.clone())
            .await
            .unwrap();
        for (i, key) in ["a", "a", "a", "a", "a", "a", "b"].iter().enumerate() {
            let value = format!("value-{i}-{}", "x".repeat(20));
            let b = RecordBatchBuilder::new(clock.0.get())
                .record_at(0, Some(key.as_bytes()), Some(value.as_bytes()))
                .build();
            log.append(&b).await.unwrap();
        }
        log.update_high_watermark(log.log_end_offset());
        let cleaner = LogCleaner::new(CleanerConfig::default());
        clean_fully(&cleaner, &log, 6).await;
        // offsets 0-4 are superseded by 5: their segments hold record-less batches now
        let info = log.read(0, 1 << 20, true, None).await.expect("read");
        let counts: Vec<(i64, i32)> = HeaderWalker::new(&info.records)
            .map(|(p, h)| {
                let n = sluice_protocol::record_batch::parse_header(&info.records[p..])
                    .expect("header")
                    .records_count;
                (h.base_offset, n)
            })
            .collect();
        assert!(
            counts.iter().any(|&(o, n)| o == 5 && n == 1),
            "the read reaches offset 5's record: {counts:?}"
        );
        assert!(
            counts.iter().take_while(|&&(_, n)| n == 0).count() >= 1,
            "{counts:?}"
        );
        assert_eq!(
            log_records(&log).await.keys().copied().collect::<Vec<_>>(),
            vec![5, 6]
        );
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}
