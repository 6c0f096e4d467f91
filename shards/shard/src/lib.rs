//! What every shard shares with every other: its identity, the metadata image with the shard
//! table, the closed set of messages shards send each other, and the mesh that carries them.
//!
//! A *shard* is one glommio executor pinned to a core. It owns a set of partitions and is the
//! only thread that touches their files. Any shard accepts connections and serves any request:
//! work on a partition owned elsewhere travels as a [`ShardMessage`] over a bounded channel, and
//! the reply returns on a oneshot. No lock guards the data path.

#![forbid(unsafe_code)]

mod config_work;
mod describe_work;
mod group_work;
mod image;
mod mesh;
mod message;
mod producer_ids;
mod quorum_work;
mod signal;
mod stats;
mod watch;

pub use config_work::{
    AlterConfigsWork, ConfigChange, ConfigOp, DeleteRecordsWork, TopicConfigChanges,
};
pub use describe_work::{DescribeLogDirsWork, DescribeProducersWork};
pub use group_work::{
    CommittedOffsets, GroupRequest, GroupResponse, GroupWork, PartitionResults, TopicPartitions,
};
pub use image::{BrokerImage, MetadataImage, PartitionImage, ShardTable, TopicImage};
pub use mesh::{Envelope, MeshError, ShardMesh};
pub use message::{
    ConnectionHandoff, CreatePartitionsWork, CreateTopicsWork, CreatedTopic, DeleteTopicsWork,
    DeletedTopic, FetchPartitionRequest, FetchWork, ListOffsetsWork, MetadataError, NewPartitions,
    NewTopic, ProduceWork, Reply, ShardMessage, TopicRef, WaitForAppendWork,
};
pub use producer_ids::{AllocateProducerIdsWork, ProducerIdBlock, PRODUCER_ID_BLOCK_SIZE};
pub use quorum_work::{
    advertised_features, check_feature_update, default_finalized_features, update_failed_message,
    DescribeQuorumWork, FeatureUpdate, QuorumEndpoint, QuorumInfo, QuorumReplica, SupportedFeature,
    UpdateFeaturesWork, UpgradeType, METADATA_VERSION, METADATA_VERSION_LEVEL, SUPPORTED_FEATURES,
};
pub use signal::LocalSignal;
pub use stats::{GroupOffset, PartitionStats, ShardStats, TopicTraffic};
pub use watch::{LocalWatch, WaitBeyond};

/// Index of a shard (an executor) in this process. The controller, when it runs here, takes the
/// index after the last data shard in the mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u16);

impl ShardId {
    /// As an index into per-shard arrays.
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard-{}", self.0)
    }
}
