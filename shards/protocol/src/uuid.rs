//! Kafka's 128-bit topic id.

use std::fmt;
use std::str::FromStr;

/// A Kafka UUID (topic id), stored in wire order (most significant byte first).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

impl Uuid {
    /// The all-zero id Kafka uses for "no topic id".
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Builds an id from its 128-bit value (deterministic; there is no `random()`
    /// here so the crate needs no RNG dependency).
    pub const fn from_u128(value: u128) -> Uuid {
        Uuid(value.to_be_bytes())
    }

    /// The id as a 128-bit value.
    pub const fn as_u128(&self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    /// True for [`Uuid::ZERO`].
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for Uuid {
    /// Kafka prints ids as URL-safe base64 without padding (22 characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.as_u128();
        let mut out = [0u8; 22];
        for (i, slot) in out.iter_mut().enumerate() {
            // 22 sextets cover 132 bits: the 128-bit value followed by 4 zero
            // bits of padding, exactly as unpadded base64 of the 16 bytes.
            let idx = if i < 21 {
                (value >> (122 - 6 * i as u32)) & 0x3f
            } else {
                (value & 0x3) << 4
            };
            *slot = BASE64URL.get(idx as usize).copied().unwrap_or(b'A');
        }
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({self})")
    }
}

/// Error parsing a base64url topic id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid topic id string")]
pub struct ParseUuidError;

impl FromStr for Uuid {
    type Err = ParseUuidError;

    fn from_str(s: &str) -> Result<Uuid, ParseUuidError> {
        let bytes = s.as_bytes();
        if bytes.len() != 22 {
            return Err(ParseUuidError);
        }
        let mut acc: u128 = 0;
        for (i, &c) in bytes.iter().enumerate() {
            let v = BASE64URL
                .iter()
                .position(|&b| b == c)
                .ok_or(ParseUuidError)? as u128;
            if i == 21 {
                // Only the top 2 bits of the last sextet carry data.
                if v & 0x0f != 0 {
                    return Err(ParseUuidError);
                }
                acc = (acc << 2) | (v >> 4);
            } else {
                acc = (acc << 6) | v;
            }
        }
        Ok(Uuid::from_u128(acc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_kafka_base64url() {
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        // Kafka's Uuid.ONE_UUID (0, 1) prints as AAAAAAAAAAAAAAAAAAAAAQ.
        assert_eq!(Uuid::from_u128(1).to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(
            Uuid::from_u128(u128::MAX).to_string(),
            "_____________________w"
        );
    }

    #[test]
    fn parse_round_trips() {
        for v in [
            0u128,
            1,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
            u128::MAX,
        ] {
            let id = Uuid::from_u128(v);
            assert_eq!(id.to_string().parse::<Uuid>(), Ok(id));
        }
        assert!("short".parse::<Uuid>().is_err());
        assert!("AAAAAAAAAAAAAAAAAAAAAB".parse::<Uuid>().is_err());
    }
}
