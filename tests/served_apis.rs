//! ApiVersions, decoding and dispatch agree: every (API, version) a live broker advertises is
//! decoded and answered by that API's handler in that version's format, with the header
//! flexibility the version calls for; the versions just outside each advertised range, and the
//! APIs not advertised, get UNSUPPORTED_VERSION instead.
//!
//! The requests are the protocol crate's samples for every API and version
//! (`shards/protocol/tests/common`), so a newly declared API or version is exercised here without
//! editing this file (and fails here until it has a sample, a codec and a handler).

#![allow(clippy::unwrap_used)] // test code
#[path = "../shards/protocol/tests/common/mod.rs"]
mod samples;
mod support;

use std::io::Write;

use bytes::Bytes;
use sluice_protocol::messages::api_versions::ApiVersion;
use sluice_protocol::request::{decode_response, RequestBody, ResponseBody};
use sluice_protocol::{ApiKey, Encoder, ErrorCode, RequestHeader, SUPPORTED};
use support::{create_topic, Broker, Client};

const UNSUPPORTED_VERSION: i16 = ErrorCode::UNSUPPORTED_VERSION.0;

/// A request frame for `key`/`version` whose body is the sample of `body_version` (equal to
/// `version` unless the frame is meant to be refused on its version alone). A flexible (v2)
/// header carries an unknown tagged field, which the broker must skip exactly when it reads
/// the header as flexible.
fn frame(key: ApiKey, version: i16, body_version: i16, correlation_id: i32) -> Vec<u8> {
    let mut body = samples::request(key, body_version);
    if let RequestBody::Fetch(fetch) = &mut body {
        // Nothing to wait for: answer at once instead of after the sample's 500 ms.
        fetch.max_wait_ms = 0;
        // A consumer's fetch: the sample's follower fetch (replica 3) is refused, by closing
        // the connection, on a broker without replication.
        fetch.replica_id = -1;
        fetch.replica_state.replica_id = -1;
    }
    let header = RequestHeader {
        api_key: key.as_i16(),
        api_version: version,
        correlation_id,
        client_id: Some("served-apis".into()),
    };
    let mut e = Encoder::new();
    e.put_i32(0); // size, patched below
    header.encode(&mut e);
    body.encode(&mut e, body_version);
    let mut frame = e.into_inner().to_vec();
    if header.version() >= 2 {
        // The header's tagged fields (one empty-count byte) follow the client id.
        let tags_at = 4 + 2 + 2 + 4 + 2 + "served-apis".len();
        assert_eq!(frame[tags_at], 0, "empty header tagged fields");
        frame.splice(tags_at..=tags_at, [1, 7, 1, 0xab]);
    }
    let size = (frame.len() - 4) as i32;
    frame[0..4].copy_from_slice(&size.to_be_bytes());
    frame
}

/// Apache Kafka 4.4.0's broker-listener ranges, `(key, min, max)`, from the snapshot
/// `tests/compat/generate` records from a live Kafka (one API per line).
fn kafka_ranges() -> Vec<(i16, i16, i16)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/compat/kafka-4.4.0-api-versions.json"
    );
    let snapshot = std::fs::read_to_string(path).unwrap();
    let number = |text: &str| -> i16 {
        let digits: String = text
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().unwrap()
    };
    snapshot
        .lines()
        .filter_map(|line| {
            let key = number(line.split("\"key\":").nth(1)?);
            let range = line.split("\"broker\": [").nth(1)?;
            let (min, max) = range.split_once(',')?;
            Some((key, number(min), number(max)))
        })
        .collect()
}

fn advertised(client: &mut Client) -> Vec<ApiVersion> {
    let ResponseBody::ApiVersions(response) = client.call(
        ApiKey::ApiVersions.as_i16(),
        3,
        RequestBody::ApiVersions(support::api_versions_request()),
    ) else {
        panic!("wrong response kind")
    };
    assert_eq!(response.error_code, 0);
    response.api_keys
}

fn exchange(client: &mut Client, frame: &[u8], correlation_id: i32, what: &str) -> Bytes {
    client.stream.write_all(frame).unwrap();
    let response = client
        .read_frame()
        .unwrap_or_else(|| panic!("{what}: an answer, not a closed connection"));
    assert_eq!(
        &response[0..4],
        &correlation_id.to_be_bytes(),
        "correlation id"
    );
    response
}

#[test]
fn every_advertised_version_is_decoded_and_handled() {
    let broker = Broker::start("served-apis", &[]);
    let mut client = broker.client();
    // The samples name this topic; with it, Produce, Fetch and the rest reach real partitions.
    create_topic(&mut client, "orders", 2);
    let advertised = advertised(&mut client);
    let declared: Vec<(i16, i16, i16)> = SUPPORTED
        .iter()
        .map(|api| (api.key.as_i16(), api.min_version, api.max_version))
        .collect();
    let on_the_wire: Vec<(i16, i16, i16)> = advertised
        .iter()
        .map(|api| (api.api_key, api.min_version, api.max_version))
        .collect();
    assert_eq!(
        on_the_wire, declared,
        "ApiVersions lists the declaration, in its order"
    );
    // Nothing advertised that the reference broker does not serve (a range raised in the
    // declaration beyond Kafka's schemas would fail here).
    let kafka = kafka_ranges();
    assert!(kafka.len() > 50, "snapshot parsed: {} APIs", kafka.len());
    for &(key, min, max) in &on_the_wire {
        let (_, kafka_min, kafka_max) = kafka
            .iter()
            .find(|(k, _, _)| *k == key)
            .unwrap_or_else(|| panic!("key {key} not served by Kafka 4.4.0's broker listener"));
        assert!(
            *kafka_min <= min && max <= *kafka_max,
            "key {key}: {min}..={max} outside Kafka 4.4.0's {kafka_min}..={kafka_max}"
        );
    }

    let mut correlation_id = 100;
    let mut answered = 0;
    for api in &advertised {
        let key = ApiKey::from_i16(api.api_key).unwrap();
        for version in api.min_version..=api.max_version {
            correlation_id += 1;
            let request = frame(key, version, version, correlation_id);
            let response = exchange(
                &mut client,
                &request,
                correlation_id,
                &format!("{key:?} v{version}"),
            );
            assert!(
                !(response.len() == 6 && response[4..6] == UNSUPPORTED_VERSION.to_be_bytes()),
                "{key:?} v{version} reached no handler"
            );
            // The whole frame parses as this API's response at this version, header flexibility
            // included (a wrong response header version leaves bytes over or runs short).
            let (_, body) = decode_response(response, api.api_key, version)
                .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
            assert_eq!(body.api_key(), key);
            answered += 1;
        }
    }
    println!("{answered} advertised (API, version) pairs answered");
    assert_eq!(answered, samples::all_versions().len());
    drop(client);
    assert!(broker.stop().success());
}

#[test]
fn versions_outside_the_advertised_ranges_and_unadvertised_apis_are_refused() {
    let broker = Broker::start("served-apis-refused", &[]);
    let mut client = broker.client();
    let advertised = advertised(&mut client);
    let api_versions_range = advertised
        .iter()
        .find(|api| api.api_key == ApiKey::ApiVersions.as_i16())
        .map(|api| (api.min_version, api.max_version))
        .unwrap();
    let mut correlation_id = 100;
    for api in &advertised {
        let key = ApiKey::from_i16(api.api_key).unwrap();
        for version in [api.min_version - 1, api.max_version + 1] {
            correlation_id += 1;
            let request = frame(key, version, api.max_version, correlation_id);
            let response = exchange(
                &mut client,
                &request,
                correlation_id,
                &format!("{key:?} v{version}"),
            );
            assert_eq!(
                &response[4..6],
                &UNSUPPORTED_VERSION.to_be_bytes(),
                "{key:?} v{version}"
            );
            if key == ApiKey::ApiVersions {
                // As Kafka (KIP-511): a v0 ApiVersions answer listing only ApiVersions' range.
                let (_, body) = decode_response(response, api.api_key, 0).unwrap();
                let ResponseBody::ApiVersions(body) = body else {
                    panic!("wrong response kind")
                };
                let listed: Vec<(i16, i16, i16)> = body
                    .api_keys
                    .iter()
                    .map(|a| (a.api_key, a.min_version, a.max_version))
                    .collect();
                assert_eq!(
                    listed,
                    vec![(
                        ApiKey::ApiVersions.as_i16(),
                        api_versions_range.0,
                        api_versions_range.1
                    )]
                );
            } else {
                // Kafka closes the connection here; Sluice answers the header and the error
                // code (shards/protocol/README.md, "Accepting what Kafka accepts").
                assert_eq!(response.len(), 6, "{key:?} v{version}");
            }
        }
    }
    // Every key Kafka defines that is not advertised, at version 0: not routed to any handler.
    let mut unadvertised = 0;
    for raw in 0..=92i16 {
        if advertised.iter().any(|api| api.api_key == raw) {
            continue;
        }
        correlation_id += 1;
        let mut request = Vec::new();
        request.extend_from_slice(&raw.to_be_bytes());
        request.extend_from_slice(&0i16.to_be_bytes());
        request.extend_from_slice(&correlation_id.to_be_bytes());
        request.extend_from_slice(&(-1i16).to_be_bytes()); // null client id
        let mut frame = (request.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&request);
        let response = exchange(&mut client, &frame, correlation_id, &format!("key {raw}"));
        assert_eq!(
            &response[4..],
            &UNSUPPORTED_VERSION.to_be_bytes(),
            "key {raw}"
        );
        unadvertised += 1;
    }
    assert_eq!(unadvertised, 93 - advertised.len());
    drop(client);
    assert!(broker.stop().success());
}
