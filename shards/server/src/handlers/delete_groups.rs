//! DeleteGroups (key 42): removes empty groups with their offsets (tombstones in
//! `__consumer_offsets`); a group with members gets NON_EMPTY_GROUP.
//!
//! As Kafka 4.4: the empty group id is a group that does not exist (GROUP_ID_NOT_FOUND, where
//! the other group APIs say INVALID_GROUP_ID), and v3's per-group error message stays null —
//! Kafka fills it only for streams groups' topology descriptions, which Sluice has none of.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::delete_groups::{
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse,
};
use sluice_shard::DeleteGroupArgs;

use crate::context::ShardContext;
use crate::error::group_result_code;
use crate::group_router;

/// Answers DeleteGroups.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut results = Vec::with_capacity(request.groups_names.len());
    for group_id in request.groups_names {
        if group_id.is_empty() {
            results.push(DeletableGroupResult {
                group_id,
                error_code: ErrorCode::GROUP_ID_NOT_FOUND.0,
                error_message: None,
            });
            continue;
        }
        let args = DeleteGroupArgs {
            group_id: group_id.clone(),
        };
        let result = group_router::call(ctx, args).await;
        results.push(DeletableGroupResult {
            group_id,
            error_code: group_result_code(&result).0,
            error_message: None,
        });
    }
    DeleteGroupsResponse {
        throttle_time_ms: 0,
        results,
    }
}
