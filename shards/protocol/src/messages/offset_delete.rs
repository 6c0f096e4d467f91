//! OffsetDelete (key 47, KIP-496): delete a group's committed offsets for
//! partitions it no longer consumes. Kafka 4.1 has only v0, which is not
//! flexible. A later Kafka makes v1 flexible (KIP-1313, per the trunk
//! schema); [`FLEXIBLE_MIN_VERSION`] is 1 so that such a too-new request's
//! header still parses and can be answered with `UNSUPPORTED_VERSION`.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

crate::apis::declared_versions!(OffsetDelete);

/// OffsetDelete request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteRequest {
    /// The group id.
    pub group_id: String,
    /// Topics.
    pub topics: Vec<OffsetDeleteRequestTopic>,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteRequestTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<OffsetDeleteRequestPartition>,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteRequestPartition {
    /// Partition index.
    pub partition_index: i32,
}

impl OffsetDeleteRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        Ok(OffsetDeleteRequest {
            group_id: d.string(false)?,
            topics: d.array(false, |d| {
                Ok(OffsetDeleteRequestTopic {
                    name: d.string(false)?,
                    partitions: d.array(false, |d| {
                        Ok(OffsetDeleteRequestPartition {
                            partition_index: d.i32()?,
                        })
                    })?,
                })
            })?,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_string(&self.group_id, false);
        e.put_array(&self.topics, false, |e, t| {
            e.put_string(&t.name, false);
            e.put_array(&t.partitions, false, |e, p| e.put_i32(p.partition_index));
        });
    }
}

/// OffsetDelete response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteResponse {
    /// Top-level error code.
    pub error_code: i16,
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<OffsetDeleteResponseTopic>,
}

/// One topic's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteResponseTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<OffsetDeleteResponsePartition>,
}

/// One partition's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetDeleteResponsePartition {
    /// Partition index.
    pub partition_index: i32,
    /// Error code.
    pub error_code: i16,
}

impl OffsetDeleteResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        Ok(OffsetDeleteResponse {
            error_code: d.i16()?,
            throttle_time_ms: d.i32()?,
            topics: d.array(false, |d| {
                Ok(OffsetDeleteResponseTopic {
                    name: d.string(false)?,
                    partitions: d.array(false, |d| {
                        Ok(OffsetDeleteResponsePartition {
                            partition_index: d.i32()?,
                            error_code: d.i16()?,
                        })
                    })?,
                })
            })?,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_i16(self.error_code);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.topics, false, |e, t| {
            e.put_string(&t.name, false);
            e.put_array(&t.partitions, false, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i16(p.error_code);
            });
        });
    }
}
