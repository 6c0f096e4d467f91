//! AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), KIP-455: both
//! are forwarded to the active controller, which decides and lists reassignments as Kafka's
//! `ReplicationControlManager` does (`sluice_controller`'s `reassignment` module). These
//! handlers bound the wait by `timeout_ms` (0 or less: timed out at once, as a deadline already
//! passed) and shape the answers as Kafka's.

use std::future::Future;
use std::time::Duration;

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::alter_partition_reassignments::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use sluice_protocol::messages::list_partition_reassignments::{
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use sluice_shard::{
    MetadataError, ReassignmentOutcome, ReassignmentQuery, ReassignmentTarget, ReassignmentTopic,
};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Runs `ask` unless `timeout_ms` passes first (`None` then, or at once for 0 or less).
async fn within<T>(timeout_ms: i32, ask: impl Future<Output = T>) -> Option<T> {
    let Ok(timeout_ms @ 1..) = u64::try_from(timeout_ms) else {
        return None;
    };
    futures_lite::future::or(async { Some(ask.await) }, async {
        glommio::timer::sleep(Duration::from_millis(timeout_ms)).await;
        None
    })
    .await
}

/// The code and message of a whole-request failure: the controller's text, none when it could
/// not be reached (Kafka's NOT_CONTROLLER carries none either).
fn failure(error: &MetadataError) -> (ErrorCode, Option<String>) {
    let message = match error {
        MetadataError::ControllerNotAvailable => None,
        other => Some(other.to_string()),
    };
    (metadata_error_code(error), message)
}

/// Answers AlterPartitionReassignments.
pub async fn handle_alter(
    ctx: &ShardContext,
    version: i16,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    // v0 has no flag: the replica count may change.
    let allow_replication_factor_change = version < 1 || request.allow_replication_factor_change;
    let topics = request
        .topics
        .iter()
        .map(|t| ReassignmentTopic {
            topic: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| ReassignmentTarget {
                    partition: p.partition_index,
                    replicas: p.replicas.clone(),
                })
                .collect(),
        })
        .collect();
    let decided = within(
        request.timeout_ms,
        controller_client::alter_partition_reassignments(
            &ctx.mesh,
            topics,
            allow_replication_factor_change,
        ),
    )
    .await;
    match decided {
        None => alter_failed(&request, ErrorCode::REQUEST_TIMED_OUT, None),
        Some(Err(error)) => {
            let (code, message) = failure(&error);
            alter_failed(&request, code, message)
        }
        Some(Ok(outcomes)) => AlterPartitionReassignmentsResponse {
            throttle_time_ms: 0,
            allow_replication_factor_change: request.allow_replication_factor_change,
            error_code: ErrorCode::NONE.0,
            error_message: None,
            responses: grouped(&request, outcomes),
        },
    }
}

/// The outcomes per topic, one entry per topic of the request, in its order.
fn grouped(
    request: &AlterPartitionReassignmentsRequest,
    outcomes: Vec<ReassignmentOutcome>,
) -> Vec<ReassignableTopicResponse> {
    let mut outcomes = outcomes.into_iter();
    request
        .topics
        .iter()
        .map(|t| ReassignableTopicResponse {
            name: t.name.clone(),
            partitions: outcomes
                .by_ref()
                .take(t.partitions.len())
                .map(|o| ReassignablePartitionResponse {
                    partition_index: o.partition,
                    error_code: o.error.0,
                    error_message: o.message,
                })
                .collect(),
        })
        .collect()
}

/// Kafka's `AlterPartitionReassignmentsRequest.getErrorResponse`: the error at the top level
/// and on every partition the request named.
fn alter_failed(
    request: &AlterPartitionReassignmentsRequest,
    error: ErrorCode,
    message: Option<String>,
) -> AlterPartitionReassignmentsResponse {
    AlterPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        allow_replication_factor_change: request.allow_replication_factor_change,
        error_code: error.0,
        error_message: message.clone(),
        responses: request
            .topics
            .iter()
            .map(|t| ReassignableTopicResponse {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| ReassignablePartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error.0,
                        error_message: message.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Answers ListPartitionReassignments.
pub async fn handle_list(
    ctx: &ShardContext,
    _version: i16,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let topics = request.topics.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| ReassignmentQuery {
                topic: t.name.clone(),
                partitions: t.partition_indexes.clone(),
            })
            .collect()
    });
    let listed = within(
        request.timeout_ms,
        controller_client::list_partition_reassignments(&ctx.mesh, topics),
    )
    .await;
    let failed = |error: ErrorCode, message| ListPartitionReassignmentsResponse {
        throttle_time_ms: 0,
        error_code: error.0,
        error_message: message,
        topics: Vec::new(),
    };
    match listed {
        None => failed(ErrorCode::REQUEST_TIMED_OUT, None),
        Some(Err(error)) => {
            let (code, message) = failure(&error);
            failed(code, message)
        }
        Some(Ok(ongoing)) => {
            let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
            for o in ongoing {
                let partition = OngoingPartitionReassignment {
                    partition_index: o.partition,
                    replicas: o.replicas,
                    adding_replicas: o.adding_replicas,
                    removing_replicas: o.removing_replicas,
                };
                match topics.iter_mut().find(|t| t.name == o.topic) {
                    Some(topic) => topic.partitions.push(partition),
                    None => topics.push(OngoingTopicReassignment {
                        name: o.topic,
                        partitions: vec![partition],
                    }),
                }
            }
            ListPartitionReassignmentsResponse {
                throttle_time_ms: 0,
                error_code: ErrorCode::NONE.0,
                error_message: None,
                topics,
            }
        }
    }
}
