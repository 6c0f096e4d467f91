//! ListPartitionReassignments (key 46, KIP-455): the reassignments in progress, with each
//! partition's replicas and the ones being added and removed.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(ListPartitionReassignments);

/// The request's `timeout_ms` when a client leaves it out (the schema's default).
pub const TIMEOUT_MS_DEFAULT: i32 = 60_000;

/// ListPartitionReassignments request. Every version is flexible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPartitionReassignmentsRequest {
    /// How long to wait for the answer.
    pub timeout_ms: i32,
    /// The partitions to list; null lists every reassignment in progress.
    pub topics: Option<Vec<ListPartitionReassignmentsTopic>>,
}

impl Default for ListPartitionReassignmentsRequest {
    fn default() -> Self {
        ListPartitionReassignmentsRequest {
            timeout_ms: TIMEOUT_MS_DEFAULT,
            topics: None,
        }
    }
}

/// One topic's partitions to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPartitionReassignmentsTopic {
    /// Topic name.
    pub name: String,
    /// Partition indexes.
    pub partition_indexes: Vec<i32>,
}

impl ListPartitionReassignmentsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let timeout_ms = d.i32()?;
        let topics = d.nullable_array(true, |d| {
            let t = ListPartitionReassignmentsTopic {
                name: d.string(true)?,
                partition_indexes: d.array(true, Decoder::i32)?,
            };
            read_end(d, true)?;
            Ok(t)
        })?;
        read_end(d, true)?;
        Ok(ListPartitionReassignmentsRequest { timeout_ms, topics })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_i32(self.timeout_ms);
        e.put_nullable_array(self.topics.as_deref(), true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partition_indexes, true, |e, p| e.put_i32(*p));
            put_end(e, true);
        });
        put_end(e, true);
    }
}

/// ListPartitionReassignments response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPartitionReassignmentsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error.
    pub error_code: i16,
    /// Top-level error message.
    pub error_message: Option<String>,
    /// The topics with reassignments in progress.
    pub topics: Vec<OngoingTopicReassignment>,
}

/// One topic's reassignments in progress.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OngoingTopicReassignment {
    /// Topic name.
    pub name: String,
    /// Its partitions being reassigned.
    pub partitions: Vec<OngoingPartitionReassignment>,
}

/// One partition being reassigned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OngoingPartitionReassignment {
    /// Partition index.
    pub partition_index: i32,
    /// The current replicas (the union of the old and the target ones).
    pub replicas: Vec<i32>,
    /// The replicas being added.
    pub adding_replicas: Vec<i32>,
    /// The replicas being removed.
    pub removing_replicas: Vec<i32>,
}

impl ListPartitionReassignmentsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let throttle_time_ms = d.i32()?;
        let error_code = d.i16()?;
        let error_message = d.nullable_string(true)?;
        let topics = d.array(true, |d| {
            let name = d.string(true)?;
            let partitions = d.array(true, |d| {
                let p = OngoingPartitionReassignment {
                    partition_index: d.i32()?,
                    replicas: d.array(true, Decoder::i32)?,
                    adding_replicas: d.array(true, Decoder::i32)?,
                    removing_replicas: d.array(true, Decoder::i32)?,
                };
                read_end(d, true)?;
                Ok(p)
            })?;
            read_end(d, true)?;
            Ok(OngoingTopicReassignment { name, partitions })
        })?;
        read_end(d, true)?;
        Ok(ListPartitionReassignmentsResponse {
            throttle_time_ms,
            error_code,
            error_message,
            topics,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_i16(self.error_code);
        e.put_nullable_string(self.error_message.as_deref(), true);
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i32(p.partition_index);
                e.put_array(&p.replicas, true, |e, r| e.put_i32(*r));
                e.put_array(&p.adding_replicas, true, |e, r| e.put_i32(*r));
                e.put_array(&p.removing_replicas, true, |e, r| e.put_i32(*r));
                put_end(e, true);
            });
            put_end(e, true);
        });
        put_end(e, true);
    }
}
