//! DescribeCluster (key 60): the live brokers, the cluster id and the controller, from the
//! image. As a KRaft broker in Kafka, the "controller" told to clients is a live broker
//! (`MetadataImage::client_controller_id`): clients cannot reach the controller quorum.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_cluster::{
    self as msg, DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse,
};

use sluice_shard::MetadataImage;

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
    describe(&ctx.image(), request)
}

fn describe(image: &MetadataImage, request: &DescribeClusterRequest) -> DescribeClusterResponse {
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
        controller_id: image.client_controller_id(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::{broker, cluster_image, single_node_image, LOCAL, OTHER};

    fn request() -> DescribeClusterRequest {
        DescribeClusterRequest {
            endpoint_type: ENDPOINT_TYPE_BROKERS,
            ..DescribeClusterRequest::default()
        }
    }

    fn ids(response: &DescribeClusterResponse) -> Vec<i32> {
        response.brokers.iter().map(|b| b.broker_id).collect()
    }

    #[test]
    fn live_brokers_and_a_live_broker_as_controller() {
        let mut image = cluster_image();
        let response = describe(&image, &request());
        assert_eq!(ids(&response), vec![LOCAL, OTHER]);
        assert_eq!(response.controller_id, LOCAL);
        assert_eq!(response.cluster_id, "cluster");
        assert_eq!(
            (response.brokers[1].host.as_str(), response.brokers[1].port),
            ("broker-2", 9092)
        );
        // This broker fenced: the lowest live broker stands in.
        image.brokers = vec![broker(OTHER), broker(4)];
        let response = describe(&image, &request());
        assert_eq!(ids(&response), vec![OTHER, 4]);
        assert_eq!(response.controller_id, OTHER);
        image.brokers.clear();
        assert_eq!(describe(&image, &request()).controller_id, -1);
    }

    #[test]
    fn single_node_answers_as_before() {
        let response = describe(&single_node_image(), &request());
        assert_eq!(ids(&response), vec![LOCAL]);
        assert_eq!(response.controller_id, LOCAL);
        assert_eq!(response.error_code, ErrorCode::NONE.0);
    }
}
