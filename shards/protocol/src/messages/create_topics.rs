//! CreateTopics (key 19).

use crate::codec::{Decoder, Encoder, TaggedFields, Uuid};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(CreateTopics);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// CreateTopics request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicsRequest {
    /// Topics to create.
    pub topics: Vec<CreatableTopic>,
    /// How long to wait for creation.
    pub timeout_ms: i32,
    /// Only validate (v1+).
    pub validate_only: bool,
}

impl Default for CreateTopicsRequest {
    fn default() -> Self {
        CreateTopicsRequest {
            topics: Vec::new(),
            timeout_ms: 60_000,
            validate_only: false,
        }
    }
}

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatableTopic {
    /// Topic name.
    pub name: String,
    /// Partition count, -1 for the default or when `assignments` is given.
    pub num_partitions: i32,
    /// Replication factor, -1 for the default or when `assignments` is given.
    pub replication_factor: i16,
    /// Manual assignment; empty for automatic.
    pub assignments: Vec<CreatableReplicaAssignment>,
    /// Topic config overrides.
    pub configs: Vec<CreatableTopicConfig>,
}

/// Manual replica placement for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatableReplicaAssignment {
    /// Partition index.
    pub partition_index: i32,
    /// Replica broker ids.
    pub broker_ids: Vec<i32>,
}

/// A config override.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatableTopicConfig {
    /// Config name.
    pub name: String,
    /// Config value.
    pub value: Option<String>,
}

impl CreateTopicsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = CreateTopicsRequest {
            topics: d.array(flex, |d| decode_topic(d, flex))?,
            timeout_ms: d.i32()?,
            validate_only: d.bool()?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.topics, flex, |e, t| encode_topic(t, e, flex));
        e.put_i32(self.timeout_ms);
        e.put_bool(self.validate_only);
        put_end(e, flex);
    }
}

fn decode_topic(d: &mut Decoder, flex: bool) -> Result<CreatableTopic> {
    let t = CreatableTopic {
        name: d.string(flex)?,
        num_partitions: d.i32()?,
        replication_factor: d.i16()?,
        assignments: d.array(flex, |d| {
            let a = CreatableReplicaAssignment {
                partition_index: d.i32()?,
                broker_ids: d.array(flex, Decoder::i32)?,
            };
            read_end(d, flex)?;
            Ok(a)
        })?,
        configs: d.array(flex, |d| {
            let c = CreatableTopicConfig {
                name: d.string(flex)?,
                value: d.nullable_string(flex)?,
            };
            read_end(d, flex)?;
            Ok(c)
        })?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic(t: &CreatableTopic, e: &mut Encoder, flex: bool) {
    e.put_string(&t.name, flex);
    e.put_i32(t.num_partitions);
    e.put_i16(t.replication_factor);
    e.put_array(&t.assignments, flex, |e, a| {
        e.put_i32(a.partition_index);
        e.put_array(&a.broker_ids, flex, |e, b| e.put_i32(*b));
        put_end(e, flex);
    });
    e.put_array(&t.configs, flex, |e, c| {
        e.put_string(&c.name, flex);
        e.put_nullable_string(c.value.as_deref(), flex);
        put_end(e, flex);
    });
    put_end(e, flex);
}

/// CreateTopics response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateTopicsResponse {
    /// Throttle time (v2+).
    pub throttle_time_ms: i32,
    /// Per-topic results.
    pub topics: Vec<CreatableTopicResult>,
}

/// Result for one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicResult {
    /// Topic name.
    pub name: String,
    /// Id of the created topic (v7+).
    pub topic_id: Uuid,
    /// Error.
    pub error_code: i16,
    /// Error message (v1+).
    pub error_message: Option<String>,
    /// Tag 0 (v5+): why configs are missing, if they are.
    pub topic_config_error_code: i16,
    /// Partition count (v5+), -1 if unknown.
    pub num_partitions: i32,
    /// Replication factor (v5+), -1 if unknown.
    pub replication_factor: i16,
    /// Effective configs (v5+, nullable).
    pub configs: Option<Vec<CreatableTopicConfigs>>,
}

impl Default for CreatableTopicResult {
    fn default() -> Self {
        CreatableTopicResult {
            name: String::new(),
            topic_id: Uuid::ZERO,
            error_code: 0,
            error_message: None,
            topic_config_error_code: 0,
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
        }
    }
}

/// An effective topic config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatableTopicConfigs {
    /// Config name.
    pub name: String,
    /// Config value.
    pub value: Option<String>,
    /// Read-only config.
    pub read_only: bool,
    /// Where the value comes from, -1 if unknown.
    pub config_source: i8,
    /// Sensitive (value withheld).
    pub is_sensitive: bool,
}

impl Default for CreatableTopicConfigs {
    fn default() -> Self {
        CreatableTopicConfigs {
            name: String::new(),
            value: None,
            read_only: false,
            config_source: -1,
            is_sensitive: false,
        }
    }
}

impl CreateTopicsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let r = CreateTopicsResponse {
            throttle_time_ms: d.i32()?,
            topics: d.array(flexible(version), |d| decode_result(d, version))?,
        };
        read_end(d, flexible(version))?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.topics, flexible(version), |e, t| {
            encode_result(t, e, version)
        });
        put_end(e, flexible(version));
    }
}

fn decode_result(d: &mut Decoder, version: i16) -> Result<CreatableTopicResult> {
    let flex = flexible(version);
    let mut t = CreatableTopicResult {
        name: d.string(flex)?,
        ..Default::default()
    };
    if version >= 7 {
        t.topic_id = d.uuid()?;
    }
    t.error_code = d.i16()?;
    t.error_message = d.nullable_string(flex)?;
    if version >= 5 {
        t.num_partitions = d.i32()?;
        t.replication_factor = d.i16()?;
        t.configs = d.nullable_array(flex, decode_config)?;
        d.read_tagged_fields(|tag, f| {
            if tag == 0 {
                t.topic_config_error_code = f.i16()?;
            }
            Ok(())
        })?;
    }
    Ok(t)
}

fn decode_config(d: &mut Decoder) -> Result<CreatableTopicConfigs> {
    let c = CreatableTopicConfigs {
        name: d.string(true)?,
        value: d.nullable_string(true)?,
        read_only: d.bool()?,
        config_source: d.i8()?,
        is_sensitive: d.bool()?,
    };
    d.tagged_fields()?;
    Ok(c)
}

fn encode_result(t: &CreatableTopicResult, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_string(&t.name, flex);
    if version >= 7 {
        e.put_uuid(t.topic_id);
    }
    e.put_i16(t.error_code);
    e.put_nullable_string(t.error_message.as_deref(), flex);
    if version >= 5 {
        e.put_i32(t.num_partitions);
        e.put_i16(t.replication_factor);
        e.put_nullable_array(t.configs.as_deref(), true, |e, c| {
            e.put_string(&c.name, true);
            e.put_nullable_string(c.value.as_deref(), true);
            e.put_bool(c.read_only);
            e.put_i8(c.config_source);
            e.put_bool(c.is_sensitive);
            e.put_empty_tagged_fields();
        });
        let mut tags = TaggedFields::new();
        if t.topic_config_error_code != 0 {
            tags.add(0, |e| e.put_i16(t.topic_config_error_code));
        }
        e.put_tagged_fields(tags);
    }
}
