//! InitProducerId (key 22) for idempotent producers: a producer id never handed out before
//! (from this shard's block of ids, see `producer_ids.rs`) with epoch 0, or, when the producer
//! passes its current id and epoch (v3+, KIP-360, after an unresolved sequence error), the same
//! id with the next epoch — a new id when the epoch is exhausted.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::init_producer_id::{
    self as msg, InitProducerIdRequest, InitProducerIdResponse,
};
use tracing::warn;

use crate::context::ShardContext;

super::served_versions!(msg);

/// Kafka's `NO_PRODUCER_ID` / `NO_PRODUCER_EPOCH`.
const NO_PRODUCER_ID: i64 = -1;
const NO_PRODUCER_EPOCH: i16 = -1;

/// Answers InitProducerId.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let error = |code: ErrorCode| InitProducerIdResponse {
        error_code: code.0,
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        ..InitProducerIdResponse::default()
    };
    if request.transactional_id.is_some() {
        // Transactions are not implemented (no transaction coordinator). Kafka answers a
        // transactional InitProducerId with COORDINATOR_NOT_AVAILABLE while it has no
        // coordinator for the id (e.g. the transaction state topic cannot be created): the
        // client retries and eventually times out, rather than failing on a fatal error.
        return error(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    // Kafka: an id without an epoch or an epoch without an id is malformed.
    if (request.producer_id == NO_PRODUCER_ID) != (request.producer_epoch == NO_PRODUCER_EPOCH) {
        return error(ErrorCode::INVALID_REQUEST);
    }
    // KIP-360 epoch bump: keep the id, next epoch. (Kafka's broker gives an idempotent
    // producer a fresh id here instead; keeping the id and bumping the epoch also fences the
    // old epoch on every partition, and the producer restarts its sequences at 0 either way.)
    if request.producer_id >= 0
        && request.producer_epoch >= 0
        && !epoch_exhausted(request.producer_epoch)
    {
        return InitProducerIdResponse {
            producer_id: request.producer_id,
            producer_epoch: request.producer_epoch + 1,
            ..InitProducerIdResponse::default()
        };
    }
    match ctx.producer_ids.next_id(ctx).await {
        Ok(producer_id) => InitProducerIdResponse {
            producer_id,
            producer_epoch: 0,
            ..InitProducerIdResponse::default()
        },
        Err(e) => {
            warn!(error = %e, "cannot allocate a producer id");
            // Retriable: the client asks again.
            error(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

/// Kafka's `ProducerIdAndEpoch.isEpochExhausted`: the epoch cannot be bumped once more (the
/// last value is kept for the bump that fences).
fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_exhaust_below_i16_max() {
        assert!(!epoch_exhausted(0));
        assert!(!epoch_exhausted(i16::MAX - 2));
        assert!(epoch_exhausted(i16::MAX - 1));
        assert!(epoch_exhausted(i16::MAX));
    }
}
