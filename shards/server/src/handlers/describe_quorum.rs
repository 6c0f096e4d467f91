//! DescribeQuorum (key 55): the controller quorum, as `kafka-metadata-quorum describe` shows it.
//! As a Kafka broker does, the request goes to the active controller (Sluice's controller RPC),
//! which answers from its Raft state: leader, term (the leader epoch), commit index (the high
//! watermark), each voter's matched index and when the leader last heard from it and saw it
//! caught up, and the brokers following the log as observers.
//!
//! Only `__cluster_metadata` partition 0 exists; anything else is UNKNOWN_TOPIC_OR_PARTITION,
//! as KafkaRaftClient answers. Voters have no directory id in Sluice (zero, as a KRaft voter
//! of a static quorum without one).

use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_quorum::{
    DescribeQuorumListener, DescribeQuorumNode, DescribeQuorumPartition, DescribeQuorumRequest,
    DescribeQuorumResponse, DescribeQuorumTopicResponse, ReplicaState, METADATA_TOPIC_NAME,
};
use sluice_protocol::Uuid;
use sluice_shard::{MetadataError, QuorumInfo, QuorumReplica};

use crate::context::ShardContext;
use crate::controller_client;
use crate::error::metadata_error_code;

/// Answers DescribeQuorum.
pub async fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: &DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    if !asks_for_the_metadata_partition(request) {
        return partition_error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None);
    }
    match controller_client::describe_quorum(&ctx.mesh).await {
        Ok(info) => describe(&info),
        Err(error) => {
            // No active controller answered: Kafka's leader-less answer.
            let code = match error {
                MetadataError::ControllerNotAvailable => ErrorCode::NOT_LEADER_OR_FOLLOWER,
                ref other => metadata_error_code(other),
            };
            partition_error(code, Some(error.to_string()))
        }
    }
}

/// KafkaRaftClient's `hasValidTopicPartition`: exactly one topic, `__cluster_metadata`, with
/// exactly partition 0.
fn asks_for_the_metadata_partition(request: &DescribeQuorumRequest) -> bool {
    matches!(request.topics.as_slice(), [topic]
        if topic.topic_name == METADATA_TOPIC_NAME && topic.partitions == [0])
}

fn partition_error(code: ErrorCode, message: Option<String>) -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        topics: vec![DescribeQuorumTopicResponse {
            topic_name: METADATA_TOPIC_NAME.to_string(),
            partitions: vec![DescribeQuorumPartition {
                partition_index: 0,
                error_code: code.0,
                error_message: message,
                leader_id: -1,
                leader_epoch: -1,
                high_watermark: -1,
                ..Default::default()
            }],
        }],
        ..Default::default()
    }
}

fn replica(r: &QuorumReplica) -> ReplicaState {
    ReplicaState {
        replica_id: r.node_id,
        replica_directory_id: Uuid::ZERO,
        log_end_offset: r.log_end_offset,
        last_fetch_timestamp: r.last_fetch_ms,
        last_caught_up_timestamp: r.last_caught_up_ms,
    }
}

fn describe(info: &QuorumInfo) -> DescribeQuorumResponse {
    let mut nodes: Vec<DescribeQuorumNode> = Vec::new();
    for endpoint in &info.endpoints {
        let listener = DescribeQuorumListener {
            name: endpoint.listener.clone(),
            host: endpoint.host.clone(),
            port: endpoint.port,
        };
        match nodes.iter_mut().find(|n| n.node_id == endpoint.node_id) {
            Some(node) => node.listeners.push(listener),
            None => nodes.push(DescribeQuorumNode {
                node_id: endpoint.node_id,
                listeners: vec![listener],
            }),
        }
    }
    DescribeQuorumResponse {
        error_code: ErrorCode::NONE.0,
        error_message: None,
        topics: vec![DescribeQuorumTopicResponse {
            topic_name: METADATA_TOPIC_NAME.to_string(),
            partitions: vec![DescribeQuorumPartition {
                partition_index: 0,
                error_code: ErrorCode::NONE.0,
                error_message: None,
                leader_id: info.leader_id,
                leader_epoch: info.leader_epoch,
                high_watermark: info.high_watermark,
                current_voters: info.voters.iter().map(replica).collect(),
                observers: info.observers.iter().map(replica).collect(),
            }],
        }],
        nodes,
    }
}
