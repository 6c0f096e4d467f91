//! Bytes written by Apache Kafka 4.4.0's own generated message classes (`*Data.write` of
//! kafka-clients 4.4.0, run once on the same values as `common::request` / `common::response`):
//! Sluice must write exactly these bytes and read them back to the same values. They catch what
//! a symmetric encoder/decoder pair would hide (field order, version gates, tagged fields).

mod common;

use bytes::Bytes;
use common::{request, response};
use sluice_protocol::messages::api_versions::{
    ApiVersion, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};
use sluice_protocol::{ApiKey, Decoder, Encoder, RequestBody, ResponseBody};

/// (API, request?, version, Kafka's bytes of the body in hex).
const KAFKA_BODIES: &[(ApiKey, bool, i16, &str)] = &[
    (ApiKey::DescribeQuorum, true, 0, "02135f5f636c75737465725f6d657461646174610200000000000000"),
    (ApiKey::DescribeQuorum, false, 0, "000002135f5f636c75737465725f6d65746164617461020000000000000000000100000003000000000000002a0300000001000000000000002a00000000020000000000000028000200000004000000000000002900000000"),
    (ApiKey::UpdateFeatures, true, 0, "0000753003116d657461646174612e76657273696f6e000701000e67726f75702e76657273696f6e0000000000"),
    (ApiKey::UpdateFeatures, false, 0, "00000000005f34496e76616c6964207570646174652076657273696f6e203920666f7220666561747572652067726f75702e76657273696f6e2e020e67726f75702e76657273696f6e005f000000"),
    (ApiKey::DescribeQuorum, true, 1, "02135f5f636c75737465725f6d657461646174610200000000000000"),
    (ApiKey::DescribeQuorum, false, 1, "000002135f5f636c75737465725f6d65746164617461020000000000000000000100000003000000000000002a0300000001000000000000002a0000018bcfe5687b0000018bcfe56864000000000200000000000000280000018bcfe5687b0000018bcfe5686400020000000400000000000000290000018bcfe5687b0000018bcfe5686400000000"),
    (ApiKey::UpdateFeatures, true, 1, "0000753003116d657461646174612e76657273696f6e000702000e67726f75702e76657273696f6e000001000100"),
    (ApiKey::UpdateFeatures, false, 1, "00000000005f34496e76616c6964207570646174652076657273696f6e203920666f7220666561747572652067726f75702e76657273696f6e2e020e67726f75702e76657273696f6e005f000000"),
    (ApiKey::DescribeQuorum, true, 2, "02135f5f636c75737465725f6d657461646174610200000000000000"),
    (ApiKey::DescribeQuorum, false, 2, "00000566696e6502135f5f636c75737465725f6d6574616461746102000000000000000000000100000003000000000000002a03000000010123456789abcdef0011223344556677000000000000002a0000018bcfe5687b0000018bcfe5686400000000020123456789abcdef001122334455667700000000000000280000018bcfe5687b0000018bcfe568640002000000040123456789abcdef001122334455667700000000000000290000018bcfe5687b0000018bcfe568640000000200000001020b434f4e54524f4c4c45520a3132372e302e302e314a95000000"),
    (ApiKey::UpdateFeatures, true, 2, "0000753003116d657461646174612e76657273696f6e000702000e67726f75702e76657273696f6e000001000100"),
    (ApiKey::UpdateFeatures, false, 2, "00000000005f34496e76616c6964207570646174652076657273696f6e203920666f7220666561747572652067726f75702e76657273696f6e2e00"),
];

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn describe_quorum_and_update_features_match_kafkas_bytes() {
    for &(key, is_request, v, hex) in KAFKA_BODIES {
        let kafka = unhex(hex);
        let mut e = Encoder::new();
        let mut d = Decoder::new(Bytes::from(kafka.clone()));
        if is_request {
            let body = request(key, v);
            body.encode(&mut e, v);
            let back = RequestBody::decode(&mut d, key, v).expect("decode Kafka's request");
            assert_eq!(back, body, "{key:?} v{v} request decode");
        } else {
            let body = response(key, v);
            body.encode(&mut e, v);
            let back = ResponseBody::decode(&mut d, key, v).expect("decode Kafka's response");
            assert_eq!(back, body, "{key:?} v{v} response decode");
        }
        d.finish().expect("Kafka's bytes all read");
        assert_eq!(
            e.as_slice(),
            &kafka[..],
            "{key:?} v{v} request={is_request} encode"
        );
    }
}

#[test]
fn api_versions_v3_features_match_kafkas_bytes() {
    let body = ApiVersionsResponse {
        error_code: 0,
        api_keys: vec![ApiVersion {
            api_key: 55,
            min_version: 0,
            max_version: 2,
        }],
        throttle_time_ms: 0,
        supported_features: vec![SupportedFeatureKey {
            name: "metadata.version".into(),
            min_version: 7,
            max_version: 7,
        }],
        finalized_features_epoch: 12,
        finalized_features: vec![FinalizedFeatureKey {
            name: "metadata.version".into(),
            max_version_level: 7,
            min_version_level: 7,
        }],
        zk_migration_ready: false,
    };
    let kafka = unhex("000002003700000002000000000003001702116d657461646174612e76657273696f6e00070007000108000000000000000c021702116d657461646174612e76657273696f6e0007000700");
    let mut e = Encoder::new();
    body.encode(&mut e, 3);
    assert_eq!(e.as_slice(), &kafka[..]);
    let mut d = Decoder::new(Bytes::from(kafka));
    assert_eq!(
        ApiVersionsResponse::decode(&mut d, 3).expect("decode"),
        body
    );
}
