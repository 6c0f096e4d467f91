//! Request frames that Kafka 4.4's parsers accept must decode here too: the
//! checks of the codec strictness audit (shards/protocol/README.md,
//! "Accepting what Kafka accepts"). Each frame is built byte by byte so the
//! quirk under test is visible.

use bytes::Bytes;
use sluice_protocol::messages::fetch::FetchRequest;
use sluice_protocol::{decode_request, encode_request, ProtocolError, RequestBody, RequestHeader};

/// Header v2 prefix: api key, version, correlation id, client id (classic
/// nullable string even in v2), then the given tagged-field section.
fn header_v2(api_key: i16, version: i16, client_id: Option<&str>, tags: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&api_key.to_be_bytes());
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&77i32.to_be_bytes());
    match client_id {
        Some(c) => {
            out.extend_from_slice(&(c.len() as i16).to_be_bytes());
            out.extend_from_slice(c.as_bytes());
        }
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
    }
    out.extend_from_slice(tags);
    out
}

/// Metadata v12 body for one topic named `name`, with `topic_tags` as the
/// topic struct's tagged fields and `tags` as the body's.
fn metadata_v12(name: &[u8], topic_tags: &[u8], tags: &[u8]) -> Vec<u8> {
    let mut out = vec![2]; // one topic
    out.extend_from_slice(&[0; 16]); // topic id: zero, look up by name
    out.push(name.len() as u8 + 1);
    out.extend_from_slice(name);
    out.extend_from_slice(topic_tags);
    out.push(1); // allow_auto_topic_creation
    out.push(0); // include_topic_authorized_operations
    out.extend_from_slice(tags);
    out
}

fn metadata_topics(body: RequestBody) -> Vec<Option<String>> {
    let RequestBody::Metadata(m) = body else {
        panic!("not Metadata: {body:?}");
    };
    m.topics
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

#[test]
fn unknown_header_tags_and_a_null_client_id_are_accepted() {
    // Two unknown header tags, out of order, one of them empty.
    let mut frame = header_v2(3, 12, None, &[2, 7, 2, 0xaa, 0xbb, 3, 0]);
    frame.extend(metadata_v12(b"t", &[0], &[0]));
    let (header, body) = decode_request(Bytes::from(frame)).expect("Kafka accepts this frame");
    assert_eq!(header.correlation_id, 77);
    assert_eq!(header.client_id, None);
    assert_eq!(metadata_topics(body), [Some("t".to_string())]);
}

#[test]
fn unknown_tags_in_nested_structs_and_the_body_are_skipped_in_any_order() {
    // Topic struct: tag 9 (1 byte), then tag 1 (empty), then tag 9 again.
    // Body: tag 4 (3 bytes), then tag 0 (empty).
    let mut frame = header_v2(3, 12, Some("c"), &[0]);
    frame.extend(metadata_v12(
        b"nested",
        &[3, 9, 1, 0, 1, 0, 9, 1, 5],
        &[2, 4, 3, 1, 2, 3, 0, 0],
    ));
    let (_, body) = decode_request(Bytes::from(frame)).expect("Kafka accepts this frame");
    assert_eq!(metadata_topics(body), [Some("nested".to_string())]);
}

#[test]
fn invalid_utf8_in_a_name_reaches_the_handler() {
    // Kafka decodes with `new String(bytes, UTF_8)`: the bad byte becomes U+FFFD
    // and the topic name is then refused by name validation, per topic.
    let mut frame = header_v2(3, 12, Some("c"), &[0]);
    frame.extend(metadata_v12(b"a\xffb", &[0], &[0]));
    let (_, body) = decode_request(Bytes::from(frame)).expect("Kafka accepts this frame");
    assert_eq!(metadata_topics(body), [Some("a\u{fffd}b".to_string())]);
}

#[test]
fn zero_length_names_decode() {
    let mut frame = header_v2(3, 12, Some(""), &[0]);
    frame.extend(metadata_v12(b"", &[0], &[0]));
    let (header, body) = decode_request(Bytes::from(frame)).expect("Kafka accepts this frame");
    assert_eq!(header.client_id.as_deref(), Some(""));
    assert_eq!(metadata_topics(body), [Some(String::new())]);
}

#[test]
fn null_where_the_schema_is_not_nullable_is_refused_as_kafka_does() {
    // Metadata v0's topic array is not nullable ("non-nullable field topics was
    // serialized as null" in Kafka); v1+ null means all topics.
    let mut v0 = header_v2(3, 0, Some("c"), &[]);
    v0.extend_from_slice(&(-1i32).to_be_bytes());
    let err = decode_request(Bytes::from(v0)).expect_err("Kafka refuses this frame");
    assert!(
        matches!(err.error, ProtocolError::InvalidValue(_)),
        "{err:?}"
    );
    let mut v1 = header_v2(3, 1, Some("c"), &[]);
    v1.extend_from_slice(&(-1i32).to_be_bytes());
    let (_, body) = decode_request(Bytes::from(v1)).expect("null topics at v1");
    let RequestBody::Metadata(m) = body else {
        panic!("not Metadata");
    };
    assert_eq!(m.topics, None);
    // An empty compact array is an empty list, not null.
    let mut empty = header_v2(3, 12, Some("c"), &[0]);
    empty.extend_from_slice(&[1, 1, 0, 0]);
    let (_, body) = decode_request(Bytes::from(empty)).expect("empty topics");
    let RequestBody::Metadata(m) = body else {
        panic!("not Metadata");
    };
    assert_eq!(m.topics, Some(vec![]));
}

#[test]
fn a_known_tag_with_bytes_left_inside_its_size_is_read() {
    // Fetch v15's body ends with its tagged fields; with no cluster id and no
    // replica state they are the single byte 0. Replace them by tag 0
    // (ClusterId) whose declared size (4) is longer than its value (2).
    let request = FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        ..FetchRequest::default()
    };
    let header = RequestHeader {
        api_key: 1,
        api_version: 15,
        correlation_id: 5,
        client_id: Some("c".into()),
    };
    let mut frame = encode_request(&header, &RequestBody::Fetch(request)).to_vec();
    assert_eq!(frame.pop(), Some(0), "empty tagged fields end the body");
    frame.extend_from_slice(&[1, 0, 4, 2, b'x', 0xde, 0xad]);
    let (_, body) = decode_request(Bytes::from(frame).slice(4..)).expect("Kafka accepts this");
    let RequestBody::Fetch(fetch) = body else {
        panic!("not Fetch");
    };
    assert_eq!(fetch.cluster_id.as_deref(), Some("x"));
    assert_eq!(fetch.max_wait_ms, 500);
}

#[test]
fn api_versions_from_the_future_keeps_its_header() {
    // ApiVersions v9 (unknown) with header tags and a body we cannot know:
    // Kafka does not parse it and answers UNSUPPORTED_VERSION in v0, so the
    // header must come back with the error.
    let mut frame = header_v2(18, 9, Some("future"), &[1, 3, 1, 0xff]);
    frame.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let err = decode_request(Bytes::from(frame)).expect_err("not a version we serve");
    let header = err.header.clone().expect("the header parsed");
    assert_eq!(
        (header.api_key, header.api_version, header.correlation_id),
        (18, 9, 77)
    );
    assert!(
        matches!(
            err.error,
            ProtocolError::UnsupportedVersion {
                api_key: 18,
                api_version: 9
            }
        ),
        "{err:?}"
    );
}
