//! LeaveGroup (key 13): members leave a classic group. v0-2 name a single
//! `member_id`; v3+ (KIP-345) batch `members` (with static instance ids) and
//! answer per member; flexible v4+; `reason` per member v5+ (KIP-800). Kafka
//! 4.1 accepts v0-v5.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(LeaveGroup);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// LeaveGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaveGroupRequest {
    /// The group id.
    pub group_id: String,
    /// The leaving member (v0-2).
    pub member_id: String,
    /// The leaving members (v3+).
    pub members: Vec<MemberIdentity>,
}

/// One leaving member (v3+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberIdentity {
    /// Member id (may be empty for a static member named by instance id).
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Why the member leaves (v5+).
    pub reason: Option<String>,
}

impl LeaveGroupRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = LeaveGroupRequest {
            group_id: d.string(flex)?,
            ..Default::default()
        };
        if version <= 2 {
            r.member_id = d.string(flex)?;
        } else {
            r.members = d.array(flex, |d| {
                let mut m = MemberIdentity {
                    member_id: d.string(flex)?,
                    group_instance_id: d.nullable_string(flex)?,
                    reason: None,
                };
                if version >= 5 {
                    m.reason = d.nullable_string(flex)?;
                }
                read_end(d, flex)?;
                Ok(m)
            })?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_string(&self.group_id, flex);
        if version <= 2 {
            e.put_string(&self.member_id, flex);
        } else {
            e.put_array(&self.members, flex, |e, m| {
                e.put_string(&m.member_id, flex);
                e.put_nullable_string(m.group_instance_id.as_deref(), flex);
                if version >= 5 {
                    e.put_nullable_string(m.reason.as_deref(), flex);
                }
                put_end(e, flex);
            });
        }
        put_end(e, flex);
    }
}

/// LeaveGroup response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaveGroupResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Top-level error code.
    pub error_code: i16,
    /// Per-member results (v3+).
    pub members: Vec<MemberResponse>,
}

/// One member's result (v3+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberResponse {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Error code.
    pub error_code: i16,
}

impl LeaveGroupResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = LeaveGroupResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        r.error_code = d.i16()?;
        if version >= 3 {
            r.members = d.array(flex, |d| {
                let m = MemberResponse {
                    member_id: d.string(flex)?,
                    group_instance_id: d.nullable_string(flex)?,
                    error_code: d.i16()?,
                };
                read_end(d, flex)?;
                Ok(m)
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
        e.put_i16(self.error_code);
        if version >= 3 {
            e.put_array(&self.members, flex, |e, m| {
                e.put_string(&m.member_id, flex);
                e.put_nullable_string(m.group_instance_id.as_deref(), flex);
                e.put_i16(m.error_code);
                put_end(e, flex);
            });
        }
        put_end(e, flex);
    }
}
