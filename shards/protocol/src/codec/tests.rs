use super::*;

fn dec(raw: &[u8]) -> Decoder {
    Decoder::new(Bytes::copy_from_slice(raw))
}

#[test]
fn varints_match_kafka_examples() {
    // Values from Kafka's ByteUtilsTest / the protobuf spec.
    let mut e = Encoder::new();
    e.put_unsigned_varint(300);
    assert_eq!(e.as_slice(), &[0xac, 0x02]);
    let mut e = Encoder::new();
    e.put_varint(-1);
    assert_eq!(e.as_slice(), &[0x01]);
    let mut e = Encoder::new();
    e.put_varint(i32::MIN);
    assert_eq!(e.as_slice(), &[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff, 0x0f]).varint(), Ok(i32::MIN));
    for v in [0i64, 1, -1, 63, -64, 64, i64::MAX, i64::MIN] {
        let mut e = Encoder::new();
        e.put_varlong(v);
        assert_eq!(dec(e.as_slice()).varlong(), Ok(v));
    }
}

#[test]
fn overlong_varints_are_rejected() {
    // Kafka's readUnsignedVarint keeps the low 4 bits of a fifth byte and
    // drops the rest; only a continuation bit on it is an error.
    assert_eq!(
        dec(&[0xff, 0xff, 0xff, 0xff, 0x7f]).unsigned_varint(),
        Ok(u32::MAX)
    );
    assert_eq!(
        dec(&[0x81, 0x80, 0x80, 0x80, 0x10]).unsigned_varint(),
        Ok(1)
    );
    assert_eq!(
        dec(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).unsigned_varlong(),
        Ok(u64::MAX)
    );
    assert_eq!(
        dec(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).unsigned_varint(),
        Err(ProtocolError::InvalidVarint)
    );
    assert!(dec(&[0x80]).unsigned_varint().is_err());
    assert!(dec(&[0xff; 11]).varlong().is_err());
}

#[test]
fn strings_and_nulls() {
    assert_eq!(dec(&[0, 2, b'h', b'i']).string(false), Ok("hi".into()));
    assert_eq!(dec(&[3, b'h', b'i']).string(true), Ok("hi".into()));
    assert_eq!(dec(&[0xff, 0xff]).nullable_string(false), Ok(None));
    assert_eq!(dec(&[0]).nullable_string(true), Ok(None));
    assert!(dec(&[0xff, 0xff]).string(false).is_err());
    // Kafka decodes strings leniently (`new String(bytes, UTF_8)`).
    assert_eq!(dec(&[0, 1, 0xff]).string(false), Ok("\u{fffd}".into()));
    assert_eq!(
        dec(&[4, b'a', 0xc3, b'b']).string(true),
        Ok("a\u{fffd}b".into())
    );
    assert_eq!(dec(&[1]).string(true), Ok(String::new()));
    assert_eq!(dec(&[0, 0]).string(false), Ok(String::new()));
    assert_eq!(
        dec(&[0, 5, b'a']).string(false),
        Err(ProtocolError::InvalidLength(5))
    );
}

#[test]
fn bytes_are_zero_copy() {
    let frame = Bytes::from_static(&[0, 0, 0, 3, 7, 8, 9, 1]);
    let mut d = Decoder::new(frame.clone());
    let b = d.nullable_bytes(false).unwrap().unwrap();
    assert_eq!(&b[..], &[7, 8, 9]);
    assert_eq!(b.as_ptr(), frame[4..].as_ptr());
    assert_eq!(d.remaining(), 1);
    assert_eq!(d.finish(), Err(ProtocolError::TrailingBytes));
}

#[test]
fn array_len_rejects_more_elements_than_bytes() {
    assert_eq!(
        dec(&[0x7f, 0xff, 0xff, 0xff]).array_len(false),
        Err(ProtocolError::InvalidLength(i32::MAX as i64))
    );
    assert_eq!(dec(&[0xff, 0xff, 0xff, 0xff]).array_len(false), Ok(None));
    assert_eq!(dec(&[0]).array_len(true), Ok(None));
    assert_eq!(dec(&[2, 9]).array_len(true), Ok(Some(1)));
    assert!(dec(&[3, 9]).array_len(true).is_err());
}

#[test]
fn tagged_fields_skip_unknown_and_read_known() {
    // Two fields: tag 0 = int32 7, tag 5 = 3 opaque bytes.
    let raw = [2, 0, 4, 0, 0, 0, 7, 5, 3, 1, 2, 3];
    let mut d = dec(&raw);
    let mut seen = None;
    d.read_tagged_fields(|tag, f| {
        if tag == 0 {
            seen = Some(f.i32()?);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, Some(7));
    assert_eq!(d.remaining(), 0);
    assert!(dec(&[1, 0, 5, 1]).tagged_fields().is_err());
    assert!(dec(&[100]).tagged_fields().is_err());
}

#[test]
fn encoder_round_trips_primitives() {
    let mut e = Encoder::new();
    e.put_i8(-2);
    e.put_i16(-300);
    e.put_i32(70000);
    e.put_i64(-5);
    e.put_u16(65000);
    e.put_u32(4_000_000_000);
    e.put_u64(u64::MAX - 1);
    e.put_f64(1.5);
    e.put_bool(true);
    e.put_uuid(Uuid::from_u128(42));
    e.put_nullable_string(None, true);
    e.put_nullable_bytes(Some(b"xy"), true);
    let mut tags = TaggedFields::new();
    tags.add(3, |e| e.put_i16(9));
    tags.add(1, |e| e.put_bool(true));
    e.put_tagged_fields(tags);
    let mut d = Decoder::new(e.into_inner().freeze());
    assert_eq!(d.i8(), Ok(-2));
    assert_eq!(d.i16(), Ok(-300));
    assert_eq!(d.i32(), Ok(70000));
    assert_eq!(d.i64(), Ok(-5));
    assert_eq!(d.u16(), Ok(65000));
    assert_eq!(d.u32(), Ok(4_000_000_000));
    assert_eq!(d.u64(), Ok(u64::MAX - 1));
    assert_eq!(d.f64(), Ok(1.5));
    assert_eq!(d.bool(), Ok(true));
    assert_eq!(d.uuid(), Ok(Uuid::from_u128(42)));
    assert_eq!(d.nullable_string(true), Ok(None));
    assert_eq!(d.bytes(true).unwrap(), Bytes::from_static(b"xy"));
    let mut tags = Vec::new();
    d.read_tagged_fields(|t, _| {
        tags.push(t);
        Ok(())
    })
    .unwrap();
    assert_eq!(tags, vec![1, 3]);
    d.finish().unwrap();
}

#[test]
fn oversize_strings_are_truncated_not_corrupted() {
    let long = "é".repeat(20_000); // 40000 bytes
    let mut e = Encoder::new();
    e.put_string(&long, false);
    let s = Decoder::new(e.into_inner().freeze()).string(false).unwrap();
    assert_eq!(s.len(), 32766);
}

#[test]
fn compact_lengths_are_java_ints() {
    // A varint of 2^31 or more is a negative Java int: minus one it is a null
    // length, as Kafka reads it, not a huge one.
    let huge = [0x80, 0x80, 0x80, 0x80, 0x08];
    assert_eq!(dec(&huge).nullable_string(true), Ok(None));
    assert_eq!(dec(&huge).array_len(true), Ok(None));
    assert_eq!(dec(&huge).nullable_bytes(true), Ok(None));
    assert!(dec(&huge).string(true).is_err());
    // Compact strings longer than i16::MAX are refused, as in Kafka, even when
    // the frame holds them.
    let mut long = vec![0x81, 0x80, 0x02]; // 32769 - 1 = 32768 bytes
    long.extend(std::iter::repeat_n(b'a', 32768));
    assert_eq!(
        dec(&long).string(true),
        Err(ProtocolError::InvalidLength(32768))
    );
    let mut max = vec![0x80, 0x80, 0x02]; // 32768 - 1 = 32767 bytes
    max.extend(std::iter::repeat_n(b'a', 32767));
    assert_eq!(dec(&max).string(true).map(|s| s.len()), Ok(32767));
}

#[test]
fn lossy_strings_allocate_exactly() {
    let bad = [0xff; 100];
    let s = lossy_utf8(&bad);
    assert_eq!(s.chars().count(), 100);
    assert_eq!(s.len(), 300);
    assert_eq!(s.capacity(), 300);
    assert_eq!(lossy_utf8("héllo".as_bytes()), "héllo");
}

#[test]
fn tagged_fields_may_repeat_and_come_out_of_order() {
    // Kafka's generated readers loop over the fields without checking order or
    // duplicates; a repeated known tag overwrites the earlier value.
    let raw = [3, 5, 1, 9, 0, 4, 0, 0, 0, 1, 0, 4, 0, 0, 0, 2];
    let mut last = None;
    let mut tags = Vec::new();
    dec(&raw)
        .read_tagged_fields(|tag, f| {
            tags.push(tag);
            if tag == 0 {
                last = Some(f.i32()?);
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(tags, [5, 0, 0]);
    assert_eq!(last, Some(2));
}

#[test]
fn exact_utf8_refuses_malformed_strings_and_truncation() {
    let mut d = Decoder::from_slice(b"ok\xff");
    assert_eq!(d.utf8_exact(2).unwrap(), "ok");
    assert!(matches!(
        d.utf8_exact(1),
        Err(ProtocolError::InvalidValue(_))
    ));
    let mut d = Decoder::from_slice(b"ab");
    assert!(matches!(
        d.utf8_exact(3),
        Err(ProtocolError::Truncated { .. })
    ));
}

/// An owned input reads every field as a shared one does, at the same positions, and hands
/// out byte fields as disjoint pieces: writing one leaves the others and the rest unread.
#[test]
fn an_owned_input_reads_as_a_shared_one_and_splits_disjoint_pieces() {
    let mut e = Encoder::new();
    e.put_i32(7);
    e.put_nullable_bytes(Some(b"first"), false);
    e.put_i16(-2);
    e.put_nullable_bytes(Some(b"second"), true);
    e.put_nullable_bytes(None, false);
    e.put_i64(42);
    let raw = e.as_slice().to_vec();
    let mut shared = dec(&raw);
    let held = crate::frame_bytes_held();
    let mut owned = Decoder::owned(bytes::BytesMut::from(&raw[..]));
    assert_eq!(crate::frame_bytes_held(), held + raw.len());
    assert_eq!(shared.i32(), owned.i32());
    assert_eq!(shared.position(), owned.position());
    let a = shared.nullable_records(false).unwrap().unwrap();
    let mut b = owned.nullable_records(false).unwrap().unwrap();
    assert!(!a.is_owned() && b.is_owned());
    assert_eq!(&a[..], b"first");
    assert_eq!(&b[..], b"first");
    assert_eq!(shared.position(), owned.position());
    assert_eq!(shared.i16(), owned.i16());
    assert_eq!(shared.rest(), owned.rest());
    let c = owned.nullable_bytes(true).unwrap().unwrap();
    assert_eq!(shared.nullable_bytes(true).unwrap().unwrap(), c);
    if let MemoryRecords::Owned(piece, _) = &mut b {
        piece[0] = b'F';
    }
    assert_eq!(&b[..], b"First");
    assert_eq!(&c[..], b"second");
    assert_eq!(shared.nullable_bytes(false), Ok(None));
    assert_eq!(owned.nullable_records(false), Ok(None));
    assert_eq!(shared.i64(), owned.i64());
    assert_eq!(shared.position(), raw.len());
    assert_eq!(owned.position(), raw.len());
    assert!(owned.finish().is_ok());
    // The frame stays counted while any piece of it is alive.
    drop(owned);
    assert_eq!(crate::frame_bytes_held(), held + raw.len());
    drop(b);
    assert_eq!(crate::frame_bytes_held(), held);
    // A length past the input is refused the same way.
    let short = [0u8, 0, 0, 9, 1];
    let refused = dec(&short).nullable_records(false);
    assert!(refused.is_err());
    assert_eq!(
        Decoder::owned(bytes::BytesMut::from(&short[..])).nullable_records(false),
        refused
    );
}
