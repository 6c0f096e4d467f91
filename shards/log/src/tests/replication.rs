//! Replication support against real files: leader and follower appends, the epoch cache
//! and its checkpoint, truncation (mid-segment, across segments, fully), the high
//! watermark, and reopening after each (cleanly and after a crash), checked against
//! brute-force models.

use std::path::Path;

use bytes::BytesMut;

use super::segments::{check_lookups, next_ts, ts_batches};
use super::*;
use crate::batch::set_partition_leader_epoch;
use crate::leader_epoch::{EpochEntry, LEADER_EPOCH_CHECKPOINT_FILE};
use crate::segment::{offset_index_file_name, segment_file_name, time_index_file_name};

/// The batches of `input` as a leader stores them: offsets from `first`, stamped `epoch`.
fn stamped(input: &[u8], first: i64, epoch: i32) -> Vec<u8> {
    let mut out = input.to_vec();
    let mut offset = first;
    let mut pos = 0;
    while pos < out.len() {
        let h = parse_header(&out[pos..]).unwrap();
        crate::batch::set_base_offset(&mut out[pos..], offset);
        set_partition_leader_epoch(&mut out[pos..], epoch);
        offset += h.offset_count();
        pos += h.size;
    }
    out
}

fn epoch_of(batch: &[u8]) -> i32 {
    parse_header(batch).unwrap().partition_leader_epoch
}

/// A leader append checked against the model.
async fn leader_append(log: &Log, model: &mut Model, input: &[u8], epoch: i32) {
    let first = log.log_end_offset();
    let info = log.append_as_leader(input, epoch).await.unwrap();
    assert_eq!(info.first_offset, first);
    model.append(first, &stamped(input, first, epoch));
    assert_eq!(info.last_offset, model.end() - 1);
}

/// The epoch cache a log holding `model` must have: each epoch's first batch, for epochs
/// above every earlier one (leaders only ever raise it).
fn expected_epochs(model: &Model) -> Vec<EpochEntry> {
    let mut out: Vec<EpochEntry> = Vec::new();
    for (base, _, bytes) in &model.batches {
        let epoch = epoch_of(bytes);
        // `None < Some(_)`: the first epoch is always new.
        if epoch >= 0 && out.last().map(|e| e.epoch) < Some(epoch) {
            out.push(EpochEntry {
                epoch,
                start_offset: *base,
            });
        }
    }
    out
}

/// Keeps the batches wholly below `offset` (what `truncate_to(offset)` keeps).
fn model_truncate(model: &mut Model, offset: i64) {
    model.batches.retain(|b| b.1 < offset);
}

fn checkpoint_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap()
}

/// Everything a log holding `model` must show: its data, ends, epochs (in memory and in
/// the checkpoint), index files equal to the indexes in memory once flushed (appends write
/// them a few dozen entries at a time), and index and timestamp lookups against brute force.
async fn check_log(log: &Log, model: &Model, interval: u32, rng: &mut XorShift) {
    let dir = log.dir().to_path_buf();
    let end = model.end().max(log.segment_bases()[0]);
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(log.readable_end_offset(), end);
    assert!(log.recovery_point() <= end);
    assert!(log.high_watermark() <= end);
    assert_eq!(read_all(log, log.log_start_offset()).await, model.all());
    let epochs = expected_epochs(model);
    assert_eq!(log.epoch_cache().entries(), epochs);
    let file = crate::LeaderEpochCheckpointFile::new(&dir)
        .read()
        .await
        .unwrap();
    assert_eq!(file.entries(), epochs, "leader-epoch-checkpoint");
    assert_eq!(log.latest_epoch(), epochs.last().map(|e| e.epoch));
    log.flush().await.unwrap();
    for base in log.segment_bases() {
        let seg = log.segment(base).unwrap();
        let log_len = std::fs::metadata(dir.join(segment_file_name(base)))
            .unwrap()
            .len();
        assert_eq!(log_len, seg.size.get(), "size of segment {base}");
        assert_eq!(
            std::fs::read(dir.join(offset_index_file_name(base))).unwrap(),
            seg.offset_index.borrow().encode_from(0),
            ".index of {base}"
        );
        assert_eq!(
            std::fs::read(dir.join(time_index_file_name(base))).unwrap(),
            seg.time_index.borrow().encode_from(0),
            ".timeindex of {base}"
        );
    }
    check_lookups(log, model, interval, rng).await;
}

/// Leader appends stamp every batch with the epoch (outside the CRC, which stays valid),
/// the cache records each new epoch at its first offset, the checkpoint file holds Kafka's
/// text format and both read back after a clean reopen and after a crash.
#[test]
fn leader_append_stamps_epochs_and_the_checkpoint_reads_back() {
    run(|| async {
        let dir = test_dir("leader-epochs");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        assert_eq!(log.latest_epoch(), None);
        assert_eq!(log.end_offset_for_epoch(0), None);
        assert!(!dir.join(LEADER_EPOCH_CHECKPOINT_FILE).exists());
        leader_append(&log, &mut model, &batches(&[2, 3], 20), 3).await;
        leader_append(&log, &mut model, &batches(&[1], 20), 3).await;
        assert_eq!(checkpoint_text(&dir), "0\n1\n3 0\n");
        leader_append(&log, &mut model, &batches(&[4, 1], 20), 5).await;
        assert_eq!(checkpoint_text(&dir), "0\n2\n3 0\n5 6\n");
        // A negative epoch is refused before any offset is taken.
        assert!(matches!(
            log.append_as_leader(&batches(&[1], 5), -1).await,
            Err(LogError::InvalidEpochEntry(_))
        ));
        assert_eq!(log.log_end_offset(), 11);
        for (_, _, b) in &model.batches {
            check_crc(b).unwrap();
        }
        let stored = read_all(&log, 0).await;
        assert_eq!(stored, model.all());
        let epochs: Vec<i32> = HeaderWalker::new(&stored)
            .map(|(_, h)| h.partition_leader_epoch)
            .collect();
        assert_eq!(epochs, [3, 3, 3, 5, 5]);
        assert_eq!(log.end_offset_for_epoch(3), Some((3, 6)));
        assert_eq!(log.end_offset_for_epoch(4), Some((3, 6)));
        assert_eq!(log.end_offset_for_epoch(5), Some((5, 11)));
        assert_eq!(log.end_offset_for_epoch(6), None);
        assert_eq!(log.end_offset_for_epoch(2), Some((2, 0)));
        // Become-leader: epoch 7 starts at the log end before any data.
        log.assign_epoch_start_offset(7, 11).await.unwrap();
        assert_eq!(checkpoint_text(&dir), "0\n3\n3 0\n5 6\n7 11\n");
        leader_append(&log, &mut model, &batches(&[2], 20), 7).await;
        assert_eq!(log.epoch_cache().entries().len(), 3);
        log.close().await.unwrap();
        drop(log);

        let mut rng = XorShift(3);
        let interval = small_config().index_interval_bytes;
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        check_log(&log, &model, interval, &mut rng).await;
        leader_append(&log, &mut model, &batches(&[2], 20), 8).await;
        drop(log); // crash: no clean shutdown
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert!(!log.load_stats().clean);
        check_log(&log, &model, interval, &mut rng).await;
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Batches the caller owns (a Produce request's records, split off the frame the connection
/// read) are patched where they are and written from there: no user-space copy, and the same
/// bytes stored, cached and read back as for borrowed batches, which are copied once. A
/// follower's owned batches ending in a partial batch are cut to the whole ones.
#[test]
fn owned_batches_are_written_without_a_user_space_copy() {
    use crate::file_io::copies;
    run(|| async {
        let dir = test_dir("owned-append");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        let input = batches(&[2, 3], 20);
        let before = copies::snapshot();
        let info = log
            .append_as_leader(BytesMut::from(&input[..]), 4)
            .await
            .unwrap();
        let counted = copies::snapshot().since(&before);
        assert_eq!(counted.append_user_copy_bytes, 0);
        // The batches' bytes went to the file (index entries are counted there too).
        assert!(counted.write_bytes >= input.len() as u64);
        assert_eq!((info.first_offset, info.last_offset), (0, 4));
        model.append(0, &stamped(&input, 0, 4));

        let borrowed = batches(&[1], 20);
        let before = copies::snapshot();
        leader_append(&log, &mut model, &borrowed, 4).await;
        let counted = copies::snapshot().since(&before);
        assert_eq!(counted.append_user_copy_bytes, borrowed.len() as u64);

        // A follower's owned batches, a partial batch after them.
        let whole = stamped(&batches(&[2], 20), 6, 5);
        let mut replicated = BytesMut::from(&whole[..]);
        replicated.extend_from_slice(&whole[..whole.len() / 2]);
        let before = copies::snapshot();
        let info = log.append_as_follower(replicated).await.unwrap();
        assert_eq!(copies::snapshot().since(&before).append_user_copy_bytes, 0);
        assert_eq!((info.first_offset, info.bytes), (6, whole.len()));
        model.append(6, &whole);

        for (_, _, b) in &model.batches {
            check_crc(b).unwrap();
        }
        assert_eq!(read_all(&log, 0).await, model.all());
        log.close().await.unwrap();
        drop(log);
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!(read_all(&log, 0).await, model.all());
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Follower appends keep the leader's offsets and epochs, refuse an offset below the log
/// end, out-of-order offsets and a bad CRC without taking offsets, accept a gap, and feed
/// the epoch cache per batch.
#[test]
fn follower_append_keeps_offsets_and_epochs() {
    run(|| async {
        let dir = test_dir("follower");
        let config = LogConfig {
            // A follower keeps the leader's timestamps even under LogAppendTime.
            timestamp_type: crate::TimestampType::LogAppendTime,
            ..small_config()
        };
        let log = Log::open(dir.clone(), config).await.unwrap();
        let mut input = Vec::new();
        for (first, n, epoch) in [(0, 2, 1), (2, 3, 1), (5, 1, 2)] {
            input.extend(stamped(&make_batch(0, n, 30, n as u8), first, epoch));
        }
        // A fetch response cut inside its last batch: the whole batches are appended.
        let mut cut_response = input.clone();
        cut_response.extend_from_slice(&stamped(&make_batch(0, 1, 30, 0), 6, 2)[..40]);
        let info = log.append_as_follower(&cut_response).await.unwrap();
        assert_eq!((info.first_offset, info.last_offset), (0, 5));
        assert_eq!(info.bytes, input.len());
        assert_eq!(info.log_append_time_ms, -1);
        assert_eq!(
            read_all(&log, 0).await,
            input,
            "stored as the leader wrote them"
        );
        assert_eq!(
            log.epoch_cache().entries(),
            [
                EpochEntry {
                    epoch: 1,
                    start_offset: 0
                },
                EpochEntry {
                    epoch: 2,
                    start_offset: 5
                }
            ]
        );

        let below = stamped(&make_batch(0, 2, 10, 0), 5, 2);
        assert!(matches!(
            log.append_as_follower(&below).await,
            Err(LogError::UnexpectedAppendOffset {
                expected: 6,
                got: 5
            })
        ));
        let mut disorder = stamped(&make_batch(0, 2, 10, 0), 8, 2);
        disorder.extend(stamped(&make_batch(0, 1, 10, 0), 9, 2));
        assert!(matches!(
            log.append_as_follower(&disorder).await,
            Err(LogError::InvalidBatch { .. })
        ));
        let mut bad_crc = stamped(&make_batch(0, 1, 10, 0), 6, 2);
        let last = bad_crc.len() - 1;
        bad_crc[last] ^= 1;
        assert!(matches!(
            log.append_as_follower(&bad_crc).await,
            Err(LogError::InvalidBatch { .. })
        ));
        assert_eq!(log.log_end_offset(), 6);

        // A gap (a compacted leader): offsets 6..9 never come; a read inside it gets the
        // next batch.
        let after_gap = stamped(&make_batch(0, 2, 10, 7), 10, 4);
        let info = log.append_as_follower(&after_gap).await.unwrap();
        assert_eq!((info.first_offset, info.last_offset), (10, 11));
        assert_eq!(log.log_end_offset(), 12);
        let r = log.read(7, 1000, true, None).await.unwrap();
        assert_eq!(r.records, after_gap);
        assert_eq!(log.end_offset_for_epoch(2), Some((2, 10)));
        assert_eq!(log.latest_epoch(), Some(4));
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Truncation to many kinds of points (inside a batch, at a batch boundary, at a segment
/// base, deep in an older segment, at 0, at the end): the log keeps exactly the batches
/// wholly below the point, with its indexes, tail cache, epoch cache, high watermark and
/// recovery point cut to match; appends continue after it; a clean reopen and a crash
/// reopen give the same log.
#[test]
fn truncate_to_cuts_whole_batches_and_reopens_the_same() {
    run(|| async {
        let dir = test_dir("truncate");
        let interval = small_config().index_interval_bytes;
        let mut rng = XorShift(0x5eed);
        for round in 0..8 {
            for tail_cache_bytes in [0, 1 << 20] {
                let _ = std::fs::remove_dir_all(&dir);
                let config = LogConfig {
                    tail_cache_bytes,
                    ..small_config()
                };
                let log = Log::open(dir.clone(), config.clone()).await.unwrap();
                let mut model = Model::default();
                let mut clock = 1_000;
                let mut epoch = 0;
                for _ in 0..40 {
                    if rng.below(5) == 0 {
                        epoch += 1 + rng.below(2) as i32;
                    }
                    let spec: Vec<(i32, i64)> = (0..1 + rng.below(3))
                        .map(|_| (1 + rng.below(4) as i32, next_ts(&mut rng, &mut clock)))
                        .collect();
                    let input = ts_batches(&spec, rng.below(250) as usize);
                    leader_append(&log, &mut model, &input, epoch).await;
                }
                assert!(log.segment_count() >= 4, "the log spans several segments");
                log.flush().await.unwrap();
                log.update_high_watermark(log.log_end_offset());
                let bases = log.segment_bases();
                let end = log.log_end_offset();
                let last_batch = model.batches.last().unwrap().clone();
                let target = match round {
                    0 => end - 1,                      // inside or at the last batch
                    1 => last_batch.0,                 // a batch boundary
                    2 => *bases.last().unwrap(),       // the active segment's base
                    3 => bases[1] + 1,                 // early in an older segment
                    4 => 0,                            // everything
                    5 => end,                          // nothing
                    _ => rng.below(end as u64) as i64, // anywhere
                };
                let cut = log.truncate_to(target).await.unwrap();
                assert_eq!(cut, target < end);
                model_truncate(&mut model, target);
                let new_end = model.end();
                assert!(new_end <= target);
                assert_eq!(log.high_watermark(), new_end);
                assert!(log.recovery_point() <= new_end);
                let kept: Vec<i64> = bases.iter().copied().filter(|&b| b <= target).collect();
                assert_eq!(
                    log.segment_bases(),
                    kept,
                    "segments based at or below the target"
                );
                check_log(&log, &model, interval, &mut rng).await;
                // Appends continue right after the cut, in a newer epoch.
                epoch += 1;
                for _ in 0..6 {
                    let spec = [(1 + rng.below(4) as i32, next_ts(&mut rng, &mut clock))];
                    leader_append(&log, &mut model, &ts_batches(&spec, 200), epoch).await;
                }
                check_log(&log, &model, interval, &mut rng).await;
                log.close().await.unwrap();
                drop(log);

                let log = Log::open(dir.clone(), config.clone()).await.unwrap();
                assert!(log.load_stats().clean);
                check_log(&log, &model, interval, &mut rng).await;
                // Truncate again and crash: the reopened log is the truncated one.
                let target = rng.below(model.end() as u64 + 1) as i64;
                log.truncate_to(target).await.unwrap();
                model_truncate(&mut model, target);
                drop(log);
                let log = Log::open(dir.clone(), config).await.unwrap();
                assert!(!log.load_stats().clean);
                check_log(&log, &model, interval, &mut rng).await;
                log.close().await.unwrap();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// `truncate_fully_and_start_at` (and `truncate_to` below the first segment): one empty
/// segment at the offset, log start = log end = high watermark = it, no epochs; follower
/// appends continue from it, and a reopen gives the same.
#[test]
fn truncate_fully_and_start_at_restarts_the_log() {
    run(|| async {
        let dir = test_dir("truncate-fully");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        for epoch in 1..=20 {
            leader_append(&log, &mut model, &batches(&[3, 2], 300), epoch).await;
        }
        assert!(log.segment_count() > 2);
        log.update_high_watermark(60);
        log.truncate_fully_and_start_at(1_000).await.unwrap();
        assert_eq!(log.segment_bases(), [1_000]);
        assert_eq!(log.log_start_offset(), 1_000);
        assert_eq!(log.log_end_offset(), 1_000);
        assert_eq!(log.high_watermark(), 1_000);
        assert_eq!(log.recovery_point(), 1_000);
        assert_eq!(log.latest_epoch(), None);
        assert_eq!(checkpoint_text(&dir), "0\n0\n");
        assert!(matches!(
            log.read(0, 100, true, None).await,
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(log
            .read(1_000, 100, true, None)
            .await
            .unwrap()
            .records
            .is_empty());
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        assert_eq!(names, [segment_file_name(1_000)]);
        let below = stamped(&make_batch(0, 1, 10, 0), 999, 30);
        assert!(matches!(
            log.append_as_follower(&below).await,
            Err(LogError::UnexpectedAppendOffset { .. })
        ));
        let next = stamped(&make_batch(0, 4, 10, 0), 1_000, 30);
        log.append_as_follower(&next).await.unwrap();
        let mut model = Model::default();
        model.append(1_000, &next);
        drop(log);
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut rng = XorShift(9);
        check_log(&log, &model, small_config().index_interval_bytes, &mut rng).await;
        assert_eq!(log.log_start_offset(), 1_000);
        // truncate_to below the first segment truncates fully.
        assert!(log.truncate_to(10).await.unwrap());
        assert_eq!(log.segment_bases(), [10]);
        assert_eq!((log.log_start_offset(), log.log_end_offset()), (10, 10));
        log.close().await.unwrap();
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!((log.log_start_offset(), log.log_end_offset()), (10, 10));
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The epoch cache follows the log: a checkpoint ahead of the recovered log end (the
/// log lost its tail in a crash) is cut at open; epochs whose checkpoint write was lost
/// come back from the recovery scan; a truncation at the log end drops an epoch that has
/// no data; retention and DeleteRecords move the first entry up with the log start.
#[test]
fn epoch_cache_is_truncated_with_the_log() {
    run(|| async {
        let dir = test_dir("epochs-crash");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        leader_append(&log, &mut model, &batches(&[2], 30), 1).await;
        leader_append(&log, &mut model, &batches(&[3], 30), 2).await;
        let torn_from = log.size_bytes();
        leader_append(&log, &mut model, &batches(&[1], 30), 4).await;
        drop(log);
        // The crash tore the last batch: the log ends at 5, the checkpoint says epoch 4
        // starts at 5.
        let seg = dir.join(segment_file_name(0));
        let f = std::fs::OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(torn_from + 10).unwrap();
        assert_eq!(checkpoint_text(&dir), "0\n3\n1 0\n2 2\n4 5\n");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!(log.log_end_offset(), 5);
        model.batches.pop();
        assert_eq!(log.epoch_cache().entries(), expected_epochs(&model));
        assert_eq!(checkpoint_text(&dir), "0\n2\n1 0\n2 2\n");
        // The checkpoint write of epoch 3 lost (as if the crash came before it): the scan
        // puts it back.
        leader_append(&log, &mut model, &batches(&[2], 30), 3).await;
        drop(log);
        std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT_FILE), "0\n1\n1 0\n").unwrap();
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!(log.epoch_cache().entries(), expected_epochs(&model));
        assert_eq!(checkpoint_text(&dir), "0\n3\n1 0\n2 2\n3 5\n");
        // Become-leader in epoch 6 at the end, then a truncation to the end: the entry
        // without data goes (Kafka's truncateTo at or past the log end).
        log.assign_epoch_start_offset(6, 7).await.unwrap();
        assert_eq!(log.latest_epoch(), Some(6));
        assert!(!log.truncate_to(7).await.unwrap());
        assert_eq!(log.latest_epoch(), Some(3));
        // A corrupt checkpoint is an error, not a silently shorter cache.
        log.close().await.unwrap();
        std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT_FILE), "0\n2\n1 0\n").unwrap();
        assert!(matches!(
            Log::open(dir.clone(), small_config()).await,
            Err(LogError::Corrupt { .. })
        ));
        std::fs::write(
            dir.join(LEADER_EPOCH_CHECKPOINT_FILE),
            "0\n3\n1 0\n2 2\n3 5\n",
        )
        .unwrap();
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        // DeleteRecords inside epoch 2: its entry moves up to the new log start.
        log.update_high_watermark(7);
        assert_eq!(log.delete_records_before(3).await.unwrap(), 3);
        assert_eq!(checkpoint_text(&dir), "0\n2\n2 3\n3 5\n");
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// The high watermark starts at the log start, rises only within [log start, readable
/// end], wakes its waiters when it passes their offset (and when the log stops), drops
/// with a truncation and follows the log start up.
#[test]
fn high_watermark_clamps_wakes_and_follows_truncation() {
    run(|| async {
        let dir = test_dir("hw");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!(log.high_watermark(), 0);
        log.append_as_leader(&batches(&[5, 5], 30), 1)
            .await
            .unwrap();
        assert!(!log.update_high_watermark(0));
        assert!(
            log.update_high_watermark(100),
            "clamped to the readable end"
        );
        assert_eq!(log.high_watermark(), 10);
        assert!(!log.update_high_watermark(4), "never down");
        assert_eq!(log.high_watermark(), 10);
        // Consumers read below it.
        let r = log
            .read(0, 10_000, true, Some(log.high_watermark()))
            .await
            .unwrap();
        assert_eq!(HeaderWalker::new(&r.records).count(), 2);

        let woken = Rc::new(Cell::new(0));
        let waiter = |beyond: i64| {
            let (log, woken) = (log.clone(), woken.clone());
            glommio::spawn_local(async move {
                log.wait_for_high_watermark(beyond).await;
                woken.set(woken.get() + 1);
            })
            .detach()
        };
        let w1 = waiter(12);
        let w2 = waiter(15);
        log.append_as_leader(&batches(&[10], 30), 1).await.unwrap();
        glommio::yield_if_needed().await;
        glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
        assert_eq!(
            woken.get(),
            0,
            "the log end moved, the high watermark did not"
        );
        assert!(log.update_high_watermark(13));
        w1.await;
        assert_eq!(woken.get(), 1);
        assert!(log.update_high_watermark(20));
        w2.await;
        assert_eq!(woken.get(), 2);

        // A truncation drops it to the new end; DeleteRecords raises it to the log start.
        assert!(log.truncate_to(12).await.unwrap());
        assert_eq!(log.log_end_offset(), 10);
        assert_eq!(log.high_watermark(), 10);
        log.append_as_leader(&batches(&[10], 30), 2).await.unwrap();
        log.update_high_watermark(12);
        log.delete_records_before(15).await.unwrap();
        assert_eq!(log.high_watermark(), 15);
        // A wait resolves when the log stops.
        let w3 = waiter(100);
        glommio::timer::sleep(std::time::Duration::from_millis(5)).await;
        assert_eq!(woken.get(), 2);
        log.close().await.unwrap();
        w3.await;
        assert_eq!(woken.get(), 3);
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        assert_eq!(log.high_watermark(), 15, "starts at the log start offset");
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// Truncation waits for appends in flight, appends issued while it runs wait and land
/// after the cut, and reads never see a torn state.
#[test]
fn truncation_waits_for_in_flight_appends_and_holds_new_ones() {
    run(|| async {
        let dir = test_dir("truncate-concurrent");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        for _ in 0..10 {
            leader_append(&log, &mut model, &batches(&[2, 2], 200), 1).await;
        }
        // Three appends reserved before the truncation, one after it began.
        let spawn_append = |records: i32| {
            let log = log.clone();
            glommio::spawn_local(
                async move { log.append_as_leader(&batches(&[records], 100), 1).await },
            )
            .detach()
        };
        // Spawned tasks run in spawn order: these three reserve first.
        let before: Vec<_> = (0..3).map(|_| spawn_append(1)).collect();
        let truncation = {
            let log = log.clone();
            glommio::spawn_local(async move { log.truncate_to(25).await }).detach()
        };
        let after = spawn_append(7);
        assert!(truncation.await.unwrap().unwrap());
        for a in before {
            a.await.unwrap().unwrap();
        }
        let info = after.await.unwrap().unwrap();
        // The three went in before the cut (offsets 40..43) and were cut with it; the one
        // issued during the truncation starts at the new end.
        model_truncate(&mut model, 25);
        assert_eq!(model.end(), 24);
        assert_eq!(info.first_offset, 24);
        model.append(24, &stamped(&batches(&[7], 100), 24, 1));
        assert_eq!(read_all(&log, 0).await, model.all());
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

/// A crash in the middle of a truncation — later segments and the lowered recovery point
/// on disk, the cut segment not yet cut — reopens as a prefix of the old log with an epoch
/// cache cut to it, and the truncation can be done again.
#[test]
fn truncation_interrupted_by_a_crash_leaves_a_prefix() {
    run(|| async {
        let dir = test_dir("truncate-interrupted");
        let copy = test_dir("truncate-interrupted-copy");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        for epoch in 1..=12 {
            leader_append(&log, &mut model, &batches(&[2, 3], 300), epoch).await;
        }
        log.flush().await.unwrap();
        let bases = log.segment_bases();
        assert!(bases.len() >= 3);
        // The target lies inside the second segment.
        let target = bases[1] + 3;
        let cut_segment = segment_file_name(bases[1]);
        std::fs::create_dir_all(&copy).unwrap();
        std::fs::copy(dir.join(&cut_segment), copy.join(&cut_segment)).unwrap();
        let old = model.all();
        log.truncate_to(target).await.unwrap();
        drop(log);
        // Undo the last file step: the cut segment's .log as before the truncation.
        std::fs::copy(copy.join(&cut_segment), dir.join(&cut_segment)).unwrap();
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let end = log.log_end_offset();
        assert!(
            end >= target && end <= bases[2],
            "ends within the cut segment: {end}"
        );
        let data = read_all(&log, 0).await;
        assert_eq!(data, old[..data.len()], "a prefix of the old log");
        let mut prefix = Model {
            batches: model.batches.clone(),
        };
        model_truncate(&mut prefix, end);
        assert_eq!(log.epoch_cache().entries(), expected_epochs(&prefix));
        log.truncate_to(target).await.unwrap();
        model_truncate(&mut model, target);
        let mut rng = XorShift(11);
        check_log(&log, &model, small_config().index_interval_bytes, &mut rng).await;
        log.close().await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&copy);
    });
}

#[test]
fn the_fetch_stamp_moves_with_everything_a_caught_up_read_depends_on() {
    run(|| async {
        let log = Log::open(test_dir("fetch-stamp"), small_config())
            .await
            .unwrap();
        let mut model = Model::default();
        for _ in 0..4 {
            append_checked(&log, &mut model, &batches(&[2], 3000)).await;
        }
        let moves = |what: &str, mark: &crate::QuietMark| {
            assert!(!mark.is_current(), "{what} moves the stamp");
        };
        // An append alone does not: the high watermark decides what a consumer reads.
        let mark = log.fetch_stamp().mark();
        append_checked(&log, &mut model, &batches(&[1], 10)).await;
        assert!(mark.is_current(), "an append below no new high watermark");
        log.update_high_watermark(6);
        moves("the high watermark", &mark);
        let mark = log.fetch_stamp().mark();
        assert!(!log.update_high_watermark(6));
        assert!(mark.is_current(), "a high watermark that does not move");
        log.delete_records_before(3).await.unwrap();
        moves("DeleteRecords", &mark);
        let mark = log.fetch_stamp().mark();
        log.truncate_to(7).await.unwrap();
        moves("a truncation", &mark);
        let mark = log.fetch_stamp().mark();
        log.truncate_fully_and_start_at(20).await.unwrap();
        moves("a full truncation", &mark);
        let mark = log.fetch_stamp().mark();
        log.close().await.unwrap();
        moves("closing", &mark);
    });
}

#[test]
fn the_fetch_stamp_moves_when_retention_moves_the_log_start_and_when_the_log_fails_or_goes() {
    run(|| async {
        let config = LogConfig {
            retention_bytes: 1,
            ..small_config()
        };
        let log = Log::open(test_dir("fetch-stamp-retention"), config)
            .await
            .unwrap();
        let mut model = Model::default();
        for _ in 0..4 {
            append_checked(&log, &mut model, &batches(&[2], 3000)).await;
        }
        log.update_high_watermark(log.log_end_offset());
        let mark = log.fetch_stamp().mark();
        assert!(log.run_retention(0, 10).await.unwrap() > 0);
        assert!(!mark.is_current(), "retention moves the stamp");
        let mark = log.fetch_stamp().mark();
        log.delete().await.unwrap();
        assert!(!mark.is_current(), "deleting moves the stamp");
        // A failed log.
        let dir = test_dir("fetch-stamp-failure");
        let log = Log::open(dir.clone(), small_config()).await.unwrap();
        let mut model = Model::default();
        append_checked(&log, &mut model, &batches(&[1], 3000)).await;
        let mark = log.fetch_stamp().mark();
        // The next append rolls; creating its segment file fails: the directory is gone.
        std::fs::remove_dir_all(&dir).unwrap();
        let input = batches(&[2], 3000);
        assert!(log.append(&input).await.is_err());
        assert!(log.failure().is_some());
        assert!(!mark.is_current(), "failing moves the stamp");
    });
}
