//! The receiving side of the mesh on a data shard: every message from another executor is
//! checked for its target and run here as its own task, so that a long wait (a fetch long poll)
//! never holds up the channel behind it.

use std::rc::Rc;

use sluice_shard::{GroupWork, Reply, ShardMessage, ShardReceivers};

use crate::context::ShardContext;
use crate::group_manager::CoordinatorCall;
use crate::{connection, local};

/// Spawns one receiving task per peer; they run until the peer closes its side.
pub fn spawn_pumps(ctx: Rc<ShardContext>, mut receivers: ShardReceivers) {
    for receiver in receivers.streams() {
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            while let Some(envelope) = receiver.recv().await {
                assert_eq!(
                    envelope.target, ctx.shard_id,
                    "misrouted message from {}",
                    envelope.origin
                );
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
        ShardMessage::Group(work) => group(ctx, work).await,
        ShardMessage::AdoptConnection(handoff) => connection::adopt(ctx, handoff),
        ShardMessage::ApplyMetadata { image, reply } => {
            local::apply_metadata(ctx, image).await;
            let _ = reply.send(());
        }
        ShardMessage::Stats { reply } => {
            let offsets = ctx.groups.committed_offsets();
            let stats = crate::metrics::shard_stats(&ctx.core, ctx.metrics.as_ref(), offsets);
            let _ = reply.send(stats.await);
        }
    }
}

/// Serves group work on this shard's coordinator; each kind answers on its own typed reply.
async fn group(ctx: &ShardContext, work: GroupWork) {
    match work {
        GroupWork::Join(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Sync(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Heartbeat(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Leave(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Commit(args, reply) => answer(ctx, args, reply).await,
        GroupWork::FetchOffsets(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Describe(args, reply) => answer(ctx, args, reply).await,
        GroupWork::List(args, reply) => answer(ctx, args, reply).await,
        GroupWork::Delete(args, reply) => answer(ctx, args, reply).await,
        GroupWork::DeleteOffsets(args, reply) => answer(ctx, args, reply).await,
    }
}

async fn answer<R: CoordinatorCall>(ctx: &ShardContext, request: R, reply: Reply<R::Response>) {
    let _ = reply.send(request.serve(&ctx.groups, &ctx.core).await);
}
