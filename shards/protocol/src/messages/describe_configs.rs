//! DescribeConfigs (key 32).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DescribeConfigs);

/// Resource type of a topic.
pub const RESOURCE_TOPIC: i8 = 2;
/// Resource type of a broker.
pub const RESOURCE_BROKER: i8 = 4;
/// Resource type of a broker's loggers.
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// `ConfigSource` values (Kafka's `DescribeConfigsResponse.ConfigSource`).
pub mod config_source {
    /// Unknown.
    pub const UNKNOWN: i8 = 0;
    /// A topic's dynamic override.
    pub const DYNAMIC_TOPIC_CONFIG: i8 = 1;
    /// A broker's dynamic config.
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    /// The cluster-wide dynamic broker default.
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    /// The broker's static configuration file.
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    /// Kafka's built-in default.
    pub const DEFAULT_CONFIG: i8 = 5;
}

/// `ConfigType` values (Kafka's `DescribeConfigsResponse.ConfigType`).
pub mod config_type {
    /// Unknown.
    pub const UNKNOWN: i8 = 0;
    /// Boolean.
    pub const BOOLEAN: i8 = 1;
    /// String.
    pub const STRING: i8 = 2;
    /// Int.
    pub const INT: i8 = 3;
    /// Short.
    pub const SHORT: i8 = 4;
    /// Long.
    pub const LONG: i8 = 5;
    /// Double.
    pub const DOUBLE: i8 = 6;
    /// List.
    pub const LIST: i8 = 7;
    /// Class.
    pub const CLASS: i8 = 8;
    /// Password.
    pub const PASSWORD: i8 = 9;
}

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// DescribeConfigs request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeConfigsRequest {
    /// The resources to describe.
    pub resources: Vec<DescribeConfigsResource>,
    /// Include every synonym (v1+).
    pub include_synonyms: bool,
    /// Include the documentation (v3+).
    pub include_documentation: bool,
}

/// One resource to describe.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeConfigsResource {
    /// Resource type (2 topic, 4 broker, 8 broker logger).
    pub resource_type: i8,
    /// Resource name (topic name, broker id).
    pub resource_name: String,
    /// Keys to list, `None` for all.
    pub configuration_keys: Option<Vec<String>>,
}

impl DescribeConfigsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = DescribeConfigsRequest {
            resources: d.array(flex, |d| {
                let res = DescribeConfigsResource {
                    resource_type: d.i8()?,
                    resource_name: d.string(flex)?,
                    configuration_keys: d.nullable_array(flex, |d| d.string(flex))?,
                };
                read_end(d, flex)?;
                Ok(res)
            })?,
            ..Default::default()
        };
        r.include_synonyms = d.bool()?;
        if version >= 3 {
            r.include_documentation = d.bool()?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_array(&self.resources, flex, |e, res| {
            e.put_i8(res.resource_type);
            e.put_string(&res.resource_name, flex);
            e.put_nullable_array(res.configuration_keys.as_deref(), flex, |e, k| {
                e.put_string(k, flex)
            });
            put_end(e, flex);
        });
        e.put_bool(self.include_synonyms);
        if version >= 3 {
            e.put_bool(self.include_documentation);
        }
        put_end(e, flex);
    }
}

/// DescribeConfigs response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeConfigsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// One result per resource.
    pub results: Vec<DescribeConfigsResult>,
}

/// The configs of one resource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeConfigsResult {
    /// Error.
    pub error_code: i16,
    /// Error message.
    pub error_message: Option<String>,
    /// Resource type.
    pub resource_type: i8,
    /// Resource name.
    pub resource_name: String,
    /// The configs.
    pub configs: Vec<DescribeConfigsResourceResult>,
}

/// One config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeConfigsResourceResult {
    /// Config name.
    pub name: String,
    /// Value (`None` when sensitive or unset).
    pub value: Option<String>,
    /// Cannot be altered.
    pub read_only: bool,
    /// Where the value comes from (v1+, [`config_source`]).
    pub config_source: i8,
    /// Sensitive (value withheld).
    pub is_sensitive: bool,
    /// Synonyms, most specific first (v1+).
    pub synonyms: Vec<DescribeConfigsSynonym>,
    /// Data type (v3+, [`config_type`]).
    pub config_type: i8,
    /// Documentation (v3+).
    pub documentation: Option<String>,
}

impl Default for DescribeConfigsResourceResult {
    fn default() -> Self {
        DescribeConfigsResourceResult {
            name: String::new(),
            value: None,
            read_only: false,
            config_source: -1,
            is_sensitive: false,
            synonyms: Vec::new(),
            config_type: 0,
            documentation: None,
        }
    }
}

/// A synonym of a config.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeConfigsSynonym {
    /// Synonym name.
    pub name: String,
    /// Its value.
    pub value: Option<String>,
    /// Its source.
    pub source: i8,
}

impl DescribeConfigsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = DescribeConfigsResponse {
            throttle_time_ms: d.i32()?,
            results: d.array(flex, |d| decode_result(d, version))?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.results, flex, |e, r| {
            e.put_i16(r.error_code);
            e.put_nullable_string(r.error_message.as_deref(), flex);
            e.put_i8(r.resource_type);
            e.put_string(&r.resource_name, flex);
            e.put_array(&r.configs, flex, |e, c| {
                e.put_string(&c.name, flex);
                e.put_nullable_string(c.value.as_deref(), flex);
                e.put_bool(c.read_only);
                e.put_i8(c.config_source);
                e.put_bool(c.is_sensitive);
                e.put_array(&c.synonyms, flex, |e, s| {
                    e.put_string(&s.name, flex);
                    e.put_nullable_string(s.value.as_deref(), flex);
                    e.put_i8(s.source);
                    put_end(e, flex);
                });
                if version >= 3 {
                    e.put_i8(c.config_type);
                    e.put_nullable_string(c.documentation.as_deref(), flex);
                }
                put_end(e, flex);
            });
            put_end(e, flex);
        });
        put_end(e, flex);
    }
}

fn decode_result(d: &mut Decoder, version: i16) -> Result<DescribeConfigsResult> {
    let flex = flexible(version);
    let r = DescribeConfigsResult {
        error_code: d.i16()?,
        error_message: d.nullable_string(flex)?,
        resource_type: d.i8()?,
        resource_name: d.string(flex)?,
        configs: d.array(flex, |d| {
            let mut c = DescribeConfigsResourceResult {
                name: d.string(flex)?,
                value: d.nullable_string(flex)?,
                read_only: d.bool()?,
                config_source: d.i8()?,
                is_sensitive: d.bool()?,
                synonyms: d.array(flex, |d| {
                    let s = DescribeConfigsSynonym {
                        name: d.string(flex)?,
                        value: d.nullable_string(flex)?,
                        source: d.i8()?,
                    };
                    read_end(d, flex)?;
                    Ok(s)
                })?,
                ..Default::default()
            };
            if version >= 3 {
                c.config_type = d.i8()?;
                c.documentation = d.nullable_string(flex)?;
            }
            read_end(d, flex)?;
            Ok(c)
        })?,
    };
    read_end(d, flex)?;
    Ok(r)
}
