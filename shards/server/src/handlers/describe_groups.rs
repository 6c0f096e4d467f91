//! DescribeGroups (key 15): state, protocol and members of each group; member metadata and
//! assignments only once the group is Stable, as Kafka shows them. An unknown group is "Dead"
//! (and, from v6, GROUP_ID_NOT_FOUND, KIP-1043).

use sluice_group::{GroupError, GroupState};
use sluice_protocol::messages::describe_groups::{
    DescribeGroupsRequest, DescribeGroupsResponse, DescribedGroup, DescribedGroupMember,
    AUTHORIZED_OPERATIONS_OMITTED,
};
use sluice_shard::DescribeGroupArgs;

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

/// Kafka's `AclOperation` codes a group supports with no authorizer: READ (3), DELETE (6),
/// DESCRIBE (8).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

/// Answers DescribeGroups.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let operations = if request.include_authorized_operations {
        GROUP_OPERATIONS
    } else {
        AUTHORIZED_OPERATIONS_OMITTED
    };
    let mut groups = Vec::with_capacity(request.groups.len());
    for group_id in request.groups {
        let args = DescribeGroupArgs {
            group_id: group_id.clone(),
        };
        let result = group_router::call(ctx, args).await;
        let mut described = DescribedGroup {
            error_code: 0,
            error_message: None,
            group_id,
            group_state: GroupState::Dead.name().to_string(),
            protocol_type: String::new(),
            protocol_data: String::new(),
            members: Vec::new(),
            authorized_operations: operations,
        };
        match result {
            Ok(d) => {
                described.group_state = d.state.name().to_string();
                described.protocol_type = d.protocol_type;
                described.protocol_data = d.protocol;
                described.members = d
                    .members
                    .into_iter()
                    .map(|m| DescribedGroupMember {
                        member_id: m.member_id,
                        group_instance_id: m.group_instance_id,
                        client_id: m.client_id,
                        client_host: m.client_host,
                        member_metadata: m.metadata,
                        member_assignment: m.assignment,
                    })
                    .collect();
            }
            Err(GroupError::GroupIdNotFound) if version < 6 => {}
            Err(error) => {
                let code = group_error_code(&error);
                described.error_code = code.0;
                described.error_message = code.name().map(String::from);
            }
        }
        groups.push(described);
    }
    DescribeGroupsResponse {
        throttle_time_ms: 0,
        groups,
    }
}
