//! IncrementalAlterConfigs (key 44).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

pub use super::alter_configs::AlterConfigsResourceResponse;
use super::alter_configs::{
    self, decode_request_body, decode_resource_response, encode_request_body,
    encode_resource_response, ConfigEntry,
};
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

/// The changes to one resource: AlterConfigs' resource with this API's entries.
pub type AlterConfigsResource = alter_configs::AlterConfigsResource<AlterableConfig>;

/// One change: AlterConfigs' entry plus the operation, which sits between name and value on
/// the wire.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterableConfig {
    /// Config name.
    pub name: String,
    /// Operation (`OP_SET`, `OP_DELETE`, `OP_APPEND`, `OP_SUBTRACT`).
    pub config_operation: i8,
    /// Value.
    pub value: Option<String>,
}

impl ConfigEntry for AlterableConfig {
    fn decode(d: &mut Decoder, flex: bool) -> Result<Self> {
        let c = AlterableConfig {
            name: d.string(flex)?,
            config_operation: d.i8()?,
            value: d.nullable_string(flex)?,
        };
        read_end(d, flex)?;
        Ok(c)
    }

    fn encode(&self, e: &mut Encoder, flex: bool) {
        e.put_string(&self.name, flex);
        e.put_i8(self.config_operation);
        e.put_nullable_string(self.value.as_deref(), flex);
        put_end(e, flex);
    }
}

impl IncrementalAlterConfigsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let (resources, validate_only) = decode_request_body(d, flexible(version))?;
        Ok(IncrementalAlterConfigsRequest {
            resources,
            validate_only,
        })
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        encode_request_body(e, &self.resources, self.validate_only, flexible(version));
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
