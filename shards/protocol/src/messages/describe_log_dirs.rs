//! DescribeLogDirs (key 35): the broker's log directories with the size of each partition's log
//! in them (`kafka-log-dirs --describe`). v0 was removed in Kafka 4.0; v3 adds the top-level
//! error code, v4 the volume's total and usable bytes (KIP-827), v5 `IsCordoned` (KIP-1066).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DescribeLogDirs);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DescribeLogDirs request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeLogDirsRequest {
    /// Topics and partitions to describe; `None`: every partition.
    pub topics: Option<Vec<DescribableLogDirTopic>>,
}

/// One topic's partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribableLogDirTopic {
    /// Topic name.
    pub topic: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

impl DescribeLogDirsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DescribeLogDirsRequest {
            topics: d.nullable_array(flex, |d| {
                let t = DescribableLogDirTopic {
                    topic: d.string(flex)?,
                    partitions: d.array(flex, |d| d.i32())?,
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
        e.put_nullable_array(self.topics.as_deref(), flex, |e, t| {
            e.put_string(&t.topic, flex);
            e.put_array(&t.partitions, flex, |e, p| e.put_i32(*p));
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

/// DescribeLogDirs response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeLogDirsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error (v3+).
    pub error_code: i16,
    /// One entry per log directory.
    pub results: Vec<DescribeLogDirsResult>,
}

/// One log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeLogDirsResult {
    /// The directory's error.
    pub error_code: i16,
    /// Absolute path.
    pub log_dir: String,
    /// Topics with partitions in it.
    pub topics: Vec<DescribeLogDirsTopic>,
    /// Size of the volume holding the directory (v4+; -1 unknown).
    pub total_bytes: i64,
    /// Bytes of that volume usable by the broker (v4+; -1 unknown).
    pub usable_bytes: i64,
    /// Whether the directory is cordoned: no new partitions placed in it (v5+).
    pub is_cordoned: bool,
}

impl Default for DescribeLogDirsResult {
    fn default() -> Self {
        DescribeLogDirsResult {
            error_code: 0,
            log_dir: String::new(),
            topics: Vec::new(),
            total_bytes: -1,
            usable_bytes: -1,
            is_cordoned: false,
        }
    }
}

/// One topic of a log directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeLogDirsTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<DescribeLogDirsPartition>,
}

/// One partition's log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeLogDirsPartition {
    /// Partition index.
    pub partition_index: i32,
    /// Bytes of the log's segments.
    pub partition_size: i64,
    /// How far the log end is behind the high watermark (or, for a future log, the current
    /// log's end).
    pub offset_lag: i64,
    /// Whether this is a future log being moved in by AlterReplicaLogDirs.
    pub is_future_key: bool,
}

impl DescribeLogDirsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let throttle_time_ms = d.i32()?;
        let error_code = if version >= 3 { d.i16()? } else { 0 };
        let results = d.array(flex, |d| {
            let mut r = DescribeLogDirsResult {
                error_code: d.i16()?,
                log_dir: d.string(flex)?,
                topics: d.array(flex, |d| {
                    let t = DescribeLogDirsTopic {
                        name: d.string(flex)?,
                        partitions: d.array(flex, |d| {
                            let p = DescribeLogDirsPartition {
                                partition_index: d.i32()?,
                                partition_size: d.i64()?,
                                offset_lag: d.i64()?,
                                is_future_key: d.bool()?,
                            };
                            read_end(d, flex)?;
                            Ok(p)
                        })?,
                    };
                    read_end(d, flex)?;
                    Ok(t)
                })?,
                ..DescribeLogDirsResult::default()
            };
            if version >= 4 {
                r.total_bytes = d.i64()?;
                r.usable_bytes = d.i64()?;
            }
            if version >= 5 {
                r.is_cordoned = d.bool()?;
            }
            read_end(d, flex)?;
            Ok(r)
        })?;
        read_end(d, flex)?;
        Ok(DescribeLogDirsResponse {
            throttle_time_ms,
            error_code,
            results,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        if version >= 3 {
            e.put_i16(self.error_code);
        }
        e.put_array(&self.results, flex, |e, r| {
            e.put_i16(r.error_code);
            e.put_string(&r.log_dir, flex);
            e.put_array(&r.topics, flex, |e, t| {
                e.put_string(&t.name, flex);
                e.put_array(&t.partitions, flex, |e, p| {
                    e.put_i32(p.partition_index);
                    e.put_i64(p.partition_size);
                    e.put_i64(p.offset_lag);
                    e.put_bool(p.is_future_key);
                    put_end(e, flex);
                });
                put_end(e, flex);
            });
            if version >= 4 {
                e.put_i64(r.total_bytes);
                e.put_i64(r.usable_bytes);
            }
            if version >= 5 {
                e.put_bool(r.is_cordoned);
            }
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
