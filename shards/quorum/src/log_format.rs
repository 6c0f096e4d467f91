//! The quorum log's bytes, in Sluice's own format (the same framing as the controller's
//! `metadata.log` and Kafka-style segment files: length, CRC32C, payload), big-endian:
//!
//! - log file: frames `[payload length: u32][crc32c of payload: u32][payload]`, payload
//!   `[entry type: u8][term: u64][index: u64][data]`. Indexes are contiguous from 1.
//! - hard-state file: `[crc32c of the rest: u32][version: u8 = 1][term: u64][vote: u64][commit: u64]`.
//!
//! A frame that is short, oversized or fails its CRC ends the intact prefix (a torn tail).

use bytes::Bytes;
use protobuf::ProtobufEnum;
use raft::eraftpb::{Entry, EntryType, HardState};
use sluice_protocol::codec::{Decoder, Encoder};
use sluice_protocol::ProtocolError;

use crate::error::{QuorumError, Result};

/// Length and CRC in front of every payload.
pub const FRAME_HEADER_BYTES: usize = 8;
/// Entry type, term and index in front of the data.
const ENTRY_HEADER_BYTES: usize = 1 + 8 + 8;
/// A payload larger than this is corruption, not data: metadata records are small, and
/// proposals above it are refused before they reach the log.
pub const ENTRY_BYTES_MAX: usize = 8 << 20;
/// The largest entry data (a proposal) the log stores.
pub const ENTRY_DATA_BYTES_MAX: usize = ENTRY_BYTES_MAX - ENTRY_HEADER_BYTES;
const HARD_STATE_VERSION: u8 = 1;
const HARD_STATE_BYTES: usize = 4 + 1 + 8 + 8 + 8;

/// Appends the frame of `entry` to `out`.
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) {
    let payload_bytes = ENTRY_HEADER_BYTES + entry.data.len();
    let mut e = Encoder::with_capacity(FRAME_HEADER_BYTES + payload_bytes);
    e.put_u32(payload_bytes as u32);
    e.put_u32(0);
    e.put_u8(entry.entry_type.value() as u8);
    e.put_u64(entry.term);
    e.put_u64(entry.index);
    e.put_raw(&entry.data);
    let crc = sluice_protocol::crc::crc32c(&e.as_slice()[FRAME_HEADER_BYTES..]);
    e.patch_i32(4, crc as i32);
    out.extend_from_slice(e.as_slice());
}

/// The intact entries of a log file and where each frame starts.
#[derive(Debug, Default)]
pub struct DecodedLog {
    /// Entries in order, indexes contiguous from 1.
    pub entries: Vec<Entry>,
    /// Byte offset of each entry's frame (`frame_offsets[i]` is entry `i + 1`'s).
    pub frame_offsets: Vec<u64>,
    /// Length of the intact prefix; the rest is a torn tail.
    pub valid_bytes: u64,
}

/// Splits a log file into entries, stopping at the first torn or corrupt frame. An intact frame
/// that breaks the log's rules (index sequence, term order, entry type) is an error.
pub fn decode_log(bytes: &[u8]) -> Result<DecodedLog> {
    let mut log = DecodedLog::default();
    let mut d = Decoder::from_slice(bytes);
    let mut term_previous = 0u64;
    while let Some((entry_type, term, index, data)) = next_frame(&mut d) {
        let index_expected = log.entries.len() as u64 + 1;
        if index != index_expected {
            return Err(QuorumError::EntryOutOfSequence {
                index_expected,
                index_found: index,
            });
        }
        if term < term_previous {
            return Err(QuorumError::TermRegressed {
                index,
                term,
                term_previous,
            });
        }
        let Some(entry_type) = EntryType::from_i32(i32::from(entry_type)) else {
            return Err(QuorumError::UnknownEntryType { index, entry_type });
        };
        log.entries.push(Entry {
            entry_type,
            term,
            index,
            data,
            ..Entry::default()
        });
        log.frame_offsets.push(log.valid_bytes);
        log.valid_bytes = d.position() as u64;
        term_previous = term;
    }
    Ok(log)
}

/// The next intact frame's entry type, term, index and data; `None` at the end of the intact
/// prefix (no more bytes, or a short, oversized or corrupt frame).
fn next_frame(d: &mut Decoder) -> Option<(u8, u64, u64, Bytes)> {
    let len = d.u32().ok()? as usize;
    let crc = d.u32().ok()?;
    if !(ENTRY_HEADER_BYTES..=ENTRY_HEADER_BYTES + ENTRY_BYTES_MAX).contains(&len) {
        return None;
    }
    let payload = d.take_bytes(len).ok()?;
    if sluice_protocol::crc::crc32c(&payload) != crc {
        return None;
    }
    // The length check above guarantees the header is there.
    let mut p = Decoder::new(payload);
    Some((p.u8().ok()?, p.u64().ok()?, p.u64().ok()?, p.rest()))
}

/// The hard-state file's bytes.
pub fn encode_hard_state(hard_state: &HardState) -> Vec<u8> {
    let mut e = Encoder::with_capacity(HARD_STATE_BYTES);
    e.put_u32(0);
    e.put_u8(HARD_STATE_VERSION);
    e.put_u64(hard_state.term);
    e.put_u64(hard_state.vote);
    e.put_u64(hard_state.commit);
    let crc = sluice_protocol::crc::crc32c(&e.as_slice()[4..]);
    e.patch_i32(0, crc as i32);
    e.into_inner().into()
}

/// Reads the hard-state file's bytes.
pub fn decode_hard_state(bytes: &[u8]) -> Result<HardState> {
    let read = || -> std::result::Result<HardState, ProtocolError> {
        let mut d = Decoder::from_slice(bytes);
        let crc = d.u32()?;
        if sluice_protocol::crc::crc32c(&d.rest()) != crc || d.u8()? != HARD_STATE_VERSION {
            return Err(ProtocolError::InvalidValue("hard state CRC or version"));
        }
        let hard_state = HardState {
            term: d.u64()?,
            vote: d.u64()?,
            commit: d.u64()?,
            ..HardState::default()
        };
        d.finish()?;
        Ok(hard_state)
    };
    read().map_err(|_| QuorumError::CorruptHardState)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::golden::{check_golden, hex, unhex};

    fn entry(term: u64, index: u64, data: &[u8]) -> Entry {
        Entry {
            term,
            index,
            data: Bytes::copy_from_slice(data),
            ..Entry::default()
        }
    }

    #[test]
    fn torn_tail_is_cut_at_every_length() {
        let entries = [entry(1, 1, b""), entry(1, 2, b"topic"), entry(3, 3, b"x")];
        let mut bytes = Vec::new();
        let mut boundaries = vec![0u64];
        for e in &entries {
            encode_entry(e, &mut bytes);
            boundaries.push(bytes.len() as u64);
        }
        for cut in 0..=bytes.len() {
            let log = decode_log(&bytes[..cut]).unwrap();
            let valid = *boundaries
                .iter()
                .filter(|b| **b <= cut as u64)
                .max()
                .unwrap();
            assert_eq!(log.valid_bytes, valid, "cut at {cut}");
            assert_eq!(log.entries.as_slice(), &entries[..log.entries.len()]);
            assert_eq!(
                log.frame_offsets.as_slice(),
                &boundaries[..log.entries.len()]
            );
        }
        for flip in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[flip] ^= 0x40;
            // A flipped bit ends the intact prefix at the frame it hits, or (a length that now
            // points past a valid CRC) never yields an entry that was not written.
            let log = decode_log(&corrupt).unwrap();
            assert!(log.valid_bytes <= flip as u64);
            assert_eq!(log.entries.as_slice(), &entries[..log.entries.len()]);
        }
    }

    #[test]
    fn intact_frames_out_of_sequence_are_errors() {
        let mut bytes = Vec::new();
        encode_entry(&entry(1, 1, b"a"), &mut bytes);
        encode_entry(&entry(1, 3, b"b"), &mut bytes);
        assert!(matches!(
            decode_log(&bytes),
            Err(QuorumError::EntryOutOfSequence {
                index_expected: 2,
                index_found: 3
            })
        ));
        let mut bytes = Vec::new();
        encode_entry(&entry(2, 1, b"a"), &mut bytes);
        encode_entry(&entry(1, 2, b"b"), &mut bytes);
        assert!(matches!(
            decode_log(&bytes),
            Err(QuorumError::TermRegressed { index: 2, .. })
        ));
    }

    #[test]
    fn hard_state_round_trips_and_rejects_corruption() {
        let hs = HardState {
            term: 7,
            vote: 2,
            commit: 41,
            ..HardState::default()
        };
        let bytes = encode_hard_state(&hs);
        assert_eq!(decode_hard_state(&bytes).unwrap(), hs);
        for flip in 0..bytes.len() {
            let mut corrupt = bytes.clone();
            corrupt[flip] ^= 1;
            assert!(decode_hard_state(&corrupt).is_err(), "flip at {flip}");
        }
        assert!(decode_hard_state(&bytes[..bytes.len() - 1]).is_err());
    }

    /// A log of four entries (every entry type raft-rs writes, empty and non-empty data) and a
    /// hard state, captured from the encoder that predates the shared codec: `quorum.log` and
    /// `quorum.state` written by an older build must still open.
    #[test]
    fn encodings_match_the_golden_bytes() {
        let mut conf_change = entry(2, 3, b"cc");
        conf_change.entry_type = EntryType::EntryConfChange;
        let mut conf_change_v2 = entry(u64::MAX, 4, &[0xff; 3]);
        conf_change_v2.entry_type = EntryType::EntryConfChangeV2;
        let entries = [
            entry(1, 1, b""),
            entry(1, 2, b"records"),
            conf_change,
            conf_change_v2,
        ];
        let mut log = Vec::new();
        for e in &entries {
            encode_entry(e, &mut log);
        }
        let hard_state = HardState {
            term: 9,
            vote: 3,
            commit: u64::MAX - 1,
            ..HardState::default()
        };
        let actual = vec![hex(&log), hex(&encode_hard_state(&hard_state))];
        let golden = include_str!("golden/quorum_log.hex");
        check_golden("quorum_log.hex", golden, &actual);
        let golden: Vec<&str> = golden.lines().collect();
        let decoded = decode_log(&unhex(golden[0])).unwrap();
        assert_eq!(decoded.entries.as_slice(), &entries);
        assert_eq!(decoded.valid_bytes, log.len() as u64);
        assert_eq!(decode_hard_state(&unhex(golden[1])).unwrap(), hard_state);
    }
}
