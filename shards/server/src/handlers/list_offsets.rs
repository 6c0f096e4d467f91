//! ListOffsets (key 2): earliest, latest, max-timestamp and by-timestamp lookups, each on the
//! shard that owns the partition.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::list_offsets::{
    self as msg, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopicResponse,
};
use sluice_replica::TopicIdPartition;
use sluice_shard::ShardId;

use crate::context::ShardContext;
use crate::router;

super::served_versions!(msg);

/// Answers ListOffsets.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let image = ctx.image();
    let mut routed: Vec<(ShardId, (TopicIdPartition, i64))> = Vec::new();
    let mut plan: Vec<Vec<Result<(usize, i32), ErrorCode>>> =
        Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let found = image.topic(&topic.name);
        let mut topic_plan = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let slot = found
                .and_then(|t| {
                    let tp = TopicIdPartition {
                        topic_id: t.topic_id,
                        partition: p.partition_index,
                    };
                    let shard = image.shard_table.shard_of(&tp)?;
                    let epoch = t
                        .partitions
                        .get(p.partition_index as usize)
                        .map(|x| x.leader_epoch)?;
                    routed.push((shard, (tp, p.timestamp)));
                    Some((routed.len() - 1, epoch))
                })
                .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
            topic_plan.push(slot);
        }
        plan.push(topic_plan);
    }
    let results = router::list_offsets(ctx, routed).await;
    let topics = request
        .topics
        .iter()
        .zip(plan)
        .map(|(topic, topic_plan)| ListOffsetsTopicResponse {
            name: topic.name.clone(),
            partitions: topic
                .partitions
                .iter()
                .zip(topic_plan)
                .map(|(p, slot)| {
                    let (code, found, epoch) = match slot {
                        Err(code) => (code, None, -1),
                        Ok((i, epoch)) => match &results[i] {
                            Ok(found) => (ErrorCode::NONE, *found, epoch),
                            Err(error) => (error.error_code(), None, -1),
                        },
                    };
                    ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: code.0,
                        timestamp: found.map_or(-1, |f| f.timestamp),
                        offset: found.map_or(-1, |f| f.offset),
                        leader_epoch: if found.is_some() { epoch } else { -1 },
                    }
                })
                .collect(),
        })
        .collect();
    ListOffsetsResponse {
        throttle_time_ms: 0,
        topics,
    }
}
