//! CreatePartitions (key 37): raise a topic's partition count (KIP-195).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(CreatePartitions);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// CreatePartitions request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatePartitionsRequest {
    /// Each topic to grow.
    pub topics: Vec<CreatePartitionsTopic>,
    /// How long to wait for the partitions to be created.
    pub timeout_ms: i32,
    /// Only validate, change nothing.
    pub validate_only: bool,
}

/// One topic to grow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatePartitionsTopic {
    /// Topic name.
    pub name: String,
    /// The new partition count (the total, not the increase).
    pub count: i32,
    /// Replica broker ids of each new partition, in order; `None` lets the controller place them.
    pub assignments: Option<Vec<CreatePartitionsAssignment>>,
}

/// The replicas of one new partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatePartitionsAssignment {
    /// Broker ids, the first being the preferred leader.
    pub broker_ids: Vec<i32>,
}

impl CreatePartitionsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = CreatePartitionsRequest {
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

fn decode_topic(d: &mut Decoder, flex: bool) -> Result<CreatePartitionsTopic> {
    let t = CreatePartitionsTopic {
        name: d.string(flex)?,
        count: d.i32()?,
        assignments: d.nullable_array(flex, |d| {
            let a = CreatePartitionsAssignment {
                broker_ids: d.array(flex, Decoder::i32)?,
            };
            read_end(d, flex)?;
            Ok(a)
        })?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic(t: &CreatePartitionsTopic, e: &mut Encoder, flex: bool) {
    e.put_string(&t.name, flex);
    e.put_i32(t.count);
    e.put_nullable_array(t.assignments.as_deref(), flex, |e, a| {
        e.put_array(&a.broker_ids, flex, |e, b| e.put_i32(*b));
        put_end(e, flex);
    });
    put_end(e, flex);
}

/// CreatePartitions response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatePartitionsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// One result per topic.
    pub results: Vec<CreatePartitionsTopicResult>,
}

/// The result for one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreatePartitionsTopicResult {
    /// Topic name.
    pub name: String,
    /// Error, 0 for none.
    pub error_code: i16,
    /// Error message, null when there was no error (or none to tell).
    pub error_message: Option<String>,
}

impl CreatePartitionsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = CreatePartitionsResponse {
            throttle_time_ms: d.i32()?,
            results: d.array(flex, |d| {
                let r = CreatePartitionsTopicResult {
                    name: d.string(flex)?,
                    error_code: d.i16()?,
                    error_message: d.nullable_string(flex)?,
                };
                read_end(d, flex)?;
                Ok(r)
            })?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.results, flex, |e, r| {
            e.put_string(&r.name, flex);
            e.put_i16(r.error_code);
            e.put_nullable_string(r.error_message.as_deref(), flex);
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
