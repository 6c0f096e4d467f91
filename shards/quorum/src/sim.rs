//! A seeded, deterministic simulation of a quorum: 3 or 5 `QuorumNode`s on `MemDisk`s, a
//! simulated clock (ticks) and network (delay, loss, duplication, reordering, partitions),
//! crashes with power loss mid-fsync and torn log tails, restarts, and client proposals at
//! random times. Everything random comes from one seed, so a seed replays the same run.
//!
//! Checked at every step:
//! - at most one leader per term, from every node's view (a leader's own, and the leader a
//!   follower follows);
//! - committed entries are never lost, changed or reordered: every node applies indexes
//!   1, 2, 3… in order (from 1 again after a restart), and each applied entry equals the one
//!   first applied at that index by any node;
//! - no proposal is committed twice (the network duplicates messages, never proposals).
//!
//! At the end, after the network heals, crashed nodes restart and the cluster runs quiet for a
//! while: every replica has applied the same entries, all of them, and all follow one leader.
//!
//! `SLUICE_QUORUM_SEED=N` runs only seed N (`SLUICE_QUORUM_NODES=3|5` picks the size, both by
//! default) in the `replay` test; `SLUICE_QUORUM_TRACE=1` prints its events;
//! `SLUICE_QUORUM_SEEDS=K` runs K seeds per size instead of the default.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::Bytes;

use crate::*;

/// Seeds per cluster size in a plain `cargo test` (3 nodes: 600, 5 nodes: 400 → 1,000).
const SEEDS_3: u64 = 600;
const SEEDS_5: u64 = 400;

/// The knobs of one run.
#[derive(Clone, Debug)]
struct Options {
    nodes: u64,
    /// Ticks of faults: loss, duplication, partitions, crashes.
    chaos_ticks: u64,
    /// Ticks after the faults stop (proposals go on for the first part).
    quiet_ticks: u64,
    /// Ticks at the very end with no proposals, for the last ones to commit everywhere.
    settle_ticks: u64,
    delay_ticks_max: u64,
    drop_p: f64,
    duplicate_p: f64,
    propose_p: f64,
    crash_p: f64,
    /// Of crashes, the share aimed at a node that believes it leads.
    crash_leader_p: f64,
    /// Of crashes, the share that strikes in the middle of a persist (mid-fsync).
    crash_mid_persist_p: f64,
    partition_p: f64,
    heal_p: f64,
    down_ticks_max: u64,
}

impl Options {
    /// A run's knobs, drawn from its seed: some seeds lose a fifth of all messages, some crash
    /// a node every 20 ticks, some barely fault at all.
    fn new(nodes: u64, rng: &mut SplitMix64) -> Options {
        let mut pick = |choices: &[f64]| choices[rng.below(choices.len() as u64) as usize];
        Options {
            nodes,
            chaos_ticks: 300,
            quiet_ticks: 150,
            settle_ticks: 60,
            delay_ticks_max: pick(&[0.0, 1.0, 2.0, 4.0]) as u64,
            drop_p: pick(&[0.0, 0.05, 0.2]),
            duplicate_p: pick(&[0.0, 0.02, 0.1]),
            propose_p: pick(&[0.1, 0.3, 0.8]),
            crash_p: pick(&[0.0, 0.01, 0.05]),
            crash_leader_p: pick(&[0.0, 0.5, 0.9]),
            crash_mid_persist_p: pick(&[0.0, 0.5, 1.0]),
            partition_p: pick(&[0.0, 0.01, 0.05]),
            heal_p: pick(&[0.02, 0.1]),
            down_ticks_max: pick(&[5.0, 40.0, 120.0]) as u64,
        }
    }
}

struct Running {
    node: QuorumNode,
    log: QuorumLog<MemDisk>,
    /// The last index this node applied since it (re)started.
    applied: u64,
    /// Power fails during this node's next persist.
    power_loss_armed: bool,
}

enum Slot {
    Up(Box<Running>),
    Down { disk: MemDisk, restart_at: u64 },
}

/// A message on the wire: delivered at `at`, ties broken by a random `order` (reordering).
type Flight = Reverse<(u64, u64, u64, Vec<u8>)>;

struct Sim {
    seed: u64,
    options: Options,
    rng: SplitMix64,
    now: u64,
    slots: Vec<Slot>,
    network: BinaryHeap<Flight>,
    /// Partition group of each node; a message crosses only within a group.
    groups: Option<Vec<u8>>,
    faults: bool,
    /// The committed sequence: `(term, data)` of index i + 1, as first applied by any node.
    committed: Vec<(u64, Bytes)>,
    proposals_committed: BTreeSet<Bytes>,
    leaders: BTreeMap<u64, u64>,
    proposals: u64,
    crashes: u64,
    power_losses: u64,
    torn_tails_cut: u64,
    trace: bool,
}

/// What one run did, to compare runs of the same seed and to print totals.
#[derive(Debug, PartialEq, Eq, Default, Clone, Copy)]
struct Outcome {
    committed: u64,
    terms: u64,
    proposals: u64,
    crashes: u64,
    power_losses: u64,
    torn_tails_cut: u64,
    digest: u64,
}

impl Sim {
    fn new(seed: u64, nodes: u64) -> Sim {
        let mut rng = SplitMix64(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ nodes);
        let options = Options::new(nodes, &mut rng);
        let voters: Vec<u64> = (1..=options.nodes).collect();
        let slots = voters
            .iter()
            .map(|&id| {
                let config = QuorumConfig::new(id, voters.clone(), rng.next_u64());
                Slot::Up(Box::new(start(&config, MemDisk::new()).0))
            })
            .collect();
        Sim {
            seed,
            rng,
            now: 0,
            slots,
            network: BinaryHeap::new(),
            groups: None,
            faults: true,
            committed: Vec::new(),
            proposals_committed: BTreeSet::new(),
            leaders: BTreeMap::new(),
            proposals: 0,
            crashes: 0,
            power_losses: 0,
            torn_tails_cut: 0,
            trace: std::env::var_os("SLUICE_QUORUM_TRACE").is_some(),
            options,
        }
    }

    fn run(mut self) -> Outcome {
        let o = self.options.clone();
        let end = o.chaos_ticks + o.quiet_ticks + o.settle_ticks;
        while self.now < end {
            if self.now == o.chaos_ticks {
                self.heal_all();
            }
            if self.faults {
                self.inject_faults();
            }
            self.restart_due();
            if self.now < o.chaos_ticks + o.quiet_ticks && self.rng.chance(o.propose_p) {
                self.propose();
            }
            for i in self.shuffled_nodes() {
                if let Slot::Up(running) = &mut self.slots[i] {
                    running.node.tick().expect("tick with no Ready in flight");
                    self.drain(i);
                }
            }
            self.deliver_due();
            self.now += 1;
        }
        self.check_converged();
        self.outcome()
    }

    fn inject_faults(&mut self) {
        let o = self.options.clone();
        if self.rng.chance(o.crash_p) {
            let leader = (0..self.slots.len()).find(
                |&i| matches!(&self.slots[i], Slot::Up(r) if r.node.role() == StateRole::Leader),
            );
            let i = match leader {
                Some(i) if self.rng.chance(o.crash_leader_p) => i,
                _ => self.rng.below(o.nodes) as usize,
            };
            if let Slot::Up(running) = &mut self.slots[i] {
                if self.rng.chance(o.crash_mid_persist_p) {
                    // The power goes during one of its next durable writes (in `drain`).
                    running.power_loss_armed = true;
                    let ops = 1 + self.rng.below(2) as u32;
                    running.log.disk_mut().arm_power_loss(ops);
                } else {
                    self.crash(i);
                }
            }
        }
        if self.groups.is_none() && self.rng.chance(o.partition_p) {
            let groups: Vec<u8> = (0..o.nodes).map(|_| self.rng.below(2) as u8).collect();
            self.trace(format_args!("partition {groups:?}"));
            self.groups = Some(groups);
        } else if self.groups.is_some() && self.rng.chance(o.heal_p) {
            self.trace(format_args!("heal"));
            self.groups = None;
        }
    }

    /// End of the faults: heal the network, restart every crashed node now.
    fn heal_all(&mut self) {
        self.trace(format_args!("faults stop"));
        self.faults = false;
        self.groups = None;
        for slot in &mut self.slots {
            if let Slot::Down { restart_at, .. } = slot {
                *restart_at = self.now;
            }
            if let Slot::Up(running) = slot {
                if running.power_loss_armed {
                    running.power_loss_armed = false;
                    running.log.disk_mut().arm_power_loss(u32::MAX);
                }
            }
        }
    }

    fn crash(&mut self, i: usize) {
        let torn_bytes_kept = self.rng.below(64) as usize;
        let flipped = self.rng.chance(0.3);
        let down_ticks = 1 + self.rng.below(self.options.down_ticks_max);
        let slot = std::mem::replace(
            &mut self.slots[i],
            Slot::Down {
                disk: MemDisk::new(),
                restart_at: self.now + down_ticks,
            },
        );
        if let Slot::Up(running) = slot {
            let mut disk = running.log.into_disk();
            disk.crash(torn_bytes_kept, flipped);
            self.crashes += 1;
            self.trace(format_args!(
                "crash node {} (torn {torn_bytes_kept}, flipped {flipped}), down {down_ticks}",
                i + 1
            ));
            self.slots[i] = Slot::Down {
                disk,
                restart_at: self.now + down_ticks,
            };
        }
    }

    fn restart_due(&mut self) {
        for i in 0..self.slots.len() {
            let due =
                matches!(self.slots[i], Slot::Down { restart_at, .. } if restart_at <= self.now);
            if !due {
                continue;
            }
            let empty = Slot::Down {
                disk: MemDisk::new(),
                restart_at: u64::MAX,
            };
            let slot = std::mem::replace(&mut self.slots[i], empty);
            let Slot::Down { disk, .. } = slot else {
                unreachable!("checked above")
            };
            let voters: Vec<u64> = (1..=self.options.nodes).collect();
            let config = QuorumConfig::new(i as u64 + 1, voters, self.rng.next_u64());
            let (running, torn_bytes_cut) = start(&config, disk);
            self.torn_tails_cut += u64::from(torn_bytes_cut > 0);
            self.trace(format_args!(
                "restart node {} at term {}, log to {}, commit {}",
                i + 1,
                running.log.hard_state().term,
                running.log.index_last(),
                running.log.hard_state().commit
            ));
            self.slots[i] = Slot::Up(Box::new(running));
            self.drain(i);
        }
    }

    /// A client proposes, mostly to a node that believes it leads, sometimes to any node.
    fn propose(&mut self) {
        let leaders: Vec<usize> = (0..self.slots.len())
            .filter(
                |&i| matches!(&self.slots[i], Slot::Up(r) if r.node.role() == StateRole::Leader),
            )
            .collect();
        let i = if !leaders.is_empty() && self.rng.chance(0.8) {
            leaders[self.rng.below(leaders.len() as u64) as usize]
        } else {
            self.rng.below(self.options.nodes) as usize
        };
        let Slot::Up(running) = &mut self.slots[i] else {
            return;
        };
        self.proposals += 1;
        let data = format!("s{}-p{}", self.seed, self.proposals).into_bytes();
        match running.node.propose(data) {
            Ok(()) => self.drain(i),
            Err(QuorumError::NotLeader { .. })
            | Err(QuorumError::Raft(raft::Error::ProposalDropped)) => {}
            Err(e) => panic!("propose on node {}: {e}", i + 1),
        }
    }

    /// Carries out node `i`'s Readies until it has none, checking the invariants after each.
    fn drain(&mut self, i: usize) {
        loop {
            let Slot::Up(running) = &mut self.slots[i] else {
                return;
            };
            let Some(work) = running.node.ready().expect("ready") else {
                break;
            };
            let from = running.node.id();
            let send_now = work.send_now;
            let persisted = running.log.persist(&work.entries, work.hard_state.as_ref());
            for message in send_now {
                self.send(from, message);
            }
            if persisted.is_err() {
                // Power loss in the middle of the persist: nothing after it happens.
                self.trace(format_args!("power loss on node {from} while persisting"));
                self.power_losses += 1;
                self.crash(i);
                return;
            }
            let Slot::Up(running) = &mut self.slots[i] else {
                return;
            };
            let done = running.node.persisted().expect("persisted");
            for message in done.send {
                self.send(from, message);
            }
            for entry in done.committed {
                self.apply(i, entry);
            }
            self.check_leaders(i);
        }
        self.check_leaders(i);
    }

    fn send(&mut self, from: u64, message: Message) {
        let to = message.to;
        assert_eq!(message.from, from, "a node sends only as itself");
        let bytes = encode_message(&message).expect("encode");
        if self.faults && self.rng.chance(self.options.drop_p) {
            return;
        }
        let copies = if self.faults && self.rng.chance(self.options.duplicate_p) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let at = self.now + self.rng.below(self.options.delay_ticks_max + 1);
            let order = self.rng.next_u64();
            self.network
                .push(Reverse((at, order, (from << 32) | to, bytes.clone())));
        }
    }

    /// Delivers every message due by now, in (time, random) order; replies due now go too.
    fn deliver_due(&mut self) {
        while let Some(Reverse((at, _, _, _))) = self.network.peek() {
            if *at > self.now {
                break;
            }
            let Some(Reverse((_, _, route, bytes))) = self.network.pop() else {
                break;
            };
            let (from, to) = (route >> 32, route & 0xffff_ffff);
            if let Some(groups) = &self.groups {
                if groups[(from - 1) as usize] != groups[(to - 1) as usize] {
                    continue;
                }
            }
            let i = (to - 1) as usize;
            let Slot::Up(running) = &mut self.slots[i] else {
                continue;
            };
            let message = decode_message(&bytes).expect("decode what was encoded");
            match running.node.step(message) {
                Ok(()) => {}
                // Messages from a stale term or a node not in the config are refused: fine.
                Err(QuorumError::Raft(_)) => {}
                Err(e) => panic!("step on node {to}: {e}"),
            }
            self.drain(i);
        }
    }

    fn apply(&mut self, i: usize, entry: Entry) {
        let Slot::Up(running) = &mut self.slots[i] else {
            return;
        };
        let id = running.node.id();
        running.applied += 1;
        assert_eq!(
            entry.index, running.applied,
            "node {id} applied index {} out of order (expected {})",
            entry.index, running.applied
        );
        let index = entry.index as usize;
        if let Some((term, data)) = self.committed.get(index - 1) {
            assert!(
                *term == entry.term && *data == entry.data,
                "committed entry {index} changed: first (term {term}, {:?}), node {id} applied (term {}, {:?})",
                String::from_utf8_lossy(data),
                entry.term,
                String::from_utf8_lossy(&entry.data)
            );
        } else {
            assert_eq!(
                index,
                self.committed.len() + 1,
                "node {id} skipped a commit"
            );
            if !entry.data.is_empty() {
                assert!(
                    self.proposals_committed.insert(entry.data.clone()),
                    "proposal {:?} committed twice (again at {index})",
                    String::from_utf8_lossy(&entry.data)
                );
            }
            self.trace(format_args!(
                "commit {index} term {} {:?} (first applied by node {id})",
                entry.term,
                String::from_utf8_lossy(&entry.data)
            ));
            self.committed.push((entry.term, entry.data));
        }
    }

    /// At most one leader per term, from every node's view.
    fn check_leaders(&mut self, i: usize) {
        let Slot::Up(running) = &self.slots[i] else {
            return;
        };
        let (id, term) = (running.node.id(), running.node.term());
        let leader = match running.node.role() {
            StateRole::Leader => id,
            _ => running.node.leader_id(),
        };
        if leader == 0 {
            return;
        }
        let known = *self.leaders.entry(term).or_insert_with(|| {
            if self.trace {
                eprintln!(
                    "[seed {} t{}] node {id} sees leader {leader} in term {term}",
                    self.seed, self.now
                );
            }
            leader
        });
        assert_eq!(
            known, leader,
            "two leaders in term {term}: {known}, and {leader} seen by node {id}"
        );
    }

    fn check_converged(&mut self) {
        let mut leaders = BTreeSet::new();
        for slot in &self.slots {
            let Slot::Up(running) = slot else {
                panic!("a node is still down at the end");
            };
            let id = running.node.id();
            assert_eq!(
                running.applied,
                self.committed.len() as u64,
                "node {id} applied {} of {} committed entries at the end (commit index {}, log to {}, term {}, leader {})",
                running.applied,
                self.committed.len(),
                running.node.commit_index(),
                running.node.index_last(),
                running.node.term(),
                running.node.leader_id()
            );
            leaders.insert((running.node.term(), running.node.leader_id()));
        }
        assert_eq!(
            leaders.len(),
            1,
            "the nodes disagree on (term, leader) at the end: {leaders:?}"
        );
        assert!(
            leaders.iter().all(|(_, leader)| *leader != 0),
            "no leader at the end"
        );
        assert!(
            self.committed.iter().any(|(_, data)| !data.is_empty()),
            "no proposal committed"
        );
    }

    fn outcome(&self) -> Outcome {
        let mut digest = SplitMix64(0);
        for (term, data) in &self.committed {
            digest.0 ^= *term;
            for byte in data.iter() {
                digest.0 = digest.0.rotate_left(5) ^ u64::from(*byte);
            }
            digest.next_u64();
        }
        Outcome {
            committed: self.committed.len() as u64,
            terms: self.leaders.len() as u64,
            proposals: self.proposals,
            crashes: self.crashes,
            power_losses: self.power_losses,
            torn_tails_cut: self.torn_tails_cut,
            digest: digest.0,
        }
    }

    fn shuffled_nodes(&mut self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        for k in (1..order.len()).rev() {
            let j = self.rng.below(k as u64 + 1) as usize;
            order.swap(k, j);
        }
        order
    }

    fn trace(&self, event: std::fmt::Arguments) {
        if self.trace {
            eprintln!("[seed {} t{}] {event}", self.seed, self.now);
        }
    }
}

/// Opens a node's disk and starts it, as a process would at boot.
fn start(config: &QuorumConfig, disk: MemDisk) -> (Running, u64) {
    let (log, restored) = QuorumLog::open(disk).expect("a crashed disk always reopens");
    let torn_bytes_cut = restored.torn_bytes_cut;
    let node = QuorumNode::new(config, restored).expect("node starts");
    let running = Running {
        node,
        log,
        applied: 0,
        power_loss_armed: false,
    };
    (running, torn_bytes_cut)
}

/// Runs one seed; a failure names the seed and how to replay it.
fn run_seed(seed: u64, nodes: u64) -> Outcome {
    let result = catch_unwind(AssertUnwindSafe(|| Sim::new(seed, nodes).run()));
    match result {
        Ok(outcome) => outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!(
                "quorum simulation failed at seed {seed} with {nodes} nodes: {message}\n\
                 replay: SLUICE_QUORUM_SEED={seed} SLUICE_QUORUM_NODES={nodes} \
                 SLUICE_QUORUM_TRACE=1 cargo test --release sim::replay -- --nocapture"
            );
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs this test's share of the seeds for one size (none when a single seed is replayed).
fn run_share(nodes: u64, seeds_default: u64, share: u64, shares: u64) {
    if env_u64("SLUICE_QUORUM_SEED").is_some() {
        return;
    }
    let seeds = env_u64("SLUICE_QUORUM_SEEDS").unwrap_or(seeds_default);
    let mut total = Outcome::default();
    let mut ran = 0;
    for seed in (0..seeds).filter(|s| s % shares == share) {
        let outcome = run_seed(seed, nodes);
        total.committed += outcome.committed;
        total.terms += outcome.terms;
        total.proposals += outcome.proposals;
        total.crashes += outcome.crashes;
        total.power_losses += outcome.power_losses;
        total.torn_tails_cut += outcome.torn_tails_cut;
        ran += 1;
    }
    eprintln!(
        "{nodes} nodes: {ran} seeds, {} entries committed of {} proposals, {} leader terms, \
         {} crashes ({} mid-persist, {} torn tails cut at restart)",
        total.committed,
        total.proposals,
        total.terms,
        total.crashes,
        total.power_losses,
        total.torn_tails_cut
    );
}

#[test]
fn three_nodes_share_0() {
    run_share(3, SEEDS_3, 0, 2);
}

#[test]
fn three_nodes_share_1() {
    run_share(3, SEEDS_3, 1, 2);
}

#[test]
fn five_nodes_share_0() {
    run_share(5, SEEDS_5, 0, 2);
}

#[test]
fn five_nodes_share_1() {
    run_share(5, SEEDS_5, 1, 2);
}

/// `SLUICE_QUORUM_SEED=N` replays seed N (with `SLUICE_QUORUM_NODES`, or 3 and 5 nodes).
#[test]
fn replay() {
    let Some(seed) = env_u64("SLUICE_QUORUM_SEED") else {
        return;
    };
    let sizes = match env_u64("SLUICE_QUORUM_NODES") {
        Some(nodes) => vec![nodes],
        None => vec![3, 5],
    };
    for nodes in sizes {
        let outcome = run_seed(seed, nodes);
        eprintln!("seed {seed}, {nodes} nodes: {outcome:?}");
    }
}

#[test]
fn a_seed_replays_the_same_run() {
    for seed in [1, 17] {
        for nodes in [3, 5] {
            assert_eq!(run_seed(seed, nodes), run_seed(seed, nodes));
        }
    }
}

#[test]
fn the_simulation_detects_a_lost_commit() {
    // The checker must be able to fail: a node that forgets its synced log and hard state
    // (a disk that lies about fsync) eventually makes a committed entry change or vanish.
    let mut failures = 0;
    for seed in 0..20 {
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut sim = Sim::new(seed, 3);
            sim.options.chaos_ticks = 200;
            let o = sim.options.clone();
            let end = o.chaos_ticks + o.quiet_ticks + o.settle_ticks;
            while sim.now < end {
                if sim.now == o.chaos_ticks {
                    sim.heal_all();
                }
                if sim.now % 37 == 36 && sim.now < o.chaos_ticks {
                    // Wipe a majority's disks: no fsync was kept.
                    for i in 0..2 {
                        if let Slot::Up(_) = &sim.slots[i] {
                            sim.crash(i);
                        }
                        if let Slot::Down { disk, .. } = &mut sim.slots[i] {
                            *disk = MemDisk::new();
                        }
                    }
                }
                sim.restart_due();
                if sim.now < o.chaos_ticks + o.quiet_ticks && sim.rng.chance(o.propose_p) {
                    sim.propose();
                }
                for i in sim.shuffled_nodes() {
                    if let Slot::Up(running) = &mut sim.slots[i] {
                        running.node.tick().expect("tick");
                        sim.drain(i);
                    }
                }
                sim.deliver_due();
                sim.now += 1;
            }
            sim.check_converged();
        }));
        if result.is_err() {
            failures += 1;
            break;
        }
    }
    assert!(failures > 0, "wiping disks never tripped an invariant");
}
