//! ListGroups (key 16): the groups a broker coordinates. Flexible v3+;
//! `states_filter` in the request and `group_state` per group v4+ (KIP-518);
//! `types_filter` and `group_type` v5+ (KIP-848). Kafka 4.1 accepts v0-v5.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(ListGroups);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// ListGroups request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListGroupsRequest {
    /// Only groups in these states; empty for all (v4+).
    pub states_filter: Vec<String>,
    /// Only groups of these types ("classic", "consumer", ...); empty for all (v5+).
    pub types_filter: Vec<String>,
}

impl ListGroupsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = ListGroupsRequest::default();
        if version >= 4 {
            r.states_filter = d.array(flex, |d| d.string(flex))?;
        }
        if version >= 5 {
            r.types_filter = d.array(flex, |d| d.string(flex))?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        if version >= 4 {
            e.put_array(&self.states_filter, flex, |e, s| e.put_string(s, flex));
        }
        if version >= 5 {
            e.put_array(&self.types_filter, flex, |e, s| e.put_string(s, flex));
        }
        put_end(e, flex);
    }
}

/// ListGroups response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListGroupsResponse {
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Error code.
    pub error_code: i16,
    /// The groups.
    pub groups: Vec<ListedGroup>,
}

/// One listed group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListedGroup {
    /// Group id.
    pub group_id: String,
    /// Protocol type ("consumer", or empty for offsets-only groups).
    pub protocol_type: String,
    /// State name (v4+).
    pub group_state: String,
    /// Type name ("classic", "consumer", ...) (v5+).
    pub group_type: String,
}

impl ListGroupsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = ListGroupsResponse::default();
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        r.error_code = d.i16()?;
        r.groups = d.array(flex, |d| {
            let mut g = ListedGroup {
                group_id: d.string(flex)?,
                protocol_type: d.string(flex)?,
                ..Default::default()
            };
            if version >= 4 {
                g.group_state = d.string(flex)?;
            }
            if version >= 5 {
                g.group_type = d.string(flex)?;
            }
            read_end(d, flex)?;
            Ok(g)
        })?;
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
        e.put_array(&self.groups, flex, |e, g| {
            e.put_string(&g.group_id, flex);
            e.put_string(&g.protocol_type, flex);
            if version >= 4 {
                e.put_string(&g.group_state, flex);
            }
            if version >= 5 {
                e.put_string(&g.group_type, flex);
            }
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
