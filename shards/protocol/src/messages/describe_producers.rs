//! DescribeProducers (key 61, KIP-664): the active producers of partitions, from each
//! partition's producer state (`kafka-transactions describe-producers`).

use crate::codec::{Decoder, Encoder};
use crate::error::Result;

use super::common::{put_end, read_end};

crate::apis::declared_versions!(DescribeProducers);

/// DescribeProducers request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeProducersRequest {
    /// Topics.
    pub topics: Vec<DescribeProducersTopicRequest>,
}

/// One topic's partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeProducersTopicRequest {
    /// Topic name.
    pub name: String,
    /// Partition indexes.
    pub partition_indexes: Vec<i32>,
}

impl DescribeProducersRequest {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let r = DescribeProducersRequest {
            topics: d.array(true, |d| {
                let t = DescribeProducersTopicRequest {
                    name: d.string(true)?,
                    partition_indexes: d.array(true, |d| d.i32())?,
                };
                read_end(d, true)?;
                Ok(t)
            })?,
        };
        read_end(d, true)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partition_indexes, true, |e, p| e.put_i32(*p));
            put_end(e, true);
        });
        put_end(e, true);
    }
}

/// DescribeProducers response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeProducersResponse {
    /// Throttle time.
    pub throttle_time_ms: i32,
    /// Topics.
    pub topics: Vec<DescribeProducersTopicResponse>,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeProducersTopicResponse {
    /// Topic name.
    pub name: String,
    /// Partitions.
    pub partitions: Vec<DescribeProducersPartitionResponse>,
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DescribeProducersPartitionResponse {
    /// Partition index.
    pub partition_index: i32,
    /// Partition error.
    pub error_code: i16,
    /// Details of the error, if any.
    pub error_message: Option<String>,
    /// The producers with state on the partition.
    pub active_producers: Vec<ProducerState>,
}

/// One producer's state on a partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProducerState {
    /// Producer id.
    pub producer_id: i64,
    /// Producer epoch.
    pub producer_epoch: i32,
    /// Sequence of the last record written (-1: none).
    pub last_sequence: i32,
    /// Max timestamp of the last batch written (-1: none).
    pub last_timestamp: i64,
    /// Epoch of the transaction coordinator that last wrote a marker (-1: none).
    pub coordinator_epoch: i32,
    /// First offset of the producer's open transaction (-1: none).
    pub current_txn_start_offset: i64,
}

impl DescribeProducersResponse {
    /// Decodes the body.
    pub fn decode(d: &mut Decoder, version: i16) -> Result<Self> {
        super::check_version(API_KEY, MIN_VERSION, MAX_VERSION, version)?;
        let r = DescribeProducersResponse {
            throttle_time_ms: d.i32()?,
            topics: d.array(true, |d| {
                let t = DescribeProducersTopicResponse {
                    name: d.string(true)?,
                    partitions: d.array(true, |d| {
                        let p = DescribeProducersPartitionResponse {
                            partition_index: d.i32()?,
                            error_code: d.i16()?,
                            error_message: d.nullable_string(true)?,
                            active_producers: d.array(true, |d| {
                                let s = ProducerState {
                                    producer_id: d.i64()?,
                                    producer_epoch: d.i32()?,
                                    last_sequence: d.i32()?,
                                    last_timestamp: d.i64()?,
                                    coordinator_epoch: d.i32()?,
                                    current_txn_start_offset: d.i64()?,
                                };
                                read_end(d, true)?;
                                Ok(s)
                            })?,
                        };
                        read_end(d, true)?;
                        Ok(p)
                    })?,
                };
                read_end(d, true)?;
                Ok(t)
            })?,
        };
        read_end(d, true)?;
        Ok(r)
    }

    /// Encodes the body.
    pub fn encode(&self, e: &mut Encoder, _version: i16) {
        e.put_i32(self.throttle_time_ms);
        e.put_array(&self.topics, true, |e, t| {
            e.put_string(&t.name, true);
            e.put_array(&t.partitions, true, |e, p| {
                e.put_i32(p.partition_index);
                e.put_i16(p.error_code);
                e.put_nullable_string(p.error_message.as_deref(), true);
                e.put_array(&p.active_producers, true, |e, s| {
                    e.put_i64(s.producer_id);
                    e.put_i32(s.producer_epoch);
                    e.put_i32(s.last_sequence);
                    e.put_i64(s.last_timestamp);
                    e.put_i32(s.coordinator_epoch);
                    e.put_i64(s.current_txn_start_offset);
                    put_end(e, true);
                });
                put_end(e, true);
            });
            put_end(e, true);
        });
        put_end(e, true);
    }
}
