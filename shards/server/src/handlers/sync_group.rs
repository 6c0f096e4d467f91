//! SyncGroup (key 14): members fetch their assignment; the leader brings it. The answer waits
//! on the coordinator until the leader's assignment is stored.

use sluice_group::SyncGroupArgs;
use sluice_protocol::messages::sync_group::{SyncGroupRequest, SyncGroupResponse};

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

/// Answers SyncGroup.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: SyncGroupRequest,
) -> SyncGroupResponse {
    let args = SyncGroupArgs {
        group_id: request.group_id,
        generation_id: request.generation_id,
        member_id: request.member_id,
        group_instance_id: request.group_instance_id,
        protocol_type: request.protocol_type,
        protocol_name: request.protocol_name,
        assignments: request
            .assignments
            .into_iter()
            // Copied out of the request frame: kept for the generation (see join_group.rs).
            .map(|a| (a.member_id, bytes::Bytes::copy_from_slice(&a.assignment)))
            .collect(),
    };
    let result = group_router::call(ctx, args).await;
    SyncGroupResponse {
        throttle_time_ms: 0,
        error_code: result.error.map(|e| group_error_code(&e).0).unwrap_or(0),
        protocol_type: result.protocol_type,
        protocol_name: result.protocol_name,
        assignment: result.assignment,
    }
}
