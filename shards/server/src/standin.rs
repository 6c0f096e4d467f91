//! STAND-IN (lead replaces at merge with r-ctl / r-fetcher). Never merged to main as is.
#![allow(clippy::unused_async, unused_variables, clippy::todo, dead_code)]

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_shard::{BrokerImage, MetadataError, PartitionImage, ShardMesh};

pub fn partition_epoch(p: &PartitionImage) -> i32 {
    todo!()
}
pub fn broker_epoch(b: &BrokerImage) -> i64 {
    todo!()
}
pub struct AlterPartitionItem {
    pub topic_id: Uuid,
    pub partition: i32,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<(i32, i64)>,
}
pub struct AlterPartitionOutcome {
    pub error: ErrorCode,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<i32>,
}
pub async fn alter_partition(
    mesh: &ShardMesh,
    item: AlterPartitionItem,
) -> Result<AlterPartitionOutcome, MetadataError> {
    todo!()
}
