//! Fan-out of partition work to the shards that own the partitions, and gathering of replies.
//! Work for this shard runs in place; work for another goes as one message per shard.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Instant;

use futures_channel::oneshot;
use sluice_replica::{
    ActiveProducer, FetchPartitionData, LogAppendInfo, OffsetAndTimestamp, PartitionLogDirInfo,
    ReplicaError, TopicIdPartition,
};
use sluice_shard::{
    DeleteRecordsWork, DescribeLogDirsWork, DescribeProducersWork, FetchPartitionRequest,
    FetchWork, ListOffsetsWork, ProducePartition, ProduceWork, Reply, ShardId, ShardMessage,
    WaitFor, WaitForAppendWork,
};
use tracing::warn;

use crate::context::ShardContext;
use crate::error::PartitionError;
use crate::local;
use crate::util::{join_all, race_any};

type Results<O> = Vec<Result<O, ReplicaError>>;

/// Appends batches, each to its owner shard. Results come back in input order.
pub async fn produce(
    ctx: &ShardContext,
    items: Vec<(ShardId, ProducePartition)>,
) -> Vec<Result<LogAppendInfo, PartitionError>> {
    fan_out(ctx, items, local::produce, |partitions, reply| {
        ShardMessage::Produce(ProduceWork { partitions, reply })
    })
    .await
}

/// Reads partitions, each on its owner shard.
pub async fn fetch(
    ctx: &ShardContext,
    items: Vec<(ShardId, FetchPartitionRequest)>,
) -> Vec<Result<FetchPartitionData, PartitionError>> {
    fan_out(ctx, items, local::fetch, |partitions, reply| {
        ShardMessage::Fetch(FetchWork { partitions, reply })
    })
    .await
}

/// Looks offsets up, each on its owner shard.
pub async fn list_offsets(
    ctx: &ShardContext,
    items: Vec<(ShardId, (TopicIdPartition, i64))>,
) -> Vec<Result<Option<OffsetAndTimestamp>, PartitionError>> {
    fan_out(ctx, items, local::list_offsets, |partitions, reply| {
        ShardMessage::ListOffsets(ListOffsetsWork { partitions, reply })
    })
    .await
}

/// Deletes records before the given offsets (DeleteRecords), each on its owner shard; the
/// results are the new log start offsets.
pub async fn delete_records(
    ctx: &ShardContext,
    items: Vec<(ShardId, (TopicIdPartition, i64))>,
) -> Vec<Result<i64, PartitionError>> {
    fan_out(ctx, items, local::delete_records, |partitions, reply| {
        ShardMessage::DeleteRecords(DeleteRecordsWork { partitions, reply })
    })
    .await
}

/// Reads partitions' log sizes and offset lags (DescribeLogDirs), each on its owner shard.
pub async fn describe_log_dirs(
    ctx: &ShardContext,
    items: Vec<(ShardId, TopicIdPartition)>,
) -> Vec<Result<PartitionLogDirInfo, PartitionError>> {
    fan_out(
        ctx,
        items,
        |ctx, partitions: Vec<TopicIdPartition>| async move {
            local::describe_log_dirs(ctx, &partitions)
        },
        |partitions, reply| {
            ShardMessage::DescribeLogDirs(DescribeLogDirsWork { partitions, reply })
        },
    )
    .await
}

/// Reads partitions' active producers (DescribeProducers), each on its owner shard.
pub async fn describe_producers(
    ctx: &ShardContext,
    items: Vec<(ShardId, TopicIdPartition)>,
) -> Vec<Result<Vec<ActiveProducer>, PartitionError>> {
    fan_out(
        ctx,
        items,
        |ctx, partitions: Vec<TopicIdPartition>| async move {
            local::describe_producers(ctx, &partitions)
        },
        |partitions, reply| {
            ShardMessage::DescribeProducers(DescribeProducersWork { partitions, reply })
        },
    )
    .await
}

/// Resolves when any of the partitions gets data past its offset, on whichever shard, or at
/// the deadline.
pub async fn wait_for_append(
    ctx: &ShardContext,
    items: Vec<(ShardId, (TopicIdPartition, WaitFor))>,
    deadline: Instant,
) {
    let mut by_shard: BTreeMap<ShardId, Vec<(TopicIdPartition, WaitFor)>> = BTreeMap::new();
    for (shard, item) in items {
        by_shard.entry(shard).or_default().push(item);
    }
    let mut waits: Vec<std::pin::Pin<Box<dyn Future<Output = ()> + '_>>> = Vec::new();
    for (shard, partitions) in by_shard {
        if shard == ctx.shard_id {
            waits.push(Box::pin(async move {
                local::wait_for_append(ctx, &partitions, deadline).await
            }));
            continue;
        }
        waits.push(Box::pin(async move {
            let (reply, done) = oneshot::channel();
            let work = WaitForAppendWork {
                partitions,
                deadline,
                reply,
            };
            if ctx
                .mesh
                .send_to_shard(shard, ShardMessage::WaitForAppend(work))
                .await
                .is_ok()
            {
                let _ = done.await;
            } else {
                // The shard is going away: don't spin, wait out the deadline.
                glommio::timer::sleep(deadline.saturating_duration_since(Instant::now())).await;
            }
        }));
    }
    if waits.is_empty() {
        glommio::timer::sleep(deadline.saturating_duration_since(Instant::now())).await;
        return;
    }
    race_any(waits).await
}

/// Groups `items` by shard, runs each group locally or remotely, and puts each result back in
/// its input position.
async fn fan_out<'c, I, O, L, LF, R>(
    ctx: &'c ShardContext,
    items: Vec<(ShardId, I)>,
    local: L,
    remote: R,
) -> Vec<Result<O, PartitionError>>
where
    L: Fn(&'c ShardContext, Vec<I>) -> LF,
    LF: Future<Output = Results<O>> + 'c,
    O: 'c,
    R: Fn(Vec<I>, Reply<Results<O>>) -> ShardMessage,
{
    if !items.is_empty() && items.iter().all(|(shard, _)| *shard == ctx.shard_id) {
        return run_in_place(ctx, items, local).await;
    }
    let count = items.len();
    let mut groups: BTreeMap<ShardId, (Vec<usize>, Vec<I>)> = BTreeMap::new();
    for (slot, (shard, item)) in items.into_iter().enumerate() {
        let group = groups.entry(shard).or_default();
        group.0.push(slot);
        group.1.push(item);
    }
    let (local, remote) = (&local, &remote);
    // One future a group, made and boxed by `join_all` as it goes.
    let runs = groups.into_iter().map(|(shard, (slots, work))| async move {
        if shard == ctx.shard_id {
            (slots, Ok(local(ctx, work).await))
        } else {
            let (reply, done) = oneshot::channel();
            let message = remote(work, reply);
            (slots, send_and_wait(ctx, shard, message, done).await)
        }
    });
    let mut out: Vec<Option<Result<O, PartitionError>>> = (0..count).map(|_| None).collect();
    for (slots, results) in join_all(runs).await {
        match results {
            Ok(results) => {
                assert_eq!(
                    slots.len(),
                    results.len(),
                    "a shard answers every partition it was sent"
                );
                for (slot, result) in slots.into_iter().zip(results) {
                    out[slot] = Some(result.map_err(PartitionError::from));
                }
            }
            Err(error) => {
                for slot in slots {
                    out[slot] = Some(Err(error.clone()));
                }
            }
        }
    }
    out.into_iter()
        .map(|r| r.expect("every slot belongs to exactly one group"))
        .collect()
}

/// [`fan_out`]'s path when this shard owns every item (always with one shard a host): the
/// work runs in place in input order, with no grouping, slot bookkeeping or boxed future.
async fn run_in_place<'c, I, O, L, LF>(
    ctx: &'c ShardContext,
    items: Vec<(ShardId, I)>,
    local: L,
) -> Vec<Result<O, PartitionError>>
where
    L: Fn(&'c ShardContext, Vec<I>) -> LF,
    LF: Future<Output = Results<O>> + 'c,
{
    let count = items.len();
    let results = local(ctx, items.into_iter().map(|(_, item)| item).collect()).await;
    assert_eq!(
        results.len(),
        count,
        "a shard answers every partition it was sent"
    );
    results
        .into_iter()
        .map(|r| r.map_err(PartitionError::from))
        .collect()
}

async fn send_and_wait<O>(
    ctx: &ShardContext,
    shard: ShardId,
    message: ShardMessage,
    done: oneshot::Receiver<Results<O>>,
) -> Result<Results<O>, PartitionError> {
    if let Err(error) = ctx.mesh.send_to_shard(shard, message).await {
        warn!(%error, "cross-shard send failed");
        return Err(PartitionError::ShardUnavailable);
    }
    done.await.map_err(|_| PartitionError::ShardUnavailable)
}
