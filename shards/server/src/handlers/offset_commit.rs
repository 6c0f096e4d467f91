//! OffsetCommit (key 8): a group's consumed positions, written to its partition of
//! `__consumer_offsets` before the answer. Partitions of unknown topics get
//! UNKNOWN_TOPIC_OR_PARTITION; a request-level refusal (generation, member) applies to every
//! partition, as in Kafka.

use sluice_group::{CommitOffset, GroupError, OffsetCommitArgs};
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::offset_commit::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
};

use crate::context::ShardContext;
use crate::error::{group_error_code, group_result_code};
use crate::group_router;

/// Answers OffsetCommit.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let image = ctx.image();
    // Per partition: Some(code) when answered here, None when sent to the coordinator.
    let mut known: Vec<Vec<Option<ErrorCode>>> = Vec::with_capacity(request.topics.len());
    let mut offsets = Vec::new();
    for topic in &request.topics {
        let partitions = image.topic(&topic.name).map(|t| t.partitions.len() as i32);
        let mut codes = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            if partitions.is_some_and(|n| (0..n).contains(&p.partition_index)) {
                offsets.push(CommitOffset {
                    topic: topic.name.clone(),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p.committed_metadata.clone(),
                });
                codes.push(None);
            } else {
                codes.push(Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
            }
        }
        known.push(codes);
    }
    let results: Result<Vec<Result<(), GroupError>>, GroupError> = if offsets.is_empty() {
        Ok(Vec::new())
    } else {
        let args = OffsetCommitArgs {
            group_id: request.group_id,
            generation_id: request.generation_id_or_member_epoch,
            member_id: request.member_id,
            group_instance_id: request.group_instance_id,
            offsets,
        };
        group_router::call(ctx, args).await
    };
    let mut sent = match &results {
        Ok(results) => results.iter().map(group_result_code).collect::<Vec<_>>(),
        Err(_) => Vec::new(),
    }
    .into_iter();
    let group_code = results.as_ref().err().map(group_error_code);
    let topics = request
        .topics
        .into_iter()
        .zip(known)
        .map(|(topic, codes)| OffsetCommitResponseTopic {
            name: topic.name,
            partitions: topic
                .partitions
                .iter()
                .zip(codes)
                .map(|(p, code)| {
                    let code = code
                        .or(group_code)
                        .or_else(|| sent.next())
                        .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
                    OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code.0,
                    }
                })
                .collect(),
        })
        .collect();
    OffsetCommitResponse {
        throttle_time_ms: 0,
        topics,
    }
}
