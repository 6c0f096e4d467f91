//! One module per Kafka API. Each declares its key and version range and defines
//! `XRequest` / `XResponse` with `decode(d, version)` and `encode(e, version)`.
//! Field names are Kafka's JSON schema names in snake_case; fields absent from a
//! version take the schema default when decoded and are skipped when encoded.

mod common;

pub mod alter_configs;
pub mod alter_partition_reassignments;
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
pub mod list_partition_reassignments;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod produce;
pub mod sync_group;
pub mod update_features;

use crate::error::{ProtocolError, Result};

/// Errors unless `min <= version <= max`.
pub(crate) fn check_version(api_key: i16, min: i16, max: i16, version: i16) -> Result<()> {
    if (min..=max).contains(&version) {
        Ok(())
    } else {
        Err(ProtocolError::UnsupportedVersion {
            api_key,
            api_version: version,
        })
    }
}
