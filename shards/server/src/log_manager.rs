//! Kafka's LogManager background work on one shard, each on its own timer until shutdown:
//! retention every `log.retention.check.interval.ms` (a bounded number of segments per
//! partition per tick, so a shard never stalls its requests on a long cleanup) and expiry of
//! idle producer ids.

use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_log::{CleanerConfig, LogCleaner};
use tracing::{debug, info, warn};

use crate::context::ShardContext;
use crate::shard_core::ShardCore;

/// Segments one partition may delete per tick; the rest wait for the next tick.
const SEGMENTS_PER_TICK_MAX: usize = 8;
/// Shares of the cleaner's task queue; the shard's default queue (requests, replication) has
/// glommio's default 1000. When both have runnable tasks the cleaner gets 1/6 of the thread; an
/// otherwise idle shard gives the cleaner all of it. What bounds the cleaner while the shard
/// serves requests is its own budget (`sluice_log::cleaner`'s `ShardShare`: 250 µs slices, 15 %
/// of the thread), because shares only split the time while both queues are runnable.
const CLEANER_SHARES: usize = 200;
/// The preempt timer while the cleaner's queue is active: a backstop for work between two of
/// the cleaner's own slice ends (one batch of a few MiB).
const CLEANER_PREEMPT: Duration = Duration::from_millis(2);
/// Kafka's `producer.id.expiration.check.interval.ms` default.
const PRODUCER_EXPIRY_CHECK_INTERVAL_MS: u64 = 600_000;

/// Starts the retention loop.
pub fn spawn_retention(ctx: Rc<ShardCore>) {
    let interval = Duration::from_millis(ctx.config.log_retention_check_interval_ms);
    every(
        ctx,
        interval,
        |ctx| async move { retention_tick(&ctx).await },
    );
}

/// Starts the shard's log cleaner (Kafka's `LogCleaner` thread, one per shard here) unless
/// `log.cleaner.enable` is false: each round cleans the dirtiest compacted log the shard owns;
/// with none to clean it sleeps `log.cleaner.backoff.ms`. The dedupe buffer is divided among
/// the shards.
pub fn spawn_cleaner(ctx: Rc<ShardContext>, shard_count: usize) {
    let config = &ctx.config;
    if !config.log_cleaner_enable {
        return;
    }
    let backoff = Duration::from_millis(config.log_cleaner_backoff_ms.max(1));
    let cleaner = LogCleaner::new(CleanerConfig {
        dedupe_buffer_bytes: (config.log_cleaner_dedupe_buffer_size / shard_count.max(1) as u64)
            as usize,
        io_buffer_bytes: config.log_cleaner_io_buffer_size as usize,
        io_max_bytes_per_second: config.log_cleaner_io_max_bytes_per_second,
    });
    // `Latency::Matters`: while a queue with it is active, glommio arms its preempt timer at
    // that latency whatever the shard's `sluice.shard.preempt.timer.us` (with glommio's
    // default of 100 ms there, a producer's requests waited out the cleaner's 100 ms slices:
    // measured 0.07 of its rate).
    let queue = glommio::executor().create_task_queue(
        glommio::Shares::Static(CLEANER_SHARES),
        glommio::Latency::Matters(CLEANER_PREEMPT),
        "log-cleaner",
    );
    let rounds = async move {
        loop {
            let logs: Vec<_> = ctx.replicas.partitions().iter().map(|p| p.log()).collect();
            let started = std::time::Instant::now();
            let cleaned = match cleaner.clean_filthiest(logs).await {
                Ok(Some((log, stats))) => {
                    if let Some(metrics) = &ctx.metrics {
                        metrics.log_cleaned(
                            stats.bytes_read,
                            stats.bytes_written,
                            started.elapsed(),
                        );
                    }
                    // bench/cleaner reads this line: elapsed and the map's bytes give the
                    // cleaner's MB/s and memory the way Kafka's cleaner stats give them.
                    info!(dir = %log.dir().display(), segments = stats.segments_cleaned,
                        bytes_read = stats.bytes_read, map_bytes_read = stats.map_bytes_read,
                        log_bytes = stats.log_bytes, map_log_bytes = stats.map_log_bytes,
                        bytes_written = stats.bytes_written, map_bytes = stats.map_bytes,
                        map_keys = stats.map_keys, elapsed_us = started.elapsed().as_micros() as u64,
                        end_offset = stats.end_offset, aborted = stats.aborted, "log cleaned");
                    !stats.aborted
                }
                Ok(None) => false,
                Err((log, error)) => {
                    warn!(dir = %log.dir().display(), %error, "log cleaning failed");
                    false
                }
            };
            let pause = if cleaned { Duration::ZERO } else { backoff };
            if sleep_unless_shutdown(&ctx.core, pause).await {
                return;
            }
        }
    };
    match glommio::spawn_local_into(rounds, queue) {
        Ok(task) => {
            task.detach();
        }
        Err(error) => warn!(%error, "log cleaner not started: no task queue"),
    }
}

/// Forgets idle producer ids every 10 minutes (or every `producer.id.expiration.ms` when that
/// is shorter); appends also check lazily.
pub fn spawn_producer_expiry(ctx: &Rc<ShardCore>) {
    let expiration_ms = ctx.config.producer_id_expiration_ms.max(1) as u64;
    let interval = Duration::from_millis(PRODUCER_EXPIRY_CHECK_INTERVAL_MS.min(expiration_ms));
    every(ctx.clone(), interval, |ctx| async move {
        let expired = ctx.replicas.remove_expired_producers();
        if expired > 0 {
            debug!(shard_id = %ctx.shard_id, expired, "expired idle producer ids");
        }
    });
}

/// Runs `tick` every `interval` on this shard until shutdown.
pub(crate) fn every<F, Fut>(ctx: Rc<ShardCore>, interval: Duration, tick: F)
where
    F: Fn(Rc<ShardCore>) -> Fut + 'static,
    Fut: Future<Output = ()>,
{
    glommio::spawn_local(async move {
        loop {
            if sleep_unless_shutdown(&ctx, interval).await {
                return;
            }
            tick(ctx.clone()).await;
        }
    })
    .detach();
}

/// Sleeps `pause`, or less when the shard shuts down meanwhile; true when it did.
async fn sleep_unless_shutdown(ctx: &ShardCore, pause: Duration) -> bool {
    futures_lite::future::or(
        async {
            glommio::timer::sleep(pause).await;
            false
        },
        async {
            ctx.shutdown.wait().await;
            true
        },
    )
    .await
}

async fn retention_tick(ctx: &ShardCore) {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    for partition in ctx.replicas.partitions() {
        match partition.run_retention(now_ms, SEGMENTS_PER_TICK_MAX).await {
            Ok(0) => {}
            Ok(deleted) => info!(
                topic = %partition.topic,
                partition = partition.tp.partition,
                deleted,
                log_start_offset = partition.log_start_offset(),
                "retention deleted segments"
            ),
            Err(error) => {
                warn!(topic = %partition.topic, partition = partition.tp.partition, %error, "retention failed")
            }
        }
    }
}
