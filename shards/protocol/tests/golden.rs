//! Hand-assembled byte vectors, derived from the Kafka schemas field by field,
//! to catch mistakes that a symmetric encoder/decoder pair would hide.

use bytes::{Bytes, BytesMut};
use sluice_protocol::messages::api_versions::{
    ApiVersion, ApiVersionsRequest, ApiVersionsResponse,
};
use sluice_protocol::messages::metadata::{MetadataRequest, MetadataRequestTopic};
use sluice_protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use sluice_protocol::{
    decode_request, decode_request_owned, encode_request, encode_response, MemoryRecords,
    RecordBatchBuilder, RequestBody, RequestHeader, ResponseBody, Uuid,
};

/// Prepends the 4-byte size.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

fn check_request(expected_frame: Vec<u8>, header: RequestHeader, body: RequestBody) {
    let encoded = encode_request(&header, &body);
    assert_eq!(&encoded[..], &expected_frame[..], "encode");
    let owned = BytesMut::from(&expected_frame[4..]);
    let (h, b) = decode_request(Bytes::from(expected_frame).slice(4..)).expect("decode");
    assert_eq!((h, b), (header.clone(), body.clone()), "decode");
    // The broker's decode of a frame it owns: the same request, Produce records writable.
    let (h, b) = decode_request_owned(owned).expect("decode owned");
    assert_eq!((h, shared_records(b)), (header, body), "decode owned");
}

/// An owned decode's body with its Produce records (checked owned) made shared, to compare
/// with the shared decode's.
fn shared_records(body: RequestBody) -> RequestBody {
    let RequestBody::Produce(mut r) = body else {
        return body;
    };
    for p in r
        .topic_data
        .iter_mut()
        .flat_map(|t| t.partition_data.iter_mut())
    {
        if let Some(records) = p.records.take() {
            let MemoryRecords::Owned(records, _) = records else {
                panic!("a Produce frame decoded owned gave shared records");
            };
            p.records = Some(records.freeze().into());
        }
    }
    RequestBody::Produce(r)
}

#[test]
fn api_versions_v3_request_as_java_client_sends_it() {
    let mut b = vec![
        0x00, 0x12, // api_key 18
        0x00, 0x03, // api_version 3
        0x00, 0x00, 0x00, 0x01, // correlation_id 1
        0x00, 0x0d, // client_id: int16 length 13 (header v2 keeps a non-compact string)
    ];
    b.extend_from_slice(b"adminclient-1");
    b.push(0x00); // header tagged fields: none
    b.push(0x12); // compact string: 17 + 1
    b.extend_from_slice(b"apache-kafka-java");
    b.push(0x06); // compact string: 5 + 1
    b.extend_from_slice(b"4.1.0");
    b.push(0x00); // body tagged fields: none
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 18,
            api_version: 3,
            correlation_id: 1,
            client_id: Some("adminclient-1".into()),
        },
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "apache-kafka-java".into(),
            client_software_version: "4.1.0".into(),
            ..ApiVersionsRequest::default()
        }),
    );
}

/// v5 (Kafka 4.4) adds, after the software fields, the cluster id (compact nullable string)
/// and node id the client expects; a client that knows neither sends null and -1.
#[test]
fn api_versions_v5_request_names_the_expected_cluster_and_node() {
    let body = |cluster: &[u8], node: [u8; 4]| {
        cat(&[
            &req_hdr(18, 5, 2, true),
            &cs("apache-kafka-java"),
            &cs("4.4.0"),
            cluster,
            &node,
            &[0x00], // body tagged fields
        ])
    };
    let expected = |cluster_id: Option<&str>, node_id| {
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "apache-kafka-java".into(),
            client_software_version: "4.4.0".into(),
            cluster_id: cluster_id.map(Into::into),
            node_id,
        })
    };
    check_request(
        frame(&body(&cs("c1"), [0, 0, 0, 3])),
        header(18, 5, 2),
        expected(Some("c1"), 3),
    );
    check_request(
        frame(&body(&[0x00], [0xff; 4])),
        header(18, 5, 2),
        expected(None, -1),
    );
}

#[test]
fn api_versions_v0_request_is_header_only() {
    let b = [0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xff, 0xff];
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 18,
            api_version: 0,
            correlation_id: 7,
            client_id: None,
        },
        RequestBody::ApiVersions(ApiVersionsRequest::default()),
    );
}

/// Captured from confluent-kafka 2.16.1 (librdkafka 2.16.0) `AdminClient.list_topics()`:
/// Metadata v13 for all topics, with three bytes after the body's fields. Kafka 4.4 serves it
/// (its parsers ignore what follows the fields they read); Sluice closed the connection
/// ("trailing bytes after message") and every librdkafka client failed to list topics.
#[test]
fn metadata_v13_all_topics_as_librdkafka_2_16_sends_it() {
    let captured: &[u8] = &[
        0x00, 0x03, 0x00, 0x0d, // Metadata v13
        0x00, 0x00, 0x00, 0x03, // correlation_id 3
        0x00, 0x07, b'r', b'd', b'k', b'a', b'f', b'k', b'a', // client_id "rdkafka"
        0x00, // header tags
        0x00, // topics: null (all)
        0x00, // allow_auto_topic_creation
        0x00, // include_topic_authorized_operations
        0x00, // body tags
        0x01, 0x00, 0x00, // what librdkafka adds beyond v13's fields
    ];
    let (header, body) = decode_request(Bytes::copy_from_slice(captured)).expect("decoded");
    assert_eq!((header.api_key, header.api_version), (3, 13));
    assert_eq!(header.correlation_id, 3);
    assert_eq!(header.client_id.as_deref(), Some("rdkafka"));
    assert_eq!(
        body,
        RequestBody::Metadata(MetadataRequest {
            topics: None,
            allow_auto_topic_creation: false,
            include_cluster_authorized_operations: false,
            include_topic_authorized_operations: false,
        })
    );
}

#[test]
fn metadata_v12_request() {
    let mut b = vec![
        0x00, 0x03, 0x00, 0x0c, // Metadata v12
        0x00, 0x00, 0x00, 0x2a, // correlation_id 42
        0x00, 0x01, b'c', // client_id "c"
        0x00, // header tags
        0x02, // topics: compact array, 1 element
    ];
    b.extend_from_slice(&[0u8; 16]); // topic_id ZERO
    b.push(0x07); // name: compact nullable string, 6 + 1
    b.extend_from_slice(b"orders");
    b.push(0x00); // topic tags
    b.push(0x01); // allow_auto_topic_creation
    b.push(0x00); // include_topic_authorized_operations (v11+ has no cluster flag)
    b.push(0x00); // body tags
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 3,
            api_version: 12,
            correlation_id: 42,
            client_id: Some("c".into()),
        },
        RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                topic_id: Uuid::ZERO,
                name: Some("orders".into()),
            }]),
            allow_auto_topic_creation: true,
            include_cluster_authorized_operations: false,
            include_topic_authorized_operations: false,
        }),
    );
}

#[test]
fn metadata_v1_null_topics_means_all() {
    let b = [
        0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0xff, 0xff, // header v1, null client
        0xff, 0xff, 0xff, 0xff, // topics: null array (int32 -1)
    ];
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 3,
            api_version: 1,
            correlation_id: 2,
            client_id: None,
        },
        RequestBody::Metadata(MetadataRequest::default()),
    );
}

#[test]
fn produce_v9_request_with_record_batch() {
    let batch = RecordBatchBuilder::new(1_000)
        .record(None, Some(b"v"))
        .build();
    assert_eq!(batch.len(), 69); // 61-byte header + 8-byte record
    let mut b = vec![
        0x00, 0x00, 0x00, 0x09, // Produce v9
        0x00, 0x00, 0x00, 0x05, // correlation_id 5
        0xff, 0xff, // client_id null
        0x00, // header tags
        0x00, // transactional_id: compact null
        0xff, 0xff, // acks -1
        0x00, 0x00, 0x75, 0x30, // timeout_ms 30000
        0x02, // topic_data: 1
        0x02, b't', // name "t"
        0x02, // partition_data: 1
        0x00, 0x00, 0x00, 0x03, // index 3
        0x46, // records: compact bytes, 69 + 1 = 70
    ];
    b.extend_from_slice(&batch);
    b.extend_from_slice(&[0x00, 0x00, 0x00]); // partition, topic, body tags
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 0,
            api_version: 9,
            correlation_id: 5,
            client_id: None,
        },
        RequestBody::Produce(ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: "t".into(),
                topic_id: Uuid::ZERO,
                partition_data: vec![PartitionProduceData {
                    index: 3,
                    records: Some(batch.clone().into()),
                }],
            }],
        }),
    );
}

#[test]
fn produce_v8_request_uses_classic_encodings() {
    let b = vec![
        0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x06, 0xff, 0xff, // header v1
        0x00, 0x02, b't', b'x', // transactional_id "tx" (int16 length)
        0x00, 0x01, // acks 1
        0x00, 0x00, 0x03, 0xe8, // timeout 1000
        0x00, 0x00, 0x00, 0x01, // topic_data: int32 count 1
        0x00, 0x01, b't', // name
        0x00, 0x00, 0x00, 0x01, // partition_data: 1
        0x00, 0x00, 0x00, 0x00, // index 0
        0xff, 0xff, 0xff, 0xff, // records: null (int32 -1)
    ];
    check_request(
        frame(&b),
        RequestHeader {
            api_key: 0,
            api_version: 8,
            correlation_id: 6,
            client_id: None,
        },
        RequestBody::Produce(ProduceRequest {
            transactional_id: Some("tx".into()),
            acks: 1,
            timeout_ms: 1000,
            topic_data: vec![TopicProduceData {
                name: "t".into(),
                topic_id: Uuid::ZERO,
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: None,
                }],
            }],
        }),
    );
}

#[test]
fn api_versions_v3_response_uses_header_v0() {
    let body = ResponseBody::ApiVersions(ApiVersionsResponse {
        api_keys: vec![ApiVersion {
            api_key: 0,
            min_version: 3,
            max_version: 11,
        }],
        ..ApiVersionsResponse::default()
    });
    let expected = frame(&[
        0x00, 0x00, 0x00, 0x09, // correlation_id 9, no header tags (v0)
        0x00, 0x00, // error_code
        0x02, // api_keys: compact array of 1
        0x00, 0x00, 0x00, 0x03, 0x00, 0x0b, 0x00, // Produce 3..11, entry tags
        0x00, 0x00, 0x00, 0x00, // throttle_time_ms
        0x00, // body tags (no features)
    ]);
    assert_eq!(&encode_response(9, 18, 3, &body)[..], &expected[..]);
}

#[test]
fn metadata_v9_response_uses_header_v1() {
    let body = ResponseBody::Metadata(Default::default());
    let expected = frame(&[
        0x00, 0x00, 0x00, 0x09, 0x00, // correlation_id + header tags (v1)
        0x00, 0x00, 0x00, 0x00, // throttle
        0x01, // brokers: empty compact array
        0x00, // cluster_id: null
        0xff, 0xff, 0xff, 0xff, // controller_id -1
        0x01, // topics: empty
        0x80, 0x00, 0x00, 0x00, // cluster_authorized_operations i32::MIN (v8-10)
        0x00, // body tags
    ]);
    assert_eq!(&encode_response(9, 3, 9, &body)[..], &expected[..]);
}

// ---------------------------------------------------------------------------
// Consumer-group APIs: one non-flexible and one flexible frame each, written
// field by field from Kafka's JSON schemas. The helpers below only spell the
// primitive encodings (big-endian ints, int16-length strings, compact strings
// with length + 1 as a one-byte varint for these short values).

use sluice_protocol::decode_response;
use sluice_protocol::messages::{
    create_partitions as cp, delete_groups as dg, describe_groups as dgr, find_coordinator as fc,
    heartbeat as hb, join_group as jg, leave_group as lg, list_groups as lgr, offset_commit as oc,
    offset_delete as od, offset_fetch as of, sync_group as sg,
};

/// Request header v1 (classic) or v2 (flexible: + empty tag section), null client id.
fn req_hdr(key: i16, version: i16, correlation_id: i32, flexible: bool) -> Vec<u8> {
    let mut b = key.to_be_bytes().to_vec();
    b.extend_from_slice(&version.to_be_bytes());
    b.extend_from_slice(&correlation_id.to_be_bytes());
    b.extend_from_slice(&[0xff, 0xff]);
    if flexible {
        b.push(0x00);
    }
    b
}

fn header(key: i16, version: i16, correlation_id: i32) -> RequestHeader {
    RequestHeader {
        api_key: key,
        api_version: version,
        correlation_id,
        client_id: None,
    }
}

/// int16-length string.
fn s16(s: &str) -> Vec<u8> {
    let mut b = (s.len() as i16).to_be_bytes().to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

/// Compact string: unsigned varint length + 1 (one byte below 127).
fn cs(s: &str) -> Vec<u8> {
    assert!(s.len() < 127);
    let mut b = vec![s.len() as u8 + 1];
    b.extend_from_slice(s.as_bytes());
    b
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn check_response(
    expected_body: Vec<u8>,
    key: i16,
    version: i16,
    flexible: bool,
    body: ResponseBody,
) {
    let mut b = 99i32.to_be_bytes().to_vec(); // correlation_id 99
    if flexible {
        b.push(0x00); // response header v1 tags
    }
    b.extend_from_slice(&expected_body);
    let expected = frame(&b);
    assert_eq!(
        &encode_response(99, key, version, &body)[..],
        &expected[..],
        "encode"
    );
    let (h, back) =
        decode_response(Bytes::from(expected).slice(4..), key, version).expect("decode");
    assert_eq!(h.correlation_id, 99);
    assert_eq!(back, body, "decode");
}

#[test]
fn find_coordinator_v1_request_and_v0_response() {
    let b = cat(&[&req_hdr(10, 1, 1, false), &s16("tx-1"), &[0x01]]); // key, key_type 1
    check_request(
        frame(&b),
        header(10, 1, 1),
        RequestBody::FindCoordinator(fc::FindCoordinatorRequest {
            key: "tx-1".into(),
            key_type: 1,
            coordinator_keys: vec![],
        }),
    );
    let body = cat(&[
        &[0x00, 0x00],             // error_code
        &[0x00, 0x00, 0x00, 0x02], // node_id 2
        &s16("b2"),
        &[0x00, 0x00, 0x23, 0x84], // port 9092
    ]);
    check_response(
        body,
        10,
        0,
        false,
        ResponseBody::FindCoordinator(fc::FindCoordinatorResponse {
            node_id: 2,
            host: "b2".into(),
            port: 9092,
            ..Default::default()
        }),
    );
}

#[test]
fn find_coordinator_v4_batched_request_and_response() {
    let b = cat(&[
        &req_hdr(10, 4, 2, true),
        &[0x00], // key_type 0 (group); no Key in v4+
        &[0x03], // coordinator_keys: compact array of 2
        &cs("g1"),
        &cs("g2"),
        &[0x00], // body tags
    ]);
    check_request(
        frame(&b),
        header(10, 4, 2),
        RequestBody::FindCoordinator(fc::FindCoordinatorRequest {
            key: String::new(),
            key_type: 0,
            coordinator_keys: vec!["g1".into(), "g2".into()],
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle_time_ms
        &[0x02],                   // coordinators: 1
        &cs("g1"),
        &[0x00, 0x00, 0x00, 0x01], // node_id 1
        &cs("b1"),
        &[0x00, 0x00, 0x23, 0x84], // port 9092
        &[0x00, 0x00],             // error_code
        &[0x00],                   // error_message null
        &[0x00, 0x00],             // entry tags, body tags
    ]);
    check_response(
        body,
        10,
        4,
        true,
        ResponseBody::FindCoordinator(fc::FindCoordinatorResponse {
            coordinators: vec![fc::Coordinator {
                key: "g1".into(),
                node_id: 1,
                host: "b1".into(),
                port: 9092,
                error_code: 0,
                error_message: None,
            }],
            ..Default::default()
        }),
    );
}

#[test]
fn join_group_v5_request_and_v2_response() {
    let b = cat(&[
        &req_hdr(11, 5, 3, false),
        &s16("g"),
        &[0x00, 0x00, 0x27, 0x10], // session_timeout_ms 10000
        &[0x00, 0x00, 0x75, 0x30], // rebalance_timeout_ms 30000
        &s16(""),                  // member_id
        &[0xff, 0xff],             // group_instance_id null
        &s16("consumer"),
        &[0x00, 0x00, 0x00, 0x01], // protocols: 1
        &s16("range"),
        &[0x00, 0x00, 0x00, 0x02, 0xab, 0xcd], // metadata: int32 length 2
    ]);
    check_request(frame(&b), header(11, 5, 3), join_group_request(30_000));
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle
        &[0x00, 0x4f],             // error_code 79 MEMBER_ID_REQUIRED
        &[0xff, 0xff, 0xff, 0xff], // generation_id -1
        &s16(""),                  // protocol_name
        &s16(""),                  // leader
        &s16("m-1"),               // member_id
        &[0x00, 0x00, 0x00, 0x00], // members: 0
    ]);
    check_response(
        body,
        11,
        2,
        false,
        ResponseBody::JoinGroup(jg::JoinGroupResponse {
            error_code: 79,
            member_id: "m-1".into(),
            ..Default::default()
        }),
    );
}

#[test]
fn join_group_v9_request_and_response() {
    let b = cat(&[
        &req_hdr(11, 9, 4, true),
        &cs("g"),
        &[0x00, 0x00, 0x27, 0x10],
        &[0x00, 0x00, 0x75, 0x30],
        &cs("m-1"),
        &cs("i-1"), // group_instance_id
        &cs("consumer"),
        &[0x02], // protocols: 1
        &cs("range"),
        &[0x03, 0xab, 0xcd], // metadata: compact bytes, 2 + 1
        &[0x00],             // protocol tags
        &cs("why"),          // reason
        &[0x00],             // body tags
    ]);
    check_request(
        frame(&b),
        header(11, 9, 4),
        RequestBody::JoinGroup(jg::JoinGroupRequest {
            group_id: "g".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            member_id: "m-1".into(),
            group_instance_id: Some("i-1".into()),
            protocol_type: "consumer".into(),
            protocols: vec![jg::JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: Bytes::from_static(&[0xab, 0xcd]),
            }],
            reason: Some("why".into()),
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle
        &[0x00, 0x00],             // error_code
        &[0x00, 0x00, 0x00, 0x05], // generation_id 5
        &cs("consumer"),           // protocol_type
        &cs("range"),              // protocol_name
        &cs("m-1"),                // leader
        &[0x01],                   // skip_assignment
        &cs("m-1"),                // member_id
        &[0x02],                   // members: 1
        &cs("m-1"),
        &[0x00], // group_instance_id null
        &[0x01], // metadata: empty compact bytes
        &[0x00], // member tags
        &[0x00], // body tags
    ]);
    check_response(
        body,
        11,
        9,
        true,
        ResponseBody::JoinGroup(jg::JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: 0,
            generation_id: 5,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            leader: "m-1".into(),
            skip_assignment: true,
            member_id: "m-1".into(),
            members: vec![jg::JoinGroupResponseMember {
                member_id: "m-1".into(),
                group_instance_id: None,
                metadata: Bytes::new(),
            }],
        }),
    );
}

#[test]
fn heartbeat_v0_and_v4() {
    let b = cat(&[
        &req_hdr(12, 0, 5, false),
        &s16("g"),
        &[0x00, 0x00, 0x00, 0x05],
        &s16("m-1"),
    ]);
    let req = |v: i16| hb::HeartbeatRequest {
        group_id: "g".into(),
        generation_id: 5,
        member_id: "m-1".into(),
        group_instance_id: (v >= 3).then(|| "i".into()),
    };
    check_request(frame(&b), header(12, 0, 5), RequestBody::Heartbeat(req(0)));
    let b = cat(&[
        &req_hdr(12, 4, 6, true),
        &cs("g"),
        &[0x00, 0x00, 0x00, 0x05],
        &cs("m-1"),
        &cs("i"),
        &[0x00],
    ]);
    check_request(frame(&b), header(12, 4, 6), RequestBody::Heartbeat(req(4)));
    check_response(
        vec![0x00, 0x00], // v0: error_code only
        12,
        0,
        false,
        ResponseBody::Heartbeat(hb::HeartbeatResponse::default()),
    );
    check_response(
        vec![0x00, 0x00, 0x00, 0x07, 0x00, 0x1b, 0x00], // throttle 7, REBALANCE_IN_PROGRESS, tags
        12,
        4,
        true,
        ResponseBody::Heartbeat(hb::HeartbeatResponse {
            throttle_time_ms: 7,
            error_code: 27,
        }),
    );
}

#[test]
fn leave_group_v2_and_v5() {
    let b = cat(&[&req_hdr(13, 2, 7, false), &s16("g"), &s16("m-1")]);
    check_request(
        frame(&b),
        header(13, 2, 7),
        RequestBody::LeaveGroup(lg::LeaveGroupRequest {
            group_id: "g".into(),
            member_id: "m-1".into(),
            members: vec![],
        }),
    );
    let b = cat(&[
        &req_hdr(13, 5, 8, true),
        &cs("g"),
        &[0x02], // members: 1
        &cs("m-1"),
        &[0x00], // group_instance_id null
        &cs("bye"),
        &[0x00, 0x00], // member tags, body tags
    ]);
    check_request(
        frame(&b),
        header(13, 5, 8),
        RequestBody::LeaveGroup(lg::LeaveGroupRequest {
            group_id: "g".into(),
            member_id: String::new(),
            members: vec![lg::MemberIdentity {
                member_id: "m-1".into(),
                group_instance_id: None,
                reason: Some("bye".into()),
            }],
        }),
    );
    check_response(
        vec![0x00, 0x00, 0x00, 0x00, 0x00, 0x00], // v2: throttle, error_code
        13,
        2,
        false,
        ResponseBody::LeaveGroup(lg::LeaveGroupResponse::default()),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00], // throttle, error_code
        &[0x02],
        &cs("m-1"),
        &cs("i"),
        &[0x00, 0x19], // UNKNOWN_MEMBER_ID
        &[0x00, 0x00],
    ]);
    check_response(
        body,
        13,
        5,
        true,
        ResponseBody::LeaveGroup(lg::LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: 0,
            members: vec![lg::MemberResponse {
                member_id: "m-1".into(),
                group_instance_id: Some("i".into()),
                error_code: 25,
            }],
        }),
    );
}

#[test]
fn sync_group_v3_and_v5() {
    let b = cat(&[
        &req_hdr(14, 3, 9, false),
        &s16("g"),
        &[0x00, 0x00, 0x00, 0x05],
        &s16("m-1"),
        &s16("i"),
        &[0x00, 0x00, 0x00, 0x01],
        &s16("m-1"),
        &[0x00, 0x00, 0x00, 0x01, 0x7f], // assignment: 1 byte
    ]);
    check_request(
        frame(&b),
        header(14, 3, 9),
        RequestBody::SyncGroup(sg::SyncGroupRequest {
            group_id: "g".into(),
            generation_id: 5,
            member_id: "m-1".into(),
            group_instance_id: Some("i".into()),
            protocol_type: None,
            protocol_name: None,
            assignments: vec![sg::SyncGroupRequestAssignment {
                member_id: "m-1".into(),
                assignment: Bytes::from_static(&[0x7f]),
            }],
        }),
    );
    let b = cat(&[
        &req_hdr(14, 5, 10, true),
        &cs("g"),
        &[0x00, 0x00, 0x00, 0x05],
        &cs("m-2"),
        &[0x00], // group_instance_id null
        &cs("consumer"),
        &cs("range"),
        &[0x01], // assignments: empty (a follower)
        &[0x00],
    ]);
    check_request(
        frame(&b),
        header(14, 5, 10),
        RequestBody::SyncGroup(sg::SyncGroupRequest {
            group_id: "g".into(),
            generation_id: 5,
            member_id: "m-2".into(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignments: vec![],
        }),
    );
    check_response(
        // throttle, error_code, assignment: int32 length 2
        vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x01, 0x02],
        14,
        3,
        false,
        ResponseBody::SyncGroup(sg::SyncGroupResponse {
            assignment: Bytes::from_static(&[1, 2]),
            ..Default::default()
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
        &cs("consumer"),
        &cs("range"),
        &[0x03, 0x01, 0x02], // compact bytes, 2 + 1
        &[0x00],
    ]);
    check_response(
        body,
        14,
        5,
        true,
        ResponseBody::SyncGroup(sg::SyncGroupResponse {
            throttle_time_ms: 0,
            error_code: 0,
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            assignment: Bytes::from_static(&[1, 2]),
        }),
    );
}

#[test]
fn describe_groups_v0_and_v6() {
    let b = cat(&[
        &req_hdr(15, 0, 11, false),
        &[0x00, 0x00, 0x00, 0x01],
        &s16("g"),
    ]);
    check_request(
        frame(&b),
        header(15, 0, 11),
        RequestBody::DescribeGroups(dgr::DescribeGroupsRequest {
            groups: vec!["g".into()],
            include_authorized_operations: false,
        }),
    );
    let b = cat(&[&req_hdr(15, 6, 12, true), &[0x02], &cs("g"), &[0x01, 0x00]]);
    check_request(
        frame(&b),
        header(15, 6, 12),
        RequestBody::DescribeGroups(dgr::DescribeGroupsRequest {
            groups: vec!["g".into()],
            include_authorized_operations: true,
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x01], // groups: 1
        &[0x00, 0x00],             // error_code
        &s16("g"),
        &s16("Stable"),
        &s16("consumer"),
        &s16("range"),
        &[0x00, 0x00, 0x00, 0x01], // members: 1
        &s16("m-1"),
        &s16("c"),
        &s16("/h"),
        &[0x00, 0x00, 0x00, 0x01, 0x0a], // member_metadata
        &[0x00, 0x00, 0x00, 0x00],       // member_assignment: empty
    ]);
    check_response(
        body,
        15,
        0,
        false,
        ResponseBody::DescribeGroups(dgr::DescribeGroupsResponse {
            throttle_time_ms: 0,
            groups: vec![dgr::DescribedGroup {
                group_id: "g".into(),
                group_state: "Stable".into(),
                protocol_type: "consumer".into(),
                protocol_data: "range".into(),
                members: vec![dgr::DescribedGroupMember {
                    member_id: "m-1".into(),
                    group_instance_id: None,
                    client_id: "c".into(),
                    client_host: "/h".into(),
                    member_metadata: Bytes::from_static(&[0x0a]),
                    member_assignment: Bytes::new(),
                }],
                ..Default::default()
            }],
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle
        &[0x02],                   // groups: 1
        &[0x00, 0x45],             // error_code 69 GROUP_ID_NOT_FOUND
        &cs("nope"),               // error_message
        &cs("x"),                  // group_id
        &cs("Dead"),
        &[0x01, 0x01],             // protocol_type, protocol_data: empty
        &[0x01],                   // members: empty
        &[0x80, 0x00, 0x00, 0x00], // authorized_operations i32::MIN
        &[0x00, 0x00],
    ]);
    check_response(
        body,
        15,
        6,
        true,
        ResponseBody::DescribeGroups(dgr::DescribeGroupsResponse {
            throttle_time_ms: 0,
            groups: vec![dgr::DescribedGroup {
                error_code: 69,
                error_message: Some("nope".into()),
                group_id: "x".into(),
                group_state: "Dead".into(),
                ..Default::default()
            }],
        }),
    );
}

#[test]
fn list_groups_v2_and_v5() {
    // v0-2 requests have an empty body.
    check_request(
        frame(&req_hdr(16, 2, 13, false)),
        header(16, 2, 13),
        RequestBody::ListGroups(lgr::ListGroupsRequest::default()),
    );
    let b = cat(&[
        &req_hdr(16, 5, 14, true),
        &[0x02],
        &cs("Stable"),
        &[0x01, 0x00],
    ]);
    check_request(
        frame(&b),
        header(16, 5, 14),
        RequestBody::ListGroups(lgr::ListGroupsRequest {
            states_filter: vec!["Stable".into()],
            types_filter: vec![],
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00], // throttle, error_code
        &[0x00, 0x00, 0x00, 0x01],
        &s16("g"),
        &s16("consumer"),
    ]);
    let group = |v: i16| lgr::ListedGroup {
        group_id: "g".into(),
        protocol_type: "consumer".into(),
        group_state: if v >= 4 {
            "Stable".into()
        } else {
            String::new()
        },
        group_type: if v >= 5 {
            "classic".into()
        } else {
            String::new()
        },
    };
    check_response(
        body,
        16,
        2,
        false,
        ResponseBody::ListGroups(lgr::ListGroupsResponse {
            groups: vec![group(2)],
            ..Default::default()
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x02],
        &cs("g"),
        &cs("consumer"),
        &cs("Stable"),
        &cs("classic"),
        &[0x00, 0x00],
    ]);
    check_response(
        body,
        16,
        5,
        true,
        ResponseBody::ListGroups(lgr::ListGroupsResponse {
            groups: vec![group(5)],
            ..Default::default()
        }),
    );
}

#[test]
fn offset_commit_v2_and_v9() {
    let b = cat(&[
        &req_hdr(8, 2, 15, false),
        &s16("g"),
        &[0x00, 0x00, 0x00, 0x03], // generation 3
        &s16("m-1"),
        &[0xff; 8],                // retention_time_ms -1
        &[0x00, 0x00, 0x00, 0x01], // topics: 1
        &s16("t"),
        &[0x00, 0x00, 0x00, 0x01], // partitions: 1
        &[0x00, 0x00, 0x00, 0x00],
        &[0, 0, 0, 0, 0, 0, 0, 0x64], // offset 100
        &[0xff, 0xff],                // metadata null
    ]);
    let req = |v: i16| oc::OffsetCommitRequest {
        group_id: "g".into(),
        generation_id_or_member_epoch: 3,
        member_id: "m-1".into(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![oc::OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![oc::OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 100,
                committed_leader_epoch: if v >= 6 { 4 } else { -1 },
                committed_metadata: if v >= 6 { Some(String::new()) } else { None },
            }],
        }],
    };
    check_request(
        frame(&b),
        header(8, 2, 15),
        RequestBody::OffsetCommit(req(2)),
    );
    let b = cat(&[
        &req_hdr(8, 9, 16, true),
        &cs("g"),
        &[0x00, 0x00, 0x00, 0x03],
        &cs("m-1"),
        &[0x00], // group_instance_id null; no retention in v5+
        &[0x02],
        &cs("t"),
        &[0x02],
        &[0x00, 0x00, 0x00, 0x00],
        &[0, 0, 0, 0, 0, 0, 0, 0x64],
        &[0x00, 0x00, 0x00, 0x04], // committed_leader_epoch 4
        &[0x01],                   // metadata: "" (compact, 0 + 1)
        &[0x00, 0x00, 0x00],       // partition, topic, body tags
    ]);
    check_request(
        frame(&b),
        header(8, 9, 16),
        RequestBody::OffsetCommit(req(9)),
    );
    let resp = oc::OffsetCommitResponse {
        throttle_time_ms: 0,
        topics: vec![oc::OffsetCommitResponseTopic {
            name: "t".into(),
            partitions: vec![oc::OffsetCommitResponsePartition {
                partition_index: 0,
                error_code: 22, // ILLEGAL_GENERATION
            }],
        }],
    };
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x01],
        &s16("t"),
        &[0x00, 0x00, 0x00, 0x01],
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x16],
    ]);
    check_response(body, 8, 2, false, ResponseBody::OffsetCommit(resp.clone()));
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle (v3+)
        &[0x02],
        &cs("t"),
        &[0x02],
        &[0x00, 0x00, 0x00, 0x00, 0x00, 0x16],
        &[0x00, 0x00, 0x00],
    ]);
    check_response(body, 8, 9, true, ResponseBody::OffsetCommit(resp));
}

#[test]
fn offset_fetch_v1_and_v9() {
    let b = cat(&[
        &req_hdr(9, 1, 17, false),
        &s16("g"),
        &[0x00, 0x00, 0x00, 0x01],
        &s16("t"),
        &[0x00, 0x00, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0, 1], // partition_indexes [0, 1]
    ]);
    let topics = vec![of::OffsetFetchRequestTopic {
        name: "t".into(),
        partition_indexes: vec![0, 1],
    }];
    check_request(
        frame(&b),
        header(9, 1, 17),
        RequestBody::OffsetFetch(of::OffsetFetchRequest {
            group_id: "g".into(),
            topics: Some(topics.clone()),
            groups: vec![],
            require_stable: false,
        }),
    );
    let b = cat(&[
        &req_hdr(9, 9, 18, true),
        &[0x03], // groups: 2
        &cs("g"),
        &cs("m-1"),                // member_id
        &[0x00, 0x00, 0x00, 0x02], // member_epoch 2
        &[0x02],                   // topics: 1
        &cs("t"),
        &[0x03, 0, 0, 0, 0, 0, 0, 0, 1], // partition_indexes: compact [0, 1]
        &[0x00],                         // topic tags
        &[0x00],                         // group tags
        &cs("h"),
        &[0x00],                   // member_id null
        &[0xff, 0xff, 0xff, 0xff], // member_epoch -1
        &[0x00],                   // topics: null (all)
        &[0x00],                   // group tags
        &[0x01],                   // require_stable
        &[0x00],                   // body tags
    ]);
    check_request(
        frame(&b),
        header(9, 9, 18),
        RequestBody::OffsetFetch(of::OffsetFetchRequest {
            group_id: String::new(),
            topics: None,
            groups: vec![
                of::OffsetFetchRequestGroup {
                    group_id: "g".into(),
                    member_id: Some("m-1".into()),
                    member_epoch: 2,
                    topics: Some(topics),
                },
                of::OffsetFetchRequestGroup {
                    group_id: "h".into(),
                    member_id: None,
                    member_epoch: -1,
                    topics: None,
                },
            ],
            require_stable: true,
        }),
    );
    let partition = |epoch: i32| of::OffsetFetchResponsePartition {
        partition_index: 1,
        committed_offset: 7,
        committed_leader_epoch: epoch,
        metadata: None,
        error_code: 0,
    };
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x01],
        &s16("t"),
        &[0x00, 0x00, 0x00, 0x01],
        &[0x00, 0x00, 0x00, 0x01],    // partition 1
        &[0, 0, 0, 0, 0, 0, 0, 0x07], // committed_offset 7
        &[0xff, 0xff],                // metadata null
        &[0x00, 0x00],                // error_code
    ]);
    check_response(
        body,
        9,
        1,
        false,
        ResponseBody::OffsetFetch(of::OffsetFetchResponse {
            topics: vec![of::OffsetFetchResponseTopic {
                name: "t".into(),
                partitions: vec![partition(-1)],
            }],
            ..Default::default()
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle
        &[0x02],                   // groups: 1
        &cs("g"),
        &[0x02],
        &cs("t"),
        &[0x02],
        &[0x00, 0x00, 0x00, 0x01],
        &[0, 0, 0, 0, 0, 0, 0, 0x07],
        &[0x00, 0x00, 0x00, 0x03], // committed_leader_epoch 3
        &[0x00],                   // metadata null
        &[0x00, 0x00],             // error_code
        &[0x00, 0x00],             // partition, topic tags
        &[0x00, 0x00],             // group error_code
        &[0x00, 0x00],             // group tags, body tags
    ]);
    check_response(
        body,
        9,
        9,
        true,
        ResponseBody::OffsetFetch(of::OffsetFetchResponse {
            groups: vec![of::OffsetFetchResponseGroup {
                group_id: "g".into(),
                topics: vec![of::OffsetFetchResponseTopic {
                    name: "t".into(),
                    partitions: vec![partition(3)],
                }],
                error_code: 0,
            }],
            ..Default::default()
        }),
    );
}

#[test]
fn delete_groups_v0_and_v2() {
    let req = RequestBody::DeleteGroups(dg::DeleteGroupsRequest {
        groups_names: vec!["g".into()],
    });
    let b = cat(&[&req_hdr(42, 0, 19, false), &[0, 0, 0, 1], &s16("g")]);
    check_request(frame(&b), header(42, 0, 19), req.clone());
    let b = cat(&[&req_hdr(42, 2, 20, true), &[0x02], &cs("g"), &[0x00]]);
    check_request(frame(&b), header(42, 2, 20), req);
    let resp = ResponseBody::DeleteGroups(dg::DeleteGroupsResponse {
        throttle_time_ms: 0,
        results: vec![dg::DeletableGroupResult {
            group_id: "g".into(),
            error_code: 68, // NON_EMPTY_GROUP
            error_message: None,
        }],
    });
    let body = cat(&[&[0, 0, 0, 0, 0, 0, 0, 1], &s16("g"), &[0x00, 0x44]]);
    check_response(body, 42, 0, false, resp.clone());
    let body = cat(&[&[0, 0, 0, 0, 0x02], &cs("g"), &[0x00, 0x44, 0x00, 0x00]]);
    check_response(body, 42, 2, true, resp);
}

/// v3 (Kafka 4.4) adds a nullable error message after each group's error code.
#[test]
fn delete_groups_v3_response_carries_an_error_message() {
    let resp = ResponseBody::DeleteGroups(dg::DeleteGroupsResponse {
        throttle_time_ms: 0,
        results: vec![
            dg::DeletableGroupResult {
                group_id: "g".into(),
                error_code: 69, // GROUP_ID_NOT_FOUND
                error_message: None,
            },
            dg::DeletableGroupResult {
                group_id: "h".into(),
                error_code: 68,
                error_message: Some("busy".into()),
            },
        ],
    });
    let body = cat(&[
        &[0, 0, 0, 0, 0x03], // throttle_time_ms, results: 2
        &cs("g"),
        &[0x00, 0x45, 0x00, 0x00], // error 69, message null, tags
        &cs("h"),
        &[0x00, 0x44],
        &cs("busy"),
        &[0x00, 0x00], // result tags, body tags
    ]);
    check_response(body, 42, 3, true, resp);
}

#[test]
fn offset_delete_v0() {
    let b = cat(&[
        &req_hdr(47, 0, 21, false),
        &s16("g"),
        &[0, 0, 0, 1],
        &s16("t"),
        &[0, 0, 0, 1, 0, 0, 0, 2], // partitions: [2]
    ]);
    check_request(
        frame(&b),
        header(47, 0, 21),
        RequestBody::OffsetDelete(od::OffsetDeleteRequest {
            group_id: "g".into(),
            topics: vec![od::OffsetDeleteRequestTopic {
                name: "t".into(),
                partitions: vec![od::OffsetDeleteRequestPartition { partition_index: 2 }],
            }],
        }),
    );
    let body = cat(&[
        &[0x00, 0x00],             // error_code
        &[0x00, 0x00, 0x00, 0x00], // throttle (after the error code here)
        &[0, 0, 0, 1],
        &s16("t"),
        &[0, 0, 0, 1, 0, 0, 0, 2, 0x00, 0x56], // partition 2, GROUP_SUBSCRIBED_TO_TOPIC (86)
    ]);
    check_response(
        body,
        47,
        0,
        false,
        ResponseBody::OffsetDelete(od::OffsetDeleteResponse {
            error_code: 0,
            throttle_time_ms: 0,
            topics: vec![od::OffsetDeleteResponseTopic {
                name: "t".into(),
                partitions: vec![od::OffsetDeleteResponsePartition {
                    partition_index: 2,
                    error_code: 86,
                }],
            }],
        }),
    );
}

#[test]
fn create_partitions_v1_and_v3() {
    let req = RequestBody::CreatePartitions(cp::CreatePartitionsRequest {
        topics: vec![
            cp::CreatePartitionsTopic {
                name: "t".into(),
                count: 4,
                assignments: None,
            },
            cp::CreatePartitionsTopic {
                name: "u".into(),
                count: 3,
                assignments: Some(vec![cp::CreatePartitionsAssignment {
                    broker_ids: vec![1, 2],
                }]),
            },
        ],
        timeout_ms: 5000,
        validate_only: true,
    });
    let b = cat(&[
        &req_hdr(37, 1, 22, false),
        &[0, 0, 0, 2], // topics: 2
        &s16("t"),
        &[0, 0, 0, 4],             // count 4
        &[0xff, 0xff, 0xff, 0xff], // assignments: null
        &s16("u"),
        &[0, 0, 0, 3],                         // count 3
        &[0, 0, 0, 1],                         // assignments: 1
        &[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2], // broker_ids [1, 2]
        &[0, 0, 0x13, 0x88],                   // timeout_ms 5000
        &[0x01],                               // validate_only
    ]);
    check_request(frame(&b), header(37, 1, 22), req.clone());
    let b = cat(&[
        &req_hdr(37, 3, 23, true),
        &[0x03], // topics: compact array of 2
        &cs("t"),
        &[0, 0, 0, 4],
        &[0x00], // assignments: null (compact)
        &[0x00], // topic tags
        &cs("u"),
        &[0, 0, 0, 3],
        &[0x02],                               // assignments: 1
        &[0x03, 0, 0, 0, 1, 0, 0, 0, 2, 0x00], // broker_ids [1, 2], assignment tags
        &[0x00],                               // topic tags
        &[0, 0, 0x13, 0x88, 0x01, 0x00],       // timeout_ms, validate_only, body tags
    ]);
    check_request(frame(&b), header(37, 3, 23), req);

    let message = "Topic already has 3 partition(s).";
    let resp = ResponseBody::CreatePartitions(cp::CreatePartitionsResponse {
        throttle_time_ms: 0,
        results: vec![
            cp::CreatePartitionsTopicResult {
                name: "t".into(),
                error_code: 0,
                error_message: None,
            },
            cp::CreatePartitionsTopicResult {
                name: "u".into(),
                error_code: 37, // INVALID_PARTITIONS
                error_message: Some(message.into()),
            },
        ],
    });
    let body = cat(&[
        &[0, 0, 0, 0], // throttle_time_ms
        &[0, 0, 0, 2], // results: 2
        &s16("t"),
        &[0x00, 0x00, 0xff, 0xff], // error_code 0, error_message null
        &s16("u"),
        &[0x00, 0x25],
        &s16(message),
    ]);
    check_response(body, 37, 1, false, resp.clone());
    let body = cat(&[
        &[0, 0, 0, 0],
        &[0x03],
        &cs("t"),
        &[0x00, 0x00, 0x00, 0x00], // error_code 0, error_message null, result tags
        &cs("u"),
        &[0x00, 0x25],
        &cs(message),
        &[0x00, 0x00], // result tags, body tags
    ]);
    check_response(body, 37, 2, true, resp);
}

// ---------------------------------------------------------------------------
// The versions Kafka 4.1 added over Sluice's earlier ranges: Produce v12/v13, Fetch v18,
// ListOffsets v10, Metadata v13, DescribeCluster v2, JoinGroup v0/v1. Each written field by
// field from the 4.1 schemas.

use sluice_protocol::messages::{
    describe_cluster as dc, fetch as fe, list_offsets as lo, metadata as md, produce as pr,
};

/// 16 bytes of a topic id, as on the wire.
fn uuid_bytes(id: Uuid) -> Vec<u8> {
    id.0.to_vec()
}

#[test]
fn produce_v13_names_topics_by_id_and_v12_is_v11_on_the_wire() {
    let id = Uuid::from_u128(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);
    let batch = RecordBatchBuilder::new(1_000)
        .record(None, Some(b"v"))
        .build();
    let b = cat(&[
        &req_hdr(0, 13, 40, true),
        &[0x00],                   // transactional_id: compact null
        &[0xff, 0xff],             // acks -1
        &[0x00, 0x00, 0x75, 0x30], // timeout_ms 30000
        &[0x02],                   // topic_data: 1
        &uuid_bytes(id),           // topic_id (v13+; no name)
        &[0x02],                   // partition_data: 1
        &[0x00, 0x00, 0x00, 0x03], // index 3
        &[0x46],                   // records: compact bytes, 69 + 1
        &batch,
        &[0x00, 0x00, 0x00], // partition, topic, body tags
    ]);
    let request = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: String::new(),
            topic_id: id,
            partition_data: vec![PartitionProduceData {
                index: 3,
                records: Some(batch.clone().into()),
            }],
        }],
    };
    check_request(frame(&b), header(0, 13, 40), RequestBody::Produce(request));

    // v12 carries the name exactly as v11 does.
    let by_name = RequestBody::Produce(ProduceRequest {
        transactional_id: None,
        acks: 1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            topic_id: Uuid::ZERO,
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: None,
            }],
        }],
    });
    let v11 = encode_request(&header(0, 11, 41), &by_name);
    let v12 = encode_request(&header(0, 12, 41), &by_name);
    assert_eq!(&v11[..6], &v12[..6]);
    assert_eq!(
        &v11[8..],
        &v12[8..],
        "only the version in the header differs"
    );

    // The v13 answer names the topic by id too: UNKNOWN_TOPIC_ID (100) for an unknown one.
    let body = cat(&[
        &[0x02], // responses: 1
        &uuid_bytes(id),
        &[0x02],                   // partition_responses: 1
        &[0x00, 0x00, 0x00, 0x03], // index 3
        &[0x00, 0x64],             // error_code 100
        &[0xff; 8],                // base_offset -1
        &[0xff; 8],                // log_append_time_ms -1
        &[0xff; 8],                // log_start_offset -1
        &[0x01],                   // record_errors: empty
        &[0x00],                   // error_message: null
        &[0x00, 0x00],             // partition tags, topic tags
        &[0x00, 0x00, 0x00, 0x00], // throttle_time_ms
        &[0x00],                   // body tags
    ]);
    check_response(
        body,
        0,
        13,
        true,
        ResponseBody::Produce(pr::ProduceResponse {
            responses: vec![pr::TopicProduceResponse {
                name: String::new(),
                topic_id: id,
                partition_responses: vec![pr::PartitionProduceResponse {
                    index: 3,
                    error_code: 100,
                    ..Default::default()
                }],
            }],
            ..Default::default()
        }),
    );
}

#[test]
fn fetch_v18_request_carries_the_follower_high_watermark_as_tag_1() {
    let id = Uuid::from_u128(7);
    let partition = |high_watermark: i64| fe::FetchPartition {
        partition: 0,
        current_leader_epoch: -1,
        fetch_offset: 5,
        last_fetched_epoch: -1,
        log_start_offset: -1,
        partition_max_bytes: 1 << 20,
        high_watermark,
        ..Default::default()
    };
    let request = |high_watermark: i64| {
        RequestBody::Fetch(fe::FetchRequest {
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            topics: vec![fe::FetchTopic {
                topic: String::new(),
                topic_id: id,
                partitions: vec![partition(high_watermark)],
            }],
            ..Default::default()
        })
    };
    let head = cat(&[
        &req_hdr(1, 18, 50, true),
        // No replica_id from v15; replica_state (tag 1) stays at its default, unsent.
        &[0x00, 0x00, 0x01, 0xf4], // max_wait_ms 500
        &[0x00, 0x00, 0x00, 0x01], // min_bytes 1
        &[0x00, 0x10, 0x00, 0x00], // max_bytes 1 MiB
        &[0x00],                   // isolation_level
        &[0x00, 0x00, 0x00, 0x00], // session_id 0
        &[0xff, 0xff, 0xff, 0xff], // session_epoch -1
        &[0x02],                   // topics: 1
        &uuid_bytes(id),
        &[0x02],                   // partitions: 1
        &[0x00, 0x00, 0x00, 0x00], // partition 0
        &[0xff, 0xff, 0xff, 0xff], // current_leader_epoch -1
        &[0, 0, 0, 0, 0, 0, 0, 5], // fetch_offset 5
        &[0xff, 0xff, 0xff, 0xff], // last_fetched_epoch -1
        &[0xff; 8],                // log_start_offset -1
        &[0x00, 0x10, 0x00, 0x00], // partition_max_bytes 1 MiB
    ]);
    let tail = [
        0x00, // topic tags
        0x01, // forgotten_topics_data: empty
        0x01, // rack_id ""
        0x00, // body tags
    ];
    // A follower that knows high watermark 42: tag 1, 8 bytes.
    let b = cat(&[
        &head,
        &[0x01, 0x01, 0x08],
        &[0, 0, 0, 0, 0, 0, 0, 42],
        &tail,
    ]);
    check_request(frame(&b), header(1, 18, 50), request(42));
    // A consumer (or a fetcher without the feature): the default, Long.MAX_VALUE, is not sent.
    let b = cat(&[&head, &[0x00], &tail]);
    check_request(
        frame(&b),
        header(1, 18, 50),
        request(fe::HIGH_WATERMARK_UNSUPPORTED),
    );
    // v17 has no tag 1: a v17 decoder skips it as unknown.
    let b = cat(&[
        &req_hdr(1, 17, 51, true),
        &head[req_hdr(1, 18, 50, true).len()..],
        &[0x01, 0x01, 0x08],
        &[0, 0, 0, 0, 0, 0, 0, 42],
        &tail,
    ]);
    let (_, body) = decode_request(Bytes::from(frame(&b)).slice(4..)).expect("decode");
    assert_eq!(body, request(fe::HIGH_WATERMARK_UNSUPPORTED));
}

#[test]
fn list_offsets_v10_request_ends_with_timeout_ms() {
    let b = cat(&[
        &req_hdr(2, 10, 60, true),
        &[0xff, 0xff, 0xff, 0xff], // replica_id -1
        &[0x00],                   // isolation_level
        &[0x02],                   // topics: 1
        &cs("t"),
        &[0x02],                   // partitions: 1
        &[0x00, 0x00, 0x00, 0x01], // partition_index 1
        &[0xff, 0xff, 0xff, 0xff], // current_leader_epoch -1
        &[0xff; 8],                // timestamp -1 (latest)
        &[0x00, 0x00],             // partition tags, topic tags
        &[0x00, 0x00, 0x75, 0x30], // timeout_ms 30000
        &[0x00],                   // body tags
    ]);
    check_request(
        frame(&b),
        header(2, 10, 60),
        RequestBody::ListOffsets(lo::ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![lo::ListOffsetsTopic {
                name: "t".into(),
                partitions: vec![lo::ListOffsetsPartition {
                    partition_index: 1,
                    current_leader_epoch: -1,
                    timestamp: lo::LATEST_TIMESTAMP,
                }],
            }],
            timeout_ms: 30_000,
        }),
    );
}

/// v11 is v10 on the wire; what it adds is the earliest-pending-upload timestamp (-6).
#[test]
fn list_offsets_v11_request_asks_for_the_earliest_pending_upload() {
    let b = cat(&[
        &req_hdr(2, 11, 61, true),
        &[0xff, 0xff, 0xff, 0xff, 0x00], // replica_id -1, isolation_level 0
        &[0x02],
        &cs("t"),
        &[0x02],
        &[0x00, 0x00, 0x00, 0x00], // partition_index 0
        &[0x00, 0x00, 0x00, 0x05], // current_leader_epoch 5
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa], // timestamp -6
        &[0x00, 0x00],
        &[0x00, 0x00, 0x03, 0xe8], // timeout_ms 1000
        &[0x00],
    ]);
    check_request(
        frame(&b),
        header(2, 11, 61),
        RequestBody::ListOffsets(lo::ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![lo::ListOffsetsTopic {
                name: "t".into(),
                partitions: vec![lo::ListOffsetsPartition {
                    partition_index: 0,
                    current_leader_epoch: 5,
                    timestamp: lo::EARLIEST_PENDING_UPLOAD_TIMESTAMP,
                }],
            }],
            timeout_ms: 1000,
        }),
    );
}

#[test]
fn metadata_v13_response_ends_with_the_top_level_error_code() {
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle_time_ms
        &[0x02],                   // brokers: 1
        &[0x00, 0x00, 0x00, 0x01], // node_id 1
        &cs("b1"),
        &[0x00, 0x00, 0x23, 0x84], // port 9092
        &[0x00, 0x00],             // rack null, broker tags
        &cs("c"),                  // cluster_id
        &[0x00, 0x00, 0x00, 0x01], // controller_id 1
        &[0x01],                   // topics: empty
        &[0x00, 0x00],             // error_code 0 (v13+)
        &[0x00],                   // body tags
    ]);
    check_response(
        body,
        3,
        13,
        true,
        ResponseBody::Metadata(md::MetadataResponse {
            brokers: vec![md::MetadataResponseBroker {
                node_id: 1,
                host: "b1".into(),
                port: 9092,
                rack: None,
            }],
            cluster_id: Some("c".into()),
            controller_id: 1,
            ..Default::default()
        }),
    );
}

#[test]
fn describe_cluster_v2_asks_for_and_marks_fenced_brokers() {
    let b = cat(&[
        &req_hdr(60, 2, 70, true),
        &[0x00], // include_cluster_authorized_operations false
        &[0x01], // endpoint_type 1 (brokers)
        &[0x01], // include_fenced_brokers true
        &[0x00], // body tags
    ]);
    check_request(
        frame(&b),
        header(60, 2, 70),
        RequestBody::DescribeCluster(dc::DescribeClusterRequest {
            include_cluster_authorized_operations: false,
            endpoint_type: 1,
            include_fenced_brokers: true,
        }),
    );
    let body = cat(&[
        &[0x00, 0x00, 0x00, 0x00], // throttle_time_ms
        &[0x00, 0x00],             // error_code
        &[0x00],                   // error_message null
        &[0x01],                   // endpoint_type 1
        &cs("c"),                  // cluster_id
        &[0x00, 0x00, 0x00, 0x01], // controller_id 1
        &[0x03],                   // brokers: 2
        &[0x00, 0x00, 0x00, 0x01],
        &cs("b1"),
        &[0x00, 0x00, 0x23, 0x84],
        &[0x00, 0x00, 0x00], // rack null, is_fenced false, broker tags
        &[0x00, 0x00, 0x00, 0x02],
        &cs("b2"),
        &[0x00, 0x00, 0x23, 0x84],
        &[0x00, 0x01, 0x00],       // rack null, is_fenced true, broker tags
        &[0x80, 0x00, 0x00, 0x00], // cluster_authorized_operations: omitted
        &[0x00],                   // body tags
    ]);
    let broker = |id: i32, is_fenced: bool| dc::DescribeClusterBroker {
        broker_id: id,
        host: format!("b{id}"),
        port: 9092,
        rack: None,
        is_fenced,
    };
    check_response(
        body,
        60,
        2,
        true,
        ResponseBody::DescribeCluster(dc::DescribeClusterResponse {
            cluster_id: "c".into(),
            controller_id: 1,
            brokers: vec![broker(1, false), broker(2, true)],
            ..Default::default()
        }),
    );
}

#[test]
fn join_group_v0_and_v1_requests_and_v0_response() {
    let protocols = cat(&[
        &s16("consumer"),
        &[0x00, 0x00, 0x00, 0x01], // protocols: 1
        &s16("range"),
        &[0x00, 0x00, 0x00, 0x02, 0xab, 0xcd], // metadata: int32 length 2
    ]);
    let request = join_group_request;
    // v0: no rebalance_timeout_ms; it decodes as the schema default -1, and the coordinator
    // uses the session timeout in its place.
    let b = cat(&[
        &req_hdr(11, 0, 80, false),
        &s16("g"),
        &[0x00, 0x00, 0x27, 0x10], // session_timeout_ms 10000
        &s16(""),                  // member_id
        &protocols,
    ]);
    check_request(frame(&b), header(11, 0, 80), request(-1));
    let (_, RequestBody::JoinGroup(v0)) =
        decode_request(Bytes::from(frame(&b)).slice(4..)).expect("decode")
    else {
        panic!("not join group")
    };
    assert_eq!(v0.effective_rebalance_timeout_ms(0), 10_000);
    // v1 adds rebalance_timeout_ms after the session timeout.
    let b = cat(&[
        &req_hdr(11, 1, 81, false),
        &s16("g"),
        &[0x00, 0x00, 0x27, 0x10], // session_timeout_ms 10000
        &[0x00, 0x00, 0x75, 0x30], // rebalance_timeout_ms 30000
        &s16(""),
        &protocols,
    ]);
    check_request(frame(&b), header(11, 1, 81), request(30_000));

    // v0 and v1 answers have no throttle_time_ms.
    let body = cat(&[
        &[0x00, 0x00],             // error_code
        &[0x00, 0x00, 0x00, 0x01], // generation_id 1
        &s16("range"),             // protocol_name
        &s16("m-1"),               // leader
        &s16("m-1"),               // member_id
        &[0x00, 0x00, 0x00, 0x01], // members: 1
        &s16("m-1"),
        &[0x00, 0x00, 0x00, 0x02, 0xab, 0xcd], // metadata
    ]);
    let resp = ResponseBody::JoinGroup(jg::JoinGroupResponse {
        generation_id: 1,
        protocol_name: Some("range".into()),
        leader: "m-1".into(),
        member_id: "m-1".into(),
        members: vec![jg::JoinGroupResponseMember {
            member_id: "m-1".into(),
            group_instance_id: None,
            metadata: Bytes::from_static(&[0xab, 0xcd]),
        }],
        ..Default::default()
    });
    check_response(body.clone(), 11, 0, false, resp.clone());
    check_response(body, 11, 1, false, resp);
}

/// A new member's JoinGroup of group "g" (session 10 s, one "range" protocol), as the golden
/// JoinGroup layouts encode it.
fn join_group_request(rebalance_timeout_ms: i32) -> RequestBody {
    RequestBody::JoinGroup(jg::JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms,
        member_id: String::new(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![jg::JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(&[0xab, 0xcd]),
        }],
        reason: None,
    })
}

mod alter_configs_bodies {
    use bytes::Bytes;
    use sluice_protocol::codec::{Decoder, Encoder};
    use sluice_protocol::messages::alter_configs::{
        AlterConfigsRequest, AlterConfigsResource, AlterableConfig,
    };
    use sluice_protocol::messages::incremental_alter_configs::{
        self as incremental, IncrementalAlterConfigsRequest, OP_DELETE, OP_SET,
    };

    fn alter() -> AlterConfigsRequest {
        AlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: 2,
                resource_name: "t".into(),
                configs: vec![
                    AlterableConfig {
                        name: "a".into(),
                        value: Some("1".into()),
                    },
                    AlterableConfig {
                        name: "b".into(),
                        value: None,
                    },
                ],
            }],
            validate_only: true,
        }
    }

    fn incremental() -> IncrementalAlterConfigsRequest {
        IncrementalAlterConfigsRequest {
            resources: vec![incremental::AlterConfigsResource {
                resource_type: 2,
                resource_name: "t".into(),
                configs: vec![
                    incremental::AlterableConfig {
                        name: "a".into(),
                        config_operation: OP_SET,
                        value: Some("1".into()),
                    },
                    incremental::AlterableConfig {
                        name: "b".into(),
                        config_operation: OP_DELETE,
                        value: None,
                    },
                ],
            }],
            validate_only: false,
        }
    }

    /// AlterConfigs v0/v1 and v2 (flexible), from the schema: resources [type int8, name,
    /// configs [name, value (nullable)]], validate_only.
    #[test]
    fn alter_configs_request_bodies() {
        #[rustfmt::skip]
        let classic = [
            0, 0, 0, 1, // resources: 1
            2, 0, 1, b't', // type 2, name "t"
            0, 0, 0, 2, // configs: 2
            0, 1, b'a', 0, 1, b'1', // "a" = "1"
            0, 1, b'b', 0xff, 0xff, // "b" = null
            1, // validate_only
        ];
        #[rustfmt::skip]
        let flexible = [
            2, // resources: 1 + 1
            2, 2, b't', // type 2, name "t"
            3, // configs: 2 + 1
            2, b'a', 2, b'1', 0, // "a" = "1", no tags
            2, b'b', 0, 0, // "b" = null, no tags
            0, // resource: no tags
            1, // validate_only
            0, // no tags
        ];
        for (version, bytes) in [(0, &classic[..]), (1, &classic[..]), (2, &flexible[..])] {
            let mut e = Encoder::new();
            alter().encode(&mut e, version);
            assert_eq!(e.as_slice(), bytes, "v{version}");
            let mut d = Decoder::new(Bytes::copy_from_slice(bytes));
            assert_eq!(
                AlterConfigsRequest::decode(&mut d, version).unwrap(),
                alter()
            );
            assert_eq!(d.remaining(), 0);
        }
    }

    /// IncrementalAlterConfigs v0 and v1 (flexible): the entry has config_operation (int8)
    /// between name and value.
    #[test]
    fn incremental_alter_configs_request_bodies() {
        #[rustfmt::skip]
        let classic = [
            0, 0, 0, 1, // resources: 1
            2, 0, 1, b't', // type 2, name "t"
            0, 0, 0, 2, // configs: 2
            0, 1, b'a', 0, 0, 1, b'1', // "a" SET "1"
            0, 1, b'b', 1, 0xff, 0xff, // "b" DELETE null
            0, // validate_only
        ];
        #[rustfmt::skip]
        let flexible = [
            2, // resources: 1 + 1
            2, 2, b't', // type 2, name "t"
            3, // configs: 2 + 1
            2, b'a', 0, 2, b'1', 0, // "a" SET "1", no tags
            2, b'b', 1, 0, 0, // "b" DELETE null, no tags
            0, // resource: no tags
            0, // validate_only
            0, // no tags
        ];
        for (version, bytes) in [(0, &classic[..]), (1, &flexible[..])] {
            let mut e = Encoder::new();
            incremental().encode(&mut e, version);
            assert_eq!(e.as_slice(), bytes, "v{version}");
            let mut d = Decoder::new(Bytes::copy_from_slice(bytes));
            assert_eq!(
                IncrementalAlterConfigsRequest::decode(&mut d, version).unwrap(),
                incremental()
            );
            assert_eq!(d.remaining(), 0);
        }
    }
}
