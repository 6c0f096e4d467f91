//! DeleteGroups (key 42): delete empty groups and their committed offsets.
//! v1 is v0 with throttle-before-response; flexible v2+; v3 adds a nullable
//! error message per group. Kafka 4.4 accepts v0-v3.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DeleteGroups);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DeleteGroups request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteGroupsRequest {
    /// The group ids to delete.
    pub groups_names: Vec<String>,
}

impl DeleteGroupsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DeleteGroupsRequest {
            groups_names: d.array(flex, |d| d.string(flex))?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.groups_names, flex, |e, g| e.put_string(g, flex));
        put_end(e, flex);
    }
}

/// DeleteGroups response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeleteGroupsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// One result per group.
    pub results: Vec<DeletableGroupResult>,
}

/// One group's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeletableGroupResult {
    /// Group id.
    pub group_id: String,
    /// Error code.
    pub error_code: i16,
    /// Error message (v3+), null when there is nothing to add to the code.
    pub error_message: Option<String>,
}

impl DeleteGroupsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DeleteGroupsResponse {
            throttle_time_ms: d.i32()?,
            results: d.array(flex, |d| {
                let mut g = DeletableGroupResult {
                    group_id: d.string(flex)?,
                    error_code: d.i16()?,
                    error_message: None,
                };
                if version >= 3 {
                    g.error_message = d.nullable_string(flex)?;
                }
                read_end(d, flex)?;
                Ok(g)
            })?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.results, flex, |e, g| {
            e.put_string(&g.group_id, flex);
            e.put_i16(g.error_code);
            if version >= 3 {
                e.put_nullable_string(g.error_message.as_deref(), flex);
            }
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}
