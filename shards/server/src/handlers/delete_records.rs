//! DeleteRecords (key 21): moves partitions' log start offsets up, each on the shard that owns
//! the partition; the answer carries the new low watermark.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::delete_records::{
    self as msg, DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopicResult,
};
use sluice_replica::TopicIdPartition;
use sluice_shard::ShardId;

use crate::context::ShardContext;
use crate::router;

super::served_versions!(msg);

/// Answers DeleteRecords.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let image = ctx.image();
    let mut routed: Vec<(ShardId, (TopicIdPartition, i64))> = Vec::new();
    let mut plan: Vec<Vec<Option<usize>>> = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let found = image.topic(&topic.name);
        plan.push(
            topic
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicIdPartition {
                        topic_id: found?.topic_id,
                        partition: p.partition_index,
                    };
                    let shard = image.shard_table.shard_of(&tp)?;
                    routed.push((shard, (tp, p.offset)));
                    Some(routed.len() - 1)
                })
                .collect(),
        );
    }
    let results = router::delete_records(ctx, routed).await;
    let topics = request
        .topics
        .iter()
        .zip(plan)
        .map(|(topic, topic_plan)| DeleteRecordsTopicResult {
            name: topic.name.clone(),
            partitions: topic
                .partitions
                .iter()
                .zip(topic_plan)
                .map(|(p, slot)| {
                    let (code, low_watermark) = match slot.map(|i| &results[i]) {
                        None => (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, -1),
                        Some(Ok(low_watermark)) => (ErrorCode::NONE, *low_watermark),
                        Some(Err(error)) => (error.error_code(), -1),
                    };
                    DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark,
                        error_code: code.0,
                    }
                })
                .collect(),
        })
        .collect();
    DeleteRecordsResponse {
        throttle_time_ms: 0,
        topics,
    }
}
