//! Shard messages of the describe APIs that read partition state on its owner shard:
//! DescribeLogDirs (log sizes) and DescribeProducers (producer state).

use sluice_replica::{ActiveProducer, PartitionLogDirInfo, ReplicaError, TopicIdPartition};

use crate::message::Reply;

/// DescribeLogDirs for partitions of one shard.
pub struct DescribeLogDirsWork {
    /// The partitions.
    pub partitions: Vec<TopicIdPartition>,
    /// Each partition's log size and offset lag, in the same order.
    pub reply: Reply<Vec<Result<PartitionLogDirInfo, ReplicaError>>>,
}

/// DescribeProducers for partitions of one shard.
pub struct DescribeProducersWork {
    /// The partitions.
    pub partitions: Vec<TopicIdPartition>,
    /// Each partition's active producers, in the same order.
    pub reply: Reply<Vec<Result<Vec<ActiveProducer>, ReplicaError>>>,
}
