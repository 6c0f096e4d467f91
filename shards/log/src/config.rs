//! Per-log configuration, named after Kafka's topic-level configs.

/// Kafka's `max.message.bytes` default: 1 MiB plus the log overhead.
pub const DEFAULT_MAX_MESSAGE_BYTES: u32 = 1_048_588;

/// Settings of one partition log. Field names follow Kafka's topic configs
/// (`segment.bytes`, `segment.index.bytes`, `segment.ms`, `index.interval.bytes`,
/// `flush.messages`, `flush.ms`, `max.message.bytes`, `retention.ms`,
/// `retention.bytes`).
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
    /// Kafka's `segment.index.bytes`: roll when the segment's `.index` (8-byte
    /// entries) or `.timeindex` (12-byte entries) would outgrow this.
    pub segment_index_bytes: u32,
    /// Kafka's `segment.ms`: roll when the incoming batch's timestamp is this
    /// much newer than the active segment's first batch (or, without
    /// timestamps, when the segment is this old). Non-positive: never.
    pub segment_ms: i64,
    /// Kafka's `retention.ms`: closed segments whose newest timestamp is
    /// older than this are deleted by `Log::run_retention`. -1: no limit.
    pub retention_ms: i64,
    /// Kafka's `retention.bytes`: oldest closed segments are deleted while
    /// the log stays at least this big without them. -1: no limit.
    pub retention_bytes: i64,
    /// Kafka's `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// Kafka's `message.timestamp.before.max.ms`: with CreateTime, a batch
    /// whose timestamps lie further before the broker's time is refused.
    pub timestamp_before_max_ms: i64,
    /// Kafka's `message.timestamp.after.max.ms`: with CreateTime, a batch
    /// whose timestamps lie further after the broker's time is refused. The
    /// default here is no bound (tests append with made-up timestamps); the
    /// broker passes Kafka's default of one hour.
    pub timestamp_after_max_ms: i64,
    /// Kafka's `cleanup.policy` contains `compact`: the log cleaner keeps the latest record
    /// per key of the closed segments below the first uncleanable offset.
    pub cleanup_policy_compact: bool,
    /// Kafka's `cleanup.policy` contains `delete`: `retention_ms` / `retention_bytes` apply.
    /// A `compact`-only log is never shortened by time or size.
    pub cleanup_policy_delete: bool,
    /// Kafka's `min.cleanable.dirty.ratio` in millionths (0.5 = 500_000): a log is cleaned
    /// once its dirty bytes reach this share of its cleanable bytes. Millionths keep the
    /// config `Eq`.
    pub min_cleanable_dirty_ratio_ppm: u32,
    /// Kafka's `min.compaction.lag.ms`: a segment whose largest timestamp is newer than this
    /// is not cleaned (nor anything after it).
    pub min_compaction_lag_ms: i64,
    /// Kafka's `max.compaction.lag.ms`: a log whose first dirty batch is older than this is
    /// cleaned whatever its dirty ratio.
    pub max_compaction_lag_ms: i64,
    /// Kafka's `delete.retention.ms`: a tombstone survives this long after the clean that
    /// first kept it (its batch's delete horizon).
    pub delete_retention_ms: i64,
}

/// Kafka's `message.timestamp.type`: whose clock the stored timestamps are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    /// The producer's record timestamps are kept (Kafka's default).
    #[default]
    CreateTime,
    /// Every batch is stamped with the broker's time when it is appended:
    /// its `maxTimestamp` becomes that time and its timestamp-type attribute
    /// is set, which makes every record in it read with that time.
    LogAppendTime,
}

impl TimestampType {
    /// From Kafka's config value (`CreateTime` / `LogAppendTime`).
    pub fn from_config(value: &str) -> Option<TimestampType> {
        match value {
            "CreateTime" => Some(TimestampType::CreateTime),
            "LogAppendTime" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }
}

/// Kafka's `segment.index.bytes` default: 10 MiB.
pub const DEFAULT_SEGMENT_INDEX_BYTES: u32 = 10 << 20;
/// Kafka's `delete.retention.ms` default: one day.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// Seven days, Kafka's default for `segment.ms` and `retention.ms`.
pub const SEVEN_DAYS_MS: i64 = 7 * 24 * 60 * 60 * 1000;

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            index_interval_bytes: 4096,
            flush_messages: None,
            flush_ms: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            tail_cache_bytes: 4 << 20,
            segment_index_bytes: DEFAULT_SEGMENT_INDEX_BYTES,
            segment_ms: SEVEN_DAYS_MS,
            retention_ms: SEVEN_DAYS_MS,
            retention_bytes: -1,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            cleanup_policy_compact: false,
            cleanup_policy_delete: true,
            min_cleanable_dirty_ratio_ppm: 500_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
        }
    }
}

impl LogConfig {
    /// `segment_bytes` as used: at least one byte, at most `i32::MAX`.
    pub(crate) fn effective_segment_bytes(&self) -> u64 {
        self.segment_bytes.clamp(1, i32::MAX as u64)
    }

    /// Entries an `.index` may hold (at least one).
    pub(crate) fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes as usize / crate::index::OFFSET_ENTRY_BYTES).max(1)
    }

    /// Entries a `.timeindex` may hold (at least one).
    pub(crate) fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes as usize / crate::index::TIME_ENTRY_BYTES).max(1)
    }
}
