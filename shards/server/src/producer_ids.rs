//! This shard's supply of producer ids: a block from the controller, given out one id per
//! InitProducerId; when it runs out, the next block is fetched (one fetch at a time).

use std::cell::Cell;

use glommio::sync::Semaphore;
use sluice_shard::{MetadataError, ShardMesh};

use crate::controller_client;

/// The ids this shard may still hand out.
pub struct ProducerIdAllocator {
    /// `next..end` of the current block.
    block: Cell<(i64, i64)>,
    /// One refill at a time: concurrent requests wait for it instead of fetching blocks too.
    refill: Semaphore,
}

impl Default for ProducerIdAllocator {
    fn default() -> Self {
        ProducerIdAllocator {
            block: Cell::new((0, 0)),
            refill: Semaphore::new(1),
        }
    }
}

impl ProducerIdAllocator {
    fn take(&self) -> Option<i64> {
        let (next, end) = self.block.get();
        (next < end).then(|| {
            self.block.set((next + 1, end));
            next
        })
    }

    /// A producer id never handed out before (by any shard, in any run).
    pub async fn next_id(&self, mesh: &ShardMesh) -> Result<i64, MetadataError> {
        if let Some(id) = self.take() {
            return Ok(id);
        }
        let _permit = self
            .refill
            .acquire_permit(1)
            .await
            .map_err(|_| MetadataError::ControllerNotAvailable)?;
        if let Some(id) = self.take() {
            return Ok(id);
        }
        let block = controller_client::allocate_producer_ids(mesh).await?;
        self.block.set((block.first, block.end()));
        self.take().ok_or(MetadataError::ControllerNotAvailable)
    }
}
