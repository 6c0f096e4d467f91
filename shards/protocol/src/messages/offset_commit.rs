//! OffsetCommit (key 8): commit a group's consumed offsets. Kafka 4.0 removed
//! v0-v1 (KIP-896). v2-v4 carry `retention_time_ms` (ignored by brokers since
//! KIP-211), v5 drops it, v6 adds `committed_leader_epoch`, v7
//! `group_instance_id` (KIP-345), v8 is the first flexible version, and v9
//! (KIP-848) is v8 on the wire: it only allows a member epoch of the new
//! consumer protocol in `generation_id_or_member_epoch`. v10 (KIP-848, topic
//! ids instead of names) is not implemented: Sluice caps at v9, which every
//! client falls back to.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(OffsetCommit);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// OffsetCommit request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    /// The group id.
    pub group_id: String,
    /// The generation (classic protocol) or member epoch (consumer protocol),
    /// -1 for a commit from outside the group.
    pub generation_id_or_member_epoch: i32,
    /// The member id, empty for a commit from outside the group.
    pub member_id: String,
    /// Static instance id (v7+).
    pub group_instance_id: Option<String>,
    /// Retention time, -1 for the broker default (v2-4).
    pub retention_time_ms: i64,
    /// Topics.
    pub topics: Vec<OffsetCommitRequestTopic>,
}

impl Default for OffsetCommitRequest {
    fn default() -> Self {
        OffsetCommitRequest {
            group_id: String::new(),
            generation_id_or_member_epoch: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_time_ms: -1,
            topics: Vec::new(),
        }
    }
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetCommitRequestTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<OffsetCommitRequestPartition>,
}

/// One partition's offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequestPartition {
    /// Partition index.
    pub partition_index: i32,
    /// The offset to commit.
    pub committed_offset: i64,
    /// The leader epoch of the last consumed record, -1 if unknown (v6+).
    pub committed_leader_epoch: i32,
    /// Client metadata.
    pub committed_metadata: Option<String>,
}

impl Default for OffsetCommitRequestPartition {
    fn default() -> Self {
        OffsetCommitRequestPartition {
            partition_index: 0,
            committed_offset: 0,
            committed_leader_epoch: -1,
            committed_metadata: None,
        }
    }
}

impl OffsetCommitRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = OffsetCommitRequest {
            group_id: d.string(flex)?,
            generation_id_or_member_epoch: d.i32()?,
            member_id: d.string(flex)?,
            ..Default::default()
        };
        if version >= 7 {
            r.group_instance_id = d.nullable_string(flex)?;
        }
        if version <= 4 {
            r.retention_time_ms = d.i64()?;
        }
        r.topics = d.array(flex, |d| {
            let t = OffsetCommitRequestTopic {
                name: d.string(flex)?,
                partitions: d.array(flex, |d| {
                    let mut p = OffsetCommitRequestPartition {
                        partition_index: d.i32()?,
                        committed_offset: d.i64()?,
                        ..Default::default()
                    };
                    if version >= 6 {
                        p.committed_leader_epoch = d.i32()?;
                    }
                    p.committed_metadata = d.nullable_string(flex)?;
                    read_end(d, flex)?;
                    Ok(p)
                })?,
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
        e.put_string(&self.group_id, flex);
        e.put_i32(self.generation_id_or_member_epoch);
        e.put_string(&self.member_id, flex);
        if version >= 7 {
            e.put_nullable_string(self.group_instance_id.as_deref(), flex);
        }
        if version <= 4 {
            e.put_i64(self.retention_time_ms);
        }
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i64(p.committed_offset);
                if version >= 6 {
                    e.put_i32(p.committed_leader_epoch);
                }
                e.put_nullable_string(p.committed_metadata.as_deref(), flex);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

/// OffsetCommit response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetCommitResponse {
    /// Throttle time (v3+).
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<OffsetCommitResponseTopic>,
}

/// One topic's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetCommitResponseTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<OffsetCommitResponsePartition>,
}

/// One partition's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetCommitResponsePartition {
    /// Partition index.
    pub partition_index: i32,
    /// Error code.
    pub error_code: i16,
}

impl OffsetCommitResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = OffsetCommitResponse::default();
        if version >= 3 {
            r.throttle_time_ms = d.i32()?;
        }
        r.topics = d.array(flex, |d| {
            let t = OffsetCommitResponseTopic {
                name: d.string(flex)?,
                partitions: d.array(flex, |d| {
                    let p = OffsetCommitResponsePartition {
                        partition_index: d.i32()?,
                        error_code: d.i16()?,
                    };
                    read_end(d, flex)?;
                    Ok(p)
                })?,
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
        if version >= 3 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_array(&self.topics, flex, |e, t| {
            e.put_string(&t.name, flex);
            e.put_array(&t.partitions, flex, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i16(p.error_code);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
