//! Producer-id blocks, KRaft's model: the controller hands a data shard a block of ids after
//! recording the block's end in the metadata log, and the shard gives ids out of it (one per
//! InitProducerId) until it runs out and asks for the next.

use crate::message::Reply;
use crate::MetadataError;

/// Ids a shard gets per request to the controller (Kafka's `PRODUCER_ID_BLOCK_SIZE` is 1000).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// A block of producer ids: `first..first + size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerIdBlock {
    /// The first id of the block.
    pub first: i64,
    /// How many ids.
    pub size: i64,
}

impl ProducerIdBlock {
    /// One past the last id.
    pub fn end(&self) -> i64 {
        self.first + self.size
    }
}

/// Controller work: allocate a block of producer ids (durably) for the asking shard.
pub struct AllocateProducerIdsWork {
    /// The block, or why none could be allocated.
    pub reply: Reply<Result<ProducerIdBlock, MetadataError>>,
}
