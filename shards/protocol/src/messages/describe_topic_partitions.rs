//! DescribeTopicPartitions (key 75, KIP-966): Metadata's topic description with partition
//! pagination (a response partition limit and a cursor), used by Kafka 4's `kafka-topics
//! --describe` and the Java admin client's `describeTopics`.

use crate::codec::{Decoder, Encoder, Uuid};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DescribeTopicPartitions);

/// The schema's default `ResponsePartitionLimit`.
pub const DEFAULT_RESPONSE_PARTITION_LIMIT: i32 = 2000;

/// DescribeTopicPartitions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeTopicPartitionsRequest {
    /// Topics to describe; empty: every topic.
    pub topics: Vec<DescribeTopicPartitionsTopicRequest>,
    /// The most partitions the response may hold.
    pub response_partition_limit: i32,
    /// Where to start: a topic and a partition index; `None` from the beginning.
    pub cursor: Option<Cursor>,
}

impl Default for DescribeTopicPartitionsRequest {
    fn default() -> Self {
        DescribeTopicPartitionsRequest {
            topics: Vec::new(),
            response_partition_limit: DEFAULT_RESPONSE_PARTITION_LIMIT,
            cursor: None,
        }
    }
}

/// One requested topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeTopicPartitionsTopicRequest {
    /// Topic name.
    pub name: String,
}

/// A position in the (name-sorted) topic list: the request's `Cursor`, the response's
/// `NextCursor`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cursor {
    /// The topic to start at.
    pub topic_name: String,
    /// The partition index to start at within it.
    pub partition_index: i32,
}

/// Reads a nullable struct's presence byte (Kafka: negative for null) and the struct.
fn decode_cursor(d: &mut Decoder) -> Result<Option<Cursor>> {
    if d.i8()? < 0 {
        return Ok(None);
    }
    let c = Cursor {
        topic_name: d.string(true)?,
        partition_index: d.i32()?,
    };
    read_end(d, true)?;
    Ok(Some(c))
}

fn encode_cursor(e: &mut Encoder, cursor: Option<&Cursor>) {
    match cursor {
        None => e.put_i8(-1),
        Some(c) => {
            e.put_i8(1);
            e.put_string(&c.topic_name, true);
            e.put_i32(c.partition_index);
            put_end(e, true);
        }
    }
}

impl DescribeTopicPartitionsRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let r = DescribeTopicPartitionsRequest {
            topics: d.array(true, |d| {
                let t = DescribeTopicPartitionsTopicRequest {
                    name: d.string(true)?,
                };
                read_end(d, true)?;
                Ok(t)
            })?,
            response_partition_limit: d.i32()?,
            cursor: decode_cursor(d)?,
        };
        read_end(d, true)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.name, true);
            put_end(e, true);
        });
        e.put_i32(self.response_partition_limit);
        encode_cursor(e, self.cursor.as_ref());
        put_end(e, true);
    }
}

/// DescribeTopicPartitions response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeTopicPartitionsResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<DescribeTopicPartitionsResponseTopic>,
    /// Where the next page starts; `None` when this page is the last.
    pub next_cursor: Option<Cursor>,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeTopicPartitionsResponseTopic {
    /// Topic error.
    pub error_code: i16,
    /// Topic name.
    pub name: Option<String>,
    /// Topic id (zero when unknown).
    pub topic_id: Uuid,
    /// Whether the topic is one of Kafka's internal topics.
    pub is_internal: bool,
    /// Partitions.
    pub partitions: Vec<DescribeTopicPartitionsResponsePartition>,
    /// Bit field of the operations the caller may perform on the topic.
    pub topic_authorized_operations: i32,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeTopicPartitionsResponsePartition {
    /// Partition error.
    pub error_code: i16,
    /// Partition index.
    pub partition_index: i32,
    /// Leader broker id (-1: none).
    pub leader_id: i32,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// Every replica.
    pub replica_nodes: Vec<i32>,
    /// In-sync replicas.
    pub isr_nodes: Vec<i32>,
    /// Eligible leader replicas (KIP-966).
    pub eligible_leader_replicas: Option<Vec<i32>>,
    /// Last known eligible leader replicas (KIP-966).
    pub last_known_elr: Option<Vec<i32>>,
    /// Replicas on brokers that are not available.
    pub offline_replicas: Vec<i32>,
}

fn decode_ids(d: &mut Decoder) -> Result<Vec<i32>> {
    d.array(true, |d| d.i32())
}

fn encode_ids(e: &mut Encoder, ids: &[i32]) {
    e.put_array(ids, true, |e, id| e.put_i32(*id));
}

impl DescribeTopicPartitionsResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let r = DescribeTopicPartitionsResponse {
            throttle_time_ms: d.i32()?,
            topics: d.array(true, |d| {
                let t = DescribeTopicPartitionsResponseTopic {
                    error_code: d.i16()?,
                    name: d.nullable_string(true)?,
                    topic_id: d.uuid()?,
                    is_internal: d.bool()?,
                    partitions: d.array(true, |d| {
                        let p = DescribeTopicPartitionsResponsePartition {
                            error_code: d.i16()?,
                            partition_index: d.i32()?,
                            leader_id: d.i32()?,
                            leader_epoch: d.i32()?,
                            replica_nodes: decode_ids(d)?,
                            isr_nodes: decode_ids(d)?,
                            eligible_leader_replicas: d.nullable_array(true, |d| d.i32())?,
                            last_known_elr: d.nullable_array(true, |d| d.i32())?,
                            offline_replicas: decode_ids(d)?,
                        };
                        read_end(d, true)?;
                        Ok(p)
                    })?,
                    topic_authorized_operations: d.i32()?,
                };
                read_end(d, true)?;
                Ok(t)
            })?,
            next_cursor: decode_cursor(d)?,
        };
        read_end(d, true)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.topics, true, |e, t| {
            e.put_i16(t.error_code);
            e.put_nullable_string(t.name.as_deref(), true);
            e.put_uuid(t.topic_id);
            e.put_bool(t.is_internal);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i16(p.error_code);
                e.put_i32(p.partition_index);
                e.put_i32(p.leader_id);
                e.put_i32(p.leader_epoch);
                encode_ids(e, &p.replica_nodes);
                encode_ids(e, &p.isr_nodes);
                e.put_nullable_array(p.eligible_leader_replicas.as_deref(), true, |e, id| {
                    e.put_i32(*id)
                });
                e.put_nullable_array(p.last_known_elr.as_deref(), true, |e, id| e.put_i32(*id));
                encode_ids(e, &p.offline_replicas);
                put_end(e, true);
            });
            e.put_i32(t.topic_authorized_operations);
            put_end(e, true);
        });
        encode_cursor(e, self.next_cursor.as_ref());
        put_end(e, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_cursor_is_one_negative_byte() {
        let request = DescribeTopicPartitionsRequest {
            topics: vec![DescribeTopicPartitionsTopicRequest { name: "t".into() }],
            ..Default::default()
        };
        let mut e = Encoder::new();
        request.encode(&mut e, 0);
        // topics [len 1+1, "t" (len 1+1), tags], limit 2000, cursor null, tags
        assert_eq!(
            e.as_slice(),
            &[2, 2, b't', 0, 0, 0, 0x07, 0xd0, 0xff, 0][..]
        );
        let mut d = Decoder::new(e.into_inner().freeze());
        assert_eq!(
            DescribeTopicPartitionsRequest::decode(&mut d, 0).unwrap(),
            request
        );
        d.finish().unwrap();
    }
}
