//! Metadata (key 3): brokers, topics and partition leaders, from this shard's metadata image.
//! Names a client asks for that do not exist are created first when auto-creation is on.
//! v13 is v12 plus the response's top-level `error_code`, always NONE here (as Kafka's broker).

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::metadata::{
    MetadataRequest, MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
    MetadataResponseTopic,
};
use sluice_shard::{MetadataError, MetadataImage, NewTopic, PartitionImage, TopicImage};
use tracing::warn;

use super::AUTHORIZED_OPERATIONS_OMITTED;
use crate::context::ShardContext;
use crate::controller_client;

/// Answers Metadata.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: MetadataRequest,
) -> MetadataResponse {
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;
    if allow_auto_create && ctx.config.auto_create_topics_enable {
        auto_create(ctx, &request).await;
    }
    let image = ctx.image();
    let topics = match &request.topics {
        None => image
            .topics
            .values()
            .map(|t| describe_topic(t, &image, version))
            .collect(),
        Some(wanted) => wanted
            .iter()
            .map(|w| lookup(&image, version, w.name.as_deref(), &w.topic_id))
            .collect(),
    };
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: brokers(&image),
        cluster_id: Some(image.cluster_id.clone()),
        // A live broker, not the active controller (see `client_controller_id`).
        controller_id: image.client_controller_id(),
        topics,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        // v13's top-level error (KIP-1102). Kafka's broker answers NONE: REBOOTSTRAP_REQUIRED is
        // for a server that knows the client's view is stale, which a broker serving its own
        // current image never is. Per-topic errors stay per topic.
        error_code: ErrorCode::NONE.0,
    }
}

/// Creates the requested topics that do not exist yet (valid names only, as Kafka does).
pub async fn auto_create(ctx: &ShardContext, request: &MetadataRequest) {
    let Some(wanted) = &request.topics else {
        return;
    };
    let image = ctx.image();
    let missing: Vec<NewTopic> = wanted
        .iter()
        .filter_map(|w| w.name.as_deref())
        .filter(|name| image.topic(name).is_none() && sluice_controller_name_ok(name))
        .map(|name| default_new_topic(ctx, name))
        .collect();
    if missing.is_empty() {
        return;
    }
    for result in controller_client::create_topics(&ctx.mesh, missing, false).await {
        match result {
            Ok(_) | Err(MetadataError::TopicAlreadyExists(_)) => {}
            Err(error) => warn!(%error, "auto topic creation failed"),
        }
    }
}

/// A topic with the broker's defaults, as auto-creation makes it (`__consumer_offsets` with its
/// own partitions and configs, as Kafka's auto-creation does).
pub fn default_new_topic(ctx: &ShardContext, name: &str) -> NewTopic {
    if name == sluice_group::GROUP_METADATA_TOPIC_NAME {
        return crate::group_router::offsets_topic_spec(ctx);
    }
    NewTopic {
        name: name.to_string(),
        num_partitions: ctx.config.num_partitions,
        replication_factor: ctx.config.default_replication_factor,
        configs: Vec::new(),
        assignments: None,
    }
}

/// Kafka's topic name rules, checked before asking the controller (it checks again).
fn sluice_controller_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 249
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')
}

/// The live brokers: a fenced or unregistered broker is not offered to clients.
fn brokers(image: &MetadataImage) -> Vec<MetadataResponseBroker> {
    image
        .brokers
        .iter()
        .map(|b| MetadataResponseBroker {
            node_id: b.node_id,
            host: b.host.clone(),
            port: b.port,
            rack: b.rack.clone(),
        })
        .collect()
}

fn lookup(
    image: &MetadataImage,
    version: i16,
    name: Option<&str>,
    topic_id: &Uuid,
) -> MetadataResponseTopic {
    let found = match name {
        Some(name) => image.topic(name),
        None => image.topic_by_id(topic_id),
    };
    match found {
        Some(topic) => describe_topic(topic, image, version),
        None => {
            let error = match name {
                Some(name) if !sluice_controller_name_ok(name) => {
                    ErrorCode::INVALID_TOPIC_EXCEPTION
                }
                Some(_) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                None => ErrorCode::UNKNOWN_TOPIC_ID,
            };
            MetadataResponseTopic {
                error_code: error.0,
                name: name.map(str::to_string),
                topic_id: *topic_id,
                topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
                ..MetadataResponseTopic::default()
            }
        }
    }
}

fn describe_topic(
    topic: &TopicImage,
    image: &MetadataImage,
    version: i16,
) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: ErrorCode::NONE.0,
        name: Some(topic.name.clone()),
        topic_id: topic.topic_id,
        is_internal: topic.name.starts_with("__"),
        partitions: topic
            .partitions
            .iter()
            .map(|p| describe_partition(p, image, version))
            .collect(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}

/// One partition as Kafka's KRaft metadata cache describes it (`getPartitionMetadata`):
/// replicas on brokers that are not live are offline; a leader that is not a live broker (-1
/// included) is shown as -1 with LEADER_NOT_AVAILABLE, so the client retries the metadata
/// rather than sending to it. Version 0 lists only live replicas and reports missing ones with
/// REPLICA_NOT_AVAILABLE (Kafka's `errorUnavailableEndpoints`).
fn describe_partition(
    p: &PartitionImage,
    image: &MetadataImage,
    version: i16,
) -> MetadataResponsePartition {
    let live = |ids: &[i32]| -> Vec<i32> {
        ids.iter()
            .copied()
            .filter(|id| image.is_live(*id))
            .collect()
    };
    let offline_replicas: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|id| !image.is_live(*id))
        .collect();
    let (replica_nodes, isr_nodes) = if version == 0 {
        (live(&p.replicas), live(&p.isr))
    } else {
        (p.replicas.clone(), p.isr.clone())
    };
    let (error, leader_id) = if !image.is_live(p.leader) {
        (ErrorCode::LEADER_NOT_AVAILABLE, -1)
    } else if replica_nodes.len() < p.replicas.len() || isr_nodes.len() < p.isr.len() {
        (ErrorCode::REPLICA_NOT_AVAILABLE, p.leader)
    } else {
        (ErrorCode::NONE, p.leader)
    };
    MetadataResponsePartition {
        error_code: error.0,
        partition_index: p.partition,
        leader_id,
        leader_epoch: p.leader_epoch,
        replica_nodes,
        isr_nodes,
        offline_replicas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::{cluster_image, single_node_image, LOCAL, OTHER};

    /// (error, leader, epoch, replicas, isr, offline) of each partition of "t".
    type Row = (ErrorCode, i32, i32, Vec<i32>, Vec<i32>, Vec<i32>);

    fn rows(image: &MetadataImage, version: i16) -> Vec<Row> {
        let topic = image.topic("t").expect("topic t");
        describe_topic(topic, image, version)
            .partitions
            .into_iter()
            .map(|p| {
                (
                    ErrorCode(p.error_code),
                    p.leader_id,
                    p.leader_epoch,
                    p.replica_nodes,
                    p.isr_nodes,
                    p.offline_replicas,
                )
            })
            .collect()
    }

    #[test]
    fn partitions_show_their_leaders_and_offline_replicas() {
        let image = cluster_image();
        assert_eq!(
            rows(&image, 12),
            vec![
                (ErrorCode::NONE, LOCAL, 5, vec![LOCAL], vec![LOCAL], vec![]),
                (ErrorCode::NONE, OTHER, 5, vec![OTHER], vec![OTHER], vec![]),
                // Leaderless, its replica on fenced broker 3.
                (
                    ErrorCode::LEADER_NOT_AVAILABLE,
                    -1,
                    5,
                    vec![3],
                    vec![],
                    vec![3]
                ),
                // Leaderless with its replica on this (live) broker.
                (
                    ErrorCode::LEADER_NOT_AVAILABLE,
                    -1,
                    5,
                    vec![LOCAL],
                    vec![],
                    vec![]
                ),
            ]
        );
    }

    #[test]
    fn a_leader_that_is_not_live_is_not_offered() {
        let mut image = cluster_image();
        // The leader field still names fenced broker 3 (the controller has not moved it yet).
        let mut topic = (**image.topic("t").expect("topic t")).clone();
        topic.partitions[2].leader = 3;
        image.put_topic(topic);
        let row = &rows(&image, 12)[2];
        assert_eq!((row.0, row.1), (ErrorCode::LEADER_NOT_AVAILABLE, -1));
    }

    #[test]
    fn version_0_lists_live_replicas_only() {
        let mut image = cluster_image();
        let mut topic = (**image.topic("t").expect("topic t")).clone();
        topic.partitions[0].replicas = vec![LOCAL, 3];
        topic.partitions[0].isr = vec![LOCAL, 3];
        image.put_topic(topic);
        assert_eq!(
            rows(&image, 1)[0],
            (
                ErrorCode::NONE,
                LOCAL,
                5,
                vec![LOCAL, 3],
                vec![LOCAL, 3],
                vec![3]
            )
        );
        assert_eq!(
            rows(&image, 0)[0],
            (
                ErrorCode::REPLICA_NOT_AVAILABLE,
                LOCAL,
                5,
                vec![LOCAL],
                vec![LOCAL],
                vec![3]
            )
        );
        assert_eq!(
            rows(&image, 0)[2],
            (
                ErrorCode::LEADER_NOT_AVAILABLE,
                -1,
                5,
                vec![],
                vec![],
                vec![3]
            )
        );
    }

    #[test]
    fn single_node_answers_as_before() {
        let image = single_node_image();
        for version in [0, 1, 12] {
            assert_eq!(
                rows(&image, version),
                vec![
                    (ErrorCode::NONE, LOCAL, 5, vec![LOCAL], vec![LOCAL], vec![]),
                    (ErrorCode::NONE, LOCAL, 5, vec![LOCAL], vec![LOCAL], vec![]),
                ]
            );
        }
        let ids: Vec<i32> = brokers(&image).iter().map(|b| b.node_id).collect();
        assert_eq!(ids, vec![LOCAL]);
        assert_eq!(image.client_controller_id(), LOCAL);
    }

    #[test]
    fn brokers_are_the_live_ones() {
        let image = cluster_image();
        let brokers: Vec<(i32, String, i32)> = brokers(&image)
            .into_iter()
            .map(|b| (b.node_id, b.host, b.port))
            .collect();
        assert_eq!(
            brokers,
            vec![
                (LOCAL, "broker-1".to_string(), 9091),
                (OTHER, "broker-2".to_string(), 9092)
            ]
        );
    }
}
