//! DescribeConfigs (key 32): a topic's configs (its overrides, else the broker's defaults) and
//! the broker's static configuration, as Kafka reports them.

use sluice_config::topic::{DefaultSource, TOPIC_CONFIGS};
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_configs::{
    self as msg, config_source, DescribeConfigsRequest, DescribeConfigsResource,
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
    DescribeConfigsSynonym,
};
use sluice_shard::{
    MetadataError, TopicImage, DYNAMIC_BROKER_CONFIGS, DYNAMIC_BROKER_CONFIG_DEFAULT,
};

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

/// The broker's static configuration, read-only, then its dynamic configs (the replication
/// throttle rates: set for this broker, else for the cluster, else Kafka's default). The empty
/// name is the cluster-wide dynamic default: the dynamic configs set there.
fn broker_configs(
    ctx: &ShardContext,
    resource: &DescribeConfigsResource,
    request: &DescribeConfigsRequest,
) -> Result<Vec<DescribeConfigsResourceResult>, MetadataError> {
    let image = ctx.image();
    let entry = |name: &str, value: String, read_only, source, config_type: i8, doc: &str| {
        DescribeConfigsResourceResult {
            name: name.to_string(),
            value: Some(value.clone()),
            read_only,
            config_source: source,
            is_sensitive: false,
            synonyms: if request.include_synonyms {
                vec![DescribeConfigsSynonym {
                    name: name.to_string(),
                    value: Some(value),
                    source,
                }]
            } else {
                Vec::new()
            },
            config_type,
            documentation: request.include_documentation.then(|| doc.to_string()),
        }
    };
    // Kafka's ConfigDef type LONG.
    let long = sluice_config::topic::ConfigType::Long.wire();
    let doc = "The replication throttle rate in bytes/s (Kafka's dynamic broker config).";
    if resource.resource_name.is_empty() {
        return Ok(DYNAMIC_BROKER_CONFIGS
            .iter()
            .filter(|name| wanted(resource, name))
            .filter_map(|name| {
                let value = image.broker_configs.get("")?.get(*name)?;
                let source = config_source::DYNAMIC_DEFAULT_BROKER_CONFIG;
                Some(entry(name, value.clone(), false, source, long, doc))
            })
            .collect());
    }
    check_broker_name(ctx, &resource.resource_name)?;
    let mut described: Vec<DescribeConfigsResourceResult> = ctx
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
            let mut e = entry(
                s.name,
                String::new(),
                true,
                source,
                s.config_type.wire(),
                s.doc,
            );
            e.value = s.value.clone();
            if let Some(synonym) = e.synonyms.first_mut() {
                synonym.value = s.value;
            }
            e
        })
        .collect();
    for name in DYNAMIC_BROKER_CONFIGS
        .iter()
        .filter(|name| wanted(resource, name))
    {
        let (value, source) = match image.dynamic_broker_config(ctx.config.node_id, name) {
            Some((value, false)) => (value.to_string(), config_source::DYNAMIC_BROKER_CONFIG),
            Some((value, true)) => (
                value.to_string(),
                config_source::DYNAMIC_DEFAULT_BROKER_CONFIG,
            ),
            None => (
                DYNAMIC_BROKER_CONFIG_DEFAULT.to_string(),
                config_source::DEFAULT_CONFIG,
            ),
        };
        described.push(entry(name, value, false, source, long, doc));
    }
    Ok(described)
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
