//! Metadata (key 3): brokers, topics and partition leaders, from this shard's metadata image.
//! Names a client asks for that do not exist are created first when auto-creation is on.

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::metadata::{
    self as msg, MetadataRequest, MetadataResponse, MetadataResponseBroker,
    MetadataResponsePartition, MetadataResponseTopic,
};
use sluice_shard::{MetadataError, MetadataImage, NewTopic, TopicImage};
use tracing::warn;

use super::AUTHORIZED_OPERATIONS_OMITTED;
use crate::context::ShardContext;
use crate::controller_client;

super::served_versions!(msg);

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
            .map(|t| describe_topic(t, &image))
            .collect(),
        Some(wanted) => wanted
            .iter()
            .map(|w| lookup(&image, w.name.as_deref(), &w.topic_id))
            .collect(),
    };
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: brokers(&image),
        cluster_id: Some(image.cluster_id.clone()),
        controller_id: image.controller_id,
        topics,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
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
    for result in controller_client::create_topics(ctx, missing, false).await {
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

fn lookup(image: &MetadataImage, name: Option<&str>, topic_id: &Uuid) -> MetadataResponseTopic {
    let found = match name {
        Some(name) => image.topic(name),
        None => image.topic_by_id(topic_id),
    };
    match found {
        Some(topic) => describe_topic(topic, image),
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

fn describe_topic(topic: &TopicImage, _image: &MetadataImage) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: ErrorCode::NONE.0,
        name: Some(topic.name.clone()),
        topic_id: topic.topic_id,
        is_internal: topic.name.starts_with("__"),
        partitions: topic
            .partitions
            .iter()
            .map(|p| MetadataResponsePartition {
                error_code: ErrorCode::NONE.0,
                partition_index: p.partition,
                leader_id: p.leader,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.isr.clone(),
                offline_replicas: Vec::new(),
            })
            .collect(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}
