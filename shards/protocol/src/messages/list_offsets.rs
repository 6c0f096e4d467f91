//! ListOffsets (key 2): offsets by timestamp (earliest, latest, max timestamp...). Kafka 4
//! accepts v1-v10: flexible from v6, max timestamp v7+ (KIP-734), earliest local v8+ (KIP-405),
//! latest tiered v9+ (KIP-1005), and v10 adds the request's `timeout_ms` for lookups that read
//! remote (tiered) storage (KIP-1075); the v10 response is the same as v9's. v11 has v10's
//! fields and only allows the earliest-pending-upload timestamp (KIP-1023).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(ListOffsets);

/// Timestamp sentinel: latest offset (high watermark or LSO).
pub const LATEST_TIMESTAMP: i64 = -1;
/// Timestamp sentinel: log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// Timestamp sentinel: offset of the record with the max timestamp (v7+).
pub const MAX_TIMESTAMP: i64 = -3;
/// Timestamp sentinel: local log start offset (v8+).
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
/// Timestamp sentinel: last tiered offset (v9+).
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;
/// Timestamp sentinel: earliest offset not yet uploaded to tiered storage (v11+).
pub const EARLIEST_PENDING_UPLOAD_TIMESTAMP: i64 = -6;

/// Whether a request of `version` may ask for `timestamp`: every non-negative timestamp, and
/// each sentinel from the version that introduced it (Kafka's `timestampMinSupportedVersion`).
/// Kafka answers anything else UNSUPPORTED_VERSION for that partition.
pub fn timestamp_supported(version: i16, timestamp: i64) -> bool {
    let min_version = match timestamp {
        t if t >= 0 => return true,
        LATEST_TIMESTAMP | EARLIEST_TIMESTAMP => MIN_VERSION,
        MAX_TIMESTAMP => 7,
        EARLIEST_LOCAL_TIMESTAMP => 8,
        LATEST_TIERED_TIMESTAMP => 9,
        EARLIEST_PENDING_UPLOAD_TIMESTAMP => 11,
        _ => return false,
    };
    version >= min_version
}

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// ListOffsets request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListOffsetsRequest {
    /// Requesting broker id, -1 for clients.
    pub replica_id: i32,
    /// 0 read uncommitted, 1 read committed (v2+).
    pub isolation_level: i8,
    /// Topics.
    pub topics: Vec<ListOffsetsTopic>,
    /// v10+: how long to wait for lookups that read remote (tiered) storage (KIP-1075); 0 (the
    /// schema default) before v10.
    pub timeout_ms: i32,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListOffsetsTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<ListOffsetsPartition>,
}

/// A partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartition {
    /// Partition index.
    pub partition_index: i32,
    /// v4+, -1 if unknown.
    pub current_leader_epoch: i32,
    /// Target timestamp or one of the sentinels.
    pub timestamp: i64,
}

impl Default for ListOffsetsPartition {
    fn default() -> Self {
        ListOffsetsPartition {
            partition_index: 0,
            current_leader_epoch: -1,
            timestamp: LATEST_TIMESTAMP,
        }
    }
}

impl ListOffsetsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = ListOffsetsRequest {
            replica_id: d.i32()?,
            ..Default::default()
        };
        if version >= 2 {
            r.isolation_level = d.i8()?;
        }
        r.topics = d.array(flex, |d| {
            let t = ListOffsetsTopic {
                name: d.string(flex)?,
                partitions: d.array(flex, |d| decode_partition(d, version))?,
            };
            read_end(d, flex)?;
            Ok(t)
        })?;
        if version >= 10 {
            r.timeout_ms = d.i32()?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.replica_id);
        if version >= 2 {
            e.put_i8(self.isolation_level);
        }
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                if version >= 4 {
                    e.put_i32(p.current_leader_epoch);
                }
                e.put_i64(p.timestamp);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        if version >= 10 {
            e.put_i32(self.timeout_ms);
        }
        put_end(e, flex);
    }
}

fn decode_partition(d: &mut Decoder, version: i16) -> Result<ListOffsetsPartition> {
    let mut p = ListOffsetsPartition {
        partition_index: d.i32()?,
        ..Default::default()
    };
    if version >= 4 {
        p.current_leader_epoch = d.i32()?;
    }
    p.timestamp = d.i64()?;
    read_end(d, flexible(version))?;
    Ok(p)
}

/// ListOffsets response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListOffsetsResponse {
    /// v2+.
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<ListOffsetsTopicResponse>,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListOffsetsTopicResponse {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<ListOffsetsPartitionResponse>,
}

/// A partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOffsetsPartitionResponse {
    /// Partition index.
    pub partition_index: i32,
    /// Error.
    pub error_code: i16,
    /// Timestamp of the returned offset, -1 if none.
    pub timestamp: i64,
    /// The offset, -1 if none.
    pub offset: i64,
    /// v4+, -1 if unknown.
    pub leader_epoch: i32,
}

impl Default for ListOffsetsPartitionResponse {
    fn default() -> Self {
        ListOffsetsPartitionResponse {
            partition_index: 0,
            error_code: 0,
            timestamp: -1,
            offset: -1,
            leader_epoch: -1,
        }
    }
}

impl ListOffsetsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = Self::default();
        if version >= 2 {
            r.throttle_time_ms = d.i32()?;
        }
        r.topics = d.array(flex, |d| {
            let t = ListOffsetsTopicResponse {
                name: d.string(flex)?,
                partitions: d.array(flex, |d| decode_partition_response(d, version))?,
            };
            read_end(d, flex)?;
            Ok(t)
        })?;
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 2 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i16(p.error_code);
                e.put_i64(p.timestamp);
                e.put_i64(p.offset);
                if version >= 4 {
                    e.put_i32(p.leader_epoch);
                }
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

fn decode_partition_response(
    d: &mut Decoder,
    version: i16,
) -> Result<ListOffsetsPartitionResponse> {
    let mut p = ListOffsetsPartitionResponse {
        partition_index: d.i32()?,
        error_code: d.i16()?,
        timestamp: d.i64()?,
        offset: d.i64()?,
        ..Default::default()
    };
    if version >= 4 {
        p.leader_epoch = d.i32()?;
    }
    read_end(d, flexible(version))?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sentinel_needs_the_version_that_introduced_it() {
        for (timestamp, first) in [
            (LATEST_TIMESTAMP, 1),
            (EARLIEST_TIMESTAMP, 1),
            (MAX_TIMESTAMP, 7),
            (EARLIEST_LOCAL_TIMESTAMP, 8),
            (LATEST_TIERED_TIMESTAMP, 9),
            (EARLIEST_PENDING_UPLOAD_TIMESTAMP, 11),
        ] {
            for version in MIN_VERSION..=MAX_VERSION {
                assert_eq!(
                    timestamp_supported(version, timestamp),
                    version >= first,
                    "timestamp {timestamp} at v{version}"
                );
            }
        }
        for version in MIN_VERSION..=MAX_VERSION {
            assert!(timestamp_supported(version, 0));
            assert!(timestamp_supported(version, 1_700_000_000_000));
            assert!(!timestamp_supported(version, -7));
            assert!(!timestamp_supported(version, i64::MIN));
        }
    }
}
