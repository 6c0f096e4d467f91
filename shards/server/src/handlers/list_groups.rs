//! ListGroups (key 16): every group on this broker, from every shard's coordinator; v4+ filters
//! by state, v5+ by type (all groups here are "classic").

use sluice_protocol::messages::list_groups::{ListGroupsRequest, ListGroupsResponse, ListedGroup};

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

/// The type of every group Sluice coordinates.
const CLASSIC_GROUP_TYPE: &str = "classic";

/// Answers ListGroups.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let listings = match group_router::list_all(ctx).await {
        Ok(listings) => listings,
        Err(error) => {
            return ListGroupsResponse {
                throttle_time_ms: 0,
                error_code: group_error_code(&error).0,
                groups: Vec::new(),
            }
        }
    };
    let state_ok = |state: &str| {
        request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|s| s.eq_ignore_ascii_case(state))
    };
    let type_ok = request.types_filter.is_empty()
        || request
            .types_filter
            .iter()
            .any(|t| t.eq_ignore_ascii_case(CLASSIC_GROUP_TYPE));
    let groups = listings
        .into_iter()
        .filter(|g| type_ok && state_ok(g.state.name()))
        .map(|g| ListedGroup {
            group_id: g.group_id,
            protocol_type: g.protocol_type,
            group_state: g.state.name().to_string(),
            group_type: CLASSIC_GROUP_TYPE.to_string(),
        })
        .collect();
    ListGroupsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        groups,
    }
}
