//! Sends group work to the group's coordinator: the shard that owns the group's partition of
//! `__consumer_offsets` (this one or another, over the mesh) when this broker leads that
//! partition; otherwise the request is answered NOT_COORDINATOR. Creates `__consumer_offsets`
//! the first time a coordinator is looked up, as Kafka does.

use bytes::Bytes;
use futures_channel::oneshot;
use sluice_group::{partition_for_group, GroupError, GroupListing, GROUP_METADATA_TOPIC_NAME};
use sluice_protocol::api_key::ApiKey;
use sluice_protocol::request::{decode_request, RequestBody};
use sluice_shard::{ListGroupsArgs, MetadataError, MetadataImage, NewTopic, ShardId, ShardMessage};
use tracing::warn;

use crate::context::ShardContext;
use crate::group_manager::CoordinatorCall;
use crate::util::join_all;
use crate::{controller_client, leadership};

/// The partition of `__consumer_offsets` that holds `group_id` (Kafka's `partitionFor`).
pub fn offsets_partition(image: &MetadataImage, group_id: &str) -> Result<i32, GroupError> {
    if group_id.is_empty() {
        return Err(GroupError::InvalidGroupId);
    }
    let topic = image
        .topic(GROUP_METADATA_TOPIC_NAME)
        .ok_or(GroupError::CoordinatorNotAvailable)?;
    // An image never holds the topic without its partitions, but the hash below must not
    // divide by zero whatever the image says.
    if topic.partitions.is_empty() {
        return Err(GroupError::CoordinatorNotAvailable);
    }
    Ok(partition_for_group(group_id, topic.partitions.len() as i32))
}

/// The shard of this broker that coordinates `group_id`. NOT_COORDINATOR when this broker does
/// not lead the group's partition — another broker does, or none does — as Kafka answers
/// group requests for a partition it has not loaded: the client looks the coordinator up
/// again (FindCoordinator) and goes there.
pub fn coordinator_shard(image: &MetadataImage, group_id: &str) -> Result<ShardId, GroupError> {
    let partition = offsets_partition(image, group_id)?;
    let topic = image
        .topic(GROUP_METADATA_TOPIC_NAME)
        .ok_or(GroupError::CoordinatorNotAvailable)?;
    leadership::local_leader(image, topic, partition)
        .map(|led| led.shard)
        .map_err(|_| GroupError::NotCoordinator)
}

/// Where a connection is best served, judged from one of its request frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionHome {
    /// Not a request of one group (or its coordinator is not known yet): ask again next time.
    Undecided,
    /// A group coordinated on this shard, or requests of several groups: stay.
    Here,
    /// A group coordinated on this shard of the broker: move there.
    Shard(ShardId),
}

/// The API keys of a member's group traffic. FindCoordinator goes to any broker and the
/// admin APIs (ListGroups, DescribeGroups, DeleteGroups, OffsetDelete) are rare.
const GROUP_CONNECTION_KEYS: [ApiKey; 6] = [
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
];

/// The home of a connection that sent `frame`: the coordinator shard of the group it names,
/// if `frame` is a member's group request. Decodes the frame only for those API keys (once
/// per connection: the caller stops asking once it has an answer; so the copy it decodes is
/// made once).
pub fn connection_home(ctx: &ShardContext, frame: &[u8]) -> ConnectionHome {
    let Some(key) = frame.get(..2).map(|b| i16::from_be_bytes([b[0], b[1]])) else {
        return ConnectionHome::Undecided;
    };
    if !GROUP_CONNECTION_KEYS.iter().any(|k| *k as i16 == key) {
        return ConnectionHome::Undecided;
    }
    // A frame that does not decode is answered by the dispatch as usual.
    let Ok((_, request)) = decode_request(Bytes::copy_from_slice(frame)) else {
        return ConnectionHome::Undecided;
    };
    let group_id = match &request {
        RequestBody::OffsetCommit(r) => &r.group_id,
        RequestBody::OffsetFetch(r) => match r.groups.as_slice() {
            [] => &r.group_id,
            [one] => &one.group_id,
            _ => return ConnectionHome::Here,
        },
        RequestBody::JoinGroup(r) => &r.group_id,
        RequestBody::Heartbeat(r) => &r.group_id,
        RequestBody::LeaveGroup(r) => &r.group_id,
        RequestBody::SyncGroup(r) => &r.group_id,
        _ => return ConnectionHome::Undecided,
    };
    match coordinator_shard(&ctx.image(), group_id) {
        Ok(shard) if shard == ctx.shard_id => ConnectionHome::Here,
        Ok(shard) => ConnectionHome::Shard(shard),
        // No coordinator here (yet): the request gets its error, the next one asks again.
        Err(_) => ConnectionHome::Undecided,
    }
}

/// Serves `request` on its group's coordinator.
pub async fn call<R: CoordinatorCall>(ctx: &ShardContext, request: R) -> R::Response {
    let group_id = request.group_id().unwrap_or_default();
    let shard = match coordinator_shard(&ctx.image(), group_id) {
        Ok(shard) => shard,
        Err(error) => return request.failed(error),
    };
    on_shard(ctx, shard, request).await
}

async fn on_shard<R: CoordinatorCall>(
    ctx: &ShardContext,
    shard: ShardId,
    request: R,
) -> R::Response {
    if shard == ctx.shard_id {
        return request.serve(&ctx.groups, &ctx.core).await;
    }
    let fallback = request.failed(GroupError::CoordinatorNotAvailable);
    let (reply, answer) = oneshot::channel();
    let message = ShardMessage::Group(request.into_work(reply));
    if let Err(error) = ctx.mesh.send_to_shard(shard, message).await {
        warn!(%error, "cannot reach the group coordinator shard");
        return fallback;
    }
    answer.await.unwrap_or(fallback)
}

/// ListGroups across every shard.
pub async fn list_all(ctx: &ShardContext) -> Result<Vec<GroupListing>, GroupError> {
    let shards =
        (0..ctx.mesh.shard_count()).map(|i| on_shard(ctx, ShardId(i as u16), ListGroupsArgs));
    let mut all = Vec::new();
    for answer in join_all(shards).await {
        all.extend(answer?);
    }
    all.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    Ok(all)
}

/// Creates `__consumer_offsets` when it does not exist yet (compacted, with
/// `offsets.topic.num.partitions` partitions).
pub async fn ensure_offsets_topic(ctx: &ShardContext) -> Result<(), GroupError> {
    let image = ctx.image();
    if image.topic(GROUP_METADATA_TOPIC_NAME).is_some() {
        return Ok(());
    }
    let topic = offsets_topic_spec(ctx);
    let results = controller_client::create_topics(&ctx.mesh, vec![topic], false).await;
    match results.into_iter().next() {
        Some(Ok(_)) | Some(Err(MetadataError::TopicAlreadyExists(_))) => Ok(()),
        Some(Err(error)) => {
            warn!(%error, "cannot create __consumer_offsets");
            Err(GroupError::CoordinatorNotAvailable)
        }
        None => Err(GroupError::CoordinatorNotAvailable),
    }
}

/// `__consumer_offsets` as Kafka creates it: `offsets.topic.num.partitions` partitions,
/// compacted, `offsets.topic.segment.bytes` segments.
pub fn offsets_topic_spec(ctx: &ShardContext) -> NewTopic {
    let brokers = ctx.image().brokers.len().max(1) as i16;
    NewTopic {
        name: GROUP_METADATA_TOPIC_NAME.to_string(),
        num_partitions: ctx.config.offsets_topic_num_partitions,
        replication_factor: ctx.config.offsets_topic_replication_factor.min(brokers),
        configs: vec![
            ("cleanup.policy".into(), "compact".into()),
            ("compression.type".into(), "producer".into()),
            (
                "segment.bytes".into(),
                ctx.config.offsets_topic_segment_bytes.to_string(),
            ),
        ],
        assignments: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::leadership::tests::{cluster_image, topic, LOCAL, OTHER};

    /// The first group id (of "g0", "g1", ...) whose partition is `partition` of `count`.
    pub fn group_on(partition: i32, count: i32) -> String {
        (0..)
            .map(|i| format!("g{i}"))
            .find(|g| partition_for_group(g, count) == partition)
            .expect("some group id hashes to every partition")
    }

    /// The cluster image with `__consumer_offsets` (id 50): partition 0 led here, 1 by
    /// `OTHER`, 2 leaderless.
    pub fn image_with_offsets() -> MetadataImage {
        let mut image = cluster_image();
        image.put_topic(topic(
            GROUP_METADATA_TOPIC_NAME,
            50,
            &[(LOCAL, LOCAL), (OTHER, OTHER), (-1, 3)],
        ));
        image
    }

    #[test]
    fn groups_are_served_only_where_their_partition_is_led() {
        let image = image_with_offsets();
        assert_eq!(coordinator_shard(&image, &group_on(0, 3)), Ok(ShardId(0)));
        assert_eq!(
            coordinator_shard(&image, &group_on(1, 3)),
            Err(GroupError::NotCoordinator)
        );
        assert_eq!(
            coordinator_shard(&image, &group_on(2, 3)),
            Err(GroupError::NotCoordinator)
        );
        assert_eq!(
            coordinator_shard(&image, ""),
            Err(GroupError::InvalidGroupId)
        );
    }

    #[test]
    fn no_offsets_topic_means_no_coordinator_yet() {
        let image = cluster_image();
        assert_eq!(
            coordinator_shard(&image, "g"),
            Err(GroupError::CoordinatorNotAvailable)
        );
        let mut image = cluster_image();
        image.put_topic(topic(GROUP_METADATA_TOPIC_NAME, 50, &[]));
        assert_eq!(
            offsets_partition(&image, "g"),
            Err(GroupError::CoordinatorNotAvailable)
        );
    }
}
