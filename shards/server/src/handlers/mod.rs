//! One module per Kafka API key. Each declares the versions it serves; `REGISTRY` lists them
//! all, and ApiVersions advertises exactly what is registered here — nothing more.

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

/// Declares a handler's `ENTRY`: the API key and versions its message module (`msg`) codes —
/// a handler serves every version the codec reads, no more.
macro_rules! served_versions {
    ($msg:ident) => {
        /// Registered versions.
        pub const ENTRY: $crate::handlers::HandlerEntry = $crate::handlers::HandlerEntry {
            api_key: $msg::API_KEY,
            min_version: $msg::MIN_VERSION,
            max_version: $msg::MAX_VERSION,
        };
    };
}
pub(crate) use served_versions;

/// A registered handler: API key and the version range it serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerEntry {
    /// The API key.
    pub api_key: i16,
    /// Lowest version served.
    pub min_version: i16,
    /// Highest version served.
    pub max_version: i16,
}

/// Every API this broker serves.
pub const REGISTRY: &[HandlerEntry] = &[
    produce::ENTRY,
    fetch::ENTRY,
    list_offsets::ENTRY,
    metadata::ENTRY,
    api_versions::ENTRY,
    create_topics::ENTRY,
    delete_topics::ENTRY,
    describe_cluster::ENTRY,
    init_producer_id::ENTRY,
    describe_configs::ENTRY,
    alter_configs::ENTRY,
    incremental_alter_configs::ENTRY,
    delete_records::ENTRY,
    create_partitions::ENTRY,
    offset_commit::ENTRY,
    offset_fetch::ENTRY,
    find_coordinator::ENTRY,
    join_group::ENTRY,
    heartbeat::ENTRY,
    leave_group::ENTRY,
    sync_group::ENTRY,
    describe_groups::ENTRY,
    list_groups::ENTRY,
    delete_groups::ENTRY,
    offset_delete::ENTRY,
    describe_log_dirs::ENTRY,
    describe_producers::ENTRY,
    describe_topic_partitions::ENTRY,
    describe_quorum::ENTRY,
    update_features::ENTRY,
];

/// The sentinel Kafka sends for "authorized operations not requested".
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_matches_what_the_codec_decodes() {
        let mut registered: Vec<(i16, i16, i16)> = REGISTRY
            .iter()
            .map(|e| (e.api_key, e.min_version, e.max_version))
            .collect();
        let mut decodable: Vec<(i16, i16, i16)> = sluice_protocol::api_key::SUPPORTED
            .iter()
            .map(|(key, min, max)| (key.as_i16(), *min, *max))
            .collect();
        registered.sort();
        decodable.sort();
        assert_eq!(registered, decodable);
    }
}
