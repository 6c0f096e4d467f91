//! The controller quorum as brokers and tools see it: the feature levels Sluice supports and
//! how a change of level is checked (KIP-584's UpdateFeatures, as Kafka's FeatureControlManager
//! decides it), and the work a data shard forwards to the controller for DescribeQuorum and
//! UpdateFeatures.

use std::collections::BTreeMap;

use crate::{MetadataError, Reply};

/// `metadata.version`: the level of the metadata log's records.
pub const METADATA_VERSION: &str = "metadata.version";

/// Sluice's metadata records carry what Kafka's records carry at metadata.version 3.3-IV3
/// (feature level 7), the lowest level Kafka 4.x runs: topics, partitions with leader epochs,
/// broker registrations with fencing, configs, producer-id blocks. The levels above it add what
/// Sluice does not have (ZooKeeper migration, AlterPartition by topic id, JBOD directory
/// assignment, ELR, KIP-848 and KIP-890 records), so it is both the lowest and the highest.
pub const METADATA_VERSION_LEVEL: i16 = 7;

/// A feature with the range of levels Sluice supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SupportedFeature {
    /// Kafka's name.
    pub name: &'static str,
    /// Lowest supported level.
    pub min_level: i16,
    /// Highest supported level.
    pub max_level: i16,
}

/// KIP-966's feature; level 1 keeps eligible leader replicas.
pub const ELIGIBLE_LEADER_REPLICAS_VERSION: &str = "eligible.leader.replicas.version";
/// The ELR level Kafka 4.4 finalizes for a new cluster (its latest production level).
pub const ELIGIBLE_LEADER_REPLICAS_VERSION_LEVEL: i16 = 1;

/// Every production feature Kafka 4.4 defines, at the levels Sluice implements:
/// `metadata.version` and `eligible.leader.replicas.version` (KIP-966) above 0. Level 0 of
/// the others is "off": no dynamic quorum (`kraft.version`), no KIP-848 consumer groups
/// (`group.version`), no transactions (`transaction.version`), no share or streams groups.
/// Kafka ties ELR level 1 to metadata.version 4.0-IV1; Sluice's metadata records carry the
/// ELR fields at its own level (see `MetadataRecord::PartitionChange`), so it does not.
pub const SUPPORTED_FEATURES: &[SupportedFeature] = &[
    SupportedFeature {
        name: METADATA_VERSION,
        min_level: METADATA_VERSION_LEVEL,
        max_level: METADATA_VERSION_LEVEL,
    },
    SupportedFeature {
        name: "kraft.version",
        min_level: 0,
        max_level: 0,
    },
    SupportedFeature {
        name: "transaction.version",
        min_level: 0,
        max_level: 0,
    },
    SupportedFeature {
        name: "group.version",
        min_level: 0,
        max_level: 0,
    },
    SupportedFeature {
        name: ELIGIBLE_LEADER_REPLICAS_VERSION,
        min_level: 0,
        max_level: ELIGIBLE_LEADER_REPLICAS_VERSION_LEVEL,
    },
    SupportedFeature {
        name: "share.version",
        min_level: 0,
        max_level: 0,
    },
    SupportedFeature {
        name: "streams.version",
        min_level: 0,
        max_level: 0,
    },
];

/// The features ApiVersions lists as supported: as Kafka's BrokerFeatures, only those with a
/// level above 0.
pub fn advertised_features() -> impl Iterator<Item = &'static SupportedFeature> {
    SUPPORTED_FEATURES.iter().filter(|f| f.max_level > 0)
}

/// The finalized levels of a metadata log that has no FeatureLevel record yet: every Sluice
/// log was written at [`METADATA_VERSION_LEVEL`], and ELR is on as Kafka 4.4 bootstraps a new
/// cluster (a FeatureLevel record at 0 turns it off).
pub fn default_finalized_features() -> BTreeMap<String, i16> {
    BTreeMap::from([
        (METADATA_VERSION.to_string(), METADATA_VERSION_LEVEL),
        (
            ELIGIBLE_LEADER_REPLICAS_VERSION.to_string(),
            ELIGIBLE_LEADER_REPLICAS_VERSION_LEVEL,
        ),
    ])
}

/// How a level may move (UpdateFeatures' `upgrade_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpgradeType {
    /// Raise (or keep) the level.
    Upgrade,
    /// Lower it without losing metadata.
    SafeDowngrade,
    /// Lower it even if metadata is lost.
    UnsafeDowngrade,
    /// A value Kafka does not define.
    Unknown,
}

impl UpgradeType {
    /// From the wire value (1, 2, 3).
    pub fn from_i8(value: i8) -> UpgradeType {
        match value {
            1 => UpgradeType::Upgrade,
            2 => UpgradeType::SafeDowngrade,
            3 => UpgradeType::UnsafeDowngrade,
            _ => UpgradeType::Unknown,
        }
    }

    /// The wire value (0 for unknown).
    pub fn as_i8(self) -> i8 {
        match self {
            UpgradeType::Upgrade => 1,
            UpgradeType::SafeDowngrade => 2,
            UpgradeType::UnsafeDowngrade => 3,
            UpgradeType::Unknown => 0,
        }
    }
}

/// One requested change of a feature's finalized level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureUpdate {
    /// Feature name.
    pub name: String,
    /// The new level (0 removes the feature).
    pub level: i16,
    /// How it may move.
    pub upgrade_type: UpgradeType,
}

/// Checks one change against the supported ranges and the current finalized levels, in Kafka's
/// order and with Kafka's messages (`FeatureControlManager.updateFeature`, `QuorumFeatures`);
/// `node_id` is the deciding controller's. Every Sluice controller and broker runs the same
/// ranges, so the local check is the cluster's.
pub fn check_feature_update(
    node_id: i32,
    finalized: &BTreeMap<String, i16>,
    update: &FeatureUpdate,
) -> Result<(), String> {
    let invalid = |reason: String| {
        Err(format!(
            "Invalid update version {} for feature {}. {reason}",
            update.level, update.name
        ))
    };
    if update.upgrade_type == UpgradeType::Unknown {
        return invalid("The controller does not support the given upgrade type.".into());
    }
    let current = finalized.get(&update.name).copied().unwrap_or(0);
    if update.level < 0 {
        return invalid("A feature version cannot be less than 0.".into());
    }
    let Some(supported) = SUPPORTED_FEATURES.iter().find(|f| f.name == update.name) else {
        return invalid(format!(
            "Local controller {node_id} does not support this feature."
        ));
    };
    if !(supported.min_level..=supported.max_level).contains(&update.level) {
        let range = if supported.min_level == supported.max_level {
            supported.min_level.to_string()
        } else {
            format!("{}-{}", supported.min_level, supported.max_level)
        };
        return invalid(format!(
            "Local controller {node_id} only supports versions {range}"
        ));
    }
    if update.level < current && update.upgrade_type == UpgradeType::Upgrade {
        return invalid(
            "Can't downgrade the version of this feature without setting the upgrade type to \
             either safe or unsafe downgrade."
                .into(),
        );
    }
    if update.level > current && update.upgrade_type != UpgradeType::Upgrade {
        return invalid("Can't downgrade to a newer version.".into());
    }
    Ok(())
}

/// The top-level message Kafka's controller gives when one change of a request fails (the
/// whole request then fails, nothing is written).
pub fn update_failed_message(reason: &str) -> String {
    format!("The update failed for all features since the following feature had an error: {reason}")
}

/// UpdateFeatures forwarded to the active controller.
pub struct UpdateFeaturesWork {
    /// The changes, in request order.
    pub updates: Vec<FeatureUpdate>,
    /// Only check, change nothing.
    pub validate_only: bool,
    /// `Ok` when every change was applied (or would be); else the first refusal.
    pub reply: Reply<Result<(), MetadataError>>,
}

/// DescribeQuorum forwarded to the active controller.
pub struct DescribeQuorumWork {
    /// The quorum as the active controller sees it.
    pub reply: Reply<Result<QuorumInfo, MetadataError>>,
}

/// The controller quorum as its leader knows it (Kafka's QuorumInfo).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuorumInfo {
    /// The leader's node id.
    pub leader_id: i32,
    /// The leader epoch: the Raft term.
    pub leader_epoch: i32,
    /// The end of the committed log (the Raft commit index).
    pub high_watermark: i64,
    /// The voters.
    pub voters: Vec<QuorumReplica>,
    /// Brokers following the log.
    pub observers: Vec<QuorumReplica>,
    /// The voters' controller endpoints.
    pub endpoints: Vec<QuorumEndpoint>,
}

/// A replica of the metadata log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumReplica {
    /// Node id.
    pub node_id: i32,
    /// Its log end offset, -1 if unknown.
    pub log_end_offset: i64,
    /// The leader's wall-clock time (ms) when it last heard from it, -1 if never.
    pub last_fetch_ms: i64,
    /// The leader's wall-clock time (ms) when it was last caught up, -1 if never.
    pub last_caught_up_ms: i64,
}

/// A voter's controller listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumEndpoint {
    /// Node id.
    pub node_id: i32,
    /// Listener name.
    pub listener: String,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(name: &str, level: i16, upgrade_type: UpgradeType) -> FeatureUpdate {
        FeatureUpdate {
            name: name.into(),
            level,
            upgrade_type,
        }
    }

    #[test]
    fn updates_are_checked_as_kafka_checks_them() {
        let finalized = default_finalized_features();
        let check = |u: FeatureUpdate| check_feature_update(1, &finalized, &u);
        assert_eq!(
            check(update(METADATA_VERSION, 7, UpgradeType::Upgrade)),
            Ok(())
        );
        assert_eq!(
            check(update("group.version", 0, UpgradeType::SafeDowngrade)),
            Ok(())
        );
        assert_eq!(
            check(update("group.version", 1, UpgradeType::Upgrade)),
            Err(
                "Invalid update version 1 for feature group.version. Local controller 1 only \
                 supports versions 0"
                    .into()
            )
        );
        assert_eq!(
            check(update("foo.bar", 1, UpgradeType::Upgrade)),
            Err(
                "Invalid update version 1 for feature foo.bar. Local controller 1 does not \
                 support this feature."
                    .into()
            )
        );
        assert_eq!(
            check(update(METADATA_VERSION, 33, UpgradeType::Upgrade)),
            Err(
                "Invalid update version 33 for feature metadata.version. Local controller 1 \
                 only supports versions 7"
                    .into()
            )
        );
        assert!(
            check(update(METADATA_VERSION, 7, UpgradeType::Unknown)).is_err_and(
                |m| m.ends_with("The controller does not support the given upgrade type.")
            )
        );
        assert!(check(update(METADATA_VERSION, -1, UpgradeType::Upgrade))
            .is_err_and(|m| m.ends_with("A feature version cannot be less than 0.")));
        // ELR may be turned off (and on again), as in Kafka 4.4.
        assert_eq!(
            check(update(
                ELIGIBLE_LEADER_REPLICAS_VERSION,
                0,
                UpgradeType::SafeDowngrade
            )),
            Ok(())
        );
        assert!(check(update(
            ELIGIBLE_LEADER_REPLICAS_VERSION,
            2,
            UpgradeType::Upgrade
        ))
        .is_err_and(|m| m.ends_with("only supports versions 0-1")));
        let higher = BTreeMap::from([("group.version".to_string(), 1)]);
        assert!(check_feature_update(
            1,
            &higher,
            &update("group.version", 0, UpgradeType::Upgrade)
        )
        .is_err_and(|m| m.contains("without setting the upgrade type")));
    }

    #[test]
    fn only_features_above_level_zero_are_advertised() {
        let names: Vec<&str> = advertised_features().map(|f| f.name).collect();
        assert_eq!(
            names,
            vec![METADATA_VERSION, ELIGIBLE_LEADER_REPLICAS_VERSION]
        );
    }
}
