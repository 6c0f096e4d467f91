//! IncrementalAlterConfigs (key 44): SET, DELETE, APPEND and SUBTRACT (list configs) on a
//! topic's overrides, decided by the controller; broker configs are static (see alter_configs).

use sluice_protocol::messages::incremental_alter_configs::{
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, OP_APPEND, OP_DELETE, OP_SET,
    OP_SUBTRACT,
};
use sluice_shard::{ConfigChange, ConfigOp, MetadataError};

use super::alter_configs::{alter, null_value, Resource};
use crate::context::ShardContext;

/// Answers IncrementalAlterConfigs.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let resources = request
        .resources
        .iter()
        .map(|r| {
            Resource::new(r, |c| {
                let value = || c.value.clone().ok_or_else(|| null_value(&c.name));
                let op = match c.config_operation {
                    OP_SET => ConfigOp::Set(value()?),
                    OP_DELETE => ConfigOp::Delete,
                    OP_APPEND => ConfigOp::Append(value()?),
                    OP_SUBTRACT => ConfigOp::Subtract(value()?),
                    other => {
                        return Err(MetadataError::InvalidRequest(format!(
                            "Unknown config operation {other} for {}",
                            c.name
                        )))
                    }
                };
                Ok(ConfigChange {
                    name: c.name.clone(),
                    op,
                })
            })
        })
        .collect();
    IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses: alter(ctx, resources, false, request.validate_only).await,
    }
}
