//! A follower's fetch connection moves to the shard that owns its partitions.
//!
//! Each data shard of a follower fetches the partitions it owns, one connection per leader
//! broker, and a partition's shard is recorded once in the metadata, the same on every broker
//! hosting it (`PartitionImage::shard`). So every partition a follower's connection names is
//! owned by one shard on the leader too — but the kernel hands the connection to whichever shard
//! accepts it (SO_REUSEPORT). Served there, each fetch would cross to the owning shard and back
//! for every partition, every round trip. At its first replica Fetch the connection moves to the
//! owning shard instead (the hand-over group connections use, `connection.rs`), and from then on
//! a follower's fetch is served where its partitions live, with no hop on either broker.

use bytes::Bytes;
use sluice_protocol::api_key::ApiKey;
use sluice_protocol::request::{decode_request, RequestBody};
use sluice_replica::TopicIdPartition;
use sluice_shard::ShardId;

use crate::context::ShardContext;
use crate::group_router::ConnectionHome;

/// Where a connection belongs, judged from one Fetch request.
#[derive(Debug, PartialEq, Eq)]
pub enum FetchHome {
    /// Not a Fetch, or a consumer's (whose connection may still follow its group).
    NotReplica,
    /// A replica's fetch naming no partition this broker knows yet: ask again next time.
    Unknown,
    /// A replica's fetch: stay, or move to the shard owning every partition it names.
    Decided(ConnectionHome),
}

/// Whether `frame` is a Fetch request (its API key), without decoding it.
pub fn is_fetch(frame: &[u8]) -> bool {
    frame
        .get(..2)
        .is_some_and(|b| i16::from_be_bytes([b[0], b[1]]) == ApiKey::Fetch as i16)
}

/// The home of the connection that sent Fetch `frame`. Decodes it (once per connection: the
/// caller stops asking once it is decided or a consumer's; so the copy it decodes is made once).
pub fn fetch_home(ctx: &ShardContext, frame: &[u8]) -> FetchHome {
    // A frame that does not decode is answered by the dispatch as usual.
    let Ok((header, RequestBody::Fetch(request))) = decode_request(Bytes::copy_from_slice(frame))
    else {
        return FetchHome::NotReplica;
    };
    if request.effective_replica_id(header.api_version) < 0 {
        return FetchHome::NotReplica;
    }
    let image = ctx.image();
    let mut owner: Option<ShardId> = None;
    for topic in &request.topics {
        let topic_image = if topic.topic.is_empty() {
            image.topic_by_id(&topic.topic_id)
        } else {
            image.topic(&topic.topic)
        };
        let Some(topic_image) = topic_image else {
            continue;
        };
        for partition in &topic.partitions {
            let tp = TopicIdPartition {
                topic_id: topic_image.topic_id,
                partition: partition.partition,
            };
            let Some(shard) = image.shard_table.shard_of(&tp) else {
                continue;
            };
            match owner {
                None => owner = Some(shard),
                // Partitions of several shards (not a Sluice follower's): stay.
                Some(known) if known != shard => {
                    return FetchHome::Decided(ConnectionHome::Here);
                }
                Some(_) => {}
            }
        }
    }
    match owner {
        None => FetchHome::Unknown,
        Some(shard) if shard == ctx.shard_id => FetchHome::Decided(ConnectionHome::Here),
        Some(shard) => FetchHome::Decided(ConnectionHome::Shard(shard)),
    }
}
