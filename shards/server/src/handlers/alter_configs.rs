//! AlterConfigs (key 33): replaces a topic's whole set of config overrides. Topic changes go to
//! the controller as metadata records; broker configs are static in Sluice, so altering one is
//! refused as Kafka refuses a config it cannot update dynamically (INVALID_REQUEST).

use std::collections::BTreeMap;

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::alter_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterConfigsResourceResponse, AlterConfigsResponse,
};
use sluice_protocol::messages::describe_configs::{RESOURCE_BROKER, RESOURCE_TOPIC};
use sluice_shard::{
    BrokerConfigChanges, ConfigChange, ConfigOp, MetadataError, TopicConfigChanges,
};

use super::describe_configs::check_broker_name;
use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Answers AlterConfigs.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let resources = request
        .resources
        .iter()
        .map(|r| {
            Resource::new(r, |c| match &c.value {
                Some(value) => Ok(ConfigChange {
                    name: c.name.clone(),
                    op: ConfigOp::Set(value.clone()),
                }),
                None => Err(null_value(&c.name)),
            })
        })
        .collect();
    let results = alter(ctx, resources, true, request.validate_only).await;
    AlterConfigsResponse {
        throttle_time_ms: 0,
        responses: results,
    }
}

/// One resource of an AlterConfigs or IncrementalAlterConfigs request, its changes decoded.
pub struct Resource {
    /// Resource type.
    pub resource_type: i8,
    /// Resource name.
    pub resource_name: String,
    /// The changes, or why they cannot be read.
    pub changes: Result<Vec<ConfigChange>, MetadataError>,
}

impl Resource {
    /// A resource of either request, each config entry turned into a change by `change`; the
    /// first entry that cannot be is the whole resource's error.
    pub fn new<C>(
        resource: &AlterConfigsResource<C>,
        change: impl Fn(&C) -> Result<ConfigChange, MetadataError>,
    ) -> Resource {
        Resource {
            resource_type: resource.resource_type,
            resource_name: resource.resource_name.clone(),
            changes: resource.configs.iter().map(change).collect(),
        }
    }
}

/// Kafka's answer to a null value where one is needed.
pub fn null_value(name: &str) -> MetadataError {
    MetadataError::InvalidRequest(format!("Null value not supported for : {name}"))
}

/// Checks and performs the changes of both alter APIs; one response per resource, in order.
pub async fn alter(
    ctx: &ShardContext,
    resources: Vec<Resource>,
    replace_all: bool,
    validate_only: bool,
) -> Vec<AlterConfigsResourceResponse> {
    let mut seen: BTreeMap<(i8, &str), usize> = BTreeMap::new();
    for r in &resources {
        *seen.entry((r.resource_type, &r.resource_name)).or_default() += 1;
    }
    let mut topics = Vec::new();
    let mut brokers = Vec::new();
    let mut plan: Vec<Result<Slot, MetadataError>> = Vec::with_capacity(resources.len());
    for r in &resources {
        if seen[&(r.resource_type, r.resource_name.as_str())] > 1 {
            plan.push(Err(MetadataError::InvalidRequest(format!(
                "Error due to duplicate resource: type {} name {}",
                r.resource_type, r.resource_name
            ))));
            continue;
        }
        let changes = match &r.changes {
            Ok(changes) => changes,
            Err(error) => {
                plan.push(Err(error.clone()));
                continue;
            }
        };
        plan.push(match r.resource_type {
            RESOURCE_TOPIC => {
                topics.push(TopicConfigChanges {
                    topic: r.resource_name.clone(),
                    changes: changes.clone(),
                    replace_all,
                });
                Ok(Slot::Topic(topics.len() - 1))
            }
            RESOURCE_BROKER => check_broker_change(ctx, &r.resource_name, changes).map(|()| {
                brokers.push(BrokerConfigChanges {
                    resource_name: r.resource_name.clone(),
                    changes: changes.clone(),
                    replace_all,
                });
                Slot::Broker(brokers.len() - 1)
            }),
            other => Err(MetadataError::InvalidRequest(format!(
                "Unsupported resource type {other}"
            ))),
        });
    }
    let results = if topics.is_empty() {
        Vec::new()
    } else {
        controller_client::alter_configs(&ctx.mesh, topics, validate_only).await
    };
    let broker_results = if brokers.is_empty() {
        Vec::new()
    } else {
        controller_client::alter_broker_configs(&ctx.mesh, brokers, validate_only).await
    };
    resources
        .iter()
        .zip(plan)
        .map(|(r, slot)| {
            let outcome = match slot {
                Ok(Slot::Broker(i)) => broker_results[i].clone(),
                Ok(Slot::Topic(i)) => results[i].clone(),
                Err(error) => Err(error),
            };
            let (error_code, error_message) = match outcome {
                Ok(()) => (ErrorCode::NONE.0, None),
                Err(error) => (metadata_error_code(&error).0, Some(error.to_string())),
            };
            AlterConfigsResourceResponse {
                error_code,
                error_message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
            }
        })
        .collect()
}

/// Where a resource's result comes from: the topic or broker changes sent to the controller.
enum Slot {
    Topic(usize),
    Broker(usize),
}

/// A broker resource must name this broker (or be the cluster-wide default, empty). An empty
/// change set is accepted; the controller checks the names and values (only the replication
/// throttle rates change at run time).
fn check_broker_change(
    ctx: &ShardContext,
    name: &str,
    _changes: &[ConfigChange],
) -> Result<(), MetadataError> {
    if !name.is_empty() {
        check_broker_name(ctx, name)?;
    }
    Ok(())
}
