//! UpdateFeatures (key 57): change finalized feature levels (KIP-584), forwarded to the active
//! controller. All versions are flexible; v1 replaces `allow_downgrade` with `upgrade_type` and
//! adds `validate_only` (KIP-778); v2 answers with the top-level error alone, without per-feature
//! results (KIP-1022).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

crate::apis::declared_versions!(UpdateFeatures);

/// `upgrade_type`: raise the level (or keep it).
pub const UPGRADE_TYPE_UPGRADE: i8 = 1;
/// `upgrade_type`: lower the level without losing metadata.
pub const UPGRADE_TYPE_SAFE_DOWNGRADE: i8 = 2;
/// `upgrade_type`: lower the level even if metadata is lost.
pub const UPGRADE_TYPE_UNSAFE_DOWNGRADE: i8 = 3;

/// UpdateFeatures request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateFeaturesRequest {
    /// How long to wait for the change.
    pub timeout_ms: i32,
    /// The changes.
    pub feature_updates: Vec<FeatureUpdateKey>,
    /// Only check, change nothing (v1+).
    pub validate_only: bool,
}

impl Default for UpdateFeaturesRequest {
    fn default() -> Self {
        UpdateFeaturesRequest {
            timeout_ms: 60_000,
            feature_updates: Vec::new(),
            validate_only: false,
        }
    }
}

/// One feature to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdateKey {
    /// Feature name.
    pub feature: String,
    /// The new finalized level (0 removes the feature).
    pub max_version_level: i16,
    /// v0 only: a lower level is allowed.
    pub allow_downgrade: bool,
    /// v1+: 1 upgrade, 2 safe downgrade, 3 unsafe downgrade (default 1).
    pub upgrade_type: i8,
}

impl Default for FeatureUpdateKey {
    fn default() -> Self {
        FeatureUpdateKey {
            feature: String::new(),
            max_version_level: 0,
            allow_downgrade: false,
            upgrade_type: UPGRADE_TYPE_UPGRADE,
        }
    }
}

impl FeatureUpdateKey {
    /// The upgrade type whatever the version: v0's `allow_downgrade` means a safe downgrade,
    /// as Kafka reads it.
    pub fn effective_upgrade_type(&self, version: i16) -> i8 {
        if version >= 1 {
            self.upgrade_type
        } else if self.allow_downgrade {
            UPGRADE_TYPE_SAFE_DOWNGRADE
        } else {
            UPGRADE_TYPE_UPGRADE
        }
    }
}

impl UpdateFeaturesRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = UpdateFeaturesRequest {
            timeout_ms: d.i32()?,
            ..Default::default()
        };
        r.feature_updates = d.array(true, |d| {
            let mut u = FeatureUpdateKey {
                feature: d.string(true)?,
                max_version_level: d.i16()?,
                ..Default::default()
            };
            if version == 0 {
                u.allow_downgrade = d.bool()?;
            } else {
                u.upgrade_type = d.i8()?;
            }
            d.tagged_fields()?;
            Ok(u)
        })?;
        if version >= 1 {
            r.validate_only = d.bool()?;
        }
        d.tagged_fields()?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.timeout_ms);
        e.put_array(&self.feature_updates, true, |e, u| {
            e.put_string(&u.feature, true);
            e.put_i16(u.max_version_level);
            if version == 0 {
                e.put_bool(u.allow_downgrade);
            } else {
                e.put_i8(u.upgrade_type);
            }
            e.put_empty_tagged_fields();
        });
        if version >= 1 {
            e.put_bool(self.validate_only);
        }
        e.put_empty_tagged_fields();
    }
}

/// UpdateFeatures response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpdateFeaturesResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Top-level error.
    pub error_code: i16,
    /// Top-level error message.
    pub error_message: Option<String>,
    /// One result per feature (v0-1 only).
    pub results: Vec<UpdatableFeatureResult>,
}

/// One feature's result.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpdatableFeatureResult {
    /// Feature name.
    pub feature: String,
    /// Error.
    pub error_code: i16,
    /// Error message.
    pub error_message: Option<String>,
}

impl UpdateFeaturesResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let mut r = UpdateFeaturesResponse {
            throttle_time_ms: d.i32()?,
            error_code: d.i16()?,
            error_message: d.nullable_string(true)?,
            ..Default::default()
        };
        if version <= 1 {
            r.results = d.array(true, |d| {
                let result = UpdatableFeatureResult {
                    feature: d.string(true)?,
                    error_code: d.i16()?,
                    error_message: d.nullable_string(true)?,
                };
                d.tagged_fields()?;
                Ok(result)
            })?;
        }
        d.tagged_fields()?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_i16(self.error_code);
        e.put_nullable_string(self.error_message.as_deref(), true);
        if version <= 1 {
            e.put_array(&self.results, true, |e, r| {
                e.put_string(&r.feature, true);
                e.put_i16(r.error_code);
                e.put_nullable_string(r.error_message.as_deref(), true);
                e.put_empty_tagged_fields();
            });
        }
        e.put_empty_tagged_fields();
    }
}
