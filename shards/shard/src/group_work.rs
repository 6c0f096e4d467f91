//! Group coordinator work sent to the shard that owns a group's partition of
//! `__consumer_offsets` (or, for ListGroups, to every shard). Each request kind is its own type
//! with its own answer type ([`GroupRequest::Response`]), and each [`GroupWork`] variant carries
//! a reply channel of exactly that type: a Heartbeat cannot be answered with a JoinGroup result.

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

/// One result per member (LeaveGroup) or per offset (OffsetCommit), or one error for all.
pub type PerItemResults = Result<Vec<Result<(), GroupError>>, GroupError>;

/// A Heartbeat.
#[derive(Debug, Clone)]
pub struct HeartbeatArgs {
    /// Group.
    pub group_id: String,
    /// Member.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Generation.
    pub generation_id: i32,
}

/// A LeaveGroup.
#[derive(Debug, Clone)]
pub struct LeaveGroupArgs {
    /// Group.
    pub group_id: String,
    /// The members leaving: (member id, instance id).
    pub members: Vec<(String, Option<String>)>,
}

/// An OffsetFetch of one group.
#[derive(Debug, Clone)]
pub struct OffsetFetchArgs {
    /// Group.
    pub group_id: String,
    /// What to fetch; `None`: every committed offset.
    pub topics: Option<TopicPartitions>,
}

/// A DescribeGroups of one group.
#[derive(Debug, Clone)]
pub struct DescribeGroupArgs {
    /// Group.
    pub group_id: String,
}

/// A ListGroups of one shard's groups.
#[derive(Debug, Clone, Copy)]
pub struct ListGroupsArgs;

/// A DeleteGroups of one group.
#[derive(Debug, Clone)]
pub struct DeleteGroupArgs {
    /// Group.
    pub group_id: String,
}

/// An OffsetDelete.
#[derive(Debug, Clone)]
pub struct OffsetDeleteArgs {
    /// Group.
    pub group_id: String,
    /// What to delete.
    pub topics: TopicPartitions,
}

/// Group work for one shard: the request and a reply channel typed for its answer.
///
/// ```
/// # use sluice_shard::{GroupRequest, GroupWork, HeartbeatArgs};
/// let args = HeartbeatArgs {
///     group_id: "g".into(),
///     member_id: "m".into(),
///     group_instance_id: None,
///     generation_id: 1,
/// };
/// let (reply, _answer) = futures_channel::oneshot::channel();
/// let work: GroupWork = args.into_work(reply); // the answer is a Result<(), GroupError>
/// assert!(matches!(work, GroupWork::Heartbeat(..)));
/// ```
///
/// A Heartbeat cannot be given a JoinGroup's reply:
///
/// ```compile_fail
/// # use sluice_shard::{GroupWork, HeartbeatArgs};
/// # use sluice_group::JoinGroupResult;
/// # fn f(args: HeartbeatArgs) {
/// let (reply, _answer) = futures_channel::oneshot::channel::<JoinGroupResult>();
/// let _ = GroupWork::Heartbeat(args, reply);
/// # }
/// ```
pub enum GroupWork {
    /// JoinGroup (answered when the rebalance completes).
    Join(JoinGroupArgs, Reply<JoinGroupResult>),
    /// SyncGroup (answered when the leader's assignment arrives).
    Sync(SyncGroupArgs, Reply<SyncGroupResult>),
    /// Heartbeat.
    Heartbeat(HeartbeatArgs, Reply<Result<(), GroupError>>),
    /// LeaveGroup: one result per member.
    Leave(LeaveGroupArgs, Reply<PerItemResults>),
    /// OffsetCommit: one result per offset, in request order.
    Commit(OffsetCommitArgs, Reply<PerItemResults>),
    /// OffsetFetch.
    FetchOffsets(OffsetFetchArgs, Reply<Result<CommittedOffsets, GroupError>>),
    /// DescribeGroups.
    Describe(
        DescribeGroupArgs,
        Reply<Result<GroupDescription, GroupError>>,
    ),
    /// ListGroups.
    List(ListGroupsArgs, Reply<Result<Vec<GroupListing>, GroupError>>),
    /// DeleteGroups.
    Delete(DeleteGroupArgs, Reply<Result<(), GroupError>>),
    /// OffsetDelete.
    DeleteOffsets(
        OffsetDeleteArgs,
        Reply<Result<PartitionResults, GroupError>>,
    ),
}

/// A request for a group coordinator, paired with its answer type.
pub trait GroupRequest: Sized {
    /// The answer.
    type Response;

    /// The group it names (`None` for ListGroups, which goes to every shard).
    fn group_id(&self) -> Option<&str>;

    /// The answer to this request when it cannot be served at all.
    fn failed(&self, error: GroupError) -> Self::Response;

    /// The message that carries it to another shard, answered on `reply`.
    fn into_work(self, reply: Reply<Self::Response>) -> GroupWork;
}

impl GroupRequest for JoinGroupArgs {
    type Response = JoinGroupResult;

    fn group_id(&self) -> Option<&str> {
        Some(&self.group_id)
    }

    fn failed(&self, error: GroupError) -> JoinGroupResult {
        JoinGroupResult::error(error, &self.member_id)
    }

    fn into_work(self, reply: Reply<JoinGroupResult>) -> GroupWork {
        GroupWork::Join(self, reply)
    }
}

impl GroupRequest for SyncGroupArgs {
    type Response = SyncGroupResult;

    fn group_id(&self) -> Option<&str> {
        Some(&self.group_id)
    }

    fn failed(&self, error: GroupError) -> SyncGroupResult {
        SyncGroupResult::error(error)
    }

    fn into_work(self, reply: Reply<SyncGroupResult>) -> GroupWork {
        GroupWork::Sync(self, reply)
    }
}

impl GroupRequest for ListGroupsArgs {
    type Response = Result<Vec<GroupListing>, GroupError>;

    fn group_id(&self) -> Option<&str> {
        None
    }

    fn failed(&self, error: GroupError) -> Self::Response {
        Err(error)
    }

    fn into_work(self, reply: Reply<Self::Response>) -> GroupWork {
        GroupWork::List(self, reply)
    }
}

/// A request of one group whose answer is a `Result`, failed as `Err(error)`.
macro_rules! group_result_request {
    ($args:ty => $variant:ident, $response:ty) => {
        impl GroupRequest for $args {
            type Response = $response;

            fn group_id(&self) -> Option<&str> {
                Some(&self.group_id)
            }

            fn failed(&self, error: GroupError) -> $response {
                Err(error)
            }

            fn into_work(self, reply: Reply<$response>) -> GroupWork {
                GroupWork::$variant(self, reply)
            }
        }
    };
}

group_result_request!(HeartbeatArgs => Heartbeat, Result<(), GroupError>);
group_result_request!(LeaveGroupArgs => Leave, PerItemResults);
group_result_request!(OffsetCommitArgs => Commit, PerItemResults);
group_result_request!(OffsetFetchArgs => FetchOffsets, Result<CommittedOffsets, GroupError>);
group_result_request!(DescribeGroupArgs => Describe, Result<GroupDescription, GroupError>);
group_result_request!(DeleteGroupArgs => Delete, Result<(), GroupError>);
group_result_request!(OffsetDeleteArgs => DeleteOffsets, Result<PartitionResults, GroupError>);
