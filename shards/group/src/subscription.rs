//! The one piece of the consumer protocol the broker reads: which topics a consumer subscribes
//! to (Kafka's `ConsumerProtocolSubscription`: version, then the topic array, in every version).
//! OffsetDelete and offset expiry need it; the rest of the metadata stays opaque.

use sluice_protocol::codec::Decoder;

/// The protocol type of Kafka consumers.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The topics in a consumer's subscription metadata, `None` when it cannot be read.
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut d = Decoder::from_slice(metadata);
    if d.i16().ok()? < 0 {
        return None;
    }
    // A null or oversized topic array fails here, before anything is reserved for it.
    d.array(false, |d| d.string(false)).ok()
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
