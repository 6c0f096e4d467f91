//! FindCoordinator (key 10): which broker coordinates a group, transaction or
//! share group. v4+ (KIP-699) batches: the request carries `coordinator_keys`
//! and the response a `coordinators` entry per key instead of the single
//! top-level answer. v5 (KIP-890) and v6 (KIP-932, key type 2) add nothing on
//! the wire. Kafka 4.1 accepts v0-v6 (KIP-896 left FindCoordinator alone).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(FindCoordinator);

/// `key_type` of a consumer group.
pub const KEY_TYPE_GROUP: i8 = 0;
/// `key_type` of a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;
/// `key_type` of a share group (v6+).
pub const KEY_TYPE_SHARE: i8 = 2;

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// FindCoordinator request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FindCoordinatorRequest {
    /// The coordinator key (v0-3).
    pub key: String,
    /// The key type (v1+, [`KEY_TYPE_GROUP`], ...).
    pub key_type: i8,
    /// The coordinator keys (v4+).
    pub coordinator_keys: Vec<String>,
}

impl FindCoordinatorRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = FindCoordinatorRequest::default();
        if version <= 3 {
            r.key = d.string(flex)?;
        }
        if version >= 1 {
            r.key_type = d.i8()?;
        }
        if version >= 4 {
            r.coordinator_keys = d.array(flex, |d| d.string(flex))?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version <= 3 {
            e.put_string(&self.key, flex);
        }
        if version >= 1 {
            e.put_i8(self.key_type);
        }
        if version >= 4 {
            e.put_array(&self.coordinator_keys, flex, |e, k| e.put_string(k, flex));
        }
        put_end(e, flex);
    }
}

/// FindCoordinator response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FindCoordinatorResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Error code (v0-3).
    pub error_code: i16,
    /// Error message (v1-3).
    pub error_message: Option<String>,
    /// The coordinator's node id (v0-3).
    pub node_id: i32,
    /// The coordinator's host (v0-3).
    pub host: String,
    /// The coordinator's port (v0-3).
    pub port: i32,
    /// One entry per requested key (v4+).
    pub coordinators: Vec<Coordinator>,
}

/// The coordinator of one key (v4+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coordinator {
    /// The coordinator key.
    pub key: String,
    /// Node id.
    pub node_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: i32,
    /// Error code.
    pub error_code: i16,
    /// Error message.
    pub error_message: Option<String>,
}

impl FindCoordinatorResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = FindCoordinatorResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        if version <= 3 {
            r.error_code = d.i16()?;
            if version >= 1 {
                r.error_message = d.nullable_string(flex)?;
            }
            r.node_id = d.i32()?;
            r.host = d.string(flex)?;
            r.port = d.i32()?;
        } else {
            r.coordinators = d.array(flex, |d| {
                let c = Coordinator {
                    key: d.string(flex)?,
                    node_id: d.i32()?,
                    host: d.string(flex)?,
                    port: d.i32()?,
                    error_code: d.i16()?,
                    error_message: d.nullable_string(flex)?,
                };
                read_end(d, flex)?;
                Ok(c)
            })?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 1 {
            e.put_i32(self.throttle_time_ms);
        }
        if version <= 3 {
            e.put_i16(self.error_code);
            if version >= 1 {
                e.put_nullable_string(self.error_message.as_deref(), flex);
            }
            e.put_i32(self.node_id);
            e.put_string(&self.host, flex);
            e.put_i32(self.port);
        } else {
            e.put_array(&self.coordinators, flex, |e, c| {
                e.put_string(&c.key, flex);
                e.put_i32(c.node_id);
                e.put_string(&c.host, flex);
                e.put_i32(c.port);
                e.put_i16(c.error_code);
                e.put_nullable_string(c.error_message.as_deref(), flex);
                put_end(e, flex);
            });
        }
        put_end(e, flex);
    }
}
