//! CreatePartitions (key 37): grow topics (KIP-195). The controller checks and places the new
//! partitions; this handler only screens duplicates and turns the outcome into Kafka's codes
//! and messages.

use std::collections::{HashMap, HashSet};

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::create_partitions::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreatePartitionsTopicResult,
};
use sluice_shard::{MetadataError, NewPartitions};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Kafka's message for a topic named more than once in one request.
const DUPLICATE_TOPIC: &str = "Duplicate topic name.";

/// Answers CreatePartitions.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut occurrences: HashMap<&str, usize> = HashMap::new();
    for topic in &request.topics {
        *occurrences.entry(topic.name.as_str()).or_default() += 1;
    }
    // As Kafka's controller: a duplicated name gets one INVALID_REQUEST result and is not
    // looked at further; every other topic is decided on its own. One result per name, in the
    // order the names first appear.
    let mut answered: Vec<&str> = Vec::with_capacity(occurrences.len());
    let mut seen: HashSet<&str> = HashSet::with_capacity(occurrences.len());
    let mut asked = Vec::new();
    for topic in &request.topics {
        if !seen.insert(topic.name.as_str()) {
            continue;
        }
        answered.push(&topic.name);
        if occurrences[topic.name.as_str()] == 1 {
            asked.push(NewPartitions {
                name: topic.name.clone(),
                count: topic.count,
                assignments: topic
                    .assignments
                    .as_ref()
                    .map(|a| a.iter().map(|a| a.broker_ids.clone()).collect()),
            });
        }
    }
    // Nothing to decide (an empty request, or duplicates only): no trip to the controller.
    let decided = if asked.is_empty() {
        Vec::new()
    } else {
        controller_client::create_partitions(&ctx.mesh, asked, request.validate_only).await
    };
    let mut decided = decided.into_iter();
    let results = answered
        .into_iter()
        .map(|name| {
            let outcome = if occurrences[name] > 1 {
                Err((
                    ErrorCode::INVALID_REQUEST,
                    Some(DUPLICATE_TOPIC.to_string()),
                ))
            } else {
                // `ask` returns one result per topic sent; a missing one would be a controller
                // bug, answered as the controller being unavailable rather than a panic.
                match decided
                    .next()
                    .unwrap_or(Err(MetadataError::ControllerNotAvailable))
                {
                    Ok(()) => Ok(()),
                    Err(error) => Err((metadata_error_code(&error), error_message(&error))),
                }
            };
            match outcome {
                Ok(()) => CreatePartitionsTopicResult {
                    name: name.to_string(),
                    error_code: ErrorCode::NONE.0,
                    error_message: None,
                },
                Err((code, message)) => CreatePartitionsTopicResult {
                    name: name.to_string(),
                    error_code: code.0,
                    error_message: message,
                },
            }
        })
        .collect();
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
    }
}

/// The message Kafka sends with the error: the controller's own text, which follows Kafka's
/// wording, without Sluice's category prefix; none for an unknown topic (Kafka's
/// UnknownTopicOrPartitionException carries no message of its own).
fn error_message(error: &MetadataError) -> Option<String> {
    match error {
        MetadataError::UnknownTopicOrPartition => None,
        MetadataError::InvalidPartitions(message)
        | MetadataError::InvalidReplicaAssignment(message)
        | MetadataError::InvalidReplicationFactor(message)
        | MetadataError::InvalidRequest(message) => Some(message.clone()),
        other => Some(other.to_string()),
    }
}
