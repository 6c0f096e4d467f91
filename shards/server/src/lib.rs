//! The Kafka listener of each shard and everything a request goes through on its way: the
//! connection, the dispatch to one handler per API key, the routing of partition work to the
//! owning shard, and the local execution of that work.
//!
//! `run_shard` is a shard's whole life: join the mesh, receive the first metadata image (which
//! opens this shard's partitions), listen, serve, and on shutdown drain connections, wait for
//! every shard to drain, then close the logs.

pub mod broker_client;
mod connection;
mod context;
pub mod controller_client;
mod dispatch;
mod error;
mod fetch_home;
pub mod fetch_session;
mod frame_buffer;
mod group_manager;
mod group_router;
pub mod handlers;
mod leadership;
mod local;
mod log_manager;
pub mod metrics;
mod producer_ids;
mod pump;
pub mod replica_fetcher;
mod replica_selector;
mod replication;
pub mod replication_throttle;
mod router;
mod shard_core;
mod socket_io;
mod util;

use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use futures_channel::oneshot;
use glommio::net::TcpListener;
use glommio::sync::Gate;
use sluice_config::BrokerConfig;
use sluice_log::{LogConfig, TimestampType};
use sluice_replica::ReplicaManager;
use sluice_shard::{MeshBuilders, ShardId};
use tracing::{error, info, warn};

pub use context::ShardContext;
pub use error::PartitionError;
pub use shard_core::ShardCore;

/// How long a shard waits for its connections to finish their requests at shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// What a shard tells the bootstrap thread.
#[derive(Debug)]
pub enum ShardEvent {
    /// Partitions open, listener bound.
    Listening(ShardId),
    /// Connections drained after a shutdown signal.
    Drained(ShardId),
    /// The node executor: this broker left the cluster (controlled shutdown: fenced, its
    /// leaderships moved, and its shards hold the image that says so), or it is no broker.
    Left(ShardId),
    /// Could not start.
    Failed(ShardId, String),
}

/// Everything a shard needs to start.
pub struct ShardStart {
    /// This shard.
    pub shard_id: ShardId,
    /// The configuration.
    pub config: Arc<BrokerConfig>,
    /// The meshes to join (data shards and the controller executor).
    pub mesh: MeshBuilders,
    /// Number of data shards.
    pub shard_count: usize,
    /// Fires when the broker must stop accepting and drain.
    pub stop: oneshot::Receiver<()>,
    /// Fires when every shard drained: close the logs and exit.
    pub finish: oneshot::Receiver<()>,
    /// Progress reports to the bootstrap thread.
    pub events: mpsc::Sender<ShardEvent>,
    /// This shard's counters in the metrics registry; None when no endpoint is configured.
    pub metrics: Option<Arc<metrics::ShardCounters>>,
}

/// The default page-cache window's most per shard. The window is what a shard's appends grow
/// into fresh memory after a start or a deleted topic before they reuse dropped pages, and on a
/// host that hands free memory back to its hypervisor that growth costs ~3.4 CPU s per GiB and
/// stalls the shard's appends: a 5.89 GiB window (a quarter of the bench host's memory) gave a
/// fixed-rate produce of 200 MB/s a p99 of 0.6-1.3 s while it grew, against 2-3 ms with 0.5-2
/// GiB (ARCHITECTURE.md, the page-cache window's rows).
const PAGE_CACHE_WINDOW_DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// This shard's page-cache window (`sluice.shard.page.cache.window.bytes`): the setting, or
/// with -1 a quarter of the host's memory split between the shards, at most
/// [`PAGE_CACHE_WINDOW_DEFAULT_MAX_BYTES`].
fn page_cache_window_bytes(config: &BrokerConfig, shard_count: usize) -> u64 {
    if let Some(bytes) = config.sluice_shard_page_cache_window_bytes {
        return bytes;
    }
    // SAFETY: sysconf only reads system values.
    let (pages, page_bytes) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let memory_bytes = (pages.max(0) as u64).saturating_mul(page_bytes.max(0) as u64);
    default_page_cache_window_bytes(memory_bytes, shard_count)
}

/// The default window of a shard on a host with `memory_bytes` and `shard_count` shards.
fn default_page_cache_window_bytes(memory_bytes: u64, shard_count: usize) -> u64 {
    (memory_bytes / 4 / shard_count.max(1) as u64).min(PAGE_CACHE_WINDOW_DEFAULT_MAX_BYTES)
}

/// The shard's log settings from the broker configuration.
pub fn log_config(config: &BrokerConfig) -> LogConfig {
    LogConfig {
        segment_bytes: config.log_segment_bytes,
        index_interval_bytes: config.log_index_interval_bytes,
        flush_messages: config.log_flush_interval_messages,
        flush_ms: config.log_flush_interval_ms,
        max_message_bytes: config.message_max_bytes,
        segment_ms: config.log_roll_ms,
        retention_ms: config.log_retention_ms,
        retention_bytes: config.log_retention_bytes,
        timestamp_type: TimestampType::from_config(&config.log_message_timestamp_type)
            .unwrap_or_default(),
        timestamp_before_max_ms: config.log_message_timestamp_before_max_ms,
        timestamp_after_max_ms: config.log_message_timestamp_after_max_ms,
        ..LogConfig::default()
    }
}

/// Runs one data shard to the end.
pub async fn run_shard(start: ShardStart) {
    let shard_id = start.shard_id;
    let events = start.events.clone();
    if let Err(message) = serve(start).await {
        error!(%shard_id, %message, "shard failed");
        let _ = events.send(ShardEvent::Failed(shard_id, message));
    }
}

async fn serve(start: ShardStart) -> Result<(), String> {
    let ShardStart {
        shard_id,
        config,
        mesh,
        shard_count,
        stop,
        finish,
        events,
        metrics,
    } = start;
    let (mesh, receivers) = mesh
        .join_shard(shard_id)
        .await
        .map_err(|error| error.to_string())?;
    let mesh = Rc::new(mesh);
    assert_eq!(
        mesh.shard_count(),
        shard_count,
        "one mesh peer per data shard"
    );
    sluice_log::page_cache::set_window_bytes(page_cache_window_bytes(&config, shard_count));
    sluice_log::page_cache::set_preallocate_bytes(config.sluice_shard_preallocate_bytes);
    let replicas = ReplicaManager::new(
        config.node_id,
        config.log_dirs.clone(),
        log_config(&config),
        config.sluice_shard_tail_cache_bytes,
    )
    .with_producer_id_expiration_ms(config.producer_id_expiration_ms);
    let ctx = Rc::new(
        ShardContext::new(ShardCore::new(
            shard_id,
            config.clone(),
            replicas,
            mesh.clone(),
        ))
        .with_metrics(metrics.map(metrics::ShardMetrics::new)),
    );
    pump::spawn_pumps(ctx.clone(), receivers);
    log_manager::spawn_retention(ctx.core.clone());
    log_manager::spawn_cleaner(ctx.clone(), shard_count);
    // Armed before the first image: a broker that never gets one (its controllers cannot be
    // reached) must still stop when told to.
    let trigger = ctx.clone();
    glommio::spawn_local(async move {
        let _ = stop.await;
        trigger.shutdown.trigger();
    })
    .detach();
    let ready = futures_lite::future::or(
        async {
            ctx.metadata_ready.wait().await;
            true
        },
        async {
            ctx.shutdown.wait().await;
            false
        },
    )
    .await;
    if ready {
        serve_clients(&ctx, &config, &events).await?;
    }
    let _ = events.send(ShardEvent::Drained(shard_id));
    let _ = finish.await;
    // No follower append may run into a closing log.
    ctx.replica_fetchers.shutdown().await;
    ctx.replicas.shutdown().await;
    mesh.close();
    info!(%shard_id, "shard stopped");
    Ok(())
}

/// From the first image on: listens, serves connections until the shutdown, drains them.
async fn serve_clients(
    ctx: &Rc<ShardContext>,
    config: &BrokerConfig,
    events: &mpsc::Sender<ShardEvent>,
) -> Result<(), String> {
    log_manager::spawn_producer_expiry(&ctx.core);
    replication::spawn_isr_expiration(ctx.core.clone());
    ctx.groups.spawn_timers(&ctx.core);
    let listener_config = config
        .listeners
        .first()
        .ok_or_else(|| "no listener configured".to_string())?;
    let addr = listener_config.socket_addr()?;
    let listener = socket_io::bind_listener(addr, &config.sluice_loopback_tcp_congestion_control)
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let _ = events.send(ShardEvent::Listening(ctx.shard_id));
    accept_until_shutdown(ctx, &listener).await;
    drop(listener);
    drain(&ctx.connections).await;
    Ok(())
}

async fn accept_until_shutdown(ctx: &Rc<ShardContext>, listener: &TcpListener) {
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            ctx.shutdown.wait().await;
            None
        })
        .await;
        match accepted {
            None => return,
            Some(Ok(stream)) => {
                let shard = ctx.mesh.next_connection_shard();
                if shard == ctx.shard_id {
                    connection::spawn(ctx, stream, connection::Origin::Accepted);
                } else {
                    connection::place(ctx, stream, shard).await;
                }
            }
            Some(Err(error)) => {
                // Out of file descriptors and similar: back off instead of spinning.
                warn!(%error, "accept failed");
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn drain(connections: &Gate) {
    let closed = futures_lite::future::or(async { connections.close().await.is_ok() }, async {
        glommio::timer::sleep(DRAIN_TIMEOUT).await;
        false
    })
    .await;
    if !closed {
        warn!("connections still open after the drain timeout; closing anyway");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default window: a quarter of memory split between the shards, never more than 1
    /// GiB a shard (growth into memory the host took back stalls appends, see the constant).
    #[test]
    fn default_page_cache_window_is_a_quarter_of_memory_per_shard_at_most_1_gib() {
        let gib = 1u64 << 30;
        assert_eq!(default_page_cache_window_bytes(2 * gib, 1), gib / 2);
        assert_eq!(default_page_cache_window_bytes(2 * gib, 2), gib / 4);
        assert_eq!(default_page_cache_window_bytes(24 * gib, 1), gib);
        assert_eq!(default_page_cache_window_bytes(24 * gib, 0), gib);
        assert_eq!(default_page_cache_window_bytes(256 * gib, 4), gib);
    }
}
