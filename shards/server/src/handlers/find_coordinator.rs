//! FindCoordinator (key 10): the broker that coordinates a group — the leader of the group's
//! partition of `__consumer_offsets`, which is created on the first lookup. v4+ looks up several
//! keys at once. Transactions have no coordinator yet: COORDINATOR_NOT_AVAILABLE, which clients
//! retry.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::find_coordinator::{
    self as msg, Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
};
use sluice_replica::TopicIdPartition;

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

super::served_versions!(msg);

/// Answers FindCoordinator.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let keys = if version >= 4 {
        request.coordinator_keys
    } else {
        vec![request.key]
    };
    let mut coordinators = Vec::with_capacity(keys.len());
    for key in keys {
        coordinators.push(find(ctx, request.key_type, key).await);
    }
    if version >= 4 {
        return FindCoordinatorResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            node_id: -1,
            host: String::new(),
            port: -1,
            coordinators,
        };
    }
    let c = coordinators
        .pop()
        .expect("one key below v4, one coordinator for it");
    FindCoordinatorResponse {
        throttle_time_ms: 0,
        error_code: c.error_code,
        error_message: c.error_message,
        node_id: c.node_id,
        host: c.host,
        port: c.port,
        coordinators: Vec::new(),
    }
}

async fn find(ctx: &ShardContext, key_type: i8, key: String) -> Coordinator {
    let failed = |key: String, code: ErrorCode| Coordinator {
        key,
        node_id: -1,
        host: String::new(),
        port: -1,
        error_code: code.0,
        error_message: code.name().map(String::from),
    };
    match key_type {
        msg::KEY_TYPE_GROUP => {}
        msg::KEY_TYPE_TRANSACTION => return failed(key, ErrorCode::COORDINATOR_NOT_AVAILABLE),
        _ => return failed(key, ErrorCode::INVALID_REQUEST),
    }
    if let Err(error) = group_router::ensure_offsets_topic(ctx).await {
        return failed(key, group_error_code(&error));
    }
    let partition = match group_router::coordinator_of(ctx, &key) {
        Ok((partition, _)) => partition,
        Err(error) => return failed(key, group_error_code(&error)),
    };
    let image = ctx.image();
    let leader = image
        .topic(sluice_group::GROUP_METADATA_TOPIC_NAME)
        .and_then(|t| {
            let tp = TopicIdPartition {
                topic_id: t.topic_id,
                partition,
            };
            debug_assert!(image.shard_table.shard_of(&tp).is_some());
            t.partitions.get(partition as usize).map(|p| p.leader)
        });
    match leader.and_then(|l| image.brokers.iter().find(|b| b.node_id == l)) {
        Some(broker) => Coordinator {
            key,
            node_id: broker.node_id,
            host: broker.host.clone(),
            port: broker.port,
            error_code: 0,
            error_message: None,
        },
        None => failed(key, ErrorCode::COORDINATOR_NOT_AVAILABLE),
    }
}
