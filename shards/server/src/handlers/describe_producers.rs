//! DescribeProducers (key 61): the active producers of partitions, read from each partition's
//! producer state on the shard that owns it, as Kafka's `KafkaApis.handleDescribeProducersRequest`
//! and `ReplicaManager.activeProducerState` answer:
//!
//! - an illegal topic name: INVALID_TOPIC_EXCEPTION with `Topic.validate`'s message, for every
//!   partition asked; a topic not in the metadata: UNKNOWN_TOPIC_OR_PARTITION with the error's
//!   default message;
//! - a partition the topic does not have: UNKNOWN_TOPIC_OR_PARTITION; one with no replica on
//!   this broker: NOT_LEADER_OR_FOLLOWER (no message). A replica here answers, leader or not,
//!   as Kafka's does from its local log.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_producers::{
    DescribeProducersPartitionResponse, DescribeProducersRequest, DescribeProducersResponse,
    DescribeProducersTopicResponse, ProducerState,
};
use sluice_replica::{ActiveProducer, TopicIdPartition};
use sluice_shard::{MetadataImage, ShardId};

use super::describe_topic_partitions::validate_topic_name;
use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::router;

/// Kafka's default message of UNKNOWN_TOPIC_OR_PARTITION, which it sends with a topic-level
/// refusal.
const UNKNOWN_TOPIC_OR_PARTITION_MESSAGE: &str = "This server does not host this topic-partition.";

/// Where one partition's answer comes from.
enum Slot {
    /// The refusal, with its message.
    Refused(ErrorCode, Option<String>),
    /// Index into the routed work.
    Routed(usize),
}

/// Answers DescribeProducers.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let image = ctx.image();
    let mut routed: Vec<(ShardId, TopicIdPartition)> = Vec::new();
    let plan: Vec<Vec<Slot>> = request
        .topics
        .iter()
        .map(|topic| {
            topic
                .partition_indexes
                .iter()
                .map(|index| match locate(&image, &topic.name, *index) {
                    Ok(item) => {
                        routed.push(item);
                        Slot::Routed(routed.len() - 1)
                    }
                    Err((code, message)) => Slot::Refused(code, message),
                })
                .collect()
        })
        .collect();
    let results = router::describe_producers(ctx, routed).await;
    let topics = request
        .topics
        .into_iter()
        .zip(plan)
        .map(|(topic, slots)| DescribeProducersTopicResponse {
            name: topic.name,
            partitions: topic
                .partition_indexes
                .iter()
                .zip(slots)
                .map(|(index, slot)| match slot {
                    Slot::Refused(code, error_message) => DescribeProducersPartitionResponse {
                        partition_index: *index,
                        error_code: code.0,
                        error_message,
                        active_producers: Vec::new(),
                    },
                    Slot::Routed(i) => answer(*index, &results[i]),
                })
                .collect(),
        })
        .collect();
    DescribeProducersResponse {
        throttle_time_ms: 0,
        topics,
    }
}

/// The owner shard of partition `index` of `topic` on this broker, or the refusal.
fn locate(
    image: &MetadataImage,
    topic: &str,
    index: i32,
) -> Result<(ShardId, TopicIdPartition), (ErrorCode, Option<String>)> {
    if let Err(message) = validate_topic_name(topic) {
        return Err((ErrorCode::INVALID_TOPIC_EXCEPTION, Some(message)));
    }
    let Some(topic) = image.topic(topic) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            Some(UNKNOWN_TOPIC_OR_PARTITION_MESSAGE.to_string()),
        ));
    };
    if topic.partition(index).is_none() {
        return Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None));
    }
    let tp = TopicIdPartition {
        topic_id: topic.topic_id,
        partition: index,
    };
    match image.shard_table.shard_of(&tp) {
        Some(shard) => Ok((shard, tp)),
        None => Err((ErrorCode::NOT_LEADER_OR_FOLLOWER, None)),
    }
}

fn answer(
    index: i32,
    result: &Result<Vec<ActiveProducer>, PartitionError>,
) -> DescribeProducersPartitionResponse {
    match result {
        Ok(producers) => DescribeProducersPartitionResponse {
            partition_index: index,
            error_code: ErrorCode::NONE.0,
            error_message: None,
            active_producers: producers
                .iter()
                .map(|p| ProducerState {
                    producer_id: p.producer_id,
                    producer_epoch: i32::from(p.producer_epoch),
                    last_sequence: p.last_sequence,
                    last_timestamp: p.last_timestamp,
                    coordinator_epoch: p.coordinator_epoch,
                    current_txn_start_offset: p.current_txn_start_offset,
                })
                .collect(),
        },
        Err(error) => {
            // In the image with a replica here but not open on its shard (yet, or any more):
            // Kafka's "known partition without a local log".
            let code = match error.error_code() {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => ErrorCode::NOT_LEADER_OR_FOLLOWER,
                code => code,
            };
            DescribeProducersPartitionResponse {
                partition_index: index,
                error_code: code.0,
                error_message: None,
                active_producers: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::cluster_image;

    fn code(image: &MetadataImage, topic: &str, index: i32) -> (ErrorCode, Option<String>) {
        locate(image, topic, index).map_or_else(|e| e, |_| (ErrorCode::NONE, None))
    }

    #[test]
    fn replicas_here_answer_and_the_others_are_refused_as_kafka_does() {
        let image = cluster_image();
        // Partitions 0 (led here) and 3 (leaderless, replica here) are hosted.
        assert_eq!(code(&image, "t", 0), (ErrorCode::NONE, None));
        assert_eq!(code(&image, "t", 3), (ErrorCode::NONE, None));
        for index in [1, 2] {
            assert_eq!(
                code(&image, "t", index),
                (ErrorCode::NOT_LEADER_OR_FOLLOWER, None)
            );
        }
        for index in [4, -1] {
            assert_eq!(
                code(&image, "t", index),
                (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None)
            );
        }
        assert_eq!(
            code(&image, "nope", 0),
            (
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                Some(UNKNOWN_TOPIC_OR_PARTITION_MESSAGE.to_string())
            )
        );
        assert_eq!(
            code(&image, "a/b", 0),
            (
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                Some(
                    "Topic name is invalid: 'a/b' contains one or more characters other than \
                     ASCII alphanumerics, '.', '_' and '-'"
                        .to_string()
                )
            )
        );
    }
}
