//! Produce (key 0): append record batches to partitions. Kafka 4 accepts v3-v13 (v0-v2 carry
//! the old message formats); flexible from v9, `current_leader` / `node_endpoints` tags in the
//! response from v10 (KIP-951), v11 may answer TRANSACTION_ABORTABLE and v12 is the same on the
//! wire (both KIP-890); v13 names topics by id instead of by name (KIP-516) and may answer
//! UNKNOWN_TOPIC_ID.

use crate::codec::{Decoder, Encoder, TaggedFields, Uuid};
use crate::error::Result;
use crate::memory_records::MemoryRecords;

pub use super::common::{LeaderIdAndEpoch, NodeEndpoint};

use super::common::{
    decode_leader_id_and_epoch, encode_leader_id_and_epoch, put_end, put_node_endpoints_tags,
    read_end, read_node_endpoints_tags,
};

crate::apis::declared_versions!(Produce);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// First version that names topics by id (`TopicId`) rather than by name (`Name`, v0-12).
pub const TOPIC_ID_MIN_VERSION: i16 = 13;

fn uses_topic_ids(version: i16) -> bool {
    version >= TOPIC_ID_MIN_VERSION
}

/// Reads how a topic is named in `version`: `(name, ZERO)` before v13, `("", id)` from v13.
fn decode_topic_key(d: &mut Decoder, version: i16) -> Result<(String, Uuid)> {
    if uses_topic_ids(version) {
        Ok((String::new(), d.uuid()?))
    } else {
        Ok((d.string(flexible(version))?, Uuid::ZERO))
    }
}

/// Writes how a topic is named in `version`: its name before v13, its id from v13.
fn encode_topic_key(e: &mut Encoder, version: i16, name: &str, topic_id: Uuid) {
    if uses_topic_ids(version) {
        e.put_uuid(topic_id);
    } else {
        e.put_string(name, flexible(version));
    }
}

/// Produce request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProduceRequest {
    /// Transactional id, `None` for non-transactional producers.
    pub transactional_id: Option<String>,
    /// 0, 1 or -1 (all in-sync replicas).
    pub acks: i16,
    /// How long to wait for acks.
    pub timeout_ms: i32,
    /// Data per topic.
    pub topic_data: Vec<TopicProduceData>,
}

/// Data for one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicProduceData {
    /// Topic name (v0-12; empty from v13).
    pub name: String,
    /// Topic id (v13+; zero before).
    pub topic_id: Uuid,
    /// Data per partition.
    pub partition_data: Vec<PartitionProduceData>,
}

/// Data for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionProduceData {
    /// Partition index.
    pub index: i32,
    /// Record batches: the request frame's own bytes, writable when the frame was decoded
    /// owned (see [`MemoryRecords`]).
    pub records: Option<MemoryRecords>,
}

impl ProduceRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = ProduceRequest {
            transactional_id: d.nullable_string(flex)?,
            acks: d.i16()?,
            timeout_ms: d.i32()?,
            topic_data: d.array(flex, |d| decode_topic(d, version))?,
        };
        if flex {
            d.tagged_fields()?;
        }
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_nullable_string(self.transactional_id.as_deref(), flex);
        e.put_i16(self.acks);
        e.put_i32(self.timeout_ms);
        e.put_array(&self.topic_data, flex, |e, t| {
            encode_topic_key(e, version, &t.name, t.topic_id);
            e.put_array(&t.partition_data, flex, |e, p| {
                e.put_i32(p.index);
                match &p.records {
                    Some(MemoryRecords::Shared(r)) => e.put_nullable_records(Some(r), flex),
                    Some(MemoryRecords::Owned(r, _)) => e.put_nullable_bytes(Some(&r[..]), flex),
                    None => e.put_nullable_records(None, flex),
                }
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

fn decode_topic(d: &mut Decoder, version: i16) -> Result<TopicProduceData> {
    let flex = flexible(version);
    let (name, topic_id) = decode_topic_key(d, version)?;
    let t = TopicProduceData {
        name,
        topic_id,
        partition_data: d.array(flex, |d| {
            let p = PartitionProduceData {
                index: d.i32()?,
                records: d.nullable_records(flex)?,
            };
            read_end(d, flex)?;
            Ok(p)
        })?,
    };
    read_end(d, flex)?;
    Ok(t)
}

/// Produce response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProduceResponse {
    /// Results per topic.
    pub responses: Vec<TopicProduceResponse>,
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Tag 0 (v10+): endpoints of leaders named in `current_leader` fields.
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// Results for one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicProduceResponse {
    /// Topic name (v0-12; empty from v13).
    pub name: String,
    /// Topic id (v13+; zero before).
    pub topic_id: Uuid,
    /// Results per partition.
    pub partition_responses: Vec<PartitionProduceResponse>,
}

/// Result for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionProduceResponse {
    /// Partition index.
    pub index: i32,
    /// Error.
    pub error_code: i16,
    /// Offset of the first appended record.
    pub base_offset: i64,
    /// Broker append time for LogAppendTime topics, else -1.
    pub log_append_time_ms: i64,
    /// v5+, -1 if unknown.
    pub log_start_offset: i64,
    /// v8+: records that made the batch fail.
    pub record_errors: Vec<BatchIndexAndErrorMessage>,
    /// v8+.
    pub error_message: Option<String>,
    /// Tag 0 (v10+): new leader after NOT_LEADER_OR_FOLLOWER (KIP-951).
    pub current_leader: LeaderIdAndEpoch,
}

impl Default for PartitionProduceResponse {
    fn default() -> Self {
        PartitionProduceResponse {
            index: 0,
            error_code: 0,
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            record_errors: Vec::new(),
            error_message: None,
            current_leader: LeaderIdAndEpoch::default(),
        }
    }
}

/// A failed record within a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchIndexAndErrorMessage {
    /// Index of the record in the batch.
    pub batch_index: i32,
    /// Why it failed.
    pub batch_index_error_message: Option<String>,
}

impl ProduceResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = ProduceResponse {
            responses: d.array(flex, |d| decode_topic_response(d, version))?,
            throttle_time_ms: d.i32()?,
            node_endpoints: Vec::new(),
        };
        if flex {
            r.node_endpoints = read_node_endpoints_tags(d, version >= 10)?;
        }
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.responses, flex, |e, t| {
            encode_topic_response(t, e, version)
        });
        e.put_i32(self.throttle_time_ms);
        if flex {
            put_node_endpoints_tags(e, &self.node_endpoints, version >= 10);
        }
    }
}

fn decode_topic_response(d: &mut Decoder, version: i16) -> Result<TopicProduceResponse> {
    let flex = flexible(version);
    let (name, topic_id) = decode_topic_key(d, version)?;
    let t = TopicProduceResponse {
        name,
        topic_id,
        partition_responses: d.array(flex, |d| decode_partition_response(d, version))?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic_response(t: &TopicProduceResponse, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    encode_topic_key(e, version, &t.name, t.topic_id);
    e.put_array(&t.partition_responses, flex, |e, p| {
        encode_partition_response(p, e, version)
    });
    put_end(e, flex);
}

fn decode_partition_response(d: &mut Decoder, version: i16) -> Result<PartitionProduceResponse> {
    let flex = flexible(version);
    let mut p = PartitionProduceResponse {
        index: d.i32()?,
        error_code: d.i16()?,
        base_offset: d.i64()?,
        log_append_time_ms: d.i64()?,
        ..Default::default()
    };
    if version >= 5 {
        p.log_start_offset = d.i64()?;
    }
    if version >= 8 {
        p.record_errors = d.array(flex, |d| decode_record_error(d, flex))?;
        p.error_message = d.nullable_string(flex)?;
    }
    if flex {
        d.read_tagged_fields(|tag, f| {
            if tag == 0 && version >= 10 {
                p.current_leader = decode_leader_id_and_epoch(f)?;
            }
            Ok(())
        })?;
    }
    Ok(p)
}

fn encode_partition_response(p: &PartitionProduceResponse, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i32(p.index);
    e.put_i16(p.error_code);
    e.put_i64(p.base_offset);
    e.put_i64(p.log_append_time_ms);
    if version >= 5 {
        e.put_i64(p.log_start_offset);
    }
    if version >= 8 {
        e.put_array(&p.record_errors, flex, |e, r| {
            e.put_i32(r.batch_index);
            e.put_nullable_string(r.batch_index_error_message.as_deref(), flex);
            put_end(e, flex);
        });
        e.put_nullable_string(p.error_message.as_deref(), flex);
    }
    if flex {
        let mut tags = TaggedFields::new();
        if version >= 10 && p.current_leader != LeaderIdAndEpoch::default() {
            tags.add(0, |e| encode_leader_id_and_epoch(e, &p.current_leader));
        }
        e.put_tagged_fields(tags);
    }
}

fn decode_record_error(d: &mut Decoder, flex: bool) -> Result<BatchIndexAndErrorMessage> {
    let r = BatchIndexAndErrorMessage {
        batch_index: d.i32()?,
        batch_index_error_message: d.nullable_string(flex)?,
    };
    read_end(d, flex)?;
    Ok(r)
}
