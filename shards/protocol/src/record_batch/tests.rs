use super::*;
use bytes::{Bytes, BytesMut};

fn batch(n: usize) -> Bytes {
    RecordBatchBuilder::new(1_700_000_000_000)
        .base_offset(100)
        .producer(7, 1, 0)
        .records(n, b"value")
        .build()
}

#[test]
fn crc32c_is_castagnoli() {
    assert_eq!(crate::crc::crc32c(b"123456789"), 0xe306_9283);
}

#[test]
fn builder_matches_hand_encoded_batch() {
    let built = RecordBatchBuilder::new(5).record(None, Some(b"v")).build();
    let mut expected = Vec::new();
    expected.extend_from_slice(&0i64.to_be_bytes()); // base_offset
    expected.extend_from_slice(&57i32.to_be_bytes()); // 49 + 8 record bytes
    expected.extend_from_slice(&(-1i32).to_be_bytes()); // leader epoch
    expected.push(2); // magic
    expected.extend_from_slice(&[0, 0, 0, 0]); // crc placeholder
    expected.extend_from_slice(&0i16.to_be_bytes()); // attributes
    expected.extend_from_slice(&0i32.to_be_bytes()); // last_offset_delta
    expected.extend_from_slice(&5i64.to_be_bytes()); // base_timestamp
    expected.extend_from_slice(&5i64.to_be_bytes()); // max_timestamp
    expected.extend_from_slice(&(-1i64).to_be_bytes()); // producer_id
    expected.extend_from_slice(&(-1i16).to_be_bytes()); // producer_epoch
    expected.extend_from_slice(&(-1i32).to_be_bytes()); // base_sequence
    expected.extend_from_slice(&1i32.to_be_bytes()); // records_count
                                                     // length 7 (zigzag 14), attrs, ts delta, offset delta, key -1 (zigzag 1),
                                                     // value len 1 (zigzag 2), 'v', no headers.
    expected.extend_from_slice(&[0x0e, 0, 0, 0, 0x01, 0x02, b'v', 0]);
    let crc = crate::crc::crc32c(&expected[21..]);
    expected[17..21].copy_from_slice(&crc.to_be_bytes());
    assert_eq!(&built[..], &expected[..]);
}

#[test]
fn valid_batches_validate() {
    for n in [0, 1, 3, 100] {
        let b = batch(n);
        let h = validate_batch(&b).unwrap();
        assert_eq!(h.records_count, n as i32);
        assert_eq!(h.base_offset, 100);
        assert_eq!(h.size_bytes(), b.len());
        assert_eq!(h.compression(), Compression::None);
        assert!(!h.is_control() && !h.is_transactional() && !h.timestamp_type_log_append());
        assert_eq!(h.producer_id, 7);
        if n > 0 {
            assert_eq!(h.last_offset(), 100 + n as i64 - 1);
            validate_produce_batch(&b).unwrap();
        }
    }
    assert_eq!(
        validate_produce_batch(&batch(0)),
        Err(RecordBatchError::InvalidRecordsCount(0))
    );
}

#[test]
fn every_bit_flip_is_detected() {
    let original = batch(3);
    // base_offset (0..8) and partition_leader_epoch (12..16) are outside the CRC
    // by design: the broker rewrites them on append.
    let unprotected = |byte: usize| byte < 8 || (12..16).contains(&byte);
    for bit in 0..original.len() * 8 {
        let byte = bit / 8;
        let mut m = original.to_vec();
        m[byte] ^= 1 << (bit % 8);
        let r = validate_batch(&m);
        if unprotected(byte) {
            assert!(r.is_ok(), "bit {bit}");
        } else {
            assert!(r.is_err(), "bit {bit} flip went unnoticed");
        }
    }
}

#[test]
fn header_rules() {
    let mut m = batch(2).to_vec();
    m[16] = 1;
    assert_eq!(validate_batch(&m), Err(RecordBatchError::InvalidMagic(1)));
    let mut m = batch(2).to_vec();
    m[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert_eq!(
        validate_batch(&m),
        Err(RecordBatchError::InvalidBatchLength(10))
    );
    let b = batch(2);
    assert!(matches!(
        validate_batch(&b[..b.len() - 1]),
        Err(RecordBatchError::Truncated { .. })
    ));
    assert!(matches!(
        parse_header(&b[..60]),
        Err(RecordBatchError::Truncated { .. })
    ));
    // Unknown codec and bad offset range, with the CRC fixed up so only the rule fires.
    let fix = |m: &mut Vec<u8>| {
        let crc = crate::crc::crc32c(&m[21..]);
        m[17..21].copy_from_slice(&crc.to_be_bytes());
    };
    let mut m = batch(2).to_vec();
    m[22] |= 5;
    fix(&mut m);
    assert_eq!(
        validate_batch(&m),
        Err(RecordBatchError::UnknownCompression(5))
    );
    let mut m = batch(3).to_vec();
    m[23..27].copy_from_slice(&1i32.to_be_bytes());
    fix(&mut m);
    assert!(matches!(
        validate_batch(&m),
        Err(RecordBatchError::InvalidOffsetRange { .. })
    ));
    let mut m = batch(3).to_vec();
    m[57..61].copy_from_slice(&(-1i32).to_be_bytes());
    fix(&mut m);
    assert_eq!(
        validate_batch(&m),
        Err(RecordBatchError::InvalidRecordsCount(-1))
    );
}

#[test]
fn iterates_concatenated_batches_and_flags_torn_tail() {
    let (a, b, c) = (batch(1), batch(2), batch(3));
    let mut all = BytesMut::new();
    all.extend_from_slice(&a);
    all.extend_from_slice(&b);
    all.extend_from_slice(&c[..c.len() - 5]);
    let all = all.freeze();
    let mut it = RecordBatches::new(all.clone());
    let (h1, s1) = it.next().unwrap().unwrap();
    assert_eq!((h1.records_count, &s1[..]), (1, &a[..]));
    assert_eq!(s1.as_ptr(), all.as_ptr()); // zero-copy
    let (h2, s2) = it.next().unwrap().unwrap();
    assert_eq!((h2.records_count, &s2[..]), (2, &b[..]));
    assert_eq!(it.position(), a.len() + b.len());
    assert!(matches!(
        it.next(),
        Some(Err(RecordBatchError::Truncated { .. }))
    ));
    assert!(it.next().is_none());
    // A tail too short to hold even the length field is also Truncated.
    let mut it = RecordBatches::new(all.slice(..a.len() + 7));
    assert!(it.next().unwrap().is_ok());
    assert!(matches!(
        it.next(),
        Some(Err(RecordBatchError::Truncated { .. }))
    ));
    assert_eq!(RecordBatches::new(Bytes::new()).count(), 0);
}

#[test]
fn mutators_keep_batch_valid() {
    let mut m = batch(4).to_vec();
    set_base_offset(&mut m, 9_000).unwrap();
    set_partition_leader_epoch(&mut m, 12).unwrap();
    set_max_timestamp_and_log_append_time(&mut m, 1_800_000_000_000).unwrap();
    let h = validate_batch(&m).unwrap();
    assert_eq!(h.base_offset, 9_000);
    assert_eq!(h.partition_leader_epoch, 12);
    assert_eq!(h.max_timestamp, 1_800_000_000_000);
    assert!(h.timestamp_type_log_append());
    assert!(set_base_offset(&mut [0u8; 4], 1).is_err());
    assert!(set_max_timestamp_and_log_append_time(&mut m[..70], 1).is_err());
}
