//! Heartbeat (key 12): a classic group member's liveness signal; the error
//! code tells it to rejoin (`REBALANCE_IN_PROGRESS`). `group_instance_id` v3+
//! (KIP-345), flexible v4+. Kafka 4.1 accepts v0-v4.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(Heartbeat);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// Heartbeat request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeartbeatRequest {
    /// The group id.
    pub group_id: String,
    /// The member's generation.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// Static instance id (v3+).
    pub group_instance_id: Option<String>,
}

impl HeartbeatRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = HeartbeatRequest {
            group_id: d.string(flex)?,
            generation_id: d.i32()?,
            member_id: d.string(flex)?,
            group_instance_id: None,
        };
        if version >= 3 {
            r.group_instance_id = d.nullable_string(flex)?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_string(&self.group_id, flex);
        e.put_i32(self.generation_id);
        e.put_string(&self.member_id, flex);
        if version >= 3 {
            e.put_nullable_string(self.group_instance_id.as_deref(), flex);
        }
        put_end(e, flex);
    }
}

/// Heartbeat response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeartbeatResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
}

impl HeartbeatResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = HeartbeatResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        r.error_code = d.i16()?;
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 1 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_i16(self.error_code);
        put_end(e, flex);
    }
}
