//! DescribeGroups (key 15): state, protocol and members of classic groups.
//! `include_authorized_operations` v3+ (KIP-430), member `group_instance_id`
//! v4+ (KIP-345), flexible v5+, group `error_message` v6+ (KIP-1043, which
//! also answers unknown groups with `GROUP_ID_NOT_FOUND` instead of `Dead`).
//! Kafka 4.1 accepts v0-v6.

use bytes::Bytes;

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DescribeGroups);

/// `authorized_operations` when they were not requested.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DescribeGroups request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeGroupsRequest {
    /// The group ids.
    pub groups: Vec<String>,
    /// Include the authorized operations (v3+).
    pub include_authorized_operations: bool,
}

impl DescribeGroupsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = DescribeGroupsRequest {
            groups: d.array(flex, |d| d.string(flex))?,
            include_authorized_operations: false,
        };
        if version >= 3 {
            r.include_authorized_operations = d.bool()?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.groups, flex, |e, g| e.put_string(g, flex));
        if version >= 3 {
            e.put_bool(self.include_authorized_operations);
        }
        put_end(e, flex);
    }
}

/// DescribeGroups response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeGroupsResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// One entry per requested group.
    pub groups: Vec<DescribedGroup>,
}

/// One described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    /// Error code.
    pub error_code: i16,
    /// Error message (v6+).
    pub error_message: Option<String>,
    /// Group id.
    pub group_id: String,
    /// State name ("Stable", "Empty", "Dead", ...), or empty.
    pub group_state: String,
    /// Protocol type, or empty.
    pub protocol_type: String,
    /// Selected protocol (only when Stable), or empty.
    pub protocol_data: String,
    /// Members (empty when Dead).
    pub members: Vec<DescribedGroupMember>,
    /// Authorized operations bitfield (v3+), [`AUTHORIZED_OPERATIONS_OMITTED`]
    /// when not requested.
    pub authorized_operations: i32,
}

impl Default for DescribedGroup {
    fn default() -> Self {
        DescribedGroup {
            error_code: 0,
            error_message: None,
            group_id: String::new(),
            group_state: String::new(),
            protocol_type: String::new(),
            protocol_data: String::new(),
            members: Vec::new(),
            authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        }
    }
}

/// One member of a described group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribedGroupMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id (v4+).
    pub group_instance_id: Option<String>,
    /// Client id of the member's last JoinGroup.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Metadata for the selected protocol (only when Stable).
    pub member_metadata: Bytes,
    /// The member's assignment (only when Stable).
    pub member_assignment: Bytes,
}

impl DescribeGroupsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = DescribeGroupsResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        r.groups = d.array(flex, |d| decode_group(d, version))?;
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 1 {
            e.put_i32(self.throttle_time_ms);
        }
        e.put_array(&self.groups, flex, |e, g| {
            e.put_i16(g.error_code);
            if version >= 6 {
                e.put_nullable_string(g.error_message.as_deref(), flex);
            }
            e.put_string(&g.group_id, flex);
            e.put_string(&g.group_state, flex);
            e.put_string(&g.protocol_type, flex);
            e.put_string(&g.protocol_data, flex);
            e.put_array(&g.members, flex, |e, m| {
                e.put_string(&m.member_id, flex);
                if version >= 4 {
                    e.put_nullable_string(m.group_instance_id.as_deref(), flex);
                }
                e.put_string(&m.client_id, flex);
                e.put_string(&m.client_host, flex);
                e.put_bytes(&m.member_metadata, flex);
                e.put_bytes(&m.member_assignment, flex);
                put_end(e, flex);
            });
            if version >= 3 {
                e.put_i32(g.authorized_operations);
            }
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

fn decode_group(d: &mut Decoder, version: i16) -> Result<DescribedGroup> {
    let flex = flexible(version);
    let mut g = DescribedGroup {
        error_code: d.i16()?,
        ..Default::default()
    };
    if version >= 6 {
        g.error_message = d.nullable_string(flex)?;
    }
    g.group_id = d.string(flex)?;
    g.group_state = d.string(flex)?;
    g.protocol_type = d.string(flex)?;
    g.protocol_data = d.string(flex)?;
    g.members = d.array(flex, |d| {
        let mut m = DescribedGroupMember {
            member_id: d.string(flex)?,
            ..Default::default()
        };
        if version >= 4 {
            m.group_instance_id = d.nullable_string(flex)?;
        }
        m.client_id = d.string(flex)?;
        m.client_host = d.string(flex)?;
        m.member_metadata = d.bytes(flex)?;
        m.member_assignment = d.bytes(flex)?;
        read_end(d, flex)?;
        Ok(m)
    })?;
    if version >= 3 {
        g.authorized_operations = d.i32()?;
    }
    read_end(d, flex)?;
    Ok(g)
}
