//! The run's time line, shared by every client thread.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Start, end of warm-up and end of the measured run, plus the mapping from
/// `Instant` to wall-clock microseconds (the value stamps are wall-clock so
/// that separate processes on one host can compare them).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: Instant,
    origin_unix_us: u64,
    /// Producers start (schedule slot 0).
    pub start: Instant,
    /// Warm-up ends, measurement starts.
    pub measure: Instant,
    /// Measurement ends; producers stop.
    pub end: Instant,
}

impl Clock {
    /// A time line starting `delay` from now.
    pub fn new(delay: Duration, warmup: Duration, duration: Duration) -> Clock {
        let origin = Instant::now();
        let origin_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        let start = origin + delay;
        Clock {
            origin,
            origin_unix_us,
            start,
            measure: start + warmup,
            end: start + warmup + duration,
        }
    }

    /// Wall-clock µs since the epoch at `t`.
    pub fn unix_us(&self, t: Instant) -> u64 {
        self.origin_unix_us + t.saturating_duration_since(self.origin).as_micros() as u64
    }

    /// The clock of a run that ended at `t`, before its planned end (a fill of `--records`
    /// records): its measured window ends there, so rates are over the time the run took.
    pub fn ended_at(mut self, t: Instant) -> Clock {
        if t < self.end {
            self.end = t.max(self.measure);
        }
        self
    }

    /// Seconds measured.
    pub fn measured_s(&self) -> f64 {
        self.end
            .saturating_duration_since(self.measure)
            .as_secs_f64()
    }

    /// Is `t` inside the measured window?
    pub fn in_window(&self, t: Instant) -> bool {
        t >= self.measure && t <= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_ends_early_measures_the_time_it_took() {
        let clock = Clock::new(Duration::ZERO, Duration::ZERO, Duration::from_secs(600));
        let early = clock.ended_at(clock.measure + Duration::from_secs(6));
        assert!((early.measured_s() - 6.0).abs() < 1e-9);
        // An end past the planned one, or before the measurement began, changes nothing or
        // leaves an empty window.
        let late = clock.ended_at(clock.end + Duration::from_secs(1));
        assert!((late.measured_s() - 600.0).abs() < 1e-9);
        let warm = Clock::new(
            Duration::ZERO,
            Duration::from_secs(5),
            Duration::from_secs(60),
        );
        assert_eq!(warm.ended_at(warm.start).measured_s(), 0.0);
    }
}
