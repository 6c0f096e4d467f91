//! The broker side of replication on one shard (Kafka's `ReplicaManager` around its
//! partitions): each metadata image makes this broker leader or follower of the partitions it
//! hosts; ISR changes a leader decides go to the controller as `AlterPartition`; followers that
//! stop fetching leave the ISR every half `replica.lag.time.max.ms`.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use sluice_protocol::error::ErrorCode;
use sluice_replica::replication::{
    AlterPartitionError, AlterPartitionRequest, PartitionRegistration, ReplicationConfig,
};
use sluice_replica::Partition;
use sluice_shard::{AlterPartitionItem, MetadataImage, TopicImage};
use tracing::{debug, error, warn};

use crate::controller_client;
use crate::log_manager::every;
use crate::shard_core::ShardCore;

/// Attempts at sending one `AlterPartition` when the controller cannot be reached; after them
/// the change is dropped and the next fetch or ISR check proposes it again.
const ALTER_PARTITION_ATTEMPTS_MAX: u32 = 5;
/// Pause between those attempts, times the attempt number.
const ALTER_PARTITION_BACKOFF: Duration = Duration::from_millis(100);

/// The settings a partition's leader decides with: the topic's `min.insync.replicas` (or the
/// broker's), and the broker's `replica.lag.time.max.ms`.
pub fn replication_config(core: &ShardCore, topic: &TopicImage) -> ReplicationConfig {
    let min_insync_replicas = topic
        .configs
        .get("min.insync.replicas")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(core.config.min_insync_replicas.max(1) as usize);
    ReplicationConfig {
        min_insync_replicas,
        replica_lag_time_max_ms: core.config.replica_lag_time_max_ms,
    }
}

/// Alive (unfenced) brokers and their epochs: who may join an ISR (KIP-903).
fn alive_broker_epochs(image: &MetadataImage) -> BTreeMap<i32, i64> {
    image
        .brokers
        .iter()
        .map(|b| (b.node_id, b.broker_epoch))
        .collect()
}

/// Gives every partition this shard hosts its role in `image`: leader where the image names
/// this broker, follower of the named leader (or of nobody, -1) elsewhere.
pub async fn apply_roles(core: &Rc<ShardCore>, image: &MetadataImage) {
    let alive = alive_broker_epochs(image);
    for partition in core.replicas.partitions() {
        let Some(topic) = image.topic_by_id(&partition.tp.topic_id) else {
            continue;
        };
        let Some(p) = topic.partition(partition.tp.partition) else {
            continue;
        };
        if p.leader == image.local_node_id {
            let registration = PartitionRegistration {
                leader: Some(p.leader),
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
            };
            let config = replication_config(core, topic);
            if let Err(error) = partition
                .make_leader(&registration, config, alive.clone())
                .await
            {
                error!(topic = %topic.name, partition = p.partition, %error, "cannot become leader");
            }
        } else {
            partition.make_follower(p.leader, p.leader_epoch);
        }
    }
}

/// Sends a leader's ISR change to the controller and hands the answer back to the partition,
/// in its own task (the fetch that caused it is not held up).
pub fn send_alter_partition(
    core: &Rc<ShardCore>,
    partition: Rc<Partition>,
    request: AlterPartitionRequest,
) {
    let core = core.clone();
    glommio::spawn_local(async move {
        let response = alter_partition(&core, &partition, &request).await;
        partition.on_alter_partition_response(&request, response);
    })
    .detach();
}

async fn alter_partition(
    core: &ShardCore,
    partition: &Partition,
    request: &AlterPartitionRequest,
) -> Result<PartitionRegistration, AlterPartitionError> {
    for attempt in 1..=ALTER_PARTITION_ATTEMPTS_MAX {
        let item = AlterPartitionItem {
            topic_id: partition.tp.topic_id,
            partition: partition.tp.partition,
            leader_id: request.leader,
            leader_epoch: request.leader_epoch,
            partition_epoch: request.partition_epoch,
            new_isr: request.new_isr.clone(),
        };
        match controller_client::alter_partition(&core.mesh, item).await {
            Ok(outcome) => {
                debug!(topic = %partition.topic, partition = partition.tp.partition, error = ?outcome.error, isr = ?outcome.isr, "AlterPartition answered");
                return match outcome.error {
                    ErrorCode::NONE => Ok(PartitionRegistration {
                        leader: Some(outcome.leader_id),
                        leader_epoch: outcome.leader_epoch,
                        partition_epoch: outcome.partition_epoch,
                        replicas: Vec::new(),
                        isr: outcome.isr,
                    }),
                    ErrorCode::FENCED_LEADER_EPOCH | ErrorCode::NOT_LEADER_OR_FOLLOWER => {
                        Err(AlterPartitionError::FencedLeaderEpoch)
                    }
                    ErrorCode::INVALID_UPDATE_VERSION => {
                        Err(AlterPartitionError::InvalidUpdateVersion)
                    }
                    ErrorCode::INELIGIBLE_REPLICA => Err(AlterPartitionError::IneligibleReplica),
                    _ => Err(AlterPartitionError::OperationNotAttempted),
                };
            }
            Err(error) => {
                warn!(topic = %partition.topic, partition = partition.tp.partition, attempt, %error, "AlterPartition not delivered");
                glommio::timer::sleep(ALTER_PARTITION_BACKOFF * attempt).await;
            }
        }
    }
    Err(AlterPartitionError::OperationNotAttempted)
}

/// Kafka's `isr-expiration` task: every half `replica.lag.time.max.ms`, each partition this
/// shard leads drops followers that stopped keeping up.
pub fn spawn_isr_expiration(core: Rc<ShardCore>) {
    let lag_ms = core.config.replica_lag_time_max_ms.max(2) as u64;
    every(core, Duration::from_millis(lag_ms / 2), |core| async move {
        for partition in core.replicas.partitions() {
            if let Some(request) = partition.maybe_shrink_isr() {
                send_alter_partition(&core, partition, request);
            }
        }
    });
}
