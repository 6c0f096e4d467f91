//! Group coordinator work sent to the shard that owns a group's partition of
//! `__consumer_offsets` (or, for ListGroups, to every shard).

use sluice_group::{
    GroupDescription, GroupError, GroupListing, JoinGroupArgs, JoinGroupResult, OffsetCommitArgs,
    OffsetCommitValue, SyncGroupArgs, SyncGroupResult,
};

use crate::message::Reply;

/// Topics and partitions, as OffsetFetch and OffsetDelete name them.
pub type TopicPartitions = Vec<(String, Vec<i32>)>;

/// Committed offsets per topic and partition (`None`: nothing committed).
pub type CommittedOffsets = Vec<(String, Vec<(i32, Option<OffsetCommitValue>)>)>;

/// Per-partition results per topic.
pub type PartitionResults = Vec<(String, Vec<(i32, Result<(), GroupError>)>)>;

/// A request for a group coordinator.
#[derive(Debug)]
pub enum GroupRequest {
    /// JoinGroup (answered when the rebalance completes).
    Join(JoinGroupArgs),
    /// SyncGroup (answered when the leader's assignment arrives).
    Sync(SyncGroupArgs),
    /// Heartbeat.
    Heartbeat {
        /// Group.
        group_id: String,
        /// Member.
        member_id: String,
        /// Static instance id.
        group_instance_id: Option<String>,
        /// Generation.
        generation_id: i32,
    },
    /// LeaveGroup: (member id, instance id) pairs.
    Leave {
        /// Group.
        group_id: String,
        /// The members leaving.
        members: Vec<(String, Option<String>)>,
    },
    /// OffsetCommit.
    Commit(OffsetCommitArgs),
    /// OffsetFetch of one group; `None` topics: every committed offset.
    FetchOffsets {
        /// Group.
        group_id: String,
        /// What to fetch.
        topics: Option<TopicPartitions>,
    },
    /// DescribeGroups of one group.
    Describe {
        /// Group.
        group_id: String,
    },
    /// ListGroups: this shard's groups.
    List,
    /// DeleteGroups of one group.
    Delete {
        /// Group.
        group_id: String,
    },
    /// OffsetDelete.
    DeleteOffsets {
        /// Group.
        group_id: String,
        /// What to delete.
        topics: TopicPartitions,
    },
}

/// The answer to a `GroupRequest`, of the same variant.
#[derive(Debug)]
pub enum GroupResponse {
    /// JoinGroup.
    Join(JoinGroupResult),
    /// SyncGroup.
    Sync(SyncGroupResult),
    /// Heartbeat.
    Heartbeat(Result<(), GroupError>),
    /// LeaveGroup: one result per member.
    Leave(Result<Vec<Result<(), GroupError>>, GroupError>),
    /// OffsetCommit: one result per offset, in request order.
    Commit(Result<Vec<Result<(), GroupError>>, GroupError>),
    /// OffsetFetch.
    FetchOffsets(Result<CommittedOffsets, GroupError>),
    /// DescribeGroups.
    Describe(Result<GroupDescription, GroupError>),
    /// ListGroups.
    List(Result<Vec<GroupListing>, GroupError>),
    /// DeleteGroups.
    Delete(Result<(), GroupError>),
    /// OffsetDelete.
    DeleteOffsets(Result<PartitionResults, GroupError>),
}

impl GroupRequest {
    /// The group it names (`None` for ListGroups).
    pub fn group_id(&self) -> Option<&str> {
        match self {
            GroupRequest::Join(a) => Some(&a.group_id),
            GroupRequest::Sync(a) => Some(&a.group_id),
            GroupRequest::Commit(a) => Some(&a.group_id),
            GroupRequest::Heartbeat { group_id, .. }
            | GroupRequest::Leave { group_id, .. }
            | GroupRequest::FetchOffsets { group_id, .. }
            | GroupRequest::Describe { group_id }
            | GroupRequest::Delete { group_id }
            | GroupRequest::DeleteOffsets { group_id, .. } => Some(group_id),
            GroupRequest::List => None,
        }
    }

    /// The answer to this request when it cannot be served at all.
    pub fn failed(&self, error: GroupError) -> GroupResponse {
        match self {
            GroupRequest::Join(a) => GroupResponse::Join(JoinGroupResult {
                error: Some(error),
                generation_id: -1,
                protocol_type: None,
                protocol_name: None,
                leader_id: String::new(),
                skip_assignment: false,
                member_id: a.member_id.clone(),
                members: Vec::new(),
            }),
            GroupRequest::Sync(_) => GroupResponse::Sync(SyncGroupResult {
                error: Some(error),
                protocol_type: None,
                protocol_name: None,
                assignment: bytes::Bytes::new(),
            }),
            GroupRequest::Heartbeat { .. } => GroupResponse::Heartbeat(Err(error)),
            GroupRequest::Leave { .. } => GroupResponse::Leave(Err(error)),
            GroupRequest::Commit(_) => GroupResponse::Commit(Err(error)),
            GroupRequest::FetchOffsets { .. } => GroupResponse::FetchOffsets(Err(error)),
            GroupRequest::Describe { .. } => GroupResponse::Describe(Err(error)),
            GroupRequest::List => GroupResponse::List(Err(error)),
            GroupRequest::Delete { .. } => GroupResponse::Delete(Err(error)),
            GroupRequest::DeleteOffsets { .. } => GroupResponse::DeleteOffsets(Err(error)),
        }
    }
}

/// Group work for one shard.
pub struct GroupWork {
    /// The request.
    pub request: GroupRequest,
    /// The answer.
    pub reply: Reply<GroupResponse>,
}
