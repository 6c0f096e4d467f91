//! Everything one shard's request path shares: the `ShardCore` (identity, partitions, image,
//! mesh, configuration, signals) and the components built on it — the group coordinator, the
//! producer id block, the connection gate, the replica fetchers and the counters. The components never name
//! `ShardContext`: they take the core or narrower pieces, so the dependency runs one way,
//! from the request path (connection, dispatch, handlers, router, local, pump) through this
//! context down to the components and the core.

use std::cell::RefCell;
use std::ops::Deref;
use std::rc::Rc;

use glommio::sync::Gate;

use crate::fetch_session::FetchSessionCache;
use crate::group_manager::GroupManager;
use crate::metrics::ShardMetrics;
use crate::producer_ids::ProducerIdAllocator;
use crate::replica_fetcher::ReplicaFetcherManager;
use crate::shard_core::ShardCore;

/// Per-shard state, shared by that shard's tasks as `Rc<ShardContext>`. Reads through to its
/// `ShardCore` (`ctx.replicas`, `ctx.image()`, …).
pub struct ShardContext {
    /// Identity, partitions, image, mesh, configuration and signals.
    pub core: Rc<ShardCore>,
    /// This shard's block of producer ids.
    pub producer_ids: ProducerIdAllocator,
    /// The group coordinator of the `__consumer_offsets` partitions this shard owns.
    pub groups: Rc<GroupManager>,
    /// Every client connection this shard serves, accepted here or handed over by another
    /// shard; closed (and waited for) at shutdown.
    pub connections: Gate,
    /// This shard's counters, when the metrics endpoint is configured (None: nothing counted).
    pub metrics: Option<ShardMetrics>,
    /// The fetchers of the partitions this shard hosts as a follower, one per leader broker.
    pub replica_fetchers: ReplicaFetcherManager,
    /// The fetch sessions (KIP-227) of the fetches this shard's connections sent.
    pub fetch_sessions: RefCell<FetchSessionCache>,
}

impl ShardContext {
    /// A context over `core`, with no groups loaded and no producer ids yet.
    pub fn new(core: ShardCore) -> ShardContext {
        let replica_fetchers = ReplicaFetcherManager::new(&core.config, core.shard_id);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ ((core.shard_id.0 as u64) << 48);
        let fetch_sessions = RefCell::new(FetchSessionCache::new(
            core.shard_id.0 as usize,
            core.mesh.shard_count(),
            core.config.max_incremental_fetch_session_cache_slots,
            core.config.sluice_min_incremental_fetch_session_eviction_ms,
            seed,
        ));
        ShardContext {
            fetch_sessions,
            replica_fetchers,
            core: Rc::new(core),
            producer_ids: ProducerIdAllocator::default(),
            groups: Rc::new(GroupManager::default()),
            connections: Gate::new(),
            metrics: None,
        }
    }

    /// Counts into `metrics` (registered in the endpoint's registry).
    pub fn with_metrics(mut self, metrics: Option<ShardMetrics>) -> ShardContext {
        self.metrics = metrics;
        self
    }
}

impl Deref for ShardContext {
    type Target = ShardCore;

    fn deref(&self) -> &ShardCore {
        &self.core
    }
}
