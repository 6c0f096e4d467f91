//! Work done on the shard that owns the partitions: the same functions serve requests that
//! arrive on this shard's own connections and work sent here by other shards.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_log::AppendBatches;
use sluice_protocol::messages::list_offsets::{
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP, EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
};
use sluice_protocol::{frame_bytes_held, MemoryRecords};
use sluice_replica::{
    log_config_with_overrides, ActiveProducer, ConsumerRead, FetchPartitionData,
    FollowerFetchRequest, LogAppendInfo, OffsetAndTimestamp, Partition, PartitionLogDirInfo,
    ReplicaError, TopicIdPartition,
};
use sluice_shard::{FetchPartitionRequest, MetadataImage, ProducePartition, WaitFor};
use tracing::{error, info};

use crate::context::ShardContext;
use crate::replica_selector;
use crate::replication;
use crate::replication_throttle::{is_throttled, LEADER_REPLICATION_THROTTLED_REPLICAS};
use crate::util::{join_all, race_any};

/// How many bytes of request frames the records this broker appended without copying may hold
/// (`sluice_protocol::frame_bytes_held`): as much as its tail caches may keep, plus 16 MiB for
/// the appends in flight. A frame is held whole by any piece of it, and a partition's tail
/// cache keeps its newest pieces until that partition is written again, so pieces of one frame
/// outlive each other: past this bound appends copy, as borrowed batches do, and memory stays
/// within the tail caches' bound plus this margin.
fn frame_bytes_held_max(ctx: &ShardContext) -> usize {
    const IN_FLIGHT_BYTES: usize = 16 << 20;
    ctx.config
        .sluice_shard_tail_cache_bytes
        .saturating_mul(ctx.mesh.shard_count())
        .saturating_add(IN_FLIGHT_BYTES)
}

/// Appends to each partition; partitions proceed concurrently, each in call order. acks=all
/// answers once the partition's in-sync replicas hold the records (Kafka's `DelayedProduce`).
pub async fn produce(
    ctx: &ShardContext,
    partitions: Vec<ProducePartition>,
) -> Vec<Result<LogAppendInfo, ReplicaError>> {
    let appends = partitions.into_iter().map(|p| async move {
        let partition = ctx.replicas.hosted(&p.tp)?;
        let bytes = p.records.len();
        // The records are a piece of their request frame, and the piece the tail cache keeps
        // holds the whole frame: past the budget, copy them (the frame goes once answered).
        let uncopied = frame_bytes_held() <= frame_bytes_held_max(ctx);
        let batches = match p.records {
            MemoryRecords::Owned(records, hold) if uncopied => {
                AppendBatches::Owned(records, Some(hold))
            }
            ref records => AppendBatches::Borrowed(records),
        };
        let info = partition
            .append_records_to_leader(batches, p.required_acks)
            .await?;
        if let Some(metrics) = &ctx.metrics {
            let messages = (info.last_offset - info.first_offset + 1).max(0) as u64;
            metrics.appended(&partition.topic, bytes, messages);
        }
        if p.required_acks == -1 {
            let timeout = Duration::from_millis(p.timeout_ms.max(0) as u64);
            partition
                .wait_for_replication(info.last_offset, timeout)
                .await?;
        }
        Ok(info)
    });
    join_all(appends).await
}

/// Reads from each partition: a consumer up to the high watermark, a follower up to the log
/// end (its fetch also counts towards the high watermark and the ISR). A consumer's read that
/// needs no file I/O (nothing new, or records in the tail cache) is answered in place; only
/// the others become futures. With 1,000 partitions most of a fetch's partitions are of the
/// first kind, and a boxed future each cost more than the read.
pub async fn fetch(
    ctx: &ShardContext,
    partitions: Vec<FetchPartitionRequest>,
) -> Vec<Result<FetchPartitionData, ReplicaError>> {
    let mut results: Vec<Option<Result<FetchPartitionData, ReplicaError>>> =
        Vec::with_capacity(partitions.len());
    let mut waiting = Vec::new();
    for (slot, request) in partitions.into_iter().enumerate() {
        let now = read_now(ctx, &request);
        if now.is_none() {
            waiting.push((slot, request));
        }
        results.push(now);
    }
    if !waiting.is_empty() {
        let reads = waiting
            .into_iter()
            .map(|(slot, request)| async move { (slot, fetch_one(ctx, request).await) });
        for (slot, result) in join_all(reads).await {
            results[slot] = Some(result);
        }
    }
    results
        .into_iter()
        .map(|r| r.expect("every partition is read now or by its future"))
        .collect()
}

/// A consumer's read of a partition when it needs no I/O; `None` for a follower's fetch, a
/// read that may name a preferred read replica, or one that goes to the segment files.
fn read_now(
    ctx: &ShardContext,
    request: &FetchPartitionRequest,
) -> Option<Result<FetchPartitionData, ReplicaError>> {
    if request.replica.is_some() || !request.read_replica_candidates.is_empty() {
        return None;
    }
    ctx.replicas
        .with_hosted(&request.tp, |partition| {
            partition.read_records_now(&consumer_read(request))
        })
        .unwrap_or_else(|error| Some(Err(error)))
}

fn consumer_read(request: &FetchPartitionRequest) -> ConsumerRead {
    ConsumerRead {
        fetch_offset: request.fetch_offset,
        max_bytes: request.max_bytes,
        min_one_message: request.min_one_message,
        current_leader_epoch: request.current_leader_epoch,
        fetch_only_leader: request.fetch_only_leader,
    }
}

async fn fetch_one(
    ctx: &ShardContext,
    request: FetchPartitionRequest,
) -> Result<FetchPartitionData, ReplicaError> {
    let partition = ctx.replicas.hosted(&request.tp)?;
    let Some(replica) = request.replica else {
        if !request.read_replica_candidates.is_empty() {
            if let Some(data) = preferred_read_replica(&partition, &request)? {
                return Ok(data);
            }
            // A follower may become the preferred read replica without this partition's
            // fetch stamp moving: such a read is never left out of a session's reads.
            let mut data = partition.read_records(consumer_read(&request)).await?;
            data.quiet = None;
            return Ok(data);
        }
        return partition.read_records(consumer_read(&request)).await;
    };
    let result = partition
        .fetch_for_follower(FollowerFetchRequest {
            replica_id: replica.replica_id,
            broker_epoch: replica.broker_epoch,
            fetch_offset: request.fetch_offset,
            last_fetched_epoch: replica.last_fetched_epoch,
            current_leader_epoch: request.current_leader_epoch,
            log_start_offset: replica.log_start_offset,
            max_bytes: request.max_bytes,
        })
        .await?;
    if let Some(alter) = result.alter_partition {
        replication::send_alter_partition(&ctx.core, partition.clone(), alter);
    }
    let mut records = result.records;
    if leader_throttled(ctx, &partition, replica.replica_id) {
        // Kafka's `shouldLeaderThrottle`: over the rate, a throttled replica out of the
        // ISR gets nothing this time (its fetch state was still taken above).
        let now = Instant::now();
        if ctx.core.throttles.leader.is_exceeded(now) {
            records = Default::default();
        } else {
            ctx.core.throttles.leader.record(records.len(), now);
        }
    }
    Ok(FetchPartitionData {
        records: records.into(),
        high_watermark: result.high_watermark,
        log_start_offset: result.log_start_offset,
        diverging_epoch: result.diverging_epoch,
        preferred_read_replica: None,
        quiet: None,
    })
}

/// KIP-392 on the leader: when a follower in the consumer's rack may serve it, the answer
/// names that follower and carries no records (Kafka skips the read then, and reports the
/// leader's high watermark and log start). `None`: the leader reads as usual.
fn preferred_read_replica(
    partition: &Partition,
    request: &FetchPartitionRequest,
) -> Result<Option<FetchPartitionData>, ReplicaError> {
    let views =
        partition.read_replica_views(&request.read_replica_candidates, request.fetch_offset);
    let Some(preferred) = replica_selector::most_caught_up(&views) else {
        return Ok(None);
    };
    // Kafka's `fetchOffsetSnapshot(currentLeaderEpoch)`: a fenced or unknown epoch is still
    // answered as such.
    partition.check_leader_epoch(request.current_leader_epoch)?;
    Ok(Some(FetchPartitionData {
        records: Default::default(),
        high_watermark: partition.high_watermark(),
        log_start_offset: partition.log_start_offset(),
        diverging_epoch: None,
        preferred_read_replica: Some(preferred),
        quiet: None,
    }))
}

/// Whether the leader's throttle applies to `replica_id`'s fetch of `partition`: the topic's
/// `leader.replication.throttled.replicas` names it on this broker, and the replica is not in
/// the ISR.
fn leader_throttled(ctx: &ShardContext, partition: &Partition, replica_id: i32) -> bool {
    let image = ctx.core.image();
    let Some(list) = image
        .topic_by_id(&partition.tp.topic_id)
        .and_then(|t| t.configs.get(LEADER_REPLICATION_THROTTLED_REPLICAS))
    else {
        return false;
    };
    is_throttled(list, partition.tp.partition, ctx.config.node_id)
        && !partition.is_in_sync_replica(replica_id)
}

/// Resolves when any listed partition passes what its fetch waits for, or at `deadline`.
pub async fn wait_for_append(
    ctx: &ShardContext,
    partitions: &[(TopicIdPartition, WaitFor)],
    deadline: Instant,
) {
    let mut waits: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> =
        Vec::with_capacity(partitions.len() + 1);
    for (tp, wait_for) in partitions {
        if let Some(partition) = ctx.replicas.get(tp) {
            let wait_for = *wait_for;
            waits.push(Box::pin(async move {
                match wait_for {
                    WaitFor::HighWatermarkBeyond(offset) => {
                        partition.wait_for_high_watermark(offset).await
                    }
                    WaitFor::LogEndBeyond(offset) => partition.wait_for_log_end(offset).await,
                }
            }));
        }
    }
    let timeout = deadline.saturating_duration_since(Instant::now());
    waits.push(Box::pin(glommio::timer::sleep(timeout)));
    waits.push(Box::pin(ctx.shutdown.wait()));
    race_any(waits).await
}

/// The lookup a follower's "latest" becomes: the log end offset, not the high watermark. Never
/// read from the wire (the handler refuses timestamps Kafka does not define first).
pub const LOG_END_TIMESTAMP: i64 = i64::MIN;

/// Looks offsets up.
pub async fn list_offsets(
    ctx: &ShardContext,
    partitions: Vec<(TopicIdPartition, i64)>,
) -> Vec<Result<Option<OffsetAndTimestamp>, ReplicaError>> {
    let lookups = partitions.into_iter().map(|(tp, timestamp)| async move {
        let partition = ctx.replicas.hosted(&tp)?;
        match timestamp {
            // Every log is local: its local start is its start.
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                offset: partition.log_start_offset(),
                timestamp: -1,
            })),
            LATEST_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                offset: partition.high_watermark(),
                timestamp: -1,
            })),
            LOG_END_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                offset: partition.log_end_offset(),
                timestamp: -1,
            })),
            MAX_TIMESTAMP => partition.fetch_max_timestamp_offset().await,
            // No tiered storage: nothing is uploaded, nothing waits for an upload (Kafka
            // answers -1 for a topic without remote storage too).
            LATEST_TIERED_TIMESTAMP | EARLIEST_PENDING_UPLOAD_TIMESTAMP => Ok(None),
            t => partition.fetch_offset_for_timestamp(t).await,
        }
    });
    join_all(lookups).await
}

/// Moves log start offsets up (DeleteRecords); each result is the new log start offset.
pub async fn delete_records(
    ctx: &ShardContext,
    partitions: Vec<(TopicIdPartition, i64)>,
) -> Vec<Result<i64, ReplicaError>> {
    let deletions = partitions.into_iter().map(|(tp, offset)| async move {
        let partition = ctx.replicas.hosted(&tp)?;
        partition.delete_records_before(offset).await
    });
    join_all(deletions).await
}

/// Reports each partition's log size and offset lag (DescribeLogDirs).
pub fn describe_log_dirs(
    ctx: &ShardContext,
    partitions: &[TopicIdPartition],
) -> Vec<Result<PartitionLogDirInfo, ReplicaError>> {
    partitions
        .iter()
        .map(|tp| ctx.replicas.hosted(tp)?.log_dir_info())
        .collect()
}

/// Reports each partition's active producers (DescribeProducers).
pub fn describe_producers(
    ctx: &ShardContext,
    partitions: &[TopicIdPartition],
) -> Vec<Result<Vec<ActiveProducer>, ReplicaError>> {
    partitions
        .iter()
        .map(|tp| {
            let partition = ctx.replicas.hosted(tp)?;
            Ok(partition.active_producers())
        })
        .collect()
}

/// Takes a new metadata image: opens the partitions it assigns to this shard (those with a
/// replica on this broker, whoever leads them), deletes the ones whose topic is gone or that no
/// longer have a replica here, applies altered topic configs to the logs of the others (Kafka's
/// dynamic topic configs: the next append, roll and retention check use them), then makes the
/// image visible to this shard's requests.
pub async fn apply_metadata(ctx: &ShardContext, image: Arc<MetadataImage>) {
    // The shard table holds the partitions with a replica on `image.local_node_id`. An image
    // built for another node id (a bug where the image is made) would have this shard delete
    // every log it hosts: say so, and delete nothing while it lasts.
    let built_for_this_broker = image.local_node_id == ctx.config.node_id;
    if !built_for_this_broker {
        error!(
            image_node_id = image.local_node_id,
            node_id = ctx.config.node_id,
            "metadata image built for another node id; no partition log is deleted"
        );
    }
    for tp in image.shard_table.partitions_of(ctx.shard_id) {
        if ctx.replicas.get(&tp).is_some() {
            continue;
        }
        let Some(topic) = image.topic_by_id(&tp.topic_id) else {
            continue;
        };
        if let Err(error) = ctx
            .replicas
            .open_partition(tp, &topic.name, &topic.configs)
            .await
        {
            error!(topic = %topic.name, partition = tp.partition, %error, "cannot open partition log");
        }
    }
    for partition in ctx.replicas.partitions() {
        if image.shard_table.shard_of(&partition.tp) != Some(ctx.shard_id) {
            if !built_for_this_broker {
                continue;
            }
            info!(topic = %partition.topic, partition = partition.tp.partition, "partition no longer hosted here");
            if let Err(error) = ctx.replicas.delete_partition(&partition.tp).await {
                error!(topic = %partition.topic, partition = partition.tp.partition, %error, "cannot delete partition log");
            }
            continue;
        }
        let Some(topic) = image.topic_by_id(&partition.tp.topic_id) else {
            continue;
        };
        if ctx
            .replicas
            .topic_configs_changed(&partition.tp, &topic.configs)
        {
            let log_config =
                log_config_with_overrides(&crate::log_config(&ctx.config), &topic.configs);
            info!(topic = %partition.topic, partition = partition.tp.partition, "applying altered topic configs");
            ctx.replicas
                .update_config(&partition.tp, &topic.configs, log_config);
        }
    }
    replication::apply_roles(&ctx.core, &image).await;
    ctx.core
        .throttles
        .on_metadata(&image, ctx.config.node_id, ctx.mesh.shard_count());
    ctx.groups.on_metadata(&ctx.core, &image);
    // After the partitions are open: the fetchers fetch the ones led by another broker.
    ctx.replica_fetchers.on_metadata(&ctx.core, &image);
    ctx.set_image(image);
    ctx.metadata_ready.trigger();
}
