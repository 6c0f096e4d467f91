//! The executor's park decision, with the patched glommio in `third_party/glommio`
//! (`SLUICE.md` there). Unpatched, glommio 0.9.0 parks an executor whose preempt timer fired
//! before its scheduler ran a task queue even though that queue still has runnable tasks: it
//! then sleeps until its next timer or I/O event, and with neither, for ever. The shard's
//! cleaner queue (`Latency::Matters`) arms such a timer; the cleaner share test hung in CI
//! (about one run in 400 on a loaded 2-core host).
//!
//! The last case drives the cross-executor sleep handshake (wake-ups between shards).
//!
//! Each case runs an executor on its own thread and waits for it with a deadline, so a park
//! that never ends fails the test instead of wedging the suite.

use std::rc::Rc;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// Far above a healthy run (milliseconds), far below the CI job's limit.
const RUN_DEADLINE: Duration = Duration::from_secs(30);

/// Busy-waits `d` without yielding, as a task holding its executor does.
fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Runs `main` on a fresh executor on its own thread and returns its output, or `None` when it
/// has not finished within `RUN_DEADLINE` (the thread is then left behind, parked).
fn run_with_deadline<T, F, Fut>(main: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + 'static,
{
    let (finished, finish) = mpsc::channel();
    let executor = thread::spawn(move || {
        let ex = glommio::LocalExecutorBuilder::default()
            .make()
            .expect("executor");
        let out = ex.run(main());
        let _ = finished.send(out);
    });
    let out = finish.recv_timeout(RUN_DEADLINE).ok()?;
    executor.join().expect("executor thread");
    Some(out)
}

/// A task queue whose preempt timer is `preempt`, as the shard's cleaner queue.
fn latency_queue(preempt: Duration) -> glommio::TaskQueueHandle {
    glommio::executor().create_task_queue(
        glommio::Shares::Static(200),
        glommio::Latency::Matters(preempt),
        "test-latency-queue",
    )
}

/// Runs `rounds` rounds, each: the main task waits (no timer) on a task in a queue whose
/// preempt timer is `preempt`, which spins `spin_d` at a time and yields when preempted until
/// it has spun `work`. Returns whether every round ended before `RUN_DEADLINE`.
fn rounds_end(rounds: u32, preempt: Duration, spin_d: Duration, work: Duration) -> bool {
    run_with_deadline(move || async move {
        let queue = latency_queue(preempt);
        for _ in 0..rounds {
            let spun = glommio::spawn_local_into(
                async move {
                    let started = Instant::now();
                    while started.elapsed() < work {
                        spin(spin_d);
                        glommio::yield_if_needed().await;
                    }
                },
                queue,
            )
            .expect("spawn");
            // No timer of its own: only the scheduler brings the spinning task back.
            spun.await;
        }
    })
    .is_some()
}

#[test]
fn a_preempted_executor_with_runnable_tasks_does_not_park_for_ever() {
    // A 20 µs preempt timer fires between the executor's I/O poll and its scheduler often: with
    // the unpatched executor some round parks with nothing left to wake it.
    let ended = rounds_end(
        2_000,
        Duration::from_micros(20),
        Duration::from_micros(30),
        Duration::from_micros(300),
    );
    assert!(ended, "an executor parked with a runnable task queue");
}

#[test]
fn tasks_in_two_queues_beside_timers_all_finish() {
    // The cleaner's shape: a timer-driven task in the default queue beside a spinning one.
    let ticks = run_with_deadline(|| async {
        let queue = latency_queue(Duration::from_millis(2));
        let done = Rc::new(std::cell::Cell::new(false));
        let stop = done.clone();
        let spinner = glommio::spawn_local_into(
            async move {
                while !stop.get() {
                    spin(Duration::from_micros(50));
                    glommio::yield_if_needed().await;
                }
            },
            queue,
        )
        .expect("spawn");
        let mut ticks = 0u32;
        while ticks < 300 {
            glommio::timer::sleep(Duration::from_micros(100)).await;
            ticks += 1;
        }
        done.set(true);
        spinner.await;
        ticks
    })
    .expect("the executor finished both tasks");
    assert_eq!(ticks, 300);
}

/// Runs `rounds` round trips between two executors on their own threads over glommio's shared
/// channels, the way shards exchange `ShardMessage`s, with no periodic wake-up: each side parks
/// while the other works. The sender waits `gap(i)` before round `i`, so some messages arrive
/// while the peer is between deciding to sleep and sleeping. Returns whether every round trip
/// ended before `RUN_DEADLINE`: a wake-up lost in the sleep handshake leaves both parked.
fn round_trips_end(rounds: u32, gap: fn(u32) -> Duration) -> bool {
    use glommio::channels::shared_channel;
    let (to_peer, from_origin) = shared_channel::new_bounded::<u32>(64);
    let (to_origin, from_peer) = shared_channel::new_bounded::<u32>(64);
    let (finished, finish) = mpsc::channel();
    let peer = thread::spawn(move || {
        let ex = glommio::LocalExecutorBuilder::default()
            .make()
            .expect("executor");
        ex.run(async move {
            let requests = from_origin.connect().await;
            let replies = to_origin.connect().await;
            while let Some(i) = requests.recv().await {
                replies.send(i).await.expect("origin alive");
            }
        });
    });
    let origin = thread::spawn(move || {
        let ex = glommio::LocalExecutorBuilder::default()
            .make()
            .expect("executor");
        let answered = ex.run(async move {
            let requests = to_peer.connect().await;
            let replies = from_peer.connect().await;
            let mut answered = 0;
            for i in 0..rounds {
                let pause = gap(i);
                if !pause.is_zero() {
                    glommio::timer::sleep(pause).await;
                }
                requests.send(i).await.expect("peer alive");
                if replies.recv().await == Some(i) {
                    answered += 1;
                }
            }
            answered
        });
        let _ = finished.send(answered);
    });
    let Ok(answered) = finish.recv_timeout(RUN_DEADLINE) else {
        return false;
    };
    origin.join().expect("origin thread");
    peer.join().expect("peer thread");
    answered == rounds
}

#[test]
fn cross_executor_wake_ups_are_not_lost() {
    // The sleep handshake (patched glommio: a SeqCst fence on each side instead of
    // `membarrier`): back to back, and with gaps of 0-63 µs that land messages on every step
    // of the peer's way to sleep. A handshake that drops wake-ups wedges this; the memory
    // ordering race the fences close is too narrow to hit on demand (with compiler fences in
    // their place, 3 runs of 3 still passed), so that part rests on the Dekker argument in
    // `third_party/glommio/SLUICE.md`.
    assert!(
        round_trips_end(20_000, |_| Duration::ZERO),
        "a round trip never ended: a cross-executor wake-up was lost"
    );
    assert!(
        round_trips_end(5_000, |i| Duration::from_micros(u64::from(
            i.wrapping_mul(2_654_435_761) >> 26
        ))),
        "a round trip never ended: a cross-executor wake-up was lost"
    );
}
