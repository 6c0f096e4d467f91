//! IncrementalAlterConfigs (key 44).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

pub use super::alter_configs::AlterConfigsResourceResponse;
use super::alter_configs::{decode_resource_response, encode_resource_response};
use super::common::{put_end, read_end};

crate::apis::declared_versions!(IncrementalAlterConfigs);

/// `ConfigOperation`: set the value.
pub const OP_SET: i8 = 0;
/// `ConfigOperation`: remove the override.
pub const OP_DELETE: i8 = 1;
/// `ConfigOperation`: add to a list value.
pub const OP_APPEND: i8 = 2;
/// `ConfigOperation`: remove from a list value.
pub const OP_SUBTRACT: i8 = 3;

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// IncrementalAlterConfigs request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncrementalAlterConfigsRequest {
    /// The incremental updates for each resource.
    pub resources: Vec<AlterConfigsResource>,
    /// Only validate.
    pub validate_only: bool,
}

/// The changes to one resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterConfigsResource {
    /// Resource type.
    pub resource_type: i8,
    /// Resource name.
    pub resource_name: String,
    /// The changes.
    pub configs: Vec<AlterableConfig>,
}

/// One change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterableConfig {
    /// Config name.
    pub name: String,
    /// Operation (`OP_SET`, `OP_DELETE`, `OP_APPEND`, `OP_SUBTRACT`).
    pub config_operation: i8,
    /// Value.
    pub value: Option<String>,
}

impl IncrementalAlterConfigsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = IncrementalAlterConfigsRequest {
            resources: d.array(flex, |d| {
                let res = AlterConfigsResource {
                    resource_type: d.i8()?,
                    resource_name: d.string(flex)?,
                    configs: d.array(flex, |d| {
                        let c = AlterableConfig {
                            name: d.string(flex)?,
                            config_operation: d.i8()?,
                            value: d.nullable_string(flex)?,
                        };
                        read_end(d, flex)?;
                        Ok(c)
                    })?,
                };
                read_end(d, flex)?;
                Ok(res)
            })?,
            validate_only: d.bool()?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.resources, flex, |e, res| {
            e.put_i8(res.resource_type);
            e.put_string(&res.resource_name, flex);
            e.put_array(&res.configs, flex, |e, c| {
                e.put_string(&c.name, flex);
                e.put_i8(c.config_operation);
                e.put_nullable_string(c.value.as_deref(), flex);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        e.put_bool(self.validate_only);
        put_end(e, flex);
    }
}

/// IncrementalAlterConfigs response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncrementalAlterConfigsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// One per resource.
    pub responses: Vec<AlterConfigsResourceResponse>,
}

impl IncrementalAlterConfigsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = IncrementalAlterConfigsResponse {
            throttle_time_ms: d.i32()?,
            responses: d.array(flex, |d| decode_resource_response(d, flex))?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.responses, flex, |e, r| {
            encode_resource_response(e, r, flex)
        });
        put_end(e, flex);
    }
}
