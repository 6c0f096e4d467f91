//! Heartbeat (key 12): keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin.

use sluice_protocol::messages::heartbeat::{HeartbeatRequest, HeartbeatResponse};
use sluice_shard::HeartbeatArgs;

use crate::context::ShardContext;
use crate::error::group_result_code;
use crate::group_router;

/// Answers Heartbeat.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: HeartbeatRequest,
) -> HeartbeatResponse {
    let args = HeartbeatArgs {
        group_id: request.group_id,
        member_id: request.member_id,
        group_instance_id: request.group_instance_id,
        generation_id: request.generation_id,
    };
    let result = group_router::call(ctx, args).await;
    HeartbeatResponse {
        throttle_time_ms: 0,
        error_code: group_result_code(&result).0,
    }
}
