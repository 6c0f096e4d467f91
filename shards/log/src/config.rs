//! Per-log configuration, named after Kafka's topic-level configs.

/// Kafka's `max.message.bytes` default: 1 MiB plus the log overhead.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 1_048_588;

/// Settings of one partition log. Field names follow Kafka's topic configs
/// (`segment.bytes`, `index.interval.bytes`, `flush.messages`, `flush.ms`,
/// `max.message.bytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// Roll to a new segment when an append would grow the active one past
    /// this. Clamped to `i32::MAX` like Kafka, so file positions fit in `u32`.
    pub segment_bytes: u64,
    /// Add a sparse index entry every this many bytes of log.
    pub index_interval_bytes: u32,
    /// fdatasync after this many messages; `None` leaves it to the OS.
    pub flush_messages: Option<u64>,
    /// fdatasync data at most this long after it was appended; `None` = never.
    pub flush_ms: Option<u64>,
    /// Largest accepted batch (whole batch, header included).
    pub max_message_bytes: u32,
    /// Bytes of the most recent appends kept in memory so that fetches of the
    /// newest data need no I/O. 0 disables the cache.
    pub tail_cache_bytes: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            index_interval_bytes: 4096,
            flush_messages: None,
            flush_ms: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            tail_cache_bytes: 4 << 20,
        }
    }
}

impl LogConfig {
    /// `segment_bytes` as used: at least one byte, at most `i32::MAX`.
    pub(crate) fn effective_segment_bytes(&self) -> u64 {
        self.segment_bytes.clamp(1, i32::MAX as u64)
    }
}
