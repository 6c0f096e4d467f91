//! The controller listener's private RPC: message types and their wire codec.
//!
//! In KRaft, controllers speak Kafka APIs to each other and to brokers: Vote, BeginQuorumEpoch
//! and Fetch for the Raft quorum, BrokerRegistration and BrokerHeartbeat for the broker
//! lifecycle, plus forwarding of admin requests to the active controller. Sluice's controllers
//! only ever talk to Sluice brokers and Sluice controllers, so one private, Sluice-internal
//! protocol carries raft-rs messages and the broker lifecycle instead (Kafka clients never see
//! it). The concepts and their names stay Kafka's; the framing is Sluice's own.
//!
//! A frame on the wire is `u32 length` (big-endian, of what follows), `u32 correlation_id`,
//! `u8 kind`, then the body. A response carries its request's correlation id; correlation id
//! [`ONE_WAY`] (0) marks a one-way message, which gets no response. Integers are big-endian,
//! strings and byte strings are a `u32` length then the bytes, lists a `u32` count then the
//! items, options and results a `u8` tag then the value.
//!
//! Decoding is hostile-input safe: every length and count is checked against the bytes left
//! before anything is allocated, so a bad frame gives an [`RpcError`], never a panic or a huge
//! allocation.

use sluice_protocol::codec::Uuid;
use sluice_shard::{
    ConfigChange, ConfigOp, CreatedTopic, DeletedTopic, FeatureUpdate, MetadataError,
    NewPartitions, NewTopic, ProducerIdBlock, QuorumEndpoint, QuorumInfo, QuorumReplica,
    TopicConfigChanges, TopicRef, UpgradeType,
};

/// Largest frame accepted or produced, counted as the length prefix counts (everything after
/// it). Bounds the memory one frame can take; a metadata fetch is sized well under it.
pub const RPC_FRAME_BYTES_MAX: usize = 16 * 1024 * 1024;

/// Bytes of the length prefix in front of every frame.
pub const FRAME_PREFIX_BYTES: usize = 4;

/// The correlation id of one-way messages (no response is sent).
pub const ONE_WAY: u32 = 0;

/// Why a frame could not be decoded, encoded, sent or answered.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The frame ended in the middle of a field.
    #[error("frame truncated")]
    Truncated,
    /// Bytes left over after the message.
    #[error("{count} bytes after the end of the message")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// A message kind this side does not know (or a response kind where a request belongs).
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    /// An enum, option or boolean tag out of range.
    #[error("unknown {what} tag {tag}")]
    UnknownTag {
        /// The field.
        what: &'static str,
        /// The tag read.
        tag: u8,
    },
    /// A string that is not UTF-8.
    #[error("string is not UTF-8")]
    InvalidUtf8,
    /// A frame over [`RPC_FRAME_BYTES_MAX`].
    #[error("frame of {bytes} bytes is over the {max} bytes allowed")]
    FrameTooLarge {
        /// The frame's size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A count that cannot fit in the bytes left of the frame.
    #[error("{count} {what} cannot fit in the {bytes_left} bytes left")]
    TooMany {
        /// What is counted.
        what: &'static str,
        /// The count read.
        count: u32,
        /// Bytes left in the frame.
        bytes_left: usize,
    },
    /// Socket error.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// No answer in time.
    #[error("timed out")]
    Timeout,
    /// The connection closed (by the peer, or after an error) before the answer came.
    #[error("connection closed")]
    Closed,
    /// The connection this call was in flight on failed.
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// The one-way queue is full; the message was dropped.
    #[error("send queue full; message dropped")]
    QueueFull,
    /// A response with a correlation id this side never used (0, or a request of its own).
    #[error("unexpected correlation id {0}")]
    UnexpectedCorrelationId(u32),
}

/// A request on the controller listener.
#[derive(Clone, Debug)]
pub enum ControllerRequest {
    /// One-way, voter → voter: a raft-rs `Message`, protobuf bytes (decoded by the receiver
    /// with `sluice_quorum::decode_message`).
    Raft {
        /// The sending voter.
        from_node_id: i32,
        /// The encoded message.
        message: Vec<u8>,
    },
    /// KRaft's BrokerRegistrationRequest.
    BrokerRegistration {
        /// `node.id` of the broker.
        broker_id: i32,
        /// Random per broker process start: tells a restart from a duplicate.
        incarnation_id: Uuid,
        /// Advertised host.
        host: String,
        /// Advertised port.
        port: i32,
        /// `broker.rack`.
        rack: Option<String>,
    },
    /// KRaft's BrokerHeartbeatRequest.
    BrokerHeartbeat {
        /// `node.id` of the broker.
        broker_id: i32,
        /// The epoch its registration got.
        broker_epoch: i64,
        /// The last metadata offset it applied.
        current_metadata_offset: i64,
        /// Asks to be fenced.
        want_fence: bool,
        /// Asks for a controlled shutdown.
        want_shut_down: bool,
    },
    /// A broker (observer) reads committed metadata log entries after `offset_after` (KRaft:
    /// Fetch of `__cluster_metadata`). Long poll: answered when there is something or after
    /// `max_wait_ms`.
    FetchMetadata {
        /// The asking broker.
        broker_id: i32,
        /// The last index it has.
        offset_after: u64,
        /// How long to wait for new entries.
        max_wait_ms: u32,
        /// Soft bound on the entry bytes answered (one entry always goes).
        bytes_max: u32,
    },
    /// Forwarded CreateTopics (KRaft's forwarding to the active controller).
    CreateTopics {
        /// The topics.
        topics: Vec<NewTopic>,
        /// Only check, create nothing.
        validate_only: bool,
    },
    /// Forwarded DeleteTopics.
    DeleteTopics {
        /// The topics.
        topics: Vec<TopicRef>,
    },
    /// Forwarded AlterConfigs / IncrementalAlterConfigs.
    AlterConfigs {
        /// One entry per topic resource.
        topics: Vec<TopicConfigChanges>,
        /// Only check, change nothing.
        validate_only: bool,
    },
    /// Forwarded AllocateProducerIds.
    AllocateProducerIds {
        /// The asking broker.
        broker_id: i32,
    },
    /// Forwarded CreatePartitions.
    CreatePartitions {
        /// The topics to grow.
        topics: Vec<NewPartitions>,
        /// Only check, change nothing.
        validate_only: bool,
    },
    /// Forwarded DescribeQuorum: only the active controller answers.
    DescribeQuorum,
    /// Forwarded UpdateFeatures.
    UpdateFeatures {
        /// The changes, in request order.
        updates: Vec<FeatureUpdate>,
        /// Only check, change nothing.
        validate_only: bool,
    },
}

/// A response on the controller listener.
#[derive(Clone, Debug)]
pub enum ControllerResponse {
    /// This node is not the active controller; `leader_id` is the one it knows of, -1 if none
    /// (KRaft's NOT_CONTROLLER with a hint).
    NotController {
        /// The known leader, or -1.
        leader_id: i32,
    },
    /// Answer to BrokerRegistration.
    BrokerRegistration {
        /// The broker epoch, or why the registration was refused.
        result: Result<i64, MetadataError>,
    },
    /// Answer to BrokerHeartbeat.
    BrokerHeartbeat {
        /// The broker's state, or why the heartbeat was refused.
        result: Result<HeartbeatState, MetadataError>,
    },
    /// Committed entries, in order.
    FetchMetadata {
        /// The entries after the asked offset.
        entries: Vec<MetadataEntry>,
        /// The controller's commit index.
        committed_index: u64,
        /// The leader the controller knows of, or -1.
        leader_id: i32,
        /// The broker asked for entries before the controller's log start: it must load a
        /// snapshot first.
        snapshot_needed: bool,
    },
    /// Answer to CreateTopics.
    CreateTopics {
        /// One result per topic, in order.
        results: Vec<Result<CreatedTopic, MetadataError>>,
        /// The metadata log index at which the change committed (the broker waits until its
        /// own image has applied it).
        metadata_offset: u64,
    },
    /// Answer to DeleteTopics.
    DeleteTopics {
        /// One result per topic, in order.
        results: Vec<Result<DeletedTopic, MetadataError>>,
        /// The metadata log index at which the change committed.
        metadata_offset: u64,
    },
    /// Answer to AlterConfigs.
    AlterConfigs {
        /// One result per topic, in order.
        results: Vec<Result<(), MetadataError>>,
        /// The metadata log index at which the change committed.
        metadata_offset: u64,
    },
    /// Answer to AllocateProducerIds.
    AllocateProducerIds {
        /// The block, or why none was allocated.
        result: Result<ProducerIdBlock, MetadataError>,
    },
    /// Answer to CreatePartitions.
    CreatePartitions {
        /// One result per topic, in order.
        results: Vec<Result<(), MetadataError>>,
        /// The metadata log index at which the change committed.
        metadata_offset: u64,
    },
    /// Answer to DescribeQuorum.
    DescribeQuorum {
        /// The quorum as the active controller sees it.
        result: Result<QuorumInfo, MetadataError>,
    },
    /// Answer to UpdateFeatures.
    UpdateFeatures {
        /// Done (or would be), or the first refusal.
        result: Result<(), MetadataError>,
        /// The metadata log index at which the change committed.
        metadata_offset: u64,
    },
}

/// A broker's state as its heartbeat answer tells it (KRaft's BrokerHeartbeatResponse).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatState {
    /// The broker has caught up with the metadata log.
    pub is_caught_up: bool,
    /// The broker is fenced (gets no partition leadership).
    pub is_fenced: bool,
    /// The broker may finish its controlled shutdown.
    pub should_shut_down: bool,
}

/// One committed metadata log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataEntry {
    /// Raft log index.
    pub index: u64,
    /// Raft term it was written in.
    pub term: u64,
    /// The entry's bytes (metadata records).
    pub data: Vec<u8>,
}

/// Message kinds. Responses have the high bit set so a frame sent the wrong way is refused.
mod kind {
    pub const RAFT: u8 = 1;
    pub const BROKER_REGISTRATION: u8 = 2;
    pub const BROKER_HEARTBEAT: u8 = 3;
    pub const FETCH_METADATA: u8 = 4;
    pub const CREATE_TOPICS: u8 = 5;
    pub const DELETE_TOPICS: u8 = 6;
    pub const ALTER_CONFIGS: u8 = 7;
    pub const ALLOCATE_PRODUCER_IDS: u8 = 8;
    pub const CREATE_PARTITIONS: u8 = 9;
    pub const DESCRIBE_QUORUM: u8 = 10;
    pub const UPDATE_FEATURES: u8 = 11;
    pub const RESPONSE: u8 = 0x80;
    pub const NOT_CONTROLLER: u8 = RESPONSE;
}

/// The frame at the start of `buffer`: `Some((frame, consumed))` once it is complete, where
/// `frame` excludes the length prefix (what [`ControllerRequest::decode`] takes) and
/// `consumed` includes it. A length over [`RPC_FRAME_BYTES_MAX`] is an error as soon as the
/// prefix is in, so a reader never buffers toward it.
pub fn split_frame(buffer: &[u8]) -> Result<Option<(&[u8], usize)>, RpcError> {
    let Some(prefix) = buffer.first_chunk::<FRAME_PREFIX_BYTES>() else {
        return Ok(None);
    };
    let length = u32::from_be_bytes(*prefix) as usize;
    if length > RPC_FRAME_BYTES_MAX {
        return Err(RpcError::FrameTooLarge {
            bytes: length,
            max: RPC_FRAME_BYTES_MAX,
        });
    }
    let end = FRAME_PREFIX_BYTES + length;
    Ok(buffer
        .get(FRAME_PREFIX_BYTES..end)
        .map(|frame| (frame, end)))
}

impl ControllerRequest {
    /// Appends the whole frame (length prefix included) to `out`. Refuses (and appends
    /// nothing) a frame over [`RPC_FRAME_BYTES_MAX`], which the peer would refuse.
    pub fn encode(&self, correlation_id: u32, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let start = begin_frame(out, correlation_id, self.kind());
        self.put_body(out);
        finish_frame(out, start)
    }

    /// Decodes a frame without its length prefix (as [`split_frame`] gives it): the
    /// correlation id and the request.
    pub fn decode(frame: &[u8]) -> Result<(u32, ControllerRequest), RpcError> {
        let (correlation_id, kind, mut input) = open_frame(frame)?;
        let request = ControllerRequest::get_body(kind, &mut input)?;
        input.finish()?;
        Ok((correlation_id, request))
    }

    fn kind(&self) -> u8 {
        match self {
            ControllerRequest::Raft { .. } => kind::RAFT,
            ControllerRequest::BrokerRegistration { .. } => kind::BROKER_REGISTRATION,
            ControllerRequest::BrokerHeartbeat { .. } => kind::BROKER_HEARTBEAT,
            ControllerRequest::FetchMetadata { .. } => kind::FETCH_METADATA,
            ControllerRequest::CreateTopics { .. } => kind::CREATE_TOPICS,
            ControllerRequest::DeleteTopics { .. } => kind::DELETE_TOPICS,
            ControllerRequest::AlterConfigs { .. } => kind::ALTER_CONFIGS,
            ControllerRequest::AllocateProducerIds { .. } => kind::ALLOCATE_PRODUCER_IDS,
            ControllerRequest::CreatePartitions { .. } => kind::CREATE_PARTITIONS,
            ControllerRequest::DescribeQuorum => kind::DESCRIBE_QUORUM,
            ControllerRequest::UpdateFeatures { .. } => kind::UPDATE_FEATURES,
        }
    }

    fn put_body(&self, out: &mut Vec<u8>) {
        match self {
            ControllerRequest::Raft {
                from_node_id,
                message,
            } => {
                from_node_id.put(out);
                put_bytes(message, out);
            }
            ControllerRequest::BrokerRegistration {
                broker_id,
                incarnation_id,
                host,
                port,
                rack,
            } => {
                broker_id.put(out);
                incarnation_id.put(out);
                host.put(out);
                port.put(out);
                rack.put(out);
            }
            ControllerRequest::BrokerHeartbeat {
                broker_id,
                broker_epoch,
                current_metadata_offset,
                want_fence,
                want_shut_down,
            } => {
                broker_id.put(out);
                broker_epoch.put(out);
                current_metadata_offset.put(out);
                want_fence.put(out);
                want_shut_down.put(out);
            }
            ControllerRequest::FetchMetadata {
                broker_id,
                offset_after,
                max_wait_ms,
                bytes_max,
            } => {
                broker_id.put(out);
                offset_after.put(out);
                max_wait_ms.put(out);
                bytes_max.put(out);
            }
            ControllerRequest::CreateTopics {
                topics,
                validate_only,
            } => {
                topics.put(out);
                validate_only.put(out);
            }
            ControllerRequest::DeleteTopics { topics } => topics.put(out),
            ControllerRequest::AlterConfigs {
                topics,
                validate_only,
            } => {
                topics.put(out);
                validate_only.put(out);
            }
            ControllerRequest::AllocateProducerIds { broker_id } => broker_id.put(out),
            ControllerRequest::CreatePartitions {
                topics,
                validate_only,
            } => {
                topics.put(out);
                validate_only.put(out);
            }
            ControllerRequest::DescribeQuorum => {}
            ControllerRequest::UpdateFeatures {
                updates,
                validate_only,
            } => {
                updates.put(out);
                validate_only.put(out);
            }
        }
    }

    fn get_body(kind: u8, input: &mut Reader<'_>) -> Result<ControllerRequest, RpcError> {
        Ok(match kind {
            kind::RAFT => ControllerRequest::Raft {
                from_node_id: input.get()?,
                message: input.bytes()?,
            },
            kind::BROKER_REGISTRATION => ControllerRequest::BrokerRegistration {
                broker_id: input.get()?,
                incarnation_id: input.get()?,
                host: input.get()?,
                port: input.get()?,
                rack: input.get()?,
            },
            kind::BROKER_HEARTBEAT => ControllerRequest::BrokerHeartbeat {
                broker_id: input.get()?,
                broker_epoch: input.get()?,
                current_metadata_offset: input.get()?,
                want_fence: input.get()?,
                want_shut_down: input.get()?,
            },
            kind::FETCH_METADATA => ControllerRequest::FetchMetadata {
                broker_id: input.get()?,
                offset_after: input.get()?,
                max_wait_ms: input.get()?,
                bytes_max: input.get()?,
            },
            kind::CREATE_TOPICS => ControllerRequest::CreateTopics {
                topics: input.get()?,
                validate_only: input.get()?,
            },
            kind::DELETE_TOPICS => ControllerRequest::DeleteTopics {
                topics: input.get()?,
            },
            kind::ALTER_CONFIGS => ControllerRequest::AlterConfigs {
                topics: input.get()?,
                validate_only: input.get()?,
            },
            kind::ALLOCATE_PRODUCER_IDS => ControllerRequest::AllocateProducerIds {
                broker_id: input.get()?,
            },
            kind::CREATE_PARTITIONS => ControllerRequest::CreatePartitions {
                topics: input.get()?,
                validate_only: input.get()?,
            },
            kind::DESCRIBE_QUORUM => ControllerRequest::DescribeQuorum,
            kind::UPDATE_FEATURES => ControllerRequest::UpdateFeatures {
                updates: input.get()?,
                validate_only: input.get()?,
            },
            other => return Err(RpcError::UnknownKind(other)),
        })
    }
}

impl ControllerResponse {
    /// Appends the whole frame (length prefix included) to `out`. Refuses (and appends
    /// nothing) a frame over [`RPC_FRAME_BYTES_MAX`], which the peer would refuse.
    pub fn encode(&self, correlation_id: u32, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let start = begin_frame(out, correlation_id, self.kind());
        self.put_body(out);
        finish_frame(out, start)
    }

    /// Decodes a frame without its length prefix (as [`split_frame`] gives it): the
    /// correlation id and the response.
    pub fn decode(frame: &[u8]) -> Result<(u32, ControllerResponse), RpcError> {
        let (correlation_id, kind, mut input) = open_frame(frame)?;
        let response = ControllerResponse::get_body(kind, &mut input)?;
        input.finish()?;
        Ok((correlation_id, response))
    }

    fn kind(&self) -> u8 {
        kind::RESPONSE
            | match self {
                ControllerResponse::NotController { .. } => kind::NOT_CONTROLLER,
                ControllerResponse::BrokerRegistration { .. } => kind::BROKER_REGISTRATION,
                ControllerResponse::BrokerHeartbeat { .. } => kind::BROKER_HEARTBEAT,
                ControllerResponse::FetchMetadata { .. } => kind::FETCH_METADATA,
                ControllerResponse::CreateTopics { .. } => kind::CREATE_TOPICS,
                ControllerResponse::DeleteTopics { .. } => kind::DELETE_TOPICS,
                ControllerResponse::AlterConfigs { .. } => kind::ALTER_CONFIGS,
                ControllerResponse::AllocateProducerIds { .. } => kind::ALLOCATE_PRODUCER_IDS,
                ControllerResponse::CreatePartitions { .. } => kind::CREATE_PARTITIONS,
                ControllerResponse::DescribeQuorum { .. } => kind::DESCRIBE_QUORUM,
                ControllerResponse::UpdateFeatures { .. } => kind::UPDATE_FEATURES,
            }
    }

    fn put_body(&self, out: &mut Vec<u8>) {
        match self {
            ControllerResponse::NotController { leader_id } => leader_id.put(out),
            ControllerResponse::BrokerRegistration { result } => result.put(out),
            ControllerResponse::BrokerHeartbeat { result } => result.put(out),
            ControllerResponse::FetchMetadata {
                entries,
                committed_index,
                leader_id,
                snapshot_needed,
            } => {
                entries.put(out);
                committed_index.put(out);
                leader_id.put(out);
                snapshot_needed.put(out);
            }
            ControllerResponse::CreateTopics {
                results,
                metadata_offset,
            } => {
                results.put(out);
                metadata_offset.put(out);
            }
            ControllerResponse::DeleteTopics {
                results,
                metadata_offset,
            } => {
                results.put(out);
                metadata_offset.put(out);
            }
            ControllerResponse::AlterConfigs {
                results,
                metadata_offset,
            } => {
                results.put(out);
                metadata_offset.put(out);
            }
            ControllerResponse::AllocateProducerIds { result } => result.put(out),
            ControllerResponse::CreatePartitions {
                results,
                metadata_offset,
            } => {
                results.put(out);
                metadata_offset.put(out);
            }
            ControllerResponse::DescribeQuorum { result } => result.put(out),
            ControllerResponse::UpdateFeatures {
                result,
                metadata_offset,
            } => {
                result.put(out);
                metadata_offset.put(out);
            }
        }
    }

    fn get_body(kind: u8, input: &mut Reader<'_>) -> Result<ControllerResponse, RpcError> {
        const RESPONSE_REGISTRATION: u8 = kind::RESPONSE | kind::BROKER_REGISTRATION;
        const RESPONSE_HEARTBEAT: u8 = kind::RESPONSE | kind::BROKER_HEARTBEAT;
        const RESPONSE_FETCH: u8 = kind::RESPONSE | kind::FETCH_METADATA;
        const RESPONSE_CREATE: u8 = kind::RESPONSE | kind::CREATE_TOPICS;
        const RESPONSE_DELETE: u8 = kind::RESPONSE | kind::DELETE_TOPICS;
        const RESPONSE_ALTER: u8 = kind::RESPONSE | kind::ALTER_CONFIGS;
        const RESPONSE_PRODUCER_IDS: u8 = kind::RESPONSE | kind::ALLOCATE_PRODUCER_IDS;
        const RESPONSE_CREATE_PARTITIONS: u8 = kind::RESPONSE | kind::CREATE_PARTITIONS;
        const RESPONSE_DESCRIBE_QUORUM: u8 = kind::RESPONSE | kind::DESCRIBE_QUORUM;
        const RESPONSE_UPDATE_FEATURES: u8 = kind::RESPONSE | kind::UPDATE_FEATURES;
        Ok(match kind {
            kind::NOT_CONTROLLER => ControllerResponse::NotController {
                leader_id: input.get()?,
            },
            RESPONSE_REGISTRATION => ControllerResponse::BrokerRegistration {
                result: input.get()?,
            },
            RESPONSE_HEARTBEAT => ControllerResponse::BrokerHeartbeat {
                result: input.get()?,
            },
            RESPONSE_FETCH => ControllerResponse::FetchMetadata {
                entries: input.get()?,
                committed_index: input.get()?,
                leader_id: input.get()?,
                snapshot_needed: input.get()?,
            },
            RESPONSE_CREATE => ControllerResponse::CreateTopics {
                results: input.get()?,
                metadata_offset: input.get()?,
            },
            RESPONSE_DELETE => ControllerResponse::DeleteTopics {
                results: input.get()?,
                metadata_offset: input.get()?,
            },
            RESPONSE_ALTER => ControllerResponse::AlterConfigs {
                results: input.get()?,
                metadata_offset: input.get()?,
            },
            RESPONSE_PRODUCER_IDS => ControllerResponse::AllocateProducerIds {
                result: input.get()?,
            },
            RESPONSE_CREATE_PARTITIONS => ControllerResponse::CreatePartitions {
                results: input.get()?,
                metadata_offset: input.get()?,
            },
            RESPONSE_DESCRIBE_QUORUM => ControllerResponse::DescribeQuorum {
                result: input.get()?,
            },
            RESPONSE_UPDATE_FEATURES => ControllerResponse::UpdateFeatures {
                result: input.get()?,
                metadata_offset: input.get()?,
            },
            other => return Err(RpcError::UnknownKind(other)),
        })
    }
}

/// Appends the frame header with a zero length (patched by `finish_frame`); returns where the
/// frame starts.
fn begin_frame(out: &mut Vec<u8>, correlation_id: u32, kind: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; FRAME_PREFIX_BYTES]);
    correlation_id.put(out);
    out.push(kind);
    start
}

/// Writes the length prefix, or takes the frame back out if it is over the limit.
fn finish_frame(out: &mut Vec<u8>, start: usize) -> Result<(), RpcError> {
    let length = out.len() - start - FRAME_PREFIX_BYTES;
    if length > RPC_FRAME_BYTES_MAX {
        out.truncate(start);
        return Err(RpcError::FrameTooLarge {
            bytes: length,
            max: RPC_FRAME_BYTES_MAX,
        });
    }
    // Cannot truncate: the length is at most RPC_FRAME_BYTES_MAX.
    out[start..start + FRAME_PREFIX_BYTES].copy_from_slice(&(length as u32).to_be_bytes());
    Ok(())
}

/// Reads the correlation id and kind; the rest is the body.
fn open_frame(frame: &[u8]) -> Result<(u32, u8, Reader<'_>), RpcError> {
    if frame.len() > RPC_FRAME_BYTES_MAX {
        return Err(RpcError::FrameTooLarge {
            bytes: frame.len(),
            max: RPC_FRAME_BYTES_MAX,
        });
    }
    let mut input = Reader { bytes: frame };
    let correlation_id = input.get()?;
    let kind = input.get()?;
    Ok((correlation_id, kind, input))
}

/// The undecoded rest of a frame.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], RpcError> {
        if count > self.bytes.len() {
            return Err(RpcError::Truncated);
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RpcError> {
        let (taken, rest) = self
            .bytes
            .split_first_chunk::<N>()
            .ok_or(RpcError::Truncated)?;
        self.bytes = rest;
        Ok(*taken)
    }

    fn get<T: Wire>(&mut self) -> Result<T, RpcError> {
        T::get(self)
    }

    /// A length-prefixed byte string.
    fn bytes(&mut self) -> Result<Vec<u8>, RpcError> {
        let length = u32::get(self)? as usize;
        Ok(self.take(length)?.to_vec())
    }

    /// A list count, checked against the bytes left: `count` items of at least
    /// `T::MIN_BYTES` each must fit, so a hostile count cannot make a huge allocation.
    fn count<T: Wire>(&mut self) -> Result<usize, RpcError> {
        let count = u32::get(self)?;
        let needed = (count as usize).saturating_mul(T::MIN_BYTES.max(1));
        if needed > self.bytes.len() {
            return Err(RpcError::TooMany {
                what: std::any::type_name::<T>(),
                count,
                bytes_left: self.bytes.len(),
            });
        }
        Ok(count as usize)
    }

    fn finish(self) -> Result<(), RpcError> {
        match self.bytes.len() {
            0 => Ok(()),
            count => Err(RpcError::TrailingBytes { count }),
        }
    }
}

fn put_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    // A length past u32 cannot be written faithfully; such a frame is far over the limit and
    // `finish_frame` refuses it, so the saturated value never reaches the wire.
    u32::try_from(bytes.len()).unwrap_or(u32::MAX).put(out);
    out.extend_from_slice(bytes);
}

/// A tag, then the value it tags.
fn put_tagged<T: Wire>(tag: u8, value: &T, out: &mut Vec<u8>) {
    out.push(tag);
    value.put(out);
}

/// A value with a wire form.
trait Wire: Sized {
    /// The fewest bytes an encoded value takes: a list count is checked against it.
    const MIN_BYTES: usize;

    fn put(&self, out: &mut Vec<u8>);

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError>;
}

const fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

macro_rules! wire_integer {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            const MIN_BYTES: usize = std::mem::size_of::<$t>();

            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }

            fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
                Ok(<$t>::from_be_bytes(input.array()?))
            }
        }
    )*};
}

wire_integer!(u8, i16, u16, i32, u32, i64, u64);

/// A `u8` tag, refused past `count` values.
fn get_tag(input: &mut Reader<'_>, what: &'static str, count: u8) -> Result<u8, RpcError> {
    let tag = u8::get(input)?;
    if tag >= count {
        return Err(RpcError::UnknownTag { what, tag });
    }
    Ok(tag)
}

impl Wire for bool {
    const MIN_BYTES: usize = 1;

    fn put(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(get_tag(input, "bool", 2)? == 1)
    }
}

impl Wire for () {
    const MIN_BYTES: usize = 0;

    fn put(&self, _: &mut Vec<u8>) {}

    fn get(_: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(())
    }
}

impl Wire for String {
    const MIN_BYTES: usize = 4;

    fn put(&self, out: &mut Vec<u8>) {
        put_bytes(self.as_bytes(), out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        let length = u32::get(input)? as usize;
        let bytes = input.take(length)?;
        let text = std::str::from_utf8(bytes).map_err(|_| RpcError::InvalidUtf8)?;
        Ok(text.to_owned())
    }
}

impl Wire for Uuid {
    const MIN_BYTES: usize = 16;

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(Uuid(input.array()?))
    }
}

impl<T: Wire> Wire for Option<T> {
    const MIN_BYTES: usize = 1;

    fn put(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(value) => {
                out.push(1);
                value.put(out);
            }
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        match get_tag(input, "option", 2)? {
            0 => Ok(None),
            _ => Ok(Some(input.get()?)),
        }
    }
}

impl<T: Wire> Wire for Vec<T> {
    const MIN_BYTES: usize = 4;

    fn put(&self, out: &mut Vec<u8>) {
        // Same reasoning as `put_bytes`: a count past u32 means a frame far over the limit.
        u32::try_from(self.len()).unwrap_or(u32::MAX).put(out);
        for item in self {
            item.put(out);
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        let count = input.count::<T>()?;
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(input.get()?);
        }
        Ok(items)
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    const MIN_BYTES: usize = A::MIN_BYTES + B::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok((input.get()?, input.get()?))
    }
}

impl<T: Wire> Wire for Result<T, MetadataError> {
    // The tag, then the smaller of the two sides.
    const MIN_BYTES: usize = 1 + min(T::MIN_BYTES, MetadataError::MIN_BYTES);

    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Ok(value) => {
                out.push(0);
                value.put(out);
            }
            Err(error) => {
                out.push(1);
                error.put(out);
            }
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        match get_tag(input, "result", 2)? {
            0 => Ok(Ok(input.get()?)),
            _ => Ok(Err(input.get()?)),
        }
    }
}

impl Wire for MetadataError {
    const MIN_BYTES: usize = 1;

    fn put(&self, out: &mut Vec<u8>) {
        // Exhaustive on purpose: a new variant must get a tag here before it compiles.
        match self {
            MetadataError::TopicAlreadyExists(m) => put_tagged(0, m, out),
            MetadataError::InvalidTopic(m) => put_tagged(1, m, out),
            MetadataError::InvalidPartitions(m) => put_tagged(2, m, out),
            MetadataError::InvalidReplicationFactor(m) => put_tagged(3, m, out),
            MetadataError::InvalidConfig(m) => put_tagged(4, m, out),
            MetadataError::UnknownTopicOrPartition => out.push(5),
            MetadataError::UnknownTopicId => out.push(6),
            MetadataError::TopicDeletionDisabled => out.push(7),
            MetadataError::Storage(m) => put_tagged(8, m, out),
            MetadataError::ControllerNotAvailable => out.push(9),
            MetadataError::InvalidRequest(m) => put_tagged(10, m, out),
            MetadataError::DuplicateBrokerRegistration(id) => put_tagged(11, id, out),
            MetadataError::StaleBrokerEpoch => out.push(12),
            MetadataError::InvalidReplicaAssignment(m) => put_tagged(13, m, out),
            MetadataError::InvalidUpdateVersion(m) => put_tagged(14, m, out),
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(match get_tag(input, "metadata error", 15)? {
            0 => MetadataError::TopicAlreadyExists(input.get()?),
            1 => MetadataError::InvalidTopic(input.get()?),
            2 => MetadataError::InvalidPartitions(input.get()?),
            3 => MetadataError::InvalidReplicationFactor(input.get()?),
            4 => MetadataError::InvalidConfig(input.get()?),
            5 => MetadataError::UnknownTopicOrPartition,
            6 => MetadataError::UnknownTopicId,
            7 => MetadataError::TopicDeletionDisabled,
            8 => MetadataError::Storage(input.get()?),
            9 => MetadataError::ControllerNotAvailable,
            10 => MetadataError::InvalidRequest(input.get()?),
            11 => MetadataError::DuplicateBrokerRegistration(input.get()?),
            12 => MetadataError::StaleBrokerEpoch,
            13 => MetadataError::InvalidReplicaAssignment(input.get()?),
            _ => MetadataError::InvalidUpdateVersion(input.get()?),
        })
    }
}

impl Wire for FeatureUpdate {
    const MIN_BYTES: usize = String::MIN_BYTES + 2 + 1;

    fn put(&self, out: &mut Vec<u8>) {
        self.name.put(out);
        self.level.put(out);
        (self.upgrade_type.as_i8() as u8).put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(FeatureUpdate {
            name: input.get()?,
            level: input.get()?,
            upgrade_type: UpgradeType::from_i8(u8::get(input)? as i8),
        })
    }
}

impl Wire for QuorumReplica {
    const MIN_BYTES: usize = 4 + 8 + 8 + 8;

    fn put(&self, out: &mut Vec<u8>) {
        self.node_id.put(out);
        self.log_end_offset.put(out);
        self.last_fetch_ms.put(out);
        self.last_caught_up_ms.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(QuorumReplica {
            node_id: input.get()?,
            log_end_offset: input.get()?,
            last_fetch_ms: input.get()?,
            last_caught_up_ms: input.get()?,
        })
    }
}

impl Wire for QuorumEndpoint {
    const MIN_BYTES: usize = 4 + 2 * String::MIN_BYTES + 2;

    fn put(&self, out: &mut Vec<u8>) {
        self.node_id.put(out);
        self.listener.put(out);
        self.host.put(out);
        self.port.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(QuorumEndpoint {
            node_id: input.get()?,
            listener: input.get()?,
            host: input.get()?,
            port: input.get()?,
        })
    }
}

impl Wire for QuorumInfo {
    const MIN_BYTES: usize = 4 + 4 + 8 + 3 * Vec::<QuorumReplica>::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        self.leader_id.put(out);
        self.leader_epoch.put(out);
        self.high_watermark.put(out);
        self.voters.put(out);
        self.observers.put(out);
        self.endpoints.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(QuorumInfo {
            leader_id: input.get()?,
            leader_epoch: input.get()?,
            high_watermark: input.get()?,
            voters: input.get()?,
            observers: input.get()?,
            endpoints: input.get()?,
        })
    }
}

impl Wire for NewTopic {
    const MIN_BYTES: usize = String::MIN_BYTES + 4 + 2 + Vec::<(String, String)>::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        self.name.put(out);
        self.num_partitions.put(out);
        self.replication_factor.put(out);
        self.configs.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(NewTopic {
            name: input.get()?,
            num_partitions: input.get()?,
            replication_factor: input.get()?,
            configs: input.get()?,
        })
    }
}

impl Wire for NewPartitions {
    const MIN_BYTES: usize = String::MIN_BYTES + 4 + Option::<Vec<Vec<i32>>>::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        self.name.put(out);
        self.count.put(out);
        self.assignments.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(NewPartitions {
            name: input.get()?,
            count: input.get()?,
            assignments: input.get()?,
        })
    }
}

impl Wire for CreatedTopic {
    const MIN_BYTES: usize = 16 + 4 + 2;

    fn put(&self, out: &mut Vec<u8>) {
        self.topic_id.put(out);
        self.num_partitions.put(out);
        self.replication_factor.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(CreatedTopic {
            topic_id: input.get()?,
            num_partitions: input.get()?,
            replication_factor: input.get()?,
        })
    }
}

impl Wire for TopicRef {
    const MIN_BYTES: usize = 1 + String::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        match self {
            TopicRef::Name(name) => {
                out.push(0);
                name.put(out);
            }
            TopicRef::Id(id) => {
                out.push(1);
                id.put(out);
            }
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        match get_tag(input, "topic ref", 2)? {
            0 => Ok(TopicRef::Name(input.get()?)),
            _ => Ok(TopicRef::Id(input.get()?)),
        }
    }
}

impl Wire for DeletedTopic {
    const MIN_BYTES: usize = String::MIN_BYTES + 16;

    fn put(&self, out: &mut Vec<u8>) {
        self.name.put(out);
        self.topic_id.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(DeletedTopic {
            name: input.get()?,
            topic_id: input.get()?,
        })
    }
}

impl Wire for ConfigOp {
    const MIN_BYTES: usize = 1;

    fn put(&self, out: &mut Vec<u8>) {
        let (tag, value) = match self {
            ConfigOp::Set(value) => (0, Some(value)),
            ConfigOp::Delete => (1, None),
            ConfigOp::Append(value) => (2, Some(value)),
            ConfigOp::Subtract(value) => (3, Some(value)),
        };
        out.push(tag);
        if let Some(value) = value {
            value.put(out);
        }
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(match get_tag(input, "config op", 4)? {
            0 => ConfigOp::Set(input.get()?),
            1 => ConfigOp::Delete,
            2 => ConfigOp::Append(input.get()?),
            _ => ConfigOp::Subtract(input.get()?),
        })
    }
}

impl Wire for ConfigChange {
    const MIN_BYTES: usize = String::MIN_BYTES + ConfigOp::MIN_BYTES;

    fn put(&self, out: &mut Vec<u8>) {
        self.name.put(out);
        self.op.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(ConfigChange {
            name: input.get()?,
            op: input.get()?,
        })
    }
}

impl Wire for TopicConfigChanges {
    const MIN_BYTES: usize = String::MIN_BYTES + Vec::<ConfigChange>::MIN_BYTES + 1;

    fn put(&self, out: &mut Vec<u8>) {
        self.topic.put(out);
        self.changes.put(out);
        self.replace_all.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(TopicConfigChanges {
            topic: input.get()?,
            changes: input.get()?,
            replace_all: input.get()?,
        })
    }
}

impl Wire for ProducerIdBlock {
    const MIN_BYTES: usize = 16;

    fn put(&self, out: &mut Vec<u8>) {
        self.first.put(out);
        self.size.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(ProducerIdBlock {
            first: input.get()?,
            size: input.get()?,
        })
    }
}

impl Wire for HeartbeatState {
    const MIN_BYTES: usize = 3;

    fn put(&self, out: &mut Vec<u8>) {
        self.is_caught_up.put(out);
        self.is_fenced.put(out);
        self.should_shut_down.put(out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(HeartbeatState {
            is_caught_up: input.get()?,
            is_fenced: input.get()?,
            should_shut_down: input.get()?,
        })
    }
}

impl Wire for MetadataEntry {
    const MIN_BYTES: usize = 8 + 8 + 4;

    fn put(&self, out: &mut Vec<u8>) {
        self.index.put(out);
        self.term.put(out);
        put_bytes(&self.data, out);
    }

    fn get(input: &mut Reader<'_>) -> Result<Self, RpcError> {
        Ok(MetadataEntry {
            index: input.get()?,
            term: input.get()?,
            data: input.bytes()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny seeded generator (SplitMix64), so the fuzz loop is reproducible.
    struct SplitMix64(u64);

    impl SplitMix64 {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, bound: usize) -> usize {
            (self.next() % bound.max(1) as u64) as usize
        }
    }

    fn every_metadata_error() -> Vec<MetadataError> {
        vec![
            MetadataError::TopicAlreadyExists("orders".into()),
            MetadataError::InvalidTopic("bad name 'a b'".into()),
            MetadataError::InvalidPartitions("must be > 0".into()),
            MetadataError::InvalidReplicationFactor("3 > 1 brokers".into()),
            MetadataError::InvalidConfig("retention.ms: not a number".into()),
            MetadataError::UnknownTopicOrPartition,
            MetadataError::UnknownTopicId,
            MetadataError::TopicDeletionDisabled,
            MetadataError::Storage("disk full".into()),
            MetadataError::ControllerNotAvailable,
            MetadataError::InvalidRequest("duplicate key ✓".into()),
            MetadataError::DuplicateBrokerRegistration(-7),
            MetadataError::StaleBrokerEpoch,
            MetadataError::InvalidReplicaAssignment("broker 9 is not registered".into()),
            MetadataError::InvalidUpdateVersion("Invalid update version 9".into()),
        ]
    }

    fn requests() -> Vec<ControllerRequest> {
        vec![
            ControllerRequest::Raft {
                from_node_id: 3,
                message: (0..=255).collect(),
            },
            ControllerRequest::Raft {
                from_node_id: -1,
                message: Vec::new(),
            },
            ControllerRequest::BrokerRegistration {
                broker_id: 4,
                incarnation_id: Uuid::from_u128(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210),
                host: "broker-4.local".into(),
                port: 9092,
                rack: Some("rack-a".into()),
            },
            ControllerRequest::BrokerRegistration {
                broker_id: i32::MAX,
                incarnation_id: Uuid::ZERO,
                host: String::new(),
                port: -1,
                rack: None,
            },
            ControllerRequest::BrokerHeartbeat {
                broker_id: 5,
                broker_epoch: i64::MIN,
                current_metadata_offset: 1 << 40,
                want_fence: true,
                want_shut_down: false,
            },
            ControllerRequest::BrokerHeartbeat {
                broker_id: 6,
                broker_epoch: 17,
                current_metadata_offset: -1,
                want_fence: false,
                want_shut_down: true,
            },
            ControllerRequest::FetchMetadata {
                broker_id: 7,
                offset_after: u64::MAX,
                max_wait_ms: 500,
                bytes_max: 1 << 20,
            },
            ControllerRequest::CreateTopics {
                topics: Vec::new(),
                validate_only: true,
            },
            ControllerRequest::CreateTopics {
                topics: vec![
                    NewTopic {
                        name: "orders".into(),
                        num_partitions: 12,
                        replication_factor: 3,
                        configs: vec![
                            ("retention.ms".into(), "-1".into()),
                            ("cleanup.policy".into(), "compact,delete".into()),
                        ],
                    },
                    NewTopic {
                        name: "empty-configs".into(),
                        num_partitions: 1,
                        replication_factor: -1,
                        configs: Vec::new(),
                    },
                ],
                validate_only: false,
            },
            ControllerRequest::DeleteTopics { topics: Vec::new() },
            ControllerRequest::DeleteTopics {
                topics: vec![
                    TopicRef::Name("orders".into()),
                    TopicRef::Id(Uuid::from_u128(42)),
                ],
            },
            ControllerRequest::AlterConfigs {
                topics: vec![
                    TopicConfigChanges {
                        topic: "orders".into(),
                        changes: vec![
                            ConfigChange {
                                name: "retention.ms".into(),
                                op: ConfigOp::Set("1000".into()),
                            },
                            ConfigChange {
                                name: "segment.ms".into(),
                                op: ConfigOp::Delete,
                            },
                            ConfigChange {
                                name: "cleanup.policy".into(),
                                op: ConfigOp::Append("compact".into()),
                            },
                            ConfigChange {
                                name: "cleanup.policy".into(),
                                op: ConfigOp::Subtract("delete".into()),
                            },
                        ],
                        replace_all: false,
                    },
                    TopicConfigChanges {
                        topic: "other".into(),
                        changes: Vec::new(),
                        replace_all: true,
                    },
                ],
                validate_only: true,
            },
            ControllerRequest::AlterConfigs {
                topics: Vec::new(),
                validate_only: false,
            },
            ControllerRequest::AllocateProducerIds { broker_id: 8 },
            ControllerRequest::CreatePartitions {
                topics: Vec::new(),
                validate_only: false,
            },
            ControllerRequest::CreatePartitions {
                topics: vec![
                    NewPartitions {
                        name: "orders".into(),
                        count: 24,
                        assignments: None,
                    },
                    NewPartitions {
                        name: "manual".into(),
                        count: i32::MIN,
                        assignments: Some(vec![vec![1, 2, 3], Vec::new(), vec![-1]]),
                    },
                    NewPartitions {
                        name: String::new(),
                        count: 0,
                        assignments: Some(Vec::new()),
                    },
                ],
                validate_only: true,
            },
            ControllerRequest::DescribeQuorum,
            ControllerRequest::UpdateFeatures {
                updates: vec![
                    FeatureUpdate {
                        name: "metadata.version".into(),
                        level: 7,
                        upgrade_type: UpgradeType::Upgrade,
                    },
                    FeatureUpdate {
                        name: "group.version".into(),
                        level: -3,
                        upgrade_type: UpgradeType::UnsafeDowngrade,
                    },
                ],
                validate_only: true,
            },
        ]
    }

    fn responses() -> Vec<ControllerResponse> {
        let mut responses = vec![
            ControllerResponse::NotController { leader_id: -1 },
            ControllerResponse::NotController { leader_id: 2 },
            ControllerResponse::BrokerRegistration { result: Ok(1234) },
            ControllerResponse::BrokerHeartbeat {
                result: Ok(HeartbeatState {
                    is_caught_up: true,
                    is_fenced: false,
                    should_shut_down: true,
                }),
            },
            ControllerResponse::FetchMetadata {
                entries: Vec::new(),
                committed_index: 0,
                leader_id: -1,
                snapshot_needed: true,
            },
            ControllerResponse::FetchMetadata {
                entries: vec![
                    MetadataEntry {
                        index: 7,
                        term: 2,
                        data: vec![1, 2, 3],
                    },
                    MetadataEntry {
                        index: 8,
                        term: 3,
                        data: Vec::new(),
                    },
                ],
                committed_index: 9,
                leader_id: 1,
                snapshot_needed: false,
            },
            ControllerResponse::CreateTopics {
                results: Vec::new(),
                metadata_offset: 0,
            },
            ControllerResponse::DeleteTopics {
                results: vec![Ok(DeletedTopic {
                    name: "orders".into(),
                    topic_id: Uuid::from_u128(99),
                })],
                metadata_offset: 77,
            },
            ControllerResponse::AlterConfigs {
                results: Vec::new(),
                metadata_offset: 3,
            },
            ControllerResponse::AllocateProducerIds {
                result: Ok(ProducerIdBlock {
                    first: 5000,
                    size: 1000,
                }),
            },
        ];
        let mut created = vec![Ok(CreatedTopic {
            topic_id: Uuid::from_u128(u128::MAX),
            num_partitions: 12,
            replication_factor: 3,
        })];
        let mut deleted = Vec::new();
        let mut altered = vec![Ok(())];
        let mut grown = vec![Ok(()), Ok(())];
        for error in every_metadata_error() {
            grown.push(Err(error.clone()));
            created.push(Err(error.clone()));
            deleted.push(Err(error.clone()));
            altered.push(Err(error.clone()));
            responses.push(ControllerResponse::BrokerRegistration {
                result: Err(error.clone()),
            });
            responses.push(ControllerResponse::BrokerHeartbeat {
                result: Err(error.clone()),
            });
            responses.push(ControllerResponse::AllocateProducerIds { result: Err(error) });
        }
        responses.push(ControllerResponse::CreateTopics {
            results: created,
            metadata_offset: u64::MAX,
        });
        responses.push(ControllerResponse::DeleteTopics {
            results: deleted,
            metadata_offset: 12,
        });
        responses.push(ControllerResponse::AlterConfigs {
            results: altered,
            metadata_offset: 13,
        });
        responses.push(ControllerResponse::CreatePartitions {
            results: grown,
            metadata_offset: 14,
        });
        responses.push(ControllerResponse::CreatePartitions {
            results: Vec::new(),
            metadata_offset: 0,
        });
        let replica = |node_id| QuorumReplica {
            node_id,
            log_end_offset: 42,
            last_fetch_ms: 1_700_000_000_000,
            last_caught_up_ms: -1,
        };
        responses.push(ControllerResponse::DescribeQuorum {
            result: Ok(QuorumInfo {
                leader_id: 1,
                leader_epoch: 4,
                high_watermark: 42,
                voters: vec![replica(1), replica(2), replica(3)],
                observers: vec![replica(4)],
                endpoints: vec![QuorumEndpoint {
                    node_id: 1,
                    listener: "CONTROLLER".into(),
                    host: "127.0.0.1".into(),
                    port: 19093,
                }],
            }),
        });
        responses.push(ControllerResponse::DescribeQuorum {
            result: Err(MetadataError::ControllerNotAvailable),
        });
        responses.push(ControllerResponse::UpdateFeatures {
            result: Err(MetadataError::InvalidUpdateVersion("no".into())),
            metadata_offset: 0,
        });
        responses.push(ControllerResponse::UpdateFeatures {
            result: Ok(()),
            metadata_offset: 15,
        });
        responses
    }

    /// Every sample, encoded as a whole frame.
    fn sample_frames() -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        for (i, request) in requests().iter().enumerate() {
            let mut out = Vec::new();
            request.encode(i as u32, &mut out).unwrap();
            frames.push(out);
        }
        for (i, response) in responses().iter().enumerate() {
            let mut out = Vec::new();
            response.encode(1000 + i as u32, &mut out).unwrap();
            frames.push(out);
        }
        frames
    }

    #[test]
    fn every_request_round_trips() {
        for (i, request) in requests().into_iter().enumerate() {
            let correlation_id = 0xDEAD_0000 + i as u32;
            let mut out = vec![0xAA];
            request.encode(correlation_id, &mut out).unwrap();
            let (frame, consumed) = split_frame(&out[1..]).unwrap().unwrap();
            assert_eq!(consumed, out.len() - 1);
            let (id, decoded) = ControllerRequest::decode(frame).unwrap();
            assert_eq!(id, correlation_id);
            assert_eq!(format!("{decoded:?}"), format!("{request:?}"));
        }
    }

    #[test]
    fn every_response_round_trips() {
        let all = responses();
        // Every MetadataError variant goes through every result that can carry one.
        assert!(all.len() > every_metadata_error().len() * 3);
        for (i, response) in all.into_iter().enumerate() {
            let mut out = Vec::new();
            response.encode(i as u32, &mut out).unwrap();
            let (frame, _) = split_frame(&out).unwrap().unwrap();
            let (id, decoded) = ControllerResponse::decode(frame).unwrap();
            assert_eq!(id, i as u32);
            assert_eq!(format!("{decoded:?}"), format!("{response:?}"));
        }
    }

    #[test]
    fn metadata_errors_keep_variant_and_message() {
        for error in every_metadata_error() {
            let response = ControllerResponse::AllocateProducerIds {
                result: Err(error.clone()),
            };
            let mut out = Vec::new();
            response.encode(1, &mut out).unwrap();
            let (_, decoded) = ControllerResponse::decode(&out[FRAME_PREFIX_BYTES..]).unwrap();
            let ControllerResponse::AllocateProducerIds { result: Err(back) } = decoded else {
                panic!("wrong shape: {decoded:?}");
            };
            assert_eq!(back.to_string(), error.to_string());
            assert_eq!(
                std::mem::discriminant(&back),
                std::mem::discriminant(&error)
            );
        }
    }

    #[test]
    fn requests_and_responses_do_not_cross() {
        let mut out = Vec::new();
        ControllerRequest::AllocateProducerIds { broker_id: 1 }
            .encode(1, &mut out)
            .unwrap();
        assert!(matches!(
            ControllerResponse::decode(&out[FRAME_PREFIX_BYTES..]),
            Err(RpcError::UnknownKind(8))
        ));
        out.clear();
        ControllerResponse::NotController { leader_id: 1 }
            .encode(1, &mut out)
            .unwrap();
        assert!(matches!(
            ControllerRequest::decode(&out[FRAME_PREFIX_BYTES..]),
            Err(RpcError::UnknownKind(0x80))
        ));
    }

    #[test]
    fn every_truncation_is_an_error() {
        for out in sample_frames() {
            let frame = &out[FRAME_PREFIX_BYTES..];
            for cut in 0..frame.len() {
                assert!(ControllerRequest::decode(&frame[..cut]).is_err());
                assert!(ControllerResponse::decode(&frame[..cut]).is_err());
            }
            for cut in 0..out.len() {
                assert!(split_frame(&out[..cut]).unwrap().is_none());
            }
        }
    }

    #[test]
    fn trailing_bytes_are_an_error() {
        for out in sample_frames() {
            let mut frame = out[FRAME_PREFIX_BYTES..].to_vec();
            frame.push(0);
            let request = ControllerRequest::decode(&frame);
            let response = ControllerResponse::decode(&frame);
            assert!(request.is_err() && response.is_err());
        }
    }

    #[test]
    fn hostile_counts_allocate_nothing() {
        // CreateTopics claiming 2^31 topics in a 10-byte body.
        let mut frame = vec![0, 0, 0, 1, kind::CREATE_TOPICS];
        frame.extend_from_slice(&0x8000_0000u32.to_be_bytes());
        frame.push(0);
        assert!(matches!(
            ControllerRequest::decode(&frame),
            Err(RpcError::TooMany {
                count: 0x8000_0000,
                ..
            })
        ));
        // A Raft message claiming 4 GiB of bytes.
        let mut frame = vec![0, 0, 0, 0, kind::RAFT, 0, 0, 0, 1];
        frame.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            ControllerRequest::decode(&frame),
            Err(RpcError::Truncated)
        ));
        // A length prefix over the limit is refused before the frame is read.
        let prefix = (RPC_FRAME_BYTES_MAX as u32 + 1).to_be_bytes();
        assert!(matches!(
            split_frame(&prefix),
            Err(RpcError::FrameTooLarge { .. })
        ));
        assert!(matches!(
            split_frame(&u32::MAX.to_be_bytes()),
            Err(RpcError::FrameTooLarge { .. })
        ));
    }

    #[test]
    fn hostile_assignment_counts_allocate_nothing() {
        // CreatePartitions of one topic "t" to 2 partitions whose assignments claim 2^31 lists.
        let mut frame = vec![0, 0, 0, 1, kind::CREATE_PARTITIONS];
        frame.extend_from_slice(&1u32.to_be_bytes());
        frame.extend_from_slice(&1u32.to_be_bytes());
        frame.push(b't');
        frame.extend_from_slice(&2i32.to_be_bytes());
        frame.push(1); // Some
        frame.extend_from_slice(&0x8000_0000u32.to_be_bytes());
        frame.push(0);
        assert!(matches!(
            ControllerRequest::decode(&frame),
            Err(RpcError::TooMany {
                count: 0x8000_0000,
                ..
            })
        ));
    }

    #[test]
    fn frames_over_the_limit_are_not_encoded() {
        let request = ControllerRequest::Raft {
            from_node_id: 1,
            message: vec![0; RPC_FRAME_BYTES_MAX],
        };
        let mut out = vec![7];
        assert!(matches!(
            request.encode(1, &mut out),
            Err(RpcError::FrameTooLarge { .. })
        ));
        assert_eq!(out, [7]);
        // The largest that fits does encode, and decodes.
        let request = ControllerRequest::Raft {
            from_node_id: 1,
            message: vec![0; RPC_FRAME_BYTES_MAX - 4 - 1 - 4 - 4],
        };
        request.encode(1, &mut out).unwrap();
        let (frame, consumed) = split_frame(&out[1..]).unwrap().unwrap();
        assert_eq!(consumed, out.len() - 1);
        assert!(ControllerRequest::decode(frame).is_ok());
    }

    #[test]
    fn invalid_utf8_and_tags_are_errors() {
        let mut out = Vec::new();
        ControllerRequest::DeleteTopics {
            topics: vec![TopicRef::Name("ab".into())],
        }
        .encode(1, &mut out)
        .unwrap();
        let mut frame = out[FRAME_PREFIX_BYTES..].to_vec();
        let last = frame.len() - 1;
        frame[last] = 0xFF;
        assert!(matches!(
            ControllerRequest::decode(&frame),
            Err(RpcError::InvalidUtf8)
        ));
        // The TopicRef tag sits after the correlation id, kind and count.
        frame[4 + 1 + 4] = 2;
        assert!(matches!(
            ControllerRequest::decode(&frame),
            Err(RpcError::UnknownTag { .. })
        ));
    }

    /// Decodes `frame` both ways; whatever decodes must encode back to the same bytes (the
    /// encoding is canonical), and nothing may panic.
    fn decode_both_ways(frame: &[u8]) {
        if let Ok((id, request)) = ControllerRequest::decode(frame) {
            let mut out = Vec::new();
            request.encode(id, &mut out).unwrap();
            assert_eq!(&out[FRAME_PREFIX_BYTES..], frame);
        }
        if let Ok((id, response)) = ControllerResponse::decode(frame) {
            let mut out = Vec::new();
            response.encode(id, &mut out).unwrap();
            assert_eq!(&out[FRAME_PREFIX_BYTES..], frame);
        }
    }

    fn mutate(random: &mut SplitMix64, frame: &mut Vec<u8>) {
        for _ in 0..=random.below(4) {
            let at = random.below(frame.len());
            match random.below(6) {
                0 if !frame.is_empty() => frame[at] = random.next() as u8,
                1 if !frame.is_empty() => frame[at] ^= 1 << random.below(8),
                2 if at + 4 <= frame.len() => {
                    // Lengths and counts: the interesting values are the huge ones.
                    let values = [u32::MAX, 0x8000_0000, 0x0100_0000, random.next() as u32];
                    let value = values[random.below(values.len())];
                    frame[at..at + 4].copy_from_slice(&value.to_be_bytes());
                }
                3 => frame.insert(at.min(frame.len()), random.next() as u8),
                4 if !frame.is_empty() => {
                    frame.remove(at);
                }
                _ => frame.truncate(at),
            }
        }
    }

    #[test]
    fn fuzzed_frames_never_panic() {
        let samples = sample_frames();
        let mut random = SplitMix64(0x5EED_F022);
        for _ in 0..20_000 {
            let sample = &samples[random.below(samples.len())];
            let mut frame = sample[FRAME_PREFIX_BYTES..].to_vec();
            mutate(&mut random, &mut frame);
            decode_both_ways(&frame);
            let mut prefixed = sample.clone();
            mutate(&mut random, &mut prefixed);
            if let Ok(Some((frame, consumed))) = split_frame(&prefixed) {
                assert!(consumed <= prefixed.len());
                decode_both_ways(frame);
            }
        }
        for _ in 0..2_000 {
            let noise: Vec<u8> = (0..random.below(64)).map(|_| random.next() as u8).collect();
            decode_both_ways(&noise);
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

    /// Every sample frame, captured from the encoder that predates the shared codec: the
    /// controller RPC's bytes must never change (controllers and brokers of different builds
    /// talk to each other during a rolling upgrade).
    #[test]
    fn frames_match_the_golden_bytes() {
        let actual: Vec<String> = sample_frames().iter().map(|f| hex(f)).collect();
        check_golden(
            "rpc_frames.hex",
            include_str!("golden/rpc_frames.hex"),
            &actual,
        );
        let golden: Vec<&str> = include_str!("golden/rpc_frames.hex").lines().collect();
        let requests = requests();
        for (i, line) in golden.iter().enumerate() {
            let frame = unhex(line);
            let frame = &frame[FRAME_PREFIX_BYTES..];
            if let Some(request) = requests.get(i) {
                let (id, decoded) = ControllerRequest::decode(frame).unwrap();
                assert_eq!(id, i as u32);
                assert_eq!(format!("{decoded:?}"), format!("{request:?}"));
            } else {
                let response = &responses()[i - requests.len()];
                let (id, decoded) = ControllerResponse::decode(frame).unwrap();
                assert_eq!(id, 1000 + (i - requests.len()) as u32);
                assert_eq!(format!("{decoded:?}"), format!("{response:?}"));
            }
        }
    }
}
