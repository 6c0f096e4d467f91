//! DeleteRecords (key 21).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DeleteRecords);

/// The offset meaning "up to the high watermark".
pub const HIGH_WATERMARK: i64 = -1;

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DeleteRecords request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsRequest {
    /// Topics.
    pub topics: Vec<DeleteRecordsTopic>,
    /// How long to wait.
    pub timeout_ms: i32,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<DeleteRecordsPartition>,
}

/// One partition: delete everything before `offset` (-1: the high watermark).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsPartition {
    /// Partition index.
    pub partition_index: i32,
    /// The deletion offset.
    pub offset: i64,
}

impl DeleteRecordsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DeleteRecordsRequest {
            topics: d.array(flex, |d| {
                let t = DeleteRecordsTopic {
                    name: d.string(flex)?,
                    partitions: d.array(flex, |d| {
                        let p = DeleteRecordsPartition {
                            partition_index: d.i32()?,
                            offset: d.i64()?,
                        };
                        read_end(d, flex)?;
                        Ok(p)
                    })?,
                };
                read_end(d, flex)?;
                Ok(t)
            })?,
            timeout_ms: d.i32()?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i64(p.offset);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        e.put_i32(self.timeout_ms);
        put_end(e, flex);
    }
}

/// DeleteRecords response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<DeleteRecordsTopicResult>,
}

/// One topic's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsTopicResult {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<DeleteRecordsPartitionResult>,
}

/// One partition's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteRecordsPartitionResult {
    /// Partition index.
    pub partition_index: i32,
    /// The partition's low watermark (log start offset) after the deletion.
    pub low_watermark: i64,
    /// Error.
    pub error_code: i16,
}

impl DeleteRecordsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DeleteRecordsResponse {
            throttle_time_ms: d.i32()?,
            topics: d.array(flex, |d| {
                let t = DeleteRecordsTopicResult {
                    name: d.string(flex)?,
                    partitions: d.array(flex, |d| {
                        let p = DeleteRecordsPartitionResult {
                            partition_index: d.i32()?,
                            low_watermark: d.i64()?,
                            error_code: d.i16()?,
                        };
                        read_end(d, flex)?;
                        Ok(p)
                    })?,
                };
                read_end(d, flex)?;
                Ok(t)
            })?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i64(p.low_watermark);
                e.put_i16(p.error_code);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
