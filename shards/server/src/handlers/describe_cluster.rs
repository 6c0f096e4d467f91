//! DescribeCluster (key 60): the live brokers, the cluster id and the controller, from the
//! image. As a KRaft broker in Kafka, the "controller" told to clients is a live broker
//! (`MetadataImage::client_controller_id`): clients cannot reach the controller quorum.
//!
//! v2 (KIP-1073): with `include_fenced_brokers` the registered but fenced brokers are listed
//! too, each marked `is_fenced`, as Kafka's KafkaApis lists every registered broker instead of
//! only the live ones.
//!
//! `endpoint_type` as Kafka's AuthHelper checks it on a broker listener: 2 (controllers) is
//! MISMATCHED_ENDPOINT_TYPE, any other value but 1 UNSUPPORTED_ENDPOINT_TYPE; the error answer
//! carries nothing else.

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_cluster::{
    DescribeClusterBroker, DescribeClusterRequest, DescribeClusterResponse, ENDPOINT_TYPE_BROKERS,
    ENDPOINT_TYPE_CONTROLLERS,
};

use sluice_shard::{BrokerImage, MetadataImage};

use super::AUTHORIZED_OPERATIONS_OMITTED;
use crate::context::ShardContext;

/// Answers DescribeCluster.
pub fn handle(
    ctx: &ShardContext,
    version: i16,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    describe(&ctx.image(), version, request)
}

fn describe(
    image: &MetadataImage,
    version: i16,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    if request.endpoint_type != ENDPOINT_TYPE_BROKERS {
        let (code, message) = if request.endpoint_type == ENDPOINT_TYPE_CONTROLLERS {
            (
                ErrorCode::MISMATCHED_ENDPOINT_TYPE,
                "controllers are described on the controller listener, not on a broker's"
                    .to_string(),
            )
        } else {
            (
                ErrorCode::UNSUPPORTED_ENDPOINT_TYPE,
                format!("no endpoint type {}", request.endpoint_type),
            )
        };
        // Kafka answers v0 with INVALID_REQUEST (only reachable by a struct built by hand:
        // v0 carries no endpoint type, so it decodes as 1).
        let code = if version == 0 {
            ErrorCode::INVALID_REQUEST
        } else {
            code
        };
        return DescribeClusterResponse {
            error_code: code.0,
            error_message: Some(message),
            ..DescribeClusterResponse::default()
        };
    }
    let include_fenced = version >= 2 && request.include_fenced_brokers;
    let mut brokers: Vec<DescribeClusterBroker> =
        image.brokers.iter().map(|b| broker(b, false)).collect();
    if include_fenced {
        brokers.extend(image.fenced_brokers.iter().map(|b| broker(b, true)));
        brokers.sort_by_key(|b| b.broker_id);
    }
    DescribeClusterResponse {
        throttle_time_ms: 0,
        error_code: ErrorCode::NONE.0,
        error_message: None,
        endpoint_type: ENDPOINT_TYPE_BROKERS,
        cluster_id: image.cluster_id.clone(),
        controller_id: image.client_controller_id(),
        brokers,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
    }
}

fn broker(b: &BrokerImage, is_fenced: bool) -> DescribeClusterBroker {
    DescribeClusterBroker {
        broker_id: b.node_id,
        host: b.host.clone(),
        port: b.port,
        rack: b.rack.clone(),
        is_fenced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadership::tests::{
        broker as image_broker, cluster_image, single_node_image, LOCAL, OTHER,
    };

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
        let response = describe(&image, 1, &request());
        assert_eq!(ids(&response), vec![LOCAL, OTHER]);
        assert_eq!(response.controller_id, LOCAL);
        assert_eq!(response.cluster_id, "cluster");
        assert_eq!(
            (response.brokers[1].host.as_str(), response.brokers[1].port),
            ("broker-2", 9092)
        );
        // This broker fenced: the lowest live broker stands in.
        image.brokers = vec![image_broker(OTHER), image_broker(4)];
        let response = describe(&image, 1, &request());
        assert_eq!(ids(&response), vec![OTHER, 4]);
        assert_eq!(response.controller_id, OTHER);
        image.brokers.clear();
        assert_eq!(describe(&image, 1, &request()).controller_id, -1);
    }

    #[test]
    fn single_node_answers_as_before() {
        let response = describe(&single_node_image(), 0, &request());
        assert_eq!(ids(&response), vec![LOCAL]);
        assert_eq!(response.controller_id, LOCAL);
        assert_eq!(response.error_code, ErrorCode::NONE.0);
    }

    #[test]
    fn fenced_brokers_are_listed_only_when_v2_asks_for_them() {
        let mut image = cluster_image();
        image.fenced_brokers = vec![image_broker(0), image_broker(3)];
        let asking = DescribeClusterRequest {
            include_fenced_brokers: true,
            ..request()
        };
        let response = describe(&image, 2, &asking);
        let marked: Vec<(i32, bool)> = response
            .brokers
            .iter()
            .map(|b| (b.broker_id, b.is_fenced))
            .collect();
        assert_eq!(
            marked,
            vec![(0, true), (LOCAL, false), (OTHER, false), (3, true)]
        );
        // The controller told is still a live broker.
        assert_eq!(response.controller_id, LOCAL);
        // Not asked, or asked below v2 (the flag is not on the wire there): live ones only.
        for (version, req) in [(2, request()), (1, asking.clone())] {
            let response = describe(&image, version, &req);
            assert_eq!(ids(&response), vec![LOCAL, OTHER], "v{version}");
            assert!(response.brokers.iter().all(|b| !b.is_fenced));
        }
    }

    #[test]
    fn other_endpoint_types_are_refused_as_kafka_refuses_them() {
        let image = cluster_image();
        let controllers = DescribeClusterRequest {
            endpoint_type: ENDPOINT_TYPE_CONTROLLERS,
            ..request()
        };
        let response = describe(&image, 2, &controllers);
        assert_eq!(response.error_code, ErrorCode::MISMATCHED_ENDPOINT_TYPE.0);
        assert!(response.brokers.is_empty() && response.cluster_id.is_empty());
        assert_eq!(response.controller_id, -1);
        let unknown = DescribeClusterRequest {
            endpoint_type: 7,
            ..request()
        };
        let response = describe(&image, 1, &unknown);
        assert_eq!(response.error_code, ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.0);
        assert!(response.error_message.is_some());
    }
}
