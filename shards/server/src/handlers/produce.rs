//! Produce (key 0): validate each partition's record batch on the shard that received it, then
//! append it on the shard that owns the partition.
//!
//! Validation follows Kafka's LogValidator at the batch-header level: since Produce v3 a
//! partition carries exactly one batch of magic 2, whose CRC32C, length and offsets must be sane
//! and whose size must fit `max.message.bytes`. Records inside (compressed or not) are not
//! decoded: they are stored and served as sent.

use bytes::Bytes;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::produce::{
    self as msg, PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceResponse,
};
use sluice_protocol::record_batch::{validate_produce_batch, RecordBatchError, RecordBatches};
use sluice_replica::{LogAppendInfo, TopicIdPartition};
use sluice_shard::{MetadataImage, ShardId};

use super::metadata::default_new_topic;
use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::{controller_client, router};

super::served_versions!(msg);

/// A refusal: Kafka's error code and a message for the client.
type Refusal = (ErrorCode, Option<String>);

/// A partition's validated batch, bound for its owner shard.
type Routed = (ShardId, (TopicIdPartition, Bytes));

/// Where one partition of the request stands.
enum Slot {
    /// Refused before any append.
    Failed(ErrorCode, Option<String>),
    /// Sent for append; index into the routed list.
    Routed(usize),
}

/// Answers Produce; `None` for acks=0, which gets no response.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: ProduceRequest,
) -> Option<ProduceResponse> {
    let acks = request.acks;
    let image = ctx.image();
    let acks_valid = matches!(acks, -1..=1);
    let mut routed: Vec<Routed> = Vec::new();
    let mut unknown_topics: Vec<String> = Vec::new();
    let mut slots: Vec<Vec<Slot>> = Vec::with_capacity(request.topic_data.len());
    for topic in &request.topic_data {
        let mut topic_slots = Vec::with_capacity(topic.partition_data.len());
        for partition in &topic.partition_data {
            let slot = if !acks_valid {
                Slot::Failed(ErrorCode::INVALID_REQUIRED_ACKS, None)
            } else {
                match route(
                    ctx,
                    &image,
                    &topic.name,
                    partition.index,
                    partition.records.as_ref(),
                ) {
                    Ok(item) => {
                        routed.push(item);
                        Slot::Routed(routed.len() - 1)
                    }
                    Err((code, message)) => {
                        if code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                            && image.topic(&topic.name).is_none()
                        {
                            unknown_topics.push(topic.name.clone());
                        }
                        Slot::Failed(code, message)
                    }
                }
            };
            topic_slots.push(slot);
        }
        slots.push(topic_slots);
    }
    if !unknown_topics.is_empty() && ctx.config.auto_create_topics_enable {
        create_in_background(ctx, unknown_topics).await;
    }
    let results = router::produce(ctx, routed).await;
    if acks == 0 {
        return None;
    }
    Some(build_response(&request, slots, &results))
}

/// Resolves and validates one partition's records.
fn route(
    ctx: &ShardContext,
    image: &MetadataImage,
    topic_name: &str,
    partition: i32,
    records: Option<&Bytes>,
) -> Result<Routed, Refusal> {
    let topic = image
        .topic(topic_name)
        .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
    // Kafka: clients never write to the group coordinator's internal topic.
    if topic_name == sluice_group::GROUP_METADATA_TOPIC_NAME {
        return Err((
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            Some(format!("cannot append to internal topic {topic_name}")),
        ));
    }
    let tp = TopicIdPartition {
        topic_id: topic.topic_id,
        partition,
    };
    let shard = image
        .shard_table
        .shard_of(&tp)
        .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
    let max_message_bytes = topic
        .configs
        .get("max.message.bytes")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(ctx.config.message_max_bytes as usize);
    let records = records.ok_or((
        ErrorCode::INVALID_RECORD,
        Some("records are null".to_string()),
    ))?;
    validate_records(records, max_message_bytes)?;
    Ok((shard, (tp, records.clone())))
}

/// Exactly one valid magic-2 batch within the size limit.
fn validate_records(
    records: &Bytes,
    max_message_bytes: usize,
) -> Result<(), (ErrorCode, Option<String>)> {
    let mut batches = RecordBatches::new(records.clone());
    let first = batches.next().ok_or((
        ErrorCode::INVALID_RECORD,
        Some("no record batch".to_string()),
    ))?;
    let (_, batch) = first.map_err(batch_error)?;
    if batches.next().is_some() {
        return Err((
            ErrorCode::INVALID_RECORD,
            Some("produce requests of version 3 or later must carry exactly one record batch per partition".to_string()),
        ));
    }
    if batch.len() > max_message_bytes {
        return Err((
            ErrorCode::MESSAGE_TOO_LARGE,
            Some(format!(
                "batch of {} bytes exceeds max.message.bytes {max_message_bytes}",
                batch.len()
            )),
        ));
    }
    let header = validate_produce_batch(&batch).map_err(batch_error)?;
    if header.max_timestamp < -1 || header.base_timestamp < -1 {
        return Err((
            ErrorCode::INVALID_TIMESTAMP,
            Some("negative timestamp".to_string()),
        ));
    }
    Ok(())
}

fn batch_error(error: RecordBatchError) -> Refusal {
    let code = match error {
        RecordBatchError::InvalidMagic(_) => ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
        RecordBatchError::CrcMismatch { .. } | RecordBatchError::Truncated { .. } => {
            ErrorCode::CORRUPT_MESSAGE
        }
        _ => ErrorCode::INVALID_RECORD,
    };
    (code, Some(error.to_string()))
}

/// Kafka creates topics named in a Produce only through Metadata; Sluice also starts the
/// creation here so a producer's retry finds the topic. This request still gets
/// UNKNOWN_TOPIC_OR_PARTITION (retriable), as in Kafka.
async fn create_in_background(ctx: &ShardContext, mut names: Vec<String>) {
    names.sort();
    names.dedup();
    let topics = names.iter().map(|n| default_new_topic(ctx, n)).collect();
    let _ = controller_client::create_topics(ctx, topics, false).await;
}

fn build_response(
    request: &ProduceRequest,
    slots: Vec<Vec<Slot>>,
    results: &[Result<LogAppendInfo, PartitionError>],
) -> ProduceResponse {
    let responses = request
        .topic_data
        .iter()
        .zip(slots)
        .map(|(topic, topic_slots)| TopicProduceResponse {
            name: topic.name.clone(),
            partition_responses: topic
                .partition_data
                .iter()
                .zip(topic_slots)
                .map(|(partition, slot)| partition_response(partition.index, slot, results))
                .collect(),
            ..TopicProduceResponse::default()
        })
        .collect();
    ProduceResponse {
        responses,
        throttle_time_ms: 0,
        ..ProduceResponse::default()
    }
}

fn partition_response(
    index: i32,
    slot: Slot,
    results: &[Result<LogAppendInfo, PartitionError>],
) -> PartitionProduceResponse {
    let failed = |code: ErrorCode, message: Option<String>| PartitionProduceResponse {
        index,
        error_code: code.0,
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: message,
        ..PartitionProduceResponse::default()
    };
    match slot {
        Slot::Failed(code, message) => failed(code, message),
        Slot::Routed(i) => match &results[i] {
            Ok(info) => PartitionProduceResponse {
                index,
                error_code: ErrorCode::NONE.0,
                base_offset: info.first_offset,
                log_append_time_ms: -1,
                log_start_offset: info.log_start_offset,
                ..PartitionProduceResponse::default()
            },
            Err(error) => failed(error.error_code(), Some(error.to_string())),
        },
    }
}
