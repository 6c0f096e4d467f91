//! JoinGroup (key 11): a member joins a classic consumer group. Kafka 4.1 accepts
//! v0-v9: `rebalance_timeout_ms` v1+ (v0 has none: the broker uses the session
//! timeout), `throttle_time_ms` in the response v2+, `group_instance_id` v5+
//! (KIP-345), flexible v6+, `protocol_type` in the response v7+ (KIP-559),
//! `reason` v8+ (KIP-800), `skip_assignment` in the response v9+.

use bytes::Bytes;

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(JoinGroup);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// JoinGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    /// The group id.
    pub group_id: String,
    /// Session timeout.
    pub session_timeout_ms: i32,
    /// Rebalance timeout (v1+; -1, the schema default, when absent in v0: see
    /// [`JoinGroupRequest::effective_rebalance_timeout_ms`]).
    pub rebalance_timeout_ms: i32,
    /// The member id, empty on the first join.
    pub member_id: String,
    /// Static membership instance id (v5+).
    pub group_instance_id: Option<String>,
    /// The protocol type ("consumer", "connect", ...).
    pub protocol_type: String,
    /// The protocols the member supports, in preference order.
    pub protocols: Vec<JoinGroupRequestProtocol>,
    /// Why the member (re)joins (v8+).
    pub reason: Option<String>,
}

impl Default for JoinGroupRequest {
    fn default() -> Self {
        JoinGroupRequest {
            group_id: String::new(),
            session_timeout_ms: 0,
            rebalance_timeout_ms: -1,
            member_id: String::new(),
            group_instance_id: None,
            protocol_type: String::new(),
            protocols: Vec::new(),
            reason: None,
        }
    }
}

/// One supported protocol.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinGroupRequestProtocol {
    /// Protocol name (assignor).
    pub name: String,
    /// Protocol metadata, a slice of the request frame.
    pub metadata: Bytes,
}

impl JoinGroupRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = JoinGroupRequest {
            group_id: d.string(flex)?,
            session_timeout_ms: d.i32()?,
            ..Default::default()
        };
        if version >= 1 {
            r.rebalance_timeout_ms = d.i32()?;
        }
        r.member_id = d.string(flex)?;
        if version >= 5 {
            r.group_instance_id = d.nullable_string(flex)?;
        }
        r.protocol_type = d.string(flex)?;
        r.protocols = d.array(flex, |d| {
            let p = JoinGroupRequestProtocol {
                name: d.string(flex)?,
                metadata: d.bytes(flex)?,
            };
            read_end(d, flex)?;
            Ok(p)
        })?;
        if version >= 8 {
            r.reason = d.nullable_string(flex)?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_string(&self.group_id, flex);
        e.put_i32(self.session_timeout_ms);
        if version >= 1 {
            e.put_i32(self.rebalance_timeout_ms);
        }
        e.put_string(&self.member_id, flex);
        if version >= 5 {
            e.put_nullable_string(self.group_instance_id.as_deref(), flex);
        }
        e.put_string(&self.protocol_type, flex);
        e.put_array(&self.protocols, flex, |e, p| {
            e.put_string(&p.name, flex);
            e.put_bytes(&p.metadata, flex);
            put_end(e, flex);
        });
        if version >= 8 {
            e.put_nullable_string(self.reason.as_deref(), flex);
        }
        put_end(e, flex);
    }

    /// The rebalance timeout the coordinator applies: v0 carries none, so it is the session
    /// timeout, as Kafka's `JoinGroupRequest` sets it for v0; from v1 the field as sent.
    pub fn effective_rebalance_timeout_ms(&self, version: i16) -> i32 {
        if version == 0 {
            self.session_timeout_ms
        } else {
            self.rebalance_timeout_ms
        }
    }
}

/// JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    /// Throttle time (v2+).
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The generation id, -1 on error.
    pub generation_id: i32,
    /// The group's protocol type (v7+).
    pub protocol_type: Option<String>,
    /// The protocol the coordinator selected (nullable v7+; `None` is written
    /// as an empty string before v7).
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: String,
    /// True if the leader must skip the assignment (v9+).
    pub skip_assignment: bool,
    /// The member id assigned to the joining member.
    pub member_id: String,
    /// The group's members (only sent to the leader).
    pub members: Vec<JoinGroupResponseMember>,
}

impl Default for JoinGroupResponse {
    fn default() -> Self {
        JoinGroupResponse {
            throttle_time_ms: 0,
            error_code: 0,
            generation_id: -1,
            protocol_type: None,
            protocol_name: Some(String::new()),
            leader: String::new(),
            skip_assignment: false,
            member_id: String::new(),
            members: Vec::new(),
        }
    }
}

/// One member, as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinGroupResponseMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id (v5+).
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

impl JoinGroupResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = JoinGroupResponse::default();
        if version >= 2 {
            r.throttle_time_ms = d.i32()?;
        }
        r.error_code = d.i16()?;
        r.generation_id = d.i32()?;
        if version >= 7 {
            r.protocol_type = d.nullable_string(flex)?;
            r.protocol_name = d.nullable_string(flex)?;
        } else {
            r.protocol_name = Some(d.string(flex)?);
        }
        r.leader = d.string(flex)?;
        if version >= 9 {
            r.skip_assignment = d.bool()?;
        }
        r.member_id = d.string(flex)?;
        r.members = d.array(flex, |d| {
            let mut m = JoinGroupResponseMember {
                member_id: d.string(flex)?,
                ..Default::default()
            };
            if version >= 5 {
                m.group_instance_id = d.nullable_string(flex)?;
            }
            m.metadata = d.bytes(flex)?;
            read_end(d, flex)?;
            Ok(m)
        })?;
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 2 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_i16(self.error_code);
        e.put_i32(self.generation_id);
        if version >= 7 {
            e.put_nullable_string(self.protocol_type.as_deref(), flex);
            e.put_nullable_string(self.protocol_name.as_deref(), flex);
        } else {
            e.put_string(self.protocol_name.as_deref().unwrap_or(""), flex);
        }
        e.put_string(&self.leader, flex);
        if version >= 9 {
            e.put_bool(self.skip_assignment);
        }
        e.put_string(&self.member_id, flex);
        e.put_array(&self.members, flex, |e, m| {
            e.put_string(&m.member_id, flex);
            if version >= 5 {
                e.put_nullable_string(m.group_instance_id.as_deref(), flex);
            }
            e.put_bytes(&m.metadata, flex);
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
