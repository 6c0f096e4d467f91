//! OffsetFetch (key 9): a group's committed offsets. Kafka 4.0 removed v0
//! (KIP-896). v1 names one group and its topics; v2+ allows null `topics`
//! (all committed partitions) and adds a top-level `error_code`; v3 adds
//! throttle time; v5 `committed_leader_epoch`; v6 is the first flexible
//! version; v7 `require_stable` (KIP-447); v8 batches several `groups` in one
//! request and response (KIP-709); v9 (KIP-848) adds `member_id` and
//! `member_epoch` per group. v10 (KIP-848, topic ids instead of names) is not
//! implemented: Sluice caps at v9, which every client falls back to.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(OffsetFetch);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// OffsetFetch request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchRequest {
    /// The group id (v1-7).
    pub group_id: String,
    /// Topics, `None` for all (nullable v2-7; v1 always sends an array).
    pub topics: Option<Vec<OffsetFetchRequestTopic>>,
    /// The groups (v8+).
    pub groups: Vec<OffsetFetchRequestGroup>,
    /// Answer `UNSTABLE_OFFSET_COMMIT` rather than a pending transactional
    /// offset (v7+).
    pub require_stable: bool,
}

/// One topic to fetch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchRequestTopic {
    /// Topic name.
    pub name: String,
    /// Partition indexes.
    pub partition_indexes: Vec<i32>,
}

/// One group to fetch (v8+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequestGroup {
    /// The group id.
    pub group_id: String,
    /// The member id, for the consumer protocol (v9+).
    pub member_id: Option<String>,
    /// The member epoch, -1 outside the consumer protocol (v9+).
    pub member_epoch: i32,
    /// Topics, `None` for all.
    pub topics: Option<Vec<OffsetFetchRequestTopic>>,
}

impl Default for OffsetFetchRequestGroup {
    fn default() -> Self {
        OffsetFetchRequestGroup {
            group_id: String::new(),
            member_id: None,
            member_epoch: -1,
            topics: None,
        }
    }
}

fn decode_topic(d: &mut Decoder, flex: bool) -> Result<OffsetFetchRequestTopic> {
    let t = OffsetFetchRequestTopic {
        name: d.string(flex)?,
        partition_indexes: d.array(flex, |d| d.i32())?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic(e: &mut Encoder, t: &OffsetFetchRequestTopic, flex: bool) {
    e.put_string(&t.name, flex);
    e.put_array(&t.partition_indexes, flex, |e, p| e.put_i32(*p));
    put_end(e, flex);
}

impl OffsetFetchRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = OffsetFetchRequest::default();
        if version <= 7 {
            r.group_id = d.string(flex)?;
            r.topics = if version >= 2 {
                d.nullable_array(flex, |d| decode_topic(d, flex))?
            } else {
                Some(d.array(flex, |d| decode_topic(d, flex))?)
            };
        } else {
            r.groups = d.array(flex, |d| {
                let mut g = OffsetFetchRequestGroup {
                    group_id: d.string(flex)?,
                    ..Default::default()
                };
                if version >= 9 {
                    g.member_id = d.nullable_string(flex)?;
                    g.member_epoch = d.i32()?;
                }
                g.topics = d.nullable_array(flex, |d| decode_topic(d, flex))?;
                read_end(d, flex)?;
                Ok(g)
            })?;
        }
        if version >= 7 {
            r.require_stable = d.bool()?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body. A `None` `topics` is written as an empty array in v1.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version <= 7 {
            e.put_string(&self.group_id, flex);
            if version >= 2 {
                e.put_nullable_array(self.topics.as_deref(), flex, |e, t| {
                    encode_topic(e, t, flex)
                });
            } else {
                e.put_array(self.topics.as_deref().unwrap_or(&[]), flex, |e, t| {
                    encode_topic(e, t, flex)
                });
            }
        } else {
            e.put_array(&self.groups, flex, |e, g| {
                e.put_string(&g.group_id, flex);
                if version >= 9 {
                    e.put_nullable_string(g.member_id.as_deref(), flex);
                    e.put_i32(g.member_epoch);
                }
                e.put_nullable_array(g.topics.as_deref(), flex, |e, t| encode_topic(e, t, flex));
                put_end(e, flex);
            });
        }
        if version >= 7 {
            e.put_bool(self.require_stable);
        }
        put_end(e, flex);
    }
}

/// OffsetFetch response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchResponse {
    /// Throttle time (v3+).
    pub throttle_time_ms: i32,
    /// Topics (v1-7).
    pub topics: Vec<OffsetFetchResponseTopic>,
    /// Top-level error code (v2-7).
    pub error_code: i16,
    /// Per-group results (v8+).
    pub groups: Vec<OffsetFetchResponseGroup>,
}

/// One topic's committed offsets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchResponseTopic {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<OffsetFetchResponsePartition>,
}

/// One partition's committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponsePartition {
    /// Partition index.
    pub partition_index: i32,
    /// The committed offset, -1 if none.
    pub committed_offset: i64,
    /// The leader epoch, -1 if unknown (v5+).
    pub committed_leader_epoch: i32,
    /// Client metadata.
    pub metadata: Option<String>,
    /// Error code.
    pub error_code: i16,
}

impl Default for OffsetFetchResponsePartition {
    fn default() -> Self {
        OffsetFetchResponsePartition {
            partition_index: 0,
            committed_offset: -1,
            committed_leader_epoch: -1,
            metadata: None,
            error_code: 0,
        }
    }
}

/// One group's committed offsets (v8+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetFetchResponseGroup {
    /// The group id.
    pub group_id: String,
    /// Topics.
    pub topics: Vec<OffsetFetchResponseTopic>,
    /// Group-level error code.
    pub error_code: i16,
}

fn decode_response_topic(d: &mut Decoder, version: i16) -> Result<OffsetFetchResponseTopic> {
    let flex = flexible(version);
    let t = OffsetFetchResponseTopic {
        name: d.string(flex)?,
        partitions: d.array(flex, |d| {
            let mut p = OffsetFetchResponsePartition {
                partition_index: d.i32()?,
                committed_offset: d.i64()?,
                ..Default::default()
            };
            if version >= 5 {
                p.committed_leader_epoch = d.i32()?;
            }
            p.metadata = d.nullable_string(flex)?;
            p.error_code = d.i16()?;
            read_end(d, flex)?;
            Ok(p)
        })?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_response_topic(e: &mut Encoder, t: &OffsetFetchResponseTopic, version: i16) {
    let flex = flexible(version);
    e.put_string(&t.name, flex);
    e.put_array(&t.partitions, flex, |e, p| {
        e.put_i32(p.partition_index);
        e.put_i64(p.committed_offset);
        if version >= 5 {
            e.put_i32(p.committed_leader_epoch);
        }
        e.put_nullable_string(p.metadata.as_deref(), flex);
        e.put_i16(p.error_code);
        put_end(e, flex);
    });
    put_end(e, flex);
}

impl OffsetFetchResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = OffsetFetchResponse::default();
        if version >= 3 {
            r.throttle_time_ms = d.i32()?;
        }
        if version <= 7 {
            r.topics = d.array(flex, |d| decode_response_topic(d, version))?;
            if version >= 2 {
                r.error_code = d.i16()?;
            }
        } else {
            r.groups = d.array(flex, |d| {
                let g = OffsetFetchResponseGroup {
                    group_id: d.string(flex)?,
                    topics: d.array(flex, |d| decode_response_topic(d, version))?,
                    error_code: d.i16()?,
                };
                read_end(d, flex)?;
                Ok(g)
            })?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 3 {
            e.put_i32(self.throttle_time_ms);
        }
        if version <= 7 {
            e.put_array(&self.topics, flex, |e, t| {
                encode_response_topic(e, t, version)
            });
            if version >= 2 {
                e.put_i16(self.error_code);
            }
        } else {
            e.put_array(&self.groups, flex, |e, g| {
                e.put_string(&g.group_id, flex);
                e.put_array(&g.topics, flex, |e, t| encode_response_topic(e, t, version));
                e.put_i16(g.error_code);
                put_end(e, flex);
            });
        }
        put_end(e, flex);
    }
}
