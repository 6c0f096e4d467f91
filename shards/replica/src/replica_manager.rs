use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use sluice_log::{Log, LogConfig};
use tracing::{info, warn};

use crate::{Partition, ReplicaError, TopicIdPartition};

/// A partition never keeps more than this in its tail cache, however few share the budget.
const TAIL_CACHE_BYTES_PER_PARTITION_MAX: usize = 4 << 20;

/// The partitions this shard hosts. One per shard; never shared across threads.
pub struct ReplicaManager {
    data_dir: PathBuf,
    log_config: LogConfig,
    tail_cache_budget_bytes: usize,
    partitions: RefCell<HashMap<TopicIdPartition, Rc<Partition>>>,
}

impl ReplicaManager {
    /// A manager storing partition directories under `data_dir`, whose partitions share
    /// `tail_cache_budget_bytes` of in-memory tail cache.
    pub fn new(
        data_dir: PathBuf,
        log_config: LogConfig,
        tail_cache_budget_bytes: usize,
    ) -> ReplicaManager {
        ReplicaManager {
            data_dir,
            log_config,
            tail_cache_budget_bytes,
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
        self.share_tail_cache();
        Ok(partition)
    }

    /// Stops hosting the partition and deletes its files.
    pub async fn delete_partition(&self, tp: &TopicIdPartition) -> Result<(), ReplicaError> {
        let removed = self.partitions.borrow_mut().remove(tp);
        if let Some(partition) = removed {
            self.share_tail_cache();
            partition.delete().await?;
            info!(topic = %partition.topic, partition = tp.partition, "deleted partition");
        }
        Ok(())
    }

    /// Divides the shard's tail-cache budget evenly among its partitions, so memory stays
    /// bounded however many partitions the shard hosts.
    fn share_tail_cache(&self) {
        let partitions = self.partitions.borrow();
        let share = (self.tail_cache_budget_bytes / partitions.len().max(1))
            .min(TAIL_CACHE_BYTES_PER_PARTITION_MAX);
        for partition in partitions.values() {
            partition.set_tail_cache_bytes(share);
        }
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
