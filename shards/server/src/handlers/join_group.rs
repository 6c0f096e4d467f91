//! JoinGroup (key 11): a member joins (or rejoins) a group; the answer waits on the group's
//! coordinator until the rebalance completes. v4+ hands a new member its id first
//! (MEMBER_ID_REQUIRED, KIP-394); v5+ carries static membership (`group.instance.id`).
//! v0 carries no rebalance timeout: as Kafka's `JoinGroupRequest` does for v0, the session
//! timeout stands in for it. v0 and v1 answers carry no throttle time (the codec drops it).

use sluice_group::JoinGroupArgs;
use sluice_protocol::messages::join_group::{
    JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember,
};

use super::ClientInfo;
use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

/// Answers JoinGroup.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: JoinGroupRequest,
    client: &ClientInfo,
) -> JoinGroupResponse {
    let rebalance_timeout_ms = request.effective_rebalance_timeout_ms(version);
    let args = JoinGroupArgs {
        group_id: request.group_id,
        member_id: request.member_id,
        group_instance_id: request.group_instance_id,
        client_id: client.client_id.clone(),
        client_host: client.client_host.clone(),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms,
        protocol_type: request.protocol_type,
        protocols: request
            .protocols
            .into_iter()
            // Copied out of the request frame: the group keeps them for its whole generation,
            // and a slice would pin the connection's whole read buffer as long.
            .map(|p| (p.name, bytes::Bytes::copy_from_slice(&p.metadata)))
            .collect(),
        require_known_member_id: version >= 4,
    };
    let result = group_router::call(ctx, args).await;
    JoinGroupResponse {
        throttle_time_ms: 0,
        error_code: result.error.map(|e| group_error_code(&e).0).unwrap_or(0),
        generation_id: result.generation_id,
        protocol_type: result.protocol_type,
        protocol_name: result.protocol_name,
        leader: result.leader_id,
        skip_assignment: result.skip_assignment,
        member_id: result.member_id,
        members: result
            .members
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id,
                group_instance_id: m.group_instance_id,
                metadata: m.metadata,
            })
            .collect(),
    }
}
