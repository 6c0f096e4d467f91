//! The receiving side of the mesh on a data shard: every message from another executor is
//! checked for its target and run here as its own task, so that a long wait (a fetch long poll)
//! never holds up the channel behind it.

use std::rc::Rc;

use glommio::channels::channel_mesh::Receivers;
use sluice_shard::{Envelope, ShardMessage};
use tracing::error;

use crate::context::ShardContext;
use crate::{connection, local};

/// Spawns one receiving task per peer; they run until the peer closes its side.
pub fn spawn_pumps(ctx: Rc<ShardContext>, mut receivers: Receivers<Envelope>) {
    for (_, receiver) in receivers.streams() {
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            while let Some(envelope) = receiver.recv().await {
                if envelope.target != ctx.shard_id {
                    error!(target = %envelope.target, origin = %envelope.origin, kind = envelope.message.kind(), "misrouted shard message dropped");
                    continue;
                }
                let ctx = ctx.clone();
                glommio::spawn_local(async move { handle(&ctx, envelope.message).await }).detach();
            }
        })
        .detach();
    }
}

async fn handle(ctx: &Rc<ShardContext>, message: ShardMessage) {
    // Another shard may start serving before this one has opened its partitions: hold its
    // work until the first image is applied here, instead of answering "unknown partition".
    // A scrape is answered at once, with whatever is open (nothing before the first image).
    if !matches!(
        message,
        ShardMessage::ApplyMetadata { .. } | ShardMessage::Stats { .. }
    ) {
        ctx.metadata_ready.wait().await;
    }
    match message {
        ShardMessage::Produce(work) => {
            let results = local::produce(ctx, work.partitions).await;
            let _ = work.reply.send(results);
        }
        ShardMessage::Fetch(work) => {
            let results = local::fetch(ctx, work.partitions).await;
            let _ = work.reply.send(results);
        }
        ShardMessage::WaitForAppend(mut work) => {
            let cancelled = work.reply.cancellation();
            futures_lite::future::or(
                local::wait_for_append(ctx, &work.partitions, work.deadline),
                cancelled,
            )
            .await;
            let _ = work.reply.send(());
        }
        ShardMessage::ListOffsets(work) => {
            let results = local::list_offsets(ctx, work.partitions).await;
            let _ = work.reply.send(results);
        }
        ShardMessage::DeleteRecords(work) => {
            let results = local::delete_records(ctx, work.partitions).await;
            let _ = work.reply.send(results);
        }
        ShardMessage::DescribeLogDirs(work) => {
            let _ = work
                .reply
                .send(local::describe_log_dirs(ctx, &work.partitions));
        }
        ShardMessage::DescribeProducers(work) => {
            let _ = work
                .reply
                .send(local::describe_producers(ctx, &work.partitions));
        }
        ShardMessage::Group(work) => {
            let response = ctx.groups.handle(ctx, work.request).await;
            let _ = work.reply.send(response);
        }
        ShardMessage::AdoptConnection(handoff) => connection::adopt(ctx, handoff),
        ShardMessage::ApplyMetadata { image, reply } => {
            local::apply_metadata(ctx, image).await;
            let _ = reply.send(());
        }
        ShardMessage::Stats { reply } => {
            let _ = reply.send(crate::metrics::shard_stats(ctx).await);
        }
        ShardMessage::CreateTopics(_)
        | ShardMessage::DeleteTopics(_)
        | ShardMessage::CreatePartitions(_)
        | ShardMessage::AllocateProducerIds(_)
        | ShardMessage::AlterConfigs(_)
        | ShardMessage::DescribeQuorum(_)
        | ShardMessage::UpdateFeatures(_) => {
            error!(
                kind = message.kind(),
                "controller message sent to a data shard; dropped"
            );
        }
    }
}
