//! Kafka's LogManager background work on one shard: every `log.retention.check.interval.ms`,
//! delete the segments that retention says must go, a bounded number per partition per tick,
//! so a shard never stalls its requests on a long cleanup.

use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing::{info, warn};

use crate::context::ShardContext;

/// Segments one partition may delete per tick; the rest wait for the next tick.
const SEGMENTS_PER_TICK_MAX: usize = 8;

/// Starts the retention loop; it ends at shutdown.
pub fn spawn_retention(ctx: Rc<ShardContext>) {
    let interval = Duration::from_millis(ctx.config.log_retention_check_interval_ms);
    glommio::spawn_local(async move {
        loop {
            let stopped = futures_lite::future::or(
                async {
                    glommio::timer::sleep(interval).await;
                    false
                },
                async {
                    ctx.shutdown.wait().await;
                    true
                },
            )
            .await;
            if stopped {
                return;
            }
            retention_tick(&ctx).await;
        }
    })
    .detach();
}

async fn retention_tick(ctx: &ShardContext) {
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
