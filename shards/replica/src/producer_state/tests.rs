use super::*;
use sluice_protocol::golden::{check_golden, hex, unhex};
use sluice_protocol::record_batch::{parse_header, RecordBatchBuilder};

const HOUR: i64 = 3_600_000;

fn batch(pid: i64, epoch: i16, first_seq: i32, records: i32) -> ProducerBatch {
    ProducerBatch {
        producer_id: pid,
        epoch,
        first_seq,
        last_seq: increment_sequence(first_seq, records - 1),
        offset_count: i64::from(records),
        max_timestamp: 1_000,
    }
}

fn reserve(state: &mut ProducerStateManager, b: ProducerBatch, at: i64) -> AppendCheck {
    state.check_and_reserve(&b, at, 10_000).unwrap()
}

#[test]
fn in_order_batches_are_reserved_and_duplicates_get_original_offsets() {
    let mut s = ProducerStateManager::new(HOUR);
    assert!(matches!(
        reserve(&mut s, batch(7, 0, 0, 10), 0),
        AppendCheck::Reserved(_)
    ));
    assert!(matches!(
        reserve(&mut s, batch(7, 0, 10, 5), 10),
        AppendCheck::Reserved(_)
    ));
    // A retry of the first batch, while the log is further on.
    match reserve(&mut s, batch(7, 0, 0, 10), 100) {
        AppendCheck::Duplicate(b) => {
            assert_eq!((b.first_offset, b.last_offset), (0, 9));
            assert_eq!((b.first_seq, b.last_seq), (0, 9));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.entry(7).unwrap().last_seq(), Some(14));
    assert_eq!(s.entry(7).unwrap().last_offset(), Some(14));
}

#[test]
fn only_the_last_five_batches_are_remembered() {
    let mut s = ProducerStateManager::new(HOUR);
    for i in 0..6 {
        reserve(&mut s, batch(1, 0, i, 1), i64::from(i));
    }
    assert_eq!(s.entry(1).unwrap().batches.len(), NUM_BATCHES_TO_RETAIN);
    // The first batch is forgotten: its retry is now a sequence error, not a duplicate.
    let err = s.check_and_reserve(&batch(1, 0, 0, 1), 6, 0).unwrap_err();
    assert!(matches!(err, ProducerStateError::OutOfOrderSequence { .. }));
    assert!(matches!(
        reserve(&mut s, batch(1, 0, 1, 1), 6),
        AppendCheck::Duplicate(_)
    ));
}

#[test]
fn a_gap_is_out_of_order() {
    let mut s = ProducerStateManager::new(HOUR);
    reserve(&mut s, batch(1, 0, 0, 3), 0);
    let err = s.check_and_reserve(&batch(1, 0, 4, 1), 3, 0).unwrap_err();
    assert_eq!(
        err,
        ProducerStateError::OutOfOrderSequence {
            producer_id: 1,
            epoch: 0,
            first_seq: 4,
            last_seq: Some(2)
        }
    );
    // A partial overlap (same first, different last) is not a duplicate either.
    assert!(s.check_and_reserve(&batch(1, 0, 0, 2), 3, 0).is_err());
    // Nothing was reserved by the refused batches.
    assert_eq!(s.entry(1).unwrap().batches.len(), 1);
}

#[test]
fn unknown_producer_must_start_at_zero() {
    let mut s = ProducerStateManager::new(HOUR);
    assert!(matches!(
        s.check_and_reserve(&batch(9, 0, 5, 1), 0, 0),
        Err(ProducerStateError::OutOfOrderSequence { last_seq: None, .. })
    ));
    assert!(matches!(
        s.check_and_reserve(&batch(9, 0, -1, 1), 0, 0),
        Err(ProducerStateError::InvalidSequence { .. })
    ));
    assert!(s.is_empty());
}

#[test]
fn stale_epoch_is_fenced_and_new_epoch_restarts_at_zero() {
    let mut s = ProducerStateManager::new(HOUR);
    reserve(&mut s, batch(3, 1, 0, 2), 0);
    assert!(matches!(
        s.check_and_reserve(&batch(3, 0, 2, 1), 2, 0),
        Err(ProducerStateError::InvalidProducerEpoch {
            epoch: 0,
            current: 1,
            ..
        })
    ));
    // New epoch with a non-zero sequence: out of order.
    assert!(matches!(
        s.check_and_reserve(&batch(3, 2, 2, 1), 2, 0),
        Err(ProducerStateError::OutOfOrderSequence { .. })
    ));
    // New epoch from 0: accepted, old batches forgotten.
    reserve(&mut s, batch(3, 2, 0, 1), 2);
    let e = s.entry(3).unwrap();
    assert_eq!((e.epoch, e.batches.len()), (2, 1));
    // The old epoch is now fenced, even for what was a duplicate.
    assert!(matches!(
        s.check_and_reserve(&batch(3, 1, 0, 2), 3, 0),
        Err(ProducerStateError::InvalidProducerEpoch { .. })
    ));
}

#[test]
fn sequences_wrap_at_i32_max() {
    assert_eq!(increment_sequence(i32::MAX, 1), 0);
    assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
    assert_eq!(increment_sequence(5, 3), 8);
    let mut s = ProducerStateManager::new(HOUR);
    s.apply_from_log(&header_for(2, 0, i32::MAX - 9, 8, 100));
    assert_eq!(s.entry(2).unwrap().last_seq(), Some(i32::MAX - 2));
    // Batch spanning the wrap: MAX-1, MAX, 0.
    let b = batch(2, 0, i32::MAX - 1, 3);
    assert_eq!(b.last_seq, 0);
    assert!(matches!(reserve(&mut s, b, 108), AppendCheck::Reserved(_)));
    assert!(s
        .check_and_reserve(&batch(2, 0, 2, 1), 111, 10_000)
        .is_err());
    assert!(matches!(
        reserve(&mut s, batch(2, 0, 1, 1), 111),
        AppendCheck::Reserved(_)
    ));
    // And a batch that starts right at 0 after MAX.
    let mut s = ProducerStateManager::new(HOUR);
    s.apply_from_log(&header_for(4, 0, i32::MAX, 1, 0));
    assert!(matches!(
        reserve(&mut s, batch(4, 0, 0, 1), 1),
        AppendCheck::Reserved(_)
    ));
}

#[test]
fn cancel_rolls_a_failed_reservation_back() {
    let mut s = ProducerStateManager::new(HOUR);
    reserve(&mut s, batch(1, 0, 0, 1), 0);
    let AppendCheck::Reserved(r) = reserve(&mut s, batch(1, 0, 1, 1), 1) else {
        panic!()
    };
    s.cancel(r);
    assert_eq!(s.entry(1).unwrap().last_seq(), Some(0));
    // The retry is then accepted as new.
    assert!(matches!(
        reserve(&mut s, batch(1, 0, 1, 1), 1),
        AppendCheck::Reserved(_)
    ));
    // A new producer's failed first batch leaves no entry.
    let AppendCheck::Reserved(r) = reserve(&mut s, batch(2, 0, 0, 1), 2) else {
        panic!()
    };
    s.cancel(r);
    assert!(s.entry(2).is_none());
}

#[test]
fn idle_producers_expire_lazily_and_by_sweep() {
    let mut s = ProducerStateManager::new(1_000);
    s.check_and_reserve(&batch(1, 0, 0, 1), 0, 10_000).unwrap();
    s.check_and_reserve(&batch(2, 0, 0, 1), 1, 10_500).unwrap();
    // Sweep at 11_000: producer 1 is idle for 1 s, producer 2 for 0.5 s.
    assert_eq!(s.remove_expired(11_000, 2), 1);
    assert!(s.entry(1).is_none() && s.entry(2).is_some());
    // Lazy: producer 2, idle past the limit, is treated as unknown (sequence must be 0).
    assert!(s.check_and_reserve(&batch(2, 0, 1, 1), 2, 20_000).is_err());
    assert!(s.entry(2).is_none());
    assert!(s.check_and_reserve(&batch(2, 0, 0, 1), 2, 20_000).is_ok());
    // A producer with a batch still in flight (past the readable end) is kept.
    assert_eq!(s.remove_expired(99_000, 2), 0);
}

fn header_for(
    pid: i64,
    epoch: i16,
    base_seq: i32,
    records: usize,
    base_offset: i64,
) -> RecordBatchHeader {
    let bytes = RecordBatchBuilder::new(5_000)
        .base_offset(base_offset)
        .producer(pid, epoch, base_seq)
        .records(records, b"v")
        .build();
    parse_header(&bytes).unwrap()
}

#[test]
fn state_is_rebuilt_from_batch_headers() {
    let mut s = ProducerStateManager::new(HOUR);
    let mut offset = 0;
    for (pid, epoch, seq, n) in [
        (1, 0, 0, 3),
        (2, 0, 0, 1),
        (1, 0, 3, 2),
        (1, 1, 0, 4),
        (2, 0, 1, 1),
    ] {
        s.apply_from_log(&header_for(pid, epoch, seq, n, offset));
        offset += n as i64;
    }
    // A batch without a producer is ignored.
    let plain = RecordBatchBuilder::new(1)
        .base_offset(offset)
        .records(2, b"x")
        .build();
    s.apply_from_log(&parse_header(&plain).unwrap());
    let one = s.entry(1).unwrap();
    assert_eq!(one.epoch, 1);
    assert_eq!(one.batches.len(), 1);
    assert_eq!(
        one.batches[0],
        BatchMetadata {
            first_seq: 0,
            last_seq: 3,
            first_offset: 6,
            last_offset: 9,
            max_timestamp: 5_000
        }
    );
    assert_eq!(s.entry(2).unwrap().last_offset(), Some(10));
    // The rebuilt state detects a retry of the last batch and takes the next one.
    assert!(matches!(
        s.check_and_reserve(&batch(1, 1, 0, 4), 12, 6_000).unwrap(),
        AppendCheck::Duplicate(BatchMetadata {
            first_offset: 6,
            ..
        })
    ));
    assert!(matches!(
        s.check_and_reserve(&batch(1, 1, 4, 1), 12, 6_000).unwrap(),
        AppendCheck::Reserved(_)
    ));
}

#[test]
fn snapshots_round_trip_and_reject_corruption() {
    let mut s = ProducerStateManager::new(HOUR);
    for i in 0..7 {
        s.apply_from_log(&header_for(1, 0, i * 2, 2, i64::from(i) * 2));
    }
    s.apply_from_log(&header_for(5, 3, 0, 1, 14));
    let data = s.encode_snapshot(15);
    let (end, back) = ProducerStateManager::decode_snapshot(&data, HOUR).unwrap();
    assert_eq!(end, 15);
    assert_eq!(back.entry(1), s.entry(1));
    assert_eq!(back.entry(5), s.entry(5));
    // Batches at or past the snapshot offset are left out.
    let (_, partial) = ProducerStateManager::decode_snapshot(&s.encode_snapshot(14), HOUR).unwrap();
    assert!(partial.entry(5).is_none());
    assert_eq!(partial.entry(1).unwrap().batches.len(), 5);
    for i in 0..data.len() {
        assert!(ProducerStateManager::decode_snapshot(&data[..i], HOUR).is_none());
        let mut flipped = data.clone();
        flipped[i] ^= 0x10;
        assert!(
            ProducerStateManager::decode_snapshot(&flipped, HOUR).is_none(),
            "flip at {i}"
        );
    }
}

/// A snapshot of two producers (one with its full five batches, one after an epoch bump),
/// captured from the encoder that predates the shared codec: snapshot files written by an
/// older build must still load.
#[test]
fn snapshot_matches_the_golden_bytes() {
    let mut s = ProducerStateManager::new(HOUR);
    for i in 0..7 {
        s.apply_from_log(&header_for(1, 0, i * 2, 2, i64::from(i) * 2));
    }
    s.apply_from_log(&header_for(1 << 40, 3, 0, 1, 14));
    s.apply_from_log(&header_for(7, 2, i32::MAX, 1, 15));
    let actual = vec![hex(&s.encode_snapshot(16)), hex(&s.encode_snapshot(15))];
    let golden = include_str!("../golden/producer_snapshot.hex");
    check_golden("producer_snapshot.hex", golden, &actual);
    for (line, end) in golden.lines().zip([16, 15]) {
        let (decoded_end, back) =
            ProducerStateManager::decode_snapshot(&unhex(line), HOUR).unwrap();
        assert_eq!(decoded_end, end);
        for pid in [1, 1 << 40, 7] {
            let expected = s.entry(pid).map(|e| {
                let mut e = e.clone();
                e.batches.retain(|b| b.last_offset < end);
                e
            });
            let expected = expected.filter(|e| !e.batches.is_empty());
            assert_eq!(
                back.entry(pid),
                expected.as_ref(),
                "producer {pid} at {end}"
            );
        }
    }
}
