//! The leader's and the follower's rules one at a time (the simulation checks them together).

use std::collections::BTreeMap;

use sluice_log::{LeaderEpochFileCache, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET};
use sluice_protocol::ErrorCode;

use super::*;

const NOW: i64 = 1_700_000_000_000;
const LAG_MS: i64 = 30_000;

fn registration(leader_epoch: i32, isr: &[BrokerId]) -> PartitionRegistration {
    PartitionRegistration {
        leader: Some(0),
        leader_epoch,
        partition_epoch: 10,
        replicas: vec![0, 1, 2],
        isr: isr.to_vec(),
    }
}

fn alive() -> BTreeMap<BrokerId, i64> {
    BTreeMap::from([(0, 100), (1, 101), (2, 102)])
}

fn config(min_insync_replicas: usize) -> ReplicationConfig {
    ReplicationConfig {
        min_insync_replicas,
        replica_lag_time_max_ms: LAG_MS,
    }
}

/// Broker 0 leads epoch 5 with a log ending at `leo`, high watermark `hw`.
fn leader(
    isr: &[BrokerId],
    min_isr: usize,
    leo: i64,
    hw: i64,
) -> (LeaderState, LeaderEpochFileCache) {
    let mut cache = LeaderEpochFileCache::new();
    cache.assign(3, 0).expect("epoch");
    let (state, changed) = LeaderState::new(
        0,
        &registration(5, isr),
        config(min_isr),
        leo,
        hw,
        &mut cache,
        alive(),
        NOW,
    )
    .expect("leader");
    assert!(changed, "the new epoch is assigned at the log end");
    (state, cache)
}

fn fetched(
    state: &mut LeaderState,
    id: BrokerId,
    offset: i64,
    leo: i64,
    now: i64,
) -> FollowerFetch {
    state
        .update_follower_fetch_state(id, offset, 0, 100 + i64::from(id), leo, now)
        .expect("fetch accepted")
}

#[test]
fn a_new_leader_starts_its_epoch_at_the_log_end() {
    let (state, cache) = leader(&[0, 1, 2], 1, 10, 7);
    assert_eq!(
        cache.entries().last().map(|e| (e.epoch, e.start_offset)),
        Some((5, 10))
    );
    assert_eq!(state.leader_epoch(), 5);
    assert_eq!(
        state.high_watermark(),
        7,
        "followers' positions are unknown until they fetch"
    );
    let follower = state.replica_state(1).expect("follower");
    assert_eq!(follower.log_end_offset, UNKNOWN_OFFSET);
    assert_eq!(
        follower.last_caught_up_time_ms, NOW,
        "an ISR member starts caught up"
    );
}

#[test]
fn the_high_watermark_is_the_smallest_isr_log_end_and_never_moves_back() {
    let (mut state, _) = leader(&[0, 1, 2], 1, 10, 7);
    fetched(&mut state, 1, 9, 10, NOW);
    assert_eq!(state.high_watermark(), 7, "broker 2 has not fetched");
    let update = fetched(&mut state, 2, 8, 10, NOW);
    assert!(update.high_watermark_incremented);
    assert_eq!(state.high_watermark(), 8);
    fetched(&mut state, 2, 10, 10, NOW);
    assert_eq!(state.high_watermark(), 9);
    // A follower that truncated and fetches from lower never moves it back.
    fetched(&mut state, 1, 4, 10, NOW);
    assert_eq!(state.high_watermark(), 9);
}

#[test]
fn the_high_watermark_stays_while_the_isr_is_below_min_insync_replicas() {
    let (mut state, _) = leader(&[0], 2, 10, 7);
    assert!(!state.after_leader_append(12, NOW));
    assert_eq!(state.high_watermark(), 7);
    let (mut state, _) = leader(&[0], 1, 10, 7);
    assert!(
        state.after_leader_append(12, NOW),
        "an ISR of one moves it alone"
    );
    assert_eq!(state.high_watermark(), 12);
}

#[test]
fn a_follower_joins_the_isr_once_at_the_high_watermark_in_this_epoch() {
    let (mut state, _) = leader(&[0, 1], 1, 10, 7);
    // Below the high watermark: not yet.
    assert_eq!(fetched(&mut state, 2, 6, 10, NOW).alter_partition, None);
    // At the high watermark but below the start of epoch 5 (offset 10): not yet.
    assert_eq!(fetched(&mut state, 2, 8, 10, NOW).alter_partition, None);
    let request = fetched(&mut state, 2, 10, 10, NOW)
        .alter_partition
        .expect("expansion");
    assert_eq!(request.leader_epoch, 5);
    assert_eq!(request.partition_epoch, 10);
    assert_eq!(request.new_isr, [(0, -1), (1, -1), (2, 102)]);
    assert!(
        state.maximal_isr().contains(&2),
        "pending: the HW waits for it"
    );
    assert!(!state.isr().contains(&2), "not committed yet");
    // One change at a time.
    assert_eq!(state.maybe_shrink_isr(10, NOW + 10 * LAG_MS), None);
}

#[test]
fn a_fenced_or_restarted_follower_does_not_join_the_isr() {
    let (mut state, _) = leader(&[0, 1], 1, 10, 10);
    let mut brokers = alive();
    brokers.remove(&2);
    state.update_alive_brokers(brokers);
    assert_eq!(
        fetched(&mut state, 2, 10, 10, NOW).alter_partition,
        None,
        "fenced"
    );
    // KIP-903: the broker restarted (epoch 150); a fetch of the old life is refused.
    let mut brokers = alive();
    brokers.insert(2, 150);
    state.update_alive_brokers(brokers);
    assert_eq!(
        state.update_follower_fetch_state(2, 10, 0, 102, 10, NOW),
        Err(ReplicationError::NotLeaderOrFollower(
            "the fetcher's broker epoch is stale"
        ))
    );
    assert_eq!(
        state.update_follower_fetch_state(7, 10, 0, 1, 10, NOW),
        Err(ReplicationError::NotLeaderOrFollower(
            "the fetcher is not a replica of the partition"
        ))
    );
    let request = state
        .update_follower_fetch_state(2, 10, 0, 150, 10, NOW)
        .expect("fetch")
        .alter_partition
        .expect("expansion with the new epoch");
    assert_eq!(request.new_isr.last(), Some(&(2, 150)));
}

#[test]
fn a_follower_behind_longer_than_the_lag_time_leaves_the_isr() {
    let (mut state, _) = leader(&[0, 1, 2], 1, 10, 10);
    // Broker 1 keeps fetching at the log end; broker 2 fetches but stays behind.
    let mut now = NOW;
    for step in 0..3 {
        now = NOW + step * LAG_MS / 2;
        fetched(&mut state, 1, 10 + step, 10 + step, now);
        fetched(&mut state, 2, 9, 10 + step, now);
        assert_eq!(
            state.maybe_shrink_isr(10 + step, now),
            None,
            "within the lag time"
        );
    }
    now += LAG_MS / 2 + 1;
    let request = state.maybe_shrink_isr(12, now).expect("shrink");
    assert_eq!(request.new_isr, [(0, -1), (1, 101)]);
}

#[test]
fn reaching_the_previous_fetchs_log_end_counts_as_caught_up_then() {
    let (mut state, _) = leader(&[0, 1], 1, 10, 10);
    fetched(&mut state, 1, 8, 10, NOW + 1_000);
    // Now at 10, what the leader had at the previous fetch, while the leader is at 12.
    fetched(&mut state, 1, 10, 12, NOW + 2_000);
    let replica = state.replica_state(1).expect("replica");
    assert_eq!(replica.last_caught_up_time_ms, NOW + 1_000);
    assert_eq!(replica.last_fetch_leader_log_end_offset, 12);
    fetched(&mut state, 1, 12, 12, NOW + 3_000);
    assert_eq!(
        state
            .replica_state(1)
            .expect("replica")
            .last_caught_up_time_ms,
        NOW + 3_000
    );
}

#[test]
fn min_insync_replicas_decisions() {
    let (mut state, _) = leader(&[0, 1], 2, 10, 10);
    assert_eq!(state.check_append(-1), Ok(()));
    assert_eq!(
        state.check_enough_replicas_reach_offset(12),
        ProduceDecision::Pending
    );
    fetched(&mut state, 1, 12, 12, NOW);
    assert_eq!(
        state.check_enough_replicas_reach_offset(12),
        ProduceDecision::Acknowledged
    );
    assert_eq!(
        ProduceDecision::Acknowledged.error_code(),
        Some(ErrorCode::NONE)
    );

    // The ISR shrinks to the leader: acks=all is refused before the append; a produce already
    // appended and replicated is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND.
    // (The leader appended more meanwhile; broker 1 stopped fetching.)
    let request = state
        .maybe_shrink_isr(13, NOW + 2 * LAG_MS)
        .expect("shrink");
    let mut shrunk = registration(5, &[0]);
    shrunk.partition_epoch = 11;
    state.handle_alter_partition_response(&request, Ok(&shrunk), 12, NOW + 2 * LAG_MS);
    assert_eq!(state.isr().len(), 1);
    let refused = state.check_append(-1).expect_err("under min ISR");
    assert_eq!(refused.error_code(), ErrorCode::NOT_ENOUGH_REPLICAS);
    assert_eq!(state.check_append(1), Ok(()), "acks=1 is still accepted");
    assert_eq!(
        state.check_enough_replicas_reach_offset(12),
        ProduceDecision::NotEnoughReplicasAfterAppend
    );
    assert_eq!(
        ProduceDecision::NotEnoughReplicasAfterAppend.error_code(),
        Some(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    );
}

#[test]
fn alter_partition_answers() {
    let (mut state, _) = leader(&[0, 1], 1, 10, 10);
    let request = fetched(&mut state, 2, 10, 10, NOW)
        .alter_partition
        .expect("expand");
    // FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION: stays pending until the next metadata.
    state.handle_alter_partition_response(
        &request,
        Err(AlterPartitionError::InvalidUpdateVersion),
        10,
        NOW,
    );
    assert!(state.pending_alter_partition().is_some());
    // INELIGIBLE_REPLICA: not applied, back to the committed ISR.
    state.handle_alter_partition_response(
        &request,
        Err(AlterPartitionError::IneligibleReplica),
        10,
        NOW,
    );
    assert!(state.pending_alter_partition().is_none());
    assert!(!state.maximal_isr().contains(&2));
    // Success: committed; a late answer to another request is ignored.
    let request = fetched(&mut state, 2, 10, 10, NOW)
        .alter_partition
        .expect("expand");
    let mut committed = registration(5, &[0, 1, 2]);
    committed.partition_epoch = 11;
    state.handle_alter_partition_response(&request, Ok(&committed), 10, NOW);
    assert_eq!(state.isr().len(), 3);
    assert_eq!(state.partition_epoch(), 11);
    assert!(!state.handle_alter_partition_response(&request, Ok(&committed), 10, NOW));
    // A newer registration from the metadata (the controller fenced broker 2).
    let mut fenced = registration(5, &[0, 1]);
    fenced.partition_epoch = 12;
    state.update_registration(&fenced, 10, NOW);
    assert_eq!(state.isr().len(), 2);
    fenced.partition_epoch = 11;
    fenced.isr = vec![0];
    state.update_registration(&fenced, 10, NOW);
    assert_eq!(state.isr().len(), 2, "a stale registration is ignored");
}

#[test]
fn fetch_position() {
    // The leader's epochs: 3 from 0, 4 from 20, 5 (its own) from 30; log end 40.
    let mut cache = LeaderEpochFileCache::new();
    let (state, _) = {
        cache.assign(3, 0).expect("epoch");
        cache.assign(4, 20).expect("epoch");
        let (state, _) = LeaderState::new(
            0,
            &registration(5, &[0, 1]),
            config(1),
            30,
            30,
            &mut cache,
            alive(),
            NOW,
        )
        .expect("leader");
        (state, ())
    };
    let position = |offset, epoch| state.fetch_position(offset, epoch, 5, &cache, 0, 40);
    assert_eq!(
        position(35, Some(5)),
        Ok(FetchPosition::Read { fetch_offset: 35 })
    );
    assert_eq!(
        position(20, Some(4)),
        Ok(FetchPosition::Read { fetch_offset: 20 })
    );
    assert_eq!(
        position(0, None),
        Ok(FetchPosition::Read { fetch_offset: 0 })
    );
    // Epoch 4 ends at 30 here: a follower at 34 in epoch 4 has 4 records too many.
    assert_eq!(
        position(34, Some(4)),
        Ok(FetchPosition::Diverging(EpochEndOffset {
            epoch: 4,
            end_offset: 30
        }))
    );
    // Below the leader's earliest epoch: it ends where epoch 3 starts.
    assert_eq!(
        position(5, Some(2)),
        Ok(FetchPosition::Diverging(EpochEndOffset {
            epoch: 2,
            end_offset: 0
        }))
    );
    // A leader whose history lost epoch 4 (it went 3 → 6 at offset 20) answers the largest
    // epoch it knows below the follower's (KIP-279).
    let mut gap = cache.clone();
    gap.truncate_from_end(20);
    gap.assign(6, 20).expect("epoch");
    assert_eq!(
        state.fetch_position(25, Some(4), 5, &gap, 0, 40),
        Ok(FetchPosition::Diverging(EpochEndOffset {
            epoch: 3,
            end_offset: 20
        }))
    );
    // Past the log end in the current epoch: that epoch ends at the log end (Kafka answers a
    // diverging epoch, not OFFSET_OUT_OF_RANGE, when the last fetched epoch is given).
    assert_eq!(
        position(41, Some(5)),
        Ok(FetchPosition::Diverging(EpochEndOffset {
            epoch: 5,
            end_offset: 40
        }))
    );
    assert!(matches!(
        position(41, None),
        Err(ReplicationError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        position(10, Some(9)),
        Err(ReplicationError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        state
            .fetch_position(35, Some(5), 4, &cache, 0, 40)
            .map_err(|e| e.error_code()),
        Err(ErrorCode::FENCED_LEADER_EPOCH)
    );
    assert_eq!(
        state
            .fetch_position(35, Some(5), 6, &cache, 0, 40)
            .map_err(|e| e.error_code()),
        Err(ErrorCode::UNKNOWN_LEADER_EPOCH)
    );
    assert_eq!(
        state.fetch_position(35, Some(5), UNDEFINED_EPOCH, &cache, 0, 40),
        Ok(FetchPosition::Read { fetch_offset: 35 })
    );
    assert_eq!(
        state
            .fetch_position(3, Some(3), 5, &cache, 5, 40)
            .map_err(|e| e.error_code()),
        Err(ErrorCode::OFFSET_OUT_OF_RANGE),
        "below the log start"
    );
}

fn cache_of(entries: &[(i32, i64)]) -> LeaderEpochFileCache {
    let mut cache = LeaderEpochFileCache::new();
    for &(epoch, offset) in entries {
        cache.assign(epoch, offset).expect("epoch");
    }
    cache
}

#[test]
fn truncation_on_a_diverging_epoch() {
    let follower = cache_of(&[(1, 0), (2, 10), (4, 20)]);
    let at = |epoch, end_offset| {
        offset_truncation_state(EpochEndOffset { epoch, end_offset }, &follower, 25, 25)
    };
    // Same epoch known on both: the smaller end.
    assert_eq!(
        at(2, 15),
        OffsetTruncationState {
            offset: 15,
            truncation_completed: true
        }
    );
    assert_eq!(
        at(1, 12),
        OffsetTruncationState {
            offset: 10,
            truncation_completed: true
        }
    );
    // The leader's epoch 3 is unknown here: truncate to the end of our epoch 2 and ask again.
    assert_eq!(
        at(3, 22),
        OffsetTruncationState {
            offset: 20,
            truncation_completed: false
        }
    );
    // Below our earliest epoch: our end for it is where epoch 1 starts.
    assert_eq!(
        at(0, 7),
        OffsetTruncationState {
            offset: 0,
            truncation_completed: true
        }
    );
    // Unknown end offset: stay at the fetch offset; unknown epoch: the leader's offset.
    assert_eq!(
        at(2, UNDEFINED_EPOCH_OFFSET),
        OffsetTruncationState {
            offset: 25,
            truncation_completed: true
        }
    );
    assert_eq!(
        at(UNDEFINED_EPOCH, 18),
        OffsetTruncationState {
            offset: 18,
            truncation_completed: true
        }
    );
    // Never past our own log end.
    assert_eq!(
        at(4, 40),
        OffsetTruncationState {
            offset: 25,
            truncation_completed: true
        }
    );
    // A follower with no epochs trusts the leader's offset.
    assert_eq!(
        offset_truncation_state(
            EpochEndOffset {
                epoch: 2,
                end_offset: 5
            },
            &LeaderEpochFileCache::new(),
            9,
            9
        ),
        OffsetTruncationState {
            offset: 5,
            truncation_completed: true
        }
    );
}

#[test]
fn follower_fetch_request_and_high_watermark() {
    let cache = cache_of(&[(1, 0), (4, 20)]);
    let request = FetchRequest::new(2, 102, 6, &cache, 3, 25);
    assert_eq!(request.fetch_offset, 25);
    assert_eq!(request.last_fetched_epoch, Some(4));
    assert_eq!(request.current_leader_epoch, 6);
    assert_eq!(
        FetchRequest::new(2, 102, 6, &LeaderEpochFileCache::new(), 0, 0).last_fetched_epoch,
        None
    );
    assert_eq!(follower_high_watermark(30, 0, 25), 25);
    assert_eq!(follower_high_watermark(10, 0, 25), 10);
    assert_eq!(follower_high_watermark(2, 5, 25), 5);
}

#[test]
fn offset_out_of_range() {
    assert_eq!(
        out_of_range_truncation(0, 10, 15),
        OutOfRangeTruncation::TruncateTo(10)
    );
    assert_eq!(
        out_of_range_truncation(20, 30, 15),
        OutOfRangeTruncation::TruncateFullyAndStartAt(20)
    );
    assert_eq!(
        out_of_range_truncation(5, 30, 15),
        OutOfRangeTruncation::FetchFrom(15)
    );
}
