//! Where the log takes the time from (time-based roll), so tests can fix it.

/// Wall-clock milliseconds since the Unix epoch, as Kafka's `Time`.
pub trait Clock {
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }
}
