//! Replication throttles (Kafka's `ReplicationQuotaManager`, KIP-73): the dynamic broker configs
//! `leader.replication.throttled.rate` / `follower.replication.throttled.rate` bound the bytes
//! this broker sends to, or fetches for, the throttled replicas, which the topic configs
//! `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas` name
//! (`partition:broker` items, or `*`). `kafka-reassign-partitions --throttle` sets them for a
//! move and `--verify` removes them once it is done.
//!
//! Kafka measures a rate over sample windows behind a lock; here each data shard keeps its own
//! token bucket per direction (`Cell`s, no lock: only the shard touches it), refilled at the
//! broker's rate divided by the number of shards (so the shards together never exceed it) and
//! holding at most one second of it. As Kafka: a replica in the ISR is never throttled; while a
//! bucket is in debt the throttled partitions get no bytes (the leader answers them empty, the
//! follower leaves them out of its next fetch); every throttled byte sent or fetched is taken
//! from the bucket.

use std::cell::Cell;
use std::time::Instant;

use sluice_shard::{
    MetadataImage, DYNAMIC_BROKER_CONFIG_DEFAULT, FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE,
};

/// Kafka's topic config naming the replicas throttled on their leader.
pub const LEADER_REPLICATION_THROTTLED_REPLICAS: &str = "leader.replication.throttled.replicas";
/// Kafka's topic config naming the replicas throttled on their follower.
pub const FOLLOWER_REPLICATION_THROTTLED_REPLICAS: &str = "follower.replication.throttled.replicas";

/// One shard's budget for one direction of throttled replication.
#[derive(Debug)]
pub struct ThrottleBucket {
    /// This shard's share of the broker's rate, bytes per second; `None`: not throttled.
    rate_bytes_per_s: Cell<Option<f64>>,
    /// Bytes that may still go; negative while in debt.
    tokens: Cell<f64>,
    refilled: Cell<Instant>,
}

impl Default for ThrottleBucket {
    fn default() -> Self {
        ThrottleBucket {
            rate_bytes_per_s: Cell::new(None),
            tokens: Cell::new(0.0),
            refilled: Cell::new(Instant::now()),
        }
    }
}

impl ThrottleBucket {
    /// Takes the broker's rate (bytes/s; Kafka's default `Long.MAX_VALUE` means none) shared
    /// by `shards` shards.
    pub fn set_rate(&self, broker_rate_bytes_per_s: i64, shards: usize) {
        let rate = (broker_rate_bytes_per_s != DYNAMIC_BROKER_CONFIG_DEFAULT)
            .then(|| broker_rate_bytes_per_s.max(0) as f64 / shards.max(1) as f64);
        if rate != self.rate_bytes_per_s.get() {
            self.rate_bytes_per_s.set(rate);
            // A new rate starts with one second of it.
            self.tokens.set(rate.unwrap_or(0.0));
            self.refilled.set(Instant::now());
        }
    }

    fn refill(&self, rate: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled.get());
        self.refilled.set(now);
        let tokens = self.tokens.get() + rate * elapsed.as_secs_f64();
        self.tokens.set(tokens.min(rate));
    }

    /// Whether the throttled replicas must wait (Kafka's `isQuotaExceeded`).
    pub fn is_exceeded(&self, now: Instant) -> bool {
        let Some(rate) = self.rate_bytes_per_s.get() else {
            return false;
        };
        self.refill(rate, now);
        self.tokens.get() <= 0.0
    }

    /// Takes `bytes` of throttled replication from the budget (Kafka's `record`).
    pub fn record(&self, bytes: usize, now: Instant) {
        let Some(rate) = self.rate_bytes_per_s.get() else {
            return;
        };
        self.refill(rate, now);
        self.tokens.set(self.tokens.get() - bytes as f64);
    }
}

/// The two buckets of a shard.
#[derive(Debug, Default)]
pub struct ReplicationThrottles {
    /// What this broker sends, as leader, to throttled followers.
    pub leader: ThrottleBucket,
    /// What this broker fetches, as follower, for throttled replicas.
    pub follower: ThrottleBucket,
}

impl ReplicationThrottles {
    /// Takes the rates `image` gives broker `node_id`, shared by `shards` shards.
    pub fn on_metadata(&self, image: &MetadataImage, node_id: i32, shards: usize) {
        let rate = |name| {
            image
                .dynamic_broker_config(node_id, name)
                .and_then(|(value, _)| value.parse::<i64>().ok())
                .unwrap_or(DYNAMIC_BROKER_CONFIG_DEFAULT)
        };
        self.leader
            .set_rate(rate(LEADER_REPLICATION_THROTTLED_RATE), shards);
        self.follower
            .set_rate(rate(FOLLOWER_REPLICATION_THROTTLED_RATE), shards);
    }
}

/// Whether a throttled-replicas list (`*`, or `partition:broker` items separated by commas)
/// names `partition` on `broker` (Kafka's `TopicConfigHandler.parseThrottledPartitions`).
pub fn is_throttled(list: &str, partition: i32, broker: i32) -> bool {
    let list = list.trim();
    if list == "*" {
        return true;
    }
    list.split(',').any(|item| {
        let mut parts = item.trim().split(':');
        matches!(
            (parts.next(), parts.next(), parts.next()),
            (Some(p), Some(b), None)
                if p.trim().parse() == Ok(partition) && b.trim().parse() == Ok(broker)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn throttled_lists_name_partitions_on_brokers_or_everything() {
        assert!(is_throttled("*", 3, 9));
        assert!(is_throttled("0:4,0:5, 1:6", 0, 5));
        assert!(is_throttled("0:4,0:5, 1:6", 1, 6));
        assert!(!is_throttled("0:4,0:5,1:6", 1, 5));
        assert!(!is_throttled("", 0, 4));
        assert!(!is_throttled("0:4:1,x:4", 0, 4));
    }

    #[test]
    fn a_bucket_allows_its_rate_and_no_more() {
        let bucket = ThrottleBucket::default();
        let t0 = Instant::now();
        // Kafka's default: no bound.
        bucket.set_rate(DYNAMIC_BROKER_CONFIG_DEFAULT, 2);
        bucket.record(1 << 30, t0);
        assert!(!bucket.is_exceeded(t0));
        // 2,000 bytes/s shared by 2 shards: 1,000 each, one second of it to start with.
        bucket.set_rate(2_000, 2);
        let t0 = bucket.refilled.get();
        assert!(!bucket.is_exceeded(t0));
        bucket.record(1_500, t0);
        assert!(bucket.is_exceeded(t0));
        // Half a second later the debt of 500 bytes is paid.
        assert!(bucket.is_exceeded(t0 + Duration::from_millis(400)));
        assert!(!bucket.is_exceeded(t0 + Duration::from_millis(600)));
        // Idle time builds up at most one second of budget.
        assert!(!bucket.is_exceeded(t0 + Duration::from_secs(60)));
        bucket.record(1_001, t0 + Duration::from_secs(60));
        assert!(bucket.is_exceeded(t0 + Duration::from_secs(60)));
    }
}
