use bytes::Bytes;
use sluice_log::FetchStamp;
use sluice_protocol::messages::fetch::{FetchableTopicResponse, ForgottenTopic, PartitionData};

use super::*;

const V: i16 = 17;
const EVICTION_MS: i64 = 120_000;

fn topic_id(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

fn partition(index: i32, fetch_offset: i64) -> FetchPartition {
    FetchPartition {
        partition: index,
        fetch_offset,
        partition_max_bytes: 1 << 20,
        ..FetchPartition::default()
    }
}

/// A request in session `id`/`epoch` naming `partitions` of topic 1 (index, fetch offset).
fn request(id: i32, epoch: i32, partitions: &[(i32, i64)]) -> FetchRequest {
    FetchRequest {
        session_id: id,
        session_epoch: epoch,
        topics: if partitions.is_empty() {
            Vec::new()
        } else {
            vec![FetchTopic {
                topic: String::new(),
                topic_id: topic_id(1),
                partitions: partitions.iter().map(|(p, o)| partition(*p, *o)).collect(),
            }]
        },
        ..FetchRequest::default()
    }
}

/// The answer a fetch of `request` would get: every partition with high watermark `hw`,
/// `records` bytes of records for the partitions in `with_data`.
fn answer(request: &FetchRequest, hw: i64, with_data: &[i32]) -> FetchResponse {
    FetchResponse {
        responses: request
            .topics
            .iter()
            .map(|t| FetchableTopicResponse {
                topic: t.topic.clone(),
                topic_id: t.topic_id,
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| PartitionData {
                        partition_index: p.partition,
                        high_watermark: hw,
                        last_stable_offset: hw,
                        log_start_offset: 0,
                        records: Some(if with_data.contains(&p.partition) {
                            Bytes::from_static(b"batch")
                        } else {
                            Bytes::new()
                        }),
                        ..PartitionData::default()
                    })
                    .collect(),
            })
            .collect(),
        ..FetchResponse::default()
    }
}

fn answered(response: &FetchResponse) -> Vec<i32> {
    response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.partition_index))
        .collect()
}

fn asked(request: &FetchRequest) -> Vec<(i32, i64)> {
    request
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (p.partition, p.fetch_offset)))
        .collect()
}

/// The context of an incremental request that moved session `id` to `epoch`, none left out.
fn in_session(id: i32, epoch: i32) -> FetchContext {
    FetchContext::Incremental {
        id,
        epoch,
        left_out: 0,
    }
}

fn cache(slots: i32) -> FetchSessionCache {
    FetchSessionCache::new(0, 1, slots, EVICTION_MS, 7)
}

/// A full fetch of `partitions` at `now_ms`: the new session's id (0 if none).
fn open(
    cache: &mut FetchSessionCache,
    partitions: &[(i32, i64)],
    privileged: bool,
    now_ms: u64,
) -> i32 {
    let mut req = request(0, INITIAL_EPOCH, partitions);
    let context = cache.new_context(V, &mut req, now_ms, 0);
    assert_eq!(context, FetchContext::Full);
    let mut resp = answer(&req, 10, &[]);
    cache.complete(
        context,
        V,
        &req,
        privileged,
        &mut resp,
        now_ms,
        Vec::new(),
        0,
    );
    assert_eq!(
        answered(&resp).len(),
        partitions.len(),
        "a full answer names every partition"
    );
    resp.session_id
}

/// An incremental fetch: the context, the partitions read, the partitions answered.
fn incremental(
    cache: &mut FetchSessionCache,
    req: FetchRequest,
    hw: i64,
    with_data: &[i32],
) -> (FetchContext, Vec<(i32, i64)>, FetchResponse) {
    incremental_at(cache, req, hw, with_data, 1)
}

fn incremental_at(
    cache: &mut FetchSessionCache,
    mut req: FetchRequest,
    hw: i64,
    with_data: &[i32],
    now_ms: u64,
) -> (FetchContext, Vec<(i32, i64)>, FetchResponse) {
    let context = cache.new_context(V, &mut req, now_ms, 0);
    let read = asked(&req);
    let mut resp = match context {
        FetchContext::Error(code) => error_response(code),
        _ => answer(&req, hw, with_data),
    };
    cache.complete(context, V, &req, false, &mut resp, now_ms, Vec::new(), 0);
    (context, read, resp)
}

#[test]
fn epoch_minus_one_without_a_session_is_sessionless() {
    let mut cache = cache(10);
    let mut req = request(0, FINAL_EPOCH, &[(0, 0)]);
    let context = cache.new_context(V, &mut req, 0, 0);
    assert_eq!(context, FetchContext::Sessionless);
    let mut resp = answer(&req, 5, &[]);
    cache.complete(context, V, &req, false, &mut resp, 0, Vec::new(), 0);
    assert_eq!(resp.session_id, 0);
    assert_eq!(answered(&resp), vec![0]);
    assert!(cache.is_empty());
}

#[test]
fn a_full_fetch_opens_a_session_and_increments_name_only_changes() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0), (1, 0), (2, 0)], false, 0);
    assert!(id > 0);
    assert_eq!((cache.len(), cache.partitions_cached()), (1, 3));

    // Epoch 1 names partition 1 at a new offset: all three are read (0 and 2 from the
    // session); the high watermark moved, so all three are answered.
    let (context, read, resp) = incremental(&mut cache, request(id, 1, &[(1, 4)]), 11, &[1]);
    assert_eq!(context, in_session(id, 2));
    assert_eq!(read, vec![(0, 0), (1, 4), (2, 0)]);
    assert_eq!(answered(&resp), vec![0, 1, 2]);
    assert_eq!(resp.session_id, id);

    // Nothing changed: the answer is empty. (The read starts after partition 1, the last one
    // that returned records.)
    let (_, read, resp) = incremental(&mut cache, request(id, 2, &[]), 11, &[]);
    assert_eq!(read, vec![(2, 0), (0, 0), (1, 4)]);
    assert!(resp.responses.is_empty());
    assert_eq!((resp.error_code, resp.session_id), (0, id));

    // Records for partition 2 only.
    let (_, _, resp) = incremental(&mut cache, request(id, 3, &[]), 11, &[2]);
    assert_eq!(answered(&resp), vec![2]);

    // Add partition 5, forget partition 0.
    let mut req = request(id, 4, &[(5, 7)]);
    req.forgotten_topics_data = vec![ForgottenTopic {
        topic: String::new(),
        topic_id: topic_id(1),
        partitions: vec![0],
    }];
    let (_, read, resp) = incremental(&mut cache, req, 11, &[]);
    assert_eq!(read, vec![(5, 7), (1, 4), (2, 0)]);
    // A new partition is answered once (its high watermark was never sent).
    assert_eq!(answered(&resp), vec![5]);
    assert_eq!(cache.partitions_cached(), 3);
}

#[test]
fn an_error_is_answered_and_its_end_answered_again() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0), (1, 0)], false, 0);
    let mut req = request(id, 1, &[]);
    let context = cache.new_context(V, &mut req, 1, 0);
    let mut resp = answer(&req, 10, &[]);
    resp.responses[0].partitions[1].error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
    resp.responses[0].partitions[1].high_watermark = -1;
    cache.complete(context, V, &req, false, &mut resp, 1, Vec::new(), 0);
    assert_eq!(answered(&resp), vec![1]);
    // The error is gone, the high watermark is the one answered before it: answered anyway.
    let (_, _, resp) = incremental(&mut cache, request(id, 2, &[]), 10, &[]);
    assert_eq!(answered(&resp), vec![1]);
}

#[test]
fn session_errors_have_kafkas_codes() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0)], false, 0);
    let (context, _, resp) = incremental(&mut cache, request(id + 1, 1, &[]), 0, &[]);
    assert_eq!(
        context,
        FetchContext::Error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND)
    );
    assert_eq!(
        (resp.error_code, resp.session_id),
        (ErrorCode::FETCH_SESSION_ID_NOT_FOUND.0, 0)
    );
    // Session 0 with an epoch above 0 names no session.
    let (context, _, _) = incremental(&mut cache, request(0, 1, &[]), 0, &[]);
    assert_eq!(
        context,
        FetchContext::Error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND)
    );
    let (context, _, _) = incremental(&mut cache, request(id, 5, &[]), 0, &[]);
    assert_eq!(
        context,
        FetchContext::Error(ErrorCode::INVALID_FETCH_SESSION_EPOCH)
    );
    // A session opened with topic ids (v13+) continued by name (v12).
    let mut req = request(id, 1, &[]);
    assert_eq!(
        cache.new_context(12, &mut req, 1, 0),
        FetchContext::Error(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR)
    );
    // The errors left the session as it was: epoch 1 still continues it.
    let (context, _, _) = incremental(&mut cache, request(id, 1, &[]), 0, &[]);
    assert_eq!(context, in_session(id, 2));
}

#[test]
fn a_request_that_waited_behind_another_of_its_session_is_refused() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0)], false, 0);
    let mut first = request(id, 1, &[]);
    let first_context = cache.new_context(V, &mut first, 1, 0);
    // A second request with the next epoch runs to the end while the first waits.
    let (_, _, resp) = incremental(&mut cache, request(id, 2, &[]), 10, &[0]);
    assert_eq!(answered(&resp), vec![0]);
    let mut resp = answer(&first, 10, &[0]);
    cache.complete(first_context, V, &first, false, &mut resp, 1, Vec::new(), 0);
    assert_eq!(resp.error_code, ErrorCode::INVALID_FETCH_SESSION_EPOCH.0);
    assert!(resp.responses.is_empty());
}

#[test]
fn final_epoch_closes_and_a_full_fetch_replaces() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0)], false, 0);
    // Epoch 0 with the session's id: closed, a new one opened.
    let mut req = request(id, INITIAL_EPOCH, &[(0, 3)]);
    let context = cache.new_context(V, &mut req, 1, 0);
    assert_eq!(context, FetchContext::Full);
    let mut resp = answer(&req, 3, &[]);
    cache.complete(context, V, &req, false, &mut resp, 1, Vec::new(), 0);
    let replacement = resp.session_id;
    assert_ne!(replacement, id);
    assert_eq!(cache.ids(), vec![replacement]);
    // Epoch -1: closed, served without a session.
    let mut req = request(replacement, FINAL_EPOCH, &[]);
    assert_eq!(
        cache.new_context(V, &mut req, 2, 0),
        FetchContext::Sessionless
    );
    assert!(cache.is_empty());
    assert_eq!(cache.partitions_cached(), 0);
}

#[test]
fn forgetting_every_partition_closes_the_session() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0)], false, 0);
    let mut req = request(id, 1, &[]);
    req.forgotten_topics_data = vec![ForgottenTopic {
        topic: String::new(),
        topic_id: topic_id(1),
        partitions: vec![0],
    }];
    assert_eq!(
        cache.new_context(V, &mut req, 1, 0),
        FetchContext::Sessionless
    );
    assert!(req.topics.is_empty());
    assert!(cache.is_empty());
}

#[test]
fn sessions_by_name_before_v13() {
    let mut cache = cache(10);
    let mut req = request(0, INITIAL_EPOCH, &[(0, 0), (1, 0)]);
    req.topics[0].topic = "t".to_string();
    req.topics[0].topic_id = Uuid::ZERO;
    let context = cache.new_context(12, &mut req, 0, 0);
    let mut resp = answer(&req, 1, &[]);
    cache.complete(context, 12, &req, false, &mut resp, 0, Vec::new(), 0);
    let id = resp.session_id;
    let mut req = request(id, 1, &[(1, 1)]);
    req.topics[0].topic = "t".to_string();
    req.topics[0].topic_id = Uuid::ZERO;
    let context = cache.new_context(12, &mut req, 1, 0);
    assert_eq!(context, in_session(id, 2));
    assert_eq!(req.topics.len(), 1);
    assert_eq!(req.topics[0].topic, "t");
    assert_eq!(asked(&req), vec![(0, 0), (1, 1)]);
    let mut resp = answer(&req, 1, &[1]);
    cache.complete(context, 12, &req, false, &mut resp, 1, Vec::new(), 0);
    assert_eq!(answered(&resp), vec![1]);
    assert_eq!(resp.responses[0].topic, "t");
}

#[test]
fn the_cache_is_bounded_and_evicts_as_kafka() {
    let mut cache = cache(2);
    let small = open(&mut cache, &[(0, 0)], false, 0);
    let big = open(&mut cache, &[(0, 0), (1, 0), (2, 0)], false, 0);
    assert!(small > 0 && big > 0);
    // Full; both young: a consumer's new session evicts nothing and gets session 0.
    assert_eq!(open(&mut cache, &[(0, 0)], false, 10), 0);
    assert_eq!(cache.ids().len(), 2);
    assert_eq!(cache.evictions(), 0);
    // A follower's (privileged) evicts the smallest consumer session.
    let follower = open(&mut cache, &[(0, 0)], true, 10);
    assert!(follower > 0);
    assert_eq!(cache.evictions(), 1);
    let mut ids = vec![big, follower];
    ids.sort_unstable();
    assert_eq!(cache.ids(), ids);
    // A follower cannot evict a young follower's session, but any consumer's, whatever its size.
    let follower2 = open(&mut cache, &[(0, 0), (1, 0), (2, 0)], true, 20);
    assert!(follower2 > 0);
    let mut ids = vec![follower, follower2];
    ids.sort_unstable();
    assert_eq!(cache.ids(), ids);
    // Only followers' young sessions now: nobody is evicted.
    assert_eq!(open(&mut cache, &[(0, 0); 1], true, 30), 0);
    assert_eq!(open(&mut cache, &[(0, 0)], false, 30), 0);
    // Keep follower2 in use; `follower` goes unused past the eviction time: it is evicted by
    // anyone, least recently used first.
    let (context, _, _) = incremental_at(&mut cache, request(follower2, 1, &[]), 10, &[], 50);
    assert!(matches!(context, FetchContext::Incremental { .. }));
    let later = EVICTION_MS as u64 + 20;
    let consumer = open(&mut cache, &[(0, 0)], false, later);
    assert!(consumer > 0);
    let mut ids = vec![follower2, consumer];
    ids.sort_unstable();
    assert_eq!(cache.ids(), ids);
    assert_eq!(cache.evictions(), 3);
    assert_eq!(cache.partitions_cached(), 4);
}

#[test]
fn an_old_session_is_evictable_by_a_larger_consumer_session() {
    let mut cache = cache(1);
    let first = open(&mut cache, &[(0, 0), (1, 0)], false, 0);
    // Used recently (not stale) but created more than the eviction time ago.
    let now = EVICTION_MS as u64 + 10;
    let mut req = request(first, 1, &[]);
    let context = cache.new_context(V, &mut req, now, 0);
    let mut resp = answer(&req, 10, &[]);
    cache.complete(context, V, &req, false, &mut resp, now, Vec::new(), 0);
    // Smaller, or as large (Kafka's key order breaks the tie by id, and a new key's is 0): not
    // worth it.
    assert_eq!(open(&mut cache, &[(0, 0)], false, now + 1), 0);
    assert_eq!(open(&mut cache, &[(0, 0), (1, 0)], false, now + 1), 0);
    // Larger: evicts it.
    let second = open(&mut cache, &[(0, 0), (1, 0), (2, 0)], false, now + 1);
    assert!(second > 0);
    assert_eq!(cache.ids(), vec![second]);
}

#[test]
fn slots_split_among_shards_and_ids_name_their_shard() {
    let caches: Vec<FetchSessionCache> = (0..3)
        .map(|shard| FetchSessionCache::new(shard, 3, 1000, EVICTION_MS, shard as u64))
        .collect();
    let slots: Vec<usize> = caches.iter().map(|c| c.max_entries()).collect();
    assert_eq!(slots, vec![334, 333, 333]);
    let range = i32::MAX / 3;
    for (shard, mut cache) in caches.into_iter().enumerate() {
        for _ in 0..50 {
            let id = open(&mut cache, &[(0, 0)], false, 0);
            assert!(id > 0);
            assert_eq!((id - 1) / range, shard as i32, "id {id}");
        }
    }
    // No slots: no session, every fetch full.
    let mut none = cache(0);
    assert_eq!(open(&mut none, &[(0, 0)], true, 0), 0);
}

#[test]
fn epochs_wrap_to_one() {
    assert_eq!(next_epoch(0), 1);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(-1), -1);
}

#[test]
fn reads_start_after_the_last_partition_that_returned_records() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 0), (1, 0), (2, 0)], false, 0);
    // Partition 1 returns records: the next read starts at 2, then 0, then 1.
    let (_, read, _) = incremental(&mut cache, request(id, 1, &[]), 10, &[1]);
    assert_eq!(read, vec![(0, 0), (1, 0), (2, 0)]);
    let mut req = request(id, 2, &[]);
    cache.new_context(V, &mut req, 1, 0);
    assert_eq!(asked(&req), vec![(2, 0), (0, 0), (1, 0)]);
    // One topic: named once, its partitions in the rotated order.
    assert_eq!(req.topics.len(), 1);
    let mut resp = answer(&req, 10, &[0]);
    cache.complete(
        in_session(id, 3),
        V,
        &req,
        false,
        &mut resp,
        1,
        Vec::new(),
        0,
    );
    assert_eq!(answered(&resp), vec![0]);
    let (_, read, _) = incremental(&mut cache, request(id, 3, &[]), 10, &[]);
    assert_eq!(read, vec![(1, 0), (2, 0), (0, 0)]);
    // Nothing returned: the order stays.
    let (_, read, _) = incremental(&mut cache, request(id, 4, &[]), 10, &[]);
    assert_eq!(read, vec![(1, 0), (2, 0), (0, 0)]);
}

/// A session of two topics' partitions (by id), each cached at `fetch_offset` 0 and answered
/// before with high watermark 10, starting after `start_after` (an index into its keys).
fn two_topic_session(partitions: i32, start_after: Option<usize>) -> FetchSession {
    let mut map = BTreeMap::new();
    for topic in [1u128, 2] {
        for p in 0..partitions {
            let mut cached = CachedPartition::from_request(&partition(p, 0));
            cached.high_watermark = 10;
            cached.local_log_start_offset = 0;
            map.insert(key_of(true, topic_id(topic), "", p), cached);
        }
    }
    let start_after =
        start_after.map(|i| map.keys().nth(i).cloned().expect("a key of the session"));
    FetchSession {
        privileged: false,
        uses_topic_ids: true,
        creation_ms: 0,
        last_used_ms: 0,
        epoch: 1,
        partitions: map,
        start_after,
        evictable_by_privileged: false,
        evictable_by_all: false,
    }
}

/// (topic id, partition) of every partition an answer carries, in its order.
fn answered_by_topic(response: &FetchResponse) -> Vec<(Uuid, i32)> {
    response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic_id, p.partition_index)))
        .collect()
}

#[test]
fn walking_the_session_beside_the_answer_keeps_what_looking_up_keeps() {
    // Seeded: any failure replays. Rotations that split a topic's run in two (it is named
    // twice), quiet partitions left out, answers with records, a moved high watermark or log
    // start, or an error, reads that left a quiet mark.
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for round in 0..500 {
        let partitions = 1 + next(6) as i32;
        let keys = 2 * partitions as u64;
        let start_after = (next(4) != 0).then(|| next(keys) as usize);
        let mut session = two_topic_session(partitions, start_after);
        // Some partitions are quiet and left out of the request and the answer.
        let stamp = FetchStamp::default();
        for cached in session.partitions.values_mut() {
            if next(3) == 0 {
                cached.quiet = Some(Quiet {
                    mark: stamp.mark(),
                    image_generation: 0,
                });
            }
        }
        let request = FetchRequest {
            topics: topics_of(&session, |c| c.quiet.as_ref().is_some_and(|q| q.holds(0))).0,
            ..FetchRequest::default()
        };
        let mut response = answer(&request, 10, &[]);
        for topic in &mut response.responses {
            for data in &mut topic.partitions {
                match next(6) {
                    0 => data.records = Some(Bytes::from_static(b"batch")),
                    1 => data.high_watermark = 11,
                    2 => data.log_start_offset = 3,
                    3 => data.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0,
                    _ => {}
                }
            }
        }
        let (mut walked, mut looked_up) = (session.clone(), session);
        let (mut walked_response, mut looked_up_response) = (response.clone(), response);
        let n = answered_by_topic(&walked_response).len();
        let marks: Vec<Option<QuietMark>> = (0..n)
            .map(|_| (next(2) == 0).then(|| stamp.mark()))
            .collect();
        let walked_last =
            respond_in_session_order(&mut walked, &mut walked_response, &mut marks.clone(), 0);
        let looked_up_last = respond_by_lookup(
            &mut looked_up,
            true,
            &mut looked_up_response,
            &mut { marks },
            0,
        );
        assert_eq!(
            walked_last,
            Some(looked_up_last),
            "round {round}: the next start"
        );
        assert_eq!(
            answered_by_topic(&walked_response),
            answered_by_topic(&looked_up_response),
            "round {round}: the partitions answered"
        );
        assert_eq!(
            walked.partitions, looked_up.partitions,
            "round {round}: the session"
        );
    }
}

#[test]
fn an_answer_out_of_the_sessions_order_is_looked_up() {
    let mut session = two_topic_session(2, Some(1));
    let request = FetchRequest {
        topics: topics_of(&session, |_| false).0,
        ..FetchRequest::default()
    };
    let mut response = answer(&request, 11, &[]);
    response.responses.reverse();
    let before = session.partitions.clone();
    assert_eq!(
        respond_in_session_order(
            &mut session,
            &mut response,
            &mut [None, None, None, None],
            0
        ),
        None
    );
    assert_eq!(
        session.partitions, before,
        "nothing changed when the order does not match"
    );
    assert_eq!(answered_by_topic(&response).len(), 4, "nor the answer");
}

/// An incremental fetch by the handler's rules, at image generation `generation`: the
/// partitions read, and the partitions answered. `mark` gives the read's quiet mark of a
/// partition the answer has nothing new for (as a caught-up read leaves one).
fn incremental_quiet(
    cache: &mut FetchSessionCache,
    mut req: FetchRequest,
    generation: u64,
    hw: i64,
    with_data: &[i32],
    mark: impl Fn(i32) -> Option<QuietMark>,
) -> (FetchContext, Vec<(i32, i64)>, Vec<i32>) {
    let context = cache.new_context(V, &mut req, 1, generation);
    let read = asked(&req);
    let mut resp = answer(&req, hw, with_data);
    let marks = answered(&resp)
        .into_iter()
        .map(|p| mark(p).filter(|_| !with_data.contains(&p)))
        .collect();
    cache.complete(context, V, &req, false, &mut resp, 1, marks, generation);
    (context, read, answered(&resp))
}

#[test]
fn quiet_partitions_are_left_out_until_their_stamp_or_the_image_moves() {
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 10), (1, 10), (2, 10)], false, 0);
    let stamps: Vec<FetchStamp> = (0..3).map(|_| FetchStamp::default()).collect();
    let mark = |p: i32| Some(stamps[p as usize].mark());
    // Nothing is quiet yet: every partition is read, and each caught-up one leaves its mark.
    let (context, read, _) = incremental_quiet(&mut cache, request(id, 1, &[]), 1, 10, &[], mark);
    assert_eq!(context.left_out(), 0);
    assert_eq!(read, vec![(0, 10), (1, 10), (2, 10)]);
    let (context, read, answered) =
        incremental_quiet(&mut cache, request(id, 2, &[]), 1, 10, &[], mark);
    assert_eq!(context.left_out(), 3, "all three are quiet");
    assert!(read.is_empty() && answered.is_empty());
    // The session still names every partition for a read of all of them.
    let all: Vec<i32> = cache
        .session_topics(id)
        .expect("the session")
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.partition))
        .collect();
    assert_eq!(all.len(), 3);
    // A change to partition 1 (its high watermark, role, status...) moves its stamp.
    stamps[1].bump();
    let (context, read, answered) =
        incremental_quiet(&mut cache, request(id, 3, &[]), 1, 11, &[1], mark);
    assert_eq!(context.left_out(), 2);
    assert_eq!(read, vec![(1, 10)]);
    assert_eq!(answered, vec![1], "its new records are answered");
    // The client names partition 1 again at its new position: it is read, and caught up.
    let (_, read, _) = incremental_quiet(&mut cache, request(id, 4, &[(1, 11)]), 1, 11, &[], mark);
    assert_eq!(read, vec![(1, 11)]);
    let (context, read, _) = incremental_quiet(&mut cache, request(id, 5, &[]), 1, 11, &[], mark);
    assert_eq!((context.left_out(), read.len()), (3, 0));
    // A new metadata image: every partition is read again.
    let (context, read, _) = incremental_quiet(&mut cache, request(id, 6, &[]), 2, 11, &[], mark);
    assert_eq!(context.left_out(), 0);
    assert_eq!(read.len(), 3);
}

#[test]
fn only_an_answer_of_nothing_new_at_the_high_watermark_makes_a_partition_quiet() {
    let mut cache = cache(10);
    // Partition 0's client is behind the high watermark (10): a read that found nothing there
    // (the response's byte budget ran out) must not silence it.
    let id = open(&mut cache, &[(0, 5), (1, 10), (2, 10)], false, 0);
    let stamp = FetchStamp::default();
    let mark = |_| Some(stamp.mark());
    let mut req = request(id, 1, &[]);
    let context = cache.new_context(V, &mut req, 1, 1);
    let mut resp = answer(&req, 10, &[]);
    // Partition 2 is answered with an error.
    resp.responses[0].partitions[2].error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
    let marks = vec![mark(0), mark(1), mark(2)];
    cache.complete(context, V, &req, false, &mut resp, 1, marks, 1);
    let (context, read, _) = incremental_quiet(&mut cache, request(id, 2, &[]), 1, 10, &[], mark);
    assert_eq!(context.left_out(), 1, "only partition 1 is quiet");
    assert_eq!(read, vec![(0, 5), (2, 10)]);
}

#[test]
fn a_followers_session_and_every_64th_request_read_every_partition() {
    let stamp = FetchStamp::default();
    let mark = |_| Some(stamp.mark());
    // A follower's session.
    let mut cache = cache(10);
    let id = open(&mut cache, &[(0, 10), (1, 10)], true, 0);
    for epoch in 1..4 {
        let mut req = request(id, epoch, &[]);
        let context = cache.new_context(V, &mut req, 1, 1);
        assert_eq!(asked(&req).len(), 2, "epoch {epoch}");
        let mut resp = answer(&req, 10, &[]);
        let marks = vec![mark(0), mark(1)];
        cache.complete(context, V, &req, true, &mut resp, 1, marks, 1);
    }
    // A consumer's session: quiet from its second request on, but for every 64th.
    let id = open(&mut cache, &[(0, 10), (1, 10)], false, 0);
    let mut read_all = Vec::new();
    for epoch in 1..=130 {
        let (context, read, _) =
            incremental_quiet(&mut cache, request(id, epoch, &[]), 1, 10, &[], mark);
        if read.len() == 2 {
            read_all.push(epoch);
        } else {
            assert_eq!(context.left_out(), 2, "epoch {epoch}");
        }
    }
    // The requests that move the session's epoch to a multiple of 64.
    assert_eq!(
        read_all,
        vec![1, READ_ALL_EVERY_EPOCHS - 1, 2 * READ_ALL_EVERY_EPOCHS - 1]
    );
}
