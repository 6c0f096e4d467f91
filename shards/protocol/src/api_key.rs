//! Kafka API keys, flexible-version boundaries and the ranges Sluice implements.

use crate::messages::{
    alter_configs, api_versions, create_partitions, create_topics, delete_groups, delete_records,
    delete_topics, describe_cluster, describe_configs, describe_groups, describe_log_dirs,
    describe_producers, describe_topic_partitions, fetch, find_coordinator, heartbeat,
    incremental_alter_configs, init_producer_id, join_group, leave_group, list_groups,
    list_offsets, metadata, offset_commit, offset_delete, offset_fetch, produce, sync_group,
};
use crate::messages::{describe_quorum, update_features};

macro_rules! api_keys {
    ($($name:ident = $key:expr),* $(,)?) => {
        /// Every API key Kafka defines, so the broker can tell an unknown key
        /// (close the connection) from a known but unimplemented one (answer
        /// `UNSUPPORTED_VERSION`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i16)]
        pub enum ApiKey {
            $(
                #[doc = concat!("API key ", stringify!($key), ".")]
                $name = $key,
            )*
        }

        impl ApiKey {
            /// Maps a wire API key to the enum; `None` for keys Kafka does not define.
            pub fn from_i16(key: i16) -> Option<ApiKey> {
                match key {
                    $($key => Some(ApiKey::$name),)*
                    _ => None,
                }
            }

            /// Kafka's name for the API.
            pub fn name(self) -> &'static str {
                match self {
                    $(ApiKey::$name => stringify!($name),)*
                }
            }
        }
    };
}

api_keys! {
    Produce = 0,
    Fetch = 1,
    ListOffsets = 2,
    Metadata = 3,
    // 4-7 are the ZooKeeper-era inter-broker APIs removed in Kafka 4.0; they are
    // kept so that old peers get UNSUPPORTED_VERSION rather than a closed socket.
    LeaderAndIsr = 4,
    StopReplica = 5,
    UpdateMetadata = 6,
    ControlledShutdown = 7,
    OffsetCommit = 8,
    OffsetFetch = 9,
    FindCoordinator = 10,
    JoinGroup = 11,
    Heartbeat = 12,
    LeaveGroup = 13,
    SyncGroup = 14,
    DescribeGroups = 15,
    ListGroups = 16,
    SaslHandshake = 17,
    ApiVersions = 18,
    CreateTopics = 19,
    DeleteTopics = 20,
    DeleteRecords = 21,
    InitProducerId = 22,
    OffsetForLeaderEpoch = 23,
    AddPartitionsToTxn = 24,
    AddOffsetsToTxn = 25,
    EndTxn = 26,
    WriteTxnMarkers = 27,
    TxnOffsetCommit = 28,
    DescribeAcls = 29,
    CreateAcls = 30,
    DeleteAcls = 31,
    DescribeConfigs = 32,
    AlterConfigs = 33,
    AlterReplicaLogDirs = 34,
    DescribeLogDirs = 35,
    SaslAuthenticate = 36,
    CreatePartitions = 37,
    CreateDelegationToken = 38,
    RenewDelegationToken = 39,
    ExpireDelegationToken = 40,
    DescribeDelegationToken = 41,
    DeleteGroups = 42,
    ElectLeaders = 43,
    IncrementalAlterConfigs = 44,
    AlterPartitionReassignments = 45,
    ListPartitionReassignments = 46,
    OffsetDelete = 47,
    DescribeClientQuotas = 48,
    AlterClientQuotas = 49,
    DescribeUserScramCredentials = 50,
    AlterUserScramCredentials = 51,
    Vote = 52,
    BeginQuorumEpoch = 53,
    EndQuorumEpoch = 54,
    DescribeQuorum = 55,
    AlterPartition = 56,
    UpdateFeatures = 57,
    Envelope = 58,
    FetchSnapshot = 59,
    DescribeCluster = 60,
    DescribeProducers = 61,
    BrokerRegistration = 62,
    BrokerHeartbeat = 63,
    UnregisterBroker = 64,
    DescribeTransactions = 65,
    ListTransactions = 66,
    AllocateProducerIds = 67,
    ConsumerGroupHeartbeat = 68,
    ConsumerGroupDescribe = 69,
    ControllerRegistration = 70,
    GetTelemetrySubscriptions = 71,
    PushTelemetry = 72,
    AssignReplicasToDirs = 73,
    ListConfigResources = 74,
    DescribeTopicPartitions = 75,
    ShareGroupHeartbeat = 76,
    ShareGroupDescribe = 77,
    ShareFetch = 78,
    ShareAcknowledge = 79,
    AddRaftVoter = 80,
    RemoveRaftVoter = 81,
    UpdateRaftVoter = 82,
    InitializeShareGroupState = 83,
    ReadShareGroupState = 84,
    WriteShareGroupState = 85,
    DeleteShareGroupState = 86,
    ReadShareGroupStateSummary = 87,
    StreamsGroupHeartbeat = 88,
    StreamsGroupDescribe = 89,
    DescribeShareGroupOffsets = 90,
    AlterShareGroupOffsets = 91,
    DeleteShareGroupOffsets = 92,
}

impl ApiKey {
    /// The wire value.
    pub fn as_i16(self) -> i16 {
        self as i16
    }

    /// The implemented `(min, max)` version range, or `None` if Sluice does not
    /// implement this API.
    pub fn supported_range(self) -> Option<(i16, i16)> {
        SUPPORTED
            .iter()
            .find(|(key, _, _)| *key == self)
            .map(|&(_, min, max)| (min, max))
    }

    /// True if Sluice implements `version` of this API.
    pub fn supports(self, version: i16) -> bool {
        self.supported_range()
            .is_some_and(|(min, max)| (min..=max).contains(&version))
    }
}

/// The API versions Sluice implements, as advertised in ApiVersions responses.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, produce::MIN_VERSION, produce::MAX_VERSION),
    (ApiKey::Fetch, fetch::MIN_VERSION, fetch::MAX_VERSION),
    (
        ApiKey::ListOffsets,
        list_offsets::MIN_VERSION,
        list_offsets::MAX_VERSION,
    ),
    (
        ApiKey::Metadata,
        metadata::MIN_VERSION,
        metadata::MAX_VERSION,
    ),
    (
        ApiKey::ApiVersions,
        api_versions::MIN_VERSION,
        api_versions::MAX_VERSION,
    ),
    (
        ApiKey::CreateTopics,
        create_topics::MIN_VERSION,
        create_topics::MAX_VERSION,
    ),
    (
        ApiKey::DeleteTopics,
        delete_topics::MIN_VERSION,
        delete_topics::MAX_VERSION,
    ),
    (
        ApiKey::DescribeCluster,
        describe_cluster::MIN_VERSION,
        describe_cluster::MAX_VERSION,
    ),
    (
        ApiKey::DescribeConfigs,
        describe_configs::MIN_VERSION,
        describe_configs::MAX_VERSION,
    ),
    (
        ApiKey::AlterConfigs,
        alter_configs::MIN_VERSION,
        alter_configs::MAX_VERSION,
    ),
    (
        ApiKey::IncrementalAlterConfigs,
        incremental_alter_configs::MIN_VERSION,
        incremental_alter_configs::MAX_VERSION,
    ),
    (
        ApiKey::CreatePartitions,
        create_partitions::MIN_VERSION,
        create_partitions::MAX_VERSION,
    ),
    (
        ApiKey::DeleteRecords,
        delete_records::MIN_VERSION,
        delete_records::MAX_VERSION,
    ),
    (
        ApiKey::InitProducerId,
        init_producer_id::MIN_VERSION,
        init_producer_id::MAX_VERSION,
    ),
    (
        ApiKey::OffsetCommit,
        offset_commit::MIN_VERSION,
        offset_commit::MAX_VERSION,
    ),
    (
        ApiKey::OffsetFetch,
        offset_fetch::MIN_VERSION,
        offset_fetch::MAX_VERSION,
    ),
    (
        ApiKey::FindCoordinator,
        find_coordinator::MIN_VERSION,
        find_coordinator::MAX_VERSION,
    ),
    (
        ApiKey::JoinGroup,
        join_group::MIN_VERSION,
        join_group::MAX_VERSION,
    ),
    (
        ApiKey::Heartbeat,
        heartbeat::MIN_VERSION,
        heartbeat::MAX_VERSION,
    ),
    (
        ApiKey::LeaveGroup,
        leave_group::MIN_VERSION,
        leave_group::MAX_VERSION,
    ),
    (
        ApiKey::SyncGroup,
        sync_group::MIN_VERSION,
        sync_group::MAX_VERSION,
    ),
    (
        ApiKey::DescribeGroups,
        describe_groups::MIN_VERSION,
        describe_groups::MAX_VERSION,
    ),
    (
        ApiKey::ListGroups,
        list_groups::MIN_VERSION,
        list_groups::MAX_VERSION,
    ),
    (
        ApiKey::DeleteGroups,
        delete_groups::MIN_VERSION,
        delete_groups::MAX_VERSION,
    ),
    (
        ApiKey::OffsetDelete,
        offset_delete::MIN_VERSION,
        offset_delete::MAX_VERSION,
    ),
    (
        ApiKey::DescribeLogDirs,
        describe_log_dirs::MIN_VERSION,
        describe_log_dirs::MAX_VERSION,
    ),
    (
        ApiKey::DescribeProducers,
        describe_producers::MIN_VERSION,
        describe_producers::MAX_VERSION,
    ),
    (
        ApiKey::DescribeTopicPartitions,
        describe_topic_partitions::MIN_VERSION,
        describe_topic_partitions::MAX_VERSION,
    ),
    (
        ApiKey::DescribeQuorum,
        describe_quorum::MIN_VERSION,
        describe_quorum::MAX_VERSION,
    ),
    (
        ApiKey::UpdateFeatures,
        update_features::MIN_VERSION,
        update_features::MAX_VERSION,
    ),
];

/// The first flexible version of an implemented API, `None` for others.
pub fn flexible_min_version(api_key: i16) -> Option<i16> {
    match ApiKey::from_i16(api_key)? {
        ApiKey::Produce => Some(produce::FLEXIBLE_MIN_VERSION),
        ApiKey::Fetch => Some(fetch::FLEXIBLE_MIN_VERSION),
        ApiKey::ListOffsets => Some(list_offsets::FLEXIBLE_MIN_VERSION),
        ApiKey::Metadata => Some(metadata::FLEXIBLE_MIN_VERSION),
        ApiKey::ApiVersions => Some(api_versions::FLEXIBLE_MIN_VERSION),
        ApiKey::CreateTopics => Some(create_topics::FLEXIBLE_MIN_VERSION),
        ApiKey::DeleteTopics => Some(delete_topics::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeCluster => Some(describe_cluster::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeConfigs => Some(describe_configs::FLEXIBLE_MIN_VERSION),
        ApiKey::AlterConfigs => Some(alter_configs::FLEXIBLE_MIN_VERSION),
        ApiKey::IncrementalAlterConfigs => Some(incremental_alter_configs::FLEXIBLE_MIN_VERSION),
        ApiKey::CreatePartitions => Some(create_partitions::FLEXIBLE_MIN_VERSION),
        ApiKey::DeleteRecords => Some(delete_records::FLEXIBLE_MIN_VERSION),
        ApiKey::InitProducerId => Some(init_producer_id::FLEXIBLE_MIN_VERSION),
        ApiKey::OffsetCommit => Some(offset_commit::FLEXIBLE_MIN_VERSION),
        ApiKey::OffsetFetch => Some(offset_fetch::FLEXIBLE_MIN_VERSION),
        ApiKey::FindCoordinator => Some(find_coordinator::FLEXIBLE_MIN_VERSION),
        ApiKey::JoinGroup => Some(join_group::FLEXIBLE_MIN_VERSION),
        ApiKey::Heartbeat => Some(heartbeat::FLEXIBLE_MIN_VERSION),
        ApiKey::LeaveGroup => Some(leave_group::FLEXIBLE_MIN_VERSION),
        ApiKey::SyncGroup => Some(sync_group::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeGroups => Some(describe_groups::FLEXIBLE_MIN_VERSION),
        ApiKey::ListGroups => Some(list_groups::FLEXIBLE_MIN_VERSION),
        ApiKey::DeleteGroups => Some(delete_groups::FLEXIBLE_MIN_VERSION),
        ApiKey::OffsetDelete => Some(offset_delete::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeLogDirs => Some(describe_log_dirs::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeProducers => Some(describe_producers::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeTopicPartitions => Some(describe_topic_partitions::FLEXIBLE_MIN_VERSION),
        ApiKey::DescribeQuorum => Some(describe_quorum::FLEXIBLE_MIN_VERSION),
        ApiKey::UpdateFeatures => Some(update_features::FLEXIBLE_MIN_VERSION),
        _ => None,
    }
}

/// Whether `version` of `api_key` uses the flexible (compact + tagged) encoding.
/// Only known for implemented APIs; false otherwise. Versions above our max
/// still count as flexible so the header of a too-new request parses correctly.
pub fn is_flexible(api_key: i16, version: i16) -> bool {
    flexible_min_version(api_key).is_some_and(|min| version >= min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for key in 0..=92 {
            assert_eq!(ApiKey::from_i16(key).map(ApiKey::as_i16), Some(key));
        }
        assert_eq!(ApiKey::from_i16(93), None);
        assert_eq!(ApiKey::from_i16(-1), None);
        assert_eq!(ApiKey::DescribeCluster.name(), "DescribeCluster");
    }

    #[test]
    fn flexible_boundaries() {
        assert!(!is_flexible(0, 8));
        assert!(is_flexible(0, 9));
        assert!(is_flexible(18, 3));
        assert!(!is_flexible(18, 2));
        assert!(is_flexible(60, 0));
        assert!(is_flexible(8, 10)); // above our max, still parsed as flexible
        assert!(!is_flexible(8, 7));
        assert!(!is_flexible(47, 0));
        assert!(!is_flexible(28, 3)); // not implemented
        assert!(ApiKey::Fetch.supports(17));
        assert!(!ApiKey::Fetch.supports(3));
        assert!(!ApiKey::OffsetCommit.supports(1));
        assert!(ApiKey::OffsetCommit.supports(9));
        assert!(!ApiKey::OffsetCommit.supports(10));
        assert!(ApiKey::JoinGroup.supports(0) && ApiKey::JoinGroup.supports(9));
        assert!(!ApiKey::JoinGroup.supports(10));
        assert!(ApiKey::Fetch.supports(18) && !ApiKey::Fetch.supports(19));
        assert!(ApiKey::Produce.supports(13) && !ApiKey::Produce.supports(2));
        assert!(ApiKey::ListOffsets.supports(10) && ApiKey::Metadata.supports(13));
        assert!(ApiKey::DescribeCluster.supports(2) && !ApiKey::DescribeCluster.supports(3));
        assert!(!ApiKey::OffsetFetch.supports(0));
        assert!(!is_flexible(37, 1));
        assert!(is_flexible(37, 2));
        assert!(ApiKey::CreatePartitions.supports(0) && ApiKey::CreatePartitions.supports(3));
        assert!(!ApiKey::CreatePartitions.supports(4));
    }
}
