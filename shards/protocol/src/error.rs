//! Decode errors and Kafka's numeric error codes.

use thiserror::Error;

/// Why a frame, header or message body could not be decoded.
///
/// Every variant is a property of the input: the decoder never panics, so a
/// hostile client can at worst make the broker answer `INVALID_REQUEST` or close
/// the connection.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The input ended before a field was complete.
    #[error("truncated input: needed {needed} bytes, {remaining} remaining")]
    Truncated {
        /// Bytes the field needed.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A length prefix was negative where null is not allowed, or larger than the input.
    #[error("invalid length {0}")]
    InvalidLength(i64),
    /// A varint's fifth (varlong: tenth) byte still had its continuation bit set.
    #[error("malformed varint")]
    InvalidVarint,
    /// The API key is known but the version is outside the implemented range.
    #[error("unsupported version {api_version} for api key {api_key}")]
    UnsupportedVersion {
        /// Request API key.
        api_key: i16,
        /// Request API version.
        api_version: i16,
    },
    /// The API key is not one Kafka defines.
    #[error("unknown api key {0}")]
    UnknownApiKey(i16),
    /// A frame size prefix was negative or above `socket.request.max.bytes`.
    #[error("frame size {size} outside 0..={max}")]
    FrameTooLarge {
        /// Size read from the prefix.
        size: i64,
        /// Configured maximum.
        max: usize,
    },
    /// A message body was followed by bytes it does not account for.
    #[error("trailing bytes after message")]
    TrailingBytes,
    /// A field held a value the protocol forbids (e.g. a null non-nullable array).
    #[error("invalid value for {0}")]
    InvalidValue(&'static str),
}

/// Result alias used by the codec.
pub type Result<T> = std::result::Result<T, ProtocolError>;

/// A Kafka error code as carried in response `error_code` fields.
///
/// Message structs keep `error_code: i16` exactly as the schemas type it; use
/// `ErrorCode::X.0` (or `i16::from`) to fill them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub i16);

macro_rules! error_codes {
    ($($name:ident = $code:expr),* $(,)?) => {
        impl ErrorCode {
            $(
                #[doc = concat!("Kafka `", stringify!($name), "` (", stringify!($code), ").")]
                pub const $name: ErrorCode = ErrorCode($code);
            )*

            /// Kafka's name for this code, if it is one we define.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    UNKNOWN_SERVER_ERROR = -1,
    NONE = 0,
    OFFSET_OUT_OF_RANGE = 1,
    CORRUPT_MESSAGE = 2,
    UNKNOWN_TOPIC_OR_PARTITION = 3,
    INVALID_FETCH_SIZE = 4,
    LEADER_NOT_AVAILABLE = 5,
    NOT_LEADER_OR_FOLLOWER = 6,
    REQUEST_TIMED_OUT = 7,
    BROKER_NOT_AVAILABLE = 8,
    REPLICA_NOT_AVAILABLE = 9,
    MESSAGE_TOO_LARGE = 10,
    OFFSET_METADATA_TOO_LARGE = 12,
    NETWORK_EXCEPTION = 13,
    COORDINATOR_LOAD_IN_PROGRESS = 14,
    COORDINATOR_NOT_AVAILABLE = 15,
    NOT_COORDINATOR = 16,
    INVALID_TOPIC_EXCEPTION = 17,
    RECORD_LIST_TOO_LARGE = 18,
    NOT_ENOUGH_REPLICAS = 19,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
    INVALID_REQUIRED_ACKS = 21,
    ILLEGAL_GENERATION = 22,
    INCONSISTENT_GROUP_PROTOCOL = 23,
    INVALID_GROUP_ID = 24,
    UNKNOWN_MEMBER_ID = 25,
    INVALID_SESSION_TIMEOUT = 26,
    REBALANCE_IN_PROGRESS = 27,
    INVALID_COMMIT_OFFSET_SIZE = 28,
    TOPIC_AUTHORIZATION_FAILED = 29,
    GROUP_AUTHORIZATION_FAILED = 30,
    CLUSTER_AUTHORIZATION_FAILED = 31,
    INVALID_TIMESTAMP = 32,
    UNSUPPORTED_SASL_MECHANISM = 33,
    UNSUPPORTED_VERSION = 35,
    TOPIC_ALREADY_EXISTS = 36,
    INVALID_PARTITIONS = 37,
    INVALID_REPLICATION_FACTOR = 38,
    INVALID_REPLICA_ASSIGNMENT = 39,
    INVALID_CONFIG = 40,
    NOT_CONTROLLER = 41,
    INVALID_REQUEST = 42,
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43,
    POLICY_VIOLATION = 44,
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
    DUPLICATE_SEQUENCE_NUMBER = 46,
    INVALID_PRODUCER_EPOCH = 47,
    INVALID_TXN_STATE = 48,
    INVALID_PRODUCER_ID_MAPPING = 49,
    INVALID_TRANSACTION_TIMEOUT = 50,
    CONCURRENT_TRANSACTIONS = 51,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
    KAFKA_STORAGE_ERROR = 56,
    UNKNOWN_PRODUCER_ID = 59,
    NON_EMPTY_GROUP = 68,
    GROUP_ID_NOT_FOUND = 69,
    FETCH_SESSION_ID_NOT_FOUND = 70,
    INVALID_FETCH_SESSION_EPOCH = 71,
    TOPIC_DELETION_DISABLED = 73,
    FENCED_LEADER_EPOCH = 74,
    UNKNOWN_LEADER_EPOCH = 75,
    UNSUPPORTED_COMPRESSION_TYPE = 76,
    STALE_BROKER_EPOCH = 77,
    OFFSET_NOT_AVAILABLE = 78,
    MEMBER_ID_REQUIRED = 79,
    PREFERRED_LEADER_NOT_AVAILABLE = 80,
    GROUP_MAX_SIZE_REACHED = 81,
    FENCED_INSTANCE_ID = 82,
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83,
    ELECTION_NOT_NEEDED = 84,
    NO_REASSIGNMENT_IN_PROGRESS = 85,
    GROUP_SUBSCRIBED_TO_TOPIC = 86,
    INVALID_RECORD = 87,
    UNSTABLE_OFFSET_COMMIT = 88,
    THROTTLING_QUOTA_EXCEEDED = 89,
    PRODUCER_FENCED = 90,
    INVALID_UPDATE_VERSION = 95,
    UNKNOWN_TOPIC_ID = 100,
    DUPLICATE_BROKER_REGISTRATION = 101,
    INCONSISTENT_TOPIC_ID = 103,
    INCONSISTENT_CLUSTER_ID = 104,
    FETCH_SESSION_TOPIC_ID_ERROR = 106,
    INELIGIBLE_REPLICA = 107,
    OFFSET_MOVED_TO_TIERED_STORAGE = 109,
    MISMATCHED_ENDPOINT_TYPE = 114,
    UNSUPPORTED_ENDPOINT_TYPE = 115,
    REBOOTSTRAP_REQUIRED = 129,
}

impl ErrorCode {
    /// True for `NONE`.
    pub fn is_none(self) -> bool {
        self.0 == 0
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> i16 {
        code.0
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> ErrorCode {
        ErrorCode(code)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "error code {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_kafka() {
        assert_eq!(ErrorCode::UNSUPPORTED_VERSION.0, 35);
        assert_eq!(ErrorCode::UNKNOWN_TOPIC_ID.0, 100);
        assert_eq!(
            ErrorCode::NOT_LEADER_OR_FOLLOWER.name(),
            Some("NOT_LEADER_OR_FOLLOWER")
        );
        assert_eq!(ErrorCode(-1).to_string(), "UNKNOWN_SERVER_ERROR (-1)");
        assert_eq!(ErrorCode(999).name(), None);
    }
}
