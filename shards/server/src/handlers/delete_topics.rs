//! DeleteTopics (key 20): by name (all versions) or by id (v6+), through the controller.

use sluice_protocol::codec::Uuid;
use sluice_protocol::messages::delete_topics::{
    DeletableTopicResult, DeleteTopicsRequest, DeleteTopicsResponse,
};
use sluice_shard::TopicRef;

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Answers DeleteTopics.
pub async fn handle(
    ctx: &ShardContext,
    version: i16,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let refs: Vec<TopicRef> = if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| match &t.name {
                Some(name) => TopicRef::Name(name.clone()),
                None => TopicRef::Id(t.topic_id),
            })
            .collect()
    } else {
        request
            .topic_names
            .iter()
            .cloned()
            .map(TopicRef::Name)
            .collect()
    };
    let results = controller_client::delete_topics(&ctx.mesh, refs.clone()).await;
    let responses = refs
        .iter()
        .zip(results)
        .map(|(asked, result)| {
            let (name, topic_id) = match asked {
                TopicRef::Name(name) => (Some(name.clone()), Uuid::ZERO),
                TopicRef::Id(id) => (None, *id),
            };
            match result {
                Ok(deleted) => DeletableTopicResult {
                    name: Some(deleted.name),
                    topic_id: deleted.topic_id,
                    error_code: 0,
                    error_message: None,
                },
                Err(error) => DeletableTopicResult {
                    name,
                    topic_id,
                    error_code: metadata_error_code(&error).0,
                    error_message: Some(error.to_string()),
                },
            }
        })
        .collect();
    DeleteTopicsResponse {
        throttle_time_ms: 0,
        responses,
    }
}
