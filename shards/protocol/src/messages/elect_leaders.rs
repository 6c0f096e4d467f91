//! ElectLeaders (key 43): move partition leadership to the preferred replica (KIP-183) or,
//! for a leaderless partition, to any live replica (KIP-460's unclean election, v1+).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(ElectLeaders);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// The request's `timeout_ms` when a client leaves it out (the schema's default).
pub const TIMEOUT_MS_DEFAULT: i32 = 60_000;

/// ElectLeaders request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectLeadersRequest {
    /// 0 preferred, 1 unclean (v1+; v0 is always preferred).
    pub election_type: i8,
    /// The partitions; null elects for every partition of every topic.
    pub topic_partitions: Option<Vec<ElectLeadersTopic>>,
    /// How long to wait for the elections.
    pub timeout_ms: i32,
}

impl Default for ElectLeadersRequest {
    fn default() -> Self {
        ElectLeadersRequest {
            election_type: 0,
            topic_partitions: None,
            timeout_ms: TIMEOUT_MS_DEFAULT,
        }
    }
}

/// One topic's partitions to elect for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElectLeadersTopic {
    /// Topic name.
    pub topic: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

impl ElectLeadersRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let election_type = if version >= 1 { d.i8()? } else { 0 };
        let topic_partitions = d.nullable_array(flex, |d| {
            let t = ElectLeadersTopic {
                topic: d.string(flex)?,
                partitions: d.array(flex, Decoder::i32)?,
            };
            read_end(d, flex)?;
            Ok(t)
        })?;
        let timeout_ms = d.i32()?;
        read_end(d, flex)?;
        Ok(ElectLeadersRequest {
            election_type,
            topic_partitions,
            timeout_ms,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 1 {
            e.put_i8(self.election_type);
        }
        e.put_nullable_array(self.topic_partitions.as_deref(), flex, |e, t| {
            e.put_string(&t.topic, flex);
            e.put_array(&t.partitions, flex, |e, p| e.put_i32(*p));
            put_end(e, flex);
        });
        e.put_i32(self.timeout_ms);
        put_end(e, flex);
    }
}

/// ElectLeaders response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElectLeadersResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error (v1+).
    pub error_code: i16,
    /// One entry per topic.
    pub replica_election_results: Vec<ReplicaElectionResult>,
}

/// The results of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicaElectionResult {
    /// Topic name.
    pub topic: String,
    /// One entry per partition.
    pub partition_result: Vec<PartitionResult>,
}

/// The result of one partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartitionResult {
    /// Partition index.
    pub partition_id: i32,
    /// Error, 0 when the leader was elected.
    pub error_code: i16,
    /// Error message, null on success.
    pub error_message: Option<String>,
}

impl ElectLeadersResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let throttle_time_ms = d.i32()?;
        let error_code = if version >= 1 { d.i16()? } else { 0 };
        let replica_election_results = d.array(flex, |d| {
            let topic = d.string(flex)?;
            let partition_result = d.array(flex, |d| {
                let p = PartitionResult {
                    partition_id: d.i32()?,
                    error_code: d.i16()?,
                    error_message: d.nullable_string(flex)?,
                };
                read_end(d, flex)?;
                Ok(p)
            })?;
            read_end(d, flex)?;
            Ok(ReplicaElectionResult {
                topic,
                partition_result,
            })
        })?;
        read_end(d, flex)?;
        Ok(ElectLeadersResponse {
            throttle_time_ms,
            error_code,
            replica_election_results,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        if version >= 1 {
            e.put_i16(self.error_code);
        }
        e.put_array(&self.replica_election_results, flex, |e, t| {
            e.put_string(&t.topic, flex);
            e.put_array(&t.partition_result, flex, |e, p| {
                e.put_i32(p.partition_id);
                e.put_i16(p.error_code);
                e.put_nullable_string(p.error_message.as_deref(), flex);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
