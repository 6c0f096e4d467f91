//! OffsetFetch (key 9): a group's committed offsets (-1 where none), for the partitions asked or
//! for all of them. v8+ asks for several groups at once. Without transactions no offset is
//! ever pending, so `require_stable` needs nothing more.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::offset_fetch::{
    OffsetFetchRequest, OffsetFetchRequestTopic, OffsetFetchResponse, OffsetFetchResponseGroup,
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use sluice_shard::OffsetFetchArgs;

use crate::context::ShardContext;
use crate::error::group_error_code;
use crate::group_router;

/// Answers OffsetFetch.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in request.groups {
            let (topics, code) = fetch_group(ctx, group.group_id.clone(), group.topics).await;
            groups.push(OffsetFetchResponseGroup {
                group_id: group.group_id,
                topics,
                error_code: code.0,
            });
        }
        return OffsetFetchResponse {
            throttle_time_ms: 0,
            topics: Vec::new(),
            error_code: 0,
            groups,
        };
    }
    let (mut topics, code) = fetch_group(ctx, request.group_id, request.topics).await;
    if version < 2 && code != ErrorCode::NONE {
        // v1 has no group-level error: each partition carries it.
        for p in topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            p.error_code = code.0;
        }
    }
    OffsetFetchResponse {
        throttle_time_ms: 0,
        topics,
        error_code: code.0,
        groups: Vec::new(),
    }
}

async fn fetch_group(
    ctx: &ShardContext,
    group_id: String,
    topics: Option<Vec<OffsetFetchRequestTopic>>,
) -> (Vec<OffsetFetchResponseTopic>, ErrorCode) {
    let asked: Option<Vec<(String, Vec<i32>)>> = topics.map(|topics| {
        topics
            .into_iter()
            .map(|t| (t.name, t.partition_indexes))
            .collect()
    });
    let args = OffsetFetchArgs {
        group_id,
        topics: asked.clone(),
    };
    let result = group_router::call(ctx, args).await;
    match result {
        Ok(committed) => {
            let topics = committed
                .into_iter()
                .map(|(name, partitions)| OffsetFetchResponseTopic {
                    name,
                    partitions: partitions
                        .into_iter()
                        .map(|(partition_index, value)| match value {
                            Some(v) => OffsetFetchResponsePartition {
                                partition_index,
                                committed_offset: v.offset,
                                committed_leader_epoch: v.leader_epoch,
                                metadata: Some(v.metadata),
                                error_code: 0,
                            },
                            None => none_committed(partition_index, ErrorCode::NONE),
                        })
                        .collect(),
                })
                .collect();
            (topics, ErrorCode::NONE)
        }
        Err(error) => {
            let code = group_error_code(&error);
            // The asked partitions are listed with the error, as Kafka does.
            let topics = asked
                .unwrap_or_default()
                .into_iter()
                .map(|(name, partitions)| OffsetFetchResponseTopic {
                    name,
                    partitions: partitions
                        .into_iter()
                        .map(|p| none_committed(p, ErrorCode::NONE))
                        .collect(),
                })
                .collect();
            (topics, code)
        }
    }
}

fn none_committed(partition_index: i32, code: ErrorCode) -> OffsetFetchResponsePartition {
    OffsetFetchResponsePartition {
        partition_index,
        committed_offset: -1,
        committed_leader_epoch: -1,
        metadata: Some(String::new()),
        error_code: code.0,
    }
}
