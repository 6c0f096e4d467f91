//! `QuorumNode`: one voter of the controller quorum, sans-IO. It owns raft-rs's `RawNode`
//! (pre-vote and check-quorum on) over the in-memory `EntryCache`; the driver feeds it ticks,
//! messages and proposals, and carries out each `Ready` in raft-rs's documented order:
//!
//! 1. `ready()` → `ReadyToPersist`: send `send_now` (only a leader has these: its appends may
//!    go out while it persists, Raft thesis §10.2.1 — it counts itself in a quorum only once its
//!    own entries are persisted), then persist `entries` and `hard_state` durably
//!    (`QuorumLog::persist`).
//! 2. `persisted()` → `Persisted`: only now send `send` (votes, append acknowledgements — every
//!    message that promises something about this node's disk) and apply `committed`, in order.
//!
//! Between the two calls the node accepts nothing else (raft-rs forbids stepping a node whose
//! Ready is not advanced): queue incoming messages and ticks until `persisted()`.

use protobuf::Message as _;
use raft::eraftpb::{Entry, HardState, Message, MessageType};
use raft::{RawNode, StateRole};

use crate::error::{QuorumError, Result};
use crate::log_format::ENTRY_DATA_BYTES_MAX;
use crate::quorum_log::Restored;
use crate::storage::EntryCache;

/// A quorum node's settings.
#[derive(Clone, Debug)]
pub struct QuorumConfig {
    /// This node's id (KRaft's `node.id`), non-zero.
    pub id: u64,
    /// Every voter's id, this node's included (a fixed set until reconfiguration lands).
    pub voters: Vec<u64>,
    /// Ticks without a leader before a follower starts a (pre-)election; each election waits a
    /// random number of ticks in `[election_ticks, 2 × election_ticks)`. A campaign that found
    /// no leader is retried sooner (see `QuorumNode::campaign_retry_ticks`).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// Bytes of entries in one append message (at least one entry goes regardless).
    pub append_bytes_max: u64,
    /// Append messages in flight to one follower.
    pub appends_in_flight_max: usize,
    /// Seeds the election timeouts. raft-rs draws them from the thread's RNG; the node redraws
    /// each from this seed so that a simulation run replays exactly.
    pub seed: u64,
}

impl QuorumConfig {
    /// KRaft-like defaults for the tick length the driver chooses.
    pub fn new(id: u64, voters: Vec<u64>, seed: u64) -> QuorumConfig {
        QuorumConfig {
            id,
            voters,
            election_ticks: 10,
            heartbeat_ticks: 2,
            append_bytes_max: 1 << 20,
            appends_in_flight_max: 64,
            seed,
        }
    }
}

/// What to do with a `Ready` before calling `persisted()`.
#[derive(Debug, Default)]
pub struct ReadyToPersist {
    /// Messages that may go out before the persistence (a leader's appends and heartbeats).
    pub send_now: Vec<Message>,
    /// Entries to append, replacing the log from `entries[0].index` on.
    pub entries: Vec<Entry>,
    /// Hard state to persist after the entries, if it changed.
    pub hard_state: Option<HardState>,
}

impl ReadyToPersist {
    /// Whether there is anything to write.
    pub fn needs_persist(&self) -> bool {
        !self.entries.is_empty() || self.hard_state.is_some()
    }
}

/// What to do once a `Ready` is durable.
#[derive(Debug, Default)]
pub struct Persisted {
    /// Messages to send now.
    pub send: Vec<Message>,
    /// Newly committed entries, to apply in order. Entries with empty data are a new leader's
    /// no-op: skip them.
    pub committed: Vec<Entry>,
}

/// One voter of the quorum.
pub struct QuorumNode {
    raw: RawNode<EntryCache>,
    /// The Ready being persisted, with the copies of its entries and hard state that go into
    /// the cache once they are durable.
    in_flight: Option<(raft::Ready, Vec<Entry>, Option<HardState>)>,
    election_rng: SplitMix64,
    election_ticks: usize,
    /// (term, role) after the last call: raft-rs redraws the election timeout exactly when one
    /// of them changes.
    term_role: (u64, StateRole),
    /// Campaigns started since this node last knew a leader: each one that fails (a split vote,
    /// peers still in their lease) is retried after a backoff that doubles from a quarter of
    /// the election timeout, as KRaft's `controller.quorum.election.backoff.max.ms`.
    campaigns_unanswered: u32,
}

impl QuorumNode {
    /// Starts a node from what its quorum log restored. Entries up to the restored commit index
    /// come back out of `persisted()` as committed, from index 1: the driver rebuilds its state
    /// machine from them.
    pub fn new(config: &QuorumConfig, restored: Restored) -> Result<QuorumNode> {
        let raft_config = raft::Config {
            id: config.id,
            election_tick: config.election_ticks,
            heartbeat_tick: config.heartbeat_ticks,
            min_election_tick: config.election_ticks,
            max_election_tick: 2 * config.election_ticks,
            max_size_per_msg: config.append_bytes_max,
            max_inflight_msgs: config.appends_in_flight_max,
            applied: 0,
            check_quorum: true,
            pre_vote: true,
            ..raft::Config::default()
        };
        raft_config.validate()?;
        let cache = EntryCache::new(config.voters.clone(), restored.hard_state, restored.entries);
        let logger = crate::raft_log::logger();
        let raw = RawNode::new(&raft_config, cache, &logger)?;
        let term_role = (raw.raft.term, raw.raft.state);
        let mut node = QuorumNode {
            raw,
            in_flight: None,
            election_rng: SplitMix64(config.seed ^ config.id.rotate_left(32)),
            election_ticks: config.election_ticks,
            term_role,
            campaigns_unanswered: 0,
        };
        node.redraw_election_timeout();
        Ok(node)
    }

    /// One tick of the driver's clock. Returns whether there may be a Ready.
    pub fn tick(&mut self) -> Result<bool> {
        self.check_idle()?;
        let ready = self.raw.tick();
        // raft-rs zeroes the elapsed ticks exactly when a tick starts a campaign.
        let campaign_started = self.is_campaigning() && self.raw.raft.election_elapsed == 0;
        if campaign_started {
            self.campaigns_unanswered = self.campaigns_unanswered.saturating_add(1);
        }
        self.after_state_change(campaign_started);
        Ok(ready)
    }

    /// Ticks until the next tick that does something: a leader's next heartbeat or quorum
    /// check, anyone else's election timeout. A driver may sleep that long and then deliver the
    /// ticks it owes at once (see the controller's `RaftDriver`): ticks in between only count.
    pub fn ticks_until_due(&self) -> usize {
        let raft = &self.raw.raft;
        let due = if raft.state == StateRole::Leader {
            let heartbeat = raft
                .heartbeat_timeout()
                .saturating_sub(raft.heartbeat_elapsed());
            let quorum_check = raft
                .election_timeout()
                .saturating_sub(raft.election_elapsed);
            heartbeat.min(quorum_check)
        } else {
            raft.randomized_election_timeout()
                .saturating_sub(raft.election_elapsed)
        };
        due.max(1)
    }

    /// Hands the node a message from a peer.
    pub fn step(&mut self, message: Message) -> Result<()> {
        self.check_idle()?;
        if message.to != self.raw.raft.id {
            return Err(QuorumError::Misaddressed {
                id: self.raw.raft.id,
                to: message.to,
            });
        }
        match message.msg_type {
            MessageType::MsgSnapshot => return Err(QuorumError::SnapshotUnsupported),
            // raft-rs would append a peer's MsgPropose (a follower forwards proposals to its
            // leader): a duplicated packet would commit the proposal twice. As in KRaft, only
            // the active controller takes writes, from its own driver.
            MessageType::MsgPropose => return Err(QuorumError::ForwardedProposal),
            _ => {}
        }
        // raft-rs refuses local message types (MsgHup, MsgBeat, …) from the network itself.
        let stepped = self.raw.step(message);
        self.after_state_change(false);
        Ok(stepped?)
    }

    /// Starts an election now instead of after the election timeout: a single voter elects
    /// itself at start-up without waiting (pre-vote first, as with a timeout).
    pub fn campaign(&mut self) -> Result<()> {
        self.check_idle()?;
        let campaigned = self.raw.campaign();
        self.campaigns_unanswered = self.campaigns_unanswered.saturating_add(1);
        self.after_state_change(true);
        Ok(campaigned?)
    }

    /// Proposes `data` as a new entry. Only the leader accepts (others answer `NotLeader`,
    /// KRaft's NOT_CONTROLLER: proposals are never forwarded). Accepted is not committed: the
    /// entry may still be lost to a new leader. It is committed when `persisted()` returns it.
    pub fn propose(&mut self, data: Vec<u8>) -> Result<()> {
        self.check_idle()?;
        if self.raw.raft.state != StateRole::Leader {
            return Err(QuorumError::NotLeader {
                leader_id: self.raw.raft.leader_id,
            });
        }
        if data.len() > ENTRY_DATA_BYTES_MAX {
            return Err(QuorumError::ProposalTooLarge {
                bytes: data.len(),
                bytes_max: ENTRY_DATA_BYTES_MAX,
            });
        }
        let proposed = self.raw.propose(Vec::new(), data);
        self.after_state_change(false);
        Ok(proposed?)
    }

    /// The next work, if any. Carry it out, then call `persisted()`.
    pub fn ready(&mut self) -> Result<Option<ReadyToPersist>> {
        self.check_idle()?;
        if !self.raw.has_ready() {
            return Ok(None);
        }
        let mut ready = self.raw.ready();
        // No snapshot can appear: storage offers none and step() refuses MsgSnapshot.
        debug_assert!(ready.snapshot().is_empty());
        let work = ReadyToPersist {
            send_now: ready.take_messages(),
            entries: ready.take_entries(),
            hard_state: ready.hs().cloned(),
        };
        self.in_flight = Some((ready, work.entries.clone(), work.hard_state.clone()));
        Ok(Some(work))
    }

    /// Tells the node that the last Ready's entries and hard state are durable.
    pub fn persisted(&mut self) -> Result<Persisted> {
        let Some((mut ready, entries, hard_state)) = self.in_flight.take() else {
            return Err(QuorumError::NoReadyInFlight);
        };
        let store = self.raw.mut_store();
        store.append(&entries);
        if let Some(hard_state) = hard_state {
            store.set_hard_state(hard_state);
        }
        let mut send = ready.take_persisted_messages();
        let mut committed = ready.take_committed_entries();
        let mut light = self.raw.advance(ready);
        send.extend(light.take_messages());
        committed.extend(light.take_committed_entries());
        self.raw.advance_apply();
        self.after_state_change(false);
        Ok(Persisted { send, committed })
    }

    /// This node's id.
    pub fn id(&self) -> u64 {
        self.raw.raft.id
    }

    /// The current term.
    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    /// Follower, pre-candidate, candidate or leader.
    pub fn role(&self) -> StateRole {
        self.raw.raft.state
    }

    /// The leader this node follows (0 when it knows none).
    pub fn leader_id(&self) -> u64 {
        self.raw.raft.leader_id
    }

    /// The highest index known committed.
    pub fn commit_index(&self) -> u64 {
        self.raw.raft.raft_log.committed
    }

    /// The last index in the log (persisted or not).
    pub fn index_last(&self) -> u64 {
        self.raw.raft.raft_log.last_index()
    }

    /// Each voter's Raft id with the highest index the leader knows it holds (raft-rs's
    /// `Progress::matched`); empty unless this node leads.
    pub fn voter_progress(&self) -> Vec<(u64, u64)> {
        if self.raw.raft.state != StateRole::Leader {
            return Vec::new();
        }
        self.raw
            .raft
            .prs()
            .iter()
            .map(|(id, progress)| (*id, progress.matched))
            .collect()
    }

    fn check_idle(&self) -> Result<()> {
        match self.in_flight {
            Some(_) => Err(QuorumError::ReadyInFlight),
            None => Ok(()),
        }
    }

    fn is_campaigning(&self) -> bool {
        matches!(
            self.raw.raft.state,
            StateRole::PreCandidate | StateRole::Candidate
        )
    }

    /// raft-rs resets its randomized election timeout (from the thread's RNG) exactly in
    /// `Raft::reset`, which runs when the node changes term or role; redraw it from the seeded
    /// RNG whenever either changed, so runs replay. A campaign started by a tick (a retry keeps
    /// term and role) is drawn too.
    fn after_state_change(&mut self, campaign_started: bool) {
        if self.raw.raft.leader_id != raft::INVALID_ID {
            self.campaigns_unanswered = 0;
        }
        let term_role = (self.raw.raft.term, self.raw.raft.state);
        if term_role != self.term_role || campaign_started {
            self.term_role = term_role;
            self.redraw_election_timeout();
        }
    }

    /// A follower waits `[election_ticks, 2 × election_ticks)`. A campaigning node waits the
    /// retry backoff instead: two followers that time out together both win their pre-votes and
    /// split the vote, and waiting a whole election timeout again would double the outage.
    fn redraw_election_timeout(&mut self) {
        let span = if self.is_campaigning() && self.campaigns_unanswered > 0 {
            self.campaign_retry_ticks()
        } else {
            self.election_ticks
        };
        let wait = span + (self.election_rng.next_u64() % span as u64) as usize;
        // raft-rs takes timeouts in `[election_ticks, 2 × election_ticks)` only: a shorter wait
        // is the shortest timeout with the clock already advanced. A campaigning node follows
        // no leader, so the advanced clock never extends a leader's lease (raft-rs checks the
        // lease only while it knows a leader).
        let timeout = wait.max(self.election_ticks);
        self.raw.raft.set_randomized_election_timeout(timeout);
        if wait < timeout {
            assert!(self.raw.raft.leader_id == raft::INVALID_ID);
            self.raw.raft.election_elapsed = timeout - wait;
        }
    }

    /// The backoff span of the next retry: a quarter of the election timeout, doubled with
    /// every campaign that found no leader, up to the election timeout.
    fn campaign_retry_ticks(&self) -> usize {
        assert!(self.campaigns_unanswered > 0);
        let base = (self.election_ticks / 4).max(1);
        let doublings = (self.campaigns_unanswered - 1).min(16);
        (base << doublings).min(self.election_ticks)
    }
}

/// A message's bytes on the wire (protobuf, raft-rs's own encoding).
pub fn encode_message(message: &Message) -> Result<Vec<u8>> {
    Ok(message.write_to_bytes()?)
}

/// A message from the wire. Hostile bytes give an error, never a panic.
pub fn decode_message(bytes: &[u8]) -> Result<Message> {
    Ok(Message::parse_from_bytes(bytes)?)
}

/// A small seeded generator (SplitMix64): deterministic across platforms and crate versions.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ELECTION_TICKS: usize = 40;

    /// Three in-memory voters; a dead node's messages are dropped.
    struct Voters {
        nodes: Vec<QuorumNode>,
        alive: Vec<bool>,
        messages: Vec<Message>,
    }

    impl Voters {
        fn new(seed: u64) -> Voters {
            let nodes = (1..=3)
                .map(|id| {
                    let mut config = QuorumConfig::new(id, vec![1, 2, 3], seed);
                    config.election_ticks = ELECTION_TICKS;
                    config.heartbeat_ticks = ELECTION_TICKS / 4;
                    QuorumNode::new(&config, Restored::default()).expect("node")
                })
                .collect();
            Voters {
                nodes,
                alive: vec![true; 3],
                messages: Vec::new(),
            }
        }

        /// Carries out every Ready and delivers every message until the cluster is quiet.
        fn settle(&mut self) {
            for _ in 0..1000 {
                for index in 0..3 {
                    if !self.alive[index] {
                        continue;
                    }
                    let node = &mut self.nodes[index];
                    while let Some(mut work) = node.ready().expect("ready") {
                        self.messages.append(&mut work.send_now);
                        let mut persisted = node.persisted().expect("persisted");
                        self.messages.append(&mut persisted.send);
                    }
                }
                if self.messages.is_empty() {
                    return;
                }
                for message in std::mem::take(&mut self.messages) {
                    let index = (message.to - 1) as usize;
                    if self.alive[index] {
                        self.nodes[index].step(message).expect("step");
                    }
                }
            }
            panic!("the voters never went quiet");
        }

        /// Ticks every live node once, each followed by delivery (so that a tick's campaign
        /// reaches the others before they tick).
        fn tick(&mut self) {
            for index in 0..3 {
                if self.alive[index] {
                    self.nodes[index].tick().expect("tick");
                    self.settle();
                }
            }
        }

        fn leader(&self) -> Option<u64> {
            (0..3)
                .find(|&index| self.alive[index] && self.nodes[index].role() == StateRole::Leader)
                .map(|index| index as u64 + 1)
        }

        /// Ticks until a live leader exists; fails past `ticks_max`.
        fn ticks_until_leader(&mut self, ticks_max: usize) -> usize {
            let mut ticks = 0;
            while self.leader().is_none() {
                self.tick();
                ticks += 1;
                assert!(ticks < ticks_max, "no leader after {ticks} ticks");
            }
            ticks
        }

        fn elect(&mut self, id: u64) {
            self.nodes[(id - 1) as usize].campaign().expect("campaign");
            self.settle();
            assert_eq!(self.leader(), Some(id));
            // One heartbeat round, so that every follower knows the leader.
            for _ in 0..ELECTION_TICKS / 4 {
                self.tick();
            }
            assert!(self.nodes.iter().all(|node| node.leader_id() == id));
        }
    }

    /// The controller's driver sleeps `ticks_until_due` ticks and delivers them at once: the
    /// ticks before the due one must do nothing, and the due one must act.
    #[test]
    fn only_the_due_tick_acts() {
        for seed in 0..20 {
            let mut voters = Voters::new(seed);
            voters.elect(3);
            // The leader: its next heartbeat.
            let leader = &mut voters.nodes[2];
            let due = leader.ticks_until_due();
            assert!((1..=ELECTION_TICKS / 4).contains(&due), "{due}");
            for _ in 1..due {
                leader.tick().expect("tick");
                assert!(leader.ready().expect("ready").is_none(), "seed {seed}");
            }
            leader.tick().expect("tick");
            let work = leader.ready().expect("ready").expect("a heartbeat is due");
            assert!(work
                .send_now
                .iter()
                .any(|m| m.msg_type == MessageType::MsgHeartbeat));
            voters.messages.extend(work.send_now);
            let persisted = leader.persisted().expect("persisted");
            voters.messages.extend(persisted.send);
            // A follower that hears nothing more: its election timeout.
            voters.settle();
            voters.alive[2] = false;
            let follower = &mut voters.nodes[0];
            let due = follower.ticks_until_due();
            assert!((1..2 * ELECTION_TICKS).contains(&due), "{due}");
            for _ in 1..due {
                follower.tick().expect("tick");
                assert_eq!(follower.role(), StateRole::Follower, "seed {seed}");
            }
            follower.tick().expect("tick");
            assert_eq!(follower.role(), StateRole::PreCandidate, "seed {seed}");
        }
    }

    #[test]
    fn a_split_vote_is_retried_within_half_an_election_timeout() {
        for seed in 0..20 {
            let mut voters = Voters::new(seed);
            voters.elect(3);
            voters.alive[2] = false;
            let term_before = voters.nodes[0].term();
            // Both survivors time out at once: each wins the other's pre-vote, votes for
            // itself, and the vote splits.
            voters.nodes[0].campaign().expect("campaign");
            voters.nodes[1].campaign().expect("campaign");
            voters.settle();
            assert_eq!(voters.leader(), None, "seed {seed}: the vote did not split");
            assert_eq!(voters.nodes[0].term(), term_before + 1);
            assert_eq!(voters.nodes[0].role(), StateRole::Candidate);
            let ticks = voters.ticks_until_leader(ELECTION_TICKS);
            // The retry waits [E/4, E/2), never the full [E, 2E) again.
            assert!(
                (ELECTION_TICKS / 4..ELECTION_TICKS / 2).contains(&ticks),
                "{ticks}"
            );
        }
    }

    #[test]
    fn a_follower_still_waits_a_whole_election_timeout() {
        for seed in 0..20 {
            let mut voters = Voters::new(seed);
            voters.elect(3);
            voters.alive[2] = false;
            let ticks = voters.ticks_until_leader(3 * ELECTION_TICKS);
            // The last heartbeat came at most one heartbeat interval before the leader died.
            assert!(ticks + ELECTION_TICKS / 4 >= ELECTION_TICKS, "{ticks}");
        }
    }

    #[test]
    fn a_lone_candidate_backs_off_doubling_up_to_the_election_timeout() {
        let mut voters = Voters::new(7);
        voters.elect(3);
        voters.alive[1] = false;
        voters.alive[2] = false;
        let mut campaign_ticks = Vec::new();
        for tick in 1..20 * ELECTION_TICKS {
            let campaigns_before = voters.nodes[0].campaigns_unanswered;
            voters.tick();
            if voters.nodes[0].campaigns_unanswered > campaigns_before {
                campaign_ticks.push(tick);
            }
        }
        assert!(campaign_ticks.len() >= 6, "campaigns at {campaign_ticks:?}");
        let gaps: Vec<usize> = campaign_ticks.windows(2).map(|w| w[1] - w[0]).collect();
        let spans = [10, 20, 40, 40, 40];
        for (gap, span) in gaps.iter().zip(spans) {
            assert!((span..2 * span).contains(gap), "gaps {gaps:?}");
        }
        assert_eq!(voters.nodes[0].role(), StateRole::PreCandidate);
        assert_eq!(voters.nodes[0].term(), voters.nodes[2].term());
    }
}
