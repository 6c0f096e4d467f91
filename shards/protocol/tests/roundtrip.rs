//! Encode→decode round trips for every supported API and version.

mod common;

use bytes::Bytes;
use common::{all_versions, request, response};
use sluice_protocol::messages::api_versions::ApiVersionsResponse;
use sluice_protocol::{
    decode_request, decode_response, encode_request, encode_response, ApiKey, Decoder, Encoder,
    ErrorCode, FileRegion, ProtocolError, RequestBody, RequestHeader, ResponseBody, Segment,
};

fn body_of(frame: bytes::BytesMut) -> Bytes {
    let frame = frame.freeze();
    let size = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
    assert_eq!(size as usize, frame.len() - 4, "size prefix");
    frame.slice(4..)
}

#[test]
fn requests_round_trip_every_version() {
    let mut n = 0;
    for (key, v) in all_versions() {
        let body = request(key, v);
        let mut e = Encoder::new();
        body.encode(&mut e, v);
        let mut d = Decoder::new(e.into_inner().freeze());
        let back =
            RequestBody::decode(&mut d, key, v).unwrap_or_else(|e| panic!("{key:?} v{v}: {e}"));
        d.finish().unwrap();
        assert_eq!(back, body, "{key:?} v{v}");

        let header = RequestHeader {
            api_key: key.as_i16(),
            api_version: v,
            correlation_id: 1000 + i32::from(v),
            client_id: Some("roundtrip".into()),
        };
        let frame = body_of(encode_request(&header, &body));
        let (h2, b2) = decode_request(frame).unwrap_or_else(|e| panic!("{key:?} v{v}: {e}"));
        assert_eq!((h2, b2), (header, body), "{key:?} v{v} frame");
        n += 1;
    }
    // CreatePartitions 0-3, ApiVersions 0-5, Metadata 0-13, Produce 3-13, Fetch 4-18,
    // ListOffsets 1-11, CreateTopics 2-7, DeleteTopics 1-6, DescribeCluster 0-2,
    // InitProducerId 0-5, DescribeConfigs 1-4, AlterConfigs 0-2, IncrementalAlterConfigs 0-1,
    // DeleteRecords 0-2; then the group APIs: OffsetCommit 2-9, OffsetFetch 1-9,
    // FindCoordinator 0-6, JoinGroup 0-9, Heartbeat 0-4, LeaveGroup 0-5, SyncGroup 0-5,
    // DescribeGroups 0-6, ListGroups 0-5, DeleteGroups 0-3, OffsetDelete 0; DescribeLogDirs
    // 1-5, DescribeProducers 0, DescribeTopicPartitions 0; DescribeQuorum 0-2, UpdateFeatures 0-2,
    // ElectLeaders 0-2; AlterPartitionReassignments 0-1, ListPartitionReassignments 0.
    assert_eq!(
        n,
        4 + 6
            + 14
            + 11
            + 15
            + 11
            + 6
            + 6
            + 3
            + 6
            + 4
            + 3
            + 2
            + 3
            + 8
            + 9
            + 7
            + 10
            + 5
            + 6
            + 6
            + 7
            + 6
            + 4
            + 1
            + 5
            + 1
            + 1
            + 3
            + 3
            + 3
            + 2
            + 1
    );
}

#[test]
fn responses_round_trip_every_version() {
    for (key, v) in all_versions() {
        let body = response(key, v);
        let frame = body_of(encode_response(77, key.as_i16(), v, &body));
        let (h, back) =
            decode_response(frame, key.as_i16(), v).unwrap_or_else(|e| panic!("{key:?} v{v}: {e}"));
        assert_eq!(h.correlation_id, 77);
        assert_eq!(back, body, "{key:?} v{v}");
    }
}

#[test]
fn record_fields_are_zero_copy_slices_of_the_frame() {
    let body = request(ApiKey::Produce, 9);
    let header = RequestHeader {
        api_key: 0,
        api_version: 9,
        correlation_id: 1,
        client_id: None,
    };
    let frame = body_of(encode_request(&header, &body));
    let range = frame.as_ptr_range();
    let (_, decoded) = decode_request(frame.clone()).unwrap();
    let RequestBody::Produce(p) = decoded else {
        panic!("not produce")
    };
    let records = p.topic_data[0].partition_data[0].records.clone().unwrap();
    assert!(range.contains(&records.as_ptr()));
}

#[test]
fn unsupported_and_unknown_keep_the_header() {
    // Fetch v3 (dropped in Kafka 4), an undefined API key 999 and OffsetCommit v10
    // (topic ids, above our cap).
    for (key, version, want) in [
        (
            1i16,
            3i16,
            ProtocolError::UnsupportedVersion {
                api_key: 1,
                api_version: 3,
            },
        ),
        (999, 0, ProtocolError::UnknownApiKey(999)),
        (
            8,
            10,
            ProtocolError::UnsupportedVersion {
                api_key: 8,
                api_version: 10,
            },
        ),
    ] {
        let mut e = Encoder::new();
        RequestHeader {
            api_key: key,
            api_version: version,
            correlation_id: 5,
            client_id: Some("c".into()),
        }
        .encode(&mut e);
        e.put_raw(&[1, 2, 3]);
        let err = decode_request(e.into_inner().freeze()).unwrap_err();
        assert_eq!(err.error, want);
        assert_eq!(err.header.unwrap().correlation_id, 5);
    }
    let err = decode_request(Bytes::from_static(&[0, 18, 0])).unwrap_err();
    assert!(err.header.is_none());
}

/// Kafka's request parsers read the fields of the version and ignore what follows; so does
/// Sluice (a client adding bytes must not be cut off where Kafka serves it).
#[test]
fn trailing_bytes_after_a_request_body_are_ignored() {
    let header = RequestHeader {
        api_key: 60,
        api_version: 0,
        correlation_id: 1,
        client_id: None,
    };
    let body = request(ApiKey::DescribeCluster, 0);
    let mut frame = encode_request(&header, &body);
    frame.extend_from_slice(&[0, 1, 2]);
    let (h, b) = decode_request(body_of_unchecked(frame)).expect("decoded");
    assert_eq!((h, b), (header, body));
}

fn body_of_unchecked(frame: bytes::BytesMut) -> Bytes {
    frame.freeze().slice(4..)
}

#[test]
fn too_new_api_versions_gets_v0_unsupported_version_answer() {
    // A client probing with ApiVersions v9: answer is header v0 + body v0.
    let body = ResponseBody::ApiVersions(ApiVersionsResponse::unsupported_version());
    let frame = body_of(encode_response(3, 18, 9, &body));
    let (h, back) = decode_response(frame.clone(), 18, 0).unwrap();
    assert_eq!(h.correlation_id, 3);
    let ResponseBody::ApiVersions(r) = back else {
        panic!("not api versions")
    };
    assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_VERSION.0);
    assert!(r
        .api_keys
        .iter()
        .any(|k| k.api_key == 18 && k.max_version == 5));
    // v0 layout: correlation id, error code, non-compact array length.
    assert_eq!(&frame[4..6], &[0, 35]);
    assert_eq!(&frame[6..10], &(r.api_keys.len() as i32).to_be_bytes());
}

#[test]
fn metadata_v0_empty_topics_means_all() {
    let all = sluice_protocol::messages::metadata::MetadataRequest::default();
    let mut e = Encoder::new();
    all.encode(&mut e, 0);
    assert_eq!(e.as_slice(), &[0, 0, 0, 0]);
    let back = sluice_protocol::messages::metadata::MetadataRequest::decode(
        &mut Decoder::new(e.into_inner().freeze()),
        0,
    )
    .unwrap();
    assert_eq!(back.topics, None);
}

#[test]
fn vectored_encoding_matches_contiguous_and_shares_record_buffers() {
    for (key, v) in [
        (ApiKey::Fetch, 4),
        (ApiKey::Fetch, 12),
        (ApiKey::Fetch, 17),
        (ApiKey::Fetch, 18),
    ] {
        let body = response(key, v);
        let flat = encode_response(9, key.as_i16(), v, &body);
        let segments = sluice_protocol::encode_response_vectored(9, key.as_i16(), v, &body);
        assert_eq!(concat(&segments), &flat[..], "{key:?} v{v}");
        let ResponseBody::Fetch(f) = &body else {
            panic!("not fetch")
        };
        let records = f.responses[0].partitions[0].records.as_ref().unwrap();
        assert!(segments
            .iter()
            .any(|s| matches!(s, Segment::Bytes(b) if b.as_ptr() == records.as_ptr())));
    }
    for v in [3, 9, 11, 12, 13] {
        let body = request(ApiKey::Produce, v);
        let header = RequestHeader {
            api_key: 0,
            api_version: v,
            correlation_id: 1,
            client_id: Some("gen".into()),
        };
        let flat = encode_request(&header, &body);
        let segments = sluice_protocol::encode_request_vectored(&header, &body);
        assert_eq!(concat(&segments), &flat[..], "produce v{v}");
        assert!(segments.len() > 2);
    }
}

/// The segments' bytes in order, file regions read in.
fn concat(segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in segments {
        match s {
            Segment::Bytes(b) => out.extend_from_slice(b),
            Segment::File(f) => out.extend_from_slice(&f.read_to_bytes().expect("read region")),
        }
    }
    out
}

/// A Fetch answer whose records are a file region encodes, vectored, to the same bytes as the
/// same records in memory, with the region as a segment of its own; a one-buffer encoder
/// reads the region in.
#[test]
fn records_from_a_file_region_encode_as_the_same_bytes() {
    let path = std::env::temp_dir().join(format!("sluice-region-{}", std::process::id()));
    for v in [4, 12, 17] {
        let body = response(ApiKey::Fetch, v);
        let ResponseBody::Fetch(mut f) = body.clone() else {
            panic!("not fetch")
        };
        let records = f.responses[0].partitions[0].records.take().unwrap();
        let mut file_bytes = b"head".to_vec();
        file_bytes.extend_from_slice(&records);
        std::fs::write(&path, &file_bytes).expect("write");
        let fd = std::sync::Arc::new(std::os::fd::OwnedFd::from(
            std::fs::File::open(&path).expect("open"),
        ));
        let region = FileRegion::new(fd, 4, records.len());
        f.responses[0].partitions[0].records_file = Some(region.clone());
        let from_file = ResponseBody::Fetch(f);
        let flat = encode_response(9, ApiKey::Fetch.as_i16(), v, &body);
        let segments =
            sluice_protocol::encode_response_vectored(9, ApiKey::Fetch.as_i16(), v, &from_file);
        assert_eq!(concat(&segments), &flat[..], "fetch v{v}");
        assert!(segments.contains(&Segment::File(region)));
        let one_buffer = encode_response(9, ApiKey::Fetch.as_i16(), v, &from_file);
        assert_eq!(&one_buffer[..], &flat[..], "fetch v{v}, one buffer");
    }
    std::fs::remove_file(&path).expect("cleanup");
}

/// A Fetch answer whose records are pieces (the tail cache's appends) encodes, vectored, to
/// the same bytes as the same records in one buffer, each piece a segment of its own (not
/// copied); a one-buffer encoder copies them in.
#[test]
fn records_in_pieces_encode_as_the_same_bytes() {
    for v in [4, 12, 17] {
        let body = response(ApiKey::Fetch, v);
        let ResponseBody::Fetch(mut f) = body.clone() else {
            panic!("not fetch")
        };
        let records = f.responses[0].partitions[0].records.take().unwrap();
        assert!(records.len() > 2, "the sample answer has records to split");
        let cut = records.len() / 3;
        let pieces = vec![
            records.slice(..cut),
            records.slice(cut..2 * cut),
            Bytes::new(),
            records.slice(2 * cut..),
        ];
        f.responses[0].partitions[0].records_pieces = pieces.clone();
        assert_eq!(
            f.responses[0].partitions[0].records_len(),
            records.len(),
            "fetch v{v}"
        );
        let in_pieces = ResponseBody::Fetch(f);
        let flat = encode_response(9, ApiKey::Fetch.as_i16(), v, &body);
        let segments =
            sluice_protocol::encode_response_vectored(9, ApiKey::Fetch.as_i16(), v, &in_pieces);
        assert_eq!(concat(&segments), &flat[..], "fetch v{v}");
        for piece in pieces.iter().filter(|p| !p.is_empty()) {
            // The same bytes, not a copy: the segment points at the piece's memory.
            assert!(
                segments.iter().any(|s| matches!(s, Segment::Bytes(b) if b.as_ptr() == piece.as_ptr() && b.len() == piece.len())),
                "fetch v{v}: a piece is its own segment"
            );
        }
        let one_buffer = encode_response(9, ApiKey::Fetch.as_i16(), v, &in_pieces);
        assert_eq!(&one_buffer[..], &flat[..], "fetch v{v}, one buffer");
    }
}
