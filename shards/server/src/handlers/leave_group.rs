//! LeaveGroup (key 13): members leave at once instead of waiting for their session to end.
//! v3+ names several members (by member id or static instance id, KIP-345).

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::leave_group::{
    LeaveGroupRequest, LeaveGroupResponse, MemberResponse,
};
use sluice_shard::LeaveGroupArgs;

use crate::context::ShardContext;
use crate::error::{group_error_code, group_result_code};
use crate::group_router;

/// Answers LeaveGroup.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| (m.member_id.clone(), m.group_instance_id.clone()))
            .collect()
    } else {
        vec![(request.member_id.clone(), None)]
    };
    let args = LeaveGroupArgs {
        group_id: request.group_id,
        members: members.clone(),
    };
    let result = group_router::call(ctx, args).await;
    let per_member = match result {
        Err(error) => {
            return LeaveGroupResponse {
                throttle_time_ms: 0,
                error_code: group_error_code(&error).0,
                members: Vec::new(),
            }
        }
        Ok(per_member) => per_member,
    };
    if version < 3 {
        // One member: its result is the answer.
        let code = per_member
            .first()
            .map(group_result_code)
            .unwrap_or(ErrorCode::NONE);
        return LeaveGroupResponse {
            throttle_time_ms: 0,
            error_code: code.0,
            members: Vec::new(),
        };
    }
    LeaveGroupResponse {
        throttle_time_ms: 0,
        error_code: 0,
        members: members
            .into_iter()
            .zip(per_member)
            .map(|((member_id, group_instance_id), result)| MemberResponse {
                member_id,
                group_instance_id,
                error_code: group_result_code(&result).0,
            })
            .collect(),
    }
}
