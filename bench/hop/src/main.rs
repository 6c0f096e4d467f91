//! The cross-shard hop alone, measured on this host: what a request pays when it touches a
//! partition of another shard, without a log, a socket or a client in the way.
//!
//! Two data shards and the controller executor are placed and started as `src/bootstrap.rs`
//! starts a broker's (shard `i` on the `i`-th allowed CPU, the controller on the first shard's
//! CPU, executors started in order so that mesh peer `i` is shard `i`, `spin_before_park` from
//! `--spin-us` as from `sluice.spin.before.park.us`, the same periodic wake-up), and joined by
//! the real `sluice_shard::MeshBuilders`. Shard 0 sends real `ShardMessage::Produce` work (a
//! work list of `--partitions` entries, each a zero-copy `Bytes` of a shared batch, as the router
//! builds it) and awaits the real oneshot reply; shard 1's pump runs each message as a task of
//! its own, as the server's pump does, and answers at once as if every append had succeeded:
//! the hop is measured, not the log.
//!
//! One invocation runs one scenario and prints one JSON line; `bench/hop/run` runs the matrix
//! (round trip with the peer idle and busy, throughput with K in flight, each with spin 0 and
//! 100 µs), several rounds interleaved, and writes the table.

use std::cell::{Cell, RefCell};
use std::error::Error;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_channel::oneshot;
use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};
use sluice_config::BrokerConfig;
use sluice_protocol::Uuid;
use sluice_replica::{LogAppendInfo, TopicIdPartition};
use sluice_shard::{
    MeshBuilders, ProducePartition, ProduceWork, ShardId, ShardMesh, ShardMessage, ShardReceivers,
};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const USAGE: &str = "usage: sluice-hop [--in-flight K] [--peer idle|busy-await|busy-yield] [--count N] [--warmup N]
                  [--max-seconds S] [--spin-us US] [--no-periodic-wake] [--gap-us US]
                  [--busy-slice-us US] [--partitions N] [--batch-bytes N] [--capacity N] [--cpus A,B]
Shard 0 sends ShardMessage::Produce to shard 1 and awaits the reply, K at a time (K = 1: one
round trip at a time, after a pause of --gap-us), until N are answered or S seconds have passed.
Peer: idle (parked between messages), busy-await (a CPU-bound task that computes for
--busy-slice-us, then awaits a timer, so the executor polls its rings between slices) or
busy-yield (the same task ending each slice with glommio::yield_if_needed, as Sluice's
CPU-bound loops do: the executor polls its rings only when its preempt timer fires).";

/// The sending shard and the shard that answers.
const SENDER: ShardId = ShardId(0);
const PEER: ShardId = ShardId(1);

/// How long the process may run past `--max-seconds` before it is declared stuck (a lost
/// wake-up with the periodic wake-up off never recovers).
const STUCK_AFTER: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Peer {
    Idle,
    BusyAwait,
    BusyYield,
}

impl Peer {
    fn parse(name: &str) -> Option<Peer> {
        Some(match name {
            "idle" => Peer::Idle,
            "busy-await" => Peer::BusyAwait,
            "busy-yield" => Peer::BusyYield,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Peer::Idle => "idle",
            Peer::BusyAwait => "busy-await",
            Peer::BusyYield => "busy-yield",
        }
    }
}

#[derive(Clone, Debug)]
struct Args {
    in_flight: usize,
    peer: Peer,
    count: usize,
    warmup: usize,
    max_seconds: f64,
    spin_us: u64,
    periodic_wake: bool,
    gap_us: u64,
    busy_slice_us: u64,
    partitions: usize,
    batch_bytes: usize,
    capacity: usize,
    cpus: Vec<usize>,
}

fn parse_args() -> Result<Args> {
    let defaults = BrokerConfig::default_single_node();
    let mut args = Args {
        in_flight: 1,
        peer: Peer::Idle,
        count: 20_000,
        warmup: 1_000,
        max_seconds: 5.0,
        spin_us: defaults.sluice_spin_before_park_us,
        periodic_wake: true,
        gap_us: 0,
        busy_slice_us: 50,
        partitions: 1,
        batch_bytes: 16_384,
        capacity: defaults.sluice_shard_channel_capacity,
        cpus: allowed_cpus().into_iter().take(2).collect(),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        let mut value = || {
            argv.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--in-flight" => args.in_flight = value()?.parse()?,
            "--peer" => {
                let name = value()?;
                args.peer = Peer::parse(&name).ok_or(format!("unknown peer {name}\n{USAGE}"))?;
            }
            "--count" => args.count = value()?.parse()?,
            "--warmup" => args.warmup = value()?.parse()?,
            "--max-seconds" => args.max_seconds = value()?.parse()?,
            "--spin-us" => args.spin_us = value()?.parse()?,
            "--no-periodic-wake" => args.periodic_wake = false,
            "--gap-us" => args.gap_us = value()?.parse()?,
            "--busy-slice-us" => args.busy_slice_us = value()?.parse()?,
            "--partitions" => args.partitions = value()?.parse()?,
            "--batch-bytes" => args.batch_bytes = value()?.parse()?,
            "--capacity" => args.capacity = value()?.parse()?,
            "--cpus" => {
                args.cpus = value()?
                    .split(',')
                    .map(str::parse::<usize>)
                    .collect::<std::result::Result<_, _>>()?
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg}\n{USAGE}").into()),
        }
    }
    if args.in_flight == 0 || args.count == 0 || args.partitions == 0 || args.capacity == 0 {
        return Err("--in-flight, --count, --partitions and --capacity must be positive".into());
    }
    if args.cpus.is_empty() || args.max_seconds.is_nan() || args.max_seconds <= 0.0 {
        return Err("--cpus needs a CPU and --max-seconds must be positive".into());
    }
    Ok(args)
}

/// CPU seconds of this process (every thread: both shards and the controller executor) and the
/// busy time of the whole machine (every CPU), to tell how quiet the host was.
#[derive(Clone, Copy)]
struct CpuSample {
    process_s: f64,
    machine_busy_s: f64,
}

fn cpu_sample() -> std::result::Result<CpuSample, String> {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a rusage the call may fill.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let process_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    let stat = std::fs::read_to_string("/proc/stat").map_err(|e| e.to_string())?;
    let line = stat.lines().next().ok_or("empty /proc/stat")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse::<u64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| e.to_string())?;
    // user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
    // USER_HZ is 100 on every Linux ABI.
    let machine_busy_s = total.saturating_sub(idle) as f64 / 100.0;
    Ok(CpuSample {
        process_s,
        machine_busy_s,
    })
}

/// The CPUs this process may run on, as `src/topology.rs` reads them.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the cpu_set_t we own.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size passed is the size of the set we own.
    let ok =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    let cpus: Vec<usize> = if ok {
        // SAFETY: CPU_ISSET reads the set we own, for indexes within its size.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|i| unsafe { libc::CPU_ISSET(*i, &set) })
            .collect()
    } else {
        Vec::new()
    };
    if cpus.is_empty() {
        return vec![0];
    }
    cpus
}

/// What shard 0 sends, built once: the partitions of the work list and the batch every entry
/// carries (cloning `Bytes` only counts a reference, as the router's slices of the frame do).
struct Payload {
    partitions: Vec<TopicIdPartition>,
    batch: Bytes,
}

impl Payload {
    fn new(args: &Args) -> Payload {
        let topic_id = Uuid([7; 16]);
        Payload {
            partitions: (0..args.partitions)
                .map(|p| TopicIdPartition {
                    topic_id,
                    partition: p as i32,
                })
                .collect(),
            batch: Bytes::from(vec![0u8; args.batch_bytes]),
        }
    }
}

/// One hop and its way back: a work list built and sent over the mesh, the reply awaited.
async fn hop(mesh: &ShardMesh, payload: &Payload) -> std::result::Result<(), String> {
    let (reply, answer) = oneshot::channel();
    let partitions = payload
        .partitions
        .iter()
        .map(|tp| ProducePartition {
            tp: *tp,
            records: payload.batch.clone().into(),
            required_acks: 1,
            timeout_ms: 30_000,
        })
        .collect();
    let work = ProduceWork { partitions, reply };
    mesh.send_to_shard(PEER, ShardMessage::Produce(work))
        .await
        .map_err(|e| e.to_string())?;
    let results = answer
        .await
        .map_err(|_| "the peer dropped the reply".to_string())?;
    if results.len() != payload.partitions.len() || results.iter().any(|r| r.is_err()) {
        return Err("the peer's reply does not answer the work list".to_string());
    }
    Ok(())
}

/// Runs `count` hops, `in_flight` at a time, until done or `deadline`; each hop's latency in
/// nanoseconds, pushed into a vector sized up front.
async fn run_hops(
    mesh: &Rc<ShardMesh>,
    payload: &Rc<Payload>,
    in_flight: usize,
    count: usize,
    gap: Duration,
    deadline: Instant,
) -> std::result::Result<Vec<u64>, String> {
    let remaining = Rc::new(Cell::new(count));
    let latencies_ns = Rc::new(RefCell::new(Vec::with_capacity(count)));
    let mut tasks = Vec::with_capacity(in_flight);
    for _ in 0..in_flight {
        let (mesh, payload) = (mesh.clone(), payload.clone());
        let (remaining, latencies_ns) = (remaining.clone(), latencies_ns.clone());
        tasks.push(glommio::spawn_local(async move {
            while remaining.get() > 0 && Instant::now() < deadline {
                remaining.set(remaining.get() - 1);
                if !gap.is_zero() {
                    glommio::timer::sleep(gap).await;
                }
                let started = Instant::now();
                hop(&mesh, &payload).await?;
                let ns = started.elapsed().as_nanos().min(u64::MAX as u128) as u64;
                latencies_ns.borrow_mut().push(ns);
            }
            Ok::<(), String>(())
        }));
    }
    for task in tasks {
        task.await?;
    }
    let latencies = std::mem::take(&mut *latencies_ns.borrow_mut());
    Ok(latencies)
}

/// What one scenario measured.
struct Outcome {
    latencies_ns: Vec<u64>,
    wall_s: f64,
    before: CpuSample,
    after: CpuSample,
}

/// Shard 0: joins the mesh, warms up, then measures.
async fn drive(builders: MeshBuilders, args: Args) -> std::result::Result<Outcome, String> {
    let (mesh, _receivers) = builders
        .join_shard(SENDER)
        .await
        .map_err(|e| e.to_string())?;
    let mesh = Rc::new(mesh);
    let payload = Rc::new(Payload::new(&args));
    let deadline = Instant::now() + Duration::from_secs_f64(args.max_seconds);
    let gap = Duration::from_micros(args.gap_us);
    if args.warmup > 0 {
        run_hops(&mesh, &payload, args.in_flight, args.warmup, gap, deadline).await?;
    }
    let before = cpu_sample()?;
    let started = Instant::now();
    let latencies_ns = run_hops(&mesh, &payload, args.in_flight, args.count, gap, deadline).await?;
    let wall_s = started.elapsed().as_secs_f64();
    let after = cpu_sample()?;
    if latencies_ns.is_empty() {
        return Err("no hop was measured (the warm-up took all of --max-seconds)".to_string());
    }
    Ok(Outcome {
        latencies_ns,
        wall_s,
        before,
        after,
    })
}

/// Shard 1: the pump, an optional CPU-bound task, until shard 0 is done.
async fn serve_peer(
    builders: MeshBuilders,
    args: Args,
    stop: oneshot::Receiver<()>,
) -> std::result::Result<(), String> {
    let (mesh, mut receivers) = builders.join_shard(PEER).await.map_err(|e| e.to_string())?;
    spawn_pumps(&mut receivers);
    if args.peer != Peer::Idle {
        let slice = Duration::from_micros(args.busy_slice_us);
        glommio::spawn_local(busy(args.peer, slice)).detach();
    }
    let _ = stop.await;
    mesh.close();
    Ok(())
}

/// The receiving side, shaped as the server's (`shards/server/src/pump.rs`): one task per
/// sender, and each message run as a task of its own.
fn spawn_pumps(receivers: &mut ShardReceivers) {
    for receiver in receivers.streams() {
        glommio::spawn_local(async move {
            while let Some(envelope) = receiver.recv().await {
                assert_eq!(
                    envelope.target, PEER,
                    "misrouted message from {}",
                    envelope.origin
                );
                glommio::spawn_local(answer(envelope.message)).detach();
            }
        })
        .detach();
    }
}

/// Answers at once, as if every append had succeeded: the hop is measured, not the log.
async fn answer(message: ShardMessage) {
    if let ShardMessage::Produce(work) = message {
        let results = work
            .partitions
            .iter()
            .map(|p| {
                Ok(LogAppendInfo {
                    first_offset: 0,
                    last_offset: 0,
                    max_timestamp: -1,
                    log_append_time_ms: -1,
                    log_start_offset: 0,
                    bytes: p.records.len(),
                })
            })
            .collect();
        let _ = work.reply.send(results);
    }
}

/// A CPU-bound task: computes for `slice`, then lets the executor go on, for ever.
async fn busy(style: Peer, slice: Duration) {
    let mut spins: u64 = 0;
    loop {
        let started = Instant::now();
        while started.elapsed() < slice {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
        match style {
            // Awaiting something the reactor delivers: the task queue empties, so the
            // executor polls its rings (and the other shard's wake-ups) before the next slice.
            Peer::BusyAwait => glommio::timer::sleep(Duration::from_micros(1)).await,
            // What a CPU-bound loop in Sluice does: yield only when glommio asks.
            _ => glommio::yield_if_needed().await,
        }
    }
}

/// How often a busy executor wakes up on its own; as `src/bootstrap.rs`.
const EXECUTOR_WAKE_INTERVAL: Duration = Duration::from_millis(20);
/// Below this many tasks a second an executor counts as idle; as `src/bootstrap.rs`.
const EXECUTOR_BUSY_TASKS_PER_SECOND: f64 = 100.0;
/// The longest pause between wake-ups; as `src/bootstrap.rs`.
const EXECUTOR_WAKE_INTERVAL_IDLE_MAX: Duration = Duration::from_secs(1);

/// The broker's periodic wake-up (`wake_periodically` in `src/bootstrap.rs`, private to the
/// binary, so repeated here): it bounds the delay of a cross-executor wake-up that an executor
/// going to sleep misses, and its own wake-ups are part of what an executor costs.
async fn wake_periodically() {
    let mut interval = EXECUTOR_WAKE_INTERVAL;
    loop {
        glommio::timer::sleep(interval).await;
        let tasks = glommio::executor().executor_stats().tasks_executed();
        let tasks_per_second = tasks as f64 / interval.as_secs_f64();
        interval = if tasks_per_second >= EXECUTOR_BUSY_TASKS_PER_SECOND {
            EXECUTOR_WAKE_INTERVAL
        } else {
            (interval * 2).min(EXECUTOR_WAKE_INTERVAL_IDLE_MAX)
        };
    }
}

/// Spawns an executor and waits until it runs, so executor ids (which order the mesh's peers)
/// follow the call order; as `src/bootstrap.rs`.
fn spawn_in_order<F, Fut, T>(
    builder: LocalExecutorBuilder,
    periodic_wake: bool,
    make: F,
) -> Result<ExecutorJoinHandle<T>>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + 'static,
    T: Send + 'static,
{
    let (running, is_running) = mpsc::channel();
    let handle = builder.spawn(move || async move {
        let _ = running.send(());
        if periodic_wake {
            glommio::spawn_local(wake_periodically()).detach();
        }
        make().await
    })?;
    is_running
        .recv()
        .map_err(|_| "an executor died while starting")?;
    Ok(handle)
}

fn run(args: &Args) -> Result<(Outcome, Duration)> {
    let builders = MeshBuilders::new(2, args.capacity);
    let sender_cpu = args.cpus[0];
    let peer_cpu = args.cpus[1 % args.cpus.len()];
    // As `src/bootstrap.rs`: two shards on one CPU would only steal each other's time spinning.
    let spin = if sender_cpu == peer_cpu {
        Duration::ZERO
    } else {
        Duration::from_micros(args.spin_us)
    };
    let (peer_stop_tx, peer_stop) = oneshot::channel::<()>();
    let (controller_stop_tx, controller_stop) = oneshot::channel::<()>();
    let shard = |cpu: usize, name: &str| {
        LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(name)
            .spin_before_park(spin)
    };
    let (sender_builders, sender_args) = (builders.clone(), args.clone());
    let sender = spawn_in_order(
        shard(sender_cpu, "shard-0"),
        args.periodic_wake,
        move || async move {
            let outcome = drive(sender_builders, sender_args).await;
            let _ = peer_stop_tx.send(());
            let _ = controller_stop_tx.send(());
            outcome
        },
    )?;
    let (peer_builders, peer_args) = (builders.clone(), args.clone());
    let peer = spawn_in_order(shard(peer_cpu, "shard-1"), args.periodic_wake, move || {
        serve_peer(peer_builders, peer_args, peer_stop)
    })?;
    // The controller executor takes part in the meshes (a shard joins the controller's
    // channels too); it shares shard 0's CPU and does not spin, as in a broker on 2 cores.
    let controller = spawn_in_order(
        LocalExecutorBuilder::new(Placement::Fixed(sender_cpu)).name("controller"),
        args.periodic_wake,
        move || async move {
            let (senders, receivers) = builders
                .join_controller()
                .await
                .map_err(|e| e.to_string())?;
            let _ = controller_stop.await;
            senders.close();
            drop(receivers);
            Ok::<(), String>(())
        },
    )?;
    let outcome = sender.join().map_err(|e| format!("shard-0: {e}"))??;
    peer.join().map_err(|e| format!("shard-1: {e}"))??;
    controller
        .join()
        .map_err(|e| format!("controller: {e}"))??;
    Ok((outcome, spin))
}

fn percentile_us(sorted_ns: &[u64], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let index = ((sorted_ns.len() - 1) as f64 * p).round() as usize;
    sorted_ns[index.min(sorted_ns.len() - 1)] as f64 / 1000.0
}

/// Ends the process if the scenario outlives its time by `STUCK_AFTER`: a wake-up lost with the
/// periodic wake-up off would otherwise hang it for ever.
fn arm_watchdog(args: &Args) -> mpsc::Sender<()> {
    let (done, is_done) = mpsc::channel::<()>();
    let limit = Duration::from_secs_f64(args.max_seconds) + STUCK_AFTER;
    std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = is_done.recv_timeout(limit) {
            eprintln!(
                "sluice-hop: no progress {} s past --max-seconds: a lost wake-up?",
                STUCK_AFTER.as_secs()
            );
            std::process::exit(2);
        }
    });
    done
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let watchdog = arm_watchdog(&args);
    let (mut outcome, spin) = run(&args)?;
    let _ = watchdog.send(());
    let latencies = &mut outcome.latencies_ns;
    latencies.sort_unstable();
    let count = latencies.len();
    let mean_us = latencies.iter().sum::<u64>() as f64 / count as f64 / 1000.0;
    let process_cpu_s = outcome.after.process_s - outcome.before.process_s;
    let machine_busy_s = outcome.after.machine_busy_s - outcome.before.machine_busy_s;
    let wall_s = outcome.wall_s;
    println!(
        "{{\"peer\":\"{}\",\"in_flight\":{},\"partitions\":{},\"spin_us\":{},\"periodic_wake\":{},\
\"gap_us\":{},\"busy_slice_us\":{},\"cpus\":\"{}\",\"count\":{},\"wall_s\":{:.3},\
\"msgs_per_s\":{:.0},\"p50_us\":{:.1},\"p99_us\":{:.1},\"max_us\":{:.1},\"mean_us\":{:.1},\
\"process_cpu_s\":{:.3},\"cpu_us_per_msg\":{:.2},\"others_busy_cores\":{:.3}}}",
        args.peer.name(),
        args.in_flight,
        args.partitions,
        spin.as_micros(),
        args.periodic_wake,
        args.gap_us,
        args.busy_slice_us,
        args.cpus
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        count,
        wall_s,
        count as f64 / wall_s,
        percentile_us(latencies, 0.50),
        percentile_us(latencies, 0.99),
        percentile_us(latencies, 1.0),
        mean_us,
        process_cpu_s,
        process_cpu_s * 1e6 / count as f64,
        // Cores the rest of the machine kept busy meanwhile: how quiet the host was.
        ((machine_busy_s - process_cpu_s) / wall_s).max(0.0),
    );
    Ok(())
}
