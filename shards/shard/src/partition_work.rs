//! Shard messages of the admin APIs that act on partitions on their owner shard: DeleteRecords
//! (moves the log start offset), DescribeLogDirs (log sizes) and DescribeProducers (producer
//! state).

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

/// DeleteRecords for partitions of one shard.
pub struct DeleteRecordsWork {
    /// Partitions and the offset before which records go (-1: the high watermark).
    pub partitions: Vec<(TopicIdPartition, i64)>,
    /// The new log start offset (low watermark) of each, in the same order.
    pub reply: Reply<Vec<Result<i64, ReplicaError>>>,
}
