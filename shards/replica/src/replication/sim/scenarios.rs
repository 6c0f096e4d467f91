//! The scenarios of KIP-101 (both examples) and KIP-279, and a follower truncating after an
//! unclean tail, driven step by step on the simulation's model (same controller, brokers,
//! logs and checker; no randomness: every fetch answers all it has, `AlterPartition` is
//! answered at once). Each KIP scenario also runs with the rule the KIP replaced, to show the
//! test catches it: pre-KIP-101 (truncate to the high watermark when the leader changes, fetch
//! without the last fetched epoch) and pre-KIP-279 (truncate to the leader's end offset without
//! looking up the follower's own end of that epoch).

use super::*;

fn cluster() -> Sim {
    let mut sim = Sim::new(0);
    sim.faults = false;
    sim.fetch_max_records = Some(1_000);
    sim.options.alter_delay_ticks_max = 0;
    sim
}

fn ids(sim: &Sim, b: BrokerId) -> Vec<u64> {
    sim.brokers[b as usize]
        .log
        .records
        .iter()
        .map(|r| r.id)
        .collect()
}

fn epochs(sim: &Sim, b: BrokerId) -> Vec<(i32, i64)> {
    sim.brokers[b as usize]
        .log
        .cache
        .entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect()
}

/// One fetch by `b`, then AlterPartition answers, produce completions and (when `check`) the
/// invariants.
fn fetch(sim: &mut Sim, b: BrokerId, check: bool) {
    sim.fetch(b);
    sim.deliver_alters();
    sim.complete_produces();
    if check {
        sim.check();
    }
}

/// Rounds of metadata and fetches from every broker, time moving on.
fn settle(sim: &mut Sim, rounds: usize, check: bool) {
    for _ in 0..rounds {
        for b in 0..BROKERS {
            sim.apply_metadata(b);
        }
        for b in 0..BROKERS {
            fetch(sim, b, check);
        }
        sim.tick += 1;
    }
}

fn run_broken(broken: BrokenTruncation, scenario: fn()) -> Result<(), String> {
    BROKEN_TRUNCATION.with(|b| b.set(Some(broken)));
    let result = catch_unwind(scenario);
    BROKEN_TRUNCATION.with(|b| b.set(None));
    result.map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// KIP-101, example 1 ("high watermark truncation followed by immediate leader election"),
/// with KRaft's leader changes: m1 and m2 are committed on the leader (high watermark 2) while
/// both followers still have high watermark 1. Leadership moves to broker 2 and at once to
/// broker 1. A replica that truncated to its high watermark on the leader change would lose
/// m2 and, as leader, make everyone else lose it.
fn kip101_leader_change_keeps_records_above_the_high_watermark() {
    let mut sim = cluster();
    sim.produce(0, 1, -1).expect("m1");
    settle(&mut sim, 2, true);
    sim.produce(0, 1, -1).expect("m2");
    fetch(&mut sim, 1, true);
    fetch(&mut sim, 2, true);
    fetch(&mut sim, 1, true);
    fetch(&mut sim, 2, true);
    assert_eq!(sim.acknowledged.get(&1), Some(&2), "m2 acknowledged");
    assert_eq!(sim.brokers[0].log.high_watermark, 2);
    assert_eq!(
        sim.brokers[1].log.high_watermark, 1,
        "the follower's HW lags"
    );
    assert_eq!(
        sim.brokers[2].log.high_watermark, 1,
        "the follower's HW lags"
    );

    sim.change_leader(Some(2));
    sim.apply_metadata(1);
    sim.apply_metadata(2);
    sim.check();
    sim.change_leader(Some(1));
    sim.apply_metadata(1);
    sim.apply_metadata(2);
    sim.apply_metadata(0);
    sim.check();
    assert_eq!(ids(&sim, 1), [1, 2], "the new leader kept m2");
    settle(&mut sim, 3, true);
    for b in 0..BROKERS {
        assert_eq!(ids(&sim, b), [1, 2], "broker {b}");
    }
}

#[test]
fn kip101_example_1() {
    kip101_leader_change_keeps_records_above_the_high_watermark();
}

#[test]
fn kip101_example_1_catches_truncation_to_the_high_watermark() {
    let failure = run_broken(
        BrokenTruncation::PreKip101,
        kip101_leader_change_keeps_records_above_the_high_watermark,
    )
    .expect_err("the pre-KIP-101 rule must lose m2");
    assert!(failure.contains("lost committed records"), "{failure}");
}

/// KIP-101, example 2 ("replica divergence on restart after multiple hard failures"): A
/// (broker 0) leads with m1, m2 flushed; B (broker 1) has m2 only in memory. Both lose power,
/// A first (B becomes leader), then B. B comes back first and leads, writes m3 at offset 1;
/// A comes back with m2 at offset 1. With leader epochs A learns that epoch 0 ends at 1 on B
/// and truncates m2; the logs converge. (Both ISR members losing power at once is outside
/// what acks=all promises: m2 was committed and is lost; the KIP is about the divergence, so
/// the committed-record checker stays off here.)
fn kip101_hard_failures_do_not_leave_replicas_diverged() {
    let mut sim = cluster();
    sim.crash(2, 1_000_000);
    sim.apply_metadata(0);
    sim.apply_metadata(1);
    sim.produce(0, 1, -1).expect("m1");
    fetch(&mut sim, 1, false);
    fetch(&mut sim, 1, false);
    sim.brokers[1].log.flush();
    sim.produce(0, 1, -1).expect("m2");
    fetch(&mut sim, 1, false);
    fetch(&mut sim, 1, false);
    assert_eq!(sim.brokers[0].log.high_watermark, 2);
    sim.brokers[0].log.flush();
    assert_eq!(ids(&sim, 1), [1, 2], "B has m2, unflushed");

    sim.crash_with(0, 1_000_000, true);
    assert_eq!(sim.controller.registration.leader, Some(1));
    sim.crash_with(1, 1_000_000, true);
    assert_eq!(sim.controller.registration.leader, None);
    assert_eq!(ids(&sim, 1), [1], "B lost m2 with its page cache");

    sim.restart(1);
    assert_eq!(sim.controller.registration.leader, Some(1));
    sim.produce(1, 1, 1).expect("m3 with acks=1");
    sim.restart(0);
    assert_eq!(ids(&sim, 0), [1, 2], "A kept m2 (flushed)");
    settle(&mut sim, 3, false);
    assert_eq!(ids(&sim, 1), [1, 3]);
    assert_eq!(
        ids(&sim, 0),
        ids(&sim, 1),
        "A converged to the leader's log"
    );
    assert_eq!(epochs(&sim, 0), epochs(&sim, 1));
}

#[test]
fn kip101_example_2() {
    kip101_hard_failures_do_not_leave_replicas_diverged();
}

#[test]
fn kip101_example_2_catches_truncation_to_the_high_watermark() {
    let failure = run_broken(
        BrokenTruncation::PreKip101,
        kip101_hard_failures_do_not_leave_replicas_diverged,
    )
    .expect_err("the pre-KIP-101 rules must leave A with m2 at offset 1");
    assert!(failure.contains("A converged"), "{failure}");
}

/// KIP-279: two leader changes in quick succession. A (broker 0) leads epoch 0 with m0
/// committed and m1 (acks=1) at offset 1 that B (broker 1) never fetched. Leadership moves to
/// B (epoch 1), which writes m1' at offset 1, and back to A (epoch 2) before A ever heard of
/// epoch 1. B fetches with last epoch 1: A answers "epoch 0 ends at 2". B must look up its
/// own end of epoch 0 (1) and truncate there, not at 2, then fetch m1.
fn kip279_two_leader_changes_in_quick_succession() {
    let mut sim = cluster();
    sim.crash(2, 1_000_000);
    sim.apply_metadata(0);
    sim.apply_metadata(1);
    sim.produce(0, 1, -1).expect("m0");
    fetch(&mut sim, 1, true);
    fetch(&mut sim, 1, true);
    assert_eq!(sim.acknowledged.get(&0), Some(&1));
    sim.produce(0, 1, 1).expect("m1 with acks=1");

    sim.change_leader(Some(1));
    sim.apply_metadata(1);
    sim.produce(1, 1, 1).expect("m1' with acks=1");
    sim.change_leader(Some(0));
    sim.apply_metadata(0);
    sim.apply_metadata(1);
    assert_eq!(epochs(&sim, 0), [(0, 0), (2, 2)], "A never saw epoch 1");
    assert_eq!(epochs(&sim, 1), [(0, 0), (1, 1)]);

    fetch(&mut sim, 1, true);
    assert_eq!(
        ids(&sim, 1),
        [1],
        "B truncated m1' at its own end of epoch 0"
    );
    settle(&mut sim, 3, true);
    assert_eq!(ids(&sim, 0), [1, 2]);
    assert_eq!(ids(&sim, 1), ids(&sim, 0), "B converged to A's log");
}

#[test]
fn kip279() {
    kip279_two_leader_changes_in_quick_succession();
}

#[test]
fn kip279_catches_truncation_to_the_leaders_end_offset() {
    let failure = run_broken(
        BrokenTruncation::IgnoreFollowerEpochs,
        kip279_two_leader_changes_in_quick_succession,
    )
    .expect_err("the pre-KIP-279 rule must keep m1' at offset 1");
    assert!(failure.contains("B truncated m1'"), "{failure}");
}

/// A follower that lost part of an uncommitted tail in a crash truncates what is left of it
/// against the new leader's history. Epoch 0: m0..m2 committed; m3, m4 written by broker 0
/// and fetched only by broker 1, which flushed m3 but not m4. Broker 0 loses power (m3, m4
/// gone there); broker 2 leads epoch 2 and writes m5 at offset 3. Broker 1 loses power, keeps
/// m3 (epoch 0) at offset 3, restarts: epoch 0 ends at 3 on the leader, so it truncates m3 and
/// fetches m5, rejoins the ISR, and m5 is acknowledged.
#[test]
fn follower_truncates_after_an_unclean_tail() {
    let mut sim = cluster();
    sim.produce(0, 3, -1).expect("m0..m2");
    settle(&mut sim, 2, true);
    for b in 0..BROKERS {
        sim.brokers[b as usize].log.flush();
    }
    assert_eq!(sim.acknowledged.len(), 3);
    sim.produce(0, 2, -1).expect("m3, m4");
    fetch(&mut sim, 1, true);
    sim.brokers[1].log.flushed = 4;

    sim.crash(0, 1_000_000);
    assert_eq!(ids(&sim, 0), [1, 2, 3], "broker 0 lost m3, m4");
    sim.change_leader(Some(2));
    assert_eq!(sim.controller.registration.leader, Some(2));
    sim.apply_metadata(2);
    sim.apply_metadata(1);
    sim.produce(2, 1, -1).expect("m5");
    let m5 = sim.next_id - 1;

    sim.crash(1, 1);
    assert_eq!(ids(&sim, 1), [1, 2, 3, 4], "broker 1 kept the flushed m3");
    sim.restart(1);
    fetch(&mut sim, 1, true);
    assert_eq!(
        ids(&sim, 1),
        [1, 2, 3],
        "m3 truncated: epoch 0 ends at 3 on the leader"
    );
    settle(&mut sim, 3, true);
    assert_eq!(ids(&sim, 1), [1, 2, 3, m5]);
    assert_eq!(sim.acknowledged.get(&3), Some(&m5), "m5 acknowledged");
    sim.restart(0);
    settle(&mut sim, 3, true);
    for b in 0..BROKERS {
        assert_eq!(ids(&sim, b), [1, 2, 3, m5], "broker {b}");
    }
    assert_eq!(sim.controller.registration.isr, [0, 1, 2]);
}
