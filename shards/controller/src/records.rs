//! Metadata records, KRaft's vocabulary, in a compact binary form:
//! each record is a type byte followed by its fields (big-endian integers, u16-length strings).

use sluice_protocol::codec::{Decoder, Encoder, Uuid};
use sluice_protocol::ProtocolError;

/// One change to the cluster metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetadataRecord {
    /// The cluster's identity, written once when the log is created.
    ClusterId {
        /// The id.
        cluster_id: String,
    },
    /// A topic came into existence.
    Topic {
        /// Name.
        name: String,
        /// Id.
        topic_id: Uuid,
    },
    /// A partition of a topic, with its placement (KRaft's PartitionRecord). Which shard of a
    /// broker holds it is that broker's own choice, not metadata.
    Partition {
        /// Topic id.
        topic_id: Uuid,
        /// Partition index.
        partition: i32,
        /// Replica node ids.
        replicas: Vec<i32>,
        /// In-sync replica node ids.
        isr: Vec<i32>,
        /// Leader node id; -1 when no replica can lead.
        leader: i32,
        /// Leader epoch.
        leader_epoch: i32,
    },
    /// A partition's leader or ISR changed (KRaft's PartitionChangeRecord): a broker was
    /// fenced or came back.
    PartitionChange {
        /// Topic id.
        topic_id: Uuid,
        /// Partition index.
        partition: i32,
        /// The new leader, -1 for none.
        leader: i32,
        /// The new leader epoch.
        leader_epoch: i32,
        /// The new ISR (empty only with ELR on: every member left and none can lead).
        isr: Vec<i32>,
        /// The new eligible leader replicas (KIP-966), `None` when unchanged: Kafka's nullable
        /// tagged field `EligibleLeaderReplicas`.
        eligible_leader_replicas: Option<Vec<i32>>,
        /// The new last known ELR (KIP-966), `None` when unchanged: Kafka's `LastKnownElr`.
        last_known_elr: Option<Vec<i32>>,
    },
    /// A partition's replicas changed with its leader and ISR (KRaft's PartitionChangeRecord
    /// with its Replicas, AddingReplicas and RemovingReplicas fields set): a reassignment
    /// started, completed or was cancelled (KIP-455).
    PartitionAssignmentChange {
        /// Topic id.
        topic_id: Uuid,
        /// Partition index.
        partition: i32,
        /// The new leader, -1 for none.
        leader: i32,
        /// The new leader epoch.
        leader_epoch: i32,
        /// The new ISR.
        isr: Vec<i32>,
        /// The new replicas: during a reassignment, the target ones then those being removed.
        replicas: Vec<i32>,
        /// The replicas being added (empty: no reassignment in progress).
        adding_replicas: Vec<i32>,
        /// The replicas being removed.
        removing_replicas: Vec<i32>,
    },
    /// A dynamic broker config (KRaft's ConfigRecord for a BROKER resource): set, or removed
    /// when `value` is `None`.
    BrokerConfig {
        /// The broker id as text, or empty for the cluster-wide default.
        resource_name: String,
        /// Config name.
        name: String,
        /// The value; `None` removes it.
        value: Option<String>,
    },
    /// A broker registered (KRaft's RegisterBrokerRecord). It starts fenced.
    RegisterBroker {
        /// `node.id`.
        broker_id: i32,
        /// Random per process start: tells a restart from a duplicate.
        incarnation_id: Uuid,
        /// The registration's epoch: heartbeats must carry it.
        broker_epoch: i64,
        /// Advertised host of its client listener.
        host: String,
        /// Advertised port.
        port: i32,
        /// `broker.rack`.
        rack: Option<String>,
    },
    /// A broker's session expired, or it asked to be fenced (KRaft's FenceBrokerRecord).
    FenceBroker {
        /// `node.id`.
        broker_id: i32,
        /// Its registration's epoch.
        broker_epoch: i64,
    },
    /// A registered broker caught up with the metadata log (KRaft's UnfenceBrokerRecord).
    UnfenceBroker {
        /// `node.id`.
        broker_id: i32,
        /// Its registration's epoch.
        broker_epoch: i64,
    },
    /// A topic config override.
    Config {
        /// Topic id.
        topic_id: Uuid,
        /// Config name.
        name: String,
        /// Value.
        value: String,
    },
    /// A topic was deleted.
    RemoveTopic {
        /// Topic id.
        topic_id: Uuid,
    },
    /// Producer ids below `next_producer_id` are handed out (KRaft's ProducerIdsRecord): written
    /// and fsynced before a block of ids is given to a shard, so no id is ever given twice.
    ProducerIds {
        /// The first id not yet handed out.
        next_producer_id: i64,
    },
    /// A topic config override was removed (the topic falls back to the broker default).
    RemoveConfig {
        /// Topic id.
        topic_id: Uuid,
        /// Config name.
        name: String,
    },
    /// A feature's finalized level (KRaft's FeatureLevelRecord); level 0 removes it.
    FeatureLevel {
        /// Feature name.
        name: String,
        /// The finalized level.
        feature_level: i16,
    },
}

const CLUSTER_ID: u8 = 1;
const TOPIC: u8 = 2;
const PARTITION: u8 = 3;
const CONFIG: u8 = 4;
const REMOVE_TOPIC: u8 = 5;
const PRODUCER_IDS: u8 = 7;
const REMOVE_CONFIG: u8 = 6;
const PARTITION_CHANGE: u8 = 8;
const REGISTER_BROKER: u8 = 9;
const FENCE_BROKER: u8 = 10;
const UNFENCE_BROKER: u8 = 11;
const FEATURE_LEVEL: u8 = 12;
/// A PartitionChange that also sets the ELR fields: a type of its own, so that the changes
/// without them keep the bytes they always had.
const PARTITION_CHANGE_ELR: u8 = 13;
const PARTITION_ASSIGNMENT_CHANGE: u8 = 14;
const BROKER_CONFIG: u8 = 15;
/// Records in one metadata log entry: a change is one entry, so it commits whole or not at all.
const RECORDS_PER_ENTRY_MAX: usize = 1 << 20;

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Truncated, a malformed string, or trailing bytes.
    #[error("malformed metadata record: {0}")]
    Malformed(#[from] ProtocolError),
    /// A record type this build does not know.
    #[error("unknown metadata record type {0}")]
    UnknownType(u8),
    /// A list's presence flag is neither 0 nor 1 (or an ELR change carries no list).
    #[error("malformed metadata record: list flag {0}")]
    BadListFlag(u8),
    /// An optional field's presence flag (a rack, a config value) is neither 0 nor 1.
    #[error("malformed metadata record: presence flag {0}")]
    BadPresenceFlag(u8),
    /// An entry claims more records than one entry may hold.
    #[error("{0} records in one metadata log entry")]
    TooManyRecords(u32),
}

impl MetadataRecord {
    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder::with_capacity(64);
        self.put(&mut e);
        out.extend_from_slice(e.as_slice());
    }

    fn put(&self, e: &mut Encoder) {
        match self {
            MetadataRecord::ClusterId { cluster_id } => {
                e.put_u8(CLUSTER_ID);
                put_str(e, cluster_id);
            }
            MetadataRecord::Topic { name, topic_id } => {
                e.put_u8(TOPIC);
                put_str(e, name);
                e.put_uuid(*topic_id);
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
            } => {
                e.put_u8(PARTITION);
                e.put_uuid(*topic_id);
                e.put_i32(*partition);
                put_ids(e, replicas);
                put_ids(e, isr);
                e.put_i32(*leader);
                e.put_i32(*leader_epoch);
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                leader_epoch,
                isr,
                eligible_leader_replicas,
                last_known_elr,
            } => {
                let elr_changed = eligible_leader_replicas.is_some() || last_known_elr.is_some();
                e.put_u8(if elr_changed {
                    PARTITION_CHANGE_ELR
                } else {
                    PARTITION_CHANGE
                });
                e.put_uuid(*topic_id);
                e.put_i32(*partition);
                e.put_i32(*leader);
                e.put_i32(*leader_epoch);
                put_ids(e, isr);
                if elr_changed {
                    put_optional_ids(e, eligible_leader_replicas.as_deref());
                    put_optional_ids(e, last_known_elr.as_deref());
                }
            }
            MetadataRecord::PartitionAssignmentChange {
                topic_id,
                partition,
                leader,
                leader_epoch,
                isr,
                replicas,
                adding_replicas,
                removing_replicas,
            } => {
                e.put_u8(PARTITION_ASSIGNMENT_CHANGE);
                e.put_uuid(*topic_id);
                e.put_i32(*partition);
                e.put_i32(*leader);
                e.put_i32(*leader_epoch);
                put_ids(e, isr);
                put_ids(e, replicas);
                put_ids(e, adding_replicas);
                put_ids(e, removing_replicas);
            }
            MetadataRecord::BrokerConfig {
                resource_name,
                name,
                value,
            } => {
                e.put_u8(BROKER_CONFIG);
                put_str(e, resource_name);
                put_str(e, name);
                match value {
                    None => e.put_u8(0),
                    Some(value) => {
                        e.put_u8(1);
                        put_str(e, value);
                    }
                }
            }
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
            } => {
                e.put_u8(REGISTER_BROKER);
                e.put_i32(*broker_id);
                e.put_uuid(*incarnation_id);
                e.put_i64(*broker_epoch);
                put_str(e, host);
                e.put_i32(*port);
                match rack {
                    None => e.put_u8(0),
                    Some(rack) => {
                        e.put_u8(1);
                        put_str(e, rack);
                    }
                }
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => {
                e.put_u8(FENCE_BROKER);
                e.put_i32(*broker_id);
                e.put_i64(*broker_epoch);
            }
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => {
                e.put_u8(UNFENCE_BROKER);
                e.put_i32(*broker_id);
                e.put_i64(*broker_epoch);
            }
            MetadataRecord::Config {
                topic_id,
                name,
                value,
            } => {
                e.put_u8(CONFIG);
                e.put_uuid(*topic_id);
                put_str(e, name);
                put_str(e, value);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                e.put_u8(REMOVE_TOPIC);
                e.put_uuid(*topic_id);
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                e.put_u8(PRODUCER_IDS);
                e.put_i64(*next_producer_id);
            }
            MetadataRecord::RemoveConfig { topic_id, name } => {
                e.put_u8(REMOVE_CONFIG);
                e.put_uuid(*topic_id);
                put_str(e, name);
            }
            MetadataRecord::FeatureLevel {
                name,
                feature_level,
            } => {
                e.put_u8(FEATURE_LEVEL);
                put_str(e, name);
                e.put_i16(*feature_level);
            }
        }
    }

    /// Decodes one record that fills `buf` exactly.
    pub fn decode(buf: &[u8]) -> Result<MetadataRecord, RecordError> {
        let mut d = Decoder::from_slice(buf);
        let record = MetadataRecord::get(&mut d)?;
        d.finish()?;
        Ok(record)
    }

    fn get(d: &mut Decoder) -> Result<MetadataRecord, RecordError> {
        Ok(match d.u8()? {
            CLUSTER_ID => MetadataRecord::ClusterId {
                cluster_id: get_str(d)?,
            },
            TOPIC => MetadataRecord::Topic {
                name: get_str(d)?,
                topic_id: d.uuid()?,
            },
            PARTITION => MetadataRecord::Partition {
                topic_id: d.uuid()?,
                partition: d.i32()?,
                replicas: get_ids(d)?,
                isr: get_ids(d)?,
                leader: d.i32()?,
                leader_epoch: d.i32()?,
            },
            PARTITION_CHANGE => MetadataRecord::PartitionChange {
                topic_id: d.uuid()?,
                partition: d.i32()?,
                leader: d.i32()?,
                leader_epoch: d.i32()?,
                isr: get_ids(d)?,
                eligible_leader_replicas: None,
                last_known_elr: None,
            },
            PARTITION_CHANGE_ELR => {
                let (topic_id, partition, leader, leader_epoch, isr) =
                    (d.uuid()?, d.i32()?, d.i32()?, d.i32()?, get_ids(d)?);
                let eligible_leader_replicas = get_optional_ids(d)?;
                let last_known_elr = get_optional_ids(d)?;
                if eligible_leader_replicas.is_none() && last_known_elr.is_none() {
                    // Written as PARTITION_CHANGE: this form would not encode back the same.
                    return Err(RecordError::BadListFlag(0));
                }
                MetadataRecord::PartitionChange {
                    topic_id,
                    partition,
                    leader,
                    leader_epoch,
                    isr,
                    eligible_leader_replicas,
                    last_known_elr,
                }
            }
            PARTITION_ASSIGNMENT_CHANGE => MetadataRecord::PartitionAssignmentChange {
                topic_id: d.uuid()?,
                partition: d.i32()?,
                leader: d.i32()?,
                leader_epoch: d.i32()?,
                isr: get_ids(d)?,
                replicas: get_ids(d)?,
                adding_replicas: get_ids(d)?,
                removing_replicas: get_ids(d)?,
            },
            BROKER_CONFIG => MetadataRecord::BrokerConfig {
                resource_name: get_str(d)?,
                name: get_str(d)?,
                value: match d.u8()? {
                    0 => None,
                    1 => Some(get_str(d)?),
                    flag => return Err(RecordError::BadPresenceFlag(flag)),
                },
            },
            REGISTER_BROKER => MetadataRecord::RegisterBroker {
                broker_id: d.i32()?,
                incarnation_id: d.uuid()?,
                broker_epoch: d.i64()?,
                host: get_str(d)?,
                port: d.i32()?,
                rack: match d.u8()? {
                    0 => None,
                    1 => Some(get_str(d)?),
                    flag => return Err(RecordError::BadPresenceFlag(flag)),
                },
            },
            FENCE_BROKER => MetadataRecord::FenceBroker {
                broker_id: d.i32()?,
                broker_epoch: d.i64()?,
            },
            UNFENCE_BROKER => MetadataRecord::UnfenceBroker {
                broker_id: d.i32()?,
                broker_epoch: d.i64()?,
            },
            CONFIG => MetadataRecord::Config {
                topic_id: d.uuid()?,
                name: get_str(d)?,
                value: get_str(d)?,
            },
            REMOVE_TOPIC => MetadataRecord::RemoveTopic {
                topic_id: d.uuid()?,
            },
            PRODUCER_IDS => MetadataRecord::ProducerIds {
                next_producer_id: d.i64()?,
            },
            REMOVE_CONFIG => MetadataRecord::RemoveConfig {
                topic_id: d.uuid()?,
                name: get_str(d)?,
            },
            FEATURE_LEVEL => MetadataRecord::FeatureLevel {
                name: get_str(d)?,
                feature_level: d.i16()?,
            },
            other => return Err(RecordError::UnknownType(other)),
        })
    }
}

/// Encodes the records of one metadata log entry: `[count: u32]` then `[length: u32][record]`
/// per record.
pub fn encode_entry(records: &[MetadataRecord]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(64 * records.len() + 4);
    e.put_u32(records.len() as u32);
    for record in records {
        // The length goes in front: reserve it, write the record, patch it.
        let at = e.len();
        e.put_u32(0);
        record.put(&mut e);
        e.patch_i32(at, (e.len() - at - 4) as i32);
    }
    e.into_inner().into()
}

/// Decodes one metadata log entry written by `encode_entry`.
pub fn decode_entry(buf: &[u8]) -> Result<Vec<MetadataRecord>, RecordError> {
    let mut d = Decoder::from_slice(buf);
    let count = d.u32()?;
    if count as usize > RECORDS_PER_ENTRY_MAX {
        return Err(RecordError::TooManyRecords(count));
    }
    // Each record takes at least 5 bytes: bound the allocation by what the bytes can hold.
    let mut records = Vec::with_capacity((count as usize).min(d.remaining() / 5));
    for _ in 0..count {
        let len = d.u32()? as usize;
        let mut record = Decoder::new(d.take_bytes(len)?);
        records.push(MetadataRecord::get(&mut record)?);
        record.finish()?;
    }
    d.finish()?;
    Ok(records)
}

fn put_ids(e: &mut Encoder, ids: &[i32]) {
    // Replica lists are bounded by the broker count, far below u16::MAX.
    let ids = &ids[..ids.len().min(u16::MAX as usize)];
    e.put_u16(ids.len() as u16);
    for id in ids {
        e.put_i32(*id);
    }
}

fn get_ids(d: &mut Decoder) -> Result<Vec<i32>, ProtocolError> {
    let count = d.u16()? as usize;
    let mut ids = Vec::with_capacity(count.min(d.remaining() / 4));
    for _ in 0..count {
        ids.push(d.i32()?);
    }
    Ok(ids)
}

/// A presence flag (0 absent, 1 present), then the ids when present.
fn put_optional_ids(e: &mut Encoder, ids: Option<&[i32]>) {
    match ids {
        None => e.put_u8(0),
        Some(ids) => {
            e.put_u8(1);
            put_ids(e, ids);
        }
    }
}

fn get_optional_ids(d: &mut Decoder) -> Result<Option<Vec<i32>>, RecordError> {
    match d.u8()? {
        0 => Ok(None),
        1 => Ok(Some(get_ids(d)?)),
        flag => Err(RecordError::BadListFlag(flag)),
    }
}

/// A `u16` length, then the bytes.
fn put_str(e: &mut Encoder, s: &str) {
    // Names are bounded well below u16::MAX (topic names: 249 bytes; config values are checked
    // by the controller before they get here).
    let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
    e.put_u16(bytes.len() as u16);
    e.put_raw(bytes);
}

fn get_str(d: &mut Decoder) -> Result<String, ProtocolError> {
    let len = d.u16()? as usize;
    d.utf8_exact(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::golden::{check_golden, hex, unhex};

    fn samples() -> Vec<MetadataRecord> {
        let topic_id = Uuid::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788);
        vec![
            MetadataRecord::ClusterId {
                cluster_id: "abc".into(),
            },
            MetadataRecord::Topic {
                name: "orders".into(),
                topic_id,
            },
            MetadataRecord::Partition {
                topic_id,
                partition: 7,
                replicas: vec![1, 2, 3],
                isr: vec![2, 3],
                leader: 2,
                leader_epoch: 5,
            },
            MetadataRecord::PartitionChange {
                topic_id,
                partition: 7,
                leader: -1,
                leader_epoch: 6,
                isr: vec![3],
                eligible_leader_replicas: None,
                last_known_elr: None,
            },
            MetadataRecord::RegisterBroker {
                broker_id: 4,
                incarnation_id: Uuid::from_u128(99),
                broker_epoch: 12,
                host: "127.0.0.1".into(),
                port: 19192,
                rack: Some("r1".into()),
            },
            MetadataRecord::RegisterBroker {
                broker_id: 5,
                incarnation_id: Uuid::from_u128(98),
                broker_epoch: 13,
                host: "h".into(),
                port: 1,
                rack: None,
            },
            MetadataRecord::FenceBroker {
                broker_id: 4,
                broker_epoch: 12,
            },
            MetadataRecord::UnfenceBroker {
                broker_id: 4,
                broker_epoch: 12,
            },
            MetadataRecord::Config {
                topic_id,
                name: "retention.ms".into(),
                value: "1000".into(),
            },
            MetadataRecord::RemoveTopic { topic_id },
            MetadataRecord::ProducerIds {
                next_producer_id: 123_456_789_000,
            },
            MetadataRecord::RemoveConfig {
                topic_id,
                name: "retention.ms".into(),
            },
            MetadataRecord::FeatureLevel {
                name: "metadata.version".into(),
                feature_level: 7,
            },
            MetadataRecord::FeatureLevel {
                name: "group.version".into(),
                feature_level: -1,
            },
        ]
    }

    /// The records written since ELR (not in the golden bytes, which must not change).
    fn elr_samples() -> Vec<MetadataRecord> {
        let topic_id = Uuid::from_u128(7);
        let change = |elr: Option<Vec<i32>>, last_known_elr: Option<Vec<i32>>| {
            MetadataRecord::PartitionChange {
                topic_id,
                partition: 2,
                leader: -1,
                leader_epoch: 9,
                isr: vec![],
                eligible_leader_replicas: elr,
                last_known_elr,
            }
        };
        vec![
            change(Some(vec![1, 2]), Some(vec![3])),
            change(Some(vec![]), None),
            change(None, Some(vec![])),
        ]
    }

    #[test]
    fn elr_changes_round_trip_and_truncations_fail() {
        for record in elr_samples() {
            let mut buf = Vec::new();
            record.encode(&mut buf);
            assert_eq!(buf[0], PARTITION_CHANGE_ELR);
            assert_eq!(MetadataRecord::decode(&buf).unwrap(), record);
            for len in 0..buf.len() {
                assert!(MetadataRecord::decode(&buf[..len]).is_err());
            }
        }
        let entry = encode_entry(&elr_samples());
        assert_eq!(decode_entry(&entry).unwrap(), elr_samples());
        // Both lists absent is the plain PARTITION_CHANGE form, not a second spelling of it.
        let mut buf = Vec::new();
        elr_samples()[1].encode(&mut buf);
        // [.. isr][1][0 0] (an empty ELR) then [0] (no last known ELR): drop the ELR.
        let flag_at = buf.len() - 4;
        buf.truncate(flag_at);
        buf.extend_from_slice(&[0, 0]);
        assert!(MetadataRecord::decode(&buf).is_err());
    }

    #[test]
    fn records_round_trip() {
        for record in samples() {
            let mut buf = Vec::new();
            record.encode(&mut buf);
            assert_eq!(MetadataRecord::decode(&buf).unwrap(), record);
        }
    }

    #[test]
    fn entries_round_trip_and_truncations_fail() {
        let records = samples();
        let entry = encode_entry(&records);
        assert_eq!(decode_entry(&entry).unwrap(), records);
        assert_eq!(decode_entry(&encode_entry(&[])).unwrap(), vec![]);
        for len in 0..entry.len() {
            assert!(decode_entry(&entry[..len]).is_err());
        }
        // A count far beyond the bytes allocates nothing large and fails.
        let mut huge = entry.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_entry(&huge).is_err());
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        for record in samples() {
            let mut buf = Vec::new();
            record.encode(&mut buf);
            for len in 0..buf.len() {
                assert!(MetadataRecord::decode(&buf[..len]).is_err());
            }
            buf.push(0);
            assert!(MetadataRecord::decode(&buf).is_err());
        }
    }

    /// The encodings of `samples()` and of their entry, captured from the encoder that
    /// predates the shared codec: the metadata log's bytes on disk must never change.
    #[test]
    fn encodings_match_the_golden_bytes() {
        let mut actual: Vec<String> = samples()
            .iter()
            .map(|record| {
                let mut buf = Vec::new();
                record.encode(&mut buf);
                hex(&buf)
            })
            .collect();
        actual.push(hex(&encode_entry(&samples())));
        check_golden(
            "metadata_records.hex",
            include_str!("golden/metadata_records.hex"),
            &actual,
        );
        let golden: Vec<&str> = include_str!("golden/metadata_records.hex")
            .lines()
            .collect();
        for (line, record) in golden.iter().zip(samples()) {
            assert_eq!(MetadataRecord::decode(&unhex(line)).unwrap(), record);
        }
        assert_eq!(
            decode_entry(&unhex(golden[golden.len() - 1])).unwrap(),
            samples()
        );
    }

    /// Every byte of the golden entry overwritten with any of a few values decodes or errors,
    /// never panics; whatever decodes encodes back to the same bytes.
    #[test]
    fn garbled_golden_entry_never_panics() {
        let golden: Vec<&str> = include_str!("golden/metadata_records.hex")
            .lines()
            .collect();
        let entry = unhex(golden[golden.len() - 1]);
        for at in 0..entry.len() {
            for byte in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut garbled = entry.clone();
                garbled[at] = byte;
                if let Ok(records) = decode_entry(&garbled) {
                    assert_eq!(encode_entry(&records), garbled);
                }
            }
        }
    }

    /// Records added after the golden samples were captured round-trip and refuse truncation.
    #[test]
    fn newer_records_round_trip() {
        let topic_id = Uuid::from_u128(7);
        let records = [
            MetadataRecord::PartitionAssignmentChange {
                topic_id,
                partition: 3,
                leader: 2,
                leader_epoch: 9,
                isr: vec![1, 2],
                replicas: vec![2, 3, 1],
                adding_replicas: vec![3],
                removing_replicas: vec![1],
            },
            MetadataRecord::BrokerConfig {
                resource_name: "4".into(),
                name: "leader.replication.throttled.rate".into(),
                value: Some("1000000".into()),
            },
            MetadataRecord::BrokerConfig {
                resource_name: String::new(),
                name: "follower.replication.throttled.rate".into(),
                value: None,
            },
        ];
        for record in records {
            let mut buf = Vec::new();
            record.encode(&mut buf);
            assert_eq!(MetadataRecord::decode(&buf).unwrap(), record);
            for len in 0..buf.len() {
                assert!(MetadataRecord::decode(&buf[..len]).is_err());
            }
        }
    }
}
