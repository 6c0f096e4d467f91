//! Producer-id allocation, as KRaft's `ProducerIdControlManager`: the controller keeps the next
//! unassigned id (replayed from `ProducerIds` records) and hands out blocks. A block is returned
//! only after the record moving `next_producer_id` past it is fsynced in the metadata log, so an
//! id is never given twice, across restarts too (a restart may skip the unused rest of a block,
//! as Kafka does).

use sluice_shard::{ProducerIdBlock, PRODUCER_ID_BLOCK_SIZE};

use crate::records::MetadataRecord;

/// The controller's producer-id state.
#[derive(Debug, Default)]
pub struct ProducerIdControl {
    next_producer_id: i64,
}

impl ProducerIdControl {
    /// The next block and the record that claims it (append it durably before using the block).
    pub fn generate_next_block(&self) -> Option<(ProducerIdBlock, MetadataRecord)> {
        let first = self.next_producer_id;
        let end = first.checked_add(PRODUCER_ID_BLOCK_SIZE)?;
        Some((
            ProducerIdBlock {
                first,
                size: PRODUCER_ID_BLOCK_SIZE,
            },
            MetadataRecord::ProducerIds {
                next_producer_id: end,
            },
        ))
    }

    /// Replays a `ProducerIds` record. Never moves backwards.
    pub fn replay(&mut self, next_producer_id: i64) {
        self.next_producer_id = self.next_producer_id.max(next_producer_id);
    }

    /// The first id not handed out yet.
    #[cfg(test)]
    pub fn next_producer_id(&self) -> i64 {
        self.next_producer_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_on_and_replay_never_goes_back() {
        let mut control = ProducerIdControl::default();
        let (block, record) = control.generate_next_block().unwrap();
        assert_eq!(
            block,
            ProducerIdBlock {
                first: 0,
                size: PRODUCER_ID_BLOCK_SIZE
            }
        );
        let MetadataRecord::ProducerIds { next_producer_id } = record else {
            panic!()
        };
        control.replay(next_producer_id);
        let (second, _) = control.generate_next_block().unwrap();
        assert_eq!(second.first, block.end());
        control.replay(5);
        assert_eq!(control.next_producer_id(), block.end());
    }
}
