use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::rc::Rc;

use sluice_log::{Log, LogConfig};
use tracing::{info, warn};

use crate::partition::now_ms;
use crate::{
    Partition, PartitionMap, ReplicaError, TopicIdPartition, DEFAULT_PRODUCER_ID_EXPIRATION_MS,
};

/// A partition never keeps more than this in its tail cache, however few share the budget.
const TAIL_CACHE_BYTES_PER_PARTITION_MAX: usize = 4 << 20;

/// The partitions this shard hosts. One per shard; never shared across threads.
pub struct ReplicaManager {
    local_broker_id: i32,
    data_dir: PathBuf,
    log_config: LogConfig,
    tail_cache_budget_bytes: usize,
    producer_id_expiration_ms: i64,
    partitions: RefCell<PartitionMap<Rc<Partition>>>,
    /// The topic configs (Kafka's names) each hosted partition's log config was computed from,
    /// so that a new metadata image can tell which partitions' configs changed.
    topic_configs: RefCell<HashMap<TopicIdPartition, BTreeMap<String, String>>>,
}

impl ReplicaManager {
    /// A manager for broker `local_broker_id` storing partition directories under `data_dir`,
    /// whose partitions share
    /// `tail_cache_budget_bytes` of in-memory tail cache.
    pub fn new(
        local_broker_id: i32,
        data_dir: PathBuf,
        log_config: LogConfig,
        tail_cache_budget_bytes: usize,
    ) -> ReplicaManager {
        ReplicaManager {
            local_broker_id,
            data_dir,
            log_config,
            tail_cache_budget_bytes,
            producer_id_expiration_ms: DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            partitions: RefCell::new(PartitionMap::default()),
            topic_configs: RefCell::new(HashMap::new()),
        }
    }

    /// Sets `producer.id.expiration.ms`: how long a partition remembers an idle producer.
    pub fn with_producer_id_expiration_ms(mut self, ms: i64) -> ReplicaManager {
        self.producer_id_expiration_ms = ms;
        self
    }

    /// Forgets idle producers on every partition (the shard's periodic sweep).
    pub fn remove_expired_producers(&self) -> usize {
        let now = now_ms();
        self.partitions()
            .iter()
            .map(|p| p.remove_expired_producers(now))
            .sum()
    }

    /// The partition, if this shard hosts it.
    pub fn get(&self, tp: &TopicIdPartition) -> Option<Rc<Partition>> {
        self.partitions.borrow().get(tp).cloned()
    }

    /// The partition, or UNKNOWN_TOPIC_OR_PARTITION when this shard does not host it (what
    /// every partition operation answers first).
    pub fn hosted(&self, tp: &TopicIdPartition) -> Result<Rc<Partition>, ReplicaError> {
        self.get(tp).ok_or(ReplicaError::UnknownTopicOrPartition)
    }

    /// Runs `f` on the partition without taking a reference to it, or UNKNOWN_TOPIC_OR_PARTITION
    /// when this shard does not host it: for the synchronous reads a fetch makes of each of its
    /// partitions, which need not touch the partition's reference count. `f` must not open or
    /// remove partitions (the map is borrowed while it runs).
    pub fn with_hosted<R>(
        &self,
        tp: &TopicIdPartition,
        f: impl FnOnce(&Partition) -> R,
    ) -> Result<R, ReplicaError> {
        let partitions = self.partitions.borrow();
        let partition = partitions
            .get(tp)
            .ok_or(ReplicaError::UnknownTopicOrPartition)?;
        Ok(f(partition))
    }

    /// Every hosted partition.
    pub fn partitions(&self) -> Vec<Rc<Partition>> {
        self.partitions.borrow().values().cloned().collect()
    }

    /// Opens (recovering) or creates the partition's log, with the topic's config overrides
    /// (`configs`, Kafka's names) applied to its log config; its role (leader or follower) is
    /// given next, by the caller. Idempotent: a partition already hosted is returned as is.
    pub async fn open_partition(
        &self,
        tp: TopicIdPartition,
        topic: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<Rc<Partition>, ReplicaError> {
        if let Some(existing) = self.get(&tp) {
            return Ok(existing);
        }
        let dir = self.data_dir.join(format!("{topic}-{}", tp.partition));
        let log_config = crate::log_config_with_overrides(&self.log_config, configs);
        let log = Log::open(dir.clone(), log_config).await?;
        let partition = Rc::new(Partition::new(
            tp,
            Rc::from(topic),
            log,
            self.local_broker_id,
            dir,
            self.producer_id_expiration_ms,
        ));
        partition.load_producer_state().await?;
        if let Some(existing) = self.get(&tp) {
            // Opened concurrently by another caller while this one was loading.
            return Ok(existing);
        }
        self.partitions.borrow_mut().insert(tp, partition.clone());
        self.topic_configs.borrow_mut().insert(tp, configs.clone());
        self.share_tail_cache();
        Ok(partition)
    }

    /// Whether the partition is hosted and its log config was computed from topic configs other
    /// than `configs`.
    pub fn topic_configs_changed(
        &self,
        tp: &TopicIdPartition,
        configs: &BTreeMap<String, String>,
    ) -> bool {
        self.partitions.borrow().contains_key(tp)
            && self.topic_configs.borrow().get(tp) != Some(configs)
    }

    /// Applies altered topic configs to a hosted partition at run time: `log_config` (computed
    /// from `configs`, see [`crate::log_config_with_overrides`]) replaces its log's settings for
    /// the next append, roll check and retention run, and `configs` is remembered. Returns
    /// whether the partition is hosted.
    pub fn update_config(
        &self,
        tp: &TopicIdPartition,
        configs: &BTreeMap<String, String>,
        log_config: LogConfig,
    ) -> bool {
        let Some(partition) = self.get(tp) else {
            return false;
        };
        partition.update_config(log_config);
        self.topic_configs.borrow_mut().insert(*tp, configs.clone());
        true
    }

    /// Stops hosting the partition and deletes its files.
    pub async fn delete_partition(&self, tp: &TopicIdPartition) -> Result<(), ReplicaError> {
        let removed = self.partitions.borrow_mut().remove(tp);
        self.topic_configs.borrow_mut().remove(tp);
        if let Some(partition) = removed {
            self.share_tail_cache();
            // As Kafka's StopReplica: no longer a replica here, so produces waiting for the
            // ISR (acks=all) fail now with NOT_LEADER_OR_FOLLOWER and the client retries on
            // the partition's leader, instead of waiting out their timeout.
            partition.make_follower(-1, partition.leader_epoch());
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
