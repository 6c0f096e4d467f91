//! DescribeTopicPartitions (key 75): topics and their partitions from this shard's metadata
//! image, a page at a time, as Kafka's `DescribeTopicPartitionsRequestHandler` and
//! `KRaftMetadataCache.describeTopicResponse` answer:
//!
//! - no topics named: every topic; topics are taken in name order, from the cursor's topic on
//!   (a named list must contain the cursor's topic, or the request is INVALID_REQUEST);
//! - at most `min(max.request.partition.size.limit, ResponsePartitionLimit)` partitions; the
//!   cursor's topic starts at the cursor's partition index, the others at 0;
//! - a topic cut short gets `NextCursor` = (that topic, first partition left out); when the
//!   limit is used up exactly at a topic boundary, `NextCursor` = (next topic, 0) — Kafka's
//!   cursor may point at a topic that does not exist;
//! - a named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION
//!   for an illegal name) with no partitions; when listing every topic there are none.

use std::collections::BTreeSet;

use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::describe_topic_partitions::{
    Cursor, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use sluice_shard::{MetadataImage, PartitionImage, TopicImage};

use super::AUTHORIZED_OPERATIONS_OMITTED;
use crate::context::ShardContext;

/// The operations a client may perform on a topic when no authorizer is configured (Kafka's
/// `AuthHelper.authorizedOperations` without an authorizer: every operation a topic supports —
/// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS — as a bit
/// field of their ACL operation codes).
pub const TOPIC_AUTHORIZED_OPERATIONS_ALL: i32 =
    1 << 3 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 10 | 1 << 11;

/// Kafka's internal topics (`Topic.isInternal`).
const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// Whether `name` is one of Kafka's internal topics.
pub fn is_internal_topic(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// Longest legal topic name.
const TOPIC_NAME_LENGTH_MAX: usize = 249;

/// Kafka's `Topic.validate` (4.x), with its messages (DescribeProducers returns them).
pub fn validate_topic_name(name: &str) -> Result<(), String> {
    let invalid = |why: String| Err(format!("Topic name is invalid: {why}"));
    if name.is_empty() {
        return invalid("the empty string is not allowed".into());
    }
    if name == "." || name == ".." {
        return invalid(format!("'{name}' is not allowed"));
    }
    // Java counts UTF-16 units.
    if name.encode_utf16().count() > TOPIC_NAME_LENGTH_MAX {
        return invalid(format!(
            "the length of '{name}' is longer than the max allowed length {TOPIC_NAME_LENGTH_MAX}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return invalid(format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Answers DescribeTopicPartitions.
pub fn handle(
    ctx: &ShardContext,
    _version: i16,
    request: &DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    describe(
        &ctx.image(),
        request,
        ctx.config.max_request_partition_size_limit,
    )
}

/// The answer from `image`, with at most `partition_size_limit` partitions
/// (`max.request.partition.size.limit`).
pub fn describe(
    image: &MetadataImage,
    request: &DescribeTopicPartitionsRequest,
    partition_size_limit: i32,
) -> DescribeTopicPartitionsResponse {
    let fetch_all = request.topics.is_empty();
    let cursor_topic = request
        .cursor
        .as_ref()
        .map_or("", |c| c.topic_name.as_str());
    // Kafka takes the names into a set (duplicates collapse), keeps those at or after the
    // cursor's topic, and walks them sorted.
    let topics: BTreeSet<&str> = if fetch_all {
        image
            .topics
            .keys()
            .map(String::as_str)
            .filter(|name| *name >= cursor_topic)
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|t| t.name.as_str())
            .filter(|name| *name >= cursor_topic)
            .collect()
    };
    if !fetch_all && request.cursor.is_some() && !topics.contains(cursor_topic) {
        return error_response(request, ErrorCode::INVALID_REQUEST);
    }
    let start_of = |name: &str| match &request.cursor {
        Some(cursor) if cursor.topic_name == name => cursor.partition_index,
        _ => 0,
    };
    let mut remaining = partition_size_limit.min(request.response_partition_limit);
    let mut response = DescribeTopicPartitionsResponse::default();
    for name in topics {
        if remaining > 0 {
            match image.topic(name) {
                Some(topic) => {
                    let (partitions, next) = page(image, topic, start_of(name), remaining);
                    let taken = i32::try_from(partitions.len()).unwrap_or(i32::MAX);
                    response.topics.push(DescribeTopicPartitionsResponseTopic {
                        error_code: ErrorCode::NONE.0,
                        name: Some(name.to_string()),
                        topic_id: topic.topic_id,
                        is_internal: is_internal_topic(name),
                        partitions,
                        topic_authorized_operations: TOPIC_AUTHORIZED_OPERATIONS_ALL,
                    });
                    if let Some(next) = next {
                        response.next_cursor = Some(Cursor {
                            topic_name: name.to_string(),
                            partition_index: next,
                        });
                        break;
                    }
                    remaining -= taken;
                }
                None if !fetch_all => {
                    let error = if validate_topic_name(name).is_ok() {
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    } else {
                        ErrorCode::INVALID_TOPIC_EXCEPTION
                    };
                    response.topics.push(DescribeTopicPartitionsResponseTopic {
                        error_code: error.0,
                        name: Some(name.to_string()),
                        topic_id: Uuid::ZERO,
                        is_internal: is_internal_topic(name),
                        partitions: Vec::new(),
                        topic_authorized_operations: TOPIC_AUTHORIZED_OPERATIONS_ALL,
                    });
                }
                None => {}
            }
        } else if remaining == 0 {
            // The previous topics used the limit up exactly: the next page starts here.
            response.next_cursor = Some(Cursor {
                topic_name: name.to_string(),
                partition_index: 0,
            });
            break;
        }
        // A negative limit describes nothing and sets no cursor, as in Kafka.
    }
    response
}

/// Kafka's answer when the request is refused as a whole: every named topic with the error.
fn error_response(
    request: &DescribeTopicPartitionsRequest,
    error: ErrorCode,
) -> DescribeTopicPartitionsResponse {
    DescribeTopicPartitionsResponse {
        throttle_time_ms: 0,
        topics: request
            .topics
            .iter()
            .map(|t| DescribeTopicPartitionsResponseTopic {
                error_code: error.0,
                name: Some(t.name.clone()),
                topic_id: Uuid::ZERO,
                is_internal: false,
                partitions: Vec::new(),
                topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
            })
            .collect(),
        next_cursor: None,
    }
}

/// Up to `max_count` partitions of `topic` from index `start`, and the index the next page
/// starts at when some are left. As Kafka: the range is `start..min(count, start + max_count)`
/// in Java's 32-bit arithmetic (indexes without a partition, negative ones, are skipped), and
/// the next index is that end when it is below the partition count.
fn page(
    image: &MetadataImage,
    topic: &TopicImage,
    start: i32,
    max_count: i32,
) -> (Vec<DescribeTopicPartitionsResponsePartition>, Option<i32>) {
    let count = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
    let upper = count.min(start.wrapping_add(max_count));
    let partitions = (start..upper)
        .filter_map(|index| topic.partition(index))
        .map(|p| describe_partition(image, p))
        .collect();
    // Kafka's "no next partition" is -1, so an end that wraps to exactly -1 also ends paging.
    let next = if upper < count { upper } else { -1 };
    (partitions, (next != -1).then_some(next))
}

/// One partition as Kafka's metadata cache describes it for this API: every replica and ISR
/// member (not filtered), the replicas on brokers that are not live as offline, the leader when
/// it is a registered broker (else -1), and the eligible leader replicas and last known ELR
/// (KIP-966) as the metadata log has them.
fn describe_partition(
    image: &MetadataImage,
    p: &PartitionImage,
) -> DescribeTopicPartitionsResponsePartition {
    let registered =
        |id: i32| image.is_live(id) || image.fenced_brokers.iter().any(|b| b.node_id == id);
    DescribeTopicPartitionsResponsePartition {
        error_code: ErrorCode::NONE.0,
        partition_index: p.partition,
        leader_id: if registered(p.leader) { p.leader } else { -1 },
        leader_epoch: p.leader_epoch,
        replica_nodes: p.replicas.clone(),
        isr_nodes: p.isr.clone(),
        eligible_leader_replicas: Some(p.eligible_leader_replicas.clone()),
        last_known_elr: Some(p.last_known_elr.clone()),
        offline_replicas: p
            .replicas
            .iter()
            .copied()
            .filter(|id| !image.is_live(*id))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sluice_protocol::messages::describe_topic_partitions::DescribeTopicPartitionsTopicRequest;
    use sluice_shard::{BrokerImage, ShardId};

    use super::*;

    const LOCAL: i32 = 1;

    fn broker(node_id: i32) -> BrokerImage {
        BrokerImage {
            node_id,
            host: format!("broker-{node_id}"),
            port: 9092,
            rack: None,
            broker_epoch: 1,
        }
    }

    /// Brokers 1 and 2 live, 3 fenced; topics with the given partition counts, partition `i`
    /// led by broker `1 + i % 3` with replicas [1, 2, 3].
    fn image(topics: &[(&str, usize)]) -> MetadataImage {
        let mut image = MetadataImage {
            local_node_id: LOCAL,
            brokers: vec![broker(1), broker(2)],
            fenced_brokers: vec![broker(3)],
            ..MetadataImage::default()
        };
        for (n, (name, count)) in topics.iter().enumerate() {
            image.put_topic(TopicImage {
                name: name.to_string(),
                topic_id: Uuid::from_u128(n as u128 + 1),
                partitions: (0..*count)
                    .map(|i| PartitionImage {
                        partition: i as i32,
                        leader: 1 + (i % 3) as i32,
                        leader_epoch: 7,
                        partition_epoch: 0,
                        replicas: vec![1, 2, 3],
                        isr: vec![1, 2],
                        eligible_leader_replicas: Vec::new(),
                        last_known_elr: Vec::new(),
                        adding_replicas: Vec::new(),
                        removing_replicas: Vec::new(),
                        shard: ShardId(0),
                    })
                    .collect(),
                configs: BTreeMap::new(),
            });
        }
        image
    }

    fn request(
        topics: &[&str],
        limit: i32,
        cursor: Option<(&str, i32)>,
    ) -> DescribeTopicPartitionsRequest {
        DescribeTopicPartitionsRequest {
            topics: topics
                .iter()
                .map(|name| DescribeTopicPartitionsTopicRequest {
                    name: name.to_string(),
                })
                .collect(),
            response_partition_limit: limit,
            cursor: cursor.map(|(topic_name, partition_index)| Cursor {
                topic_name: topic_name.to_string(),
                partition_index,
            }),
        }
    }

    /// (topic, partition indexes) of each described topic, and the next cursor.
    type Summary = (Vec<(String, Vec<i32>)>, Option<(String, i32)>);

    fn summary(r: &DescribeTopicPartitionsResponse) -> Summary {
        (
            r.topics
                .iter()
                .map(|t| {
                    (
                        t.name.clone().unwrap_or_default(),
                        t.partitions.iter().map(|p| p.partition_index).collect(),
                    )
                })
                .collect(),
            r.next_cursor
                .as_ref()
                .map(|c| (c.topic_name.clone(), c.partition_index)),
        )
    }

    fn s(name: &str, ids: &[i32]) -> (String, Vec<i32>) {
        (name.to_string(), ids.to_vec())
    }

    #[test]
    fn a_topic_cut_short_carries_the_cursor_to_its_next_partition() {
        let image = image(&[("b", 4), ("a", 3), ("c", 1)]);
        let first = describe(&image, &request(&[], 5, None), 2000);
        assert_eq!(
            summary(&first),
            (
                vec![s("a", &[0, 1, 2]), s("b", &[0, 1])],
                Some(("b".into(), 2))
            )
        );
        let second = describe(&image, &request(&[], 5, Some(("b", 2))), 2000);
        assert_eq!(
            summary(&second),
            (vec![s("b", &[2, 3]), s("c", &[0])], None)
        );
    }

    #[test]
    fn a_limit_used_up_at_a_topic_boundary_points_at_the_next_topic() {
        let image = image(&[("a", 3), ("b", 4)]);
        let r = describe(&image, &request(&[], 3, None), 2000);
        assert_eq!(
            summary(&r),
            (vec![s("a", &[0, 1, 2])], Some(("b".into(), 0)))
        );
        // Named topics too, and the cursor may name a topic that does not exist (Kafka's
        // boundary cursor names whatever comes next in the request).
        let r = describe(&image, &request(&["missing", "a"], 3, None), 2000);
        assert_eq!(
            summary(&r),
            (vec![s("a", &[0, 1, 2])], Some(("missing".into(), 0)))
        );
    }

    #[test]
    fn paging_with_every_limit_visits_every_partition_once_in_order() {
        let image = image(&[("t1", 5), ("t2", 1), ("t3", 0), ("t4", 7), ("t5", 2)]);
        let everything: Vec<(String, i32)> = ["t1", "t2", "t3", "t4", "t5"]
            .iter()
            .flat_map(|t| {
                let n = image.topic(t).map_or(0, |t| t.partitions.len()) as i32;
                (0..n).map(move |i| (t.to_string(), i))
            })
            .collect();
        for limit in 1..=20 {
            for named in [false, true] {
                let names: Vec<&str> = if named {
                    vec!["t5", "t4", "t3", "t2", "t1", "t4"]
                } else {
                    vec![]
                };
                let mut cursor: Option<(String, i32)> = None;
                let mut seen = Vec::new();
                let mut pages = 0;
                loop {
                    pages += 1;
                    assert!(pages < 100, "limit {limit}: no progress");
                    let r = describe(
                        &image,
                        &request(
                            &names,
                            limit,
                            cursor.as_ref().map(|(t, p)| (t.as_str(), *p)),
                        ),
                        2000,
                    );
                    let described: usize = r.topics.iter().map(|t| t.partitions.len()).sum();
                    assert!(described <= limit as usize, "limit {limit}");
                    for t in &r.topics {
                        assert_eq!(t.error_code, 0);
                        for p in &t.partitions {
                            seen.push((t.name.clone().unwrap_or_default(), p.partition_index));
                        }
                    }
                    match r.next_cursor {
                        Some(c) => cursor = Some((c.topic_name, c.partition_index)),
                        None => break,
                    }
                }
                assert_eq!(seen, everything, "limit {limit}, named {named}");
            }
        }
    }

    #[test]
    fn the_broker_limit_caps_the_request_limit() {
        let image = image(&[("a", 10)]);
        let r = describe(&image, &request(&["a"], 2000, None), 4);
        assert_eq!(
            summary(&r),
            (vec![s("a", &[0, 1, 2, 3])], Some(("a".into(), 4)))
        );
    }

    #[test]
    fn zero_and_negative_limits() {
        let image = image(&[("a", 2), ("b", 1)]);
        let r = describe(&image, &request(&[], 0, None), 2000);
        assert_eq!(summary(&r), (vec![], Some(("a".into(), 0))));
        let r = describe(&image, &request(&["b", "zz"], -1, None), 2000);
        assert_eq!(summary(&r), (vec![], None));
    }

    #[test]
    fn cursor_partitions_beyond_the_topic_or_negative() {
        let image = image(&[("a", 3), ("b", 2)]);
        // Past the end: the cursor's topic is listed without partitions, the next follow.
        let r = describe(&image, &request(&[], 10, Some(("a", 9))), 2000);
        assert_eq!(summary(&r), (vec![s("a", &[]), s("b", &[0, 1])], None));
        // Negative: the indexes below 0 count against the page but describe nothing.
        let r = describe(&image, &request(&[], 3, Some(("a", -2))), 2000);
        assert_eq!(summary(&r), (vec![s("a", &[0])], Some(("a".into(), 1))));
        // Near i32::MAX the end wraps below the start: nothing, and the wrapped index as the
        // cursor, as Kafka's int arithmetic gives.
        let r = describe(&image, &request(&[], 10, Some(("a", i32::MAX - 1))), 2000);
        assert_eq!(
            summary(&r),
            (
                vec![s("a", &[])],
                Some(("a".into(), (i32::MAX - 1).wrapping_add(10)))
            )
        );
    }

    #[test]
    fn topics_before_the_cursor_are_skipped() {
        let image = image(&[("a", 1), ("b", 1), ("c", 1)]);
        let r = describe(&image, &request(&[], 10, Some(("b", 0))), 2000);
        assert_eq!(summary(&r), (vec![s("b", &[0]), s("c", &[0])], None));
        // Listing every topic, the cursor's topic need not exist.
        let r = describe(&image, &request(&[], 10, Some(("bb", 0))), 2000);
        assert_eq!(summary(&r), (vec![s("c", &[0])], None));
    }

    #[test]
    fn named_topics_missing_the_cursor_topic_are_an_invalid_request() {
        let image = image(&[("a", 1), ("b", 1)]);
        let r = describe(&image, &request(&["b", "a"], 10, Some(("c", 0))), 2000);
        assert_eq!(r.next_cursor, None);
        let errors: Vec<(Option<String>, i16, i32)> = r
            .topics
            .iter()
            .map(|t| (t.name.clone(), t.error_code, t.topic_authorized_operations))
            .collect();
        assert_eq!(
            errors,
            vec![
                (Some("b".into()), ErrorCode::INVALID_REQUEST.0, i32::MIN),
                (Some("a".into()), ErrorCode::INVALID_REQUEST.0, i32::MIN),
            ]
        );
        // A topic before the cursor is dropped before the check, so it cannot satisfy it.
        let r = describe(&image, &request(&["a"], 10, Some(("b", 0))), 2000);
        assert_eq!(r.topics[0].error_code, ErrorCode::INVALID_REQUEST.0);
    }

    #[test]
    fn unknown_and_illegal_names_get_kafkas_errors() {
        let image = image(&[("a", 1)]);
        let r = describe(
            &image,
            &request(
                &["missing", "a", "bad name", "__transaction_state"],
                10,
                None,
            ),
            2000,
        );
        let got: Vec<(String, i16, Uuid, bool, usize)> = r
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.clone().unwrap_or_default(),
                    t.error_code,
                    t.topic_id,
                    t.is_internal,
                    t.partitions.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("__transaction_state".into(), 3, Uuid::ZERO, true, 0),
                ("a".into(), 0, Uuid::from_u128(1), false, 1),
                ("bad name".into(), 17, Uuid::ZERO, false, 0),
                ("missing".into(), 3, Uuid::ZERO, false, 0),
            ]
        );
        assert!(r
            .topics
            .iter()
            .all(|t| t.topic_authorized_operations == TOPIC_AUTHORIZED_OPERATIONS_ALL));
    }

    #[test]
    fn partitions_show_every_replica_and_the_offline_ones() {
        let image = image(&[("a", 3)]);
        let r = describe(&image, &request(&["a"], 10, None), 2000);
        let p = &r.topics[0].partitions;
        assert_eq!(p[0].leader_id, 1);
        assert_eq!(p[1].leader_id, 2);
        // Broker 3 is fenced: still a registered leader, but its replicas are offline.
        assert_eq!(p[2].leader_id, 3);
        for partition in p {
            assert_eq!(partition.replica_nodes, vec![1, 2, 3]);
            assert_eq!(partition.isr_nodes, vec![1, 2]);
            assert_eq!(partition.offline_replicas, vec![3]);
            assert_eq!(partition.leader_epoch, 7);
            assert_eq!(partition.eligible_leader_replicas, Some(vec![]));
            assert_eq!(partition.last_known_elr, Some(vec![]));
        }
        // A leader that is no registered broker is shown as -1.
        let mut image = image.clone();
        image.fenced_brokers.clear();
        let r = describe(&image, &request(&["a"], 10, None), 2000);
        assert_eq!(r.topics[0].partitions[2].leader_id, -1);
    }

    #[test]
    fn partitions_show_their_eligible_leader_replicas_and_last_known_elr() {
        let mut image = image(&[("a", 1)]);
        let mut topic = TopicImage::clone(image.topic("a").unwrap());
        let p = &mut topic.partitions[0];
        (p.leader, p.isr) = (-1, Vec::new());
        p.eligible_leader_replicas = vec![2, 3];
        p.last_known_elr = vec![1];
        image.put_topic(topic);
        let r = describe(&image, &request(&["a"], 10, None), 2000);
        let p = &r.topics[0].partitions[0];
        assert_eq!((p.leader_id, p.isr_nodes.clone()), (-1, vec![]));
        assert_eq!(p.eligible_leader_replicas, Some(vec![2, 3]));
        assert_eq!(p.last_known_elr, Some(vec![1]));
    }

    #[test]
    fn topic_names_are_checked_as_kafka_does() {
        assert!(validate_topic_name("ok.topic_1-x").is_ok());
        assert_eq!(
            validate_topic_name(""),
            Err("Topic name is invalid: the empty string is not allowed".into())
        );
        assert_eq!(
            validate_topic_name(".."),
            Err("Topic name is invalid: '..' is not allowed".into())
        );
        assert!(validate_topic_name(&"x".repeat(249)).is_ok());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(validate_topic_name("é").is_err());
        assert_eq!(TOPIC_AUTHORIZED_OPERATIONS_ALL, 3576);
    }
}
