//! Start-up and shutdown of the executors.
//!
//! One glommio executor per data shard, pinned per the topology, plus the controller's executor.
//! They are created one after another so that glommio's executor ids — which order the peers of
//! the channel meshes (`MeshBuilders`) — follow shard ids: mesh peer `i` is shard `i`, the
//! controller executor is the last peer.
//!
//! Shutdown is two-phase. On SIGINT/SIGTERM every shard stops accepting and drains its
//! connections (in-flight requests still reach other shards, which are all still up). When every
//! shard has drained, each closes its logs (flush + clean-shutdown marker) and exits.

use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use glommio::{ExecutorJoinHandle, LocalExecutorBuilder, Placement};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use sluice_broker::{AgentSettings, BrokerAgent, ControllerLink};
use sluice_config::BrokerConfig;
use sluice_controller::rpc_net;
use sluice_controller::{ControllerSettings, QuorumController};
use sluice_server::metrics::{self, Readiness, Registry};
use sluice_server::{run_shard, ShardEvent, ShardStart};
use sluice_shard::{MeshBuilders, ShardId};
use tracing::{error, info, warn};

use crate::clean_shutdown;
use crate::topology::{allowed_cpus, Topology};

/// Memory each data shard sets aside for I/O buffers: glommio serves file reads from it without
/// a fresh allocation (and its page faults) per read.
const SHARD_IO_MEMORY_BYTES: usize = 16 << 20;
/// The controller only reads and writes small metadata records.
const CONTROLLER_IO_MEMORY_BYTES: usize = 2 << 20;

/// Runs the broker until a signal stops it.
pub fn run(config: BrokerConfig) -> Result<(), String> {
    let started = Instant::now();
    // Installed before any executor starts: a shard may serve its first request before the
    // ready line, and a SIGTERM then must still mean a graceful shutdown, not death.
    let signals = Signals::new([SIGINT, SIGTERM])
        .map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let mut config = config;
    std::fs::create_dir_all(&config.log_dirs)
        .map_err(|e| format!("cannot create log.dirs {}: {e}", config.log_dirs.display()))?;
    // glommio resolves relative paths against no directory at all (openat with fd -1), so every
    // path below the data directory must be absolute.
    config.log_dirs = std::fs::canonicalize(&config.log_dirs)
        .map_err(|e| format!("cannot resolve log.dirs {}: {e}", config.log_dirs.display()))?;
    let config = Arc::new(config);
    let _lock = lock_data_dir(&config.log_dirs)?;
    // Taken (and removed) before anything runs: if this run crashes, its next start must not
    // find it.
    let previous_broker_epoch = if config.is_broker() {
        clean_shutdown::take_previous_broker_epoch(&config.log_dirs)?
    } else {
        -1
    };
    // Partition directories whose deletion a crash interrupted (renamed `-delete` first, as
    // Kafka's): finished before any shard opens a partition.
    match sluice_log::remove_deleted_dirs(&config.log_dirs) {
        Ok(0) => {}
        Ok(count) => info!(count, "removed partition directories left being deleted"),
        Err(e) => {
            return Err(format!(
                "cannot clean log.dirs {}: {e}",
                config.log_dirs.display()
            ))
        }
    }
    if config.is_broker() {
        check_listener_free(&config)?;
    }
    let topology = Topology::plan(
        &allowed_cpus(),
        config.sluice_shards,
        config.sluice_controller_dedicated_core,
    );
    // A controller-only process serves no clients: no data shards, only the controller's
    // executor.
    let shard_count = if config.is_broker() {
        topology.shard_cpus.len()
    } else {
        0
    };
    let mesh = config
        .is_broker()
        .then(|| MeshBuilders::new(shard_count, config.sluice_shard_channel_capacity));
    // Registered once, before any executor starts: each shard gets its own counters, the
    // endpoint (on the controller's executor) reads them all.
    let registry = config
        .sluice_metrics_listener
        .map(|_| Arc::new(Registry::new(shard_count)));
    let (events, events_rx) = mpsc::channel();
    let mut stops = Vec::with_capacity(shard_count);
    let mut finishes = Vec::with_capacity(shard_count);
    let mut handles = Vec::with_capacity(shard_count + 1);
    let spin = if topology.oversubscribed() {
        Duration::ZERO
    } else {
        Duration::from_micros(config.sluice_spin_before_park_us)
    };
    // Glommio reaps io_uring completions only between two runs of a task queue; a run ends
    // when its tasks all wait or this timer fires. A connection whose socket always has bytes
    // waiting never waits, so the timer bounds how long it holds every other connection of
    // the shard (`tests/busy_shard.rs`).
    let preempt = Duration::from_micros(config.sluice_shard_preempt_timer_us);
    for (i, cpu) in topology.shard_cpus.iter().take(shard_count).enumerate() {
        let (stop_tx, stop) = oneshot::channel();
        let (finish_tx, finish) = oneshot::channel();
        stops.push(stop_tx);
        finishes.push(finish_tx);
        let start = ShardStart {
            shard_id: ShardId(i as u16),
            config: config.clone(),
            mesh: mesh.clone().expect("a broker has a mesh"),
            shard_count,
            stop,
            finish,
            events: events.clone(),
            metrics: registry.as_ref().map(|r| r.shards[i].clone()),
        };
        let builder = LocalExecutorBuilder::new(Placement::Fixed(*cpu))
            .name(&format!("shard-{i}"))
            .spin_before_park(spin)
            .preempt_timer(preempt)
            .io_memory(SHARD_IO_MEMORY_BYTES);
        let panic_after = injected_panic(i);
        handles.push(spawn_in_order(builder, true, move || async move {
            if let Some(after) = panic_after {
                glommio::spawn_local(async move {
                    glommio::timer::sleep(after).await;
                    panic!("injected panic on shard {i} ({INJECT_PANIC_ENV})");
                })
                .detach();
            }
            run_shard(start).await
        })?);
    }
    let (node_stop_tx, node_stop) = oneshot::channel();
    let (leave_tx, leave) = oneshot::channel();
    let clean_broker_epoch = Arc::new(AtomicI64::new(-1));
    let node = NodeStart {
        config: config.clone(),
        shard_count,
        mesh,
        events: events.clone(),
        leave,
        stop: node_stop,
        metrics: registry.clone(),
        previous_broker_epoch,
        clean_broker_epoch: clean_broker_epoch.clone(),
    };
    let builder = LocalExecutorBuilder::new(Placement::Fixed(topology.controller_cpu))
        .name("controller")
        .io_memory(CONTROLLER_IO_MEMORY_BYTES);
    // A voter of a quorum with peers wakes at least once per Raft heartbeat interval (120 ms
    // at the default election timeout, `raft_driver.rs`), which bounds a missed wake-up's delay
    // as the periodic wake-up would: that one would only add wake-ups.
    let raft_ticks = config.is_controller() && config.voters().len() > 1;
    handles.push(spawn_in_order(builder, !raft_ticks, move || {
        run_node(node)
    })?);
    drop(events);

    // The first signal is forwarded here; a second one exits at once.
    let stop_signal = forward_signals(signals);
    // Every shard listening, and the node executor ready: a broker registered and unfenced, a
    // controller listening on its controller listener. A signal before that (a broker whose
    // controllers cannot be reached never gets there) stops the start the same graceful way.
    let ready = wait_for_start(&events_rx, shard_count + 1, &stop_signal)?;
    if ready {
        if let Some(registry) = &registry {
            registry.set_readiness(Readiness::Ready);
        }
        info!(
            "sluice ready: node {} ({}) listening on {} with {shard_count} shards (controller on cpu {}{}), data in {}, started in {} ms",
            config.node_id,
            roles(&config),
            listeners(&config),
            topology.controller_cpu,
            if topology.controller_shares_cpu { ", shared" } else { "" },
            config.log_dirs.display(),
            started.elapsed().as_millis()
        );
        let _ = stop_signal.recv();
    }
    if let Some(registry) = &registry {
        registry.set_readiness(Readiness::Stopping);
    }
    arm_shutdown_deadline();
    // As Kafka's broker: leave the cluster first (its leaderships move while its listeners
    // still answer, so that clients are told NOT_LEADER_OR_FOLLOWER and a produce waiting for
    // its followers is answered rather than left to time out), then stop the listeners.
    info!("shutting down: controlled shutdown first");
    let _ = leave_tx.send(());
    wait_for(&events_rx, 1, |e| matches!(e, ShardEvent::Left(_)))?;
    info!("shutting down: no new connections, finishing in-flight requests");
    for stop in stops {
        let _ = stop.send(());
    }
    wait_for(&events_rx, shard_count, |e| {
        matches!(e, ShardEvent::Drained(_))
    })?;
    for finish in finishes {
        let _ = finish.send(());
    }
    let _ = node_stop_tx.send(());
    let mut clean = true;
    for handle in handles {
        if let Err(error) = handle.join() {
            error!(%error, "executor ended with an error");
            clean = false;
        }
    }
    // Every shard drained and closed its logs: a clean shutdown of this registration.
    let broker_epoch = clean_broker_epoch.load(Ordering::Relaxed);
    if clean && broker_epoch >= 0 {
        if let Err(error) = clean_shutdown::record_clean_shutdown(&config.log_dirs, broker_epoch) {
            warn!(%error, "the clean shutdown could not be recorded; the next start counts as unclean");
        }
    }
    info!("sluice stopped");
    Ok(())
}

/// Test hook: `SLUICE_TEST_INJECT_PANIC=<shard>:<ms>` panics on that shard's executor that
/// long after start (tests/panic.rs checks that the whole process stops, loudly).
const INJECT_PANIC_ENV: &str = "SLUICE_TEST_INJECT_PANIC";

fn injected_panic(shard: usize) -> Option<Duration> {
    let value = std::env::var(INJECT_PANIC_ENV).ok()?;
    let (target, after_ms) = value.split_once(':')?;
    (target.parse::<usize>().ok()? == shard)
        .then(|| after_ms.parse().ok().map(Duration::from_millis))
        .flatten()
}

/// How often a busy executor wakes up on its own; see `wake_periodically`.
const EXECUTOR_WAKE_INTERVAL: Duration = Duration::from_millis(20);
/// Below this many tasks a second an executor counts as idle.
const EXECUTOR_BUSY_TASKS_PER_SECOND: f64 = 100.0;
/// The longest pause between such wake-ups, reached after a stretch with nothing to do.
const EXECUTOR_WAKE_INTERVAL_IDLE_MAX: Duration = Duration::from_secs(1);

/// Wakes the executor for its whole life: every 20 ms while it has work, backing off (doubling)
/// to once a second while it has none. A wake-up sent by another executor (a cross-executor
/// channel message, including the mesh join at start) can be missed by an executor that is
/// going to sleep at that moment — observed as a start-up hang in about one start in ten with
/// two executors sharing a core under load. The message itself is queued; any later wake-up
/// delivers it, so a periodic one bounds the delay. Fixed at 20 ms it cost an idle broker
/// 150 wake-ups a second (1.7 % of a core with the other timers, measured); an idle executor
/// (fewer than `EXECUTOR_BUSY_TASKS_PER_SECOND` tasks) pays for a missed wake-up with up to a
/// second of delay instead, and traffic brings the 20 ms back within one interval.
async fn wake_periodically() {
    let mut interval = EXECUTOR_WAKE_INTERVAL;
    loop {
        glommio::timer::sleep(interval).await;
        // Tasks run since the last look (the count restarts at each look). An idle broker's
        // own timers (session checks, metadata polls) run ~15 a second; traffic runs hundreds.
        let tasks = glommio::executor().executor_stats().tasks_executed();
        let tasks_per_second = tasks as f64 / interval.as_secs_f64();
        interval = if tasks_per_second >= EXECUTOR_BUSY_TASKS_PER_SECOND {
            EXECUTOR_WAKE_INTERVAL
        } else {
            (interval * 2).min(EXECUTOR_WAKE_INTERVAL_IDLE_MAX)
        };
    }
}

/// Spawns an executor and waits until it runs, so executor ids are assigned in call order;
/// `periodic_wake` gives it `wake_periodically`.
fn spawn_in_order<F, Fut>(
    builder: LocalExecutorBuilder,
    periodic_wake: bool,
    make: F,
) -> Result<ExecutorJoinHandle<()>, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (running, is_running) = mpsc::channel();
    let handle = builder
        .spawn(move || async move {
            let _ = running.send(());
            if periodic_wake {
                glommio::spawn_local(wake_periodically()).detach();
            }
            make().await
        })
        .map_err(|e| format!("cannot start an executor: {e}"))?;
    is_running
        .recv()
        .map_err(|_| "an executor died while starting".to_string())?;
    Ok(handle)
}

/// What the node executor (the controller's) needs.
struct NodeStart {
    config: Arc<BrokerConfig>,
    shard_count: usize,
    mesh: Option<MeshBuilders>,
    events: mpsc::Sender<ShardEvent>,
    /// Leave the cluster (controlled shutdown), then report `Left`.
    leave: oneshot::Receiver<()>,
    stop: oneshot::Receiver<()>,
    metrics: Option<Arc<Registry>>,
    /// `PreviousBrokerEpoch` for the registration (KIP-966).
    previous_broker_epoch: i64,
    /// The broker epoch to record once the stop was clean; -1 when not a registered broker.
    clean_broker_epoch: Arc<AtomicI64>,
}

/// The controller executor: the quorum controller when this process is a voter, the broker
/// agent when it is a broker; reports ready (as `Listening` of the executor after the last
/// shard) once the broker is unfenced, or for a controller-only process once its controller
/// listener is bound.
async fn run_node(start: NodeStart) {
    let node_id = ShardId(start.shard_count as u16);
    let fail = |events: &mpsc::Sender<ShardEvent>, message: String| {
        let _ = events.send(ShardEvent::Failed(node_id, message));
    };
    let config = start.config.clone();
    // Bound first, so that a taken address fails the start, and /health answers while the
    // controller and the broker come up; served once the mesh (for scrapes) is joined.
    let metrics_endpoint = match (&start.metrics, config.sluice_metrics_listener) {
        (Some(registry), Some(addr)) => {
            registry
                .controller_tid
                .store(metrics::current_tid(), std::sync::atomic::Ordering::Relaxed);
            match metrics::bind(addr) {
                Ok(listener) => {
                    info!(%addr, "metrics endpoint listening (/metrics, /health, /ready)");
                    Some((listener, registry.clone()))
                }
                Err(error) => {
                    return fail(
                        &start.events,
                        format!("cannot listen on {addr} (sluice.metrics.listener): {error}"),
                    );
                }
            }
        }
        _ => None,
    };
    let controller = if config.is_controller() {
        match QuorumController::start(controller_settings(&config)) {
            Ok(controller) => Some(controller),
            Err(error) => return fail(&start.events, format!("controller: {error}")),
        }
    } else {
        None
    };
    if let (Some(controller), Some(listener)) = (&controller, config.controller_listener()) {
        let addr = match listener.socket_addr() {
            Ok(addr) => addr,
            Err(error) => return fail(&start.events, format!("controller listener: {error}")),
        };
        match bind_exclusive(addr) {
            Ok(bound) => {
                info!(%addr, "controller listening");
                glommio::spawn_local(rpc_net::serve(
                    bound,
                    controller.clone(),
                    CONTROLLER_CONNECTIONS_MAX,
                    rpc_net::SERVER_IDLE_LIMIT,
                ))
                .detach();
            }
            Err(error) => {
                return fail(&start.events, format!("cannot listen on {addr}: {error}"));
            }
        }
    }
    let Some(mesh) = start.mesh else {
        // Controller only: the endpoint shows the process figures.
        if let Some((listener, registry)) = metrics_endpoint {
            glommio::spawn_local(metrics::serve(listener, registry, None)).detach();
        }
        let _ = start.events.send(ShardEvent::Listening(node_id));
        let _ = start.leave.await;
        let _ = start.events.send(ShardEvent::Left(node_id));
        let _ = start.stop.await;
        return;
    };
    let (shards, receivers) = match mesh.join_controller().await {
        Ok(joined) => joined,
        Err(error) => return fail(&start.events, format!("the controller executor: {error}")),
    };
    let shards = Rc::new(shards);
    if let Some((listener, registry)) = metrics_endpoint {
        glommio::spawn_local(metrics::serve(listener, registry, Some(shards.clone()))).detach();
    }
    let link = match (&controller, config.voters().as_slice()) {
        (Some(controller), [only]) if only.port == 0 => ControllerLink::Local(controller.clone()),
        (_, voters) => {
            let mut remote = Vec::with_capacity(voters.len());
            for voter in voters {
                match voter.socket_addr() {
                    Ok(addr) => remote.push((voter.id, addr)),
                    Err(error) => return fail(&start.events, error),
                }
            }
            ControllerLink::remote(remote)
        }
    };
    let (unfenced_tx, unfenced) = oneshot::channel();
    let clean_broker_epoch = start.clean_broker_epoch.clone();
    let agent = BrokerAgent::new(
        agent_settings(&config, start.shard_count, start.previous_broker_epoch),
        link,
        shards.clone(),
        unfenced_tx,
    );
    let events = start.events.clone();
    glommio::spawn_local(async move {
        if unfenced.await.is_ok() {
            let _ = events.send(ShardEvent::Listening(node_id));
        }
    })
    .detach();
    // The agent keeps following the log during the controlled shutdown: the shards must
    // apply the image that moves this broker's leaderships.
    let leave_then_stop = async {
        let _ = start.leave.await;
        agent.controlled_shutdown().await;
        clean_broker_epoch.store(agent.broker_epoch(), Ordering::Relaxed);
        let _ = start.events.send(ShardEvent::Left(node_id));
        let _ = start.stop.await;
    };
    futures_lite::future::or(agent.clone().run(receivers), leave_then_stop).await;
    shards.close();
}

/// Binds the controller listener without SO_REUSEPORT (which glommio's own `bind` sets, for
/// shards sharing a port): a second process on the same port must fail with "address in use",
/// not silently take half of the brokers' and voters' connections.
fn bind_exclusive(addr: std::net::SocketAddr) -> std::io::Result<glommio::net::TcpListener> {
    use std::os::fd::{FromRawFd, IntoRawFd};
    let listener = std::net::TcpListener::bind(addr)?;
    // SAFETY: the descriptor is a bound, listening TCP socket whose ownership moves here.
    Ok(unsafe { glommio::net::TcpListener::from_raw_fd(listener.into_raw_fd()) })
}

/// Connections the controller listener accepts (brokers and voters; a handful each).
const CONTROLLER_CONNECTIONS_MAX: usize = 256;
/// One Raft tick. Fine-grained, so that election timeouts drawn in ticks spread: with 50 ms
/// ticks two followers that lost the same leader often drew the same timeout and split the
/// vote (measured: 10 of 275 elections, each costing another timeout).
const RAFT_TICK: Duration = Duration::from_millis(10);

fn controller_settings(config: &BrokerConfig) -> ControllerSettings {
    let voters = config
        .voters()
        .iter()
        .map(|v| {
            let addr = (v.id != config.node_id)
                .then(|| v.socket_addr().ok())
                .flatten();
            (v.id, addr)
        })
        .collect();
    let metadata_root = config.effective_metadata_log_dir();
    // What DescribeQuorum v2 lists as each voter's endpoint: the first controller listener
    // name at the voter's host and port. A lone local voter has none.
    let listener_name = config.controller_listener_names.first().cloned();
    let endpoints = match listener_name {
        Some(name) => config
            .voters()
            .iter()
            .filter(|v| v.port != 0)
            .map(|v| (v.id, name.clone(), v.host.clone(), v.port))
            .collect(),
        None => Vec::new(),
    };
    ControllerSettings {
        node_id: config.node_id,
        voters,
        endpoints,
        metadata_dir: metadata_root.join("__cluster_metadata-0"),
        tick: RAFT_TICK,
        election_timeout: Duration::from_millis(config.controller_quorum_election_timeout_ms),
        broker_session_timeout: Duration::from_millis(config.broker_session_timeout_ms),
        broker_disconnect_fence: config
            .sluice_broker_disconnect_fence_ms
            .map(Duration::from_millis),
        delete_topic_enable: config.delete_topic_enable,
        partitions_max: config.sluice_broker_partitions_max,
        unclean_leader_election_enable: config.unclean_leader_election_enable,
        min_insync_replicas: config.min_insync_replicas,
        leader_imbalance_check_interval: config.auto_leader_rebalance_enable.then(|| {
            Duration::from_secs(
                u64::try_from(config.leader_imbalance_check_interval_seconds).unwrap_or(1),
            )
        }),
    }
}

fn agent_settings(
    config: &BrokerConfig,
    shard_count: usize,
    previous_broker_epoch: i64,
) -> AgentSettings {
    let advertised = config.advertised().first();
    AgentSettings {
        node_id: config.node_id,
        host: advertised
            .map(|l| l.host.clone())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string()),
        port: advertised.map_or(0, |l| i32::from(l.port)),
        rack: config.broker_rack.clone(),
        heartbeat_interval: Duration::from_millis(config.broker_heartbeat_interval_ms),
        shard_count,
        metadata_fetch_max_wait: Duration::from_millis(config.sluice_metadata_fetch_max_wait_ms),
        previous_broker_epoch,
    }
}

fn roles(config: &BrokerConfig) -> &'static str {
    match (config.is_broker(), config.is_controller()) {
        (true, true) => "broker,controller",
        (true, false) => "broker",
        _ => "controller",
    }
}

/// Waits for `count` events matching `wanted`; a failure event ends the wait with its message.
fn wait_for(
    events: &mpsc::Receiver<ShardEvent>,
    count: usize,
    wanted: impl Fn(&ShardEvent) -> bool,
) -> Result<(), String> {
    let mut seen = 0;
    while seen < count {
        match events.recv() {
            Ok(ShardEvent::Failed(shard, message)) => return Err(format!("{shard}: {message}")),
            Ok(event) if wanted(&event) => seen += 1,
            Ok(_) => {}
            Err(_) => return Err("every executor exited".to_string()),
        }
    }
    Ok(())
}

/// Forwards the first SIGINT/SIGTERM to the returned channel; a second one (while the first
/// shutdown runs) exits at once.
fn forward_signals(mut signals: Signals) -> mpsc::Receiver<()> {
    let (first, first_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut forever = signals.forever();
        let signal = forever.next();
        info!(?signal, "signal received");
        let _ = first.send(());
        if forever.next().is_some() {
            eprintln!("sluice: second signal, exiting immediately");
            std::process::exit(130);
        }
    });
    first_rx
}

/// Waits for `count` `Listening` events, or a stop signal. Ok(true): ready; Ok(false): stopped
/// before it was ready.
fn wait_for_start(
    events: &mpsc::Receiver<ShardEvent>,
    count: usize,
    stop_signal: &mpsc::Receiver<()>,
) -> Result<bool, String> {
    // Start-up only: a short poll of the signal between events.
    const SIGNAL_CHECK: Duration = Duration::from_millis(20);
    let mut seen = 0;
    while seen < count {
        match events.recv_timeout(SIGNAL_CHECK) {
            Ok(ShardEvent::Failed(shard, message)) => return Err(format!("{shard}: {message}")),
            Ok(ShardEvent::Listening(_)) => seen += 1,
            Ok(_) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if stop_signal.try_recv().is_ok() {
                    info!("stopped before the broker was ready");
                    return Ok(false);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("every executor exited".to_string())
            }
        }
    }
    Ok(true)
}

/// How long a graceful shutdown may take (connections drain for up to 10 s, a controlled
/// shutdown asks the controller for up to 2 s, logs flush) before the process gives up on it.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(60);

/// A stop must end the process in every state: a shutdown that has not finished by
/// `SHUTDOWN_DEADLINE` (a bug: some executor stopped making progress) exits non-zero, loudly,
/// rather than leave a process that ignores the signal it was sent.
fn arm_shutdown_deadline() {
    std::thread::spawn(|| {
        std::thread::sleep(SHUTDOWN_DEADLINE);
        error!(
            "shutdown did not finish within {} s; exiting without it",
            SHUTDOWN_DEADLINE.as_secs()
        );
        std::process::exit(1);
    });
}

fn listeners(config: &BrokerConfig) -> String {
    config
        .listeners
        .iter()
        .chain(config.controller_listener())
        .map(|l| format!("{}:{}", l.host, l.port))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Refuses to start when something already listens on the data listener's address. Every shard
/// binds it with SO_REUSEPORT (the kernel spreads connections over the shards), and that would
/// also let this process join another broker's socket on the same port, each taking part of the
/// connections. Kafka fails to start there; so does Sluice. The kernel's table of listening
/// sockets is read rather than a test bind tried: a plain bind also fails on the connections a
/// killed broker left closing on the port, which must not stop its restart.
fn check_listener_free(config: &BrokerConfig) -> Result<(), String> {
    let Some(listener) = config.listeners.first() else {
        return Ok(());
    };
    let addr = listener.socket_addr()?;
    if addr.port() == 0 {
        return Ok(());
    }
    // A killed broker's listening sockets outlive its process for a moment: its io_uring holds
    // them until the kernel tears the ring down after the exit. Its restart waits for that
    // (meanwhile a SO_REUSEPORT bind would succeed and share connections with a dying socket).
    let started = Instant::now();
    while port_listened_on(addr) {
        if started.elapsed() >= LISTENER_GONE_WAIT {
            return Err(format!(
                "cannot listen on {addr}: another process is listening on port {} (another broker?)",
                addr.port()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if started.elapsed() >= Duration::from_millis(10) {
        info!(
            "waited {} ms for an earlier listener on {addr} to close",
            started.elapsed().as_millis()
        );
    }
    Ok(())
}

/// How long a start waits for a listener on its port to go away.
const LISTENER_GONE_WAIT: Duration = Duration::from_secs(5);

/// Whether a socket listens on `addr`'s port at `addr`'s address or a wildcard one (or at any
/// address when `addr`'s is the wildcard).
fn port_listened_on(addr: SocketAddr) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| listening_sockets(&table))
        .any(|other| {
            other.port() == addr.port()
                && (other.ip() == addr.ip()
                    || other.ip().is_unspecified()
                    || addr.ip().is_unspecified())
        })
}

/// The local addresses of the sockets in LISTEN state in a `/proc/net/tcp{,6}` table. Each line:
/// `sl local_address rem_address st ...`, addresses as hex words in host byte order, then
/// `:PORT` in hex; state `0A` is LISTEN. Lines that do not parse are skipped.
fn listening_sockets(table: &str) -> Vec<SocketAddr> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (local, state) = (fields.get(1)?, fields.get(3)?);
            if *state != LISTEN {
                return None;
            }
            let (ip_hex, port_hex) = local.split_once(':')?;
            let port = u16::from_str_radix(port_hex, 16).ok()?;
            let words = (0..ip_hex.len() / 8)
                .map(|i| u32::from_str_radix(ip_hex.get(i * 8..i * 8 + 8)?, 16).ok())
                .collect::<Option<Vec<u32>>>()?;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
            let ip = match bytes.len() {
                4 => IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?),
                16 => IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?),
                _ => return None,
            };
            Some(SocketAddr::new(ip, port))
        })
        .collect()
}

/// Takes an exclusive lock on the data directory, as Kafka does with `.lock`, so two brokers
/// never write the same logs. Held until the process exits.
fn lock_data_dir(dir: &Path) -> Result<File, String> {
    let path = dir.join(".lock");
    let file = File::create(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "{} is locked by another process: another broker is using this data directory",
            dir.display()
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/net/tcp{,6}` print address words in host byte order: these lines are as a
    /// little-endian kernel writes them.
    #[cfg(target_endian = "little")]
    #[test]
    fn listening_sockets_are_read_from_the_kernel_tables() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:2384 0100007F:D2C4 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1
   2: 00000000:4B64 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   3: garbage";
        assert_eq!(
            listening_sockets(tcp),
            vec![
                "127.0.0.1:9092".parse::<SocketAddr>().unwrap(),
                "0.0.0.0:19300".parse().unwrap()
            ],
            "LISTEN lines only; the established one and the garbage are skipped"
        );
        let tcp6 =
            "  sl  local_address                         remote_address                        st
   0: 00000000000000000000000001000000:2384 00000000000000000000000000000000:0000 0A
   1: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A";
        assert_eq!(
            listening_sockets(tcp6),
            vec![
                "[::1]:9092".parse::<SocketAddr>().unwrap(),
                "[::]:8080".parse().unwrap()
            ]
        );
    }
}
