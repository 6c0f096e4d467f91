//! Fetch sessions (KIP-227, incremental fetch) as Apache Kafka 4.4's `FetchSessionCache`,
//! `FetchManager` and `FetchContext` keep them.
//!
//! A full fetch with epoch 0 (INITIAL) creates a session of its partitions when the cache has
//! room (or can evict one); later requests in the session (its id, the next epoch) name only
//! the partitions added or changed (fetch offset, log start, max bytes, epochs) and the ones to
//! forget, and the answer carries only the partitions with something new: records, a changed
//! high watermark or log start, an error, a diverging epoch or a preferred read replica. Epoch
//! -1 (FINAL) closes the session; session 0 with epoch -1 is sessionless, as before KIP-227.
//!
//! Thread-per-core: each data shard keeps its own cache, with `1/shards` of
//! `max.incremental.fetch.session.cache.slots`, and draws its session ids from its own range of
//! the positive ints — as Kafka 4.4 splits its cache into eight `FetchSessionCacheShard`s, each
//! with its share of the slots and its id range, evicting only within a shard. Kafka hands new
//! sessions to its cache shards round-robin and finds any session from any thread; here a
//! session lives on the shard of the connection that opened it, and a request naming a session
//! of another shard (the client's connection moved) is answered FETCH_SESSION_ID_NOT_FOUND, after
//! which clients open a new session with a full fetch. Lookups never cross shards: no lock, no
//! message.
//!
//! Eviction as Kafka's `tryEvict`: first the least recently used session if it went unused for
//! `sluice.min.incremental.fetch.session.eviction.ms` (Kafka's constant
//! `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`, 120 s); else the least valuable evictable session
//! if the new one is worth more (a follower's — privileged — before a consumer's, then more
//! partitions). A follower may evict a consumer's session, or any session created longer ago
//! than the eviction time; a consumer only the latter.

use std::collections::{BTreeMap, HashMap};

use sluice_log::QuietMark;
use sluice_protocol::codec::Uuid;
use sluice_protocol::error::ErrorCode;
use sluice_protocol::messages::fetch::{
    FetchPartition, FetchRequest, FetchResponse, FetchTopic, FetchableTopicResponse, PartitionData,
};

/// Session id 0: no session.
pub const INVALID_SESSION_ID: i32 = 0;
/// Epoch 0: a full request that opens a session.
pub const INITIAL_EPOCH: i32 = 0;
/// Epoch -1: a full request that closes its session and opens none.
pub const FINAL_EPOCH: i32 = -1;
/// Fetch version from which topics are named by id (a session remembers which it uses).
const TOPIC_ID_MIN_VERSION: i16 = 13;
/// Every this many epochs a session's request reads every partition, quiet or not: should a
/// change ever not move a partition's fetch stamp, its answer waits this many fetches, not
/// forever.
pub const READ_ALL_EVERY_EPOCHS: i32 = 64;

/// Wall-clock milliseconds, the time sessions are used and evicted by (Kafka's
/// `time.milliseconds()`).
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The epoch after `epoch` (Kafka's `FetchMetadata.nextEpoch`): wraps to 1, never to 0.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// A partition of a session: by id from v13 (`name` empty), by name before (`topic_id` zero).
#[derive(Clone, Debug, PartialEq, Eq)]
struct PartitionKey {
    /// The topic id's 16 bytes as one integer (big-endian, so the order is the bytes' order).
    topic_id: u128,
    name: String,
    partition: i32,
}

impl PartitionKey {
    fn topic_id(&self) -> Uuid {
        Uuid(self.topic_id.to_be_bytes())
    }
}

impl Ord for PartitionKey {
    /// Topic id, then name, then partition, as the tuple's order was; but the id compares as an
    /// integer and the names only when a session has names. The tuple's derived order called
    /// `memcmp` twice per comparison (the id's bytes, then two empty names): 9.4 % of the
    /// shard's samples with 1,000 partitions in two sessions, in the B-tree lookups of
    /// `complete` (`bench/results/2026-12-05-fetch-session-ab.md`).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.topic_id
            .cmp(&other.topic_id)
            .then_with(|| {
                if self.name.is_empty() && other.name.is_empty() {
                    std::cmp::Ordering::Equal
                } else {
                    self.name.cmp(&other.name)
                }
            })
            .then(self.partition.cmp(&other.partition))
    }
}

impl PartialOrd for PartitionKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One partition of a session: what the client last asked, and what it was last answered.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedPartition {
    fetch_offset: i64,
    log_start_offset: i64,
    max_bytes: i32,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
    /// The high watermark last answered; -1 until answered, and after an error so that the
    /// partition is answered again when the error goes.
    high_watermark: i64,
    /// The log start offset last answered.
    local_log_start_offset: i64,
    /// Set when the last answer found nothing new: while it holds, the next answer would be
    /// the same and dropped, so the read leaves the partition out.
    quiet: Option<Quiet>,
}

/// A partition last answered "nothing new", and what that answer depended on.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Quiet {
    /// The partition's fetch stamp (high watermark, log start, status, role and epoch).
    mark: QuietMark,
    /// The shard's metadata image (routing, leadership, the topic's existence).
    image_generation: u64,
}

impl Quiet {
    fn holds(&self, image_generation: u64) -> bool {
        self.image_generation == image_generation && self.mark.is_current()
    }
}

impl CachedPartition {
    fn from_request(p: &FetchPartition) -> CachedPartition {
        CachedPartition {
            fetch_offset: p.fetch_offset,
            log_start_offset: p.log_start_offset,
            max_bytes: p.partition_max_bytes,
            current_leader_epoch: p.current_leader_epoch,
            last_fetched_epoch: p.last_fetched_epoch,
            high_watermark: -1,
            local_log_start_offset: -1,
            quiet: None,
        }
    }

    /// The client names the partition again (its position moved): it is read this time.
    fn update_request(&mut self, p: &FetchPartition) {
        self.quiet = None;
        self.fetch_offset = p.fetch_offset;
        self.log_start_offset = p.log_start_offset;
        self.max_bytes = p.partition_max_bytes;
        self.current_leader_epoch = p.current_leader_epoch;
        self.last_fetched_epoch = p.last_fetched_epoch;
    }

    fn to_request(&self, partition: i32) -> FetchPartition {
        FetchPartition {
            partition,
            current_leader_epoch: self.current_leader_epoch,
            fetch_offset: self.fetch_offset,
            last_fetched_epoch: self.last_fetched_epoch,
            log_start_offset: self.log_start_offset,
            partition_max_bytes: self.max_bytes,
            ..FetchPartition::default()
        }
    }

    /// Whether an incremental answer must carry `data` (Kafka's `maybeUpdateResponseData`),
    /// remembering what it answers.
    fn must_respond(&mut self, data: &sluice_protocol::messages::fetch::PartitionData) -> bool {
        let mut respond = data.has_records()
            || data.preferred_read_replica >= 0
            || data.diverging_epoch.epoch >= 0;
        if self.high_watermark != data.high_watermark {
            respond = true;
            self.high_watermark = data.high_watermark;
        }
        if self.local_log_start_offset != data.log_start_offset {
            respond = true;
            self.local_log_start_offset = data.log_start_offset;
        }
        if data.error_code != ErrorCode::NONE.0 {
            self.high_watermark = -1;
            respond = true;
        }
        respond
    }

    /// [`CachedPartition::must_respond`], and the partition is quiet from now on when the read
    /// left `mark` (it found nothing new) and the answer is indeed nothing new: no records, no
    /// error, nothing for the client to act on, and the client's position at the high watermark.
    fn answered(
        &mut self,
        data: &PartitionData,
        mark: Option<QuietMark>,
        image_generation: u64,
    ) -> bool {
        let respond = self.must_respond(data);
        let nothing_new = !data.has_records()
            && data.error_code == ErrorCode::NONE.0
            && data.preferred_read_replica < 0
            && data.diverging_epoch.epoch < 0
            && self.fetch_offset >= data.high_watermark;
        self.quiet = mark.filter(|_| nothing_new).map(|mark| Quiet {
            mark,
            image_generation,
        });
        respond
    }
}

/// One session.
#[derive(Clone, Debug)]
struct FetchSession {
    /// A follower's (Kafka's `privileged`): worth more than a consumer's when evicting.
    privileged: bool,
    uses_topic_ids: bool,
    creation_ms: u64,
    last_used_ms: u64,
    /// The epoch the next request must carry.
    epoch: i32,
    /// Ordered by key: a request built from it names each topic once.
    partitions: BTreeMap<PartitionKey, CachedPartition>,
    /// The partition the next read starts after: the last one that returned records. A
    /// response fills its byte budget in request order, so a fixed order would starve the last
    /// partitions of a busy session; Kafka moves returned partitions to the end, this rotates.
    start_after: Option<PartitionKey>,
    /// Whether a privileged new session may evict it (as of its last use).
    evictable_by_privileged: bool,
    /// Whether any new session may evict it (as of its last use).
    evictable_by_all: bool,
}

/// How a fetch request is served (Kafka's `FetchContext` kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchContext {
    /// No session: the request names every partition, the answer carries every one.
    Sessionless,
    /// Answered with this top-level error and no partitions.
    Error(ErrorCode),
    /// Epoch 0: every partition named and answered; a session is created if there is room.
    Full,
    /// A request in session `id`: the request's topics were replaced by every partition of the
    /// session; `epoch` is the epoch the session moved to.
    Incremental {
        /// The session.
        id: i32,
        /// The session's epoch after this request.
        epoch: i32,
        /// Quiet partitions of the session the request leaves out (see
        /// [`FetchSessionCache::new_context`]).
        left_out: usize,
    },
}

impl FetchContext {
    /// How many quiet partitions the request leaves out.
    pub fn left_out(&self) -> usize {
        match self {
            FetchContext::Incremental { left_out, .. } => *left_out,
            _ => 0,
        }
    }
}

/// One shard's fetch sessions.
#[derive(Debug)]
pub struct FetchSessionCache {
    /// This shard's session ids are in `[id_base, id_base + id_range)`.
    id_base: i32,
    id_range: i32,
    max_entries: usize,
    eviction_ms: u64,
    sessions: HashMap<i32, FetchSession>,
    /// Partitions over every session (Kafka's `NumIncrementalFetchPartitionsCached`).
    partitions_cached: usize,
    evictions: u64,
    /// xorshift state for session ids (ids are hard to guess, as Kafka's random ones).
    rng: u64,
}

impl FetchSessionCache {
    /// The cache of shard `shard_index` of `shard_count`: its share of `max_slots` (the
    /// remainder goes to the first shards, so the shards hold `max_slots` together), and
    /// sessions unused for `eviction_ms` evictable by anyone.
    pub fn new(
        shard_index: usize,
        shard_count: usize,
        max_slots: i32,
        eviction_ms: i64,
        seed: u64,
    ) -> FetchSessionCache {
        let shard_count = shard_count.max(1);
        let shard_index = shard_index.min(shard_count - 1);
        let max_slots = max_slots.max(0) as usize;
        let max_entries =
            max_slots / shard_count + usize::from(shard_index < max_slots % shard_count);
        // Ids 1..=i32::MAX, split into one range per shard.
        let id_range = (i32::MAX as usize / shard_count) as i32;
        FetchSessionCache {
            id_base: (shard_index as i32) * id_range + 1,
            id_range,
            max_entries,
            eviction_ms: eviction_ms.max(0) as u64,
            sessions: HashMap::new(),
            partitions_cached: 0,
            evictions: 0,
            rng: seed | 1,
        }
    }

    /// Live sessions (Kafka's `NumIncrementalFetchSessions`).
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether there is no session.
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Partitions over all sessions (Kafka's `NumIncrementalFetchPartitionsCached`).
    pub fn partitions_cached(&self) -> usize {
        self.partitions_cached
    }

    /// Sessions evicted so far (Kafka's `IncrementalFetchSessionEvictionsPerSec` counter).
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The most sessions this shard keeps.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Decides how `request` is served (Kafka's `FetchManager.newContext`). For an incremental
    /// request the session takes the request's added, changed and forgotten partitions, and
    /// `request.topics` becomes every partition of the session but the quiet ones, so that the
    /// fetch reads them.
    ///
    /// A quiet partition: its last answer found nothing new, the client does not name it
    /// again, and neither its fetch stamp nor the shard's metadata image (`image_generation`)
    /// has moved since — read again, it would be answered the same and dropped from the answer
    /// (the marks come to [`FetchSessionCache::complete`] with the answer). A follower's
    /// session reads every partition (its fetch also counts towards the ISR), and so does every
    /// [`READ_ALL_EVERY_EPOCHS`]th request. When the rest has less than the request's
    /// `min_bytes`, the caller reads the whole session ([`FetchSessionCache::session_topics`])
    /// and waits on all of it.
    pub fn new_context(
        &mut self,
        version: i16,
        request: &mut FetchRequest,
        now_ms: u64,
        image_generation: u64,
    ) -> FetchContext {
        let (session_id, epoch) = (request.session_id, request.session_epoch);
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            // Any session a full request names is closed.
            if session_id != INVALID_SESSION_ID {
                self.remove(session_id);
            }
            return if epoch == FINAL_EPOCH {
                FetchContext::Sessionless
            } else {
                FetchContext::Full
            };
        }
        let uses_topic_ids = version >= TOPIC_ID_MIN_VERSION;
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return FetchContext::Error(ErrorCode::FETCH_SESSION_ID_NOT_FOUND);
        };
        if session.epoch != epoch {
            return FetchContext::Error(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
        }
        if session.uses_topic_ids != uses_topic_ids {
            return FetchContext::Error(ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR);
        }
        let size_before = session.partitions.len();
        for topic in &request.topics {
            for p in &topic.partitions {
                let key = key_of(uses_topic_ids, topic.topic_id, &topic.topic, p.partition);
                match session.partitions.get_mut(&key) {
                    Some(cached) => cached.update_request(p),
                    None => {
                        session
                            .partitions
                            .insert(key, CachedPartition::from_request(p));
                    }
                }
            }
        }
        for topic in &request.forgotten_topics_data {
            for partition in &topic.partitions {
                let key = key_of(uses_topic_ids, topic.topic_id, &topic.topic, *partition);
                session.partitions.remove(&key);
            }
        }
        self.partitions_cached = self.partitions_cached + session.partitions.len() - size_before;
        if session.partitions.is_empty() {
            // Kafka closes a session left without partitions and serves the request without.
            self.remove(session_id);
            return FetchContext::Sessionless;
        }
        session.epoch = next_epoch(session.epoch);
        let epoch = session.epoch;
        let (topics, left_out) = if session.privileged || epoch % READ_ALL_EVERY_EPOCHS == 0 {
            topics_of(session, |_| false)
        } else {
            topics_of(session, |c| {
                c.quiet.as_ref().is_some_and(|q| q.holds(image_generation))
            })
        };
        request.topics = topics;
        request.forgotten_topics_data.clear();
        self.touch(session_id, now_ms);
        FetchContext::Incremental {
            id: session_id,
            epoch,
            left_out,
        }
    }

    /// Every partition of session `id`, as an incremental request's topics (for the read and
    /// the wait after one that left out quiet partitions found too little); `None` when the
    /// session is gone.
    pub fn session_topics(&self, id: i32) -> Option<Vec<FetchTopic>> {
        self.sessions
            .get(&id)
            .map(|session| topics_of(session, |_| false).0)
    }

    /// Finishes `response` to `request` (as `new_context` left it) for `context`: sets its
    /// session id, creates the session of a full request if there is room, and for an
    /// incremental request keeps only the partitions the client must see. Each partition of an
    /// incremental answer whose read found nothing new (its entry of `marks`, one per partition
    /// of the answer in its order, is set) is quiet from now on, as of metadata image
    /// `image_generation`.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        context: FetchContext,
        version: i16,
        request: &FetchRequest,
        privileged: bool,
        response: &mut FetchResponse,
        now_ms: u64,
        mut marks: Vec<Option<QuietMark>>,
        image_generation: u64,
    ) {
        match context {
            FetchContext::Sessionless | FetchContext::Error(_) => {
                response.session_id = INVALID_SESSION_ID;
            }
            FetchContext::Full => {
                let uses_topic_ids = version >= TOPIC_ID_MIN_VERSION;
                let size: usize = request.topics.iter().map(|t| t.partitions.len()).sum();
                response.session_id =
                    self.maybe_create_session(now_ms, privileged, size, uses_topic_ids, || {
                        full_session_partitions(uses_topic_ids, request, response)
                    });
            }
            FetchContext::Incremental { id, epoch, .. } => {
                let uses_topic_ids = version >= TOPIC_ID_MIN_VERSION;
                let Some(session) = self.sessions.get_mut(&id) else {
                    // Evicted or closed while this fetch waited.
                    *response = error_response(ErrorCode::FETCH_SESSION_ID_NOT_FOUND);
                    return;
                };
                if session.epoch != epoch {
                    // Another request in the session went ahead while this one waited.
                    *response = error_response(ErrorCode::INVALID_FETCH_SESSION_EPOCH);
                    return;
                }
                let answered: usize = response.responses.iter().map(|t| t.partitions.len()).sum();
                marks.resize(answered, None);
                let last_returned =
                    match respond_in_session_order(session, response, &mut marks, image_generation)
                    {
                        Some(last_returned) => last_returned,
                        None => respond_by_lookup(
                            session,
                            uses_topic_ids,
                            response,
                            &mut marks,
                            image_generation,
                        ),
                    };
                if last_returned.is_some() {
                    session.start_after = last_returned;
                }
                response.responses.retain(|t| !t.partitions.is_empty());
                response.session_id = id;
            }
        }
    }

    /// Kafka's `maybeCreateSession`: a new session's id, or 0 when the cache is full and
    /// nothing may be evicted for it.
    fn maybe_create_session(
        &mut self,
        now_ms: u64,
        privileged: bool,
        size: usize,
        uses_topic_ids: bool,
        partitions: impl FnOnce() -> BTreeMap<PartitionKey, CachedPartition>,
    ) -> i32 {
        if self.max_entries == 0 {
            return INVALID_SESSION_ID;
        }
        if self.sessions.len() >= self.max_entries && !self.try_evict(privileged, size, now_ms) {
            return INVALID_SESSION_ID;
        }
        let id = self.new_session_id();
        let partitions = partitions();
        self.partitions_cached += partitions.len();
        self.sessions.insert(
            id,
            FetchSession {
                privileged,
                uses_topic_ids,
                creation_ms: now_ms,
                last_used_ms: now_ms,
                epoch: next_epoch(INITIAL_EPOCH),
                partitions,
                start_after: None,
                evictable_by_privileged: false,
                evictable_by_all: false,
            },
        );
        self.touch(id, now_ms);
        id
    }

    /// Kafka's `tryEvict`: the least recently used session if it is stale, else the least
    /// valuable evictable one if it is worth no more than the new one (privileged, size).
    fn try_evict(&mut self, privileged: bool, size: usize, now_ms: u64) -> bool {
        let lru = self
            .sessions
            .iter()
            .min_by_key(|(id, s)| (s.last_used_ms, **id))
            .map(|(id, s)| (*id, s.last_used_ms));
        let Some((lru_id, last_used_ms)) = lru else {
            return false;
        };
        if now_ms.saturating_sub(last_used_ms) > self.eviction_ms {
            self.remove(lru_id);
            self.evictions += 1;
            return true;
        }
        let least = self
            .sessions
            .iter()
            .filter(|(_, s)| {
                if privileged {
                    s.evictable_by_privileged
                } else {
                    s.evictable_by_all
                }
            })
            .map(|(id, s)| ((s.privileged, s.partitions.len(), *id), *id))
            .min();
        match least {
            // Kafka's EvictableKey order: the new key (privileged, size, id 0) must not be
            // below the candidate's.
            Some((key, id)) if (privileged, size, 0) >= key => {
                self.remove(id);
                self.evictions += 1;
                true
            }
            _ => false,
        }
    }

    /// Kafka's `touch`: marks `id` used at `now_ms` and re-decides who may evict it.
    fn touch(&mut self, id: i32, now_ms: u64) {
        let eviction_ms = self.eviction_ms;
        if let Some(s) = self.sessions.get_mut(&id) {
            s.last_used_ms = now_ms;
            let old = now_ms.saturating_sub(s.creation_ms) > eviction_ms;
            s.evictable_by_privileged = !s.privileged || old;
            s.evictable_by_all = old;
        }
    }

    fn remove(&mut self, id: i32) -> bool {
        match self.sessions.remove(&id) {
            Some(s) => {
                self.partitions_cached -= s.partitions.len();
                true
            }
            None => false,
        }
    }

    /// A random id of this shard's range that no session has.
    fn new_session_id(&mut self) -> i32 {
        loop {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let r = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33;
            let id = self.id_base + (r % self.id_range.max(1) as u64) as i32;
            if id != INVALID_SESSION_ID && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }

    /// The ids of the live sessions (tests).
    #[cfg(test)]
    fn ids(&self) -> Vec<i32> {
        let mut ids: Vec<i32> = self.sessions.keys().copied().collect();
        ids.sort_unstable();
        ids
    }
}

fn key_of(uses_topic_ids: bool, topic_id: Uuid, name: &str, partition: i32) -> PartitionKey {
    if uses_topic_ids {
        PartitionKey {
            topic_id: u128::from_be_bytes(topic_id.0),
            name: String::new(),
            partition,
        }
    } else {
        PartitionKey {
            topic_id: 0,
            name: name.to_string(),
            partition,
        }
    }
}

/// The request's topics for every partition of `session` but those `leave_out` picks, from the
/// one after `start_after` round to it; one entry per run of a topic's partitions (a topic the
/// rotation splits between the end and the start of the order is named twice, as Kafka's
/// answers may name it). Also returns how many were left out.
fn topics_of(
    session: &FetchSession,
    leave_out: impl Fn(&CachedPartition) -> bool,
) -> (Vec<FetchTopic>, usize) {
    use std::ops::Bound::{Excluded, Unbounded};
    let mut topics: Vec<FetchTopic> = Vec::new();
    let (tail, head) = match &session.start_after {
        Some(key) => (
            session.partitions.range((Excluded(key), Unbounded)),
            Some(session.partitions.range(..=key)),
        ),
        None => (session.partitions.range::<PartitionKey, _>(..), None),
    };
    let mut remaining = session.partitions.len();
    let mut left_out = 0;
    for (key, cached) in tail.chain(head.into_iter().flatten()) {
        if leave_out(cached) {
            left_out += 1;
            remaining -= 1;
            continue;
        }
        let p = cached.to_request(key.partition);
        let topic_id = key.topic_id();
        match topics.last_mut() {
            Some(t) if t.topic_id == topic_id && same_name(&t.topic, &key.name) => {
                t.partitions.push(p)
            }
            _ => {
                if let Some(t) = topics.last_mut() {
                    t.partitions.shrink_to_fit();
                }
                // Room for every partition left, so that a topic's run never grows its vector
                // (~9 reallocations a fetch of 500 partitions); the surplus goes back when the
                // topic's run ends.
                let mut partitions = Vec::with_capacity(remaining);
                partitions.push(p);
                topics.push(FetchTopic {
                    topic: key.name.clone(),
                    topic_id,
                    partitions,
                });
            }
        }
        remaining -= 1;
    }
    if let Some(t) = topics.last_mut() {
        t.partitions.shrink_to_fit();
    }
    (topics, left_out)
}

/// Whether two names of a session's topics are the same. A session by id has no names, and
/// comparing two empty `String`s still calls `memcmp`, once per partition of every fetch (9.1 %
/// of the shard's samples in a profile at 1,000 partitions,
/// `bench/results/2026-12-06-session-names-ab.md`).
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// Keeps the partitions of an incremental answer the client must see, walking the session's
/// partitions beside the answer instead of looking each one up: the answer names them in the
/// order `topics_of` gave the request (the session's order, rotated after `start_after`), less
/// the quiet ones it left out. The B-tree lookup per partition was 14 % of the shard's samples
/// in fetches of 1,000 partitions that found nothing new (`bench/ab/fetch-cost`,
/// `bench/results/2026-12-06-session-names-ab.md`). `marks` has one entry per answered
/// partition. Returns the new `start_after` (the last partition answered with records, if
/// any); `None`, with nothing changed, when the answer does not follow the session's order.
fn respond_in_session_order(
    session: &mut FetchSession,
    response: &mut FetchResponse,
    marks: &mut [Option<QuietMark>],
    image_generation: u64,
) -> Option<Option<PartitionKey>> {
    use std::ops::Bound::{Excluded, Unbounded};
    let mut flat: Vec<(&FetchableTopicResponse, &PartitionData)> = Vec::with_capacity(marks.len());
    for topic in &response.responses {
        flat.extend(topic.partitions.iter().map(|p| (topic, p)));
    }
    debug_assert_eq!(flat.len(), marks.len());
    let answers = |key: &PartitionKey, at: usize| {
        flat.get(at).is_some_and(|(topic, data)| {
            key.partition == data.partition_index
                && key.topic_id() == topic.topic_id
                && same_name(&key.name, &topic.topic)
        })
    };
    // In the request's order the session is tail (after `start_after`) then head.
    let start_after = session.start_after.clone();
    let in_order = {
        let mut at = 0;
        let mut follow = |key: &PartitionKey| {
            if answers(key, at) {
                at += 1;
            }
        };
        match &start_after {
            Some(k) => {
                session
                    .partitions
                    .range((Excluded(k), Unbounded))
                    .for_each(|(key, _)| follow(key));
                session
                    .partitions
                    .range(..=k)
                    .for_each(|(key, _)| follow(key));
            }
            None => session.partitions.keys().for_each(follow),
        }
        at == flat.len()
    };
    if !in_order {
        return None;
    }
    let mut keep = vec![false; flat.len()];
    let mut last_returned: Option<PartitionKey> = None;
    let mut at = 0;
    let mut visit = |key: &PartitionKey, cached: &mut CachedPartition| {
        if !answers(key, at) {
            // Left out as quiet: nothing was read, nothing changes.
            return;
        }
        let data = flat[at].1;
        keep[at] = cached.answered(data, marks[at].take(), image_generation);
        if data.has_records() {
            last_returned = Some(key.clone());
        }
        at += 1;
    };
    match &start_after {
        Some(k) => {
            for (key, cached) in session.partitions.range_mut((Excluded(k), Unbounded)) {
                visit(key, cached);
            }
            for (key, cached) in session.partitions.range_mut(..=k) {
                visit(key, cached);
            }
        }
        None => {
            for (key, cached) in session.partitions.iter_mut() {
                visit(key, cached);
            }
        }
    }
    let mut next = 0;
    for topic in &mut response.responses {
        topic.partitions.retain(|_| {
            next += 1;
            keep[next - 1]
        });
    }
    Some(last_returned)
}

/// As [`respond_in_session_order`] for an answer in any order: each partition looked up.
fn respond_by_lookup(
    session: &mut FetchSession,
    uses_topic_ids: bool,
    response: &mut FetchResponse,
    marks: &mut [Option<QuietMark>],
    image_generation: u64,
) -> Option<PartitionKey> {
    let mut last_returned = None;
    let mut at = 0;
    for topic in &mut response.responses {
        let (topic_id, name) = (topic.topic_id, std::mem::take(&mut topic.topic));
        topic.partitions.retain(|data| {
            let key = key_of(uses_topic_ids, topic_id, &name, data.partition_index);
            if data.has_records() {
                last_returned = Some(key.clone());
            }
            let mark = marks.get_mut(at).and_then(Option::take);
            at += 1;
            session
                .partitions
                .get_mut(&key)
                .is_none_or(|cached| cached.answered(data, mark, image_generation))
        });
        topic.topic = name;
    }
    last_returned
}

/// The partitions of a new session: what the full request asked, what it was answered.
fn full_session_partitions(
    uses_topic_ids: bool,
    request: &FetchRequest,
    response: &FetchResponse,
) -> BTreeMap<PartitionKey, CachedPartition> {
    let mut partitions = BTreeMap::new();
    for (i, topic) in request.topics.iter().enumerate() {
        let answered = response
            .responses
            .get(i)
            .map_or(&[][..], |t| &t.partitions[..]);
        for (j, p) in topic.partitions.iter().enumerate() {
            let mut cached = CachedPartition::from_request(p);
            // The answer lists a topic's partitions in the request's order.
            let data = answered
                .get(j)
                .filter(|d| d.partition_index == p.partition)
                .or_else(|| answered.iter().find(|d| d.partition_index == p.partition));
            if let Some(data) = data {
                cached.high_watermark = if data.error_code == ErrorCode::NONE.0 {
                    data.high_watermark
                } else {
                    -1
                };
                cached.local_log_start_offset = data.log_start_offset;
            }
            partitions.insert(
                key_of(uses_topic_ids, topic.topic_id, &topic.topic, p.partition),
                cached,
            );
        }
    }
    partitions
}

/// An answer with a top-level error, no partitions, no session.
pub fn error_response(code: ErrorCode) -> FetchResponse {
    FetchResponse {
        error_code: code.0,
        session_id: INVALID_SESSION_ID,
        ..FetchResponse::default()
    }
}

#[cfg(test)]
mod tests;
