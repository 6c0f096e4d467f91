//! AlterConfigs (key 33).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(AlterConfigs);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// AlterConfigs request: replaces a resource's whole set of overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterConfigsRequest {
    /// The updates for each resource.
    pub resources: Vec<AlterConfigsResource>,
    /// Only validate.
    pub validate_only: bool,
}

/// The new configs of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterConfigsResource {
    /// Resource type.
    pub resource_type: i8,
    /// Resource name.
    pub resource_name: String,
    /// The configs.
    pub configs: Vec<AlterableConfig>,
}

/// One config to set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterableConfig {
    /// Config name.
    pub name: String,
    /// Value.
    pub value: Option<String>,
}

impl AlterConfigsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = AlterConfigsRequest {
            resources: d.array(flex, |d| {
                let res = AlterConfigsResource {
                    resource_type: d.i8()?,
                    resource_name: d.string(flex)?,
                    configs: d.array(flex, |d| {
                        let c = AlterableConfig {
                            name: d.string(flex)?,
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
                e.put_nullable_string(c.value.as_deref(), flex);
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        e.put_bool(self.validate_only);
        put_end(e, flex);
    }
}

/// AlterConfigs response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterConfigsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// One per resource.
    pub responses: Vec<AlterConfigsResourceResponse>,
}

/// The outcome for one resource (shared with IncrementalAlterConfigs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterConfigsResourceResponse {
    /// Error.
    pub error_code: i16,
    /// Error message.
    pub error_message: Option<String>,
    /// Resource type.
    pub resource_type: i8,
    /// Resource name.
    pub resource_name: String,
}

impl AlterConfigsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = AlterConfigsResponse {
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

pub(crate) fn decode_resource_response(
    d: &mut Decoder,
    flex: bool,
) -> Result<AlterConfigsResourceResponse> {
    let r = AlterConfigsResourceResponse {
        error_code: d.i16()?,
        error_message: d.nullable_string(flex)?,
        resource_type: d.i8()?,
        resource_name: d.string(flex)?,
    };
    read_end(d, flex)?;
    Ok(r)
}

pub(crate) fn encode_resource_response(
    e: &mut Encoder,
    r: &AlterConfigsResourceResponse,
    flex: bool,
) {
    e.put_i16(r.error_code);
    e.put_nullable_string(r.error_message.as_deref(), flex);
    e.put_i8(r.resource_type);
    e.put_string(&r.resource_name, flex);
    put_end(e, flex);
}
