//! SyncGroup (key 14): the leader hands out assignments; every member gets
//! its own back. `group_instance_id` v3+ (KIP-345), flexible v4+,
//! `protocol_type`/`protocol_name` v5+ (KIP-559). Kafka 4.1 accepts v0-v5.

use bytes::Bytes;

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(SyncGroup);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// SyncGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncGroupRequest {
    /// The group id.
    pub group_id: String,
    /// The member's generation.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// Static instance id (v3+).
    pub group_instance_id: Option<String>,
    /// The group's protocol type (v5+).
    pub protocol_type: Option<String>,
    /// The group's selected protocol (v5+).
    pub protocol_name: Option<String>,
    /// The leader's assignments (empty from followers).
    pub assignments: Vec<SyncGroupRequestAssignment>,
}

/// One member's assignment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncGroupRequestAssignment {
    /// Member id.
    pub member_id: String,
    /// The assignment, a slice of the request frame.
    pub assignment: Bytes,
}

impl SyncGroupRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = SyncGroupRequest {
            group_id: d.string(flex)?,
            generation_id: d.i32()?,
            member_id: d.string(flex)?,
            ..Default::default()
        };
        if version >= 3 {
            r.group_instance_id = d.nullable_string(flex)?;
        }
        if version >= 5 {
            r.protocol_type = d.nullable_string(flex)?;
            r.protocol_name = d.nullable_string(flex)?;
        }
        r.assignments = d.array(flex, |d| {
            let a = SyncGroupRequestAssignment {
                member_id: d.string(flex)?,
                assignment: d.bytes(flex)?,
            };
            read_end(d, flex)?;
            Ok(a)
        })?;
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
        if version >= 5 {
            e.put_nullable_string(self.protocol_type.as_deref(), flex);
            e.put_nullable_string(self.protocol_name.as_deref(), flex);
        }
        e.put_array(&self.assignments, flex, |e, a| {
            e.put_string(&a.member_id, flex);
            e.put_bytes(&a.assignment, flex);
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

/// SyncGroup response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SyncGroupResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The group's protocol type (v5+).
    pub protocol_type: Option<String>,
    /// The group's selected protocol (v5+).
    pub protocol_name: Option<String>,
    /// This member's assignment.
    pub assignment: Bytes,
}

impl SyncGroupResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = SyncGroupResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        r.error_code = d.i16()?;
        if version >= 5 {
            r.protocol_type = d.nullable_string(flex)?;
            r.protocol_name = d.nullable_string(flex)?;
        }
        r.assignment = d.bytes(flex)?;
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
        if version >= 5 {
            e.put_nullable_string(self.protocol_type.as_deref(), flex);
            e.put_nullable_string(self.protocol_name.as_deref(), flex);
        }
        e.put_bytes(&self.assignment, flex);
        put_end(e, flex);
    }
}
