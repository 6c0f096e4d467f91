//! Requests from a data shard to the controller executor.

use futures_channel::oneshot;
use sluice_shard::{
    AllocateProducerIdsWork, AlterConfigsWork, ControllerMessage, CreatePartitionsWork,
    CreateTopicsWork, CreatedTopic, DeleteTopicsWork, DeletedTopic, MetadataError, NewPartitions,
    NewTopic, ProducerIdBlock, ShardMesh, TopicConfigChanges, TopicRef,
};
use sluice_shard::{AlterBrokerConfigsWork, BrokerConfigChanges};
use sluice_shard::{AlterPartitionItem, AlterPartitionOutcome, AlterPartitionWork};
use sluice_shard::{
    AlterReassignmentsWork, ListReassignmentsWork, OngoingReassignment, ReassignmentOutcome,
    ReassignmentQuery, ReassignmentTopic,
};
use sluice_shard::{DescribeQuorumWork, FeatureUpdate, QuorumInfo, UpdateFeaturesWork};
use sluice_shard::{ElectLeadersWork, ElectionOutcome, ElectionTopic};

/// Asks the controller to create topics; one result per topic, in order.
pub async fn create_topics(
    mesh: &ShardMesh,
    topics: Vec<NewTopic>,
    validate_only: bool,
) -> Vec<Result<CreatedTopic, MetadataError>> {
    let count = topics.len();
    let (reply, done) = oneshot::channel();
    let work = CreateTopicsWork {
        topics,
        validate_only,
        reply,
    };
    ask(mesh, ControllerMessage::CreateTopics(work), done, count).await
}

/// Asks the controller to delete topics; one result per topic, in order.
pub async fn delete_topics(
    mesh: &ShardMesh,
    topics: Vec<TopicRef>,
) -> Vec<Result<DeletedTopic, MetadataError>> {
    let count = topics.len();
    let (reply, done) = oneshot::channel();
    ask(
        mesh,
        ControllerMessage::DeleteTopics(DeleteTopicsWork { topics, reply }),
        done,
        count,
    )
    .await
}

/// Asks the controller to add partitions to topics; one result per topic, in order.
pub async fn create_partitions(
    mesh: &ShardMesh,
    topics: Vec<NewPartitions>,
    validate_only: bool,
) -> Vec<Result<(), MetadataError>> {
    let count = topics.len();
    let (reply, done) = oneshot::channel();
    let work = CreatePartitionsWork {
        topics,
        validate_only,
        reply,
    };
    ask(mesh, ControllerMessage::CreatePartitions(work), done, count).await
}

/// Asks the controller for a block of producer ids (durably claimed before it answers).
pub async fn allocate_producer_ids(mesh: &ShardMesh) -> Result<ProducerIdBlock, MetadataError> {
    let (reply, done) = oneshot::channel();
    let message = ControllerMessage::AllocateProducerIds(AllocateProducerIdsWork { reply });
    if mesh.send_to_controller(message).await.is_err() {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller for the state of the quorum.
pub async fn describe_quorum(mesh: &ShardMesh) -> Result<QuorumInfo, MetadataError> {
    let (reply, done) = oneshot::channel();
    let message = ControllerMessage::DescribeQuorum(DescribeQuorumWork { reply });
    if mesh.send_to_controller(message).await.is_err() {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller to change finalized feature levels.
pub async fn update_features(
    mesh: &ShardMesh,
    updates: Vec<FeatureUpdate>,
    validate_only: bool,
) -> Result<(), MetadataError> {
    let (reply, done) = oneshot::channel();
    let work = UpdateFeaturesWork {
        updates,
        validate_only,
        reply,
    };
    if mesh
        .send_to_controller(ControllerMessage::UpdateFeatures(work))
        .await
        .is_err()
    {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller to change a partition's ISR (AlterPartition), as the leader of
/// `item`'s partition on this broker. `Ok` carries the partition's outcome: a refusal is its
/// Kafka error code (with the partition as the controller has it); `Err` means the controller
/// could not be asked or this broker's registration is stale.
pub async fn alter_partition(
    mesh: &ShardMesh,
    item: AlterPartitionItem,
) -> Result<AlterPartitionOutcome, MetadataError> {
    let (reply, done) = oneshot::channel();
    let message = ControllerMessage::AlterPartition(AlterPartitionWork { item, reply });
    if mesh.send_to_controller(message).await.is_err() {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller to elect leaders: one outcome per partition, or why the
/// request failed as a whole.
pub async fn elect_leaders(
    mesh: &ShardMesh,
    election_type: u8,
    topics: Option<Vec<ElectionTopic>>,
) -> Result<Vec<ElectionOutcome>, MetadataError> {
    let (reply, done) = oneshot::channel();
    let work = ElectLeadersWork {
        election_type,
        topics,
        reply,
    };
    if mesh
        .send_to_controller(ControllerMessage::ElectLeaders(work))
        .await
        .is_err()
    {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller to start or cancel reassignments: one outcome per partition,
/// or why the request failed as a whole.
pub async fn alter_partition_reassignments(
    mesh: &ShardMesh,
    topics: Vec<ReassignmentTopic>,
    allow_replication_factor_change: bool,
) -> Result<Vec<ReassignmentOutcome>, MetadataError> {
    let (reply, done) = oneshot::channel();
    let work = AlterReassignmentsWork {
        topics,
        allow_replication_factor_change,
        reply,
    };
    if mesh
        .send_to_controller(ControllerMessage::AlterPartitionReassignments(work))
        .await
        .is_err()
    {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the active controller for the reassignments in progress.
pub async fn list_partition_reassignments(
    mesh: &ShardMesh,
    topics: Option<Vec<ReassignmentQuery>>,
) -> Result<Vec<OngoingReassignment>, MetadataError> {
    let (reply, done) = oneshot::channel();
    let work = ListReassignmentsWork { topics, reply };
    if mesh
        .send_to_controller(ControllerMessage::ListPartitionReassignments(work))
        .await
        .is_err()
    {
        return Err(MetadataError::ControllerNotAvailable);
    }
    done.await
        .unwrap_or(Err(MetadataError::ControllerNotAvailable))
}

/// Asks the controller to alter dynamic broker configs; one result per resource, in order.
pub async fn alter_broker_configs(
    mesh: &ShardMesh,
    brokers: Vec<BrokerConfigChanges>,
    validate_only: bool,
) -> Vec<Result<(), MetadataError>> {
    let count = brokers.len();
    let (reply, done) = oneshot::channel();
    let work = AlterBrokerConfigsWork {
        brokers,
        validate_only,
        reply,
    };
    ask(
        mesh,
        ControllerMessage::AlterBrokerConfigs(work),
        done,
        count,
    )
    .await
}

/// Asks the controller to alter topic configs; one result per topic, in order.
pub async fn alter_configs(
    mesh: &ShardMesh,
    topics: Vec<TopicConfigChanges>,
    validate_only: bool,
) -> Vec<Result<(), MetadataError>> {
    let count = topics.len();
    let (reply, done) = oneshot::channel();
    let work = AlterConfigsWork {
        topics,
        validate_only,
        reply,
    };
    ask(mesh, ControllerMessage::AlterConfigs(work), done, count).await
}

async fn ask<T>(
    mesh: &ShardMesh,
    message: ControllerMessage,
    done: oneshot::Receiver<Vec<Result<T, MetadataError>>>,
    count: usize,
) -> Vec<Result<T, MetadataError>> {
    let unavailable = || {
        (0..count)
            .map(|_| Err(MetadataError::ControllerNotAvailable))
            .collect()
    };
    if mesh.send_to_controller(message).await.is_err() {
        return unavailable();
    }
    match done.await {
        Ok(results) => {
            assert_eq!(results.len(), count, "the controller answers every topic");
            results
        }
        Err(_) => unavailable(),
    }
}
