//! The rules of Kafka's `LeaderEpochFileCache`, one test each (the cases of Kafka's own
//! `LeaderEpochFileCacheTest`), and the `leader-epoch-checkpoint` file on disk.

use std::path::{Path, PathBuf};

use glommio::LocalExecutorBuilder;

use super::*;

fn cache(entries: &[(i32, i64)]) -> LeaderEpochFileCache {
    let mut cache = LeaderEpochFileCache::new();
    for &(epoch, start_offset) in entries {
        cache.assign(epoch, start_offset).expect("valid entry");
    }
    cache
}

fn pairs(cache: &LeaderEpochFileCache) -> Vec<(i32, i64)> {
    cache
        .entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect()
}

#[test]
fn assign_appends_increasing_epochs() {
    let mut c = LeaderEpochFileCache::new();
    assert!(c.is_empty());
    assert_eq!(c.assign(2, 6), Ok(true));
    assert_eq!(c.assign(3, 8), Ok(true));
    assert_eq!(pairs(&c), [(2, 6), (3, 8)]);
    assert_eq!(c.latest_epoch(), Some(3));
    assert_eq!(
        c.earliest_entry(),
        Some(EpochEntry {
            epoch: 2,
            start_offset: 6
        })
    );
}

#[test]
fn assign_ignores_the_latest_epoch_at_the_same_or_a_higher_offset() {
    // Every batch of the current epoch is offered to the cache; only the first counts.
    let mut c = cache(&[(2, 6)]);
    assert_eq!(c.assign(2, 6), Ok(false));
    assert_eq!(c.assign(2, 7), Ok(false));
    assert_eq!(pairs(&c), [(2, 6)]);
}

#[test]
fn assign_moves_the_latest_epoch_down_to_a_lower_offset() {
    let mut c = cache(&[(1, 0), (2, 6)]);
    assert_eq!(c.assign(2, 5), Ok(true));
    assert_eq!(pairs(&c), [(1, 0), (2, 5)]);
}

#[test]
fn assign_truncates_conflicting_entries() {
    // A lower epoch than the latest: every entry with an epoch ≥ it or a start offset ≥ its
    // offset goes (Kafka warns: data was written under them).
    let mut c = cache(&[(5, 11), (6, 12), (7, 13)]);
    assert_eq!(c.assign(6, 20), Ok(true));
    assert_eq!(pairs(&c), [(5, 11), (6, 20)]);

    // The latest epoch at an offset below earlier entries' starts.
    let mut c = cache(&[(5, 11), (6, 12), (7, 13)]);
    assert_eq!(c.assign(7, 12), Ok(true));
    assert_eq!(pairs(&c), [(5, 11), (7, 12)]);

    // A higher epoch at a lower offset than the latest start.
    let mut c = cache(&[(2, 6), (3, 8)]);
    assert_eq!(c.assign(4, 7), Ok(true));
    assert_eq!(pairs(&c), [(2, 6), (4, 7)]);

    // A higher epoch at the same offset as the latest replaces it (no data under it).
    let mut c = cache(&[(2, 6), (3, 8)]);
    assert_eq!(c.assign(4, 8), Ok(true));
    assert_eq!(pairs(&c), [(2, 6), (4, 8)]);
}

#[test]
fn assign_refuses_negative_epochs_and_offsets() {
    let mut c = cache(&[(1, 0)]);
    assert_eq!(
        c.assign(-1, 5),
        Err(InvalidEpochEntry {
            epoch: -1,
            start_offset: 5
        })
    );
    assert_eq!(
        c.assign(2, -1),
        Err(InvalidEpochEntry {
            epoch: 2,
            start_offset: -1
        })
    );
    assert_eq!(pairs(&c), [(1, 0)]);
}

#[test]
fn epoch_for_offset() {
    let c = cache(&[(1, 0), (3, 5), (4, 10)]);
    assert_eq!(c.epoch_for_offset(0), Some(1));
    assert_eq!(c.epoch_for_offset(4), Some(1));
    assert_eq!(c.epoch_for_offset(5), Some(3));
    assert_eq!(c.epoch_for_offset(9), Some(3));
    assert_eq!(c.epoch_for_offset(10), Some(4));
    assert_eq!(c.epoch_for_offset(1_000), Some(4));
    let c = cache(&[(2, 6)]);
    assert_eq!(c.epoch_for_offset(5), None);
    assert_eq!(LeaderEpochFileCache::new().epoch_for_offset(0), None);
}

#[test]
fn previous_epoch() {
    let c = cache(&[(1, 0), (3, 5), (4, 10)]);
    assert_eq!(c.previous_epoch(4), Some(3));
    assert_eq!(c.previous_epoch(3), Some(1));
    assert_eq!(c.previous_epoch(2), Some(1));
    assert_eq!(c.previous_epoch(1), None);
}

#[test]
fn end_offset_for_undefined_epoch_is_undefined() {
    let c = cache(&[(1, 0)]);
    assert_eq!(
        c.end_offset_for(UNDEFINED_EPOCH, 10),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn end_offset_for_the_latest_epoch_is_the_log_end_offset() {
    let c = cache(&[(2, 6), (3, 8), (4, 11)]);
    assert_eq!(c.end_offset_for(4, 21), (4, 21));
}

#[test]
fn end_offset_for_an_earlier_epoch_is_the_start_of_the_next() {
    let c = cache(&[(0, 10), (2, 13), (4, 17)]);
    assert_eq!(c.end_offset_for(0, 30), (0, 13));
    assert_eq!(c.end_offset_for(2, 30), (2, 17));
    // Epochs this replica never saw: the largest known below, ending where the next starts
    // (what KIP-279 relies on).
    assert_eq!(c.end_offset_for(1, 30), (0, 13));
    assert_eq!(c.end_offset_for(3, 30), (2, 17));
}

#[test]
fn end_offset_for_an_epoch_below_the_earliest_is_the_earliest_start() {
    let c = cache(&[(5, 11), (6, 12), (7, 13)]);
    assert_eq!(c.end_offset_for(4, 20), (4, 11));
}

#[test]
fn end_offset_for_an_epoch_above_the_latest_is_undefined() {
    let c = cache(&[(2, 6), (3, 8)]);
    assert_eq!(
        c.end_offset_for(4, 20),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
    assert_eq!(
        LeaderEpochFileCache::new().end_offset_for(0, 0),
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    );
}

#[test]
fn truncate_from_end() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    // At or past the latest start + 1: nothing starts at or after it.
    assert!(!c.truncate_from_end(12));
    assert!(!c.truncate_from_end(-1));
    assert!(c.truncate_from_end(11));
    assert_eq!(pairs(&c), [(2, 6), (3, 8)]);
    assert!(c.truncate_from_end(7));
    assert_eq!(pairs(&c), [(2, 6)]);
    assert!(c.truncate_from_end(0));
    assert!(c.is_empty());
}

#[test]
fn truncate_from_start() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    assert!(!c.truncate_from_start(6));
    assert!(!c.truncate_from_start(-1));
    // Inside epoch 3: epoch 2 goes, epoch 3 now starts at the new log start.
    assert!(c.truncate_from_start(9));
    assert_eq!(pairs(&c), [(3, 9), (4, 11)]);
    // Exactly at epoch 4's start.
    assert!(c.truncate_from_start(11));
    assert_eq!(pairs(&c), [(4, 11)]);
    // Past every start: the latest epoch is kept, starting at the new log start.
    assert!(c.truncate_from_start(15));
    assert_eq!(pairs(&c), [(4, 15)]);
}

#[test]
fn clear() {
    let mut c = cache(&[(2, 6)]);
    assert!(c.clear());
    assert!(!c.clear());
    assert!(c.is_empty());
}

#[test]
fn file_bytes_are_kafkas_format() {
    let c = cache(&[(0, 0), (3, 1_000), (17, 123_456_789_012)]);
    assert_eq!(c.encode(), b"0\n3\n0 0\n3 1000\n17 123456789012\n".to_vec());
    assert_eq!(LeaderEpochFileCache::new().encode(), b"0\n0\n".to_vec());
    let path = Path::new("leader-epoch-checkpoint");
    assert_eq!(
        LeaderEpochFileCache::decode(path, &c.encode()).expect("decode"),
        c
    );
    assert!(LeaderEpochFileCache::decode(path, b"0\n0\n")
        .expect("decode")
        .is_empty());
}

#[test]
fn a_corrupt_file_is_an_error() {
    let path = Path::new("leader-epoch-checkpoint");
    let cases: &[&[u8]] = &[
        b"",
        b"1\n1\n0 0\n",
        b"0\n",
        b"0\nx\n",
        b"0\n2\n0 0\n",
        b"0\n1\n0 0\n1 5\n",
        b"0\n1\n0\n",
        b"0\n1\n0 0 0\n",
        b"0\n1\nzero 0\n",
        b"0\n1\n-1 0\n",
        b"0\n1\n\xff 0\n",
    ];
    for &data in cases {
        match LeaderEpochFileCache::decode(path, data) {
            Err(LogError::Corrupt { .. }) => {}
            other => panic!("{:?} decoded to {other:?}", String::from_utf8_lossy(data)),
        }
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
    let dir = crate::test_dirs::root().join("leader-epoch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test dir");
    dir
}

#[test]
fn the_checkpoint_file_round_trips_and_replaces_atomically() {
    let dir = test_dir("round-trip");
    run(move || async move {
        let file = LeaderEpochCheckpointFile::new(&dir);
        assert!(file
            .read()
            .await
            .expect("missing file reads empty")
            .is_empty());
        let c = cache(&[(1, 0), (4, 77)]);
        file.write(&c).await.expect("write");
        assert_eq!(
            std::fs::read(dir.join(LEADER_EPOCH_CHECKPOINT_FILE)).expect("read"),
            b"0\n2\n1 0\n4 77\n".to_vec()
        );
        assert_eq!(file.read().await.expect("read"), c);
        let c = cache(&[(1, 0)]);
        file.write(&c).await.expect("rewrite");
        assert_eq!(
            LeaderEpochCheckpointFile::new(&dir)
                .read()
                .await
                .expect("read"),
            c
        );
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name != LEADER_EPOCH_CHECKPOINT_FILE)
            .collect();
        assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    });
}

#[test]
fn a_corrupt_checkpoint_file_fails_to_read() {
    let dir = test_dir("corrupt");
    std::fs::write(dir.join(LEADER_EPOCH_CHECKPOINT_FILE), b"0\n3\n1 0\n").expect("write");
    run(move || async move {
        match LeaderEpochCheckpointFile::new(&dir).read().await {
            Err(LogError::Corrupt { reason, .. }) => assert!(reason.contains("expected 3")),
            other => panic!("read {other:?}"),
        }
    });
}
