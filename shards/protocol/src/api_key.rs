//! Kafka API keys (every key Kafka defines, served or not) and the questions asked of them:
//! which versions Sluice serves and which are flexible, both answered from the one declaration
//! in [`crate::apis`].

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
    pub const fn as_i16(self) -> i16 {
        self as i16
    }

    /// The served `(min, max)` version range, or `None` if Sluice does not serve this API.
    pub fn supported_range(self) -> Option<(i16, i16)> {
        self.served().map(|api| (api.min_version, api.max_version))
    }

    /// True if Sluice serves `version` of this API.
    pub fn supports(self, version: i16) -> bool {
        self.served().is_some_and(|api| api.contains(version))
    }
}

/// The first flexible version of a served API, `None` for others.
pub fn flexible_min_version(api_key: i16) -> Option<i16> {
    Some(ApiKey::from_i16(api_key)?.served()?.flexible_min_version)
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
