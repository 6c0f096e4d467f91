//! Request and response headers.

use crate::api_key::{is_flexible, ApiKey};
use crate::codec::{Decoder, Encoder};
use crate::error::Result;

/// Request header v1 (`client_id` as a nullable non-compact string) or v2 (v1
/// plus tagged fields), chosen by whether the request version is flexible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    /// API key of the body.
    pub api_key: i16,
    /// API version of the body.
    pub api_version: i16,
    /// Echoed in the response.
    pub correlation_id: i32,
    /// Client-chosen id, for logs and quotas.
    pub client_id: Option<String>,
}

impl RequestHeader {
    /// Decodes the header. For an API or version we don't implement only the v1
    /// part is read: the broker still gets the correlation id to answer with.
    pub fn decode(d: &mut Decoder) -> Result<RequestHeader> {
        let api_key = d.i16()?;
        let api_version = d.i16()?;
        let correlation_id = d.i32()?;
        let client_id = decode_client_id(d)?;
        let header = RequestHeader {
            api_key,
            api_version,
            correlation_id,
            client_id,
        };
        if header.version() >= 2 && header.is_implemented() {
            d.tagged_fields()?;
        }
        Ok(header)
    }

    /// Encodes the header in the version matching the request.
    pub fn encode(&self, e: &mut Encoder) {
        e.put_i16(self.api_key);
        e.put_i16(self.api_version);
        e.put_i32(self.correlation_id);
        e.put_nullable_string(self.client_id.as_deref(), false);
        if self.version() >= 2 {
            e.put_empty_tagged_fields();
        }
    }

    /// Request header version: 2 for flexible request versions, else 1.
    pub fn version(&self) -> i16 {
        request_header_version(self.api_key, self.api_version)
    }

    fn is_implemented(&self) -> bool {
        ApiKey::from_i16(self.api_key).is_some_and(|k| k.supports(self.api_version))
    }
}

/// `client_id` bytes are not guaranteed UTF-8 by every client; Java decodes them
/// leniently, so do the same rather than reject the connection over a log label.
fn decode_client_id(d: &mut Decoder) -> Result<Option<String>> {
    let len = d.i16()?;
    if len < 0 {
        return Ok(None);
    }
    let raw = d.take_bytes(len as usize)?;
    Ok(Some(crate::codec::lossy_utf8(&raw)))
}

/// Request header version for `api_key`/`api_version`: 2 if flexible, else 1.
pub fn request_header_version(api_key: i16, api_version: i16) -> i16 {
    if is_flexible(api_key, api_version) {
        2
    } else {
        1
    }
}

/// Response header version: 1 (with tagged fields) for flexible versions, except
/// ApiVersions which always uses v0 so that a client that does not yet know the
/// broker's versions can parse the answer.
pub fn response_header_version(api_key: i16, api_version: i16) -> i16 {
    if api_key != ApiKey::ApiVersions.as_i16() && is_flexible(api_key, api_version) {
        1
    } else {
        0
    }
}

/// Response header v0 (`correlation_id`) or v1 (plus tagged fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// Copied from the request.
    pub correlation_id: i32,
}

impl ResponseHeader {
    /// Decodes a response header of `header_version`.
    pub fn decode(d: &mut Decoder, header_version: i16) -> Result<ResponseHeader> {
        let correlation_id = d.i32()?;
        if header_version >= 1 {
            d.tagged_fields()?;
        }
        Ok(ResponseHeader { correlation_id })
    }

    /// Encodes a response header of `header_version`.
    pub fn encode(&self, e: &mut Encoder, header_version: i16) {
        e.put_i32(self.correlation_id);
        if header_version >= 1 {
            e.put_empty_tagged_fields();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn unimplemented_api_header_stops_after_client_id() {
        // TxnOffsetCommit v3 would be flexible in Kafka, but we don't implement it:
        // the body (here 0xAA) must be left for the broker untouched.
        let raw = [0, 28, 0, 3, 0, 0, 0, 7, 0, 1, b'c', 0xAA];
        let mut d = Decoder::new(Bytes::copy_from_slice(&raw));
        let h = RequestHeader::decode(&mut d).unwrap();
        assert_eq!(h.correlation_id, 7);
        assert_eq!(h.client_id.as_deref(), Some("c"));
        assert_eq!(d.remaining(), 1);
    }

    #[test]
    fn header_versions() {
        assert_eq!(request_header_version(18, 3), 2);
        assert_eq!(response_header_version(18, 3), 0);
        assert_eq!(response_header_version(3, 9), 1);
        assert_eq!(response_header_version(3, 8), 0);
        assert_eq!(response_header_version(60, 0), 1);
    }
}
