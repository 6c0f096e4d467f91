//! DescribeCluster (key 60): the brokers, the cluster id and the controller, from the image.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_cluster::{
    self as msg, DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse,
};

use super::AUTHORIZED_OPERATIONS_OMITTED;
use crate::context::ShardContext;

super::served_versions!(msg);

/// `endpoint_type` 1: brokers (the only kind a broker listener describes).
const ENDPOINT_TYPE_BROKERS: i8 = 1;
/// Kafka's UNSUPPORTED_ENDPOINT_TYPE.
const UNSUPPORTED_ENDPOINT_TYPE: i16 = 119;

/// Answers DescribeCluster.
pub fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    let image = ctx.image();
    if request.endpoint_type != ENDPOINT_TYPE_BROKERS {
        return DescribeClusterResponse {
            error_code: UNSUPPORTED_ENDPOINT_TYPE,
            error_message: Some(format!(
                "endpoint type {} is not served by a broker listener",
                request.endpoint_type
            )),
            endpoint_type: request.endpoint_type,
            cluster_id: image.cluster_id.clone(),
            controller_id: -1,
            cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
            ..DescribeClusterResponse::default()
        };
    }
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.0,
        error_message: None,
        endpoint_type: ENDPOINT_TYPE_BROKERS,
        cluster_id: image.cluster_id.clone(),
        controller_id: image.controller_id,
        brokers: image
            .brokers
            .iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.node_id,
                host: b.host.clone(),
                port: b.port,
                rack: b.rack.clone(),
            })
            .collect(),
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}
