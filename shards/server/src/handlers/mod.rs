//! One module per Kafka API key, each with the `handle` function `dispatch` calls. Which APIs
//! and versions are served is declared once, in `sluice_protocol::apis`: ApiVersions advertises
//! that table (`SUPPORTED`), the decoder refuses versions outside it, and `dispatch` matches
//! exhaustively on the `RequestBody` it generates, so a declared API without a handler here does
//! not compile (and `tests/served_apis.rs` checks every advertised version end to end).

pub mod alter_configs;
pub mod api_versions;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_cluster;
pub mod describe_configs;
pub mod describe_groups;
pub mod describe_log_dirs;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_topic_partitions;
pub mod elect_leaders;
pub mod fetch;
pub mod find_coordinator;
pub mod heartbeat;
pub mod incremental_alter_configs;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod partition_reassignments;
pub mod produce;
pub mod sync_group;
pub mod unsupported;
pub mod update_features;

/// Who sent a request, as group membership records it.
#[derive(Clone, Debug, Default)]
pub struct ClientInfo {
    /// The request header's client id ("" when null).
    pub client_id: String,
    /// The peer address as Kafka prints it: "/" + IP.
    pub client_host: String,
}

/// The sentinel Kafka sends for "authorized operations not requested".
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;
