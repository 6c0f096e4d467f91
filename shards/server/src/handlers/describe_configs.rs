//! DescribeConfigs (key 32): a topic's configs (its overrides, else the broker's defaults) and
//! the broker's static configuration, as Kafka reports them.

use sluice_config::topic::{DefaultSource, TOPIC_CONFIGS};
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_configs::{
    self as msg, config_source, DescribeConfigsRequest, DescribeConfigsResource,
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
    DescribeConfigsSynonym,
};
use sluice_shard::{MetadataError, TopicImage};

use crate::context::ShardContext;
use crate::error::metadata_error_code;

/// Answers DescribeConfigs.
pub fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: &DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let image = ctx.image();
    let results = request
        .resources
        .iter()
        .map(|resource| {
            let described = match resource.resource_type {
                msg::RESOURCE_TOPIC => match image.topic(&resource.resource_name) {
                    Some(topic) => Ok(topic_configs(ctx, topic, resource, request)),
                    None => Err(MetadataError::UnknownTopicOrPartition),
                },
                msg::RESOURCE_BROKER => broker_configs(ctx, resource, request),
                other => Err(MetadataError::InvalidRequest(format!(
                    "Unsupported resource type {other}"
                ))),
            };
            match described {
                Ok(configs) => DescribeConfigsResult {
                    error_code: ErrorCode::NONE.0,
                    error_message: None,
                    resource_type: resource.resource_type,
                    resource_name: resource.resource_name.clone(),
                    configs,
                },
                Err(error) => DescribeConfigsResult {
                    error_code: metadata_error_code(&error).0,
                    error_message: Some(error.to_string()),
                    resource_type: resource.resource_type,
                    resource_name: resource.resource_name.clone(),
                    configs: Vec::new(),
                },
            }
        })
        .collect();
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results,
    }
}

fn wanted(resource: &DescribeConfigsResource, name: &str) -> bool {
    resource
        .configuration_keys
        .as_ref()
        .is_none_or(|keys| keys.iter().any(|k| k == name))
}

/// Every topic config Kafka lists: the topic's override (DYNAMIC_TOPIC_CONFIG) or the default,
/// from the broker's configuration (STATIC_BROKER_CONFIG) or Kafka's own (DEFAULT_CONFIG).
/// Synonyms go from most to least specific, as Kafka orders them.
pub fn topic_configs(
    ctx: &ShardContext,
    topic: &TopicImage,
    resource: &DescribeConfigsResource,
    request: &DescribeConfigsRequest,
) -> Vec<DescribeConfigsResourceResult> {
    TOPIC_CONFIGS
        .iter()
        .filter(|def| wanted(resource, def.name))
        .map(|def| {
            let (default, default_source) = ctx.config.topic_default(def);
            let overridden = topic.configs.get(def.name);
            let mut synonyms = Vec::new();
            if let Some(value) = overridden {
                synonyms.push(DescribeConfigsSynonym {
                    name: def.name.to_string(),
                    value: Some(value.clone()),
                    source: config_source::DYNAMIC_TOPIC_CONFIG,
                });
            }
            let broker_name = def.broker_synonym.unwrap_or(def.name);
            if default_source == DefaultSource::StaticBroker {
                synonyms.push(DescribeConfigsSynonym {
                    name: broker_name.to_string(),
                    value: Some(default.clone()),
                    source: config_source::STATIC_BROKER_CONFIG,
                });
            }
            synonyms.push(DescribeConfigsSynonym {
                name: broker_name.to_string(),
                value: Some(def.default.to_string()),
                source: config_source::DEFAULT_CONFIG,
            });
            let config_source = synonyms[0].source;
            DescribeConfigsResourceResult {
                name: def.name.to_string(),
                value: Some(overridden.cloned().unwrap_or(default)),
                read_only: false,
                config_source,
                is_sensitive: false,
                synonyms: if request.include_synonyms {
                    synonyms
                } else {
                    Vec::new()
                },
                config_type: def.config_type.wire(),
                documentation: request.include_documentation.then(|| def.doc.to_string()),
            }
        })
        .collect()
}

/// The broker's static configuration, read-only (Sluice changes no broker setting at run
/// time). The empty name is the cluster-wide dynamic default, which has no entries.
fn broker_configs(
    ctx: &ShardContext,
    resource: &DescribeConfigsResource,
    request: &DescribeConfigsRequest,
) -> Result<Vec<DescribeConfigsResourceResult>, MetadataError> {
    if resource.resource_name.is_empty() {
        return Ok(Vec::new());
    }
    check_broker_name(ctx, &resource.resource_name)?;
    Ok(ctx
        .config
        .described_settings()
        .into_iter()
        .filter(|s| wanted(resource, s.name))
        .map(|s| {
            let source = if s.is_default {
                config_source::DEFAULT_CONFIG
            } else {
                config_source::STATIC_BROKER_CONFIG
            };
            DescribeConfigsResourceResult {
                name: s.name.to_string(),
                value: s.value.clone(),
                read_only: true,
                config_source: source,
                is_sensitive: false,
                synonyms: if request.include_synonyms {
                    vec![DescribeConfigsSynonym {
                        name: s.name.to_string(),
                        value: s.value,
                        source,
                    }]
                } else {
                    Vec::new()
                },
                config_type: s.config_type.wire(),
                documentation: request.include_documentation.then(|| s.doc.to_string()),
            }
        })
        .collect())
}

/// A broker resource must name this broker (Kafka: "Unexpected broker id").
pub fn check_broker_name(ctx: &ShardContext, name: &str) -> Result<(), MetadataError> {
    if name.parse::<i32>().ok() == Some(ctx.config.node_id) {
        Ok(())
    } else {
        Err(MetadataError::InvalidRequest(format!(
            "Unexpected broker id, expected {} or empty string, but received {name}",
            ctx.config.node_id
        )))
    }
}
