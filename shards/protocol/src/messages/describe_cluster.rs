//! DescribeCluster (key 60): brokers, controller and cluster id (KIP-700). All versions are
//! flexible; v1 adds `endpoint_type` (KIP-919), v2 the request's `include_fenced_brokers` and
//! each broker's `is_fenced` (KIP-1073).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

crate::apis::declared_versions!(DescribeCluster);

/// `endpoint_type` value for brokers.
pub const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// `endpoint_type` value for controllers.
pub const ENDPOINT_TYPE_CONTROLLERS: i8 = 2;

/// DescribeCluster request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterRequest {
    /// Whether to fill `cluster_authorized_operations`.
    pub include_cluster_authorized_operations: bool,
    /// 1 brokers, 2 controllers (v1+, default 1).
    pub endpoint_type: i8,
    /// v2+: list fenced brokers too (default false).
    pub include_fenced_brokers: bool,
}

impl Default for DescribeClusterRequest {
    fn default() -> Self {
        DescribeClusterRequest {
            include_cluster_authorized_operations: false,
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            include_fenced_brokers: false,
        }
    }
}

impl DescribeClusterRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = DescribeClusterRequest {
            include_cluster_authorized_operations: d.bool()?,
            ..Default::default()
        };
        if version >= 1 {
            r.endpoint_type = d.i8()?;
        }
        if version >= 2 {
            r.include_fenced_brokers = d.bool()?;
        }
        d.tagged_fields()?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_bool(self.include_cluster_authorized_operations);
        if version >= 1 {
            e.put_i8(self.endpoint_type);
        }
        if version >= 2 {
            e.put_bool(self.include_fenced_brokers);
        }
        e.put_empty_tagged_fields();
    }
}

/// DescribeCluster response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeClusterResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error.
    pub error_code: i16,
    /// Top-level error message.
    pub error_message: Option<String>,
    /// Endpoint type described (v1+, default 1).
    pub endpoint_type: i8,
    /// Cluster id.
    pub cluster_id: String,
    /// Controller id, -1 if unknown.
    pub controller_id: i32,
    /// Brokers.
    pub brokers: Vec<DescribeClusterBroker>,
    /// Authorized operations bitfield, `i32::MIN` when not requested.
    pub cluster_authorized_operations: i32,
}

impl Default for DescribeClusterResponse {
    fn default() -> Self {
        DescribeClusterResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            cluster_id: String::new(),
            controller_id: -1,
            brokers: Vec::new(),
            cluster_authorized_operations: i32::MIN,
        }
    }
}

/// A broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeClusterBroker {
    /// Broker id.
    pub broker_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Rack.
    pub rack: Option<String>,
    /// v2+: whether the broker is fenced (default false).
    pub is_fenced: bool,
}

impl DescribeClusterResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = DescribeClusterResponse {
            throttle_time_ms: d.i32()?,
            error_code: d.i16()?,
            error_message: d.nullable_string(true)?,
            ..Default::default()
        };
        if version >= 1 {
            r.endpoint_type = d.i8()?;
        }
        r.cluster_id = d.string(true)?;
        r.controller_id = d.i32()?;
        r.brokers = d.array(true, |d| decode_broker(d, version))?;
        r.cluster_authorized_operations = d.i32()?;
        d.tagged_fields()?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_i16(self.error_code);
        e.put_nullable_string(self.error_message.as_deref(), true);
        if version >= 1 {
            e.put_i8(self.endpoint_type);
        }
        e.put_string(&self.cluster_id, true);
        e.put_i32(self.controller_id);
        e.put_array(&self.brokers, true, |e, b| {
            e.put_i32(b.broker_id);
            e.put_string(&b.host, true);
            e.put_i32(b.port);
            e.put_nullable_string(b.rack.as_deref(), true);
            if version >= 2 {
                e.put_bool(b.is_fenced);
            }
            e.put_empty_tagged_fields();
        });
        e.put_i32(self.cluster_authorized_operations);
        e.put_empty_tagged_fields();
    }
}

fn decode_broker(d: &mut Decoder, version: i16) -> Result<DescribeClusterBroker> {
    let mut b = DescribeClusterBroker {
        broker_id: d.i32()?,
        host: d.string(true)?,
        port: d.i32()?,
        rack: d.nullable_string(true)?,
        is_fenced: false,
    };
    if version >= 2 {
        b.is_fenced = d.bool()?;
    }
    d.tagged_fields()?;
    Ok(b)
}
