//! Metadata (key 3): brokers, topics, partitions and leaders. v0-v13: flexible from v9, topic
//! ids v10+ (asking by id v12+), and v13 adds the response's top-level `error_code` (KIP-1102:
//! REBOOTSTRAP_REQUIRED tells a client to rebootstrap); the v13 request is the same as v12's.

use crate::codec::{Decoder, Encoder, Uuid};
use crate::error::Result;

crate::apis::declared_versions!(Metadata);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// Metadata request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataRequest {
    /// Topics to describe; `None` means all topics. On the wire v0 has no null
    /// and uses an empty array for "all", so v0 decodes an empty array as `None`.
    pub topics: Option<Vec<MetadataRequestTopic>>,
    /// May the broker auto-create requested topics (v4+, default true).
    pub allow_auto_topic_creation: bool,
    /// v8-10.
    pub include_cluster_authorized_operations: bool,
    /// v8+.
    pub include_topic_authorized_operations: bool,
}

impl Default for MetadataRequest {
    fn default() -> Self {
        MetadataRequest {
            topics: None,
            allow_auto_topic_creation: true,
            include_cluster_authorized_operations: false,
            include_topic_authorized_operations: false,
        }
    }
}

/// A requested topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataRequestTopic {
    /// Topic id (v10+), zero when asking by name.
    pub topic_id: Uuid,
    /// Topic name; nullable from v10 (asking by id). Encoded as "" before v10.
    pub name: Option<String>,
}

impl MetadataRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let topics = if version >= 1 {
            d.nullable_array(flex, |d| decode_request_topic(d, version))?
        } else {
            let t = d.array(flex, |d| decode_request_topic(d, version))?;
            (!t.is_empty()).then_some(t)
        };
        let mut r = MetadataRequest {
            topics,
            ..Self::default()
        };
        if version >= 4 {
            r.allow_auto_topic_creation = d.bool()?;
        }
        if (8..=10).contains(&version) {
            r.include_cluster_authorized_operations = d.bool()?;
        }
        if version >= 8 {
            r.include_topic_authorized_operations = d.bool()?;
        }
        if flex {
            d.tagged_fields()?;
        }
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        let put_topic = |e: &mut Encoder, t: &MetadataRequestTopic| {
            if version >= 10 {
                e.put_uuid(t.topic_id);
                e.put_nullable_string(t.name.as_deref(), flex);
            } else {
                e.put_string(t.name.as_deref().unwrap_or_default(), flex);
            }
            if flex {
                e.put_empty_tagged_fields();
            }
        };
        match (&self.topics, version) {
            (None, 0) => e.put_array_len(0, flex),
            (topics, _) => e.put_nullable_array(topics.as_deref(), flex, put_topic),
        }
        if version >= 4 {
            e.put_bool(self.allow_auto_topic_creation);
        }
        if (8..=10).contains(&version) {
            e.put_bool(self.include_cluster_authorized_operations);
        }
        if version >= 8 {
            e.put_bool(self.include_topic_authorized_operations);
        }
        if flex {
            e.put_empty_tagged_fields();
        }
    }
}

fn decode_request_topic(d: &mut Decoder, version: i16) -> Result<MetadataRequestTopic> {
    let flex = flexible(version);
    let mut t = MetadataRequestTopic::default();
    if version >= 10 {
        t.topic_id = d.uuid()?;
        t.name = d.nullable_string(flex)?;
    } else {
        t.name = Some(d.string(flex)?);
    }
    if flex {
        d.tagged_fields()?;
    }
    Ok(t)
}

/// Metadata response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponse {
    /// v3+.
    pub throttle_time_ms: i32,
    /// Brokers in the cluster.
    pub brokers: Vec<MetadataResponseBroker>,
    /// v2+.
    pub cluster_id: Option<String>,
    /// v1+, -1 if unknown.
    pub controller_id: i32,
    /// Requested topics.
    pub topics: Vec<MetadataResponseTopic>,
    /// v8-10, `i32::MIN` when not requested.
    pub cluster_authorized_operations: i32,
    /// v13+: top-level error, 0 if none.
    pub error_code: i16,
}

impl Default for MetadataResponse {
    fn default() -> Self {
        MetadataResponse {
            throttle_time_ms: 0,
            brokers: Vec::new(),
            cluster_id: None,
            controller_id: -1,
            topics: Vec::new(),
            cluster_authorized_operations: i32::MIN,
            error_code: 0,
        }
    }
}

/// A broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetadataResponseBroker {
    /// Broker id.
    pub node_id: i32,
    /// Host name.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Rack (v1+).
    pub rack: Option<String>,
}

/// A topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponseTopic {
    /// Topic error.
    pub error_code: i16,
    /// Name; nullable from v12 (unknown topic asked by id). Encoded as "" before.
    pub name: Option<String>,
    /// v10+.
    pub topic_id: Uuid,
    /// v1+.
    pub is_internal: bool,
    /// Partitions.
    pub partitions: Vec<MetadataResponsePartition>,
    /// v8+, `i32::MIN` when not requested.
    pub topic_authorized_operations: i32,
}

impl Default for MetadataResponseTopic {
    fn default() -> Self {
        MetadataResponseTopic {
            error_code: 0,
            name: None,
            topic_id: Uuid::ZERO,
            is_internal: false,
            partitions: Vec::new(),
            topic_authorized_operations: i32::MIN,
        }
    }
}

/// A partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataResponsePartition {
    /// Partition error.
    pub error_code: i16,
    /// Partition index.
    pub partition_index: i32,
    /// Leader broker id.
    pub leader_id: i32,
    /// v7+, -1 if unknown.
    pub leader_epoch: i32,
    /// All replicas.
    pub replica_nodes: Vec<i32>,
    /// In-sync replicas.
    pub isr_nodes: Vec<i32>,
    /// v5+.
    pub offline_replicas: Vec<i32>,
}

impl Default for MetadataResponsePartition {
    fn default() -> Self {
        MetadataResponsePartition {
            error_code: 0,
            partition_index: 0,
            leader_id: -1,
            leader_epoch: -1,
            replica_nodes: Vec::new(),
            isr_nodes: Vec::new(),
            offline_replicas: Vec::new(),
        }
    }
}

impl MetadataResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = Self::default();
        if version >= 3 {
            r.throttle_time_ms = d.i32()?;
        }
        r.brokers = d.array(flex, |d| decode_broker(d, version))?;
        if version >= 2 {
            r.cluster_id = d.nullable_string(flex)?;
        }
        if version >= 1 {
            r.controller_id = d.i32()?;
        }
        r.topics = d.array(flex, |d| decode_topic(d, version))?;
        if (8..=10).contains(&version) {
            r.cluster_authorized_operations = d.i32()?;
        }
        if version >= 13 {
            r.error_code = d.i16()?;
        }
        if flex {
            d.tagged_fields()?;
        }
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 3 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_array(&self.brokers, flex, |e, b| encode_broker(b, e, version));
        if version >= 2 {
            e.put_nullable_string(self.cluster_id.as_deref(), flex);
        }
        if version >= 1 {
            e.put_i32(self.controller_id);
        }
        e.put_array(&self.topics, flex, |e, t| encode_topic(t, e, version));
        if (8..=10).contains(&version) {
            e.put_i32(self.cluster_authorized_operations);
        }
        if version >= 13 {
            e.put_i16(self.error_code);
        }
        if flex {
            e.put_empty_tagged_fields();
        }
    }
}

fn decode_broker(d: &mut Decoder, version: i16) -> Result<MetadataResponseBroker> {
    let flex = flexible(version);
    let mut b = MetadataResponseBroker {
        node_id: d.i32()?,
        host: d.string(flex)?,
        port: d.i32()?,
        rack: None,
    };
    if version >= 1 {
        b.rack = d.nullable_string(flex)?;
    }
    if flex {
        d.tagged_fields()?;
    }
    Ok(b)
}

fn encode_broker(b: &MetadataResponseBroker, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i32(b.node_id);
    e.put_string(&b.host, flex);
    e.put_i32(b.port);
    if version >= 1 {
        e.put_nullable_string(b.rack.as_deref(), flex);
    }
    if flex {
        e.put_empty_tagged_fields();
    }
}

fn decode_topic(d: &mut Decoder, version: i16) -> Result<MetadataResponseTopic> {
    let flex = flexible(version);
    let mut t = MetadataResponseTopic {
        error_code: d.i16()?,
        ..Default::default()
    };
    t.name = if version >= 12 {
        d.nullable_string(flex)?
    } else {
        Some(d.string(flex)?)
    };
    if version >= 10 {
        t.topic_id = d.uuid()?;
    }
    if version >= 1 {
        t.is_internal = d.bool()?;
    }
    t.partitions = d.array(flex, |d| decode_partition(d, version))?;
    if version >= 8 {
        t.topic_authorized_operations = d.i32()?;
    }
    if flex {
        d.tagged_fields()?;
    }
    Ok(t)
}

fn encode_topic(t: &MetadataResponseTopic, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i16(t.error_code);
    if version >= 12 {
        e.put_nullable_string(t.name.as_deref(), flex);
    } else {
        e.put_string(t.name.as_deref().unwrap_or_default(), flex);
    }
    if version >= 10 {
        e.put_uuid(t.topic_id);
    }
    if version >= 1 {
        e.put_bool(t.is_internal);
    }
    e.put_array(&t.partitions, flex, |e, p| encode_partition(p, e, version));
    if version >= 8 {
        e.put_i32(t.topic_authorized_operations);
    }
    if flex {
        e.put_empty_tagged_fields();
    }
}

fn decode_partition(d: &mut Decoder, version: i16) -> Result<MetadataResponsePartition> {
    let flex = flexible(version);
    let mut p = MetadataResponsePartition {
        error_code: d.i16()?,
        partition_index: d.i32()?,
        leader_id: d.i32()?,
        ..Default::default()
    };
    if version >= 7 {
        p.leader_epoch = d.i32()?;
    }
    p.replica_nodes = d.array(flex, Decoder::i32)?;
    p.isr_nodes = d.array(flex, Decoder::i32)?;
    if version >= 5 {
        p.offline_replicas = d.array(flex, Decoder::i32)?;
    }
    if flex {
        d.tagged_fields()?;
    }
    Ok(p)
}

fn encode_partition(p: &MetadataResponsePartition, e: &mut Encoder, version: i16) {
    let flex = flexible(version);
    e.put_i16(p.error_code);
    e.put_i32(p.partition_index);
    e.put_i32(p.leader_id);
    if version >= 7 {
        e.put_i32(p.leader_epoch);
    }
    e.put_array(&p.replica_nodes, flex, |e, n| e.put_i32(*n));
    e.put_array(&p.isr_nodes, flex, |e, n| e.put_i32(*n));
    if version >= 5 {
        e.put_array(&p.offline_replicas, flex, |e, n| e.put_i32(*n));
    }
    if flex {
        e.put_empty_tagged_fields();
    }
}
