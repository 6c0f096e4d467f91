//! Fetch (key 1): read record batches from partitions (consumers and followers). Kafka 4
//! accepts v4-v18: flexible from v12, topics by id from v13 (KIP-516), `replica_state` from v15
//! (KIP-903), `replica_directory_id` from v17 (KIP-853) and the follower's `high_watermark`
//! from v18 (KIP-1166); the v18 response is the same as v17's.

mod response;

pub use response::{
    AbortedTransaction, EpochEndOffset, FetchResponse, FetchableTopicResponse, LeaderIdAndEpoch,
    NodeEndpoint, PartitionData, SnapshotId,
};

use crate::codec::{Decoder, Encoder, TaggedFields, Uuid};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(Fetch);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// Versions from 13 name topics by id instead of by name.
fn uses_topic_ids(version: i16) -> bool {
    version >= 13
}

/// Reads how a topic is named in `version`: `(name, ZERO)` before v13,
/// `("", id)` from v13.
fn decode_topic_key(d: &mut Decoder, version: i16) -> Result<(String, Uuid)> {
    if uses_topic_ids(version) {
        Ok((String::new(), d.uuid()?))
    } else {
        Ok((d.string(flexible(version))?, Uuid::ZERO))
    }
}

/// Writes how a topic is named in `version`: its name before v13, its id
/// from v13.
fn encode_topic_key(e: &mut Encoder, version: i16, topic: &str, topic_id: Uuid) {
    if uses_topic_ids(version) {
        e.put_uuid(topic_id);
    } else {
        e.put_string(topic, flexible(version));
    }
}

/// Fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// Tag 0 (v12+): cluster id if known.
    pub cluster_id: Option<String>,
    /// Follower broker id, -1 for consumers (v0-14; v15+ uses `replica_state`).
    pub replica_id: i32,
    /// Tag 1 (v15+): follower id and epoch.
    pub replica_state: ReplicaState,
    /// Long-poll time.
    pub max_wait_ms: i32,
    /// Bytes to accumulate before answering.
    pub min_bytes: i32,
    /// Response size limit (v3+).
    pub max_bytes: i32,
    /// 0 read uncommitted, 1 read committed (v4+).
    pub isolation_level: i8,
    /// Fetch session id (v7+).
    pub session_id: i32,
    /// Fetch session epoch (v7+).
    pub session_epoch: i32,
    /// Topics to fetch.
    pub topics: Vec<FetchTopic>,
    /// Partitions to drop from an incremental session (v7+).
    pub forgotten_topics_data: Vec<ForgottenTopic>,
    /// Consumer rack (v11+).
    pub rack_id: String,
}

impl Default for FetchRequest {
    fn default() -> Self {
        FetchRequest {
            cluster_id: None,
            replica_id: -1,
            replica_state: ReplicaState::default(),
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: i32::MAX,
            isolation_level: 0,
            session_id: 0,
            session_epoch: -1,
            topics: Vec::new(),
            forgotten_topics_data: Vec::new(),
            rack_id: String::new(),
        }
    }
}

/// Follower state (v15+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaState {
    /// Follower id, -1 for consumers.
    pub replica_id: i32,
    /// Follower broker epoch, -1 if unknown.
    pub replica_epoch: i64,
}

impl Default for ReplicaState {
    fn default() -> Self {
        ReplicaState {
            replica_id: -1,
            replica_epoch: -1,
        }
    }
}

/// A topic to fetch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FetchTopic {
    /// Topic name (v0-12).
    pub topic: String,
    /// Topic id (v13+).
    pub topic_id: Uuid,
    /// Partitions to fetch.
    pub partitions: Vec<FetchPartition>,
}

/// A partition to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartition {
    /// Partition index.
    pub partition: i32,
    /// v9+, -1 if unknown.
    pub current_leader_epoch: i32,
    /// Offset to read from.
    pub fetch_offset: i64,
    /// v12+, -1 if none.
    pub last_fetched_epoch: i32,
    /// Follower log start offset (v5+), -1 for consumers.
    pub log_start_offset: i64,
    /// Per-partition size limit.
    pub partition_max_bytes: i32,
    /// Tag 0 (v17+): follower's log directory.
    pub replica_directory_id: Uuid,
    /// Tag 1 (v18+, KIP-1166): the high watermark the follower knows; -1 if it knows none,
    /// [`HIGH_WATERMARK_UNSUPPORTED`] (the default, never sent) from fetchers without the
    /// feature, consumers included.
    pub high_watermark: i64,
}

/// `FetchPartition.high_watermark` default: the fetcher does not send one (schema default
/// `Long.MAX_VALUE`).
pub const HIGH_WATERMARK_UNSUPPORTED: i64 = i64::MAX;

impl Default for FetchPartition {
    fn default() -> Self {
        FetchPartition {
            partition: 0,
            current_leader_epoch: -1,
            fetch_offset: 0,
            last_fetched_epoch: -1,
            log_start_offset: -1,
            partition_max_bytes: 0,
            replica_directory_id: Uuid::ZERO,
            high_watermark: HIGH_WATERMARK_UNSUPPORTED,
        }
    }
}

/// Partitions to remove from a fetch session.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ForgottenTopic {
    /// Topic name (v7-12).
    pub topic: String,
    /// Topic id (v13+).
    pub topic_id: Uuid,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

impl FetchRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = Self::default();
        if version <= 14 {
            r.replica_id = d.i32()?;
        }
        r.max_wait_ms = d.i32()?;
        r.min_bytes = d.i32()?;
        r.max_bytes = d.i32()?;
        r.isolation_level = d.i8()?;
        if version >= 7 {
            r.session_id = d.i32()?;
            r.session_epoch = d.i32()?;
        }
        r.topics = d.array(flex, |d| decode_topic(d, version))?;
        if version >= 7 {
            r.forgotten_topics_data = d.array(flex, |d| decode_forgotten(d, version))?;
        }
        if version >= 11 {
            r.rack_id = d.string(flex)?;
        }
        if flex {
            d.read_tagged_fields(|tag, f| r.read_tag(tag, f, version))?;
        }
        Ok(r)
    }

    fn read_tag(&mut self, tag: u32, f: &mut Decoder, version: i16) -> Result<()> {
        match tag {
            0 => self.cluster_id = f.nullable_string(true)?,
            1 if version >= 15 => {
                self.replica_state = ReplicaState {
                    replica_id: f.i32()?,
                    replica_epoch: f.i64()?,
                };
                f.tagged_fields()?;
            }
            _ => {}
        }
        // Kafka reads a known tag's value and never checks it used the whole
        // declared size; bytes left inside the field are ignored, not refused.
        Ok(())
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version <= 14 {
            e.put_i32(self.replica_id);
        }
        e.put_i32(self.max_wait_ms);
        e.put_i32(self.min_bytes);
        e.put_i32(self.max_bytes);
        e.put_i8(self.isolation_level);
        if version >= 7 {
            e.put_i32(self.session_id);
            e.put_i32(self.session_epoch);
        }
        e.put_array(&self.topics, flex, |e, t| encode_topic(t, e, version));
        if version >= 7 {
            e.put_array(&self.forgotten_topics_data, flex, |e, t| {
                encode_forgotten(t, e, version)
            });
        }
        if version >= 11 {
            e.put_string(&self.rack_id, flex);
        }
        if flex {
            e.put_tagged_fields(self.tags(version));
        }
    }

    fn tags(&self, version: i16) -> TaggedFields {
        let mut t = TaggedFields::new();
        if let Some(id) = &self.cluster_id {
            t.add(0, |e| e.put_nullable_string(Some(id), true));
        }
        if version >= 15 && self.replica_state != ReplicaState::default() {
            t.add(1, |e| {
                e.put_i32(self.replica_state.replica_id);
                e.put_i64(self.replica_state.replica_epoch);
                e.put_empty_tagged_fields();
            });
        }
        t
    }

    /// The requesting replica id whichever version carried it (-1 = consumer).
    pub fn effective_replica_id(&self, version: i16) -> i32 {
        if version >= 15 {
            self.replica_state.replica_id
        } else {
            self.replica_id
        }
    }
}

fn decode_topic(d: &mut Decoder, version: i16) -> Result<FetchTopic> {
    let flex = flexible(version);
    let (topic, topic_id) = decode_topic_key(d, version)?;
    let t = FetchTopic {
        topic,
        topic_id,
        partitions: d.array(flex, |d| decode_partition(d, version))?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic(t: &FetchTopic, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    encode_topic_key(e, version, &t.topic, t.topic_id);
    e.put_array(&t.partitions, flex, |e, p| encode_partition(p, e, version));
    put_end(e, flex);
}

fn decode_partition(d: &mut Decoder, version: i16) -> Result<FetchPartition> {
    let flex = flexible(version);
    let mut p = FetchPartition {
        partition: d.i32()?,
        ..Default::default()
    };
    if version >= 9 {
        p.current_leader_epoch = d.i32()?;
    }
    p.fetch_offset = d.i64()?;
    if version >= 12 {
        p.last_fetched_epoch = d.i32()?;
    }
    if version >= 5 {
        p.log_start_offset = d.i64()?;
    }
    p.partition_max_bytes = d.i32()?;
    if flex {
        d.read_tagged_fields(|tag, f| {
            match tag {
                0 if version >= 17 => p.replica_directory_id = f.uuid()?,
                1 if version >= 18 => p.high_watermark = f.i64()?,
                _ => {}
            }
            // Bytes after a known tag's value, inside its size, are ignored as in Kafka.
            Ok(())
        })?;
    }
    Ok(p)
}

fn encode_partition(p: &FetchPartition, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i32(p.partition);
    if version >= 9 {
        e.put_i32(p.current_leader_epoch);
    }
    e.put_i64(p.fetch_offset);
    if version >= 12 {
        e.put_i32(p.last_fetched_epoch);
    }
    if version >= 5 {
        e.put_i64(p.log_start_offset);
    }
    e.put_i32(p.partition_max_bytes);
    if flex {
        let mut tags = TaggedFields::new();
        if version >= 17 && !p.replica_directory_id.is_zero() {
            tags.add(0, |e| e.put_uuid(p.replica_directory_id));
        }
        if version >= 18 && p.high_watermark != HIGH_WATERMARK_UNSUPPORTED {
            tags.add(1, |e| e.put_i64(p.high_watermark));
        }
        e.put_tagged_fields(tags);
    }
}

fn decode_forgotten(d: &mut Decoder, version: i16) -> Result<ForgottenTopic> {
    let flex = flexible(version);
    let (topic, topic_id) = decode_topic_key(d, version)?;
    let t = ForgottenTopic {
        topic,
        topic_id,
        partitions: d.array(flex, Decoder::i32)?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_forgotten(t: &ForgottenTopic, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    encode_topic_key(e, version, &t.topic, t.topic_id);
    e.put_array(&t.partitions, flex, |e, p| e.put_i32(*p));
    put_end(e, flex);
}
