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
    /// A partition of a topic, with its placement.
    Partition {
        /// Topic id.
        topic_id: Uuid,
        /// Partition index.
        partition: i32,
        /// Replica node ids.
        replicas: Vec<i32>,
        /// Leader node id.
        leader: i32,
        /// Leader epoch.
        leader_epoch: i32,
        /// The shard on the leader that owns it, chosen once here.
        shard: u16,
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
}

const CLUSTER_ID: u8 = 1;
const TOPIC: u8 = 2;
const PARTITION: u8 = 3;
const CONFIG: u8 = 4;
const REMOVE_TOPIC: u8 = 5;
const PRODUCER_IDS: u8 = 7;
const REMOVE_CONFIG: u8 = 6;

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
                leader,
                leader_epoch,
                shard,
            } => {
                out.put_u8(PARTITION);
                out.put_slice(&topic_id.0);
                out.put_i32(*partition);
                out.put_u16(replicas.len() as u16);
                for r in replicas {
                    out.put_i32(*r);
                }
                out.put_i32(*leader);
                out.put_i32(*leader_epoch);
                out.put_u16(*shard);
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
            PARTITION => {
                let topic_id = r.uuid()?;
                let partition = r.i32()?;
                let count = r.u16()? as usize;
                let mut replicas = Vec::with_capacity(count.min(r.buf.len() / 4));
                for _ in 0..count {
                    replicas.push(r.i32()?);
                }
                MetadataRecord::Partition {
                    topic_id,
                    partition,
                    replicas,
                    leader: r.i32()?,
                    leader_epoch: r.i32()?,
                    shard: r.u16()?,
                }
            }
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
            _ => return Err(RecordError("unknown record type")),
        };
        if !r.buf.is_empty() {
            return Err(RecordError("trailing bytes"));
        }
        Ok(record)
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
                leader: 2,
                leader_epoch: 5,
                shard: 3,
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
}
