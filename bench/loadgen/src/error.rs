//! The load generator's error type.

use sluice_protocol::{ErrorCode, ProtocolError};
use thiserror::Error;

/// Everything that can stop a client thread or the run.
#[derive(Debug, Error)]
pub enum Error {
    /// Bad command line.
    #[error("usage: {0}")]
    Usage(String),
    /// Socket errors (connect, read, write, closed connection).
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A response that does not decode.
    #[error("protocol: {0}")]
    Protocol(#[from] ProtocolError),
    /// A response frame larger than we accept.
    #[error("response frame of {0} bytes is larger than the limit")]
    FrameTooLarge(usize),
    /// The response does not answer the request we sent.
    #[error("correlation id mismatch: expected {expected}, got {got}")]
    Correlation {
        /// The id we sent.
        expected: i32,
        /// The id that came back.
        got: i32,
    },
    /// The broker does not implement a version of an API we need.
    #[error("the broker does not support {api} in versions {min}..={max}")]
    Unsupported {
        /// API name.
        api: &'static str,
        /// Lowest version we can speak.
        min: i16,
        /// Highest version we can speak.
        max: i16,
    },
    /// The broker answered with an error code.
    #[error("{context}: broker error {code} ({name})")]
    Broker {
        /// What we were doing.
        context: String,
        /// Kafka error code.
        code: i16,
        /// Kafka's name for it.
        name: &'static str,
    },
    /// The broker answered with a body of another API.
    #[error("unexpected response: {0}")]
    Unexpected(String),
    /// Something did not happen in time (topic creation, metadata).
    #[error("timed out: {0}")]
    Timeout(String),
    /// A client thread panicked.
    #[error("a client thread panicked: {0}")]
    Panic(String),
}

impl Error {
    /// A broker error for `code` while doing `context`.
    pub fn broker(context: impl Into<String>, code: i16) -> Error {
        Error::Broker {
            context: context.into(),
            code,
            name: error_name(code),
        }
    }
}

/// Kafka's name for an error code ("UNKNOWN" for codes we do not know).
pub fn error_name(code: i16) -> &'static str {
    ErrorCode(code).name().unwrap_or("UNKNOWN")
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
