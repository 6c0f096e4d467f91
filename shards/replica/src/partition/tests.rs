//! Two replicas of a partition, each over a real `Log` in its own directory, wired by calling
//! what the broker's fetch handler and replica fetcher call: the leader's
//! `fetch_for_follower`, and the follower's `append_records_as_follower` / truncation. The
//! network in between is left out; the decisions and the logs are the real ones.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use sluice_log::{Log, LogConfig, Records};
use sluice_protocol::record_batch::RecordBatchBuilder;

use super::*;
use crate::replication::{PartitionRegistration, ReplicationConfig};
use crate::TopicIdPartition;

const LEADER: i32 = 1;
const FOLLOWER: i32 = 2;

fn run<F, Fut>(f: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .spawn(f)
        .expect("spawn executor")
        .join()
        .expect("executor thread");
}

fn test_dir(name: &str) -> PathBuf {
    let dir = sluice_log::test_dirs::root().join(format!("{name}-0"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

async fn open(name: &str, broker: i32) -> Rc<Partition> {
    let dir = test_dir(name);
    let log = Log::open(dir.clone(), LogConfig::default())
        .await
        .expect("open log");
    let partition = Partition::new(
        TopicIdPartition {
            topic_id: sluice_protocol::codec::Uuid::from_u128(7),
            partition: 0,
        },
        Rc::from("t"),
        log,
        broker,
        dir,
        60_000,
    );
    partition
        .load_producer_state()
        .await
        .expect("producer state");
    Rc::new(partition)
}

fn registration(leader: i32, leader_epoch: i32, isr: &[i32]) -> PartitionRegistration {
    PartitionRegistration {
        leader: Some(leader),
        leader_epoch,
        partition_epoch: leader_epoch,
        replicas: vec![LEADER, FOLLOWER],
        isr: isr.to_vec(),
    }
}

fn config(min_insync_replicas: usize) -> ReplicationConfig {
    ReplicationConfig {
        min_insync_replicas,
        replica_lag_time_max_ms: 30_000,
    }
}

fn alive() -> BTreeMap<i32, i64> {
    [(LEADER, 10), (FOLLOWER, 20)].into_iter().collect()
}

/// A leader of an RF=2 partition (ISR both) with `min_insync_replicas`, and one acks=all
/// append its follower has not fetched.
async fn leader_with_one_append(
    name: &str,
    min_insync_replicas: usize,
) -> (Rc<Partition>, sluice_log::LogAppendInfo) {
    let leader = open(name, LEADER).await;
    leader
        .make_leader(
            &registration(LEADER, 1, &[LEADER, FOLLOWER]),
            config(min_insync_replicas),
            alive(),
        )
        .await
        .expect("leader");
    let info = leader
        .append_records_to_leader(&batch(1), -1)
        .await
        .expect("append");
    (leader, info)
}

fn batch(records: usize) -> Bytes {
    RecordBatchBuilder::new(1_700_000_000_000)
        .records(records, b"value")
        .build()
}

/// One round of the follower's fetcher: fetch from the leader, then apply the answer.
async fn fetch_once(leader: &Partition, follower: &Partition) -> FollowerFetchResult {
    fetch_as(leader, follower, FOLLOWER, 20).await
}

async fn all_records(partition: &Partition) -> Bytes {
    partition
        .log
        .read(0, 1 << 24, true, None)
        .await
        .expect("read")
        .records
}

#[test]
fn acks_all_waits_for_the_follower_and_its_fetches_move_the_high_watermark() {
    run(|| async {
        let leader = open("acks-all-leader", LEADER).await;
        let follower = open("acks-all-follower", FOLLOWER).await;
        let reg = registration(LEADER, 1, &[LEADER, FOLLOWER]);
        leader
            .make_leader(&reg, config(2), alive())
            .await
            .expect("leader");
        assert!(follower.make_follower(LEADER, 1));

        let info = leader
            .append_records_to_leader(&batch(3), -1)
            .await
            .expect("append");
        assert_eq!((info.first_offset, info.last_offset), (0, 2));
        // Not replicated yet: consumers see nothing, the produce waits.
        assert_eq!(leader.high_watermark(), 0);
        let waiting = {
            let leader = leader.clone();
            glommio::spawn_local(async move {
                leader
                    .wait_for_replication(2, Duration::from_secs(30))
                    .await
            })
        };
        // The first fetch brings the records; the second tells the leader the follower has them.
        fetch_once(&leader, &follower).await;
        assert_eq!(leader.high_watermark(), 0);
        fetch_once(&leader, &follower).await;
        assert_eq!(leader.high_watermark(), 3);
        waiting.await.expect("acknowledged");
        // The follower learns the high watermark on its next fetch; the logs are identical.
        assert_eq!(follower.high_watermark(), 3);
        assert_eq!(all_records(&leader).await, all_records(&follower).await);
        // Records keep the leader epoch they were written in.
        assert_eq!(follower.log.latest_epoch(), Some(1));
    });
}

#[test]
fn acks_all_times_out_without_the_follower_and_is_refused_below_min_isr() {
    run(|| async {
        let (leader, info) = leader_with_one_append("timeout-leader", 2).await;
        let waited = leader
            .wait_for_replication(info.last_offset, Duration::from_millis(50))
            .await;
        assert!(
            matches!(waited, Err(ReplicaError::RequestTimedOut)),
            "{waited:?}"
        );

        // The controller shrank the ISR to the leader alone: acks=all is refused before any
        // append, acks=1 is taken.
        let mut shrunk = registration(LEADER, 1, &[LEADER]);
        shrunk.partition_epoch = 2;
        leader
            .make_leader(&shrunk, config(2), alive())
            .await
            .expect("same epoch");
        let end = leader.log_end_offset();
        let refused = leader.append_records_to_leader(&batch(1), -1).await;
        match refused {
            Err(ReplicaError::Replication(e)) => {
                assert_eq!(
                    e.error_code(),
                    sluice_protocol::ErrorCode::NOT_ENOUGH_REPLICAS
                )
            }
            other => panic!("expected NOT_ENOUGH_REPLICAS, got {other:?}"),
        }
        assert_eq!(leader.log_end_offset(), end, "nothing appended");
        leader
            .append_records_to_leader(&batch(1), 1)
            .await
            .expect("acks=1 is taken");
    });
}

#[test]
fn a_waiting_produce_fails_when_leadership_moves() {
    run(|| async {
        let (leader, info) = leader_with_one_append("moves-leader", 1).await;
        let waiting = {
            let leader = leader.clone();
            glommio::spawn_local(async move {
                leader
                    .wait_for_replication(info.last_offset, Duration::from_secs(30))
                    .await
            })
        };
        glommio::yield_if_needed().await;
        leader.make_follower(FOLLOWER, 2);
        let result = waiting.await;
        assert!(
            matches!(result, Err(ReplicaError::NotLeaderOrFollower)),
            "{result:?}"
        );
        // A follower takes no produce, and no consumer read.
        assert!(matches!(
            leader.append_records_to_leader(&batch(1), 1).await,
            Err(ReplicaError::NotLeaderOrFollower)
        ));
        assert!(matches!(
            leader.read_records(consumer_read(0, 1024, -1, true)).await,
            Err(ReplicaError::NotLeaderOrFollower)
        ));
    });
}

/// KIP-101's case: the old leader wrote records in epoch 1 the new leader never got; after the
/// change the old leader follows, is answered a diverging epoch, cuts its tail and takes the new
/// leader's records, so both logs end byte-identical.
#[test]
fn an_old_leader_truncates_its_unreplicated_tail_to_the_new_leaders_history() {
    run(|| async {
        let a = open("kip101-a", LEADER).await;
        let b = open("kip101-b", FOLLOWER).await;
        // Epoch 1: A leads, B follows and gets the first two batches.
        a.make_leader(
            &registration(LEADER, 1, &[LEADER, FOLLOWER]),
            config(1),
            alive(),
        )
        .await
        .expect("a leads");
        b.make_follower(LEADER, 1);
        a.append_records_to_leader(&batch(2), 1).await.expect("a1");
        a.append_records_to_leader(&batch(2), 1).await.expect("a2");
        fetch_once(&a, &b).await;
        assert_eq!(b.log_end_offset(), 4);
        // A writes two more batches B never sees, then A's broker dies.
        a.append_records_to_leader(&batch(3), 1).await.expect("a3");
        a.append_records_to_leader(&batch(3), 1).await.expect("a4");
        assert_eq!(a.log_end_offset(), 10);
        // Epoch 2: B leads (elected from the ISR), writes its own records.
        let mut epoch2 = registration(FOLLOWER, 2, &[FOLLOWER]);
        epoch2.replicas = vec![LEADER, FOLLOWER];
        b.make_leader(&epoch2, config(1), alive())
            .await
            .expect("b leads");
        b.append_records_to_leader(&batch(1), 1).await.expect("b1");
        // A comes back as follower of B.
        a.make_follower(FOLLOWER, 2);
        let first = fetch_as(&b, &a, LEADER, 10).await;
        let diverging = first.diverging_epoch.expect("A's epoch-1 tail diverges");
        assert_eq!((diverging.epoch, diverging.end_offset), (1, 4));
        assert_eq!(
            a.log_end_offset(),
            4,
            "cut back to where the histories agree"
        );
        // Fetch again: B's epoch-2 record arrives, the logs are identical.
        fetch_as(&b, &a, LEADER, 10).await;
        assert_eq!(a.log_end_offset(), 5);
        assert_eq!(all_records(&a).await, all_records(&b).await);
    });
}

/// One round of a follower's fetcher (the follower is broker `follower_id`, epoch
/// `broker_epoch`): fetch from the leader, then apply the answer.
async fn fetch_as(
    leader: &Partition,
    follower: &Partition,
    follower_id: i32,
    broker_epoch: i64,
) -> FollowerFetchResult {
    let state = follower.follower_fetch_state().expect("a follower");
    let result = leader
        .fetch_for_follower(FollowerFetchRequest {
            replica_id: follower_id,
            broker_epoch,
            fetch_offset: state.fetch_offset,
            last_fetched_epoch: state.last_fetched_epoch,
            current_leader_epoch: state.current_leader_epoch,
            log_start_offset: state.log_start_offset,
            max_bytes: 1 << 20,
        })
        .await
        .expect("fetch from leader");
    match result.diverging_epoch {
        Some(diverging) => follower
            .truncate_on_diverging_epoch(diverging)
            .await
            .expect("truncate"),
        None => {
            follower
                .append_records_as_follower(
                    &result.records,
                    result.high_watermark,
                    result.log_start_offset,
                )
                .await
                .expect("append as follower");
        }
    }
    result
}

/// KIP-392: a follower serves a consumer (with client metadata) up to its own high watermark;
/// an offset the leader committed that this follower has in its log but not committed gets no
/// records, one past its log end is out of range (the consumer goes back to the leader). The
/// leader offers the follower as a read replica only once it is in the ISR and its log end
/// covers the offset.
#[test]
fn a_follower_serves_consumers_up_to_its_own_high_watermark() {
    run(|| async {
        let leader = open("read-replica-leader", LEADER).await;
        let follower = open("read-replica-follower", FOLLOWER).await;
        leader
            .make_leader(
                &registration(LEADER, 1, &[LEADER, FOLLOWER]),
                config(1),
                alive(),
            )
            .await
            .expect("leader");
        assert!(follower.make_follower(LEADER, 1));
        leader
            .append_records_to_leader(&batch(3), 1)
            .await
            .expect("append");

        // Before any fetch the leader knows nothing of the follower's log: not offered.
        assert!(leader.read_replica_views(&[FOLLOWER], 0).is_empty());
        // Only a leader offers read replicas.
        assert!(follower.read_replica_views(&[LEADER], 0).is_empty());

        // First fetch: the follower has the records, its high watermark is still 0.
        fetch_once(&leader, &follower).await;
        assert_eq!(follower.log_end_offset(), 3);
        assert_eq!(follower.high_watermark(), 0);
        let pending = follower
            .read_records(consumer_read(0, 1 << 20, 1, false))
            .await
            .expect("follower read");
        assert!(pending.records.is_empty(), "nothing committed here yet");
        // Past the follower's log end: out of range.
        assert!(matches!(
            follower
                .read_records(consumer_read(4, 1 << 20, 1, false))
                .await,
            Err(ReplicaError::OffsetOutOfRange { .. })
        ));
        // A consumer without client metadata (before Fetch v11) reads leaders only.
        assert!(matches!(
            follower
                .read_records(consumer_read(0, 1 << 20, 1, true))
                .await,
            Err(ReplicaError::NotLeaderOrFollower)
        ));
        // A stale or newer leader epoch is refused as on the leader.
        for (epoch, code) in [
            (0, sluice_protocol::ErrorCode::FENCED_LEADER_EPOCH),
            (2, sluice_protocol::ErrorCode::UNKNOWN_LEADER_EPOCH),
        ] {
            match follower
                .read_records(consumer_read(0, 1 << 20, epoch, false))
                .await
            {
                Err(ReplicaError::Replication(e)) => assert_eq!(e.error_code(), code),
                other => panic!("epoch {epoch}: expected {code:?}, got {other:?}"),
            }
        }

        // Second fetch: the leader's high watermark reaches the follower.
        fetch_once(&leader, &follower).await;
        assert_eq!(follower.high_watermark(), 3);
        let read = follower
            .read_records(consumer_read(0, 1 << 20, -1, false))
            .await
            .expect("follower read");
        assert_eq!(read.records, Records::Memory(all_records(&leader).await));
        assert_eq!((read.high_watermark, read.log_start_offset), (3, 0));

        let views = leader.read_replica_views(&[FOLLOWER], 3);
        assert_eq!(views.len(), 1, "{views:?}");
        assert_eq!((views[0].broker_id, views[0].log_end_offset), (FOLLOWER, 3));
        // An offset past the follower's log end is not covered by it.
        assert!(leader.read_replica_views(&[FOLLOWER], 4).is_empty());
        // Out of the ISR: never offered, however caught up.
        let mut shrunk = registration(LEADER, 1, &[LEADER]);
        shrunk.partition_epoch = 2;
        leader
            .make_leader(&shrunk, config(1), alive())
            .await
            .expect("same epoch");
        assert!(leader.read_replica_views(&[FOLLOWER], 0).is_empty());
    });
}

/// A consumer's read of one whole batch at least.
fn consumer_read(
    fetch_offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
    fetch_only_leader: bool,
) -> ConsumerRead {
    ConsumerRead {
        fetch_offset,
        max_bytes,
        min_one_message: true,
        current_leader_epoch,
        fetch_only_leader,
    }
}

/// A leader-only consumer's read at `fetch_offset`, any epoch.
fn leader_read(fetch_offset: i64) -> ConsumerRead {
    consumer_read(fetch_offset, 1 << 20, -1, true)
}

#[test]
fn a_caught_up_read_leaves_a_quiet_mark_that_a_role_change_or_new_data_ends() {
    run(|| async {
        let partition = open("quiet-mark", LEADER).await;
        partition
            .make_leader(&registration(LEADER, 1, &[LEADER]), config(1), alive())
            .await
            .expect("leader");
        partition
            .append_records_to_leader(&batch(3), 1)
            .await
            .expect("append");
        // Behind the high watermark: records, no mark.
        let behind = partition
            .read_records_now(&leader_read(0))
            .expect("from the tail cache")
            .expect("read");
        assert!(!behind.records.is_empty() && behind.quiet.is_none());
        // At it: nothing, and a mark, now and through the read that may do file I/O.
        let caught_up = partition
            .read_records_now(&leader_read(3))
            .expect("no I/O")
            .expect("read");
        assert!(caught_up.records.is_empty());
        let mark = caught_up.quiet.expect("a quiet mark");
        let again = partition.read_records(leader_read(3)).await.expect("read");
        assert_eq!(again.quiet.as_ref(), Some(&mark));
        assert!(mark.is_current());
        // New data moves the high watermark (ISR of one), and so the stamp.
        partition
            .append_records_to_leader(&batch(1), 1)
            .await
            .expect("append");
        assert!(!mark.is_current(), "new data");
        let mark = partition
            .read_records(leader_read(4))
            .await
            .expect("read")
            .quiet
            .expect("a quiet mark");
        // A new leader elsewhere: this replica follows, and the mark is no longer current.
        assert!(partition.make_follower(FOLLOWER, 2));
        assert!(!mark.is_current(), "a role change");
        // An error answer carries no mark.
        assert!(matches!(
            partition.read_records(leader_read(4)).await,
            Err(ReplicaError::NotLeaderOrFollower)
        ));
    });
}
