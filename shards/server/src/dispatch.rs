//! Decodes one request frame, runs its handler, and encodes the response frame.

use bytes::BytesMut;
use sluice_protocol::request::{
    decode_request_owned, encode_response_vectored, RequestBody, ResponseBody,
};
use sluice_protocol::Segment;
use tracing::info;

use crate::context::ShardContext;
use crate::handlers;

/// What to do after a request.
pub enum Outcome {
    /// Write this response frame, given as segments: record data stays in the buffers it was
    /// read into and goes to the socket without another copy.
    Respond(Vec<Segment>),
    /// Nothing to write (Produce with acks=0).
    NoResponse,
    /// The request cannot be answered in its own format; close the connection.
    Close,
}

/// Handles one request frame from the peer at `client_host` ("/" + IP).
///
/// The decoder accepts exactly the APIs and versions declared in `sluice_protocol::apis` (what
/// ApiVersions advertises) and anything else is answered by `handlers::unsupported`. The match
/// below has no wildcard arm on purpose: `RequestBody` is generated from that declaration, so
/// an API declared there without a handler here is a compile error.
pub async fn dispatch(ctx: &ShardContext, frame: BytesMut, client_host: &str) -> Outcome {
    let (header, request) = match decode_request_owned(frame) {
        Ok(decoded) => decoded,
        Err(error) => return handlers::unsupported::answer(&error),
    };
    let version = header.api_version;
    let response = match request {
        RequestBody::ApiVersions(r) => {
            ResponseBody::ApiVersions(handlers::api_versions::handle(ctx, version, &r))
        }
        RequestBody::Metadata(r) => {
            ResponseBody::Metadata(handlers::metadata::handle(ctx, version, r).await)
        }
        RequestBody::Produce(r) => match handlers::produce::handle(ctx, version, r).await {
            Some(response) => ResponseBody::Produce(response),
            None => return Outcome::NoResponse,
        },
        RequestBody::Fetch(r) => match handlers::fetch::handle(ctx, version, r).await {
            Ok(response) => ResponseBody::Fetch(response),
            Err(reason) => {
                info!(client_id = ?header.client_id, reason, "fetch refused; closing connection");
                return Outcome::Close;
            }
        },
        RequestBody::ListOffsets(r) => {
            ResponseBody::ListOffsets(handlers::list_offsets::handle(ctx, version, r).await)
        }
        RequestBody::CreateTopics(r) => {
            ResponseBody::CreateTopics(handlers::create_topics::handle(ctx, version, r).await)
        }
        RequestBody::DeleteTopics(r) => {
            ResponseBody::DeleteTopics(handlers::delete_topics::handle(ctx, version, r).await)
        }
        RequestBody::DescribeCluster(r) => {
            ResponseBody::DescribeCluster(handlers::describe_cluster::handle(ctx, version, &r))
        }
        RequestBody::InitProducerId(r) => {
            ResponseBody::InitProducerId(handlers::init_producer_id::handle(ctx, version, r).await)
        }
        RequestBody::DescribeConfigs(r) => {
            ResponseBody::DescribeConfigs(handlers::describe_configs::handle(ctx, version, &r))
        }
        RequestBody::AlterConfigs(r) => {
            ResponseBody::AlterConfigs(handlers::alter_configs::handle(ctx, version, r).await)
        }
        RequestBody::IncrementalAlterConfigs(r) => ResponseBody::IncrementalAlterConfigs(
            handlers::incremental_alter_configs::handle(ctx, version, r).await,
        ),
        RequestBody::CreatePartitions(r) => ResponseBody::CreatePartitions(
            handlers::create_partitions::handle(ctx, version, r).await,
        ),
        RequestBody::ElectLeaders(r) => {
            ResponseBody::ElectLeaders(handlers::elect_leaders::handle(ctx, version, r).await)
        }
        RequestBody::AlterPartitionReassignments(r) => ResponseBody::AlterPartitionReassignments(
            handlers::partition_reassignments::handle_alter(ctx, version, r).await,
        ),
        RequestBody::ListPartitionReassignments(r) => ResponseBody::ListPartitionReassignments(
            handlers::partition_reassignments::handle_list(ctx, version, r).await,
        ),
        RequestBody::DeleteRecords(r) => {
            ResponseBody::DeleteRecords(handlers::delete_records::handle(ctx, version, r).await)
        }
        RequestBody::FindCoordinator(r) => {
            ResponseBody::FindCoordinator(handlers::find_coordinator::handle(ctx, version, r).await)
        }
        RequestBody::JoinGroup(r) => {
            let client = handlers::ClientInfo {
                client_id: header.client_id.clone().unwrap_or_default(),
                client_host: client_host.to_string(),
            };
            ResponseBody::JoinGroup(handlers::join_group::handle(ctx, version, r, &client).await)
        }
        RequestBody::SyncGroup(r) => {
            ResponseBody::SyncGroup(handlers::sync_group::handle(ctx, version, r).await)
        }
        RequestBody::Heartbeat(r) => {
            ResponseBody::Heartbeat(handlers::heartbeat::handle(ctx, version, r).await)
        }
        RequestBody::LeaveGroup(r) => {
            ResponseBody::LeaveGroup(handlers::leave_group::handle(ctx, version, r).await)
        }
        RequestBody::OffsetCommit(r) => {
            ResponseBody::OffsetCommit(handlers::offset_commit::handle(ctx, version, r).await)
        }
        RequestBody::OffsetFetch(r) => {
            ResponseBody::OffsetFetch(handlers::offset_fetch::handle(ctx, version, r).await)
        }
        RequestBody::ListGroups(r) => {
            ResponseBody::ListGroups(handlers::list_groups::handle(ctx, version, r).await)
        }
        RequestBody::DescribeGroups(r) => {
            ResponseBody::DescribeGroups(handlers::describe_groups::handle(ctx, version, r).await)
        }
        RequestBody::DeleteGroups(r) => {
            ResponseBody::DeleteGroups(handlers::delete_groups::handle(ctx, version, r).await)
        }
        RequestBody::OffsetDelete(r) => {
            ResponseBody::OffsetDelete(handlers::offset_delete::handle(ctx, version, r).await)
        }
        RequestBody::DescribeLogDirs(r) => ResponseBody::DescribeLogDirs(
            handlers::describe_log_dirs::handle(ctx, version, r).await,
        ),
        RequestBody::DescribeProducers(r) => ResponseBody::DescribeProducers(
            handlers::describe_producers::handle(ctx, version, r).await,
        ),
        RequestBody::DescribeTopicPartitions(r) => ResponseBody::DescribeTopicPartitions(
            handlers::describe_topic_partitions::handle(ctx, version, &r),
        ),
        RequestBody::DescribeQuorum(r) => {
            ResponseBody::DescribeQuorum(handlers::describe_quorum::handle(ctx, version, &r).await)
        }
        RequestBody::UpdateFeatures(r) => {
            ResponseBody::UpdateFeatures(handlers::update_features::handle(ctx, version, r).await)
        }
    };
    Outcome::Respond(encode_response_vectored(
        header.correlation_id,
        header.api_key,
        version,
        &response,
    ))
}
