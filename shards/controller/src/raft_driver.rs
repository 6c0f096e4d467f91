//! The controller quorum's driver on the controller executor: it owns the `QuorumNode` and its
//! `QuorumLog`, feeds it ticks, peer messages and proposals from one bounded inbox, and carries
//! out each Ready in raft-rs's order (send what may go early, persist, then send the rest and
//! apply the committed entries).
//!
//! One task runs the loop, so the node is never touched concurrently. Proposals resolve when
//! their entry commits in the term they were proposed in, and fail when this node stops leading
//! (KRaft's controller fails its pending writes with NOT_CONTROLLER on resignation).
//!
//! Persistence is blocking `std::fs` (`FileDisk`) on this executor: metadata entries are small
//! and rare, and every one must be fsynced before a vote or an acknowledgement anyway.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use glommio::channels::local_channel::{self, LocalReceiver, LocalSender};
use sluice_quorum::{
    decode_message, encode_message, Entry, FileDisk, Message, QuorumConfig, QuorumError, QuorumLog,
    QuorumNode, StateRole,
};
use tracing::{error, info, warn};

use crate::rpc::ControllerRequest;
use crate::rpc_net::RpcClient;

/// Inputs waiting for the driver; beyond this, peer messages are dropped (Raft retries).
const INBOX_CAPACITY: usize = 4096;

/// Why a proposal did not commit.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    /// This node does not lead (any more); the known leader's node id, -1 if none.
    #[error("not the active controller (leader {0})")]
    NotLeader(i32),
    /// The quorum log failed; the node stops.
    #[error("quorum failure: {0}")]
    Failed(String),
}

/// KRaft node ids may be 0; Raft ids may not.
pub fn raft_id(node_id: i32) -> u64 {
    node_id as u64 + 1
}

/// The node id of a Raft id (0, "none", maps to -1).
pub fn node_id(raft_id: u64) -> i32 {
    raft_id as i32 - 1
}

/// What the driver tells the controller.
pub trait Applier {
    /// A committed entry, in index order; `data` is empty for a leader's no-op entry.
    fn apply(&self, entry: &Entry);
    /// This node became leader of `term`; entries up to `index_first` (its no-op) come from
    /// earlier terms and must be applied before it serves writes.
    fn became_leader(&self, term: u64, index_first: u64);
    /// This node stopped leading, or learned of another leader.
    fn leader_changed(&self, term: u64, leader_id: i32);
}

enum Input {
    Message(Message),
    Propose {
        data: Vec<u8>,
        reply: oneshot::Sender<Result<u64, ProposeError>>,
    },
    Status(oneshot::Sender<QuorumStatus>),
}

/// The quorum as this node sees it (what DescribeQuorum reports).
#[derive(Clone, Debug, Default)]
pub struct QuorumStatus {
    /// The current term (Kafka's leader epoch).
    pub term: u64,
    /// The leader's node id, -1 if none is known.
    pub leader_id: i32,
    /// The commit index (Kafka's high watermark).
    pub commit_index: u64,
    /// Each voter, in node id order; progress is known only while this node leads.
    pub voters: Vec<VoterStatus>,
}

/// One voter as the leader knows it.
#[derive(Clone, Debug, Default)]
pub struct VoterStatus {
    /// `node.id`.
    pub node_id: i32,
    /// The highest index the leader knows it holds; None if not leading.
    pub matched: Option<u64>,
    /// Wall-clock ms when this leader last heard from it; -1 if never in this term.
    pub last_heard_ms: i64,
    /// Wall-clock ms when it last held every entry the leader had; -1 if never in this term.
    pub last_caught_up_ms: i64,
}

/// The handle others hold: send inputs, read the role.
pub struct RaftHandle {
    inbox: LocalSender<Input>,
    leader_id: Cell<i32>,
}

impl RaftHandle {
    /// Proposes `data`; resolves with its index once committed.
    pub async fn propose(&self, data: Vec<u8>) -> Result<u64, ProposeError> {
        let (reply, done) = oneshot::channel();
        if self
            .inbox
            .send(Input::Propose { data, reply })
            .await
            .is_err()
        {
            return Err(ProposeError::Failed("quorum driver stopped".into()));
        }
        done.await
            .unwrap_or_else(|_| Err(ProposeError::Failed("quorum driver stopped".into())))
    }

    /// Hands a peer's message to the node; dropped when the inbox is full.
    pub fn receive(&self, bytes: &[u8]) {
        match decode_message(bytes) {
            Ok(message) => {
                let _ = self.inbox.try_send(Input::Message(message));
            }
            Err(error) => warn!(%error, "undecodable raft message dropped"),
        }
    }

    /// The leader's node id, -1 if none is known.
    pub fn leader_id(&self) -> i32 {
        self.leader_id.get()
    }

    /// The quorum's state as the driver sees it now; None if the driver stopped.
    pub async fn status(&self) -> Option<QuorumStatus> {
        let (reply, done) = oneshot::channel();
        self.inbox.send(Input::Status(reply)).await.ok()?;
        done.await.ok()
    }
}

/// The quorum's settings as the driver needs them.
pub struct DriverSettings {
    /// This node's `node.id`.
    pub node_id: i32,
    /// Every voter's node id with its address (None: this node, or a single local voter).
    pub voters: Vec<(i32, Option<std::net::SocketAddr>)>,
    /// Where the quorum log lives.
    pub dir: std::path::PathBuf,
    /// Length of one tick.
    pub tick: Duration,
    /// `controller.quorum.election.timeout.ms`: elections start after a random timeout in
    /// `[timeout / 2, timeout)`.
    pub election_timeout: Duration,
}

/// Opens the quorum log. Returns the handle and the driver, to be started with
/// `RaftDriver::spawn` once the handle is in place (the driver calls the applier at once).
pub fn open(
    settings: DriverSettings,
    applier: Rc<dyn Applier>,
) -> Result<(Rc<RaftHandle>, RaftDriver), QuorumError> {
    let disk = FileDisk::open(&settings.dir).map_err(|source| QuorumError::Io {
        path: settings.dir.clone(),
        source,
    })?;
    let (log, restored) = QuorumLog::open(disk)?;
    let voters: Vec<u64> = settings.voters.iter().map(|(id, _)| raft_id(*id)).collect();
    let mut config = QuorumConfig::new(raft_id(settings.node_id), voters.clone(), seed());
    let tick_ms = settings.tick.as_millis().max(1) as u64;
    config.election_ticks =
        ((settings.election_timeout.as_millis() as u64 / 2) / tick_ms).max(3) as usize;
    config.heartbeat_ticks = (config.election_ticks / 4).max(1);
    let mut node = QuorumNode::new(&config, restored)?;
    if voters.len() == 1 {
        // Alone, there is nobody to wait for.
        node.campaign()?;
    }
    let (inbox, inputs) = local_channel::new_bounded(INBOX_CAPACITY);
    let handle = Rc::new(RaftHandle {
        inbox,
        leader_id: Cell::new(-1),
    });
    let peers = settings
        .voters
        .iter()
        .filter(|(id, _)| *id != settings.node_id)
        .filter_map(|(id, addr)| addr.map(|addr| (raft_id(*id), RpcClient::new(addr, 256))))
        .collect();
    let driver = Driver {
        node_id: settings.node_id,
        tick: settings.tick,
        ticked_at: Instant::now(),
        heartbeat_ticks: config.heartbeat_ticks,
        node,
        log,
        peers,
        pending: BTreeMap::new(),
        applier,
        handle: handle.clone(),
        role: StateRole::Follower,
        leader: 0,
        voter_ids: voters,
        voters_heard: BTreeMap::new(),
    };
    Ok((handle, RaftDriver { driver, inputs }))
}

/// The longest a single voter that leads sleeps: its ticks have nothing to do.
const LONE_LEADER_WAIT: Duration = Duration::from_secs(1);

/// The driver, opened but not yet running.
pub struct RaftDriver {
    driver: Driver,
    inputs: LocalReceiver<Input>,
}

impl RaftDriver {
    /// Starts the driver task on this executor.
    pub fn spawn(self) {
        glommio::spawn_local(self.driver.run(self.inputs)).detach();
    }
}

struct Driver {
    node_id: i32,
    /// Length of one Raft tick. Ticks are not delivered one by one: the driver sleeps until the
    /// next tick that does something (a heartbeat, an election timeout) or the next input, and
    /// then hands the node the ticks that have passed (`catch_up`). Idle controllers were woken 100
    /// times a second, each wake costing ~7 `io_uring_enter` calls and a membarrier
    /// (bench/results/2026-12-01-soak.md: 0.57-0.76 % of a core per idle controller).
    tick: Duration,
    /// When the last tick handed to the node ended.
    ticked_at: Instant,
    /// One heartbeat interval in ticks: how far past its next due tick a catch-up may go.
    heartbeat_ticks: usize,
    node: QuorumNode,
    log: QuorumLog<FileDisk>,
    peers: BTreeMap<u64, RpcClient>,
    /// Proposed entries by index, with the term they were proposed in.
    pending: BTreeMap<u64, (u64, oneshot::Sender<Result<u64, ProposeError>>)>,
    applier: Rc<dyn Applier>,
    handle: Rc<RaftHandle>,
    role: StateRole,
    leader: u64,
    /// Every voter's Raft id.
    voter_ids: Vec<u64>,
    /// While leading: per voter, what DescribeQuorum's LastFetchTimestamp and
    /// LastCaughtUpTimestamp report.
    voters_heard: BTreeMap<u64, VoterHeard>,
}

/// When a leader last heard from a voter, and when the voter was last caught up.
#[derive(Clone, Copy, Debug)]
struct VoterHeard {
    /// Wall-clock ms of the last message from it.
    last_heard_ms: i64,
    /// The leader's last index at that moment.
    leader_index_last: u64,
    /// Wall-clock ms at which it held everything the leader had; -1 if never.
    last_caught_up_ms: i64,
}

impl Driver {
    async fn run(mut self, inputs: LocalReceiver<Input>) {
        // The node may have work at once (a restored log, a campaign).
        if let Err(error) = self.drain_ready() {
            return self.fail(error);
        }
        loop {
            // Messages that have arrived go first: they came before now, and counting the time
            // up to now before reading them would make a late-read heartbeat response look
            // missing (a leader starved of CPU for an election timeout would resign a quorum
            // that answered it). The yield lets the tasks that read peers' sockets queue what
            // the kernel already holds. Ticks still run at least once per heartbeat interval.
            futures_lite::future::yield_now().await;
            if self.handle.inbox.len() == 0 || self.ticked_at.elapsed() >= self.wait_max() {
                if let Err(error) = self.catch_up().and_then(|()| self.drain_ready()) {
                    return self.fail(error);
                }
                self.note_role();
            }
            let received = if self.handle.inbox.len() > 0 {
                Ok(inputs.recv().await)
            } else {
                let wait = self.wait();
                glommio::timer::timeout(wait, async { Ok(inputs.recv().await) }).await
            };
            let input = match received {
                Ok(Some(input)) => input,
                Ok(None) => return,
                // The next due tick: the loop's top hands it over.
                Err(_) => continue,
            };
            let result = match input {
                Input::Message(message) => self.step(message),
                Input::Propose { data, reply } => {
                    self.propose(data, reply);
                    Ok(())
                }
                Input::Status(reply) => {
                    let _ = reply.send(self.status());
                    Ok(())
                }
            };
            if let Err(error) = result.and_then(|()| self.drain_ready()) {
                return self.fail(error);
            }
            self.note_role();
        }
    }

    /// Hands the node the whole ticks that have passed since the last one, up to its next due
    /// tick and one heartbeat interval beyond: a stall longer than that (the executor starved
    /// of CPU) is not counted, as a ticker's lost ticks were not, so that one catch-up never
    /// runs two timeouts in a row before the messages that came meanwhile are read.
    fn catch_up(&mut self) -> Result<(), QuorumError> {
        let elapsed = self.ticked_at.elapsed();
        let owed = (elapsed.as_nanos() / self.tick.as_nanos().max(1)) as usize;
        if owed == 0 {
            return Ok(());
        }
        let deliver = owed.min(self.node.ticks_until_due() + self.heartbeat_ticks);
        if deliver < owed {
            self.ticked_at = Instant::now();
        } else {
            // Keep the fraction of a tick that has passed: it counts towards the next one.
            self.ticked_at += self.tick * owed as u32;
        }
        for _ in 0..deliver {
            self.node.tick()?;
        }
        Ok(())
    }

    /// The longest sleep between deliveries (one heartbeat interval), so a role change made by
    /// an input (a vote won) never waits behind a sleep computed for the old role.
    fn wait_max(&self) -> Duration {
        self.tick * self.heartbeat_ticks as u32
    }

    /// How long the driver may sleep when no input comes: until the node's next due tick.
    fn wait(&self) -> Duration {
        if self.peers.is_empty() && self.role == StateRole::Leader {
            return LONE_LEADER_WAIT;
        }
        let due_at = self.ticked_at + self.tick * self.node.ticks_until_due() as u32;
        due_at
            .saturating_duration_since(Instant::now())
            .min(self.wait_max())
    }

    fn step(&mut self, message: Message) -> Result<(), QuorumError> {
        let from = message.from;
        let result = self.step_node(message);
        if self.role == StateRole::Leader && self.voter_ids.contains(&from) {
            self.note_heard(from);
        }
        result
    }

    /// A leader heard from voter `from`: it fetched, in KRaft's words. As KRaft's
    /// `LeaderState.updateReplicaState` reckons it, a voter that now holds what the leader had
    /// when it last heard from it was caught up at that earlier time; one that holds everything
    /// the leader has now is caught up now. (Judging only by "everything now" would call a voter
    /// that keeps up with a steady stream of writes never caught up.)
    fn note_heard(&mut self, from: u64) {
        let now = epoch_ms() as i64;
        let index_last = self.node.index_last();
        let matched = self
            .node
            .voter_progress()
            .into_iter()
            .find(|(id, _)| *id == from)
            .map(|(_, matched)| matched);
        let heard = self.voters_heard.entry(from).or_insert(VoterHeard {
            last_heard_ms: -1,
            leader_index_last: u64::MAX,
            last_caught_up_ms: -1,
        });
        if let Some(matched) = matched {
            if matched >= index_last {
                heard.last_caught_up_ms = now;
            } else if matched >= heard.leader_index_last {
                heard.last_caught_up_ms = heard.last_caught_up_ms.max(heard.last_heard_ms);
            }
        }
        heard.last_heard_ms = now;
        heard.leader_index_last = index_last;
    }

    fn status(&self) -> QuorumStatus {
        let progress = self.node.voter_progress();
        let leading = self.role == StateRole::Leader;
        let now = epoch_ms() as i64;
        let mut voters: Vec<VoterStatus> = self
            .voter_ids
            .iter()
            .map(|&id| {
                let matched = progress.iter().find(|(p, _)| *p == id).map(|(_, m)| *m);
                let (last_heard_ms, last_caught_up_ms) = if leading && id == self.node.id() {
                    // The leader is always caught up with itself (Kafka reports now).
                    (now, now)
                } else {
                    self.voters_heard
                        .get(&id)
                        .map_or((-1, -1), |h| (h.last_heard_ms, h.last_caught_up_ms))
                };
                VoterStatus {
                    node_id: node_id(id),
                    matched,
                    last_heard_ms,
                    last_caught_up_ms,
                }
            })
            .collect();
        voters.sort_by_key(|v| v.node_id);
        QuorumStatus {
            term: self.node.term(),
            leader_id: node_id(self.node.leader_id()),
            commit_index: self.node.commit_index(),
            voters,
        }
    }

    fn step_node(&mut self, message: Message) -> Result<(), QuorumError> {
        match self.node.step(message) {
            // A misaddressed or refused message is the peer's problem, not ours.
            Err(
                QuorumError::Misaddressed { .. }
                | QuorumError::ForwardedProposal
                | QuorumError::SnapshotUnsupported,
            ) => Ok(()),
            Err(QuorumError::Raft(error)) => {
                warn!(%error, "raft message refused");
                Ok(())
            }
            other => other,
        }
    }

    fn propose(&mut self, data: Vec<u8>, reply: oneshot::Sender<Result<u64, ProposeError>>) {
        match self.node.propose(data) {
            Ok(()) => {
                let index = self.node.index_last();
                self.pending.insert(index, (self.node.term(), reply));
            }
            Err(QuorumError::NotLeader { leader_id }) => {
                let _ = reply.send(Err(ProposeError::NotLeader(node_id(leader_id))));
            }
            Err(error) => {
                let _ = reply.send(Err(ProposeError::Failed(error.to_string())));
            }
        }
    }

    fn drain_ready(&mut self) -> Result<(), QuorumError> {
        while let Some(mut work) = self.node.ready()? {
            self.send(std::mem::take(&mut work.send_now));
            if work.needs_persist() {
                self.log.persist(&work.entries, work.hard_state.as_ref())?;
            }
            // A new leader's first entry is its no-op: that index starts its term.
            let persisted = self.node.persisted()?;
            self.send(persisted.send);
            self.note_role();
            for entry in &persisted.committed {
                self.commit(entry);
            }
        }
        Ok(())
    }

    fn commit(&mut self, entry: &Entry) {
        self.applier.apply(entry);
        if let Some((term, reply)) = self.pending.remove(&entry.index) {
            let result = if term == entry.term {
                Ok(entry.index)
            } else {
                Err(ProposeError::NotLeader(node_id(self.node.leader_id())))
            };
            let _ = reply.send(result);
        }
        // Anything proposed below a committed index in another term is gone.
        while let Some((&index, _)) = self.pending.first_key_value() {
            if index >= entry.index {
                break;
            }
            if let Some((_, (_, reply))) = self.pending.pop_first() {
                let _ = reply.send(Err(ProposeError::NotLeader(node_id(self.node.leader_id()))));
            }
        }
    }

    fn note_role(&mut self) {
        let role = self.node.role();
        let leader = self.node.leader_id();
        let term = self.node.term();
        self.handle.leader_id.set(node_id(leader));
        if role == self.role && leader == self.leader {
            return;
        }
        let was_leader = self.role == StateRole::Leader;
        self.role = role;
        self.leader = leader;
        if role == StateRole::Leader && !was_leader {
            self.voters_heard.clear();
            let index_first = self.node.index_last();
            info!(
                node_id = self.node_id,
                term,
                index_first,
                epoch_ms = epoch_ms(),
                "quorum leader elected: this node leads term {term}"
            );
            self.applier.became_leader(term, index_first);
        } else {
            if was_leader {
                for (_, (_, reply)) in std::mem::take(&mut self.pending) {
                    let _ = reply.send(Err(ProposeError::NotLeader(node_id(leader))));
                }
            }
            info!(
                node_id = self.node_id,
                term,
                leader_id = node_id(leader),
                role = ?role,
                "quorum role changed"
            );
            self.applier.leader_changed(term, node_id(leader));
        }
    }

    fn send(&self, messages: Vec<Message>) {
        for message in messages {
            let Some(peer) = self.peers.get(&message.to) else {
                continue;
            };
            match encode_message(&message) {
                Ok(bytes) => {
                    let request = ControllerRequest::Raft {
                        from_node_id: self.node_id,
                        message: bytes,
                    };
                    // A full queue or a dead peer loses the message; Raft sends again.
                    let _ = peer.send_one_way(request);
                }
                Err(error) => error!(%error, "raft message not encodable; dropped"),
            }
        }
    }

    fn fail(self, error: QuorumError) {
        error!(%error, "controller quorum stopped: the quorum log failed");
        for (_, (_, reply)) in self.pending {
            let _ = reply.send(Err(ProposeError::Failed(error.to_string())));
        }
        self.handle.leader_id.set(-1);
    }
}

/// Wall-clock milliseconds, for log lines that tests line up across processes.
pub fn epoch_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}
