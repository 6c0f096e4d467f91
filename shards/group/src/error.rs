//! Why a group operation was refused. The server maps each to Kafka's error code.

/// A refused group operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The group's partition of `__consumer_offsets` is still being loaded.
    #[error("coordinator load in progress")]
    CoordinatorLoadInProgress,
    /// This broker is not the group's coordinator.
    #[error("not coordinator")]
    NotCoordinator,
    /// The group is being removed, or its state could not be written.
    #[error("coordinator not available")]
    CoordinatorNotAvailable,
    /// Empty group id.
    #[error("invalid group id")]
    InvalidGroupId,
    /// The member id is not (or no longer) in the group.
    #[error("unknown member id")]
    UnknownMemberId,
    /// KIP-394: join again with the member id in this answer.
    #[error("member id required")]
    MemberIdRequired,
    /// The generation is not the group's current one.
    #[error("illegal generation")]
    IllegalGeneration,
    /// Protocol type or protocols do not match the group's.
    #[error("inconsistent group protocol")]
    InconsistentGroupProtocol,
    /// Session timeout outside the broker's bounds.
    #[error("invalid session timeout")]
    InvalidSessionTimeout,
    /// The group is rebalancing: rejoin.
    #[error("rebalance in progress")]
    RebalanceInProgress,
    /// Another member now holds this static instance id.
    #[error("fenced instance id")]
    FencedInstanceId,
    /// `group.max.size` reached.
    #[error("group max size reached")]
    GroupMaxSizeReached,
    /// The group still has members.
    #[error("group is not empty")]
    NonEmptyGroup,
    /// No such group.
    #[error("group id not found")]
    GroupIdNotFound,
    /// Commit metadata longer than `offset.metadata.max.bytes`.
    #[error("offset metadata too large")]
    OffsetMetadataTooLarge,
    /// The group's members subscribe to this topic: its offsets cannot be deleted.
    #[error("group subscribed to topic")]
    GroupSubscribedToTopic,
}
