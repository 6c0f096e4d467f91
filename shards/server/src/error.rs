//! The server's errors, and the one place where they become Kafka error codes.

use sluice_group::GroupError;
use sluice_protocol::error::ErrorCode;
use sluice_replica::{ProducerStateError, ReplicaError};
use sluice_shard::MetadataError;

/// Why work on one partition failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PartitionError {
    /// The owning shard failed it.
    #[error(transparent)]
    Replica(std::sync::Arc<ReplicaError>),
    /// The owning shard could not be reached (it is shutting down).
    #[error("owning shard unavailable")]
    ShardUnavailable,
}

impl From<ReplicaError> for PartitionError {
    fn from(error: ReplicaError) -> Self {
        PartitionError::Replica(std::sync::Arc::new(error))
    }
}

impl PartitionError {
    /// Kafka's error code for it.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            PartitionError::Replica(error) => replica_error_code(error),
            // Retriable: the client refreshes metadata and tries again.
            PartitionError::ShardUnavailable => ErrorCode::NOT_LEADER_OR_FOLLOWER,
        }
    }
}

/// Kafka's error code for a replica error.
pub fn replica_error_code(error: &ReplicaError) -> ErrorCode {
    match error {
        ReplicaError::UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        ReplicaError::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
        ReplicaError::InvalidTimestamp(_) => ErrorCode::INVALID_TIMESTAMP,
        ReplicaError::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
        // Retriable for the client: the retry is written anew or finds the log failed.
        ReplicaError::DuplicateOfFailedAppend => ErrorCode::KAFKA_STORAGE_ERROR,
        ReplicaError::Producer(error) => producer_error_code(error),
        ReplicaError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ReplicaError::Replication(error) => error.error_code(),
        ReplicaError::NotEnoughReplicasAfterAppend => ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ReplicaError::RequestTimedOut => ErrorCode::REQUEST_TIMED_OUT,
        ReplicaError::InvalidEpoch(_) => ErrorCode::KAFKA_STORAGE_ERROR,
    }
}

/// Kafka's error code for a refused idempotent batch (as Kafka's `ProducerAppendInfo`).
pub fn producer_error_code(error: &ProducerStateError) -> ErrorCode {
    match error {
        // Since Kafka 2.7 a stale epoch on produce is INVALID_PRODUCER_EPOCH (the producer is
        // fenced), not the fatal PRODUCER_FENCED.
        ProducerStateError::InvalidProducerEpoch { .. } => ErrorCode::INVALID_PRODUCER_EPOCH,
        ProducerStateError::OutOfOrderSequence { .. } => ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
        ProducerStateError::InvalidSequence { .. } => ErrorCode::INVALID_RECORD,
    }
}

/// Kafka's error code for a refused metadata change.
pub fn metadata_error_code(error: &MetadataError) -> ErrorCode {
    match error {
        MetadataError::TopicAlreadyExists(_) => ErrorCode::TOPIC_ALREADY_EXISTS,
        MetadataError::InvalidTopic(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
        MetadataError::InvalidPartitions(_) => ErrorCode::INVALID_PARTITIONS,
        MetadataError::InvalidReplicationFactor(_) => ErrorCode::INVALID_REPLICATION_FACTOR,
        MetadataError::InvalidReplicaAssignment(_) => ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        MetadataError::InvalidConfig(_) => ErrorCode::INVALID_CONFIG,
        MetadataError::UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        MetadataError::UnknownTopicId => ErrorCode::UNKNOWN_TOPIC_ID,
        MetadataError::TopicDeletionDisabled => ErrorCode::TOPIC_DELETION_DISABLED,
        MetadataError::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
        MetadataError::ControllerNotAvailable => ErrorCode::NOT_CONTROLLER,
        MetadataError::InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
        MetadataError::DuplicateBrokerRegistration(_) => ErrorCode::DUPLICATE_BROKER_REGISTRATION,
        MetadataError::StaleBrokerEpoch => ErrorCode::STALE_BROKER_EPOCH,
        MetadataError::InvalidUpdateVersion(_) => ErrorCode::INVALID_UPDATE_VERSION,
    }
}

/// Kafka's error code for a refused group operation.
pub fn group_error_code(error: &GroupError) -> ErrorCode {
    match error {
        GroupError::CoordinatorLoadInProgress => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
        GroupError::NotCoordinator => ErrorCode::NOT_COORDINATOR,
        GroupError::CoordinatorNotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        GroupError::InvalidGroupId => ErrorCode::INVALID_GROUP_ID,
        GroupError::UnknownMemberId => ErrorCode::UNKNOWN_MEMBER_ID,
        GroupError::MemberIdRequired => ErrorCode::MEMBER_ID_REQUIRED,
        GroupError::IllegalGeneration => ErrorCode::ILLEGAL_GENERATION,
        GroupError::InconsistentGroupProtocol => ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
        GroupError::InvalidSessionTimeout => ErrorCode::INVALID_SESSION_TIMEOUT,
        GroupError::RebalanceInProgress => ErrorCode::REBALANCE_IN_PROGRESS,
        GroupError::FencedInstanceId => ErrorCode::FENCED_INSTANCE_ID,
        GroupError::GroupMaxSizeReached => ErrorCode::GROUP_MAX_SIZE_REACHED,
        GroupError::NonEmptyGroup => ErrorCode::NON_EMPTY_GROUP,
        GroupError::GroupIdNotFound => ErrorCode::GROUP_ID_NOT_FOUND,
        GroupError::OffsetMetadataTooLarge => ErrorCode::OFFSET_METADATA_TOO_LARGE,
        GroupError::GroupSubscribedToTopic => ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC,
    }
}

/// The code of an optional group error (`NONE` for success).
pub fn group_result_code<T>(result: &Result<T, GroupError>) -> ErrorCode {
    match result {
        Ok(_) => ErrorCode::NONE,
        Err(error) => group_error_code(error),
    }
}
