//! The one declaration of served APIs (`sluice_protocol::apis`) and what follows from it agree:
//! the advertised table, the request decoder, the codecs' own version checks and the header
//! versions. The broker side (ApiVersions on the wire, dispatch to a handler for every
//! advertised version) is `tests/served_apis.rs` at the workspace root.

mod common;

use bytes::Bytes;
use common::{all_versions, request};
use sluice_protocol::request::RequestDecodeError;
use sluice_protocol::{
    decode_request, is_flexible, request_header_version, response_header_version, ApiKey, Decoder,
    Encoder, ProtocolError, RequestBody, RequestHeader, SUPPORTED,
};

/// A request frame (no size prefix) with a header of `version` and the sample body of
/// `body_version`; a flexible header carries one unknown tagged field.
fn frame(key: ApiKey, version: i16, body_version: i16) -> Bytes {
    let header = RequestHeader {
        api_key: key.as_i16(),
        api_version: version,
        correlation_id: 9,
        client_id: Some("declared".into()),
    };
    let mut e = Encoder::new();
    header.encode(&mut e);
    request(key, body_version).encode(&mut e, body_version);
    let mut bytes = e.into_inner().to_vec();
    if header.version() >= 2 {
        let tags_at = 2 + 2 + 4 + 2 + "declared".len();
        assert_eq!(bytes[tags_at], 0, "empty header tagged fields");
        bytes.splice(tags_at..=tags_at, [1, 7, 1, 0xab]);
    }
    Bytes::from(bytes)
}

#[test]
fn the_table_is_consistent() {
    for (i, api) in SUPPORTED.iter().enumerate() {
        assert!(api.min_version <= api.max_version, "{api:?}");
        assert_eq!(api.key.served(), Some(*api), "{:?}", api.key);
        assert!(
            SUPPORTED[..i].iter().all(|other| other.key != api.key),
            "{:?} declared twice",
            api.key
        );
    }
    let unserved = (0..=92)
        .filter_map(ApiKey::from_i16)
        .filter(|key| key.served().is_none())
        .count();
    assert_eq!(unserved + SUPPORTED.len(), 93);
}

#[test]
fn every_declared_version_decodes_with_its_header_flexibility() {
    for (key, version) in all_versions() {
        let api = key.served().unwrap();
        let flexible = version >= api.flexible_min_version;
        assert_eq!(is_flexible(key.as_i16(), version), flexible);
        assert_eq!(
            request_header_version(key.as_i16(), version),
            if flexible { 2 } else { 1 },
            "{key:?} v{version}"
        );
        // ApiVersions answers with header v0 always, so a client can read it before it knows
        // the broker's versions.
        let response_header = if flexible && key != ApiKey::ApiVersions {
            1
        } else {
            0
        };
        assert_eq!(
            response_header_version(key.as_i16(), version),
            response_header
        );
        let (header, body) = decode_request(frame(key, version, version))
            .unwrap_or_else(|e| panic!("{key:?} v{version}: {e}"));
        assert_eq!(header.api_version, version);
        assert_eq!(body, request(key, version), "{key:?} v{version}");
    }
}

#[test]
fn versions_just_outside_the_declared_range_are_refused_after_the_header() {
    for api in SUPPORTED {
        for version in [api.min_version - 1, api.max_version + 1] {
            let refused = decode_request(frame(api.key, version, api.max_version));
            let Err(RequestDecodeError {
                header: Some(header),
                error,
            }) = refused
            else {
                panic!("{:?} v{version} not refused after its header", api.key)
            };
            // The header is kept so that the broker can answer UNSUPPORTED_VERSION to it.
            assert_eq!(header.api_version, version);
            assert_eq!(header.correlation_id, 9);
            assert_eq!(
                error,
                ProtocolError::UnsupportedVersion {
                    api_key: api.key.as_i16(),
                    api_version: version,
                }
            );
            // The codec checks the same range on its own.
            let mut e = Encoder::new();
            request(api.key, api.max_version).encode(&mut e, api.max_version);
            let mut d = Decoder::new(e.into_inner().freeze());
            assert_eq!(
                RequestBody::decode(&mut d, api.key, version),
                Err(ProtocolError::UnsupportedVersion {
                    api_key: api.key.as_i16(),
                    api_version: version,
                })
            );
        }
    }
}
