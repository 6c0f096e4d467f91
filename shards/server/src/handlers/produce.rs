//! Produce (key 0): validate each partition's record batch on the shard that received it, then
//! append it on the shard that owns the partition.
//!
//! Validation follows Kafka's LogValidator at the batch-header level: since Produce v3 a
//! partition carries exactly one batch of magic 2, whose CRC32C, length and offsets must be sane
//! and whose size must fit `max.message.bytes`; a topic whose `cleanup.policy` contains
//! `compact` also refuses records without a key (Kafka's `validateKey`: INVALID_RECORD with
//! `record_errors`). Otherwise records inside (compressed or not) are not
//! decoded: they are stored and served as sent.
//!
//! v13 names topics by id (KIP-516): as Kafka's KafkaApis, an id this broker does not know gets
//! UNKNOWN_TOPIC_ID for each of its partitions (and is never auto-created: there is no name),
//! and the answer names the topic by id. v12 is v11 on the wire; it differs only for
//! transactional producers (KIP-890's implicit AddPartitionsToTxn), which Sluice does not admit:
//! InitProducerId refuses a transactional id, so no batch here belongs to a transaction.

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::produce::{
    self as msg, PartitionProduceResponse, ProduceRequest, ProduceResponse, TopicProduceResponse,
};
use sluice_protocol::record_batch::{
    frame_first_batch, keyless_record_indexes, validate_produce_batch, RecordBatchError,
};
use sluice_protocol::MemoryRecords;
use sluice_replica::{LogAppendInfo, TopicIdPartition};
use sluice_shard::{MetadataImage, ProducePartition, ShardId, TopicImage};

use super::metadata::default_new_topic;
use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::{controller_client, leadership, router};

/// A refusal: Kafka's error code and a message for the client.
type Refusal = (ErrorCode, Option<String>);

/// A partition's refusal with Kafka's per-record errors (ProduceResponse v8+ `record_errors`).
#[derive(Debug)]
struct Refused {
    code: ErrorCode,
    message: Option<String>,
    record_errors: Vec<msg::BatchIndexAndErrorMessage>,
}

impl From<Refusal> for Refused {
    fn from((code, message): Refusal) -> Self {
        Self {
            code,
            message,
            record_errors: Vec::new(),
        }
    }
}

/// A partition's validated batch, bound for its owner shard.
type Routed = (ShardId, (TopicIdPartition, MemoryRecords));

/// Where one partition of the request stands.
enum Slot {
    /// Refused before any append.
    Failed(Refused),
    /// Sent for append; index into the routed list.
    Routed(usize),
}

/// Answers Produce; `None` for acks=0, which gets no response.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    mut request: ProduceRequest,
) -> Option<ProduceResponse> {
    let acks = request.acks;
    let image = ctx.image();
    let acks_valid = matches!(acks, -1..=1);
    let mut routed: Vec<Routed> = Vec::new();
    let mut unknown_topics: Vec<String> = Vec::new();
    let mut slots: Vec<Vec<Slot>> = Vec::with_capacity(request.topic_data.len());
    for topic in &mut request.topic_data {
        let mut topic_slots = Vec::with_capacity(topic.partition_data.len());
        let name = topic_name(&image, version, &topic.name, &topic.topic_id);
        for partition in &mut topic.partition_data {
            let slot = match name {
                // An unknown topic id: KafkaApis sets these aside before anything else, acks
                // included.
                None => Slot::Failed((ErrorCode::UNKNOWN_TOPIC_ID, None).into()),
                Some(_) if !acks_valid => {
                    Slot::Failed((ErrorCode::INVALID_REQUIRED_ACKS, None).into())
                }
                Some(name) => match route(
                    &image,
                    name,
                    partition.index,
                    partition.records.as_deref(),
                    ctx.config.message_max_bytes as usize,
                ) {
                    Ok((shard, tp)) => {
                        // Checked present by `route`; moved out, so that the log can write the
                        // frame's own bytes (the response needs only the partition's index).
                        let records = partition.records.take().unwrap_or_default();
                        routed.push((shard, (tp, records)));
                        Slot::Routed(routed.len() - 1)
                    }
                    Err(refused) => {
                        if refused.code == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                            && image.topic(name).is_none()
                        {
                            unknown_topics.push(name.to_string());
                        }
                        Slot::Failed(refused)
                    }
                },
            };
            topic_slots.push(slot);
        }
        slots.push(topic_slots);
    }
    if !unknown_topics.is_empty() && ctx.config.auto_create_topics_enable {
        create_in_background(ctx, unknown_topics).await;
    }
    let routed = routed
        .into_iter()
        .map(|(shard, (tp, records))| {
            let partition = ProducePartition {
                tp,
                records,
                required_acks: acks,
                timeout_ms: request.timeout_ms,
            };
            (shard, partition)
        })
        .collect();
    let results = router::produce(ctx, routed).await;
    if acks == 0 {
        return None;
    }
    Some(build_response(&image, version, &request, slots, &results))
}

/// The name of the topic a request names: its name before v13; from v13 the name of the topic
/// with its id, `None` when no topic has it.
fn topic_name<'a>(
    image: &'a MetadataImage,
    version: i16,
    name: &'a str,
    topic_id: &Uuid,
) -> Option<&'a str> {
    if version >= msg::TOPIC_ID_MIN_VERSION {
        image.topic_by_id(topic_id).map(|t| t.name.as_str())
    } else {
        Some(name)
    }
}

/// Resolves and validates one partition's records, in Kafka's order: the partition must be
/// known (KafkaApis), the request well formed (`ProduceRequest.validateRecords`: exactly one
/// batch of magic 2), the topic not internal and the partition led here (ReplicaManager), and
/// only then is the batch itself checked (size, CRC, offsets, timestamps: the leader's
/// LogValidator). So a broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER
/// whatever the batch holds, and the client learns of a bad batch from the leader.
fn route(
    image: &MetadataImage,
    topic_name: &str,
    partition: i32,
    records: Option<&[u8]>,
    default_max_message_bytes: usize,
) -> Result<(ShardId, TopicIdPartition), Refused> {
    let topic = image
        .topic(topic_name)
        .ok_or((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None))?;
    if topic.partition(partition).is_none() {
        return Err((ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None).into());
    }
    let records = records.ok_or((
        ErrorCode::INVALID_RECORD,
        Some("records are null".to_string()),
    ))?;
    let batch = single_batch(records)?;
    // Kafka: clients never write to the group coordinator's internal topic.
    if topic_name == sluice_group::GROUP_METADATA_TOPIC_NAME {
        return Err((
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            Some(format!("cannot append to internal topic {topic_name}")),
        )
            .into());
    }
    let led = leadership::local_leader(image, topic, partition).map_err(|code| (code, None))?;
    let max_message_bytes = topic
        .configs
        .get("max.message.bytes")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(default_max_message_bytes);
    validate_batch(batch, max_message_bytes)?;
    let compacted = topic
        .configs
        .get("cleanup.policy")
        .is_some_and(|p| p.split(',').any(|x| x.trim() == "compact"));
    if compacted {
        validate_keys(batch, topic_name, partition)?;
    }
    Ok((led.shard, led.tp))
}

/// The one batch a partition's records must be since Produce v3 (Kafka's
/// `ProduceRequest.validateRecords`), framed and of magic 2.
fn single_batch(records: &[u8]) -> Result<&[u8], Refusal> {
    if records.is_empty() {
        return Err((
            ErrorCode::INVALID_RECORD,
            Some("no record batch".to_string()),
        ));
    }
    let (_, size) = frame_first_batch(records).map_err(batch_error)?;
    let (batch, rest) = records.split_at(size);
    // Anything after the first batch, a whole batch or not, is a second one to Kafka.
    if !rest.is_empty() {
        return Err((
            ErrorCode::INVALID_RECORD,
            Some("produce requests of version 3 or later must carry exactly one record batch per partition".to_string()),
        ));
    }
    Ok(batch)
}

/// What the leader checks before appending: size within `max.message.bytes`, then CRC, record
/// count and offsets, and timestamps.
fn validate_batch(batch: &[u8], max_message_bytes: usize) -> Result<(), Refusal> {
    if batch.len() > max_message_bytes {
        return Err((
            ErrorCode::MESSAGE_TOO_LARGE,
            Some(format!(
                "batch of {} bytes exceeds max.message.bytes {max_message_bytes}",
                batch.len()
            )),
        ));
    }
    let header = validate_produce_batch(batch).map_err(batch_error)?;
    if header.max_timestamp < -1 || header.base_timestamp < -1 {
        return Err((
            ErrorCode::INVALID_TIMESTAMP,
            Some("negative timestamp".to_string()),
        ));
    }
    Ok(())
}

/// Kafka's `LogValidator.validateKey`: a compacted topic refuses records without a key, each
/// named in `record_errors`, with Kafka's messages (`processRecordErrors`: the first three
/// errors in the partition's message).
fn validate_keys(batch: &[u8], topic_name: &str, partition: i32) -> Result<(), Refused> {
    let keyless = keyless_record_indexes(batch)
        .map_err(|e| Refused::from((ErrorCode::INVALID_RECORD, Some(e.to_string()))))?;
    if keyless.is_empty() {
        return Ok(());
    }
    let message = format!(
        "Compacted topic cannot accept message without key in topic partition {topic_name}-{partition}"
    );
    let shown: Vec<String> = keyless
        .iter()
        .take(3)
        .map(|i| format!("RecordError(batchIndex={i}, message='{message}')"))
        .collect();
    Err(Refused {
        code: ErrorCode::INVALID_RECORD,
        message: Some(format!(
            "One or more records have been rejected due to {} record errors in total, and only \
             showing the first three errors at most: [{}]",
            keyless.len(),
            shown.join(", ")
        )),
        record_errors: keyless
            .into_iter()
            .map(|batch_index| msg::BatchIndexAndErrorMessage {
                batch_index,
                batch_index_error_message: Some(message.clone()),
            })
            .collect(),
    })
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
    let _ = controller_client::create_topics(&ctx.mesh, topics, false).await;
}

/// Produce version from which a NOT_LEADER_OR_FOLLOWER answer names the current leader and
/// its endpoint (KIP-951).
const CURRENT_LEADER_MIN_VERSION: i16 = 10;

fn build_response(
    image: &MetadataImage,
    version: i16,
    request: &ProduceRequest,
    slots: Vec<Vec<Slot>>,
    results: &[Result<LogAppendInfo, PartitionError>],
) -> ProduceResponse {
    let mut node_endpoints = Vec::new();
    let responses = request
        .topic_data
        .iter()
        .zip(slots)
        .map(|(topic, topic_slots)| TopicProduceResponse {
            // As the request named it: by name before v13, by id from v13.
            name: topic.name.clone(),
            topic_id: topic.topic_id,
            partition_responses: topic
                .partition_data
                .iter()
                .zip(topic_slots)
                .map(|(partition, slot)| {
                    let mut response = partition_response(partition.index, slot, results);
                    // As Kafka's KafkaApis: point the client at the leader it should retry on.
                    if version >= CURRENT_LEADER_MIN_VERSION
                        && response.error_code == ErrorCode::NOT_LEADER_OR_FOLLOWER.0
                    {
                        let found: Option<&TopicImage> =
                            topic_name(image, version, &topic.name, &topic.topic_id)
                                .and_then(|name| image.topic(name))
                                .map(|t| &**t);
                        let (leader, endpoint) =
                            leadership::current_leader(image, found, partition.index);
                        response.current_leader = leader;
                        leadership::add_endpoint(&mut node_endpoints, endpoint);
                    }
                    response
                })
                .collect(),
        })
        .collect();
    ProduceResponse {
        responses,
        throttle_time_ms: 0,
        node_endpoints,
    }
}

fn partition_response(
    index: i32,
    slot: Slot,
    results: &[Result<LogAppendInfo, PartitionError>],
) -> PartitionProduceResponse {
    let failed = |refused: Refused| PartitionProduceResponse {
        index,
        error_code: refused.code.0,
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: refused.message,
        record_errors: refused.record_errors,
        ..PartitionProduceResponse::default()
    };
    match slot {
        Slot::Failed(refused) => failed(refused),
        Slot::Routed(i) => match &results[i] {
            Ok(info) => PartitionProduceResponse {
                index,
                error_code: ErrorCode::NONE.0,
                base_offset: info.first_offset,
                log_append_time_ms: info.log_append_time_ms,
                log_start_offset: info.log_start_offset,
                ..PartitionProduceResponse::default()
            },
            Err(error) => failed((error.error_code(), Some(error.to_string())).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use sluice_protocol::messages::produce::{
        LeaderIdAndEpoch, PartitionProduceData, TopicProduceData,
    };
    use sluice_protocol::record_batch::RecordBatchBuilder;

    use super::*;
    use crate::leadership::tests::{cluster_image, single_node_image, topic, LOCAL, OTHER};

    const MAX: usize = 1 << 20;

    fn batch() -> Bytes {
        RecordBatchBuilder::new(1_700_000_000_000)
            .record(Some(b"k"), Some(b"v"))
            .build()
    }

    /// A batch whose CRC does not match (the last byte of the record is covered by it).
    fn corrupt_batch() -> Bytes {
        let mut bytes = batch().to_vec();
        if let Some(last) = bytes.last_mut() {
            *last ^= 0xff;
        }
        Bytes::from(bytes)
    }

    fn code<T>(result: Result<T, Refused>) -> ErrorCode {
        match result {
            Ok(_) => ErrorCode::NONE,
            Err(refused) => refused.code,
        }
    }

    #[test]
    fn a_compacted_topic_refuses_keyless_records_as_kafka() {
        let mut image = single_node_image();
        let mut compacted = topic("c", 9, &[(LOCAL, LOCAL)]);
        compacted
            .configs
            .insert("cleanup.policy".into(), "delete,compact".into());
        image.put_topic(compacted);
        let keyless = RecordBatchBuilder::new(1)
            .record(Some(b"k"), Some(b"v"))
            .record(None, Some(b"v"))
            .build();
        let Err(refused) = route(&image, "c", 0, Some(&keyless[..]), MAX) else {
            panic!("keyless record accepted");
        };
        assert_eq!(refused.code, ErrorCode::INVALID_RECORD);
        let expected = "Compacted topic cannot accept message without key in topic partition c-0";
        assert_eq!(
            refused.message.as_deref(),
            Some(
                format!(
                    "One or more records have been rejected due to 1 record errors in total, \
                     and only showing the first three errors at most: \
                     [RecordError(batchIndex=1, message='{expected}')]"
                )
                .as_str()
            )
        );
        assert_eq!(refused.record_errors.len(), 1);
        assert_eq!(refused.record_errors[0].batch_index, 1);
        assert_eq!(
            refused.record_errors[0]
                .batch_index_error_message
                .as_deref(),
            Some(expected)
        );
        // Keyed records pass; the same keyless batch passes on a delete-only topic.
        assert_eq!(
            code(route(&image, "c", 0, Some(&batch()[..]), MAX)),
            ErrorCode::NONE
        );
        assert_eq!(
            code(route(&image, "t", 0, Some(&keyless[..]), MAX)),
            ErrorCode::NONE
        );
    }

    #[test]
    fn partitions_led_elsewhere_are_refused_before_the_batch_is_checked() {
        let image = cluster_image();
        let good = batch();
        let bad = corrupt_batch();
        let routed = route(&image, "t", 0, Some(&good[..]), MAX).expect("led here");
        assert_eq!(routed.0, ShardId(0));
        assert_eq!(
            code(route(&image, "t", 0, Some(&bad[..]), MAX)),
            ErrorCode::CORRUPT_MESSAGE
        );
        for partition in [1, 2, 3] {
            assert_eq!(
                code(route(&image, "t", partition, Some(&good[..]), MAX)),
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            );
            // The leader checks the batch; a broker that does not lead it sends the client on.
            assert_eq!(
                code(route(&image, "t", partition, Some(&bad[..]), MAX)),
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            );
            assert_eq!(
                code(route(&image, "t", partition, Some(&good[..]), 1)),
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            );
        }
        assert_eq!(
            code(route(&image, "t", 4, Some(&good[..]), MAX)),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(
            code(route(&image, "nope", 0, Some(&good[..]), MAX)),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn a_malformed_request_is_refused_before_leadership() {
        let image = cluster_image();
        let mut two = batch().to_vec();
        two.extend_from_slice(&batch());
        let two = Bytes::from(two);
        assert_eq!(
            code(route(&image, "t", 1, Some(&two[..]), MAX)),
            ErrorCode::INVALID_RECORD
        );
        assert_eq!(
            code(route(&image, "t", 1, None, MAX)),
            ErrorCode::INVALID_RECORD
        );
    }

    #[test]
    fn the_internal_topic_is_refused_before_leadership() {
        let mut image = cluster_image();
        image.put_topic(topic(
            sluice_group::GROUP_METADATA_TOPIC_NAME,
            9,
            &[(OTHER, OTHER)],
        ));
        let good = batch();
        let name = sluice_group::GROUP_METADATA_TOPIC_NAME;
        assert_eq!(
            code(route(&image, name, 0, Some(&good[..]), MAX)),
            ErrorCode::INVALID_TOPIC_EXCEPTION
        );
        assert_eq!(
            code(route(&image, name, 1, Some(&good[..]), MAX)),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
    }

    #[test]
    fn single_node_routes_every_partition() {
        let image = single_node_image();
        let good = batch();
        for partition in [0, 1] {
            assert_eq!(
                code(route(&image, "t", partition, Some(&good[..]), MAX)),
                ErrorCode::NONE
            );
        }
        assert_eq!(
            code(route(&image, "t", 0, Some(&good[..]), 10)),
            ErrorCode::MESSAGE_TOO_LARGE
        );
    }

    fn request(partitions: &[i32]) -> ProduceRequest {
        ProduceRequest {
            transactional_id: None,
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![TopicProduceData {
                name: "t".to_string(),
                partition_data: partitions
                    .iter()
                    .map(|index| PartitionProduceData {
                        index: *index,
                        records: None,
                    })
                    .collect(),
                ..TopicProduceData::default()
            }],
        }
    }

    fn not_leader() -> Slot {
        Slot::Failed((ErrorCode::NOT_LEADER_OR_FOLLOWER, None).into())
    }

    #[test]
    fn not_leader_answers_name_the_leader_from_v10() {
        let image = cluster_image();
        let request = request(&[1, 2, 1]);
        let response = build_response(
            &image,
            10,
            &request,
            vec![vec![not_leader(), not_leader(), not_leader()]],
            &[],
        );
        let partitions = &response.responses[0].partition_responses;
        assert_eq!(
            partitions[0].current_leader,
            LeaderIdAndEpoch {
                leader_id: OTHER,
                leader_epoch: 5
            }
        );
        assert_eq!(
            partitions[1].current_leader,
            LeaderIdAndEpoch {
                leader_id: -1,
                leader_epoch: 5
            }
        );
        let endpoints: Vec<(i32, &str, i32)> = response
            .node_endpoints
            .iter()
            .map(|e| (e.node_id, e.host.as_str(), e.port))
            .collect();
        assert_eq!(endpoints, vec![(OTHER, "broker-2", 9092)]);

        let old = build_response(
            &image,
            9,
            &request,
            vec![vec![not_leader(), not_leader(), not_leader()]],
            &[],
        );
        assert!(old.node_endpoints.is_empty());
        assert!(old.responses[0]
            .partition_responses
            .iter()
            .all(|p| p.current_leader == LeaderIdAndEpoch::default()));
    }

    #[test]
    fn v13_names_topics_by_id() {
        let image = cluster_image();
        let id = image.topic("t").map(|t| t.topic_id).expect("topic t");
        let by_id = TopicProduceData {
            topic_id: id,
            ..TopicProduceData::default()
        };
        assert_eq!(
            topic_name(&image, 13, &by_id.name, &by_id.topic_id),
            Some("t")
        );
        let unknown = TopicProduceData {
            topic_id: sluice_protocol::codec::Uuid::from_u128(0xdead),
            ..TopicProduceData::default()
        };
        assert_eq!(
            topic_name(&image, 13, &unknown.name, &unknown.topic_id),
            None
        );
        // Before v13 the name is what counts; from v13 the id (a zero id is no topic's).
        let by_name = TopicProduceData {
            name: "t".to_string(),
            ..TopicProduceData::default()
        };
        assert_eq!(
            topic_name(&image, 12, &by_name.name, &by_name.topic_id),
            Some("t")
        );
        assert_eq!(
            topic_name(&image, 13, &by_name.name, &by_name.topic_id),
            None
        );
    }

    #[test]
    fn v13_answers_by_id_and_names_the_leader_of_the_topic_with_that_id() {
        let image = cluster_image();
        let id = image.topic("t").map(|t| t.topic_id).expect("topic t");
        let mut request = request(&[1, 0]);
        request.topic_data[0].name = String::new();
        request.topic_data[0].topic_id = id;
        let response = build_response(
            &image,
            13,
            &request,
            vec![vec![
                not_leader(),
                Slot::Failed((ErrorCode::UNKNOWN_TOPIC_ID, None).into()),
            ]],
            &[],
        );
        let topic = &response.responses[0];
        assert_eq!((topic.name.as_str(), topic.topic_id), ("", id));
        assert_eq!(
            topic.partition_responses[0].current_leader,
            LeaderIdAndEpoch {
                leader_id: OTHER,
                leader_epoch: 5
            }
        );
        assert_eq!(
            topic.partition_responses[1].error_code,
            ErrorCode::UNKNOWN_TOPIC_ID.0
        );
        assert_eq!(response.node_endpoints.len(), 1);
    }

    #[test]
    fn other_errors_name_no_leader() {
        let image = cluster_image();
        let response = build_response(
            &image,
            11,
            &request(&[1]),
            vec![vec![Slot::Failed(
                (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None).into(),
            )]],
            &[],
        );
        assert_eq!(
            response.responses[0].partition_responses[0].current_leader,
            LeaderIdAndEpoch::default()
        );
        assert!(response.node_endpoints.is_empty());
    }
}
