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

use sluice_protocol::codec::{Decoder, Encoder, Uuid};
use sluice_protocol::error::ErrorCode;
use sluice_protocol::ProtocolError;
use sluice_shard::{
    AlterPartitionItem, AlterPartitionOutcome, BrokerConfigChanges, ConfigChange, ConfigOp,
    CreatedTopic, DeletedTopic, ElectionOutcome, ElectionTopic, FeatureUpdate, MetadataError,
    NewPartitions, NewTopic, OngoingReassignment, ProducerIdBlock, QuorumEndpoint, QuorumInfo,
    QuorumReplica, ReassignmentOutcome, ReassignmentQuery, ReassignmentTarget, ReassignmentTopic,
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
    /// The frame ended in the middle of a field, or a string is not UTF-8.
    #[error("malformed frame: {0}")]
    Malformed(#[from] ProtocolError),
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

/// Declares the enum of one direction's messages and derives its codec: each variant is its
/// kind and its fields, in wire order, so a new message is one declaration here (plus a kind).
macro_rules! rpc_messages {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($bits:expr) {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $kind:path $({
                    $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
                })?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant $({ $( $(#[$fmeta])* $field: $ty ),* })?
            ),*
        }

        impl $name {
            /// Appends the whole frame (length prefix included) to `out`. Refuses (and appends
            /// nothing) a frame over [`RPC_FRAME_BYTES_MAX`], which the peer would refuse.
            pub fn encode(&self, correlation_id: u32, out: &mut Vec<u8>) -> Result<(), RpcError> {
                let mut e = begin_frame(correlation_id, self.kind());
                match self {
                    $(
                        $name::$variant $({ $($field),* })? => {
                            $($( Wire::put($field, &mut e); )*)?
                        }
                    )*
                }
                finish_frame(e, out)
            }

            /// Decodes a frame without its length prefix (as [`split_frame`] gives it): the
            /// correlation id and the message.
            pub fn decode(frame: &[u8]) -> Result<(u32, $name), RpcError> {
                let (correlation_id, kind, mut d) = open_frame(frame)?;
                let message = $name::get_body(kind, &mut d)?;
                finish_input(&d)?;
                Ok((correlation_id, message))
            }

            fn kind(&self) -> u8 {
                $bits | match self {
                    $( $name::$variant { .. } => $kind, )*
                }
            }

            fn get_body(kind: u8, d: &mut Decoder) -> Result<$name, RpcError> {
                $(
                    if kind == $bits | $kind {
                        return Ok($name::$variant $({ $( $field: Wire::get(d)? ),* })?);
                    }
                )*
                Err(RpcError::UnknownKind(kind))
            }
        }
    };
}

rpc_messages! {
    /// A request on the controller listener.
    pub enum ControllerRequest (0) {
        /// One-way, voter → voter: a raft-rs `Message`, protobuf bytes (decoded by the receiver
        /// with `sluice_quorum::decode_message`).
        Raft = kind::RAFT {
            /// The sending voter.
            from_node_id: i32,
            /// The encoded message.
            message: Vec<u8>,
        },
        /// KRaft's BrokerRegistrationRequest.
        BrokerRegistration = kind::BROKER_REGISTRATION {
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
        /// KRaft's BrokerRegistrationRequest v3+ (KIP-966): as `BrokerRegistration`, with the
        /// epoch of the broker's previous registration when that process shut down cleanly (a
        /// frame of its own, so that the older one keeps its bytes).
        BrokerRegistrationWithPreviousEpoch = kind::BROKER_REGISTRATION_PREVIOUS_EPOCH {
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
            /// The epoch its previous process recorded at a clean shutdown, -1 if none (it
            /// crashed, or never ran): Kafka's `PreviousBrokerEpoch`.
            previous_broker_epoch: i64,
        },
        /// KRaft's BrokerHeartbeatRequest.
        BrokerHeartbeat = kind::BROKER_HEARTBEAT {
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
        FetchMetadata = kind::FETCH_METADATA {
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
        CreateTopics = kind::CREATE_TOPICS {
            /// The topics.
            topics: Vec<NewTopic>,
            /// Only check, create nothing.
            validate_only: bool,
        },
        /// Forwarded DeleteTopics.
        DeleteTopics = kind::DELETE_TOPICS {
            /// The topics.
            topics: Vec<TopicRef>,
        },
        /// Forwarded AlterConfigs / IncrementalAlterConfigs.
        AlterConfigs = kind::ALTER_CONFIGS {
            /// One entry per topic resource.
            topics: Vec<TopicConfigChanges>,
            /// Only check, change nothing.
            validate_only: bool,
        },
        /// Forwarded AllocateProducerIds.
        AllocateProducerIds = kind::ALLOCATE_PRODUCER_IDS {
            /// The asking broker.
            broker_id: i32,
        },
        /// Forwarded CreatePartitions.
        CreatePartitions = kind::CREATE_PARTITIONS {
            /// The topics to grow.
            topics: Vec<NewPartitions>,
            /// Only check, change nothing.
            validate_only: bool,
        },
        /// Forwarded DescribeQuorum: only the active controller answers.
        DescribeQuorum = kind::DESCRIBE_QUORUM,
        /// Forwarded UpdateFeatures.
        UpdateFeatures = kind::UPDATE_FEATURES {
            /// The changes, in request order.
            updates: Vec<FeatureUpdate>,
            /// Only check, change nothing.
            validate_only: bool,
        },
        /// Forwarded CreateTopics of which some topic has a manual assignment (a kind of its own,
        /// so that CreateTopics' bytes stay as they were); answered as CreateTopics.
        CreateTopicsAssigned = kind::CREATE_TOPICS_ASSIGNED {
            /// The topics (without their assignments).
            topics: Vec<NewTopic>,
            /// Each topic's assignment, in the same order: replicas per partition.
            assignments: Vec<Option<Vec<Vec<i32>>>>,
            /// Only check, create nothing.
            validate_only: bool,
        },
        /// KRaft's AlterPartitionRequest, for one partition: its leader's ISR change.
        AlterPartition = kind::ALTER_PARTITION {
            /// The sending broker (the partition's leader).
            broker_id: i32,
            /// The sender's registration epoch.
            broker_epoch: i64,
            /// The change.
            item: AlterPartitionItem,
        },
        /// Forwarded ElectLeaders.
        ElectLeaders = kind::ELECT_LEADERS {
            /// 0 preferred, 1 unclean.
            election_type: u8,
            /// The partitions; `None` for every partition.
            topics: Option<Vec<ElectionTopic>>,
        },
        /// Forwarded AlterPartitionReassignments.
        AlterPartitionReassignments = kind::ALTER_PARTITION_REASSIGNMENTS {
            /// The targets, in request order.
            topics: Vec<ReassignmentTopic>,
            /// KIP-860's flag.
            allow_replication_factor_change: bool,
        },
        /// Forwarded AlterConfigs / IncrementalAlterConfigs of broker resources.
        AlterBrokerConfigs = kind::ALTER_BROKER_CONFIGS {
            /// One entry per broker resource.
            brokers: Vec<BrokerConfigChanges>,
            /// Only check, change nothing.
            validate_only: bool,
        },
        /// Forwarded ListPartitionReassignments (a read of the active controller's state).
        ListPartitionReassignments = kind::LIST_PARTITION_REASSIGNMENTS {
            /// The partitions; `None` for every partition.
            topics: Option<Vec<ReassignmentQuery>>,
        },
}
}

impl ControllerRequest {
    /// The broker whose own request this is (registration, heartbeat, metadata fetch): it
    /// identifies the connection carrying it as that broker's.
    pub fn broker_id(&self) -> Option<i32> {
        match self {
            ControllerRequest::BrokerRegistration { broker_id, .. }
            | ControllerRequest::BrokerHeartbeat { broker_id, .. }
            | ControllerRequest::FetchMetadata { broker_id, .. } => Some(*broker_id),
            _ => None,
        }
    }
}

rpc_messages! {
    /// A response on the controller listener.
    pub enum ControllerResponse (kind::RESPONSE) {
        /// This node is not the active controller; `leader_id` is the one it knows of, -1 if none
        /// (KRaft's NOT_CONTROLLER with a hint).
        NotController = kind::NOT_CONTROLLER {
            /// The known leader, or -1.
            leader_id: i32,
        },
        /// Answer to BrokerRegistration.
        BrokerRegistration = kind::BROKER_REGISTRATION {
            /// The broker epoch, or why the registration was refused.
            result: Result<i64, MetadataError>,
        },
        /// Answer to BrokerHeartbeat.
        BrokerHeartbeat = kind::BROKER_HEARTBEAT {
            /// The broker's state, or why the heartbeat was refused.
            result: Result<HeartbeatState, MetadataError>,
        },
        /// Committed entries, in order.
        FetchMetadata = kind::FETCH_METADATA {
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
        CreateTopics = kind::CREATE_TOPICS {
            /// One result per topic, in order.
            results: Vec<Result<CreatedTopic, MetadataError>>,
            /// The metadata log index at which the change committed (the broker waits until its
            /// own image has applied it).
            metadata_offset: u64,
        },
        /// Answer to DeleteTopics.
        DeleteTopics = kind::DELETE_TOPICS {
            /// One result per topic, in order.
            results: Vec<Result<DeletedTopic, MetadataError>>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to AlterConfigs.
        AlterConfigs = kind::ALTER_CONFIGS {
            /// One result per topic, in order.
            results: Vec<Result<(), MetadataError>>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to AllocateProducerIds.
        AllocateProducerIds = kind::ALLOCATE_PRODUCER_IDS {
            /// The block, or why none was allocated.
            result: Result<ProducerIdBlock, MetadataError>,
        },
        /// Answer to CreatePartitions.
        CreatePartitions = kind::CREATE_PARTITIONS {
            /// One result per topic, in order.
            results: Vec<Result<(), MetadataError>>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to DescribeQuorum.
        DescribeQuorum = kind::DESCRIBE_QUORUM {
            /// The quorum as the active controller sees it.
            result: Result<QuorumInfo, MetadataError>,
        },
        /// Answer to UpdateFeatures.
        UpdateFeatures = kind::UPDATE_FEATURES {
            /// Done (or would be), or the first refusal.
            result: Result<(), MetadataError>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to AlterPartition.
        AlterPartition = kind::ALTER_PARTITION {
            /// The partition's outcome (a refusal is an error code in it), or why the request
            /// was refused as a whole.
            result: Result<AlterPartitionOutcome, MetadataError>,
        },
        /// Answer to ElectLeaders.
        ElectLeaders = kind::ELECT_LEADERS {
            /// One outcome per partition, or why the request failed as a whole.
            result: Result<Vec<ElectionOutcome>, MetadataError>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to AlterPartitionReassignments.
        AlterPartitionReassignments = kind::ALTER_PARTITION_REASSIGNMENTS {
            /// One outcome per partition, or why the request failed as a whole.
            result: Result<Vec<ReassignmentOutcome>, MetadataError>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to AlterBrokerConfigs.
        AlterBrokerConfigs = kind::ALTER_BROKER_CONFIGS {
            /// One result per broker resource, in order.
            results: Vec<Result<(), MetadataError>>,
            /// The metadata log index at which the change committed.
            metadata_offset: u64,
        },
        /// Answer to ListPartitionReassignments.
        ListPartitionReassignments = kind::LIST_PARTITION_REASSIGNMENTS {
            /// The reassignments in progress, or why the request failed as a whole.
            result: Result<Vec<OngoingReassignment>, MetadataError>,
        },
}
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
    pub const ALTER_PARTITION: u8 = 12;
    pub const CREATE_TOPICS_ASSIGNED: u8 = 13;
    pub const ELECT_LEADERS: u8 = 14;
    pub const BROKER_REGISTRATION_PREVIOUS_EPOCH: u8 = 20;
    pub const ALTER_PARTITION_REASSIGNMENTS: u8 = 15;
    pub const LIST_PARTITION_REASSIGNMENTS: u8 = 16;
    pub const ALTER_BROKER_CONFIGS: u8 = 17;
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

/// An encoder holding the frame header, with a zero length (patched by `finish_frame`).
fn begin_frame(correlation_id: u32, kind: u8) -> Encoder {
    let mut e = Encoder::new();
    e.put_u32(0);
    e.put_u32(correlation_id);
    e.put_u8(kind);
    e
}

/// Writes the length prefix and appends the frame to `out`, or refuses it if it is over the
/// limit.
fn finish_frame(mut e: Encoder, out: &mut Vec<u8>) -> Result<(), RpcError> {
    let length = e.len() - FRAME_PREFIX_BYTES;
    if length > RPC_FRAME_BYTES_MAX {
        return Err(RpcError::FrameTooLarge {
            bytes: length,
            max: RPC_FRAME_BYTES_MAX,
        });
    }
    // Cannot truncate: the length is at most RPC_FRAME_BYTES_MAX.
    e.patch_i32(0, length as i32);
    if out.is_empty() {
        // The usual case: hand the buffer over instead of copying it.
        *out = e.into_inner().into();
    } else {
        out.extend_from_slice(e.as_slice());
    }
    Ok(())
}

/// Reads the correlation id and kind; the rest is the body.
fn open_frame(frame: &[u8]) -> Result<(u32, u8, Decoder), RpcError> {
    if frame.len() > RPC_FRAME_BYTES_MAX {
        return Err(RpcError::FrameTooLarge {
            bytes: frame.len(),
            max: RPC_FRAME_BYTES_MAX,
        });
    }
    let mut d = Decoder::from_slice(frame);
    let correlation_id = d.u32()?;
    let kind = d.u8()?;
    Ok((correlation_id, kind, d))
}

fn finish_input(d: &Decoder) -> Result<(), RpcError> {
    match d.remaining() {
        0 => Ok(()),
        count => Err(RpcError::TrailingBytes { count }),
    }
}

/// Upper bound on what a list decode reserves up front (as in the protocol codec): the count
/// is checked against the bytes left, but an item can be far larger in memory than on the wire.
const LIST_PREALLOC_BYTES_MAX: usize = 16 * 1024;

/// A value with a wire form, written and read through the protocol crate's codec.
trait Wire: Sized {
    /// The fewest bytes an encoded value takes: a list count is checked against it.
    const MIN_BYTES: usize;

    fn put(&self, e: &mut Encoder);

    fn get(d: &mut Decoder) -> Result<Self, RpcError>;

    /// Writes the items of a list (after its count); bytes override it to copy in bulk.
    fn put_items(items: &[Self], e: &mut Encoder) {
        for item in items {
            item.put(e);
        }
    }

    /// Reads `count` items of a list (already checked against the bytes left).
    fn get_items(d: &mut Decoder, count: usize) -> Result<Vec<Self>, RpcError> {
        let per_item = std::mem::size_of::<Self>().max(1);
        let mut items = Vec::with_capacity(count.min(LIST_PREALLOC_BYTES_MAX / per_item));
        for _ in 0..count {
            items.push(Self::get(d)?);
        }
        Ok(items)
    }
}

/// A length or count as a `u32`. One past `u32::MAX` cannot be written faithfully; such a
/// frame is far over the limit and `finish_frame` refuses it, so the saturated value never
/// reaches the wire.
fn put_len(len: usize, e: &mut Encoder) {
    e.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
}

macro_rules! wire_integer {
    ($($t:ident $put:ident),*) => {$(
        impl Wire for $t {
            const MIN_BYTES: usize = std::mem::size_of::<$t>();

            fn put(&self, e: &mut Encoder) {
                e.$put(*self);
            }

            fn get(d: &mut Decoder) -> Result<Self, RpcError> {
                Ok(d.$t()?)
            }
        }
    )*};
}

wire_integer!(i16 put_i16, u16 put_u16, i32 put_i32, u32 put_u32, i64 put_i64, u64 put_u64);

impl Wire for u8 {
    const MIN_BYTES: usize = 1;

    fn put(&self, e: &mut Encoder) {
        e.put_u8(*self);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        Ok(d.u8()?)
    }

    fn put_items(items: &[Self], e: &mut Encoder) {
        e.put_raw(items);
    }

    fn get_items(d: &mut Decoder, count: usize) -> Result<Vec<Self>, RpcError> {
        Ok(d.take_bytes(count)?.to_vec())
    }
}

impl Wire for bool {
    const MIN_BYTES: usize = 1;

    fn put(&self, e: &mut Encoder) {
        e.put_u8(u8::from(*self));
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        match d.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            tag => Err(RpcError::UnknownTag { what: "bool", tag }),
        }
    }
}

impl Wire for () {
    const MIN_BYTES: usize = 0;

    fn put(&self, _: &mut Encoder) {}

    fn get(_: &mut Decoder) -> Result<Self, RpcError> {
        Ok(())
    }
}

/// A `u32` length, then UTF-8.
impl Wire for String {
    const MIN_BYTES: usize = 4;

    fn put(&self, e: &mut Encoder) {
        put_len(self.len(), e);
        e.put_raw(self.as_bytes());
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        let length = d.u32()? as usize;
        Ok(d.utf8_exact(length)?)
    }
}

impl Wire for Uuid {
    const MIN_BYTES: usize = 16;

    fn put(&self, e: &mut Encoder) {
        e.put_uuid(*self);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        Ok(d.uuid()?)
    }
}

/// Kafka's error code, as its `i16`.
impl Wire for ErrorCode {
    const MIN_BYTES: usize = 2;

    fn put(&self, e: &mut Encoder) {
        e.put_i16(self.0);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        Ok(ErrorCode(d.i16()?))
    }
}

impl Wire for UpgradeType {
    const MIN_BYTES: usize = 1;

    fn put(&self, e: &mut Encoder) {
        e.put_i8(self.as_i8());
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        // 0 is how `Unknown` is written; any other value outside Kafka's 1..=3 would read back
        // as `Unknown` and be written as 0, so it is refused (the encoding stays canonical).
        match d.i8()? {
            value @ 0..=3 => Ok(UpgradeType::from_i8(value)),
            value => Err(RpcError::UnknownTag {
                what: "upgrade type",
                tag: value as u8,
            }),
        }
    }
}

/// A `u8` tag (0 none, 1 some), then the value.
impl<T: Wire> Wire for Option<T> {
    const MIN_BYTES: usize = 1;

    fn put(&self, e: &mut Encoder) {
        match self {
            None => e.put_u8(0),
            Some(value) => {
                e.put_u8(1);
                value.put(e);
            }
        }
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        match d.u8()? {
            0 => Ok(None),
            1 => Ok(Some(T::get(d)?)),
            tag => Err(RpcError::UnknownTag {
                what: "option",
                tag,
            }),
        }
    }
}

/// A `u32` count, then the items.
impl<T: Wire> Wire for Vec<T> {
    const MIN_BYTES: usize = 4;

    fn put(&self, e: &mut Encoder) {
        put_len(self.len(), e);
        T::put_items(self, e);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        // `count` items of at least `T::MIN_BYTES` each must fit in the bytes left.
        let count = d.u32()?;
        let needed = (count as usize).saturating_mul(T::MIN_BYTES.max(1));
        if needed > d.remaining() {
            return Err(RpcError::TooMany {
                what: std::any::type_name::<T>(),
                count,
                bytes_left: d.remaining(),
            });
        }
        T::get_items(d, count as usize)
    }
}

impl<A: Wire, B: Wire> Wire for (A, B) {
    const MIN_BYTES: usize = A::MIN_BYTES + B::MIN_BYTES;

    fn put(&self, e: &mut Encoder) {
        self.0.put(e);
        self.1.put(e);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        Ok((A::get(d)?, B::get(d)?))
    }
}

const fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

/// A `u8` tag (0 ok, 1 error), then the value.
impl<T: Wire> Wire for Result<T, MetadataError> {
    // The tag, then the smaller of the two sides (`Ok(())` is the tag alone).
    const MIN_BYTES: usize = 1 + min(T::MIN_BYTES, MetadataError::MIN_BYTES);

    fn put(&self, e: &mut Encoder) {
        match self {
            Ok(value) => {
                e.put_u8(0);
                value.put(e);
            }
            Err(error) => {
                e.put_u8(1);
                error.put(e);
            }
        }
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        match d.u8()? {
            0 => Ok(Ok(T::get(d)?)),
            1 => Ok(Err(MetadataError::get(d)?)),
            tag => Err(RpcError::UnknownTag {
                what: "result",
                tag,
            }),
        }
    }
}

/// CreateTopics' topic as it has always been written: its manual assignment is not part of it
/// (CreateTopics' bytes stay those of earlier builds); it travels in `CreateTopicsAssigned`.
impl Wire for NewTopic {
    const MIN_BYTES: usize = String::MIN_BYTES + 4 + 2 + 4;

    fn put(&self, e: &mut Encoder) {
        self.name.put(e);
        self.num_partitions.put(e);
        self.replication_factor.put(e);
        self.configs.put(e);
    }

    fn get(d: &mut Decoder) -> Result<Self, RpcError> {
        Ok(NewTopic {
            name: Wire::get(d)?,
            num_partitions: Wire::get(d)?,
            replication_factor: Wire::get(d)?,
            configs: Wire::get(d)?,
            assignments: None,
        })
    }
}

/// Derives [`Wire`] for structs: their fields in order, each in its type's form.
macro_rules! wire_struct {
    ($($name:ident { $($field:ident: $ty:ty),* $(,)? })*) => {$(
        impl Wire for $name {
            const MIN_BYTES: usize = 0 $(+ <$ty as Wire>::MIN_BYTES)*;

            fn put(&self, e: &mut Encoder) {
                $( Wire::put(&self.$field, e); )*
            }

            fn get(d: &mut Decoder) -> Result<Self, RpcError> {
                Ok($name { $( $field: <$ty as Wire>::get(d)? ),* })
            }
        }
    )*};
}

wire_struct! {
    FeatureUpdate { name: String, level: i16, upgrade_type: UpgradeType }
    QuorumReplica { node_id: i32, log_end_offset: i64, last_fetch_ms: i64, last_caught_up_ms: i64 }
    QuorumEndpoint { node_id: i32, listener: String, host: String, port: u16 }
    QuorumInfo {
        leader_id: i32,
        leader_epoch: i32,
        high_watermark: i64,
        voters: Vec<QuorumReplica>,
        observers: Vec<QuorumReplica>,
        endpoints: Vec<QuorumEndpoint>,
    }
    NewPartitions { name: String, count: i32, assignments: Option<Vec<Vec<i32>>> }
    CreatedTopic { topic_id: Uuid, num_partitions: i32, replication_factor: i16 }
    DeletedTopic { name: String, topic_id: Uuid }
    ConfigChange { name: String, op: ConfigOp }
    TopicConfigChanges { topic: String, changes: Vec<ConfigChange>, replace_all: bool }
    BrokerConfigChanges { resource_name: String, changes: Vec<ConfigChange>, replace_all: bool }
    ProducerIdBlock { first: i64, size: i64 }
    HeartbeatState { is_caught_up: bool, is_fenced: bool, should_shut_down: bool }
    MetadataEntry { index: u64, term: u64, data: Vec<u8> }
    AlterPartitionItem {
        topic_id: Uuid,
        partition: i32,
        leader_id: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        new_isr: Vec<(i32, i64)>,
    }
    ElectionTopic { topic: String, partitions: Vec<i32> }
    ElectionOutcome { topic: String, partition: i32, error: ErrorCode, message: Option<String> }
    ReassignmentTarget { partition: i32, replicas: Option<Vec<i32>> }
    ReassignmentTopic { topic: String, partitions: Vec<ReassignmentTarget> }
    ReassignmentOutcome {
        topic: String,
        partition: i32,
        error: ErrorCode,
        message: Option<String>,
    }
    ReassignmentQuery { topic: String, partitions: Vec<i32> }
    OngoingReassignment {
        topic: String,
        partition: i32,
        replicas: Vec<i32>,
        adding_replicas: Vec<i32>,
        removing_replicas: Vec<i32>,
    }
    AlterPartitionOutcome {
        error: ErrorCode,
        leader_id: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
    }
}

/// The value a tagged variant binds (a helper of `wire_tagged!`, which names it once per
/// variant that has one).
macro_rules! bound {
    ($value:ident, $ty:ty) => {
        $value
    };
}

/// Derives [`Wire`] for enums whose variants hold at most one value: a `u8` tag, then the
/// value. The match is exhaustive: a new variant must get a tag before it compiles.
macro_rules! wire_tagged {
    ($(
        $name:ident ($what:literal) { $($tag:literal => $variant:ident $(($ty:ty))?),* $(,)? }
    )*) => {$(
        impl Wire for $name {
            const MIN_BYTES: usize = 1;

            fn put(&self, e: &mut Encoder) {
                match self {
                    $(
                        $name::$variant $((bound!(value, $ty)))? => {
                            e.put_u8($tag);
                            $( <$ty as Wire>::put(bound!(value, $ty), e); )?
                        }
                    )*
                }
            }

            fn get(d: &mut Decoder) -> Result<Self, RpcError> {
                Ok(match d.u8()? {
                    $( $tag => $name::$variant $((<$ty as Wire>::get(d)?))?, )*
                    tag => return Err(RpcError::UnknownTag { what: $what, tag }),
                })
            }
        }
    )*};
}

wire_tagged! {
    MetadataError ("metadata error") {
        0 => TopicAlreadyExists(String),
        1 => InvalidTopic(String),
        2 => InvalidPartitions(String),
        3 => InvalidReplicationFactor(String),
        4 => InvalidConfig(String),
        5 => UnknownTopicOrPartition,
        6 => UnknownTopicId,
        7 => TopicDeletionDisabled,
        8 => Storage(String),
        9 => ControllerNotAvailable,
        10 => InvalidRequest(String),
        11 => DuplicateBrokerRegistration(i32),
        12 => StaleBrokerEpoch,
        13 => InvalidReplicaAssignment(String),
        14 => InvalidUpdateVersion(String),
    }
    TopicRef ("topic ref") {
        0 => Name(String),
        1 => Id(Uuid),
    }
    ConfigOp ("config op") {
        0 => Set(String),
        1 => Delete,
        2 => Append(String),
        3 => Subtract(String),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::golden::{check_golden, hex, unhex};

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
                        assignments: None,
                    },
                    NewTopic {
                        name: "empty-configs".into(),
                        num_partitions: 1,
                        replication_factor: -1,
                        configs: Vec::new(),
                        assignments: None,
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
            ControllerRequest::AlterPartition {
                broker_id: 2,
                broker_epoch: 77,
                item: AlterPartitionItem {
                    topic_id: Uuid::from_u128(0xabcd),
                    partition: 3,
                    leader_id: 2,
                    leader_epoch: 9,
                    partition_epoch: 14,
                    new_isr: vec![(2, 77), (1, -1), (3, i64::MAX)],
                },
            },
            ControllerRequest::AlterPartition {
                broker_id: -1,
                broker_epoch: -1,
                item: AlterPartitionItem {
                    topic_id: Uuid::ZERO,
                    partition: i32::MIN,
                    leader_id: -1,
                    leader_epoch: -1,
                    partition_epoch: -1,
                    new_isr: Vec::new(),
                },
            },
            ControllerRequest::CreateTopicsAssigned {
                topics: vec![
                    NewTopic {
                        name: "manual".into(),
                        num_partitions: 2,
                        replication_factor: 2,
                        configs: vec![("retention.ms".into(), "5".into())],
                        assignments: None,
                    },
                    NewTopic {
                        name: "placed".into(),
                        num_partitions: 1,
                        replication_factor: 1,
                        configs: Vec::new(),
                        assignments: None,
                    },
                ],
                assignments: vec![Some(vec![vec![4, 5], vec![5, 6]]), None],
                validate_only: false,
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
        responses.push(ControllerResponse::AlterPartition {
            result: Ok(AlterPartitionOutcome {
                error: ErrorCode::NONE,
                leader_id: 2,
                leader_epoch: 9,
                partition_epoch: 15,
                isr: vec![2, 1],
            }),
        });
        responses.push(ControllerResponse::AlterPartition {
            result: Ok(AlterPartitionOutcome {
                error: ErrorCode::INELIGIBLE_REPLICA,
                leader_id: -1,
                leader_epoch: -1,
                partition_epoch: -1,
                isr: Vec::new(),
            }),
        });
        responses.push(ControllerResponse::AlterPartition {
            result: Err(MetadataError::StaleBrokerEpoch),
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
    fn lists_of_one_byte_results_fit_their_count_check() {
        // `Ok(())` is one byte: a list of them must not be refused as longer than the frame.
        let response = ControllerResponse::CreatePartitions {
            results: vec![Ok(()); 100],
            metadata_offset: 5,
        };
        let mut out = Vec::new();
        response.encode(1, &mut out).unwrap();
        let (_, decoded) = ControllerResponse::decode(&out[FRAME_PREFIX_BYTES..]).unwrap();
        assert_eq!(format!("{decoded:?}"), format!("{response:?}"));
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
            Err(RpcError::TooMany {
                count: u32::MAX,
                ..
            })
        ));
        // A frame that ends inside a field.
        assert!(matches!(
            ControllerRequest::decode(&[0, 0, 0, 0, kind::RAFT, 0, 0]),
            Err(RpcError::Malformed(ProtocolError::Truncated { .. }))
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
            Err(RpcError::Malformed(ProtocolError::InvalidValue(_)))
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

    /// The registration with a previous epoch (KIP-966), kept out of the golden samples.
    #[test]
    fn registration_with_previous_epoch_round_trips() {
        let request = ControllerRequest::BrokerRegistrationWithPreviousEpoch {
            broker_id: 4,
            incarnation_id: Uuid::from_u128(77),
            host: "broker-4.local".into(),
            port: 9092,
            rack: Some("r1".into()),
            previous_broker_epoch: -1,
        };
        let mut out = Vec::new();
        request.encode(3, &mut out).unwrap();
        let (frame, _) = split_frame(&out).unwrap().unwrap();
        let (id, decoded) = ControllerRequest::decode(frame).unwrap();
        assert_eq!((id, format!("{decoded:?}")), (3, format!("{request:?}")));
        for end in 0..frame.len() {
            assert!(ControllerRequest::decode(&frame[..end]).is_err());
        }
    }

    /// ElectLeaders' frames (kept out of the golden samples, captured before it existed).
    #[test]
    fn elect_leaders_round_trips() {
        let requests = [
            ControllerRequest::ElectLeaders {
                election_type: 1,
                topics: Some(vec![ElectionTopic {
                    topic: "orders".into(),
                    partitions: vec![0, -1, i32::MAX],
                }]),
            },
            ControllerRequest::ElectLeaders {
                election_type: 0,
                topics: None,
            },
        ];
        for (i, request) in requests.iter().enumerate() {
            let mut out = Vec::new();
            request.encode(7 + i as u32, &mut out).unwrap();
            let (frame, _) = split_frame(&out).unwrap().unwrap();
            let (id, decoded) = ControllerRequest::decode(frame).unwrap();
            assert_eq!(id, 7 + i as u32);
            assert_eq!(format!("{decoded:?}"), format!("{request:?}"));
        }
        let responses = [
            ControllerResponse::ElectLeaders {
                result: Ok(vec![ElectionOutcome {
                    topic: "orders".into(),
                    partition: 2,
                    error: ErrorCode::ELECTION_NOT_NEEDED,
                    message: Some("Leader election not needed for topic partition.".into()),
                }]),
                metadata_offset: 41,
            },
            ControllerResponse::ElectLeaders {
                result: Err(MetadataError::ControllerNotAvailable),
                metadata_offset: 0,
            },
        ];
        for (i, response) in responses.iter().enumerate() {
            let mut out = Vec::new();
            response.encode(9 + i as u32, &mut out).unwrap();
            let (frame, _) = split_frame(&out).unwrap().unwrap();
            let (id, decoded) = ControllerResponse::decode(frame).unwrap();
            assert_eq!(id, 9 + i as u32);
            assert_eq!(format!("{decoded:?}"), format!("{response:?}"));
            // A truncated frame is an error, never a panic.
            for end in 0..frame.len() {
                let _ = ControllerResponse::decode(&frame[..end]);
            }
        }
    }

    /// The reassignment frames round-trip, and a truncated one is an error, never a panic.
    #[test]
    fn reassignment_frames_round_trip() {
        let requests = [
            ControllerRequest::AlterPartitionReassignments {
                topics: vec![ReassignmentTopic {
                    topic: "orders".into(),
                    partitions: vec![
                        ReassignmentTarget {
                            partition: 0,
                            replicas: Some(vec![2, 3]),
                        },
                        ReassignmentTarget {
                            partition: 1,
                            replicas: None,
                        },
                    ],
                }],
                allow_replication_factor_change: false,
            },
            ControllerRequest::ListPartitionReassignments {
                topics: Some(vec![ReassignmentQuery {
                    topic: "orders".into(),
                    partitions: vec![0, 4],
                }]),
            },
            ControllerRequest::ListPartitionReassignments { topics: None },
        ];
        for (i, request) in requests.iter().enumerate() {
            let mut out = Vec::new();
            request.encode(3 + i as u32, &mut out).unwrap();
            let (frame, _) = split_frame(&out).unwrap().unwrap();
            let (id, decoded) = ControllerRequest::decode(frame).unwrap();
            assert_eq!(id, 3 + i as u32);
            assert_eq!(format!("{decoded:?}"), format!("{request:?}"));
            for end in 0..frame.len() {
                assert!(ControllerRequest::decode(&frame[..end]).is_err());
            }
        }
        let responses = [
            ControllerResponse::AlterPartitionReassignments {
                result: Ok(vec![ReassignmentOutcome {
                    topic: "orders".into(),
                    partition: 1,
                    error: ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                    message: Some("No partition reassignment is in progress.".into()),
                }]),
                metadata_offset: 12,
            },
            ControllerResponse::ListPartitionReassignments {
                result: Ok(vec![OngoingReassignment {
                    topic: "orders".into(),
                    partition: 0,
                    replicas: vec![2, 3, 1],
                    adding_replicas: vec![3],
                    removing_replicas: vec![1],
                }]),
            },
            ControllerResponse::ListPartitionReassignments {
                result: Err(MetadataError::ControllerNotAvailable),
            },
        ];
        for (i, response) in responses.iter().enumerate() {
            let mut out = Vec::new();
            response.encode(20 + i as u32, &mut out).unwrap();
            let (frame, _) = split_frame(&out).unwrap().unwrap();
            let (id, decoded) = ControllerResponse::decode(frame).unwrap();
            assert_eq!(id, 20 + i as u32);
            assert_eq!(format!("{decoded:?}"), format!("{response:?}"));
            for end in 0..frame.len() {
                assert!(ControllerResponse::decode(&frame[..end]).is_err());
            }
        }
    }
}
