//! What one shard's components below the request path share: its identity, configuration,
//! partitions, mesh, metadata image and lifecycle signals. The group manager, the log manager
//! and the metrics gathering take a `ShardCore` (or narrower pieces of it); `ShardContext`
//! (context.rs) holds it together with those components, so nothing here names them and the
//! module graph has no cycle.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use sluice_config::BrokerConfig;
use sluice_replica::ReplicaManager;
use sluice_shard::{LocalSignal, MetadataImage, ShardId, ShardMesh};

use crate::replication_throttle::ReplicationThrottles;

/// Per-shard state with no dependency on the shard's components.
pub struct ShardCore {
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
    /// This shard's replication throttle buckets (leader and follower side).
    pub throttles: ReplicationThrottles,
    image: RefCell<Arc<MetadataImage>>,
    /// How many images this shard has applied: a fetch session's quiet partition holds only
    /// within the image it was answered in.
    image_generation: Cell<u64>,
}

impl ShardCore {
    /// A core with an empty image (the controller publishes the first one at start).
    pub fn new(
        shard_id: ShardId,
        config: Arc<BrokerConfig>,
        replicas: ReplicaManager,
        mesh: Rc<ShardMesh>,
    ) -> ShardCore {
        ShardCore {
            shard_id,
            config,
            replicas,
            mesh,
            shutdown: LocalSignal::new(),
            metadata_ready: LocalSignal::new(),
            throttles: ReplicationThrottles::default(),
            image: RefCell::new(Arc::new(MetadataImage::default())),
            image_generation: Cell::new(0),
        }
    }

    /// The current metadata image (cheap: one `Arc` clone).
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// Replaces the image.
    pub fn set_image(&self, image: Arc<MetadataImage>) {
        *self.image.borrow_mut() = image;
        self.image_generation.set(self.image_generation.get() + 1);
    }

    /// How many images this shard has applied.
    pub fn image_generation(&self) -> u64 {
        self.image_generation.get()
    }
}
