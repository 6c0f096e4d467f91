//! Kafka wire protocol for Sluice.
//!
//! Layout:
//! - [`frame`]: 4-byte size prefixes, validated against `socket.request.max.bytes`.
//! - [`codec`]: [`Decoder`] / [`Encoder`] for Kafka's primitive types (classic and
//!   compact/flexible encodings, tagged fields), and [`Uuid`].
//! - [`header`]: request header v1/v2 and response header v0/v1.
//! - [`api_key`]: every Kafka API key; which versions are served and flexible.
//! - [`apis`]: the one declaration of the served APIs (key, versions, first
//!   flexible version, message types), from which [`SUPPORTED`] (advertised in
//!   ApiVersions), the version checks and [`RequestBody`] / [`ResponseBody`] follow.
//! - [`messages`]: one module per implemented API (`XRequest` / `XResponse`,
//!   both encode and decode for every supported version).
//! - [`request`]: whole-frame [`decode_request`] / [`encode_response`].
//! - [`record_batch`]: zero-copy v2 record batch views, validation, in-place
//!   broker mutations and a small batch builder.
//! - [`error`]: [`ProtocolError`] and Kafka's numeric [`ErrorCode`]s.
//! - [`file_region`]: record data sent from a segment file ([`FileRegion`]), and the
//!   [`Segment`]s a vectored encoder produces.
//!
//! Decoding treats every input as hostile: it never panics, never indexes past
//! the input, and never reserves memory the input cannot back. Byte and record
//! fields are `Bytes` slices sharing the request frame's allocation.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api_key;
pub mod apis;
pub mod codec;
pub mod crc;
pub mod error;
pub mod file_region;
pub mod frame;
#[doc(hidden)]
pub mod golden;
pub mod header;
pub mod memory_records;
pub mod messages;
pub mod record_batch;
pub mod request;
pub mod uuid;

pub use api_key::{is_flexible, ApiKey};
pub use apis::{ServedApi, SUPPORTED};
pub use codec::{Decoder, Encoder, TaggedFields};
pub use error::{ErrorCode, ProtocolError};
pub use file_region::{FileRegion, Segment};
pub use header::{request_header_version, response_header_version, RequestHeader, ResponseHeader};
pub use memory_records::{frame_bytes_held, FrameHold, MemoryRecords};
pub use record_batch::{
    parse_header, validate_batch, Compression, RecordBatchBuilder, RecordBatchError,
    RecordBatchHeader, RecordBatches, RECORD_BATCH_OVERHEAD,
};
pub use request::{
    decode_request, decode_request_owned, decode_response, encode_request, encode_request_vectored,
    encode_response, encode_response_vectored, RequestBody, RequestDecodeError, ResponseBody,
};
pub use uuid::Uuid;
