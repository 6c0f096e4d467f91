//! UpdateFeatures (key 57): change finalized feature levels. Forwarded to the active
//! controller, which checks every change as Kafka's FeatureControlManager does (unknown feature,
//! level outside the supported range, downgrade without a downgrade type, unknown upgrade type)
//! and either refuses the whole request with INVALID_UPDATE_VERSION and Kafka's message, or
//! commits one FeatureLevel record per change to the metadata log. `validate_only` (v1+)
//! checks and writes nothing. v0-1 answer per feature too, each with the top-level result;
//! v2 answers with the top-level result alone.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::update_features::{
    UpdatableFeatureResult, UpdateFeaturesRequest, UpdateFeaturesResponse,
};
use sluice_shard::{FeatureUpdate, UpgradeType};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Answers UpdateFeatures.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: UpdateFeaturesRequest,
) -> UpdateFeaturesResponse {
    let names: Vec<String> = request
        .feature_updates
        .iter()
        .map(|u| u.feature.clone())
        .collect();
    let updates: Vec<FeatureUpdate> = request
        .feature_updates
        .iter()
        .map(|u| FeatureUpdate {
            name: u.feature.clone(),
            level: u.max_version_level,
            upgrade_type: UpgradeType::from_i8(u.effective_upgrade_type(version)),
        })
        .collect();
    let validate_only = version >= 1 && request.validate_only;
    let (code, message) = if updates.is_empty() {
        (ErrorCode::NONE, None)
    } else {
        match controller_client::update_features(&ctx.mesh, updates, validate_only).await {
            Ok(()) => (ErrorCode::NONE, None),
            Err(error) => (metadata_error_code(&error), Some(error.to_string())),
        }
    };
    let results = if version <= 1 {
        names
            .into_iter()
            .map(|feature| UpdatableFeatureResult {
                feature,
                error_code: code.0,
                error_message: message.clone(),
            })
            .collect()
    } else {
        Vec::new()
    };
    UpdateFeaturesResponse {
        throttle_time_ms: 0,
        error_code: code.0,
        error_message: message,
        results,
    }
}
