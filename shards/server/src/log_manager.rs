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
    glommio::spawn_local(async move {
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
                    info!(dir = %log.dir().display(), segments = stats.segments_cleaned,
                        bytes_read = stats.bytes_read, bytes_written = stats.bytes_written,
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
    })
    .detach();
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
