//! ApiVersions (key 18): what this broker serves. Built from the handler registry. v3+ also
//! carries the features (KIP-584) as a Kafka broker does: the supported ranges (only features
//! Sluice supports above level 0, as Kafka's BrokerFeatures lists them), and from the metadata
//! image the finalized levels with their epoch (the image's metadata offset; -1 and none before
//! the first image).

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::api_versions::{
    self as msg, ApiVersion, ApiVersionsRequest, ApiVersionsResponse, FinalizedFeatureKey,
    SupportedFeatureKey,
};
use sluice_shard::{advertised_features, MetadataImage};

use super::REGISTRY;
use crate::context::ShardContext;

super::served_versions!(msg);

/// Answers ApiVersions.
pub fn handle(
    ctx: &ShardContext,
    _version: i16,
    _request: &ApiVersionsRequest,
) -> ApiVersionsResponse {
    with_features(&ctx.image())
}

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
        api_keys: advertised(),
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

    #[test]
    fn features_follow_the_image() {
        let before = with_features(&MetadataImage::default());
        assert_eq!(before.finalized_features_epoch, -1);
        assert!(before.finalized_features.is_empty());
        assert_eq!(before.supported_features.len(), 1);
        assert_eq!(before.supported_features[0].name, "metadata.version");
        let image = MetadataImage {
            offset: 12,
            finalized_features: sluice_shard::default_finalized_features(),
            ..MetadataImage::default()
        };
        let after = with_features(&image);
        assert_eq!(after.finalized_features_epoch, 12);
        assert_eq!(
            after.finalized_features,
            vec![FinalizedFeatureKey {
                name: "metadata.version".into(),
                max_version_level: 7,
                min_version_level: 7,
            }]
        );
    }
}
