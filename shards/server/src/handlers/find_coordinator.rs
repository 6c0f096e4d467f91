//! FindCoordinator (key 10): the broker that coordinates a group — the leader of the group's
//! partition of `__consumer_offsets`, which is created on the first lookup. v4+ looks up several
//! keys at once. Transactions have no coordinator yet: COORDINATOR_NOT_AVAILABLE, which clients
//! retry.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::find_coordinator::{
    self as msg, Coordinator, FindCoordinatorRequest, FindCoordinatorResponse,
};
use sluice_shard::{BrokerImage, MetadataImage};

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

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
    match coordinator(&ctx.image(), &key) {
        Ok(broker) => Coordinator {
            key,
            node_id: broker.node_id,
            host: broker.host.clone(),
            port: broker.port,
            error_code: 0,
            error_message: None,
        },
        Err(code) => failed(key, code),
    }
}

/// The broker coordinating `group_id`: the leader of its partition of `__consumer_offsets`,
/// this broker or another, as Kafka's `getCoordinator` finds it. COORDINATOR_NOT_AVAILABLE
/// (retriable) when that partition has no live leader.
fn coordinator<'i>(image: &'i MetadataImage, group_id: &str) -> Result<&'i BrokerImage, ErrorCode> {
    let partition =
        group_router::offsets_partition(image, group_id).map_err(|e| group_error_code(&e))?;
    image
        .topic(sluice_group::GROUP_METADATA_TOPIC_NAME)
        .and_then(|t| t.partition(partition))
        .and_then(|p| image.broker(p.leader))
        .ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group_router::tests::{group_on, image_with_offsets};
    use crate::leadership::tests::{cluster_image, single_node_image, LOCAL, OTHER};

    #[test]
    fn the_coordinator_is_the_leader_of_the_group_partition() {
        let image = image_with_offsets();
        let here = coordinator(&image, &group_on(0, 3)).expect("led here");
        assert_eq!(here.node_id, LOCAL);
        let there = coordinator(&image, &group_on(1, 3)).expect("led by another broker");
        assert_eq!(
            (there.node_id, there.host.as_str(), there.port),
            (OTHER, "broker-2", 9092)
        );
    }

    #[test]
    fn a_leaderless_group_partition_has_no_coordinator() {
        let image = image_with_offsets();
        assert_eq!(
            coordinator(&image, &group_on(2, 3)).map(|b| b.node_id),
            Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        );
    }

    #[test]
    fn no_offsets_topic_or_group_id() {
        assert_eq!(
            coordinator(&cluster_image(), "g").map(|b| b.node_id),
            Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        );
        assert_eq!(
            coordinator(&image_with_offsets(), "").map(|b| b.node_id),
            Err(ErrorCode::INVALID_GROUP_ID)
        );
    }

    #[test]
    fn single_node_coordinates_every_group() {
        let mut image = single_node_image();
        image.put_topic(crate::leadership::tests::topic(
            sluice_group::GROUP_METADATA_TOPIC_NAME,
            50,
            &[(LOCAL, LOCAL), (LOCAL, LOCAL)],
        ));
        for partition in 0..2 {
            let broker = coordinator(&image, &group_on(partition, 2)).expect("led here");
            assert_eq!(broker.node_id, LOCAL);
        }
    }
}
