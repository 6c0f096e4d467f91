//! CRC-32C (Castagnoli), the checksum of Kafka's v2 record batches, and the one Sluice's own
//! files use. Computed by `crc-fast`, which folds with carry-less multiplies (AVX-512
//! VPCLMULQDQ where the CPU has it) beside the SSE4.2 `crc32` instruction: on the bench host
//! 72.7 GB/s on a 131,000-byte batch against 15.4 GB/s for the `crc32c` crate's three-way
//! `crc32` loop (`bench/iopath/run --crc`), whose CRC was 5–8 % of the broker's samples under
//! produce (ARCHITECTURE.md, decision table).

use crc_fast::{CrcAlgorithm, Digest};

/// CRC-32C's final XOR: the register a finished checksum is taken back to before it goes on.
const XOR_OUT: u32 = 0xFFFF_FFFF;

/// CRC-32C of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc_fast::crc32_iscsi(data)
}

/// CRC-32C of the bytes `crc` was taken over followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    let mut digest =
        Digest::new_with_init_state(CrcAlgorithm::Crc32Iscsi, u64::from(crc ^ XOR_OUT));
    digest.update(data);
    // A 32-bit CRC's digest holds 32 bits: the cast drops nothing.
    digest.finalize() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic bytes that are not a short repeat (a multiplicative hash of the index).
    fn bytes(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    #[test]
    fn the_castagnoli_check_value() {
        // The catalogue's check value: CRC-32/ISCSI of "123456789".
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn agrees_with_the_crc32c_crate_at_every_length_and_alignment() {
        // The SIMD paths switch on length (folds of 64 to 256 bytes, tails) and may on
        // alignment: every length up to 4 KiB at 8 offsets, then batch sizes.
        let buf = bytes(1 << 20);
        for len in 0..4_096 {
            for offset in 0..8 {
                let data = &buf[offset..offset + len];
                assert_eq!(
                    crc32c(data),
                    ::crc32c::crc32c(data),
                    "len {len} offset {offset}"
                );
            }
        }
        for len in [16_383, 16_384, 131_000, 1_048_000] {
            let data = &buf[3..3 + len];
            assert_eq!(crc32c(data), ::crc32c::crc32c(data), "len {len}");
        }
    }

    #[test]
    fn append_equals_the_checksum_of_the_whole() {
        let buf = bytes(10_000);
        for split in [0, 1, 7, 63, 64, 65, 1_000, 9_999, 10_000] {
            let (head, tail) = buf.split_at(split);
            assert_eq!(
                crc32c_append(crc32c(head), tail),
                crc32c(&buf),
                "split {split}"
            );
            assert_eq!(
                crc32c_append(crc32c(head), tail),
                ::crc32c::crc32c_append(::crc32c::crc32c(head), tail)
            );
        }
    }
}
