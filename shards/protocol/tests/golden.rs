//! Hand-assembled byte vectors, derived from the Kafka schemas field by field,
//! to catch mistakes that a symmetric encoder/decoder pair would hide.

use bytes::Bytes;
use sluice_protocol::messages::api_versions::{
    ApiVersion, ApiVersionsRequest, ApiVersionsResponse,
};
use sluice_protocol::messages::metadata::{MetadataRequest, MetadataRequestTopic};
use sluice_protocol::messages::produce::{PartitionProduceData, ProduceRequest, TopicProduceData};
use sluice_protocol::{
    decode_request, encode_request, encode_response, RecordBatchBuilder, RequestBody,
    RequestHeader, ResponseBody, Uuid,
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
    let (h, b) = decode_request(Bytes::from(expected_frame).slice(4..)).expect("decode");
    assert_eq!((h, b), (header, body), "decode");
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
        }),
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
                    records: Some(batch.clone()),
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
