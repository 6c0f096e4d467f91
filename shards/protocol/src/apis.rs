//! The one declaration of the APIs Sluice serves: for each, its key, the versions served, the
//! first flexible version and the message types. Everything that must agree about them is
//! generated from it, so it cannot disagree:
//!
//! - [`SUPPORTED`], the ranges ApiVersions advertises (in this order: the order Sluice has
//!   always answered with, so ApiVersions stays byte-identical);
//! - [`ApiKey::served`] and through it `ApiKey::supports`, the flexible-version boundaries
//!   (`is_flexible`, hence the request and response header versions) and each message module's
//!   `API_KEY` / `MIN_VERSION` / `MAX_VERSION` / `FLEXIBLE_MIN_VERSION`, which its codec checks;
//! - [`RequestBody`] / [`ResponseBody`] and their decode/encode dispatch.
//!
//! The broker's dispatch is an exhaustive `match` on [`RequestBody`], so an API added here does
//! not compile until it has a handler. Adding a version is one edit of a range below plus the
//! codec's fields and the handler's behaviour for it.

use crate::api_key::ApiKey;
use crate::codec::{Decoder, Encoder};
use crate::error::{ProtocolError, Result};
use crate::messages::{
    alter_configs, alter_partition_reassignments, api_versions, create_partitions, create_topics,
    delete_groups, delete_records, delete_topics, describe_cluster, describe_configs,
    describe_groups, describe_log_dirs, describe_producers, describe_quorum,
    describe_topic_partitions, elect_leaders, fetch, find_coordinator, heartbeat,
    incremental_alter_configs, init_producer_id, join_group, leave_group, list_groups,
    list_offsets, list_partition_reassignments, metadata, offset_commit, offset_delete,
    offset_fetch, produce, sync_group, update_features,
};

/// One served API: its key and the versions Sluice decodes, handles and advertises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedApi {
    /// The API key.
    pub key: ApiKey,
    /// Lowest served version.
    pub min_version: i16,
    /// Highest served version.
    pub max_version: i16,
    /// First version with the flexible (compact + tagged fields) encoding, from the Kafka
    /// schema's `flexibleVersions`; it may lie above `max_version`.
    pub flexible_min_version: i16,
}

impl ServedApi {
    /// Whether `version` is served.
    pub const fn contains(&self, version: i16) -> bool {
        self.min_version <= version && version <= self.max_version
    }
}

macro_rules! declare_apis {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident: $min:literal ..= $max:literal, flexible $flex:literal,
        $module:ident::{$req:ident, $resp:ident};
    )*) => {
        /// The served APIs and versions, in the order ApiVersions lists them.
        pub const SUPPORTED: &[ServedApi] = &[
            $(ServedApi {
                key: ApiKey::$variant,
                min_version: $min,
                max_version: $max,
                flexible_min_version: $flex,
            },)*
        ];

        impl ApiKey {
            /// The declaration of this API, `None` if Sluice does not serve it.
            pub const fn served(self) -> Option<ServedApi> {
                match self {
                    $(
                        ApiKey::$variant => Some(ServedApi {
                            key: ApiKey::$variant,
                            min_version: $min,
                            max_version: $max,
                            flexible_min_version: $flex,
                        }),
                    )*
                    _ => None,
                }
            }
        }

        /// A decoded request body.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[allow(clippy::large_enum_variant)]
        pub enum RequestBody {
            $(
                #[doc = concat!("`", stringify!($variant), "` request.")]
                $(#[doc = $doc])*
                $variant($module::$req),
            )*
        }

        /// A response body.
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[allow(clippy::large_enum_variant)]
        pub enum ResponseBody {
            $(
                #[doc = concat!("`", stringify!($variant), "` response.")]
                $variant($module::$resp),
            )*
        }

        impl RequestBody {
            /// The API key of this body.
            pub fn api_key(&self) -> ApiKey {
                match self {
                    $(RequestBody::$variant(_) => ApiKey::$variant,)*
                }
            }

            /// Decodes a body of `api_key`/`version`.
            pub fn decode(d: &mut Decoder, api_key: ApiKey, version: i16) -> Result<Self> {
                match api_key {
                    $(ApiKey::$variant => {
                        $module::$req::decode(d, version).map(RequestBody::$variant)
                    })*
                    _ => Err(ProtocolError::UnsupportedVersion {
                        api_key: api_key.as_i16(),
                        api_version: version,
                    }),
                }
            }

            /// Encodes the body.
            pub fn encode(&self, e: &mut Encoder, version: i16) {
                match self {
                    $(RequestBody::$variant(b) => b.encode(e, version),)*
                }
            }
        }

        impl ResponseBody {
            /// The API key of this body.
            pub fn api_key(&self) -> ApiKey {
                match self {
                    $(ResponseBody::$variant(_) => ApiKey::$variant,)*
                }
            }

            /// Decodes a body of `api_key`/`version`.
            pub fn decode(d: &mut Decoder, api_key: ApiKey, version: i16) -> Result<Self> {
                match api_key {
                    $(ApiKey::$variant => {
                        $module::$resp::decode(d, version).map(ResponseBody::$variant)
                    })*
                    _ => Err(ProtocolError::UnsupportedVersion {
                        api_key: api_key.as_i16(),
                        api_version: version,
                    }),
                }
            }

            /// Encodes the body.
            pub fn encode(&self, e: &mut Encoder, version: i16) {
                match self {
                    $(ResponseBody::$variant(b) => b.encode(e, version),)*
                }
            }
        }
    };
}

// The ranges are Kafka 4.4's, except where a comment says why Sluice serves fewer.
declare_apis! {
    /// Kafka 4 dropped 0-2 (the old message formats).
    Produce: 3..=13, flexible 9, produce::{ProduceRequest, ProduceResponse};
    /// Kafka 4 dropped 0-3.
    Fetch: 4..=18, flexible 12, fetch::{FetchRequest, FetchResponse};
    /// Kafka 4 dropped 0.
    ListOffsets: 1..=11, flexible 6, list_offsets::{ListOffsetsRequest, ListOffsetsResponse};
    Metadata: 0..=13, flexible 9, metadata::{MetadataRequest, MetadataResponse};
    ApiVersions: 0..=5, flexible 3, api_versions::{ApiVersionsRequest, ApiVersionsResponse};
    /// Kafka 4 dropped 0-1.
    CreateTopics: 2..=7, flexible 5, create_topics::{CreateTopicsRequest, CreateTopicsResponse};
    /// Kafka 4 dropped 0.
    DeleteTopics: 1..=6, flexible 4, delete_topics::{DeleteTopicsRequest, DeleteTopicsResponse};
    DescribeCluster: 0..=2, flexible 0,
        describe_cluster::{DescribeClusterRequest, DescribeClusterResponse};
    InitProducerId: 0..=5, flexible 2,
        init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
    /// Kafka 4 dropped 0.
    DescribeConfigs: 1..=4, flexible 4,
        describe_configs::{DescribeConfigsRequest, DescribeConfigsResponse};
    AlterConfigs: 0..=2, flexible 2, alter_configs::{AlterConfigsRequest, AlterConfigsResponse};
    IncrementalAlterConfigs: 0..=1, flexible 1,
        incremental_alter_configs::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};
    DeleteRecords: 0..=2, flexible 2,
        delete_records::{DeleteRecordsRequest, DeleteRecordsResponse};
    /// 3 only adds THROTTLING_QUOTA_EXCEEDED to the possible errors.
    CreatePartitions: 0..=3, flexible 2,
        create_partitions::{CreatePartitionsRequest, CreatePartitionsResponse};
    /// Kafka 4 dropped 0-1; v10 names topics by id only (KIP-848): clients fall back to v9.
    OffsetCommit: 2..=9, flexible 8, offset_commit::{OffsetCommitRequest, OffsetCommitResponse};
    /// Kafka 4 dropped 0; v10 names topics by id only (KIP-848): clients fall back to v9.
    OffsetFetch: 1..=9, flexible 6, offset_fetch::{OffsetFetchRequest, OffsetFetchResponse};
    FindCoordinator: 0..=6, flexible 3,
        find_coordinator::{FindCoordinatorRequest, FindCoordinatorResponse};
    JoinGroup: 0..=9, flexible 6, join_group::{JoinGroupRequest, JoinGroupResponse};
    Heartbeat: 0..=4, flexible 4, heartbeat::{HeartbeatRequest, HeartbeatResponse};
    LeaveGroup: 0..=5, flexible 4, leave_group::{LeaveGroupRequest, LeaveGroupResponse};
    SyncGroup: 0..=5, flexible 4, sync_group::{SyncGroupRequest, SyncGroupResponse};
    DescribeGroups: 0..=6, flexible 5,
        describe_groups::{DescribeGroupsRequest, DescribeGroupsResponse};
    ListGroups: 0..=5, flexible 3, list_groups::{ListGroupsRequest, ListGroupsResponse};
    DeleteGroups: 0..=3, flexible 2, delete_groups::{DeleteGroupsRequest, DeleteGroupsResponse};
    /// Only v0 exists; its schema has no flexible versions ("none"), so the boundary lies past it.
    OffsetDelete: 0..=0, flexible 1, offset_delete::{OffsetDeleteRequest, OffsetDeleteResponse};
    DescribeLogDirs: 1..=5, flexible 2,
        describe_log_dirs::{DescribeLogDirsRequest, DescribeLogDirsResponse};
    DescribeProducers: 0..=0, flexible 0,
        describe_producers::{DescribeProducersRequest, DescribeProducersResponse};
    DescribeTopicPartitions: 0..=0, flexible 0,
        describe_topic_partitions::{DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse};
    DescribeQuorum: 0..=2, flexible 0,
        describe_quorum::{DescribeQuorumRequest, DescribeQuorumResponse};
    UpdateFeatures: 0..=2, flexible 0,
        update_features::{UpdateFeaturesRequest, UpdateFeaturesResponse};
    ElectLeaders: 0..=2, flexible 2, elect_leaders::{ElectLeadersRequest, ElectLeadersResponse};
    AlterPartitionReassignments: 0..=1, flexible 0,
        alter_partition_reassignments::{AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse};
    ListPartitionReassignments: 0..=0, flexible 0,
        list_partition_reassignments::{ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse};
}

/// The declaration of an API the crate has a codec for; a compile error (in const context) for
/// one it does not serve, so a message module cannot outlive its declaration.
pub(crate) const fn declared(key: ApiKey) -> ServedApi {
    match key.served() {
        Some(api) => api,
        None => panic!("API not declared in apis.rs"),
    }
}

/// Gives a message module its `API_KEY`, `MIN_VERSION`, `MAX_VERSION` and
/// `FLEXIBLE_MIN_VERSION` from the declaration above, for its codec to check.
macro_rules! declared_versions {
    ($variant:ident) => {
        /// API key.
        pub const API_KEY: i16 = $crate::api_key::ApiKey::$variant.as_i16();
        /// Lowest served version (declared in `apis.rs`).
        pub const MIN_VERSION: i16 =
            $crate::apis::declared($crate::api_key::ApiKey::$variant).min_version;
        /// Highest served version (declared in `apis.rs`).
        pub const MAX_VERSION: i16 =
            $crate::apis::declared($crate::api_key::ApiKey::$variant).max_version;
        /// First flexible version (declared in `apis.rs`).
        pub const FLEXIBLE_MIN_VERSION: i16 =
            $crate::apis::declared($crate::api_key::ApiKey::$variant).flexible_min_version;
    };
}
pub(crate) use declared_versions;
