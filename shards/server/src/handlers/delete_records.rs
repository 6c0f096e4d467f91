//! DeleteRecords (key 21): moves partitions' log start offsets up, each on the shard that owns
//! the partition; the answer carries the new low watermark.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::delete_records::{
    DeleteRecordsPartitionResult, DeleteRecordsRequest, DeleteRecordsResponse,
    DeleteRecordsTopicResult,
};
use sluice_replica::TopicIdPartition;
use sluice_shard::{MetadataImage, ShardId};

use crate::context::ShardContext;
use crate::{leadership, router};

/// Answers DeleteRecords.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let image = ctx.image();
    let mut routed: Vec<(ShardId, (TopicIdPartition, i64))> = Vec::new();
    let mut plan: Vec<Vec<Result<usize, ErrorCode>>> = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        plan.push(
            topic
                .partitions
                .iter()
                .map(|p| {
                    let (shard, tp) = locate(&image, &topic.name, p.partition_index)?;
                    routed.push((shard, (tp, p.offset)));
                    Ok(routed.len() - 1)
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
                        Err(code) => (code, -1),
                        Ok(Ok(low_watermark)) => (ErrorCode::NONE, *low_watermark),
                        Ok(Err(error)) => (error.error_code(), -1),
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

/// Where one partition's deletion runs. As Kafka: unknown partitions are
/// UNKNOWN_TOPIC_OR_PARTITION, partitions this broker does not lead NOT_LEADER_OR_FOLLOWER
/// (only the leader moves the log start offset).
fn locate(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
) -> Result<(ShardId, TopicIdPartition), ErrorCode> {
    let led = leadership::local_leader_by_name(image, topic, partition)?;
    Ok((led.shard, led.tp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::{cluster_image, single_node_image};

    fn code(image: &MetadataImage, topic: &str, partition: i32) -> ErrorCode {
        locate(image, topic, partition).map_or_else(|code| code, |_| ErrorCode::NONE)
    }

    #[test]
    fn only_partitions_led_here_are_trimmed() {
        let image = cluster_image();
        assert_eq!(code(&image, "t", 0), ErrorCode::NONE);
        for partition in [1, 2, 3] {
            assert_eq!(
                code(&image, "t", partition),
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            );
        }
        assert_eq!(code(&image, "t", 4), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
        assert_eq!(code(&image, "u", 0), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    }

    #[test]
    fn single_node_trims_every_partition() {
        let image = single_node_image();
        assert_eq!(code(&image, "t", 0), ErrorCode::NONE);
        assert_eq!(code(&image, "t", 1), ErrorCode::NONE);
    }
}
