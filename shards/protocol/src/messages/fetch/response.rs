//! Fetch response body.

use bytes::Bytes;

use super::{decode_topic_key, encode_topic_key, flexible, API_KEY, MAX_VERSION, MIN_VERSION};
use crate::codec::{Decoder, Encoder, TaggedFields, Uuid};
use crate::error::Result;
use crate::file_region::FileRegion;
use crate::messages::common::{
    decode_leader_id_and_epoch, encode_leader_id_and_epoch, put_end, put_node_endpoints_tags,
    read_end, read_node_endpoints_tags,
};

pub use crate::messages::common::{LeaderIdAndEpoch, NodeEndpoint};

/// Fetch response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FetchResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error (v7+).
    pub error_code: i16,
    /// Fetch session id, 0 if none (v7+).
    pub session_id: i32,
    /// Per-topic data.
    pub responses: Vec<FetchableTopicResponse>,
    /// Tag 0 (v16+): endpoints of leaders named in `current_leader`.
    pub node_endpoints: Vec<NodeEndpoint>,
}

/// One topic's data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FetchableTopicResponse {
    /// Topic name (v0-12).
    pub topic: String,
    /// Topic id (v13+).
    pub topic_id: Uuid,
    /// Per-partition data.
    pub partitions: Vec<PartitionData>,
}

/// One partition's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionData {
    /// Partition index.
    pub partition_index: i32,
    /// Error.
    pub error_code: i16,
    /// High watermark.
    pub high_watermark: i64,
    /// Last stable offset (v4+), -1 if unknown.
    pub last_stable_offset: i64,
    /// Log start offset (v5+), -1 if unknown.
    pub log_start_offset: i64,
    /// Tag 0 (v12+): divergence detected from `last_fetched_epoch`.
    pub diverging_epoch: EpochEndOffset,
    /// Tag 1 (v12+): current leader on leadership errors.
    pub current_leader: LeaderIdAndEpoch,
    /// Tag 2 (v12+): snapshot to fetch when below the log start.
    pub snapshot_id: SnapshotId,
    /// Aborted transactions in range (v4+, nullable).
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// Preferred read replica (v11+), -1 if none.
    pub preferred_read_replica: i32,
    /// Record batches; may end with a partial batch.
    pub records: Option<Bytes>,
    /// Encode only: the records sent from a segment file instead of `records` (the broker's
    /// zero-copy read; `records` is then `None`). Decoding never sets it.
    pub records_file: Option<FileRegion>,
    /// Encode only: the records as pieces sent back to back instead of `records` (a read of
    /// the broker's tail cache that spans appends, each piece an append's own bytes, so they
    /// are not joined by a copy; `records` and `records_file` are then `None`). Decoding never
    /// sets it.
    pub records_pieces: Vec<Bytes>,
}

impl PartitionData {
    /// Bytes of record data the answer carries, in memory or from a file.
    pub fn records_len(&self) -> usize {
        self.records.as_ref().map_or(0, Bytes::len)
            + self.records_file.as_ref().map_or(0, FileRegion::len)
            + self.records_pieces.iter().map(Bytes::len).sum::<usize>()
    }

    /// True when the answer carries record data (in memory or from a file).
    pub fn has_records(&self) -> bool {
        self.records_len() > 0
    }
}

impl Default for PartitionData {
    fn default() -> Self {
        PartitionData {
            partition_index: 0,
            error_code: 0,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            diverging_epoch: EpochEndOffset::default(),
            current_leader: LeaderIdAndEpoch::default(),
            snapshot_id: SnapshotId::default(),
            aborted_transactions: None,
            preferred_read_replica: -1,
            records: None,
            records_file: None,
            records_pieces: Vec::new(),
        }
    }
}

/// Largest epoch and its end offset; (-1, -1) when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// Epoch.
    pub epoch: i32,
    /// End offset.
    pub end_offset: i64,
}

impl Default for EpochEndOffset {
    fn default() -> Self {
        EpochEndOffset {
            epoch: -1,
            end_offset: -1,
        }
    }
}

/// Snapshot end offset and epoch; (-1, -1) when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotId {
    /// End offset.
    pub end_offset: i64,
    /// Epoch.
    pub epoch: i32,
}

impl Default for SnapshotId {
    fn default() -> Self {
        SnapshotId {
            end_offset: -1,
            epoch: -1,
        }
    }
}

/// An aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AbortedTransaction {
    /// Producer id.
    pub producer_id: i64,
    /// First offset of the transaction.
    pub first_offset: i64,
}

impl FetchResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = FetchResponse {
            throttle_time_ms: d.i32()?,
            ..Default::default()
        };
        if version >= 7 {
            r.error_code = d.i16()?;
            r.session_id = d.i32()?;
        }
        r.responses = d.array(flex, |d| decode_topic(d, version))?;
        if flex {
            r.node_endpoints = read_node_endpoints_tags(d, version >= 16)?;
        }
        Ok(r)
    }

    /// Encodes the body. Record data is copied unless `e` is
    /// [`Encoder::vectored`], in which case it stays a zero-copy segment.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        if version >= 7 {
            e.put_i16(self.error_code);
            e.put_i32(self.session_id);
        }
        e.put_array(&self.responses, flex, |e, t| encode_topic(t, e, version));
        if flex {
            put_node_endpoints_tags(e, &self.node_endpoints, version >= 16);
        }
    }
}

fn decode_topic(d: &mut Decoder, version: i16) -> Result<FetchableTopicResponse> {
    let flex = flexible(version);
    let (topic, topic_id) = decode_topic_key(d, version)?;
    let t = FetchableTopicResponse {
        topic,
        topic_id,
        partitions: d.array(flex, |d| decode_partition(d, version))?,
    };
    read_end(d, flex)?;
    Ok(t)
}

fn encode_topic(t: &FetchableTopicResponse, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    encode_topic_key(e, version, &t.topic, t.topic_id);
    e.put_array(&t.partitions, flex, |e, p| encode_partition(p, e, version));
    put_end(e, flex);
}

fn decode_partition(d: &mut Decoder, version: i16) -> Result<PartitionData> {
    let flex = flexible(version);
    let mut p = PartitionData {
        partition_index: d.i32()?,
        error_code: d.i16()?,
        high_watermark: d.i64()?,
        last_stable_offset: d.i64()?,
        ..Default::default()
    };
    if version >= 5 {
        p.log_start_offset = d.i64()?;
    }
    p.aborted_transactions = d.nullable_array(flex, |d| {
        let a = AbortedTransaction {
            producer_id: d.i64()?,
            first_offset: d.i64()?,
        };
        read_end(d, flex)?;
        Ok(a)
    })?;
    if version >= 11 {
        p.preferred_read_replica = d.i32()?;
    }
    p.records = d.nullable_bytes(flex)?;
    if flex {
        d.read_tagged_fields(|tag, f| read_partition_tag(&mut p, tag, f))?;
    }
    Ok(p)
}

fn read_partition_tag(p: &mut PartitionData, tag: u32, f: &mut Decoder) -> Result<()> {
    match tag {
        0 => {
            p.diverging_epoch = EpochEndOffset {
                epoch: f.i32()?,
                end_offset: f.i64()?,
            };
            f.tagged_fields()?;
        }
        1 => p.current_leader = decode_leader_id_and_epoch(f)?,
        2 => {
            p.snapshot_id = SnapshotId {
                end_offset: f.i64()?,
                epoch: f.i32()?,
            };
            f.tagged_fields()?;
        }
        _ => {}
    }
    // Bytes after a known tag's value, inside its size, are ignored as in Kafka.
    Ok(())
}

fn encode_partition(p: &PartitionData, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i32(p.partition_index);
    e.put_i16(p.error_code);
    e.put_i64(p.high_watermark);
    e.put_i64(p.last_stable_offset);
    if version >= 5 {
        e.put_i64(p.log_start_offset);
    }
    e.put_nullable_array(p.aborted_transactions.as_deref(), flex, |e, a| {
        e.put_i64(a.producer_id);
        e.put_i64(a.first_offset);
        put_end(e, flex);
    });
    if version >= 11 {
        e.put_i32(p.preferred_read_replica);
    }
    match &p.records_file {
        Some(region) => {
            debug_assert!(p.records.is_none(), "records come from one place");
            debug_assert!(p.records_pieces.is_empty(), "records come from one place");
            e.put_records_file(region, flex);
        }
        None if !p.records_pieces.is_empty() => {
            debug_assert!(p.records.is_none(), "records come from one place");
            e.put_records_pieces(&p.records_pieces, flex);
        }
        None => e.put_nullable_records(p.records.as_ref(), flex),
    }
    if flex {
        e.put_tagged_fields(partition_tags(p));
    }
}

fn partition_tags(p: &PartitionData) -> TaggedFields {
    let mut t = TaggedFields::new();
    if p.diverging_epoch != EpochEndOffset::default() {
        t.add(0, |e| {
            e.put_i32(p.diverging_epoch.epoch);
            e.put_i64(p.diverging_epoch.end_offset);
            e.put_empty_tagged_fields();
        });
    }
    if p.current_leader != LeaderIdAndEpoch::default() {
        t.add(1, |e| encode_leader_id_and_epoch(e, &p.current_leader));
    }
    if p.snapshot_id != SnapshotId::default() {
        t.add(2, |e| {
            e.put_i64(p.snapshot_id.end_offset);
            e.put_i32(p.snapshot_id.epoch);
            e.put_empty_tagged_fields();
        });
    }
    t
}
