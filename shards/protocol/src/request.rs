//! Whole-frame entry points: decode a request frame into header + typed body,
//! encode a typed response into a size-prefixed frame (and the reverse pair,
//! for tests and the load generator).

use bytes::{Bytes, BytesMut};

use crate::file_region::Segment;
use thiserror::Error;

use crate::api_key::ApiKey;
use crate::codec::{Decoder, Encoder};
use crate::error::{ProtocolError, Result};
use crate::header::{response_header_version, RequestHeader, ResponseHeader};
use crate::messages::api_versions;

pub use crate::apis::{RequestBody, ResponseBody};

/// A request frame that could not be decoded. `header` is kept whenever it was
/// parsed, so the broker can still answer with the right correlation id. Kafka
/// itself answers only a too-new ApiVersions (with a v0 `UNSUPPORTED_VERSION`
/// response listing its ranges) and closes the connection for anything else
/// it cannot parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{error}")]
pub struct RequestDecodeError {
    /// The header, if it parsed.
    pub header: Option<RequestHeader>,
    /// What went wrong.
    pub error: ProtocolError,
}

/// Decodes a request frame (without its size prefix). Bytes after the fields
/// of the body's version are ignored, as Kafka's own parsers ignore them
/// (librdkafka 2.16 sends some after Metadata v13's body); every field is
/// still bounded by the frame.
pub fn decode_request(
    frame: Bytes,
) -> std::result::Result<(RequestHeader, RequestBody), RequestDecodeError> {
    decode_request_with(Decoder::new(frame))
}

/// [`decode_request`] of a frame the caller owns: a Produce request's records come out as
/// writable pieces of it ([`crate::MemoryRecords::Owned`]), for the log to patch and write
/// without copying them; every other request is decoded from the frame shared, as
/// [`decode_request`] does (no copy either way).
pub fn decode_request_owned(
    frame: BytesMut,
) -> std::result::Result<(RequestHeader, RequestBody), RequestDecodeError> {
    let produce = frame
        .get(..2)
        .is_some_and(|k| i16::from_be_bytes([k[0], k[1]]) == ApiKey::Produce as i16);
    if produce {
        decode_request_with(Decoder::owned(frame))
    } else {
        decode_request(frame.freeze())
    }
}

fn decode_request_with(
    mut d: Decoder,
) -> std::result::Result<(RequestHeader, RequestBody), RequestDecodeError> {
    let header = RequestHeader::decode(&mut d).map_err(|error| RequestDecodeError {
        header: None,
        error,
    })?;
    match decode_body(&mut d, &header) {
        Ok(body) => Ok((header, body)),
        Err(error) => Err(RequestDecodeError {
            header: Some(header),
            error,
        }),
    }
}

fn decode_body(d: &mut Decoder, header: &RequestHeader) -> Result<RequestBody> {
    let key =
        ApiKey::from_i16(header.api_key).ok_or(ProtocolError::UnknownApiKey(header.api_key))?;
    if !key.supports(header.api_version) {
        return Err(ProtocolError::UnsupportedVersion {
            api_key: header.api_key,
            api_version: header.api_version,
        });
    }
    RequestBody::decode(d, key, header.api_version)
}

/// Encodes a full request frame: size prefix, header, body.
pub fn encode_request(header: &RequestHeader, body: &RequestBody) -> BytesMut {
    framed(|e| {
        header.encode(e);
        body.encode(e, header.api_version);
    })
}

/// Encodes a full response frame: size prefix, response header, body. The
/// header version follows the request's API and version. An ApiVersions
/// response to a version we don't implement is written as v0 (KIP-511), so
/// pass [`ApiVersionsResponse::unsupported_version`] with the client's version.
pub fn encode_response(
    correlation_id: i32,
    api_key: i16,
    api_version: i16,
    body: &ResponseBody,
) -> BytesMut {
    let version = response_version(api_key, api_version);
    framed(|e| {
        ResponseHeader { correlation_id }.encode(e, response_header_version(api_key, version));
        body.encode(e, version);
    })
}

/// Like [`encode_response`], but returns the frame as segments for vectored
/// writes: record data in the body (Fetch) is not copied but kept as the
/// `Bytes` it was given (e.g. a slice of a log segment).
pub fn encode_response_vectored(
    correlation_id: i32,
    api_key: i16,
    api_version: i16,
    body: &ResponseBody,
) -> Vec<Segment> {
    let version = response_version(api_key, api_version);
    framed_vectored(|e| {
        ResponseHeader { correlation_id }.encode(e, response_header_version(api_key, version));
        body.encode(e, version);
    })
}

/// Like [`encode_request`], but keeps Produce record data as zero-copy segments.
pub fn encode_request_vectored(header: &RequestHeader, body: &RequestBody) -> Vec<Segment> {
    framed_vectored(|e| {
        header.encode(e);
        body.encode(e, header.api_version);
    })
}

/// ApiVersions answers to unsupported versions are written as v0 (KIP-511).
fn response_version(api_key: i16, api_version: i16) -> i16 {
    if api_key == api_versions::API_KEY && !ApiKey::ApiVersions.supports(api_version) {
        0
    } else {
        api_version
    }
}

/// Decodes a response frame (without its size prefix) for a request of
/// `api_key`/`api_version`.
pub fn decode_response(
    frame: Bytes,
    api_key: i16,
    api_version: i16,
) -> Result<(ResponseHeader, ResponseBody)> {
    let key = ApiKey::from_i16(api_key).ok_or(ProtocolError::UnknownApiKey(api_key))?;
    let mut d = Decoder::new(frame);
    let header = ResponseHeader::decode(&mut d, response_header_version(api_key, api_version))?;
    let body = ResponseBody::decode(&mut d, key, api_version)?;
    d.finish()?;
    Ok((header, body))
}

fn framed(f: impl FnOnce(&mut Encoder)) -> BytesMut {
    let mut e = Encoder::with_capacity(256);
    e.put_i32(0);
    f(&mut e);
    let size = i32::try_from(e.len() - 4).unwrap_or(i32::MAX);
    e.patch_i32(0, size);
    e.into_inner()
}

fn framed_vectored(f: impl FnOnce(&mut Encoder)) -> Vec<Segment> {
    let mut e = Encoder::vectored();
    f(&mut e);
    let size = i32::try_from(e.len()).unwrap_or(i32::MAX);
    let mut segments = vec![Segment::Bytes(Bytes::copy_from_slice(&size.to_be_bytes()))];
    segments.extend(e.into_segments());
    segments
}
