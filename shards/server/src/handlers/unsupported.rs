//! Requests the broker cannot decode: an API key it does not serve, a version outside the served
//! range, or a malformed body.
//!
//! Kafka answers an ApiVersions request of a too-new version with a v0 ApiVersions response
//! carrying UNSUPPORTED_VERSION and ApiVersions' own supported range, so the client can retry with a version
//! both sides know; we do the same. For any other unserved API or version we answer with the
//! response header and an UNSUPPORTED_VERSION error code — for most Kafka responses the error
//! code (or throttle time then error code) leads the body — rather than leaving the client
//! waiting. A body that does not parse is a protocol violation: the connection is closed.

use bytes::BytesMut;
use sluice_protocol::api_key::ApiKey;
use sluice_protocol::error::{ErrorCode, ProtocolError};
use sluice_protocol::messages::api_versions::{supported_api_versions, ApiVersionsResponse};
use sluice_protocol::request::{encode_response, RequestDecodeError, ResponseBody};
use sluice_protocol::Segment;
use tracing::info;

use crate::dispatch::Outcome;

/// ApiVersions' key: its unsupported-version answer is a v0 ApiVersions response.
const API_VERSIONS: i16 = ApiKey::ApiVersions.as_i16();

/// Decides how to answer an undecodable request.
pub fn answer(error: &RequestDecodeError) -> Outcome {
    let Some(header) = &error.header else {
        info!(error = %error.error, "unparseable request header; closing connection");
        return Outcome::Close;
    };
    let unsupported = matches!(
        error.error,
        ProtocolError::UnsupportedVersion { .. } | ProtocolError::UnknownApiKey(_)
    );
    if !unsupported {
        info!(api_key = header.api_key, api_version = header.api_version, error = %error.error, "malformed request; closing connection");
        return Outcome::Close;
    }
    info!(
        api_key = header.api_key,
        api_version = header.api_version,
        "unsupported API or version; answering UNSUPPORTED_VERSION"
    );
    Outcome::Respond(vec![Segment::Bytes(
        unsupported_version_frame(header.api_key, header.correlation_id).freeze(),
    )])
}

fn unsupported_version_frame(api_key: i16, correlation_id: i32) -> BytesMut {
    if api_key == API_VERSIONS {
        // Kafka (ApiVersionsRequest.getErrorResponse) lists only ApiVersions' own range: all the
        // client needs to retry with a version both sides know.
        let response = ApiVersionsResponse {
            error_code: ErrorCode::UNSUPPORTED_VERSION.0,
            api_keys: supported_api_versions()
                .into_iter()
                .filter(|v| v.api_key == API_VERSIONS)
                .collect(),
            ..ApiVersionsResponse::default()
        };
        return encode_response(
            correlation_id,
            API_VERSIONS,
            0,
            &ResponseBody::ApiVersions(response),
        );
    }
    let mut frame = BytesMut::with_capacity(10);
    frame.extend_from_slice(&6i32.to_be_bytes());
    frame.extend_from_slice(&correlation_id.to_be_bytes());
    frame.extend_from_slice(&ErrorCode::UNSUPPORTED_VERSION.0.to_be_bytes());
    frame
}
