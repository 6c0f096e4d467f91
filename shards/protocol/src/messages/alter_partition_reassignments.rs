//! AlterPartitionReassignments (key 45, KIP-455): start or cancel moves of partitions' replicas.
//! v1 adds `allow_replication_factor_change` (KIP-860), echoed in the response.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(AlterPartitionReassignments);

/// The request's `timeout_ms` when a client leaves it out (the schema's default).
pub const TIMEOUT_MS_DEFAULT: i32 = 60_000;

/// AlterPartitionReassignments request. Every version is flexible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsRequest {
    /// How long to wait for the request to complete.
    pub timeout_ms: i32,
    /// Whether a reassignment may change a partition's replica count (v1+; true before).
    pub allow_replication_factor_change: bool,
    /// The topics to reassign.
    pub topics: Vec<ReassignableTopic>,
}

impl Default for AlterPartitionReassignmentsRequest {
    fn default() -> Self {
        AlterPartitionReassignmentsRequest {
            timeout_ms: TIMEOUT_MS_DEFAULT,
            allow_replication_factor_change: true,
            topics: Vec::new(),
        }
    }
}

/// One topic's partitions to reassign.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReassignableTopic {
    /// Topic name.
    pub name: String,
    /// Its partitions.
    pub partitions: Vec<ReassignablePartition>,
}

/// One partition's target.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReassignablePartition {
    /// Partition index.
    pub partition_index: i32,
    /// The replicas to place it on; null cancels the reassignment in progress.
    pub replicas: Option<Vec<i32>>,
}

impl AlterPartitionReassignmentsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let timeout_ms = d.i32()?;
        let allow_replication_factor_change = if version >= 1 { d.bool()? } else { true };
        let topics = d.array(true, |d| {
            let name = d.string(true)?;
            let partitions = d.array(true, |d| {
                let p = ReassignablePartition {
                    partition_index: d.i32()?,
                    replicas: d.nullable_array(true, Decoder::i32)?,
                };
                read_end(d, true)?;
                Ok(p)
            })?;
            read_end(d, true)?;
            Ok(ReassignableTopic { name, partitions })
        })?;
        read_end(d, true)?;
        Ok(AlterPartitionReassignmentsRequest {
            timeout_ms,
            allow_replication_factor_change,
            topics,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.timeout_ms);
        if version >= 1 {
            e.put_bool(self.allow_replication_factor_change);
        }
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i32(p.partition_index);
                e.put_nullable_array(p.replicas.as_deref(), true, |e, r| e.put_i32(*r));
                put_end(e, true);
            });
            put_end(e, true);
        });
        put_end(e, true);
    }
}

/// AlterPartitionReassignments response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionReassignmentsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// The request's flag, echoed (v1+).
    pub allow_replication_factor_change: bool,
    /// Top-level error.
    pub error_code: i16,
    /// Top-level error message.
    pub error_message: Option<String>,
    /// One entry per topic.
    pub responses: Vec<ReassignableTopicResponse>,
}

impl Default for AlterPartitionReassignmentsResponse {
    fn default() -> Self {
        AlterPartitionReassignmentsResponse {
            throttle_time_ms: 0,
            allow_replication_factor_change: true,
            error_code: 0,
            error_message: None,
            responses: Vec::new(),
        }
    }
}

/// One topic's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReassignableTopicResponse {
    /// Topic name.
    pub name: String,
    /// One entry per partition.
    pub partitions: Vec<ReassignablePartitionResponse>,
}

/// One partition's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReassignablePartitionResponse {
    /// Partition index.
    pub partition_index: i32,
    /// Error, 0 on success.
    pub error_code: i16,
    /// Error message, null on success.
    pub error_message: Option<String>,
}

impl AlterPartitionReassignmentsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let throttle_time_ms = d.i32()?;
        let allow_replication_factor_change = if version >= 1 { d.bool()? } else { true };
        let error_code = d.i16()?;
        let error_message = d.nullable_string(true)?;
        let responses = d.array(true, |d| {
            let name = d.string(true)?;
            let partitions = d.array(true, |d| {
                let p = ReassignablePartitionResponse {
                    partition_index: d.i32()?,
                    error_code: d.i16()?,
                    error_message: d.nullable_string(true)?,
                };
                read_end(d, true)?;
                Ok(p)
            })?;
            read_end(d, true)?;
            Ok(ReassignableTopicResponse { name, partitions })
        })?;
        read_end(d, true)?;
        Ok(AlterPartitionReassignmentsResponse {
            throttle_time_ms,
            allow_replication_factor_change,
            error_code,
            error_message,
            responses,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.throttle_time_ms);
        if version >= 1 {
            e.put_bool(self.allow_replication_factor_change);
        }
        e.put_i16(self.error_code);
        e.put_nullable_string(self.error_message.as_deref(), true);
        e.put_array(&self.responses, true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i16(p.error_code);
                e.put_nullable_string(p.error_message.as_deref(), true);
                put_end(e, true);
            });
            put_end(e, true);
        });
        put_end(e, true);
    }
}
