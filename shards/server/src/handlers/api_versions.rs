//! ApiVersions (key 18): what this broker serves: the protocol crate's one declaration of the
//! served APIs (`sluice_protocol::SUPPORTED`), in its order. v3+ also
//! carries the features (KIP-584) as a Kafka broker does: the supported ranges (only features
//! Sluice supports above level 0, as Kafka's BrokerFeatures lists them), and from the metadata
//! image the finalized levels with their epoch (the image's metadata offset; -1 and none before
//! the first image).

//!
//! As Kafka's KafkaApis answers it: an invalid request (bad v3+ client software fields, or a
//! v5 cluster id without a node id or the reverse) gets INVALID_REQUEST; a v5 request naming
//! another cluster or another node gets REBOOTSTRAP_REQUIRED, so a client whose metadata
//! points at an address now held by a different broker starts over from its bootstrap servers
//! instead of trusting this one. Both error answers list no APIs, as Kafka's.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::api_versions::{
    supported_api_versions, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey,
    SupportedFeatureKey,
};
use sluice_shard::{advertised_features, MetadataImage};

use crate::context::ShardContext;

/// Answers ApiVersions.
pub fn handle(
    ctx: &ShardContext,
    version: i16,
    request: &ApiVersionsRequest,
) -> ApiVersionsResponse {
    answer(version, request, &ctx.image(), ctx.config.node_id)
}

/// The answer of the broker `node_id` holding `image` (whose cluster id is "" before the first
/// metadata image: then only the node id is checked).
fn answer(
    version: i16,
    request: &ApiVersionsRequest,
    image: &MetadataImage,
    node_id: i32,
) -> ApiVersionsResponse {
    let cluster_id = image.cluster_id.as_str();
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
        None => with_features(image),
    }
}

/// Every API, with the features (v3+; ignored by the encoder below).
fn with_features(image: &MetadataImage) -> ApiVersionsResponse {
    let (finalized_features_epoch, finalized_features) = if image.offset > 0 {
        let finalized = image
            .finalized_features
            .iter()
            .map(|(name, level)| FinalizedFeatureKey {
                name: name.clone(),
                max_version_level: *level,
                min_version_level: *level,
            })
            .collect();
        (image.offset, finalized)
    } else {
        (-1, Vec::new())
    };
    ApiVersionsResponse {
        error_code: ErrorCode::NONE.0,
        api_keys: supported_api_versions(),
        throttle_time_ms: 0,
        supported_features: advertised_features()
            .map(|f| SupportedFeatureKey {
                name: f.name.to_string(),
                min_version: f.min_level,
                max_version: f.max_level,
            })
            .collect(),
        finalized_features_epoch,
        finalized_features,
        zk_migration_ready: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn image(cluster_id: &str) -> MetadataImage {
        MetadataImage {
            cluster_id: cluster_id.to_string(),
            ..MetadataImage::default()
        }
    }

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
        let r = answer(5, &request(None, -1), &image("abc"), 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        assert_eq!(r.api_keys, supported_api_versions());
    }

    #[test]
    fn v5_naming_this_broker_lists_every_api() {
        let r = answer(5, &request(Some("abc"), 1), &image("abc"), 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        assert_eq!(r.api_keys.len(), sluice_protocol::SUPPORTED.len());
    }

    #[test]
    fn v5_naming_another_cluster_or_node_asks_for_a_rebootstrap() {
        for (cluster, node) in [("other", 1), ("abc", 2)] {
            let r = answer(5, &request(Some(cluster), node), &image("abc"), 1);
            assert_eq!(r.error_code, ErrorCode::REBOOTSTRAP_REQUIRED.0);
            assert!(r.api_keys.is_empty());
        }
        // Before the first metadata image only the node id can be checked.
        let r = answer(5, &request(Some("abc"), 1), &image(""), 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
        let r = answer(5, &request(Some("abc"), 2), &image(""), 1);
        assert_eq!(r.error_code, ErrorCode::REBOOTSTRAP_REQUIRED.0);
    }

    #[test]
    fn v4_ignores_the_identity_fields() {
        // v4 carries no identity; a struct built with one is not checked against it.
        let r = answer(4, &request(Some("other"), 7), &image("abc"), 1);
        assert_eq!(r.error_code, ErrorCode::NONE.0);
    }

    #[test]
    fn invalid_requests_are_refused_without_apis() {
        for r in [request(Some("abc"), -1), request(None, 1)] {
            let a = answer(5, &r, &image("abc"), 1);
            assert_eq!(a.error_code, ErrorCode::INVALID_REQUEST.0);
            assert!(a.api_keys.is_empty());
        }
        let mut bad_name = request(None, -1);
        bad_name.client_software_name = "-bad".to_string();
        assert_eq!(
            answer(3, &bad_name, &image("abc"), 1).error_code,
            ErrorCode::INVALID_REQUEST.0
        );
        // v0-v2 carry no software fields: nothing to check.
        assert_eq!(
            answer(2, &bad_name, &image("abc"), 1).error_code,
            ErrorCode::NONE.0
        );
    }

    #[test]
    fn features_follow_the_image() {
        let before = with_features(&MetadataImage::default());
        assert_eq!(before.finalized_features_epoch, -1);
        assert!(before.finalized_features.is_empty());
        // Supported: metadata.version and, since KIP-966, eligible.leader.replicas.version.
        let supported: Vec<(&str, i16, i16)> = before
            .supported_features
            .iter()
            .map(|f| (f.name.as_str(), f.min_version, f.max_version))
            .collect();
        assert_eq!(
            supported,
            vec![
                ("metadata.version", 7, 7),
                ("eligible.leader.replicas.version", 0, 1)
            ]
        );
        let image = MetadataImage {
            offset: 12,
            finalized_features: sluice_shard::default_finalized_features(),
            ..MetadataImage::default()
        };
        let after = with_features(&image);
        assert_eq!(after.finalized_features_epoch, 12);
        assert_eq!(
            after.finalized_features,
            vec![
                FinalizedFeatureKey {
                    name: "eligible.leader.replicas.version".into(),
                    max_version_level: 1,
                    min_version_level: 1,
                },
                FinalizedFeatureKey {
                    name: "metadata.version".into(),
                    max_version_level: 7,
                    min_version_level: 7,
                },
            ]
        );
    }
}
