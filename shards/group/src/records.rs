//! The records of `__consumer_offsets`, in Kafka's own formats (its `OffsetCommitKey`,
//! `OffsetCommitValue`, `GroupMetadataKey` and `GroupMetadataValue` schemas), so that the topic
//! reads the same as Kafka's. Every key and value starts with its schema version (i16):
//!
//! - key v0/v1 `OffsetCommitKey`: group (string), topic (string), partition (i32);
//! - key v2 `GroupMetadataKey`: group (string);
//! - value `OffsetCommitValue` v0–v3 (written as v3): offset (i64), leader epoch (i32, v3+),
//!   metadata (string), commit timestamp (i64), expire timestamp (i64, v1 only);
//! - value `GroupMetadataValue` v0–v3 (written as v3): protocol type, generation, protocol,
//!   leader, current state timestamp (v2+), members (member id, group instance id (v3+), client
//!   id, client host, rebalance timeout (v1+), session timeout, subscription, assignment).
//!
//! A record without a value is a tombstone: the offset or the group was deleted.

use bytes::Bytes;
use sluice_protocol::codec::{Decoder, Encoder};
use sluice_protocol::ProtocolError;

/// Key version of an offset commit.
const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata.
const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// Value version written for offset commits.
const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// Value version written for group metadata.
const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// A record of `__consumer_offsets` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The bytes end inside a field, or a field holds what its type forbids.
    #[error("malformed record: {0}")]
    Malformed(#[from] ProtocolError),
    /// A schema version this broker does not read.
    #[error("unknown {what} version {version}")]
    UnknownVersion {
        /// Key or value.
        what: &'static str,
        /// The version found.
        version: i16,
    },
    /// A negative length where one is not allowed.
    #[error("negative length")]
    NegativeLength,
}

/// A committed offset as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// The committed offset.
    pub offset: i64,
    /// The leader epoch the consumer saw, -1 when unknown.
    pub leader_epoch: i32,
    /// The client's metadata string.
    pub metadata: String,
    /// When it was committed (ms since the epoch).
    pub commit_timestamp_ms: i64,
}

/// One member of a stored group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMember {
    /// Member id.
    pub member_id: String,
    /// Static instance id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client host.
    pub client_host: String,
    /// Rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// Session timeout.
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's protocol.
    pub subscription: Bytes,
    /// Its assignment.
    pub assignment: Bytes,
}

/// A group as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// Protocol type ("consumer" for consumers).
    pub protocol_type: String,
    /// Generation.
    pub generation_id: i32,
    /// The selected protocol (assignor).
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// When the group entered its current state.
    pub current_state_timestamp_ms: i64,
    /// The members.
    pub members: Vec<StoredMember>,
}

/// A decoded key with its value (`None` = tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetsRecord {
    /// An offset commit (or its deletion).
    OffsetCommit {
        /// Group.
        group_id: String,
        /// Topic.
        topic: String,
        /// Partition.
        partition: i32,
        /// The offset, `None` when deleted.
        value: Option<OffsetCommitValue>,
    },
    /// A group's metadata (or its deletion).
    GroupMetadata {
        /// Group.
        group_id: String,
        /// The group, `None` when deleted.
        value: Option<GroupMetadataValue>,
    },
}

impl OffsetsRecord {
    /// The group the record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            OffsetsRecord::OffsetCommit { group_id, .. } => group_id,
            OffsetsRecord::GroupMetadata { group_id, .. } => group_id,
        }
    }

    /// Encodes the key.
    pub fn encode_key(&self) -> Bytes {
        let mut e = Encoder::with_capacity(64);
        match self {
            OffsetsRecord::OffsetCommit {
                group_id,
                topic,
                partition,
                ..
            } => {
                e.put_i16(OFFSET_COMMIT_KEY_VERSION);
                e.put_string(group_id, false);
                e.put_string(topic, false);
                e.put_i32(*partition);
            }
            OffsetsRecord::GroupMetadata { group_id, .. } => {
                e.put_i16(GROUP_METADATA_KEY_VERSION);
                e.put_string(group_id, false);
            }
        }
        e.into_inner().freeze()
    }

    /// Encodes the value; `None` for a tombstone.
    pub fn encode_value(&self) -> Option<Bytes> {
        match self {
            OffsetsRecord::OffsetCommit { value, .. } => value.as_ref().map(encode_offset_value),
            OffsetsRecord::GroupMetadata { value, .. } => value.as_ref().map(encode_group_value),
        }
    }

    /// Decodes a record's key and value. Records with keys of unknown versions are an error
    /// (the caller logs and skips them).
    pub fn decode(key: &[u8], value: Option<&[u8]>) -> Result<OffsetsRecord, RecordError> {
        let mut k = Decoder::from_slice(key);
        let version = k.i16()?;
        match version {
            0 | 1 => Ok(OffsetsRecord::OffsetCommit {
                group_id: k.string(false)?,
                topic: k.string(false)?,
                partition: k.i32()?,
                value: value.map(decode_offset_value).transpose()?,
            }),
            2 => Ok(OffsetsRecord::GroupMetadata {
                group_id: k.string(false)?,
                value: value.map(decode_group_value).transpose()?,
            }),
            version => Err(RecordError::UnknownVersion {
                what: "key",
                version,
            }),
        }
    }
}

fn encode_offset_value(v: &OffsetCommitValue) -> Bytes {
    let mut e = Encoder::with_capacity(32 + v.metadata.len());
    e.put_i16(OFFSET_COMMIT_VALUE_VERSION);
    e.put_i64(v.offset);
    e.put_i32(v.leader_epoch);
    e.put_string(&v.metadata, false);
    e.put_i64(v.commit_timestamp_ms);
    e.into_inner().freeze()
}

fn decode_offset_value(buf: &[u8]) -> Result<OffsetCommitValue, RecordError> {
    let mut r = Decoder::from_slice(buf);
    let version = r.i16()?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: "offset commit value",
            version,
        });
    }
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string(false)?;
    let commit_timestamp_ms = r.i64()?;
    if version == 1 {
        let _expire_timestamp_ms = r.i64()?;
    }
    Ok(OffsetCommitValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms,
    })
}

fn encode_group_value(v: &GroupMetadataValue) -> Bytes {
    let members_bytes: usize = v
        .members
        .iter()
        .map(|m| 64 + m.member_id.len() + m.subscription.len() + m.assignment.len())
        .sum();
    let mut e = Encoder::with_capacity(64 + members_bytes);
    e.put_i16(GROUP_METADATA_VALUE_VERSION);
    e.put_string(&v.protocol_type, false);
    e.put_i32(v.generation_id);
    e.put_nullable_string(v.protocol_name.as_deref(), false);
    e.put_nullable_string(v.leader.as_deref(), false);
    e.put_i64(v.current_state_timestamp_ms);
    e.put_array(&v.members, false, |e, m| {
        e.put_string(&m.member_id, false);
        e.put_nullable_string(m.group_instance_id.as_deref(), false);
        e.put_string(&m.client_id, false);
        e.put_string(&m.client_host, false);
        e.put_i32(m.rebalance_timeout_ms);
        e.put_i32(m.session_timeout_ms);
        e.put_bytes(&m.subscription, false);
        e.put_bytes(&m.assignment, false);
    });
    e.into_inner().freeze()
}

fn decode_group_value(buf: &[u8]) -> Result<GroupMetadataValue, RecordError> {
    let mut r = Decoder::from_slice(buf);
    let version = r.i16()?;
    if !(0..=3).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: "group metadata value",
            version,
        });
    }
    let protocol_type = r.string(false)?;
    let generation_id = r.i32()?;
    let protocol_name = r.nullable_string(false)?;
    let leader = r.nullable_string(false)?;
    let current_state_timestamp_ms = if version >= 2 { r.i64()? } else { -1 };
    // The array codec refuses counts the bytes cannot hold before reserving anything.
    let members = r
        .nullable_array(false, |r| decode_member(r, version))?
        .ok_or(RecordError::NegativeLength)?;
    Ok(GroupMetadataValue {
        protocol_type,
        generation_id,
        protocol_name,
        leader,
        current_state_timestamp_ms,
        members,
    })
}

fn decode_member(r: &mut Decoder, version: i16) -> Result<StoredMember, ProtocolError> {
    let member_id = r.string(false)?;
    let group_instance_id = if version >= 3 {
        r.nullable_string(false)?
    } else {
        None
    };
    let client_id = r.string(false)?;
    let client_host = r.string(false)?;
    let rebalance_timeout_ms = if version >= 1 { r.i32()? } else { -1 };
    let session_timeout_ms = r.i32()?;
    // Kafka writes these non-null; a null one (a foreign writer) reads as empty.
    let subscription = r.nullable_bytes(false)?.unwrap_or_default();
    let assignment = r.nullable_bytes(false)?.unwrap_or_default();
    Ok(StoredMember {
        member_id,
        group_instance_id,
        client_id,
        client_host,
        // Before v1 there was no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if rebalance_timeout_ms < 0 {
            session_timeout_ms
        } else {
            rebalance_timeout_ms
        },
        session_timeout_ms,
        subscription,
        assignment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::golden::{check_golden, hex, unhex};

    #[test]
    fn offset_commit_round_trips_in_kafkas_layout() {
        let record = OffsetsRecord::OffsetCommit {
            group_id: "g".into(),
            topic: "t".into(),
            partition: 7,
            value: Some(OffsetCommitValue {
                offset: 42,
                leader_epoch: 3,
                metadata: "m".into(),
                commit_timestamp_ms: 1000,
            }),
        };
        let key = record.encode_key();
        // version 1, "g", "t", 7
        assert_eq!(&key[..], &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 7]);
        let value = record.encode_value().expect("not a tombstone");
        assert_eq!(&value[..2], &[0, 3]);
        assert_eq!(value.len(), 2 + 8 + 4 + 3 + 8);
        assert_eq!(OffsetsRecord::decode(&key, Some(&value)), Ok(record));
    }

    #[test]
    fn group_metadata_round_trips_and_tombstones_have_no_value() {
        let record = OffsetsRecord::GroupMetadata {
            group_id: "group".into(),
            value: Some(GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation_id: 5,
                protocol_name: Some("range".into()),
                leader: Some("m1".into()),
                current_state_timestamp_ms: 9,
                members: vec![StoredMember {
                    member_id: "m1".into(),
                    group_instance_id: Some("i1".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout_ms: 300_000,
                    session_timeout_ms: 45_000,
                    subscription: Bytes::from_static(b"sub"),
                    assignment: Bytes::from_static(b"asg"),
                }],
            }),
        };
        let key = record.encode_key();
        let value = record.encode_value();
        assert_eq!(OffsetsRecord::decode(&key, value.as_deref()), Ok(record));
        let tombstone = OffsetsRecord::GroupMetadata {
            group_id: "group".into(),
            value: None,
        };
        assert_eq!(tombstone.encode_value(), None);
        assert_eq!(OffsetsRecord::decode(&key, None), Ok(tombstone));
    }

    #[test]
    fn old_offset_value_versions_decode() {
        // v1: offset, metadata, commit timestamp, expire timestamp.
        let mut v1 = Encoder::new();
        v1.put_i16(1);
        v1.put_i64(10);
        v1.put_string("", false);
        v1.put_i64(5);
        v1.put_i64(99);
        let v1 = v1.into_inner();
        let decoded = decode_offset_value(&v1).expect("v1 decodes");
        assert_eq!((decoded.offset, decoded.leader_epoch), (10, -1));
    }

    #[test]
    fn truncated_and_unknown_input_is_an_error_not_a_panic() {
        let record = OffsetsRecord::GroupMetadata {
            group_id: "g".into(),
            value: Some(GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation_id: 1,
                protocol_name: None,
                leader: None,
                current_state_timestamp_ms: 0,
                members: vec![],
            }),
        };
        let key = record.encode_key();
        let value = record.encode_value().expect("value");
        for cut in 0..value.len() {
            assert!(OffsetsRecord::decode(&key, Some(&value[..cut])).is_err());
        }
        for cut in 0..key.len() {
            assert!(OffsetsRecord::decode(&key[..cut], None).is_err());
        }
        assert_eq!(
            OffsetsRecord::decode(&[0, 9], None),
            Err(RecordError::UnknownVersion {
                what: "key",
                version: 9
            })
        );
        // A member count far beyond the bytes present must not allocate for it.
        let mut huge = Encoder::new();
        huge.put_i16(3);
        huge.put_string("consumer", false);
        huge.put_i32(1);
        huge.put_i16(-1);
        huge.put_i16(-1);
        huge.put_i64(0);
        huge.put_i32(i32::MAX);
        assert_eq!(
            decode_group_value(huge.as_slice()),
            Err(RecordError::Malformed(ProtocolError::InvalidLength(
                i64::from(i32::MAX)
            )))
        );
    }

    fn samples() -> Vec<OffsetsRecord> {
        let member = |id: &str, instance: Option<&str>| StoredMember {
            member_id: id.into(),
            group_instance_id: instance.map(Into::into),
            client_id: "client-1".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: Bytes::from_static(b"\x00\x01sub"),
            assignment: Bytes::new(),
        };
        vec![
            OffsetsRecord::OffsetCommit {
                group_id: "group-a".into(),
                topic: "orders".into(),
                partition: 11,
                value: Some(OffsetCommitValue {
                    offset: 1 << 40,
                    leader_epoch: -1,
                    metadata: String::new(),
                    commit_timestamp_ms: 1_700_000_000_123,
                }),
            },
            OffsetsRecord::OffsetCommit {
                group_id: "g✓".into(),
                topic: "t".into(),
                partition: 0,
                value: None,
            },
            OffsetsRecord::GroupMetadata {
                group_id: "group-a".into(),
                value: Some(GroupMetadataValue {
                    protocol_type: "consumer".into(),
                    generation_id: 7,
                    protocol_name: Some("range".into()),
                    leader: Some("m-1".into()),
                    current_state_timestamp_ms: 1_700_000_000_000,
                    members: vec![member("m-1", Some("static-1")), member("m-2", None)],
                }),
            },
            OffsetsRecord::GroupMetadata {
                group_id: "empty".into(),
                value: Some(GroupMetadataValue {
                    protocol_type: String::new(),
                    generation_id: 0,
                    protocol_name: None,
                    leader: None,
                    current_state_timestamp_ms: -1,
                    members: Vec::new(),
                }),
            },
            OffsetsRecord::GroupMetadata {
                group_id: "gone".into(),
                value: None,
            },
        ]
    }

    /// Keys and values of `samples()`, captured from the encoder that predates the shared
    /// codec: `__consumer_offsets` must read the same after an upgrade (and as Kafka's).
    #[test]
    fn encodings_match_the_golden_bytes() {
        let actual: Vec<String> = samples()
            .iter()
            .map(|record| {
                let value = record.encode_value().map_or("-".to_string(), |v| hex(&v));
                format!("{} {value}", hex(&record.encode_key()))
            })
            .collect();
        let golden = include_str!("golden/offsets_records.hex");
        check_golden("offsets_records.hex", golden, &actual);
        for (line, record) in golden.lines().zip(samples()) {
            let (key, value) = line.split_once(' ').unwrap();
            let value = (value != "-").then(|| unhex(value));
            assert_eq!(
                OffsetsRecord::decode(&unhex(key), value.as_deref()),
                Ok(record)
            );
        }
    }

    /// Every truncation of every golden key and value is an error; every byte of them
    /// overwritten with any value decodes or errors, never panics.
    #[test]
    fn truncated_and_garbled_golden_records_never_panic() {
        for line in include_str!("golden/offsets_records.hex").lines() {
            let (key, value) = line.split_once(' ').unwrap();
            let key = unhex(key);
            for cut in 0..key.len() {
                assert!(OffsetsRecord::decode(&key[..cut], None).is_err());
            }
            if value == "-" {
                continue;
            }
            let value = unhex(value);
            for cut in 0..value.len() {
                assert!(OffsetsRecord::decode(&key, Some(&value[..cut])).is_err());
            }
            for at in 0..value.len() {
                for byte in [0x00, 0x7f, 0x80, 0xff] {
                    let mut garbled = value.clone();
                    garbled[at] = byte;
                    let _ = OffsetsRecord::decode(&key, Some(&garbled));
                }
            }
        }
    }
}
