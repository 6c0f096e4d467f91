use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use sluice_log::{Log, LogConfig};
use tracing::{info, warn};

use crate::{Partition, ReplicaError, TopicIdPartition};

/// The partitions this shard hosts. One per shard; never shared across threads.
pub struct ReplicaManager {
    data_dir: PathBuf,
    log_config: LogConfig,
    partitions: RefCell<HashMap<TopicIdPartition, Rc<Partition>>>,
}

impl ReplicaManager {
    /// A manager storing partition directories under `data_dir`.
    pub fn new(data_dir: PathBuf, log_config: LogConfig) -> ReplicaManager {
        ReplicaManager {
            data_dir,
            log_config,
            partitions: RefCell::new(HashMap::new()),
        }
    }

    /// The partition, if this shard hosts it.
    pub fn get(&self, tp: &TopicIdPartition) -> Option<Rc<Partition>> {
        self.partitions.borrow().get(tp).cloned()
    }

    /// Every hosted partition.
    pub fn partitions(&self) -> Vec<Rc<Partition>> {
        self.partitions.borrow().values().cloned().collect()
    }

    /// Opens (recovering) or creates the partition's log and makes this shard its leader.
    /// Idempotent: a partition already hosted keeps its log and takes the new epoch.
    pub async fn make_leader(
        &self,
        tp: TopicIdPartition,
        topic: &str,
        leader_epoch: i32,
    ) -> Result<Rc<Partition>, ReplicaError> {
        if let Some(existing) = self.get(&tp) {
            return Ok(existing);
        }
        let dir = self.data_dir.join(format!("{topic}-{}", tp.partition));
        let log = Log::open(dir, self.log_config.clone()).await?;
        let partition = Rc::new(Partition::new(tp, Rc::from(topic), log, leader_epoch));
        self.partitions.borrow_mut().insert(tp, partition.clone());
        Ok(partition)
    }

    /// Stops hosting the partition and deletes its files.
    pub async fn delete_partition(&self, tp: &TopicIdPartition) -> Result<(), ReplicaError> {
        let removed = self.partitions.borrow_mut().remove(tp);
        if let Some(partition) = removed {
            partition.delete().await?;
            info!(topic = %partition.topic, partition = tp.partition, "deleted partition");
        }
        Ok(())
    }

    /// Flushes and closes every log (graceful shutdown).
    pub async fn shutdown(&self) {
        for partition in self.partitions() {
            if let Err(error) = partition.close().await {
                warn!(topic = %partition.topic, partition = partition.tp.partition, %error, "closing log failed");
            }
        }
    }
}
