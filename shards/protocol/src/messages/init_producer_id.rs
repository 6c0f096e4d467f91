//! InitProducerId (key 22): a producer id and epoch for an idempotent (or, later,
//! transactional) producer. v3+ (KIP-360) lets an idempotent producer pass its current id and
//! epoch to have the epoch bumped instead of getting a new id.

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(InitProducerId);

fn flexible(version: i16) -> bool {
    version >= FLEXIBLE_MIN_VERSION
}

/// InitProducerId request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdRequest {
    /// The transactional id, `None` for a producer that is only idempotent.
    pub transactional_id: Option<String>,
    /// Transaction timeout (ignored without a transactional id).
    pub transaction_timeout_ms: i32,
    /// The producer's current id, or -1 (v3+).
    pub producer_id: i64,
    /// The producer's current epoch, or -1 (v3+).
    pub producer_epoch: i16,
}

impl Default for InitProducerIdRequest {
    fn default() -> Self {
        InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: 0,
            producer_id: -1,
            producer_epoch: -1,
        }
    }
}

impl InitProducerIdRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let mut r = InitProducerIdRequest {
            transactional_id: d.nullable_string(flex)?,
            transaction_timeout_ms: d.i32()?,
            ..Default::default()
        };
        if version >= 3 {
            r.producer_id = d.i64()?;
            r.producer_epoch = d.i16()?;
        }
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_nullable_string(self.transactional_id.as_deref(), flex);
        e.put_i32(self.transaction_timeout_ms);
        if version >= 3 {
            e.put_i64(self.producer_id);
            e.put_i16(self.producer_epoch);
        }
        put_end(e, flex);
    }
}

/// InitProducerId response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Error code, 0 for none.
    pub error_code: i16,
    /// The producer id, -1 on error.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
}

impl Default for InitProducerIdResponse {
    fn default() -> Self {
        InitProducerIdResponse {
            throttle_time_ms: 0,
            error_code: 0,
            producer_id: -1,
            producer_epoch: 0,
        }
    }
}

impl InitProducerIdResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let flex = flexible(version);
        let r = InitProducerIdResponse {
            throttle_time_ms: d.i32()?,
            error_code: d.i16()?,
            producer_id: d.i64()?,
            producer_epoch: d.i16()?,
        };
        read_end(d, flex)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, version: i16) {
        let flex = flexible(version);
        e.put_i32(self.throttle_time_ms);
        e.put_i16(self.error_code);
        e.put_i64(self.producer_id);
        e.put_i16(self.producer_epoch);
        put_end(e, flex);
    }
}
