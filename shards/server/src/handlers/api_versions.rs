//! ApiVersions (key 18): what this broker serves. Built from the handler registry.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::api_versions::{
    self as msg, ApiVersion, ApiVersionsRequest, ApiVersionsResponse,
};

use super::REGISTRY;

super::served_versions!(msg);

/// Answers ApiVersions.
pub fn handle(_version: i16, _request: &ApiVersionsRequest) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: ErrorCode::NONE.0,
        api_keys: advertised(),
        throttle_time_ms: 0,
        ..ApiVersionsResponse::default()
    }
}

/// The registry as ApiVersions entries.
pub fn advertised() -> Vec<ApiVersion> {
    REGISTRY
        .iter()
        .map(|e| ApiVersion {
            api_key: e.api_key,
            min_version: e.min_version,
            max_version: e.max_version,
        })
        .collect()
}
