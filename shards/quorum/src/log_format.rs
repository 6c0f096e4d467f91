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
    out.reserve(FRAME_HEADER_BYTES + payload_bytes);
    let start = out.len();
    out.extend_from_slice(&(payload_bytes as u32).to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(entry.entry_type.value() as u8);
    out.extend_from_slice(&entry.term.to_be_bytes());
    out.extend_from_slice(&entry.index.to_be_bytes());
    out.extend_from_slice(&entry.data);
    let crc = crc32c::crc32c(&out[start + FRAME_HEADER_BYTES..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
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
    let mut pos = 0usize;
    let mut term_previous = 0u64;
    while let Some(header) = bytes.get(pos..pos + FRAME_HEADER_BYTES) {
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if !(ENTRY_HEADER_BYTES..=ENTRY_HEADER_BYTES + ENTRY_BYTES_MAX).contains(&len) {
            break;
        }
        let start = pos + FRAME_HEADER_BYTES;
        let Some(payload) = bytes.get(start..start + len) else {
            break;
        };
        if crc32c::crc32c(payload) != crc {
            break;
        }
        let entry_type = payload[0];
        let term = u64_at(payload, 1);
        let index = u64_at(payload, 9);
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
            data: Bytes::copy_from_slice(&payload[ENTRY_HEADER_BYTES..]),
            ..Entry::default()
        });
        log.frame_offsets.push(pos as u64);
        term_previous = term;
        pos = start + len;
    }
    log.valid_bytes = pos as u64;
    Ok(log)
}

/// The hard-state file's bytes.
pub fn encode_hard_state(hard_state: &HardState) -> Vec<u8> {
    let mut out = Vec::with_capacity(HARD_STATE_BYTES);
    out.extend_from_slice(&[0; 4]);
    out.push(HARD_STATE_VERSION);
    out.extend_from_slice(&hard_state.term.to_be_bytes());
    out.extend_from_slice(&hard_state.vote.to_be_bytes());
    out.extend_from_slice(&hard_state.commit.to_be_bytes());
    let crc = crc32c::crc32c(&out[4..]);
    out[..4].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Reads the hard-state file's bytes.
pub fn decode_hard_state(bytes: &[u8]) -> Result<HardState> {
    if bytes.len() != HARD_STATE_BYTES
        || crc32c::crc32c(&bytes[4..]) != u32_at(bytes, 0)
        || bytes[4] != HARD_STATE_VERSION
    {
        return Err(QuorumError::CorruptHardState);
    }
    Ok(HardState {
        term: u64_at(bytes, 5),
        vote: u64_at(bytes, 13),
        commit: u64_at(bytes, 21),
        ..HardState::default()
    })
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

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
