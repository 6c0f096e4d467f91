//! Metadata records, KRaft's vocabulary, in a compact binary form:
//! each record is a type byte followed by its fields (big-endian integers, u16-length strings).

use bytes::BufMut;
use sluice_protocol::codec::Uuid;

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
        /// The new ISR.
        isr: Vec<i32>,
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
/// Records in one metadata log entry: a change is one entry, so it commits whole or not at all.
const RECORDS_PER_ENTRY_MAX: usize = 1 << 20;

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
#[error("malformed metadata record: {0}")]
pub struct RecordError(&'static str);

impl MetadataRecord {
    /// Appends the encoded record to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MetadataRecord::ClusterId { cluster_id } => {
                out.put_u8(CLUSTER_ID);
                put_str(out, cluster_id);
            }
            MetadataRecord::Topic { name, topic_id } => {
                out.put_u8(TOPIC);
                put_str(out, name);
                out.put_slice(&topic_id.0);
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
            } => {
                out.put_u8(PARTITION);
                out.put_slice(&topic_id.0);
                out.put_i32(*partition);
                put_ids(out, replicas);
                put_ids(out, isr);
                out.put_i32(*leader);
                out.put_i32(*leader_epoch);
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                leader_epoch,
                isr,
            } => {
                out.put_u8(PARTITION_CHANGE);
                out.put_slice(&topic_id.0);
                out.put_i32(*partition);
                out.put_i32(*leader);
                out.put_i32(*leader_epoch);
                put_ids(out, isr);
            }
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
            } => {
                out.put_u8(REGISTER_BROKER);
                out.put_i32(*broker_id);
                out.put_slice(&incarnation_id.0);
                out.put_i64(*broker_epoch);
                put_str(out, host);
                out.put_i32(*port);
                match rack {
                    None => out.put_u8(0),
                    Some(rack) => {
                        out.put_u8(1);
                        put_str(out, rack);
                    }
                }
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => {
                out.put_u8(FENCE_BROKER);
                out.put_i32(*broker_id);
                out.put_i64(*broker_epoch);
            }
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => {
                out.put_u8(UNFENCE_BROKER);
                out.put_i32(*broker_id);
                out.put_i64(*broker_epoch);
            }
            MetadataRecord::Config {
                topic_id,
                name,
                value,
            } => {
                out.put_u8(CONFIG);
                out.put_slice(&topic_id.0);
                put_str(out, name);
                put_str(out, value);
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                out.put_u8(REMOVE_TOPIC);
                out.put_slice(&topic_id.0);
            }
            MetadataRecord::ProducerIds { next_producer_id } => {
                out.put_u8(PRODUCER_IDS);
                out.put_i64(*next_producer_id);
            }
            MetadataRecord::RemoveConfig { topic_id, name } => {
                out.put_u8(REMOVE_CONFIG);
                out.put_slice(&topic_id.0);
                put_str(out, name);
            }
            MetadataRecord::FeatureLevel {
                name,
                feature_level,
            } => {
                out.put_u8(FEATURE_LEVEL);
                put_str(out, name);
                out.put_i16(*feature_level);
            }
        }
    }

    /// Decodes one record that fills `buf` exactly.
    pub fn decode(buf: &[u8]) -> Result<MetadataRecord, RecordError> {
        let mut r = Reader { buf };
        let record = match r.u8()? {
            CLUSTER_ID => MetadataRecord::ClusterId {
                cluster_id: r.str()?,
            },
            TOPIC => MetadataRecord::Topic {
                name: r.str()?,
                topic_id: r.uuid()?,
            },
            PARTITION => MetadataRecord::Partition {
                topic_id: r.uuid()?,
                partition: r.i32()?,
                replicas: r.ids()?,
                isr: r.ids()?,
                leader: r.i32()?,
                leader_epoch: r.i32()?,
            },
            PARTITION_CHANGE => MetadataRecord::PartitionChange {
                topic_id: r.uuid()?,
                partition: r.i32()?,
                leader: r.i32()?,
                leader_epoch: r.i32()?,
                isr: r.ids()?,
            },
            REGISTER_BROKER => MetadataRecord::RegisterBroker {
                broker_id: r.i32()?,
                incarnation_id: r.uuid()?,
                broker_epoch: r.i64()?,
                host: r.str()?,
                port: r.i32()?,
                rack: match r.u8()? {
                    0 => None,
                    1 => Some(r.str()?),
                    _ => return Err(RecordError("bad rack flag")),
                },
            },
            FENCE_BROKER => MetadataRecord::FenceBroker {
                broker_id: r.i32()?,
                broker_epoch: r.i64()?,
            },
            UNFENCE_BROKER => MetadataRecord::UnfenceBroker {
                broker_id: r.i32()?,
                broker_epoch: r.i64()?,
            },
            CONFIG => MetadataRecord::Config {
                topic_id: r.uuid()?,
                name: r.str()?,
                value: r.str()?,
            },
            REMOVE_TOPIC => MetadataRecord::RemoveTopic {
                topic_id: r.uuid()?,
            },
            PRODUCER_IDS => MetadataRecord::ProducerIds {
                next_producer_id: r.i64()?,
            },
            REMOVE_CONFIG => MetadataRecord::RemoveConfig {
                topic_id: r.uuid()?,
                name: r.str()?,
            },
            FEATURE_LEVEL => MetadataRecord::FeatureLevel {
                name: r.str()?,
                feature_level: r.u16()? as i16,
            },
            _ => return Err(RecordError("unknown record type")),
        };
        if !r.buf.is_empty() {
            return Err(RecordError("trailing bytes"));
        }
        Ok(record)
    }
}

/// Encodes the records of one metadata log entry: `[count: u32]` then `[length: u32][record]`
/// per record.
pub fn encode_entry(records: &[MetadataRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 * records.len());
    out.put_u32(records.len() as u32);
    let mut record_buf = Vec::new();
    for record in records {
        record_buf.clear();
        record.encode(&mut record_buf);
        out.put_u32(record_buf.len() as u32);
        out.put_slice(&record_buf);
    }
    out
}

/// Decodes one metadata log entry written by `encode_entry`.
pub fn decode_entry(buf: &[u8]) -> Result<Vec<MetadataRecord>, RecordError> {
    let mut r = Reader { buf };
    let count = r.u32()? as usize;
    if count > RECORDS_PER_ENTRY_MAX {
        return Err(RecordError("too many records in an entry"));
    }
    // Each record takes at least 5 bytes: bound the allocation by what the bytes can hold.
    let mut records = Vec::with_capacity(count.min(r.buf.len() / 5));
    for _ in 0..count {
        let len = r.u32()? as usize;
        records.push(MetadataRecord::decode(r.take(len)?)?);
    }
    if !r.buf.is_empty() {
        return Err(RecordError("trailing bytes after the entry's records"));
    }
    Ok(records)
}

fn put_ids(out: &mut Vec<u8>, ids: &[i32]) {
    // Replica lists are bounded by the broker count, far below u16::MAX.
    let len = ids.len().min(u16::MAX as usize);
    out.put_u16(len as u16);
    for id in &ids[..len] {
        out.put_i32(*id);
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Names are bounded well below u16::MAX (topic names: 249 bytes; config values are checked
    // by the controller before they get here).
    let len = s.len().min(u16::MAX as usize);
    out.put_u16(len as u16);
    out.put_slice(&s.as_bytes()[..len]);
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], RecordError> {
        if self.buf.len() < n {
            return Err(RecordError("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, RecordError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, RecordError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn ids(&mut self) -> Result<Vec<i32>, RecordError> {
        let count = self.u16()? as usize;
        let mut ids = Vec::with_capacity(count.min(self.buf.len() / 4));
        for _ in 0..count {
            ids.push(self.i32()?);
        }
        Ok(ids)
    }

    fn i32(&mut self) -> Result<i32, RecordError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn i64(&mut self) -> Result<i64, RecordError> {
        let b = self.take(8)?;
        let mut v = [0u8; 8];
        v.copy_from_slice(b);
        Ok(i64::from_be_bytes(v))
    }

    fn uuid(&mut self) -> Result<Uuid, RecordError> {
        let mut id = [0u8; 16];
        id.copy_from_slice(self.take(16)?);
        Ok(Uuid(id))
    }

    fn str(&mut self) -> Result<String, RecordError> {
        let len = self.u16()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| RecordError("invalid utf-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(line: &str) -> Vec<u8> {
        (0..line.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Compares `actual` (one hex line per sample) with the golden file `name`, whose bytes were
    /// captured once and must not change.
    fn check_golden(name: &str, golden: &str, actual: &[String]) {
        let golden: Vec<&str> = golden.lines().collect();
        assert_eq!(actual, golden.as_slice(), "{name}: the bytes changed");
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
}
