//! Sends group work to the group's coordinator: the shard that owns the group's partition of
//! `__consumer_offsets` (this one or another, over the mesh). Creates `__consumer_offsets` the
//! first time a coordinator is looked up, as Kafka does.

use futures_channel::oneshot;
use sluice_group::{partition_for_group, GroupError, GroupListing, GROUP_METADATA_TOPIC_NAME};
use sluice_replica::TopicIdPartition;
use sluice_shard::{
    GroupRequest, GroupResponse, GroupWork, MetadataError, NewTopic, ShardId, ShardMessage,
};
use tracing::warn;

use crate::context::ShardContext;
use crate::controller_client;
use crate::util::join_all;

/// The coordinator of `group_id`: its partition of `__consumer_offsets` and the shard owning
/// it.
pub fn coordinator_of(ctx: &ShardContext, group_id: &str) -> Result<(i32, ShardId), GroupError> {
    if group_id.is_empty() {
        return Err(GroupError::InvalidGroupId);
    }
    let image = ctx.image();
    let topic = image
        .topic(GROUP_METADATA_TOPIC_NAME)
        .ok_or(GroupError::CoordinatorNotAvailable)?;
    let partition = partition_for_group(group_id, topic.partitions.len() as i32);
    let tp = TopicIdPartition {
        topic_id: topic.topic_id,
        partition,
    };
    let shard = image
        .shard_table
        .shard_of(&tp)
        .ok_or(GroupError::CoordinatorNotAvailable)?;
    Ok((partition, shard))
}

/// Serves `request` on its group's coordinator.
pub async fn call(ctx: &ShardContext, request: GroupRequest) -> GroupResponse {
    let group_id = request.group_id().unwrap_or_default();
    let shard = match coordinator_of(ctx, group_id) {
        Ok((_, shard)) => shard,
        Err(error) => return request.failed(error),
    };
    on_shard(ctx, shard, request).await
}

async fn on_shard(ctx: &ShardContext, shard: ShardId, request: GroupRequest) -> GroupResponse {
    if shard == ctx.shard_id {
        return ctx.groups.handle(ctx, request).await;
    }
    let fallback = request.failed(GroupError::CoordinatorNotAvailable);
    let (reply, answer) = oneshot::channel();
    let message = ShardMessage::Group(GroupWork { request, reply });
    if let Err(error) = ctx.mesh.send(shard, message).await {
        warn!(%error, "cannot reach the group coordinator shard");
        return fallback;
    }
    answer.await.unwrap_or(fallback)
}

/// ListGroups across every shard.
pub async fn list_all(ctx: &ShardContext) -> Result<Vec<GroupListing>, GroupError> {
    let shards =
        (0..ctx.mesh.shard_count()).map(|i| on_shard(ctx, ShardId(i as u16), GroupRequest::List));
    let mut all = Vec::new();
    for answer in join_all(shards.collect()).await {
        match answer {
            GroupResponse::List(Ok(groups)) => all.extend(groups),
            GroupResponse::List(Err(error)) => return Err(error),
            other => unreachable!("a List request is answered with List, not {other:?}"),
        }
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
    let results = controller_client::create_topics(ctx, vec![topic], false).await;
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
    }
}
