//! ListOffsets (key 2): earliest, latest, max-timestamp and by-timestamp lookups, each on the
//! shard that owns the partition.
//!
//! v10's `timeout_ms` (KIP-1075) bounds only lookups that must read remote (tiered) storage,
//! which Kafka parks in its remote list-offsets purgatory; every log here is local, so every
//! lookup answers at once and the field has nothing to bound, as in Kafka for a topic without
//! tiered storage.
//!
//! Each special timestamp needs the version that introduced it (v7 max timestamp, v8 earliest
//! local, v9 latest tiered, v11 earliest pending upload); earlier versions, and negative
//! timestamps Kafka does not define, get UNSUPPORTED_VERSION for that partition, as Kafka's
//! ReplicaManager answers. Without tiered storage the local log is the whole log: earliest
//! local is the log start offset, and latest tiered and earliest pending upload find no offset
//! (-1, no error), which is what Kafka answers for a topic without remote storage.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::list_offsets::{
    self as msg, ListOffsetsPartitionResponse, ListOffsetsRequest, ListOffsetsResponse,
    ListOffsetsTopicResponse,
};
use sluice_replica::TopicIdPartition;
use sluice_shard::{MetadataImage, ShardId};

use crate::context::ShardContext;
use crate::{leadership, local, router};

/// Answers ListOffsets.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let image = ctx.image();
    let mut routed: Vec<(ShardId, (TopicIdPartition, i64))> = Vec::new();
    let mut plan: Vec<Vec<Result<(usize, i32), ErrorCode>>> =
        Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let mut topic_plan = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let slot = if msg::timestamp_supported(version, p.timestamp) {
                // Kafka: a follower asking (replica id >= 0; -2 is the debugging consumer) reads
                // without isolation, so its "latest" is the leader's log end.
                let timestamp = if request.replica_id >= 0 && p.timestamp == msg::LATEST_TIMESTAMP {
                    local::LOG_END_TIMESTAMP
                } else {
                    p.timestamp
                };
                locate(&image, &topic.name, p.partition_index).map(|(shard, tp, epoch)| {
                    routed.push((shard, (tp, timestamp)));
                    (routed.len() - 1, epoch)
                })
            } else {
                Err(ErrorCode::UNSUPPORTED_VERSION)
            };
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

/// Where one partition's lookup runs: its owner shard, its id and its leader epoch. As Kafka's
/// ReplicaManager: unknown partitions are UNKNOWN_TOPIC_OR_PARTITION, partitions this broker
/// does not lead NOT_LEADER_OR_FOLLOWER.
fn locate(
    image: &MetadataImage,
    topic: &str,
    partition: i32,
) -> Result<(ShardId, TopicIdPartition, i32), ErrorCode> {
    let led = leadership::local_leader_by_name(image, topic, partition)?;
    Ok((led.shard, led.tp, led.partition.leader_epoch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::{cluster_image, single_node_image};

    fn code(image: &MetadataImage, topic: &str, partition: i32) -> ErrorCode {
        locate(image, topic, partition).map_or_else(|code| code, |_| ErrorCode::NONE)
    }

    #[test]
    fn only_partitions_led_here_are_looked_up() {
        let image = cluster_image();
        assert_eq!(
            locate(&image, "t", 0).map(|(shard, _, epoch)| (shard, epoch)),
            Ok((ShardId(0), 5))
        );
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
    fn single_node_looks_up_every_partition() {
        let image = single_node_image();
        assert_eq!(code(&image, "t", 0), ErrorCode::NONE);
        assert_eq!(code(&image, "t", 1), ErrorCode::NONE);
    }
}
