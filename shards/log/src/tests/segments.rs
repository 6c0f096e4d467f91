//! Segment engine tests: on-disk indexes, checkpoints, time roll, timestamp
//! lookups and retention, each checked against brute-force answers.

use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;

use super::*;
use crate::batch::testing::make_batch_ts;
use crate::checkpoint::{LOG_START_OFFSET_FILE, RECOVERY_POINT_FILE};
use crate::clock::Clock;
use crate::index::{OffsetIndex, TimeIndex};
use crate::segment::{offset_index_file_name, segment_file_name, time_index_file_name};

pub(super) struct FakeClock(pub(super) Cell<i64>);

impl Clock for FakeClock {
    fn now_ms(&self) -> i64 {
        self.0.get()
    }
}

/// One append of batches given as (records, max timestamp).
pub(super) fn ts_batches(spec: &[(i32, i64)], payload: usize) -> Vec<u8> {
    spec.iter()
        .flat_map(|&(n, ts)| make_batch_ts(0, n, payload, n as u8, ts))
        .collect()
}

/// A stored batch as brute force sees it.
#[derive(Debug, Clone, Copy)]
struct BatchInfo {
    base: i64,
    last: i64,
    position: u64,
    size: u64,
    max_ts: i64,
}

/// The model's batches split at the log's segment bases, with positions.
fn model_segments(model: &Model, bases: &[i64]) -> Vec<(i64, Vec<BatchInfo>)> {
    let mut out: Vec<(i64, Vec<BatchInfo>)> = bases.iter().map(|&b| (b, Vec::new())).collect();
    for (first, last, bytes) in &model.batches {
        let i = bases.partition_point(|&b| b <= *first) - 1;
        let seg = &mut out[i].1;
        let position = seg.last().map_or(0, |b| b.position + b.size);
        seg.push(BatchInfo {
            base: *first,
            last: *last,
            position,
            size: bytes.len() as u64,
            max_ts: parse_header(bytes).unwrap().max_timestamp,
        });
    }
    out
}

/// Kafka's offset index rule, replayed batch by batch.
fn expected_offset_index(base: i64, batches: &[BatchInfo], interval: u32) -> Vec<(u32, u32)> {
    let mut since = 0u64;
    let mut entries = Vec::new();
    for b in batches {
        if since > u64::from(interval) {
            entries.push(((b.last - base) as u32, b.position as u32));
            since = 0;
        }
        since += b.size;
    }
    entries
}

fn encode_offsets(entries: &[(u32, u32)]) -> Vec<u8> {
    entries
        .iter()
        .flat_map(|&(o, p)| o.to_be_bytes().into_iter().chain(p.to_be_bytes()))
        .collect()
}

/// First batch at or after the log start whose max timestamp reaches `ts`.
fn brute_offset_for_timestamp(model: &Model, log_start: i64, ts: i64) -> Option<(i64, i64)> {
    model
        .batches
        .iter()
        .filter(|b| b.1 >= log_start)
        .map(|b| (b.0, parse_header(&b.2).unwrap().max_timestamp))
        .find(|&(_, t)| t >= ts)
        .map(|(o, t)| (o.max(log_start), t))
}

/// First batch holding the largest timestamp, among the segments from the
/// one holding the log start on.
fn brute_max_timestamp(model: &Model, from_base: i64, log_start: i64) -> Option<(i64, i64)> {
    let mut best: Option<(i64, i64)> = None;
    for b in model.batches.iter().filter(|b| b.0 >= from_base) {
        let t = parse_header(&b.2).unwrap().max_timestamp;
        let better = match best {
            None => true,
            Some((_, bt)) => t > bt,
        };
        if t >= 0 && better {
            best = Some((b.0.max(log_start), t));
        }
    }
    best
}

/// Checks every index lookup and timestamp lookup of `log` against brute force.
pub(super) async fn check_lookups(log: &Log, model: &Model, interval: u32, rng: &mut XorShift) {
    let bases = log.segment_bases();
    let log_start = log.log_start_offset();
    let live: Vec<&(i64, i64, Bytes)> = model.batches.iter().filter(|b| b.0 >= bases[0]).collect();
    let live_model = Model {
        batches: live.into_iter().cloned().collect(),
    };
    for (base, batches) in model_segments(&live_model, &bases) {
        let seg = log.segment(base).unwrap();
        let expected = expected_offset_index(base, &batches, interval);
        assert_eq!(
            seg.offset_index.borrow().encode_from(0),
            encode_offsets(&expected),
            "offset index of segment {base}"
        );
        for b in &batches {
            for offset in b.base..=b.last {
                let floor = expected
                    .iter()
                    .rev()
                    .find(|e| i64::from(e.0) + base <= offset)
                    .map_or(0, |e| u64::from(e.1));
                assert_eq!(seg.index_lookup(offset), floor, "lookup of {offset}");
            }
        }
        let seg_max = batches.iter().map(|b| b.max_ts).max().unwrap_or(-1);
        assert_eq!(seg.time_index.borrow().max_timestamp, seg_max.max(-1));
    }
    let mut probes: Vec<i64> = model
        .batches
        .iter()
        .flat_map(|b| {
            let t = parse_header(&b.2).unwrap().max_timestamp;
            [t - 1, t, t + 1]
        })
        .collect();
    probes.extend((0..20).map(|_| rng.below(60_000) as i64 - 100));
    for ts in probes {
        assert_eq!(
            log.offset_for_timestamp(ts).await.unwrap(),
            brute_offset_for_timestamp(model, log_start, ts),
            "offset_for_timestamp({ts})"
        );
    }
    let from_base = bases[bases.partition_point(|&b| b <= log_start).saturating_sub(1)];
    assert_eq!(
        log.max_timestamp_offset().await.unwrap(),
        brute_max_timestamp(model, from_base, log_start)
    );
}

/// Random timestamps: mostly rising, sometimes older.
pub(super) fn next_ts(rng: &mut XorShift, clock: &mut i64) -> i64 {
    *clock += rng.below(200) as i64;
    if rng.below(5) == 0 {
        *clock - rng.below(1000) as i64
    } else {
        *clock
    }
}

fn file_bytes(dir: &Path, name: String) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

/// In-memory indexes, index files, index lookups and timestamp lookups all
/// match brute force; a clean reopen reads the index files (no scan) and
/// gives the same answers.
#[test]
fn indexes_and_timestamp_lookups_match_brute_force() {
    run(|| async {
        let dir = test_dir("indexes");
        for seed in 1..=4u64 {
            let _ = std::fs::remove_dir_all(&dir);
            let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let config = LogConfig {
                segment_bytes: 2000 + rng.below(6000),
                index_interval_bytes: rng.below(600) as u32,
                segment_index_bytes: if seed % 2 == 0 {
                    8 * (4 + rng.below(8) as u32)
                } else {
                    crate::DEFAULT_SEGMENT_INDEX_BYTES
                },
                tail_cache_bytes: rng.below(3000) as usize,
                ..LogConfig::default()
            };
            let log = Log::open(dir.clone(), config.clone()).await.unwrap();
            let mut model = Model::default();
            let mut clock = 10_000i64;
            for _ in 0..150 {
                let n = 1 + rng.below(3) as usize;
                let spec: Vec<(i32, i64)> = (0..n)
                    .map(|_| (1 + rng.below(4) as i32, next_ts(&mut rng, &mut clock)))
                    .collect();
                append_checked(
                    &log,
                    &mut model,
                    &ts_batches(&spec, rng.below(300) as usize),
                )
                .await;
            }
            assert!(log.segment_count() > 2);
            check_lookups(&log, &model, config.index_interval_bytes, &mut rng).await;
            let max_offset_entries = config.max_offset_index_entries();
            let max_time_entries = config.max_time_index_entries();
            let size_bytes = log.size_bytes();
            log.close().await.unwrap();
            drop(log);

            // The files hold exactly the in-memory entries.
            let bases: Vec<i64> = {
                let mut v: Vec<i64> = std::fs::read_dir(&dir)
                    .unwrap()
                    .filter_map(|e| {
                        crate::segment::parse_segment_file_name(
                            &e.unwrap().file_name().to_string_lossy(),
                        )
                    })
                    .collect();
                v.sort_unstable();
                v
            };
            // The log's size (DescribeLogDirs' PartitionSize) is its segment files' bytes.
            let on_disk_bytes: u64 = bases
                .iter()
                .map(|base| file_bytes(&dir, segment_file_name(*base)).len() as u64)
                .sum();
            assert_eq!(size_bytes, on_disk_bytes);
            for (base, batches) in model_segments(&model, &bases) {
                let expected = expected_offset_index(base, &batches, config.index_interval_bytes);
                let on_disk = file_bytes(&dir, offset_index_file_name(base));
                assert_eq!(on_disk, encode_offsets(&expected));
                assert!(
                    expected.len() <= max_offset_entries,
                    "index over segment.index.bytes"
                );
                let t = TimeIndex::decode(&file_bytes(&dir, time_index_file_name(base)), u64::MAX)
                    .unwrap();
                // Closed and active segments end with their largest timestamp.
                let seg_max = batches.iter().map(|b| b.max_ts).max().unwrap();
                assert_eq!(t.max_timestamp, seg_max);
                assert!(t.len() <= max_time_entries + 1);
            }

            let log = Log::open(dir.clone(), config.clone()).await.unwrap();
            let stats = log.load_stats();
            assert!(stats.clean);
            assert_eq!(stats.crc_scanned_segments, 0, "clean reopen scans nothing");
            assert_eq!(stats.loaded_indexes, bases.len());
            assert_eq!(log.log_end_offset(), model.end());
            check_lookups(&log, &model, config.index_interval_bytes, &mut rng).await;
            // Appends carry on with the same index rule after a reopen.
            for _ in 0..20 {
                let spec = [(1 + rng.below(4) as i32, next_ts(&mut rng, &mut clock))];
                append_checked(
                    &log,
                    &mut model,
                    &ts_batches(&spec, rng.below(300) as usize),
                )
                .await;
            }
            check_lookups(&log, &model, config.index_interval_bytes, &mut rng).await;
            assert_eq!(read_all(&log, 0).await, model.all());
            log.delete().await.unwrap();
        }
    });
}

/// Missing and corrupt index files are detected and rebuilt, byte for byte.
#[test]
fn missing_or_corrupt_index_files_are_rebuilt() {
    run(|| async {
        let dir = test_dir("rebuild");
        let config = small_config();
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let mut model = Model::default();
        let mut ts = 5_000;
        while log.segment_count() < 8 {
            ts += 7;
            append_checked(&log, &mut model, &ts_batches(&[(2, ts), (1, ts + 3)], 60)).await;
        }
        log.close().await.unwrap();
        let bases = log.segment_bases();
        drop(log);
        let saved: Vec<(Vec<u8>, Vec<u8>)> = bases
            .iter()
            .map(|&b| {
                (
                    file_bytes(&dir, offset_index_file_name(b)),
                    file_bytes(&dir, time_index_file_name(b)),
                )
            })
            .collect();
        assert!(saved[..6]
            .iter()
            .all(|(o, t)| o.len() >= 16 && t.len() >= 24));
        let index_path = |i: usize| dir.join(offset_index_file_name(bases[i]));
        // 0: missing .index; 1: partial entry; 2: entries not increasing;
        // 3: position beyond the .log; 4: missing .timeindex; 5: time index
        // entries not increasing.
        std::fs::remove_file(index_path(0)).unwrap();
        let mut partial = saved[1].0.clone();
        partial.extend([1, 2, 3]);
        std::fs::write(index_path(1), partial).unwrap();
        let mut swapped = saved[2].0.clone();
        swapped[8..16].copy_from_slice(&saved[2].0[..8]);
        std::fs::write(index_path(2), swapped).unwrap();
        let mut beyond = saved[3].0.clone();
        let n = beyond.len();
        beyond[n - 4..].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
        std::fs::write(index_path(3), beyond).unwrap();
        std::fs::remove_file(dir.join(time_index_file_name(bases[4]))).unwrap();
        let mut time = saved[5].1.clone();
        assert!(time.len() >= 24);
        time[12..20].copy_from_slice(&0i64.to_be_bytes());
        std::fs::write(dir.join(time_index_file_name(bases[5])), time).unwrap();

        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let stats = log.load_stats();
        assert!(
            stats.clean,
            "damaged indexes do not make the shutdown unclean"
        );
        assert_eq!(stats.rebuilt_indexes, 6);
        assert_eq!(stats.crc_scanned_segments, 6);
        assert_eq!(stats.loaded_indexes, bases.len() - 6);
        assert_eq!(read_all(&log, 0).await, model.all());
        let mut rng = XorShift(7);
        check_lookups(&log, &model, config.index_interval_bytes, &mut rng).await;
        log.close().await.unwrap();
        for (i, &b) in bases.iter().enumerate() {
            assert_eq!(
                file_bytes(&dir, offset_index_file_name(b)),
                saved[i].0,
                "{i}"
            );
            assert_eq!(file_bytes(&dir, time_index_file_name(b)), saved[i].1, "{i}");
        }
        // Index files of a segment that no longer exists are removed.
        std::fs::write(dir.join(offset_index_file_name(999_999)), [0u8; 8]).unwrap();
        let log = Log::open(dir.clone(), config).await.unwrap();
        assert!(!dir.join(offset_index_file_name(999_999)).exists());
        assert_eq!(log.load_stats().crc_scanned_segments, 0);
        log.delete().await.unwrap();
    });
}

fn read_checkpoint_file(dir: &Path, name: &str) -> Option<i64> {
    let text = std::fs::read_to_string(dir.join(name)).ok()?;
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("0"));
    lines.next()?.parse().ok()
}

/// After a crash only the segments from the one holding the recovery point
/// on are scanned; the recovery point checkpoint follows flushes and rolls.
#[test]
fn recovery_point_checkpoint_limits_the_scan() {
    run(|| async {
        let dir = test_dir("recovery-point");
        let config = small_config();
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let mut model = Model::default();
        while log.segment_count() < 6 {
            append_checked(&log, &mut model, &batches(&[2, 1], 80)).await;
        }
        log.flush().await.unwrap();
        let flushed = model.end();
        assert_eq!(log.recovery_point(), flushed);
        assert_eq!(
            read_checkpoint_file(&dir, RECOVERY_POINT_FILE),
            Some(flushed)
        );
        // A few more appends, rolling once more: the roll flushes the
        // previous segments in the background.
        let segments_before = log.segment_count();
        while log.segment_count() < segments_before + 1 {
            append_checked(&log, &mut model, &batches(&[1], 80)).await;
        }
        let new_base = *log.segment_bases().last().unwrap();
        for _ in 0..50 {
            if read_checkpoint_file(&dir, RECOVERY_POINT_FILE) == Some(new_base) {
                break;
            }
            glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(
            log.recovery_point(),
            new_base,
            "roll flushes up to the new segment"
        );
        assert_eq!(
            read_checkpoint_file(&dir, RECOVERY_POINT_FILE),
            Some(new_base)
        );
        append_checked(&log, &mut model, &batches(&[3], 10)).await;
        let bases = log.segment_bases();
        drop(log); // crash

        // Damage below the recovery point is not looked at (not scanned)...
        let first = dir.join(segment_file_name(0));
        let mut data = std::fs::read(&first).unwrap();
        data[100] ^= 0x55;
        std::fs::write(&first, data).unwrap();
        // ...while a torn tail after it is truncated.
        let last = dir.join(segment_file_name(*bases.last().unwrap()));
        let len = std::fs::metadata(&last).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&last)
            .unwrap()
            .set_len(len - 5)
            .unwrap();
        model.batches.pop();

        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let stats = log.load_stats();
        assert!(!stats.clean);
        assert_eq!(
            stats.crc_scanned_segments, 1,
            "only the segment of the recovery point"
        );
        assert_eq!(stats.loaded_indexes, bases.len() - 1);
        assert_eq!(log.log_end_offset(), model.end());
        assert_eq!(log.recovery_point(), new_base);
        drop(log);

        // Without the checkpoint everything is scanned (and the damage found).
        std::fs::remove_file(dir.join(RECOVERY_POINT_FILE)).unwrap();
        let log = Log::open(dir.clone(), config).await.unwrap();
        assert_eq!(log.load_stats().crc_scanned_segments, 1);
        assert_eq!(
            log.log_end_offset(),
            0,
            "corrupt first batch truncates everything"
        );
        log.delete().await.unwrap();
    });
}

/// Kafka's time roll: on the batches' timestamps when they have them, on the
/// clock when they do not.
#[test]
fn segments_roll_by_time() {
    run(|| async {
        let clock = Rc::new(FakeClock(Cell::new(1_000_000)));
        let config = LogConfig {
            segment_ms: 1000,
            ..small_config()
        };
        let dir = test_dir("time-roll");
        let log = Log::open_with_clock(dir.clone(), config.clone(), clock.clone())
            .await
            .unwrap();
        let append = |ts: i64| {
            let log = log.clone();
            async move {
                log.append(&ts_batches(&[(1, ts)], 10)).await.unwrap();
                log.segment_count()
            }
        };
        assert_eq!(append(10_000).await, 1);
        assert_eq!(append(10_500).await, 1);
        assert_eq!(append(11_000).await, 1, "exactly segment.ms is not past it");
        assert_eq!(append(500).await, 1, "older timestamps never roll");
        assert_eq!(append(11_001).await, 2);
        assert!(log.is_segment_base(4));
        assert_eq!(append(12_000).await, 2);
        assert_eq!(append(12_002).await, 3);
        // The clock is not consulted while batches carry timestamps.
        clock.0.set(i64::MAX / 2);
        assert_eq!(append(12_003).await, 3);
        log.delete().await.unwrap();

        // Without timestamps: segment age on the clock.
        let dir = test_dir("time-roll-clock");
        clock.0.set(0);
        let log = Log::open_with_clock(dir, config, clock.clone())
            .await
            .unwrap();
        log.append(&ts_batches(&[(1, -1)], 10)).await.unwrap();
        clock.0.set(1000);
        log.append(&ts_batches(&[(1, -1)], 10)).await.unwrap();
        assert_eq!(log.segment_count(), 1);
        clock.0.set(1001);
        log.append(&ts_batches(&[(1, -1)], 10)).await.unwrap();
        assert_eq!(log.segment_count(), 2);
        assert_eq!(log.max_timestamp_offset().await.unwrap(), None);
        log.delete().await.unwrap();
    });
}

/// Size roll and index-size roll (`segment.index.bytes`).
#[test]
fn segments_roll_by_size_and_index_size() {
    run(|| async {
        // 101-byte batches, 1000-byte segments: 9 batches each.
        let config = LogConfig {
            segment_bytes: 1000,
            ..small_config()
        };
        let log = Log::open(test_dir("size-roll"), config).await.unwrap();
        for _ in 0..30 {
            log.append(&batches(&[1], 40)).await.unwrap();
        }
        assert_eq!(log.segment_bases(), vec![0, 9, 18, 27]);
        log.delete().await.unwrap();

        // An entry per batch after the first; 3 offset entries (24 bytes)
        // and 2 time entries: rising timestamps fill the time index first.
        let config = LogConfig {
            index_interval_bytes: 0,
            segment_index_bytes: 24,
            ..small_config()
        };
        let log = Log::open(test_dir("index-roll"), config.clone())
            .await
            .unwrap();
        for i in 0..9 {
            log.append(&ts_batches(&[(1, 100 + i)], 40)).await.unwrap();
        }
        assert_eq!(log.segment_bases(), vec![0, 3, 6]);
        log.delete().await.unwrap();
        // Constant timestamps: one time entry, the offset index fills.
        let log = Log::open(test_dir("index-roll-2"), config).await.unwrap();
        for _ in 0..9 {
            log.append(&ts_batches(&[(1, 100)], 40)).await.unwrap();
        }
        assert_eq!(log.segment_bases(), vec![0, 4, 8]);
        log.delete().await.unwrap();
    });
}

/// Brute-force retention: the largest k such that each of the first k
/// closed segments is past retention.ms, or dropping it and those before it
/// leaves at least retention.bytes, or it is wholly below the log start.
fn brute_retention(
    segments: &[(i64, Vec<BatchInfo>)],
    total: u64,
    log_start: i64,
    config: &LogConfig,
    now: i64,
) -> usize {
    let closed = segments.len() - 1;
    let qualifies = |i: usize| {
        let largest = segments[i].1.iter().map(|b| b.max_ts).max().unwrap();
        let dropped: u64 = segments[..=i]
            .iter()
            .flat_map(|s| s.1.iter().map(|b| b.size))
            .sum();
        (config.retention_ms >= 0 && now - largest > config.retention_ms)
            || (config.retention_bytes >= 0
                && total as i64 - dropped as i64 >= config.retention_bytes)
            || segments[i + 1].0 <= log_start
    };
    (0..=closed)
        .filter(|&k| (0..k).all(qualifies))
        .max()
        .unwrap_or(0)
}

/// Retention and DeleteRecords against brute force, across restarts: only
/// whole closed segments go, oldest first, at most `max_segments` a round;
/// the log start offset moves, survives restarts, and reads below it fail.
#[test]
fn retention_and_delete_records_match_brute_force() {
    run(|| async {
        let dir = test_dir("retention");
        for seed in 1..=4u64 {
            let _ = std::fs::remove_dir_all(&dir);
            let mut rng = XorShift(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
            let config = LogConfig {
                segment_bytes: 800 + rng.below(2000),
                retention_ms: if seed == 1 {
                    -1
                } else {
                    rng.below(3000) as i64
                },
                retention_bytes: if seed == 2 {
                    -1
                } else {
                    rng.below(20_000) as i64
                },
                ..small_config()
            };
            let mut log = Log::open(dir.clone(), config.clone()).await.unwrap();
            let mut model = Model::default();
            let mut clock = 100_000i64;
            let mut deleted_total = 0;
            for step in 0..300 {
                match rng.below(12) {
                    0..=6 => {
                        let spec = [(1 + rng.below(4) as i32, next_ts(&mut rng, &mut clock))];
                        append_checked(
                            &log,
                            &mut model,
                            &ts_batches(&spec, rng.below(200) as usize),
                        )
                        .await;
                    }
                    7..=8 => {
                        let now = clock + rng.below(4000) as i64 - 1000;
                        let max_segments = 1 + rng.below(3) as usize;
                        let bases = log.segment_bases();
                        let segs = model_segments(&live(&model, bases[0]), &bases);
                        let total = segs.iter().flat_map(|s| s.1.iter()).map(|b| b.size).sum();
                        let expected =
                            brute_retention(&segs, total, log.log_start_offset(), &config, now)
                                .min(max_segments);
                        let lso_before = log.log_start_offset();
                        log.update_high_watermark(log.readable_end_offset());
                        let n = log.run_retention(now, max_segments).await.unwrap();
                        assert_eq!(n, expected, "seed {seed} step {step}");
                        deleted_total += n;
                        assert_eq!(log.segment_bases(), bases[n..].to_vec());
                        assert_eq!(log.log_start_offset(), lso_before.max(bases[n]));
                    }
                    9 => {
                        let end = log.readable_end_offset();
                        let to = rng.below(end as u64 + 1) as i64;
                        let before = log.log_start_offset();
                        let bases = log.segment_bases();
                        let lso = log.delete_records_before(to).await.unwrap();
                        assert_eq!(lso, before.max(to));
                        // Closed segments wholly below the new start are
                        // gone; the active one always stays.
                        let gone = (0..bases.len() - 1)
                            .take_while(|&i| bases[i + 1] <= lso)
                            .count();
                        assert_eq!(log.segment_bases(), bases[gone..].to_vec());
                        assert_eq!(log.log_start_offset(), lso);
                    }
                    10 if step % 2 == 0 => {
                        let lso = log.log_start_offset();
                        if rng.below(2) == 0 {
                            log.close().await.unwrap();
                        }
                        drop(log);
                        log = Log::open(dir.clone(), config.clone()).await.unwrap();
                        assert_eq!(log.log_start_offset(), lso, "log start survives restart");
                        assert_eq!(log.log_end_offset(), model.end());
                    }
                    _ => {}
                }
                // Reads below the log start fail; from it they match.
                let lso = log.log_start_offset();
                if lso > 0 {
                    assert!(matches!(
                        log.read(lso - 1, 1000, true, None).await,
                        Err(LogError::OffsetOutOfRange { .. })
                    ));
                }
                if step % 25 == 0 {
                    let expected: Vec<u8> = model
                        .batches
                        .iter()
                        .filter(|b| b.1 >= lso)
                        .flat_map(|b| b.2.iter().copied())
                        .collect();
                    assert_eq!(read_all(&log, lso).await, expected);
                    check_lookups(
                        &log,
                        &live(&model, log.segment_bases()[0]),
                        config.index_interval_bytes,
                        &mut rng,
                    )
                    .await;
                }
            }
            assert!(
                deleted_total > 0 || seed == 1,
                "seed {seed} deleted nothing"
            );
            assert_eq!(
                read_checkpoint_file(&dir, LOG_START_OFFSET_FILE),
                Some(log.log_start_offset())
            );
            log.delete().await.unwrap();
        }
    });
}

/// The model's batches from `from` on (what the segments still hold).
fn live(model: &Model, from: i64) -> Model {
    Model {
        batches: model
            .batches
            .iter()
            .filter(|b| b.0 >= from)
            .cloned()
            .collect(),
    }
}

/// The tail walk of a clean open and the recovery scan both see a torn last
/// batch when index entries point into it.
#[test]
fn torn_tail_with_dense_index_is_truncated() {
    run(|| async {
        let dir = test_dir("torn-dense");
        for close in [false, true] {
            for cut in (0..101usize).step_by(3) {
                let _ = std::fs::remove_dir_all(&dir);
                let config = LogConfig {
                    index_interval_bytes: 0,
                    ..LogConfig::default()
                };
                let log = Log::open(dir.clone(), config.clone()).await.unwrap();
                let mut model = Model::default();
                append_checked(&log, &mut model, &batches(&[2, 1], 30)).await;
                let kept = model.all();
                append_checked(&log, &mut model, &batches(&[3], 40)).await;
                if close {
                    log.close().await.unwrap();
                }
                drop(log);
                let path = dir.join(segment_file_name(0));
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len((kept.len() + cut) as u64).unwrap();
                let log = Log::open(dir.clone(), config).await.unwrap();
                assert_eq!(log.log_end_offset(), 3, "close {close} cut {cut}");
                assert_eq!(read_all(&log, 0).await, kept);
                let index = OffsetIndex::decode(
                    &file_bytes(&dir, offset_index_file_name(0)),
                    kept.len() as u64,
                    3,
                )
                .unwrap();
                assert_eq!(index.len(), 1, "the entry of the cut batch is gone");
                log.append(&batches(&[1], 5)).await.unwrap();
                log.close().await.unwrap();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Clean reopen time against log size. Builds logs of the sizes in
/// `SLUICE_REOPEN_GIB` (default "1,4,10" GiB, 1 GiB segments, ~16 KiB
/// batches with rising timestamps), closes each and times `Log::open`.
/// Prints the times; asserts nothing about them.
/// `cargo test -p sluice-log --release -- --ignored --nocapture reopen_time`
#[test]
#[ignore]
fn reopen_time() {
    run(|| async {
        let sizes: Vec<u64> = std::env::var("SLUICE_REOPEN_GIB")
            .unwrap_or_else(|_| "1,4,10".into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        let dir = test_dir("reopen-time");
        let config = LogConfig {
            tail_cache_bytes: 0,
            ..LogConfig::default()
        };
        let _ = std::fs::remove_dir_all(&dir);
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let mut ts = 1_700_000_000_000i64;
        let mut built = 0u64;
        let mut log = Some(log);
        for gib in sizes {
            let target = gib << 30;
            let started = std::time::Instant::now();
            let l = log.take().unwrap();
            while built < target {
                // 64 batches of ~16 KiB per append, 1 MiB.
                let spec: Vec<(i32, i64)> = (0..64)
                    .map(|_| {
                        ts += 1;
                        (10, ts)
                    })
                    .collect();
                let input = ts_batches(&spec, 16 * 1024 - 61);
                built += input.len() as u64;
                l.append(&input).await.unwrap();
            }
            l.close().await.unwrap();
            let segments = l.segment_count();
            let end = l.log_end_offset();
            drop(l);
            let build_secs = started.elapsed().as_secs_f64();
            let mut times = Vec::new();
            let mut reopened = None;
            for _ in 0..3 {
                let started = std::time::Instant::now();
                let l = Log::open(dir.clone(), config.clone()).await.unwrap();
                times.push(started.elapsed().as_secs_f64() * 1e3);
                assert!(l.load_stats().clean && l.load_stats().crc_scanned_segments == 0);
                assert_eq!(l.log_end_offset(), end);
                l.close().await.unwrap();
                reopened = Some(l);
            }
            let l = reopened.unwrap();
            let index_bytes: u64 = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.ends_with("index")
                })
                .map(|e| e.metadata().unwrap().len())
                .sum();
            println!(
                "log of {:.2} GiB, {segments} segments, {end} offsets, index files {:.1} MiB \
                 (built+closed in {build_secs:.1}s): clean reopen {:.1} / {:.1} / {:.1} ms",
                built as f64 / (1u64 << 30) as f64,
                index_bytes as f64 / (1 << 20) as f64,
                times[0],
                times[1],
                times[2]
            );
            drop(l);
            log = Some(Log::open(dir.clone(), config.clone()).await.unwrap());
        }
        if let Some(l) = log {
            l.delete().await.unwrap();
        }
    });
}

/// A crash that tears the first batch of a fresh segment leaves it empty:
/// the log still flushes, closes and takes appends into it.
#[test]
fn empty_active_segment_after_recovery() {
    run(|| async {
        let dir = test_dir("empty-active");
        let config = LogConfig {
            segment_bytes: 300,
            ..small_config()
        };
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let mut model = Model::default();
        append_checked(&log, &mut model, &batches(&[1], 200)).await;
        append_checked(&log, &mut model, &batches(&[1], 200)).await;
        assert_eq!(log.segment_bases(), vec![0, 1]);
        drop(log);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join(segment_file_name(1)))
            .unwrap();
        f.set_len(10).unwrap();
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        assert_eq!((log.log_end_offset(), log.segment_count()), (1, 2));
        log.flush().await.unwrap();
        let info = log.append(&batches(&[2], 10)).await.unwrap();
        assert_eq!(info.first_offset, 1);
        log.close().await.unwrap();
        let log = Log::open(dir.clone(), config).await.unwrap();
        assert_eq!(log.log_end_offset(), 3);
        assert!(log.load_stats().clean);
        log.delete().await.unwrap();
    });
}

/// `update_config` at run time: the next append rolls at the new `segment_bytes`, the next
/// retention run applies the new `retention_ms`, a lower `max_message_bytes` rejects at once;
/// existing segments stay as they are and the tail cache keeps its limit.
#[test]
fn config_updates_apply_to_the_next_operation() {
    run(|| async {
        let log = Log::open(test_dir("update-config"), small_config())
            .await
            .unwrap();
        log.set_tail_cache_bytes(2048);
        // 101-byte batches: 5 in the 4096-byte active segment.
        let batch = ts_batches(&[(1, 1_000)], 40);
        assert_eq!(batch.len(), 101);
        for _ in 0..5 {
            log.append(&batch).await.unwrap();
        }
        assert_eq!(log.segment_bases(), vec![0]);

        log.update_config(LogConfig {
            segment_bytes: 1000,
            ..small_config()
        });
        assert_eq!(log.config().segment_bytes, 1000);
        assert_eq!(
            log.config().tail_cache_bytes,
            0,
            "tail cache setting untouched"
        );
        assert_eq!(log.tail_cache_limit(), 2048);
        for _ in 0..25 {
            log.append(&batch).await.unwrap();
        }
        // The active segment (5 batches) fills up to 9, then every 9.
        assert_eq!(log.segment_bases(), vec![0, 9, 18, 27]);

        // Default retention (7 days): nothing is old enough yet.
        let now = 1_000 + 10_000;
        assert_eq!(log.run_retention(now, usize::MAX).await.unwrap(), 0);
        log.update_config(LogConfig {
            segment_bytes: 1000,
            retention_ms: 5_000,
            ..small_config()
        });
        // Every closed segment is past 5 s, but none is deleted past the high watermark: only
        // what is committed goes (Kafka's rule). A leader alone in its ISR commits everything.
        log.update_high_watermark(10);
        assert_eq!(log.run_retention(now, usize::MAX).await.unwrap(), 1);
        log.update_high_watermark(log.readable_end_offset());
        // The active one stays.
        assert_eq!(log.run_retention(now, usize::MAX).await.unwrap(), 2);
        assert_eq!(log.segment_bases(), vec![27]);
        assert_eq!(log.log_start_offset(), 27);

        log.update_config(LogConfig {
            max_message_bytes: 100,
            ..small_config()
        });
        assert!(matches!(
            log.append(&batch).await,
            Err(LogError::RecordBatchTooLarge {
                size: 101,
                max: 100
            })
        ));
        log.delete().await.unwrap();
    });
}

/// `message.timestamp.type=LogAppendTime`: every batch of an append carries the broker's time
/// (maxTimestamp and the timestamp-type attribute, with a valid CRC), and the answer, the time
/// index and timestamp lookups use it; the producer's timestamps are gone.
#[test]
fn log_append_time_stamps_every_batch() {
    run(|| async {
        let clock = Rc::new(FakeClock(Cell::new(5_000_000)));
        let config = LogConfig {
            timestamp_type: crate::TimestampType::LogAppendTime,
            ..small_config()
        };
        let log = Log::open_with_clock(test_dir("log-append-time"), config, clock.clone())
            .await
            .unwrap();
        let info = log
            .append(&ts_batches(&[(3, 100), (2, 9_999_999)], 40))
            .await
            .unwrap();
        assert_eq!(
            (info.log_append_time_ms, info.max_timestamp),
            (5_000_000, 5_000_000)
        );
        clock.0.set(6_000_000);
        let later = log.append(&ts_batches(&[(1, 1)], 40)).await.unwrap();
        assert_eq!(later.log_append_time_ms, 6_000_000);

        let read = log.read(0, 1 << 20, false, None).await.unwrap().records;
        let stored: Vec<(i64, i64)> = HeaderWalker::new(&read)
            .map(|(pos, h)| {
                let batch = &read[pos..pos + h.size];
                check_crc(batch).expect("the stamped batch's CRC is recomputed");
                let full = sluice_protocol::record_batch::parse_header(batch).unwrap();
                assert!(full.timestamp_type_log_append());
                (h.base_offset, h.max_timestamp)
            })
            .collect();
        assert_eq!(stored, vec![(0, 5_000_000), (3, 5_000_000), (5, 6_000_000)]);
        assert_eq!(
            log.offset_for_timestamp(100).await.unwrap(),
            Some((0, 5_000_000))
        );
        assert_eq!(
            log.offset_for_timestamp(5_000_001).await.unwrap(),
            Some((5, 6_000_000))
        );
        log.delete().await.unwrap();
    });
}

/// CreateTime with `message.timestamp.before.max.ms` / `after.max.ms`: a batch whose first or
/// largest timestamp lies outside [now - before, now + after] is refused without taking an
/// offset; one without timestamps (-1) passes; LogAppendTime ignores the bounds.
#[test]
fn create_time_bounds_refuse_batches_out_of_range() {
    run(|| async {
        let now = 10_000_000;
        let clock = Rc::new(FakeClock(Cell::new(now)));
        let config = LogConfig {
            timestamp_before_max_ms: 1_000_000,
            timestamp_after_max_ms: 60_000,
            ..small_config()
        };
        let log = Log::open_with_clock(test_dir("timestamp-bounds"), config.clone(), clock)
            .await
            .unwrap();
        // One record: its timestamp is the batch's first and largest.
        let append = |ts: i64| {
            let log = log.clone();
            async move {
                let batch = crate::batch::testing::make_batch_times(0, 1, 10, 7, ts, ts);
                log.append(&batch).await.map(|i| i.first_offset)
            }
        };
        assert_eq!(
            append(now + 60_000).await.unwrap(),
            0,
            "the upper bound itself"
        );
        assert!(matches!(
            append(now + 60_001).await,
            Err(LogError::InvalidTimestamp { timestamp, low: 9_000_000, high: 10_060_000 })
                if timestamp == now + 60_001
        ));
        assert_eq!(
            append(now - 1_000_000).await.unwrap(),
            1,
            "the lower bound itself"
        );
        assert!(matches!(
            append(now - 1_000_001).await,
            Err(LogError::InvalidTimestamp { .. })
        ));
        // A batch's first timestamp counts too (here far older than its largest).
        assert!(matches!(
            log.append(&ts_batches(&[(2, now)], 10)).await,
            Err(LogError::InvalidTimestamp {
                timestamp: 1_000,
                ..
            })
        ));
        assert_eq!(
            append(-1).await.unwrap(),
            2,
            "no timestamp, nothing to check"
        );
        assert_eq!(log.log_end_offset(), 3, "refused batches took no offsets");

        log.update_config(LogConfig {
            timestamp_type: crate::TimestampType::LogAppendTime,
            ..config
        });
        assert_eq!(append(now + 999_999_999).await.unwrap(), 3);
        log.delete().await.unwrap();
    });
}

/// Appends write index entries to the files a group at a time, not one `pwrite` per append:
/// small appends leave the files behind the indexes in memory; a flush writes every pending
/// entry; after a crash the active segment's indexes are rebuilt by the scan, and a clean
/// reopen reads files equal to the indexes in memory.
#[test]
fn index_entries_reach_their_files_in_groups_and_all_by_a_flush() {
    run(|| async {
        let dir = test_dir("index-groups");
        let config = LogConfig {
            segment_bytes: 1 << 20,
            index_interval_bytes: 1,
            tail_cache_bytes: 0,
            ..LogConfig::default()
        };
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        let mut model = Model::default();
        let on_disk = |base: i64| file_bytes(&dir, offset_index_file_name(base)).len() / 8;
        // One entry per batch (interval of a byte): a few appends stay in memory only.
        for _ in 0..5 {
            append_checked(&log, &mut model, &make_batch(0, 1, 10, 1)).await;
        }
        let base = log.segment_bases()[0];
        let in_memory = || log.segment(base).unwrap().offset_index.borrow().len();
        assert!(in_memory() >= 4, "{} entries", in_memory());
        assert_eq!(on_disk(base), 0, "a few entries are not written one by one");
        // Enough appends for a group: the file follows within a group's size.
        for _ in 0..200 {
            append_checked(&log, &mut model, &make_batch(0, 1, 10, 1)).await;
        }
        assert!(on_disk(base) > 0 && in_memory() - on_disk(base) < 64 * 2);
        log.flush().await.unwrap();
        assert_eq!(
            on_disk(base),
            in_memory(),
            "a flush writes every pending entry"
        );
        let entries = in_memory();
        // More appends, then a crash: the scan rebuilds what the files missed.
        for _ in 0..7 {
            append_checked(&log, &mut model, &make_batch(0, 1, 10, 1)).await;
        }
        drop(log);
        let log = Log::open(dir.clone(), config.clone()).await.unwrap();
        assert_eq!(read_all(&log, 0).await, model.all());
        let rebuilt = log.segment(base).unwrap().offset_index.borrow().len();
        assert_eq!(
            rebuilt,
            entries + 7,
            "one entry per batch, rebuilt by the scan"
        );
        let mut rng = XorShift(7);
        check_lookups(&log, &model, config.index_interval_bytes, &mut rng).await;
        for _ in 0..3 {
            append_checked(&log, &mut model, &make_batch(0, 1, 10, 1)).await;
        }
        log.close().await.unwrap();
        assert_eq!(
            on_disk(base),
            rebuilt + 3,
            "a clean close leaves whole files"
        );
        drop(log);
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Waits (at most 10 s) until the file `probe` has open is empty: a deleted segment whose
/// blocks the shard's file worker freed (`page_cache::release_when_unused`).
async fn freed(probe: &std::fs::File) -> bool {
    for _ in 0..1000 {
        if probe.metadata().unwrap().len() == 0 {
            return true;
        }
        glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

/// Segments deleted by DeleteRecords (retention's path) and by deleting the log have their
/// blocks freed on the file worker, not in the shard's last close: the file, still open
/// elsewhere, is truncated to nothing once the log lets it go.
#[test]
fn deleted_segments_are_freed_by_the_file_worker() {
    run(|| async {
        let dir = test_dir("freed-by-worker");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        for _ in 0..24 {
            log.append_as_leader(&batches(&[10], 1000), 1)
                .await
                .unwrap();
        }
        let bases = log.segment_bases();
        assert!(bases.len() >= 4, "segments {bases:?}");
        let open = |base: i64| std::fs::File::open(dir.join(segment_file_name(base))).unwrap();
        let (first, last) = (open(bases[0]), open(bases[bases.len() - 1]));
        assert!(first.metadata().unwrap().len() > 0);
        log.update_high_watermark(log.log_end_offset());
        log.delete_records_before(bases[2]).await.unwrap();
        assert!(!dir.join(segment_file_name(bases[0])).exists());
        assert!(freed(&first).await, "the first segment's blocks were freed");
        assert!(last.metadata().unwrap().len() > 0, "the live ones are kept");
        log.delete().await.unwrap();
        drop(log);
        assert!(freed(&last).await, "the deleted log's blocks were freed");
    });
}
