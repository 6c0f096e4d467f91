//! OffsetDelete (key 47): removes a group's committed offsets for partitions it no longer
//! consumes (GROUP_SUBSCRIBED_TO_TOPIC for topics its members subscribe to).

use sluice_protocol::messages::offset_delete::{
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
};
use sluice_shard::OffsetDeleteArgs;

use crate::context::ShardContext;
use crate::error::{group_error_code, group_result_code};
use crate::group_router;

/// Answers OffsetDelete.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let partitions = t.partitions.iter().map(|p| p.partition_index).collect();
            (t.name, partitions)
        })
        .collect();
    let args = OffsetDeleteArgs {
        group_id: request.group_id,
        topics,
    };
    let result = group_router::call(ctx, args).await;
    match result {
        Err(error) => OffsetDeleteResponse {
            error_code: group_error_code(&error).0,
            throttle_time_ms: 0,
            topics: Vec::new(),
        },
        Ok(topics) => OffsetDeleteResponse {
            error_code: 0,
            throttle_time_ms: 0,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| OffsetDeleteResponseTopic {
                    name,
                    partitions: partitions
                        .into_iter()
                        .map(|(partition_index, result)| OffsetDeleteResponsePartition {
                            partition_index,
                            error_code: group_result_code(&result).0,
                        })
                        .collect(),
                })
                .collect(),
        },
    }
}
