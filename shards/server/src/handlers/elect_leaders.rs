//! ElectLeaders (key 43): preferred (KIP-183) and unclean (KIP-460) leader elections. The
//! active controller decides each partition (`partition_change::elect_leaders`, Kafka's
//! `ReplicationControlManager.electLeaders`); this handler checks the election type, bounds the
//! wait by `timeout_ms` (0 or less: timed out at once) and groups the outcomes per topic as Kafka
//! answers them.

use std::time::Duration;

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::elect_leaders::{
    ElectLeadersRequest, ElectLeadersResponse, PartitionResult, ReplicaElectionResult,
};
use sluice_shard::{ElectionOutcome, ElectionTopic, MetadataError};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Answers ElectLeaders.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    // v0 has no election type: it only ever asked for preferred leaders.
    let election_type = if version >= 1 {
        request.election_type
    } else {
        0
    };
    // Kafka's `ElectionType.valueOf` knows 0 and 1; anything else is refused as a whole.
    let Ok(election_type @ 0..=1) = u8::try_from(election_type) else {
        return failed(
            &request,
            ErrorCode::INVALID_REQUEST,
            Some(format!("Unknown election type {election_type}")),
        );
    };
    let topics = request.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .map(|t| ElectionTopic {
                topic: t.topic.clone(),
                partitions: t.partitions.clone(),
            })
            .collect()
    });
    // Kafka gives the controller's write the request's deadline: a request still waiting when
    // it passes fails as a whole with REQUEST_TIMED_OUT. A deadline of now or earlier has passed
    // before any controller could decide (Kafka's event queue times such a write out first).
    let Ok(timeout_ms @ 1..) = u64::try_from(request.timeout_ms) else {
        return failed(&request, ErrorCode::REQUEST_TIMED_OUT, None);
    };
    let deadline = Duration::from_millis(timeout_ms);
    let decided = futures_lite::future::or(
        async { Some(controller_client::elect_leaders(&ctx.mesh, election_type, topics).await) },
        async {
            glommio::timer::sleep(deadline).await;
            None
        },
    )
    .await;
    match decided {
        None => failed(&request, ErrorCode::REQUEST_TIMED_OUT, None),
        Some(Err(error)) => failed(&request, metadata_error_code(&error), message(&error)),
        Some(Ok(outcomes)) => ElectLeadersResponse {
            throttle_time_ms: 0,
            error_code: ErrorCode::NONE.0,
            replica_election_results: grouped(&request, outcomes),
        },
    }
}

/// The outcomes per topic: one entry per topic of the request, in its order (a topic named
/// twice twice), or, when every partition was asked, one per topic that has an outcome.
fn grouped(
    request: &ElectLeadersRequest,
    outcomes: Vec<ElectionOutcome>,
) -> Vec<ReplicaElectionResult> {
    let result = |o: ElectionOutcome| PartitionResult {
        partition_id: o.partition,
        error_code: o.error.0,
        error_message: o.message,
    };
    let mut outcomes = outcomes.into_iter();
    match &request.topic_partitions {
        Some(topics) => topics
            .iter()
            .map(|t| ReplicaElectionResult {
                topic: t.topic.clone(),
                partition_result: outcomes
                    .by_ref()
                    .take(t.partitions.len())
                    .map(result)
                    .collect(),
            })
            .collect(),
        None => {
            let mut results: Vec<ReplicaElectionResult> = Vec::new();
            for o in outcomes {
                match results.last_mut() {
                    Some(last) if last.topic == o.topic => last.partition_result.push(result(o)),
                    _ => results.push(ReplicaElectionResult {
                        topic: o.topic.clone(),
                        partition_result: vec![result(o)],
                    }),
                }
            }
            results
        }
    }
}

/// Kafka's `ElectLeadersRequest.getErrorResponse`: the error at the top level (v1+) and on
/// every partition the request named.
fn failed(
    request: &ElectLeadersRequest,
    error: ErrorCode,
    message: Option<String>,
) -> ElectLeadersResponse {
    let replica_election_results = request
        .topic_partitions
        .iter()
        .flatten()
        .map(|t| ReplicaElectionResult {
            topic: t.topic.clone(),
            partition_result: t
                .partitions
                .iter()
                .map(|p| PartitionResult {
                    partition_id: *p,
                    error_code: error.0,
                    error_message: message.clone(),
                })
                .collect(),
        })
        .collect();
    ElectLeadersResponse {
        throttle_time_ms: 0,
        error_code: error.0,
        replica_election_results,
    }
}

/// The message sent with a whole-request failure: the controller's text, none when the
/// controller could not be reached (Kafka's NOT_CONTROLLER carries none either).
fn message(error: &MetadataError) -> Option<String> {
    match error {
        MetadataError::ControllerNotAvailable => None,
        other => Some(other.to_string()),
    }
}
