//! InitProducerId (key 22) for idempotent producers: a producer id never handed out before
//! (from this shard's block of ids, see `producer_ids.rs`) with epoch 0 — also when the producer
//! passes its current id and epoch (v3+, KIP-360, after an unresolved sequence error): Kafka's
//! broker answers every non-transactional InitProducerId with a fresh id, never bumping the
//! given one, so no client can fence another's producer by naming its id.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use tracing::warn;

use crate::context::ShardContext;

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
    match ctx.producer_ids.next_id(&ctx.mesh).await {
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
