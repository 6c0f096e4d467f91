//! DeleteTopics (key 20).

use crate::codec::{Decoder, Encoder, Uuid};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DeleteTopics);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DeleteTopics request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteTopicsRequest {
    /// Topics by name or id (v6+).
    pub topics: Vec<DeleteTopicState>,
    /// Topic names (v0-5).
    pub topic_names: Vec<String>,
    /// How long to wait for deletion.
    pub timeout_ms: i32,
}

/// A topic to delete, by name or by id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteTopicState {
    /// Topic name, `None` when deleting by id.
    pub name: Option<String>,
    /// Topic id, zero when deleting by name.
    pub topic_id: Uuid,
}

impl DeleteTopicsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = Self::default();
        if version >= 6 {
            r.topics = d.array(flex, |d| {
                let t = DeleteTopicState {
                    name: d.nullable_string(flex)?,
                    topic_id: d.uuid()?,
                };
                read_end(d, flex)?;
                Ok(t)
            })?;
        } else {
            r.topic_names = d.array(flex, |d| d.string(flex))?;
        }
        r.timeout_ms = d.i32()?;
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 6 {
            e.put_array(&self.topics, flex, |e, t| {
                e.put_nullable_string(t.name.as_deref(), flex);
                e.put_uuid(t.topic_id);
                put_end(e, flex);
            });
        } else {
            e.put_array(&self.topic_names, flex, |e, n| e.put_string(n, flex));
        }
        e.put_i32(self.timeout_ms);
        put_end(e, flex);
    }
}

/// DeleteTopics response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteTopicsResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Per-topic results.
    pub responses: Vec<DeletableTopicResult>,
}

/// Result for one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeletableTopicResult {
    /// Topic name; nullable from v6. Encoded as "" before.
    pub name: Option<String>,
    /// Topic id (v6+).
    pub topic_id: Uuid,
    /// Error.
    pub error_code: i16,
    /// Error message (v5+).
    pub error_message: Option<String>,
}

impl DeleteTopicsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DeleteTopicsResponse {
            throttle_time_ms: d.i32()?,
            responses: d.array(flex, |d| decode_result(d, version))?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.responses, flex, |e, t| {
            if version >= 6 {
                e.put_nullable_string(t.name.as_deref(), flex);
                e.put_uuid(t.topic_id);
            } else {
                e.put_string(t.name.as_deref().unwrap_or_default(), flex);
            }
            e.put_i16(t.error_code);
            if version >= 5 {
                e.put_nullable_string(t.error_message.as_deref(), flex);
            }
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

fn decode_result(d: &mut Decoder, version: i16) -> Result<DeletableTopicResult> {
    let flex = flexible(version);
    let mut t = DeletableTopicResult::default();
    if version >= 6 {
        t.name = d.nullable_string(flex)?;
        t.topic_id = d.uuid()?;
    } else {
        t.name = Some(d.string(flex)?);
    }
    t.error_code = d.i16()?;
    if version >= 5 {
        t.error_message = d.nullable_string(flex)?;
    }
    read_end(d, flex)?;
    Ok(t)
}
