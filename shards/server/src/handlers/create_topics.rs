//! CreateTopics (key 19): resolve defaults, then let the controller validate, place and record.

use std::collections::HashSet;

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfigs, CreatableTopicResult, CreateTopicsRequest,
    CreateTopicsResponse,
};
use sluice_shard::{MetadataError, NewTopic};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Kafka's config source for a topic-level override.
const DYNAMIC_TOPIC_CONFIG: i8 = 1;

/// Answers CreateTopics.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = request
        .topics
        .iter()
        .filter(|t| !seen.insert(t.name.as_str()))
        .map(|t| t.name.clone())
        .collect();
    let mut asked = Vec::new();
    let mut plan = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        if duplicates.contains(&topic.name) {
            plan.push(Err((
                ErrorCode::INVALID_REQUEST,
                "duplicate topic name in the request".to_string(),
            )));
            continue;
        }
        match new_topic(ctx, topic) {
            Ok(new) => {
                asked.push(new);
                plan.push(Ok(asked.len() - 1));
            }
            Err(error) => plan.push(Err((metadata_error_code(&error), error.to_string()))),
        }
    }
    let results =
        controller_client::create_topics(&ctx.mesh, asked.clone(), request.validate_only).await;
    let topics = request
        .topics
        .iter()
        .zip(plan)
        .map(|(topic, slot)| match slot {
            Err((code, message)) => failed(&topic.name, code, message),
            Ok(i) => match &results[i] {
                Ok(created) => CreatableTopicResult {
                    name: topic.name.clone(),
                    topic_id: created.topic_id,
                    error_code: ErrorCode::NONE.0,
                    num_partitions: created.num_partitions,
                    replication_factor: created.replication_factor,
                    configs: Some(
                        asked[i]
                            .configs
                            .iter()
                            .map(|(name, value)| CreatableTopicConfigs {
                                name: name.clone(),
                                value: Some(value.clone()),
                                read_only: false,
                                config_source: DYNAMIC_TOPIC_CONFIG,
                                is_sensitive: false,
                            })
                            .collect(),
                    ),
                    ..CreatableTopicResult::default()
                },
                Err(error) => failed(&topic.name, metadata_error_code(error), error.to_string()),
            },
        })
        .collect();
    CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
    }
}

/// Resolves -1 defaults and a manual assignment into a topic to create. An assignment is
/// checked here for its shape as Kafka's controller checks it (counts left at -1, each
/// partition once, partitions 0..n-1); its brokers are checked by the controller.
fn new_topic(ctx: &ShardContext, topic: &CreatableTopic) -> Result<NewTopic, MetadataError> {
    let mut num_partitions = topic.num_partitions;
    let mut replication_factor = topic.replication_factor;
    let mut assignments = None;
    if !topic.assignments.is_empty() {
        if replication_factor != -1 {
            return Err(MetadataError::InvalidRequest(
                "A manual partition assignment was specified, but replication factor was not set to -1."
                    .to_string(),
            ));
        }
        if num_partitions != -1 {
            return Err(MetadataError::InvalidRequest(
                "A manual partition assignment was specified, but numPartitions was not set to -1."
                    .to_string(),
            ));
        }
        let count = topic.assignments.len();
        let mut by_partition: Vec<Option<Vec<i32>>> = vec![None; count];
        for a in &topic.assignments {
            let slot = usize::try_from(a.partition_index)
                .ok()
                .and_then(|i| by_partition.get_mut(i));
            match slot {
                Some(Some(_)) => {
                    return Err(MetadataError::InvalidReplicaAssignment(format!(
                        "Found multiple manual partition assignments for partition {}",
                        a.partition_index
                    )))
                }
                Some(slot) => *slot = Some(a.broker_ids.clone()),
                // An index outside 0..n-1 leaves a hole below n.
                None => {
                    return Err(MetadataError::InvalidReplicaAssignment(
                        "partitions should be a consecutive 0-based integer sequence".to_string(),
                    ))
                }
            }
        }
        let replicas: Vec<Vec<i32>> = by_partition.into_iter().flatten().collect();
        num_partitions = i32::try_from(count).unwrap_or(i32::MAX);
        replication_factor = replicas
            .first()
            .map_or(0, |r| i16::try_from(r.len()).unwrap_or(i16::MAX));
        assignments = Some(replicas);
    }
    if num_partitions == -1 {
        num_partitions = ctx.config.num_partitions;
    }
    if replication_factor == -1 {
        replication_factor = ctx.config.default_replication_factor;
    }
    let mut configs = Vec::with_capacity(topic.configs.len());
    for config in &topic.configs {
        let value = config.value.clone().ok_or_else(|| {
            MetadataError::InvalidConfig(format!("null value for config {}", config.name))
        })?;
        configs.push((config.name.clone(), value));
    }
    Ok(NewTopic {
        name: topic.name.clone(),
        num_partitions,
        replication_factor,
        configs,
        assignments,
    })
}

fn failed(name: &str, code: ErrorCode, message: String) -> CreatableTopicResult {
    CreatableTopicResult {
        name: name.to_string(),
        error_code: code.0,
        error_message: Some(message),
        num_partitions: -1,
        replication_factor: -1,
        configs: None,
        ..CreatableTopicResult::default()
    }
}
