//! The controller's state machine: it applies metadata records to the image, validates and
//! performs topic changes, and publishes every new image to all data shards.
//!
//! Changes are handled one at a time by a single pump task (`run`), so the metadata log is
//! appended in the order changes are decided. A change is acknowledged only after its records
//! are fsynced and every shard has applied the new image (so a client that was told "created"
//! can produce to the topic at once, on any shard).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use futures_channel::oneshot;
use glommio::channels::channel_mesh::Receivers;
use glommio::channels::local_channel;
use sluice_config::topic::{self as topic_config, ConfigType};
use sluice_protocol::codec::Uuid;
use sluice_shard::AllocateProducerIdsWork;
use sluice_shard::{
    AlterConfigsWork, BrokerImage, ConfigOp, CreateTopicsWork, CreatedTopic, DeleteTopicsWork,
    DeletedTopic, Envelope, MetadataError, MetadataImage, NewTopic, PartitionImage, ShardId,
    ShardMesh, ShardMessage, TopicConfigChanges, TopicImage, TopicRef,
};
use tracing::{error, info, warn};

use crate::metadata_log::{MetadataLog, MetadataLogError};
use crate::placement::place_partitions;
use crate::producer_ids::ProducerIdControl;
use crate::records::MetadataRecord;
use crate::topic_name::{collides, validate_topic_name};

/// Controller work queued behind the one in progress.
const PENDING_CHANGES_MAX: usize = 256;

/// What the controller needs from the broker configuration.
#[derive(Clone, Debug)]
pub struct ControllerSettings {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host of this broker.
    pub advertised_host: String,
    /// Advertised port of this broker.
    pub advertised_port: i32,
    /// `log.dirs`.
    pub log_dir: PathBuf,
    /// Data shards in this process.
    pub shard_count: usize,
    /// `num.partitions`.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `sluice.broker.partitions.max`.
    pub partitions_max: usize,
}

/// The single-node controller.
pub struct QuorumController {
    settings: ControllerSettings,
    mesh: Rc<ShardMesh>,
    log: MetadataLog,
    image: MetadataImage,
    producer_ids: ProducerIdControl,
}

impl QuorumController {
    /// Opens the metadata log and rebuilds the image from it.
    pub async fn open(
        settings: ControllerSettings,
        mesh: Rc<ShardMesh>,
    ) -> Result<QuorumController, MetadataLogError> {
        let (log, records) = MetadataLog::open(&settings.log_dir).await?;
        let mut controller = QuorumController {
            image: MetadataImage {
                controller_id: settings.node_id,
                brokers: vec![BrokerImage {
                    node_id: settings.node_id,
                    host: settings.advertised_host.clone(),
                    port: settings.advertised_port,
                    rack: None,
                }],
                ..MetadataImage::default()
            },
            settings,
            mesh,
            log,
            producer_ids: ProducerIdControl::default(),
        };
        let replayed = records.len();
        controller.replay(records);
        if controller.image.cluster_id.is_empty() {
            let record = MetadataRecord::ClusterId {
                cluster_id: new_cluster_id(),
            };
            controller.log.append(std::slice::from_ref(&record)).await?;
            controller.replay(vec![record]);
        }
        info!(
            records = replayed,
            topics = controller.image.topics.len(),
            cluster_id = %controller.image.cluster_id,
            "metadata log loaded"
        );
        Ok(controller)
    }

    /// Sends the current image to every data shard and waits until all applied it.
    pub async fn publish(&self) -> Result<(), MetadataError> {
        let image = Arc::new(self.image.clone());
        let mut pending = Vec::with_capacity(self.settings.shard_count);
        for shard in 0..self.settings.shard_count {
            let (reply, done) = oneshot::channel();
            let message = ShardMessage::ApplyMetadata {
                image: image.clone(),
                reply,
            };
            self.mesh
                .send(ShardId(shard as u16), message)
                .await
                .map_err(|_| MetadataError::ControllerNotAvailable)?;
            pending.push(done);
        }
        for done in pending {
            done.await
                .map_err(|_| MetadataError::ControllerNotAvailable)?;
        }
        Ok(())
    }

    /// Serves controller messages until every sender is gone. All changes go through one queue
    /// and are applied one at a time.
    pub async fn run(mut self, mut receivers: Receivers<Envelope>) {
        let (queue, pending) = local_channel::new_bounded::<ShardMessage>(PENDING_CHANGES_MAX);
        let queue = Rc::new(queue);
        let mut feeders = Vec::new();
        for (_, receiver) in receivers.streams() {
            let queue = queue.clone();
            let self_id = self.mesh.self_id();
            feeders.push(glommio::spawn_local(async move {
                while let Some(envelope) = receiver.recv().await {
                    assert_eq!(
                        envelope.target, self_id,
                        "message for {} arrived at the controller",
                        envelope.target
                    );
                    if queue.send(envelope.message).await.is_err() {
                        break;
                    }
                }
            }));
        }
        drop(queue);
        while let Some(message) = pending.recv().await {
            self.handle(message).await;
        }
        drop(feeders);
    }

    async fn handle(&mut self, message: ShardMessage) {
        match message {
            ShardMessage::CreateTopics(work) => self.create_topics(work).await,
            ShardMessage::DeleteTopics(work) => self.delete_topics(work).await,
            ShardMessage::AllocateProducerIds(work) => self.allocate_producer_ids(work).await,
            ShardMessage::AlterConfigs(work) => self.alter_configs(work).await,
            other => error!(
                kind = other.kind(),
                "data-shard message sent to the controller; dropped"
            ),
        }
    }

    /// Hands out the next block of producer ids once its record is durable. The image does not
    /// change, so nothing is published.
    async fn allocate_producer_ids(&mut self, work: AllocateProducerIdsWork) {
        let result = match self.producer_ids.generate_next_block() {
            None => Err(MetadataError::Storage("producer ids exhausted".into())),
            Some((block, record)) => match self.log.append(std::slice::from_ref(&record)).await {
                Ok(()) => {
                    self.replay(vec![record]);
                    Ok(block)
                }
                Err(error) => {
                    error!(%error, "metadata log append failed");
                    Err(MetadataError::Storage(error.to_string()))
                }
            },
        };
        let _ = work.reply.send(result);
    }

    async fn create_topics(&mut self, work: CreateTopicsWork) {
        let mut results = Vec::with_capacity(work.topics.len());
        let mut records = Vec::new();
        let mut load = self.image.shard_table.load(self.settings.shard_count);
        let mut names_in_request: Vec<&str> = Vec::new();
        let mut partitions_total: usize = load.iter().sum();
        for topic in &work.topics {
            let checked = self
                .check_new_topic(topic, &names_in_request)
                .and_then(|()| self.check_partition_budget(topic, &mut partitions_total));
            names_in_request.push(&topic.name);
            results.push(checked.map(|()| {
                let topic_id = new_topic_id();
                if !work.validate_only {
                    self.topic_records(topic, topic_id, &mut load, &mut records);
                }
                CreatedTopic {
                    topic_id,
                    num_partitions: topic.num_partitions,
                    replication_factor: topic.replication_factor,
                }
            }));
        }
        let results = self.commit_for(records, results).await;
        let _ = work.reply.send(results);
    }

    fn check_new_topic(
        &self,
        topic: &NewTopic,
        earlier_in_request: &[&str],
    ) -> Result<(), MetadataError> {
        validate_topic_name(&topic.name).map_err(MetadataError::InvalidTopic)?;
        if self.image.topic(&topic.name).is_some()
            || earlier_in_request.contains(&topic.name.as_str())
        {
            return Err(MetadataError::TopicAlreadyExists(topic.name.clone()));
        }
        if let Some(other) = self
            .image
            .topics
            .keys()
            .find(|other| collides(other, &topic.name))
        {
            return Err(MetadataError::InvalidTopic(format!(
                "topic '{}' collides with existing topic '{other}' ('.' and '_' are interchangeable in metric names)",
                topic.name
            )));
        }
        if topic.num_partitions <= 0 {
            return Err(MetadataError::InvalidPartitions(format!(
                "number of partitions must be larger than 0, got {}",
                topic.num_partitions
            )));
        }
        if topic.replication_factor <= 0 {
            return Err(MetadataError::InvalidReplicationFactor(format!(
                "replication factor must be larger than 0, got {}",
                topic.replication_factor
            )));
        }
        let brokers = self.image.brokers.len();
        if topic.replication_factor as usize > brokers {
            return Err(MetadataError::InvalidReplicationFactor(format!(
                "replication factor: {} larger than available brokers: {brokers}",
                topic.replication_factor
            )));
        }
        for (name, value) in &topic.configs {
            topic_config::validate(name, value).map_err(MetadataError::InvalidConfig)?;
        }
        Ok(())
    }

    /// Keeps the broker within `sluice.broker.partitions.max`: every partition costs open files
    /// and memory, and one request must not be able to exhaust them.
    fn check_partition_budget(
        &self,
        topic: &NewTopic,
        partitions_total: &mut usize,
    ) -> Result<(), MetadataError> {
        let wanted = topic.num_partitions as usize;
        let max = self.settings.partitions_max;
        if *partitions_total + wanted > max {
            return Err(MetadataError::InvalidPartitions(format!(
                "{wanted} more partitions would exceed sluice.broker.partitions.max ({max}); {partitions_total} exist"
            )));
        }
        *partitions_total += wanted;
        Ok(())
    }

    fn topic_records(
        &self,
        topic: &NewTopic,
        topic_id: Uuid,
        load: &mut [usize],
        out: &mut Vec<MetadataRecord>,
    ) {
        out.push(MetadataRecord::Topic {
            name: topic.name.clone(),
            topic_id,
        });
        let shards = place_partitions(load, topic.num_partitions as usize);
        for (partition, shard) in shards.into_iter().enumerate() {
            out.push(MetadataRecord::Partition {
                topic_id,
                partition: partition as i32,
                replicas: vec![self.settings.node_id],
                leader: self.settings.node_id,
                leader_epoch: 0,
                shard,
            });
        }
        for (name, value) in &topic.configs {
            out.push(MetadataRecord::Config {
                topic_id,
                name: name.clone(),
                value: topic_config::validate(name, value).unwrap_or_else(|_| value.clone()),
            });
        }
    }

    async fn delete_topics(&mut self, work: DeleteTopicsWork) {
        let mut results = Vec::with_capacity(work.topics.len());
        let mut records = Vec::new();
        for topic in &work.topics {
            let found = self.find_topic(topic);
            let result = if !self.settings.delete_topic_enable {
                Err(MetadataError::TopicDeletionDisabled)
            } else {
                found
            };
            if let Ok(deleted) = &result {
                let record = MetadataRecord::RemoveTopic {
                    topic_id: deleted.topic_id,
                };
                if !records.contains(&record) {
                    records.push(record);
                }
            }
            results.push(result);
        }
        let results = self.commit_for(records, results).await;
        let _ = work.reply.send(results);
    }

    /// Alters topic configs: each topic's changes are validated as a whole (Kafka's names, types
    /// and ranges) and become `Config` / `RemoveConfig` records; a topic whose changes fail
    /// changes nothing, the others go ahead. `validate_only` checks and writes nothing.
    async fn alter_configs(&mut self, work: AlterConfigsWork) {
        let mut results = Vec::with_capacity(work.topics.len());
        let mut records = Vec::new();
        for changes in &work.topics {
            let planned = self.config_records(changes);
            results.push(planned.map(|planned| {
                if !work.validate_only {
                    records.extend(planned);
                }
            }));
        }
        let results = self.commit_for(records, results).await;
        let _ = work.reply.send(results);
    }

    /// The records that take a topic from its current overrides to the changed ones.
    fn config_records(
        &self,
        changes: &TopicConfigChanges,
    ) -> Result<Vec<MetadataRecord>, MetadataError> {
        let topic = self
            .image
            .topic(&changes.topic)
            .ok_or(MetadataError::UnknownTopicOrPartition)?;
        let mut seen = BTreeSet::new();
        for change in &changes.changes {
            if !seen.insert(change.name.as_str()) {
                return Err(MetadataError::InvalidRequest(format!(
                    "Error due to duplicate config keys: {}",
                    change.name
                )));
            }
        }
        let mut configs = if changes.replace_all {
            BTreeMap::new()
        } else {
            topic.configs.clone()
        };
        for change in &changes.changes {
            let name = change.name.as_str();
            let def = topic_config::find(name).ok_or_else(|| {
                MetadataError::InvalidConfig(format!("Unknown topic config name: {name}"))
            })?;
            let checked = |value: &str| {
                topic_config::validate(name, value).map_err(MetadataError::InvalidConfig)
            };
            match &change.op {
                ConfigOp::Set(value) => {
                    configs.insert(name.to_string(), checked(value)?);
                }
                ConfigOp::Delete => {
                    configs.remove(name);
                }
                ConfigOp::Append(value) | ConfigOp::Subtract(value) => {
                    let append = matches!(change.op, ConfigOp::Append(_));
                    if def.config_type != ConfigType::List {
                        return Err(MetadataError::InvalidConfig(format!(
                            "Can't {} to key {name} because its type is not LIST.",
                            if append { "APPEND" } else { "SUBTRACT" }
                        )));
                    }
                    let current = configs
                        .get(name)
                        .map_or(def.default, String::as_str)
                        .to_string();
                    let mut items = topic_config::split_list(&current);
                    for item in topic_config::split_list(value) {
                        if append {
                            if !items.contains(&item) {
                                items.push(item);
                            }
                        } else {
                            items.retain(|i| *i != item);
                        }
                    }
                    configs.insert(name.to_string(), checked(&items.join(","))?);
                }
            }
        }
        let topic_id = topic.topic_id;
        let mut records = Vec::new();
        for (name, value) in &configs {
            if topic.configs.get(name) != Some(value) {
                records.push(MetadataRecord::Config {
                    topic_id,
                    name: name.clone(),
                    value: value.clone(),
                });
            }
        }
        for name in topic.configs.keys() {
            if !configs.contains_key(name) {
                records.push(MetadataRecord::RemoveConfig {
                    topic_id,
                    name: name.clone(),
                });
            }
        }
        Ok(records)
    }

    fn find_topic(&self, topic: &TopicRef) -> Result<DeletedTopic, MetadataError> {
        let image = match topic {
            TopicRef::Name(name) => self
                .image
                .topic(name)
                .ok_or(MetadataError::UnknownTopicOrPartition)?,
            TopicRef::Id(id) => self
                .image
                .topic_by_id(id)
                .ok_or(MetadataError::UnknownTopicId)?,
        };
        Ok(DeletedTopic {
            name: image.name.clone(),
            topic_id: image.topic_id,
        })
    }

    /// Commits `records`; if that fails, every result that had been accepted fails with the
    /// commit's error (the refused ones keep their own).
    async fn commit_for<T>(
        &mut self,
        records: Vec<MetadataRecord>,
        results: Vec<Result<T, MetadataError>>,
    ) -> Vec<Result<T, MetadataError>> {
        match self.commit(records).await {
            Ok(()) => results,
            Err(error) => results
                .into_iter()
                .map(|r| r.and_then(|_| Err(error.clone())))
                .collect(),
        }
    }

    /// Makes records durable, applies them, and publishes the new image.
    async fn commit(&mut self, records: Vec<MetadataRecord>) -> Result<(), MetadataError> {
        if records.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.log.append(&records).await {
            error!(%error, "metadata log append failed");
            return Err(MetadataError::Storage(error.to_string()));
        }
        self.replay(records);
        self.publish().await.inspect_err(|error| {
            warn!(%error, "publishing the metadata image failed");
        })
    }

    /// Applies records to the image.
    fn replay(&mut self, records: Vec<MetadataRecord>) {
        let mut touched: BTreeMap<Uuid, TopicImage> = BTreeMap::new();
        for record in records {
            self.image.offset += 1;
            self.apply(record, &mut touched);
        }
        for (_, topic) in touched {
            self.image.put_topic(topic);
        }
    }

    fn apply(&mut self, record: MetadataRecord, touched: &mut BTreeMap<Uuid, TopicImage>) {
        let shard_count = self.settings.shard_count as u16;
        match record {
            MetadataRecord::ClusterId { cluster_id } => self.image.cluster_id = cluster_id,
            MetadataRecord::Topic { name, topic_id } => {
                touched.insert(
                    topic_id,
                    TopicImage {
                        name,
                        topic_id,
                        partitions: Vec::new(),
                        configs: BTreeMap::new(),
                    },
                );
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                leader,
                leader_epoch,
                shard,
            } => {
                let Some(topic) = self.touch(topic_id, touched) else {
                    return warn!(%topic_id, "partition record for an unknown topic; skipped");
                };
                // A partition keeps the shard it was given; only when the shard count shrank
                // since does it fold onto an existing shard.
                let shard = ShardId(shard % shard_count);
                topic.partitions.retain(|p| p.partition != partition);
                topic.partitions.push(PartitionImage {
                    partition,
                    leader,
                    leader_epoch,
                    isr: replicas.clone(),
                    replicas,
                    shard,
                });
                topic.partitions.sort_by_key(|p| p.partition);
            }
            MetadataRecord::Config {
                topic_id,
                name,
                value,
            } => {
                if let Some(topic) = self.touch(topic_id, touched) {
                    topic.configs.insert(name, value);
                }
            }
            MetadataRecord::RemoveConfig { topic_id, name } => {
                if let Some(topic) = self.touch(topic_id, touched) {
                    topic.configs.remove(&name);
                }
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                self.producer_ids.replay(next_producer_id);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                touched.remove(&topic_id);
                if let Some(name) = self.image.topic_names.get(&topic_id).cloned() {
                    self.image.remove_topic(&name);
                }
            }
        }
    }

    fn touch<'a>(
        &self,
        topic_id: Uuid,
        touched: &'a mut BTreeMap<Uuid, TopicImage>,
    ) -> Option<&'a mut TopicImage> {
        match touched.entry(topic_id) {
            std::collections::btree_map::Entry::Occupied(entry) => Some(entry.into_mut()),
            std::collections::btree_map::Entry::Vacant(entry) => {
                let existing = self.image.topic_by_id(&topic_id)?;
                Some(entry.insert(TopicImage::clone(existing)))
            }
        }
    }
}

fn new_topic_id() -> Uuid {
    loop {
        let id = Uuid(random_bytes());
        // Kafka reserves the zero id and ids whose base64 begins with '-' (command-line trouble).
        if id != Uuid::ZERO && id.0[0] & 0xfc != 0xf8 {
            return id;
        }
    }
}

fn new_cluster_id() -> String {
    Uuid(random_bytes()).to_string()
}

fn random_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    // getrandom(2) cannot fail for 16 bytes once the pool is initialised; fall back to the clock
    // (ids need uniqueness, not secrecy) if it ever does.
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_err()
    {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes = (nanos ^ (std::process::id() as u128) << 64).to_be_bytes();
    }
    bytes
}
