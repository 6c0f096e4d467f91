//! Everything one shard's tasks share: its identity, its partitions, its copy of the metadata
//! image, the mesh to other shards, the configuration and the shutdown signal.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::Gate;
use sluice_config::BrokerConfig;
use sluice_replica::ReplicaManager;
use sluice_shard::{LocalSignal, MetadataImage, ShardId, ShardMesh};

use crate::group_manager::GroupManager;
use crate::producer_ids::ProducerIdAllocator;

/// Per-shard state, shared by that shard's tasks as `Rc<ShardContext>`.
pub struct ShardContext {
    /// This shard.
    pub shard_id: ShardId,
    /// The broker configuration (immutable after start).
    pub config: Arc<BrokerConfig>,
    /// Partitions this shard owns.
    pub replicas: ReplicaManager,
    /// Senders to every other shard and the controller.
    pub mesh: Rc<ShardMesh>,
    /// Set once when the broker begins to shut down.
    pub shutdown: LocalSignal,
    /// Set once the first metadata image is applied (partitions open).
    pub metadata_ready: LocalSignal,
    /// This shard's block of producer ids.
    pub producer_ids: ProducerIdAllocator,
    /// The group coordinator of the `__consumer_offsets` partitions this shard owns.
    pub groups: Rc<GroupManager>,
    /// Every client connection this shard serves, accepted here or handed over by another
    /// shard; closed (and waited for) at shutdown.
    pub connections: Gate,
    /// This shard's counters, when the metrics endpoint is configured (None: nothing counted).
    pub metrics: Option<crate::metrics::ShardMetrics>,
    image: RefCell<Arc<MetadataImage>>,
}

impl ShardContext {
    /// A context with an empty image (the controller publishes the first one at start).
    pub fn new(
        shard_id: ShardId,
        config: Arc<BrokerConfig>,
        replicas: ReplicaManager,
        mesh: Rc<ShardMesh>,
    ) -> ShardContext {
        ShardContext {
            shard_id,
            config,
            replicas,
            mesh,
            shutdown: LocalSignal::new(),
            metadata_ready: LocalSignal::new(),
            producer_ids: ProducerIdAllocator::default(),
            groups: Rc::new(GroupManager::default()),
            connections: Gate::new(),
            metrics: None,
            image: RefCell::new(Arc::new(MetadataImage::default())),
        }
    }

    /// Counts into `metrics` (registered in the endpoint's registry).
    pub fn with_metrics(mut self, metrics: Option<crate::metrics::ShardMetrics>) -> ShardContext {
        self.metrics = metrics;
        self
    }

    /// The current metadata image (cheap: one `Arc` clone).
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// Replaces the image.
    pub fn set_image(&self, image: Arc<MetadataImage>) {
        *self.image.borrow_mut() = image;
    }
}
