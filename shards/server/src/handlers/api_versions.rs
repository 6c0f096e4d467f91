//! ApiVersions (key 18): what this broker serves. Built from the handler registry.
//!
//! As Kafka's KafkaApis answers it: an invalid request (bad v3+ client software fields, or a
//! v5 cluster id without a node id or the reverse) gets INVALID_REQUEST; a v5 request naming
//! another cluster or another node gets REBOOTSTRAP_REQUIRED, so a client whose metadata
//! points at an address now held by a different broker starts over from its bootstrap servers
//! instead of trusting this one. Both error answers list no APIs, as Kafka's.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::api_versions::{
    self as msg, ApiVersion, ApiVersionsRequest, ApiVersionsResponse,
};

use super::REGISTRY;
use crate::context::ShardContext;

super::served_versions!(msg);

/// Answers ApiVersions.
pub fn handle(
    ctx: &ShardContext,
    version: i16,
    request: &ApiVersionsRequest,
) -> ApiVersionsResponse {
    let image = ctx.image();
    answer(version, request, &image.cluster_id, ctx.config.node_id)
}

/// The answer of the broker `node_id` of cluster `cluster_id` ("" while this broker has not
/// learnt it from the first metadata image: then only the node id is checked).
fn answer(
    version: i16,
    request: &ApiVersionsRequest,
    cluster_id: &str,
    node_id: i32,
) -> ApiVersionsResponse {
    let error = if !request.is_valid(version) {
        Some(ErrorCode::INVALID_REQUEST)
    } else if version >= 5 && addressed_elsewhere(request, cluster_id, node_id) {
        Some(ErrorCode::REBOOTSTRAP_REQUIRED)
    } else {
        None
    };
    match error {
        Some(code) => ApiVersionsResponse {
            error_code: code.0,
            ..ApiVersionsResponse::default()
        },
        None => ApiVersionsResponse {
            error_code: ErrorCode::NONE.0,
            api_keys: advertised(),
            throttle_time_ms: 0,
            ..ApiVersionsResponse::default()
        },
    }
}

/// Whether a v5 request names a cluster or node other than this broker.
fn addressed_elsewhere(request: &ApiVersionsRequest, cluster_id: &str, node_id: i32) -> bool {
    match &request.cluster_id {
        None => false,
        Some(expected) => {
            (!cluster_id.is_empty() && expected != cluster_id) || request.node_id != node_id
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cluster_id: Option<&str>, node_id: i32) -> ApiVersionsRequest {
        ApiVersionsRequest {
            client_software_name: "apache-kafka-java".to_string(),
            client_software_version: "4.4.0".to_string(),
            cluster_id: cluster_id.map(str::to_string),
            node_id,
        }
    }

    #[test]
    fn v5_without_an_identity_lists_every_api() {
        let r = answer(5, &request(None, -1), "abc", 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        assert_eq!(r.api_keys, advertised());
    }

    #[test]
    fn v5_naming_this_broker_lists_every_api() {
        let r = answer(5, &request(Some("abc"), 1), "abc", 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        assert_eq!(r.api_keys.len(), REGISTRY.len());
    }

    #[test]
    fn v5_naming_another_cluster_or_node_asks_for_a_rebootstrap() {
        for (cluster, node) in [("other", 1), ("abc", 2)] {
            let r = answer(5, &request(Some(cluster), node), "abc", 1);
            assert_eq!(r.error_code, ErrorCode::REBOOTSTRAP_REQUIRED.0);
            assert!(r.api_keys.is_empty());
        }
        // Before the first metadata image only the node id can be checked.
        let r = answer(5, &request(Some("abc"), 1), "", 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        let r = answer(5, &request(Some("abc"), 2), "", 1);
        assert_eq!(r.error_code, ErrorCode::REBOOTSTRAP_REQUIRED.0);
    }

    #[test]
    fn v4_ignores_the_identity_fields() {
        // v4 carries no identity; a struct built with one is not checked against it.
        let r = answer(4, &request(Some("other"), 7), "abc", 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
    }

    #[test]
    fn invalid_requests_are_refused_without_apis() {
        for r in [request(Some("abc"), -1), request(None, 1)] {
            let a = answer(5, &r, "abc", 1);
            assert_eq!(a.error_code, ErrorCode::INVALID_REQUEST.0);
            assert!(a.api_keys.is_empty());
        }
        let mut bad_name = request(None, -1);
        bad_name.client_software_name = "-bad".to_string();
        assert_eq!(
            answer(3, &bad_name, "abc", 1).error_code,
            ErrorCode::INVALID_REQUEST.0
        );
        // v0-v2 carry no software fields: nothing to check.
        assert_eq!(answer(2, &bad_name, "abc", 1).error_code, ErrorCode::NONE.0);
    }
}
