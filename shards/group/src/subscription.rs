//! The one piece of the consumer protocol the broker reads: which topics a consumer subscribes
//! to (Kafka's `ConsumerProtocolSubscription`: version, then the topic array, in every version).
//! OffsetDelete and offset expiry need it; the rest of the metadata stays opaque.

use crate::records::Reader;

/// The protocol type of Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The topics in a consumer's subscription metadata, `None` when it cannot be read.
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut r = Reader { buf: metadata };
    let version = r.i16().ok()?;
    if version < 0 {
        return None;
    }
    let count = r.i32().ok()?;
    if count < 0 {
        return None;
    }
    // A topic takes at least 2 bytes: never reserve more than the input can hold.
    let mut topics = Vec::with_capacity((count as usize).min(r.buf.len() / 2));
    for _ in 0..count {
        topics.push(r.string().ok()?);
    }
    Some(topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_topics_of_a_v3_subscription() {
        // version 3, ["a", "bc"], user data null, owned partitions [], generation -1, rack null
        let mut m = vec![0, 3, 0, 0, 0, 2, 0, 1, b'a', 0, 2, b'b', b'c'];
        m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            subscribed_topics(&m),
            Some(vec!["a".to_string(), "bc".to_string()])
        );
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(subscribed_topics(&[]), None);
        assert_eq!(subscribed_topics(&[0, 1, 0x7f, 0xff, 0xff, 0xff]), None);
        assert_eq!(subscribed_topics(&[0xff, 0xff]), None);
    }
}
