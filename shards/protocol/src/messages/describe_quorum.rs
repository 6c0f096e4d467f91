//! DescribeQuorum (key 55): the state of the KRaft controller quorum (KIP-595), as
//! `kafka-metadata-quorum describe` shows it. All versions are flexible; v1 adds each replica's
//! last fetch and last caught-up times (KIP-836), v2 the error messages, each replica's directory
//! id and the voters' listener endpoints (KIP-853).

use crate::codec::{Decoder, Encoder, Uuid};
use crate::error::Result;

crate::apis::declared_versions!(DescribeQuorum);

/// The one topic a quorum replicates.
pub const METADATA_TOPIC_NAME: &str = "__cluster_metadata";

/// DescribeQuorum request: the topic partitions asked about (Kafka's tools ask for
/// `__cluster_metadata` partition 0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumRequest {
    /// Topics, each with its partition indexes.
    pub topics: Vec<DescribeQuorumTopicRequest>,
}

/// One topic of the request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumTopicRequest {
    /// Topic name.
    pub topic_name: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

impl DescribeQuorumRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let topics = d.array(true, |d| {
            let topic_name = d.string(true)?;
            let partitions = d.array(true, |d| {
                let index = d.i32()?;
                d.tagged_fields()?;
                Ok(index)
            })?;
            d.tagged_fields()?;
            Ok(DescribeQuorumTopicRequest {
                topic_name,
                partitions,
            })
        })?;
        d.tagged_fields()?;
        Ok(DescribeQuorumRequest { topics })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.topic_name, true);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i32(*p);
                e.put_empty_tagged_fields();
            });
            e.put_empty_tagged_fields();
        });
        e.put_empty_tagged_fields();
    }
}

/// DescribeQuorum response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumResponse {
    /// Top-level error.
    pub error_code: i16,
    /// Top-level error message (v2+).
    pub error_message: Option<String>,
    /// Topics.
    pub topics: Vec<DescribeQuorumTopicResponse>,
    /// The voters' endpoints (v2+).
    pub nodes: Vec<DescribeQuorumNode>,
}

/// One topic of the response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumTopicResponse {
    /// Topic name.
    pub topic_name: String,
    /// Partitions.
    pub partitions: Vec<DescribeQuorumPartition>,
}

/// One partition's quorum.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumPartition {
    /// Partition index.
    pub partition_index: i32,
    /// Error.
    pub error_code: i16,
    /// Error message (v2+).
    pub error_message: Option<String>,
    /// The leader's node id, -1 if unknown.
    pub leader_id: i32,
    /// The leader epoch (the Raft term).
    pub leader_epoch: i32,
    /// The high watermark (end of the committed log).
    pub high_watermark: i64,
    /// The voters.
    pub current_voters: Vec<ReplicaState>,
    /// Replicas that follow the log without voting (brokers).
    pub observers: Vec<ReplicaState>,
}

/// A replica of the quorum, as the leader knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaState {
    /// Node id.
    pub replica_id: i32,
    /// The replica's metadata log directory id (v2+; zero when it has none).
    pub replica_directory_id: Uuid,
    /// Its log end offset, -1 if unknown.
    pub log_end_offset: i64,
    /// Leader wall-clock time of its last fetch, ms (v1+, -1 if unknown).
    pub last_fetch_timestamp: i64,
    /// Leader wall-clock time at which it was last caught up, ms (v1+, -1 if unknown).
    pub last_caught_up_timestamp: i64,
}

impl Default for ReplicaState {
    fn default() -> Self {
        ReplicaState {
            replica_id: -1,
            replica_directory_id: Uuid::ZERO,
            log_end_offset: -1,
            last_fetch_timestamp: -1,
            last_caught_up_timestamp: -1,
        }
    }
}

/// A voter's endpoints (v2+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumNode {
    /// Node id.
    pub node_id: i32,
    /// Its listeners.
    pub listeners: Vec<DescribeQuorumListener>,
}

/// One listener of a voter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeQuorumListener {
    /// Listener name.
    pub name: String,
    /// Host.
    pub host: String,
    /// Port (uint16 on the wire).
    pub port: u16,
}

impl DescribeQuorumResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = DescribeQuorumResponse {
            error_code: d.i16()?,
            ..Default::default()
        };
        if version >= 2 {
            r.error_message = d.nullable_string(true)?;
        }
        r.topics = d.array(true, |d| {
            let topic_name = d.string(true)?;
            let partitions = d.array(true, |d| decode_partition(d, version))?;
            d.tagged_fields()?;
            Ok(DescribeQuorumTopicResponse {
                topic_name,
                partitions,
            })
        })?;
        if version >= 2 {
            r.nodes = d.array(true, |d| {
                let node_id = d.i32()?;
                let listeners = d.array(true, |d| {
                    let l = DescribeQuorumListener {
                        name: d.string(true)?,
                        host: d.string(true)?,
                        port: d.u16()?,
                    };
                    d.tagged_fields()?;
                    Ok(l)
                })?;
                d.tagged_fields()?;
                Ok(DescribeQuorumNode { node_id, listeners })
            })?;
        }
        d.tagged_fields()?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i16(self.error_code);
        if version >= 2 {
            e.put_nullable_string(self.error_message.as_deref(), true);
        }
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.topic_name, true);
            e.put_array(&t.partitions, true, |e, p| encode_partition(e, p, version));
            e.put_empty_tagged_fields();
        });
        if version >= 2 {
            e.put_array(&self.nodes, true, |e, n| {
                e.put_i32(n.node_id);
                e.put_array(&n.listeners, true, |e, l| {
                    e.put_string(&l.name, true);
                    e.put_string(&l.host, true);
                    e.put_u16(l.port);
                    e.put_empty_tagged_fields();
                });
                e.put_empty_tagged_fields();
            });
        }
        e.put_empty_tagged_fields();
    }
}

fn decode_partition(d: &mut Decoder, version: i16) -> Result<DescribeQuorumPartition> {
    let mut p = DescribeQuorumPartition {
        partition_index: d.i32()?,
        error_code: d.i16()?,
        ..Default::default()
    };
    if version >= 2 {
        p.error_message = d.nullable_string(true)?;
    }
    p.leader_id = d.i32()?;
    p.leader_epoch = d.i32()?;
    p.high_watermark = d.i64()?;
    p.current_voters = d.array(true, |d| decode_replica(d, version))?;
    p.observers = d.array(true, |d| decode_replica(d, version))?;
    d.tagged_fields()?;
    Ok(p)
}

fn encode_partition(e: &mut Encoder, p: &DescribeQuorumPartition, version: i16) {
    e.put_i32(p.partition_index);
    e.put_i16(p.error_code);
    if version >= 2 {
        e.put_nullable_string(p.error_message.as_deref(), true);
    }
    e.put_i32(p.leader_id);
    e.put_i32(p.leader_epoch);
    e.put_i64(p.high_watermark);
    e.put_array(&p.current_voters, true, |e, r| {
        encode_replica(e, r, version)
    });
    e.put_array(&p.observers, true, |e, r| encode_replica(e, r, version));
    e.put_empty_tagged_fields();
}

fn decode_replica(d: &mut Decoder, version: i16) -> Result<ReplicaState> {
    let mut r = ReplicaState {
        replica_id: d.i32()?,
        ..Default::default()
    };
    if version >= 2 {
        r.replica_directory_id = d.uuid()?;
    }
    r.log_end_offset = d.i64()?;
    if version >= 1 {
        r.last_fetch_timestamp = d.i64()?;
        r.last_caught_up_timestamp = d.i64()?;
    }
    d.tagged_fields()?;
    Ok(r)
}

fn encode_replica(e: &mut Encoder, r: &ReplicaState, version: i16) {
    e.put_i32(r.replica_id);
    if version >= 2 {
        e.put_uuid(r.replica_directory_id);
    }
    e.put_i64(r.log_end_offset);
    if version >= 1 {
        e.put_i64(r.last_fetch_timestamp);
        e.put_i64(r.last_caught_up_timestamp);
    }
    e.put_empty_tagged_fields();
}
