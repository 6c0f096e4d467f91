//! ApiVersions (key 18): version discovery, the first request of every client. v3 is the
//! first flexible version (client software name and version, KIP-511); v4 only lets a
//! supported feature's min version be 0 (KAFKA-17011); v5 adds the cluster id and node id the
//! client believes it is talking to, so a broker that is not that node can tell the client to
//! rebootstrap (REBOOTSTRAP_REQUIRED) instead of serving it under a stale identity.

use crate::apis::SUPPORTED;
use crate::codec::{Decoder, Encoder, TaggedFields};
use crate::error::{ErrorCode, Result};

crate::apis::declared_versions!(ApiVersions);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// ApiVersions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsRequest {
    /// Client library name (v3+).
    pub client_software_name: String,
    /// Client library version (v3+).
    pub client_software_version: String,
    /// The cluster id the client expects, null when it does not know one yet (v5+).
    pub cluster_id: Option<String>,
    /// The node id the client expects, -1 when it does not know one yet (v5+).
    pub node_id: i32,
}

impl Default for ApiVersionsRequest {
    fn default() -> Self {
        ApiVersionsRequest {
            client_software_name: String::new(),
            client_software_version: String::new(),
            cluster_id: None,
            node_id: -1,
        }
    }
}

impl ApiVersionsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = Self::default();
        if flexible(version) {
            r.client_software_name = d.string(true)?;
            r.client_software_version = d.string(true)?;
            if version >= 5 {
                r.cluster_id = d.nullable_string(true)?;
                r.node_id = d.i32()?;
            }
            d.tagged_fields()?;
        }
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        if flexible(version) {
            e.put_string(&self.client_software_name, true);
            e.put_string(&self.client_software_version, true);
            if version >= 5 {
                e.put_nullable_string(self.cluster_id.as_deref(), true);
                e.put_i32(self.node_id);
            }
            e.put_empty_tagged_fields();
        }
    }

    /// Kafka's `ApiVersionsRequest.isValid`: on v5+ the cluster id and node id come
    /// together (both set or both unset), and on v3+ the client software fields are
    /// non-empty, start and end with a letter or digit, and hold only `[A-Za-z0-9.-]`
    /// (KIP-511). Invalid requests get `INVALID_REQUEST`.
    pub fn is_valid(&self, version: i16) -> bool {
        let identity_paired = version < 5 || (self.cluster_id.is_some() == (self.node_id != -1));
        identity_paired
            && (!flexible(version)
                || (valid_software_field(&self.client_software_name)
                    && valid_software_field(&self.client_software_version)))
    }
}

fn valid_software_field(s: &str) -> bool {
    let b = s.as_bytes();
    let edge_ok = |c: Option<&u8>| c.is_some_and(u8::is_ascii_alphanumeric);
    edge_ok(b.first())
        && edge_ok(b.last())
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'-')
}

/// One API's version range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApiVersion {
    /// API key.
    pub api_key: i16,
    /// Minimum supported version.
    pub min_version: i16,
    /// Maximum supported version.
    pub max_version: i16,
}

/// A supported feature (tagged, v3+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SupportedFeatureKey {
    /// Feature name.
    pub name: String,
    /// Minimum supported level.
    pub min_version: i16,
    /// Maximum supported level.
    pub max_version: i16,
}

/// A finalized feature (tagged, v3+).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FinalizedFeatureKey {
    /// Feature name.
    pub name: String,
    /// Finalized max level.
    pub max_version_level: i16,
    /// Finalized min level.
    pub min_version_level: i16,
}

/// ApiVersions response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsResponse {
    /// Top-level error.
    pub error_code: i16,
    /// Supported APIs.
    pub api_keys: Vec<ApiVersion>,
    /// Throttle time (v1+).
    pub throttle_time_ms: i32,
    /// Tag 0 (v3+).
    pub supported_features: Vec<SupportedFeatureKey>,
    /// Tag 1 (v3+), -1 if unknown.
    pub finalized_features_epoch: i64,
    /// Tag 2 (v3+).
    pub finalized_features: Vec<FinalizedFeatureKey>,
    /// Tag 3 (v3+).
    pub zk_migration_ready: bool,
}

impl Default for ApiVersionsResponse {
    fn default() -> Self {
        ApiVersionsResponse {
            error_code: 0,
            api_keys: Vec::new(),
            throttle_time_ms: 0,
            supported_features: Vec::new(),
            finalized_features_epoch: -1,
            finalized_features: Vec::new(),
            zk_migration_ready: false,
        }
    }
}

/// The [`SUPPORTED`] table as ApiVersions entries, in its order.
pub fn supported_api_versions() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|api| ApiVersion {
            api_key: api.key.as_i16(),
            min_version: api.min_version,
            max_version: api.max_version,
        })
        .collect()
}

impl ApiVersionsResponse {
    /// Successful response advertising everything Sluice implements.
    pub fn supported() -> Self {
        ApiVersionsResponse {
            api_keys: supported_api_versions(),
            ..Self::default()
        }
    }

    /// Answer to an ApiVersions request of a version we don't support: Kafka
    /// replies `UNSUPPORTED_VERSION` plus its ranges, encoded as v0 so any
    /// client can parse it and retry with a version it finds there (KIP-511).
    /// Encode it with version 0 (`request::encode_response` does so).
    pub fn unsupported_version() -> Self {
        ApiVersionsResponse {
            error_code: ErrorCode::UNSUPPORTED_VERSION.0,
            ..Self::supported()
        }
    }

    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = Self {
            error_code: d.i16()?,
            api_keys: d.array(flex, |d| decode_api_version(d, flex))?,
            ..Self::default()
        };
        if version >= 1 {
            r.throttle_time_ms = d.i32()?;
        }
        if flex {
            d.read_tagged_fields(|tag, f| r.read_tag(tag, f))?;
        }
        Ok(r)
    }

    fn read_tag(&mut self, tag: u32, f: &mut Decoder) -> Result<()> {
        match tag {
            0 => self.supported_features = f.array(true, decode_supported_feature)?,
            1 => self.finalized_features_epoch = f.i64()?,
            2 => self.finalized_features = f.array(true, decode_finalized_feature)?,
            3 => self.zk_migration_ready = f.bool()?,
            _ => {}
        }
        // Bytes after a known tag's value, inside its size, are ignored as in Kafka.
        Ok(())
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i16(self.error_code);
        e.put_array(&self.api_keys, flex, |e, k| {
            e.put_i16(k.api_key);
            e.put_i16(k.min_version);
            e.put_i16(k.max_version);
            if flex {
                e.put_empty_tagged_fields();
            }
        });
        if version >= 1 {
            e.put_i32(self.throttle_time_ms);
        }
        if flex {
            e.put_tagged_fields(self.tags());
        }
    }

    fn tags(&self) -> TaggedFields {
        let mut t = TaggedFields::new();
        if !self.supported_features.is_empty() {
            t.add(0, |e| {
                e.put_array(&self.supported_features, true, |e, f| {
                    e.put_string(&f.name, true);
                    e.put_i16(f.min_version);
                    e.put_i16(f.max_version);
                    e.put_empty_tagged_fields();
                })
            });
        }
        if self.finalized_features_epoch != -1 {
            t.add(1, |e| e.put_i64(self.finalized_features_epoch));
        }
        if !self.finalized_features.is_empty() {
            t.add(2, |e| {
                e.put_array(&self.finalized_features, true, |e, f| {
                    e.put_string(&f.name, true);
                    e.put_i16(f.max_version_level);
                    e.put_i16(f.min_version_level);
                    e.put_empty_tagged_fields();
                })
            });
        }
        if self.zk_migration_ready {
            t.add(3, |e| e.put_bool(true));
        }
        t
    }
}

fn decode_api_version(d: &mut Decoder, flex: bool) -> Result<ApiVersion> {
    let v = ApiVersion {
        api_key: d.i16()?,
        min_version: d.i16()?,
        max_version: d.i16()?,
    };
    if flex {
        d.tagged_fields()?;
    }
    Ok(v)
}

fn decode_supported_feature(d: &mut Decoder) -> Result<SupportedFeatureKey> {
    let f = SupportedFeatureKey {
        name: d.string(true)?,
        min_version: d.i16()?,
        max_version: d.i16()?,
    };
    d.tagged_fields()?;
    Ok(f)
}

fn decode_finalized_feature(d: &mut Decoder) -> Result<FinalizedFeatureKey> {
    let f = FinalizedFeatureKey {
        name: d.string(true)?,
        max_version_level: d.i16()?,
        min_version_level: d.i16()?,
    };
    d.tagged_fields()?;
    Ok(f)
}
