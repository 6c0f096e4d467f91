//! The controller listener's private RPC over TCP, on glommio: a pipelined client
//! ([`RpcClient`]) and the accept loop of the listener ([`serve`]).
//!
//! In KRaft, voters exchange Vote/BeginQuorumEpoch/Fetch and brokers send
//! BrokerRegistration/BrokerHeartbeat and forwarded admin requests to the active controller.
//! Here all of that travels as the frames of [`crate::rpc`] on the controller listener: raft-rs
//! messages one-way (Raft tolerates loss, so a full queue drops rather than blocks), everything
//! else as calls matched to their answers by correlation id. Many calls share one connection
//! and are answered as each is ready, so a broker's long-polling metadata fetch never holds up
//! its heartbeat.
//!
//! Everything is bounded: calls in flight per client (`in_flight_max`), queued one-way
//! messages per client, requests in flight per server connection, connections per listener,
//! and frame sizes ([`RPC_FRAME_BYTES_MAX`](crate::rpc::RPC_FRAME_BYTES_MAX)).
//!
//! Nothing lives forever unused: a server connection with no frame read and no request in
//! flight for its idle limit ([`SERVER_IDLE_LIMIT`]) is closed (its client connects again when
//! it next has something to send), and a client redials a peer that is down with an
//! exponential backoff, 50 ms doubling up to 1 s (Kafka's `reconnect.backoff.ms` and
//! `reconnect.backoff.max.ms`), back to 50 ms once a connect succeeds. Until a pause has passed,
//! calls and one-way messages to that peer fail at once with the connect's error (as Kafka's
//! inter-broker senders fail requests to a node in backoff), so a caller that can ask another
//! controller moves on instead of waiting out the pause.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::sync::{Semaphore, StaticPermit};
use glommio::Task;
use tracing::{debug, warn};

use crate::rpc::{split_frame, ControllerRequest, ControllerResponse, RpcError, ONE_WAY};

/// One-way frames a client queues while its connection is busy or being made; past it they are
/// dropped (Raft sends again).
pub const ONE_WAY_QUEUE_FRAMES: usize = 1024;

/// Bytes of one-way frames a client queues (raft-rs appends can be large).
const ONE_WAY_QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// How long a connect made only for one-way frames may take.
const ONE_WAY_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Pause after the first failed connect before the next (Kafka's `reconnect.backoff.ms`
/// default); it doubles with each failure in a row.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(50);

/// Longest pause between two connects (Kafka's `reconnect.backoff.max.ms` default).
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long a server connection may go without a frame read and with no request in flight
/// before it is closed. Brokers heartbeat every 2 s and voters talk far more often; what goes
/// quiet this long is a peer that moved on (or a socket left half-open by a vanished host).
pub const SERVER_IDLE_LIMIT: Duration = Duration::from_secs(60);

/// Requests handled or waiting to be written at once on one server connection; past it the
/// connection is not read (TCP pushes back on the peer).
pub const REQUESTS_IN_FLIGHT_MAX: usize = 64;

/// Bytes asked of the socket per read.
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// An idle read buffer larger than this is given back (one large frame should not pin its size
/// for the life of the connection).
const READ_BUFFER_RETAINED_BYTES: usize = 1024 * 1024;

/// Small frames are gathered up to this size into one write.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Pause after a failed accept (e.g. out of file descriptors), so the loop does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// The client of one controller listener: one TCP connection, made on first use and made
/// again after it fails. Lives on one executor (not `Send`); dropping it closes the
/// connection and stops its task.
pub struct RpcClient {
    shared: Rc<ClientShared>,
    /// The connection task; dropping the handle cancels it.
    _connection: Task<()>,
}

impl RpcClient {
    /// A client of the listener at `address`, with at most `in_flight_max` calls in flight
    /// (more callers wait for a slot). Spawns its connection task on the current executor,
    /// which only connects once there is something to send.
    ///
    /// # Panics
    ///
    /// Outside a glommio executor (the task cannot be spawned).
    pub fn new(address: SocketAddr, in_flight_max: usize) -> RpcClient {
        RpcClient::with_backoff(
            address,
            in_flight_max,
            Backoff::new(RECONNECT_BACKOFF, RECONNECT_BACKOFF_MAX),
        )
    }

    fn with_backoff(address: SocketAddr, in_flight_max: usize, backoff: Backoff) -> RpcClient {
        let shared = Rc::new(ClientShared {
            address,
            backoff: RefCell::new(backoff),
            backing_off: RefCell::new(None),
            connects: Cell::new(0),
            slots: Semaphore::new(in_flight_max.max(1) as u64),
            next_correlation_id: Cell::new(1),
            pending: RefCell::new(HashMap::new()),
            outbox: RefCell::new(Outbox::default()),
            wake: Notify::default(),
        });
        let connection = glommio::spawn_local(run_client(shared.clone()));
        RpcClient {
            shared,
            _connection: connection,
        }
    }

    /// The listener's address.
    pub fn address(&self) -> SocketAddr {
        self.shared.address
    }

    /// Sends `request` and waits for its answer, for at most `timeout` in all (waiting for a
    /// slot, connecting, the answer). If the connection fails meanwhile the call fails; the
    /// next call connects again — once the reconnect backoff after a failed connect has passed:
    /// until then calls fail at once with that connect's error.
    pub async fn call(
        &self,
        request: &ControllerRequest,
        timeout: Duration,
    ) -> Result<ControllerResponse, RpcError> {
        // The deadline only bounds the connect; an absurd timeout must not overflow it.
        let now = Instant::now();
        let deadline = now
            .checked_add(timeout)
            .unwrap_or(now + Duration::from_secs(86_400));
        futures_lite::future::or(self.call_until(request, deadline), async {
            glommio::timer::sleep(timeout).await;
            Err(RpcError::Timeout)
        })
        .await
    }

    /// Queues a one-way message (for Raft) without waiting. A full queue drops it and says so:
    /// the caller is never blocked, and Raft sends again.
    pub fn send_one_way(&self, request: ControllerRequest) -> Result<(), RpcError> {
        self.shared.check_backoff()?;
        let mut bytes = Vec::new();
        request.encode(ONE_WAY, &mut bytes)?;
        self.shared.outbox.borrow_mut().push_one_way(Outgoing {
            correlation_id: ONE_WAY,
            bytes,
            deadline: Instant::now() + ONE_WAY_CONNECT_TIMEOUT,
        })?;
        self.shared.wake.notify();
        Ok(())
    }

    async fn call_until(
        &self,
        request: &ControllerRequest,
        deadline: Instant,
    ) -> Result<ControllerResponse, RpcError> {
        let shared = &*self.shared;
        let _slot = shared
            .slots
            .acquire_permit(1)
            .await
            .map_err(|_| RpcError::Closed)?;
        shared.check_backoff()?;
        let correlation_id = shared.new_correlation_id();
        let mut bytes = Vec::new();
        request.encode(correlation_id, &mut bytes)?;
        let (reply, answer) = oneshot::channel();
        shared.pending.borrow_mut().insert(correlation_id, reply);
        // From here on, however this future ends (answer, timeout, caller gave up), the call
        // leaves no trace behind.
        let _pending = PendingCall {
            shared,
            correlation_id,
        };
        shared.outbox.borrow_mut().frames.push_back(Outgoing {
            correlation_id,
            bytes,
            deadline,
        });
        shared.wake.notify();
        answer.await.map_err(|_| RpcError::Closed)?
    }
}

/// What the client and its connection task share.
struct ClientShared {
    address: SocketAddr,
    /// Pauses between failed connects.
    backoff: RefCell<Backoff>,
    /// After a failed connect: until when no frame is taken, and the connect's error.
    backing_off: RefCell<Option<(Instant, RpcError)>>,
    /// Connects tried so far.
    connects: Cell<u64>,
    /// One permit per call in flight.
    slots: Semaphore,
    next_correlation_id: Cell<u32>,
    /// Calls waiting for their answer, by correlation id.
    pending: RefCell<HashMap<u32, oneshot::Sender<Result<ControllerResponse, RpcError>>>>,
    /// Frames not written yet.
    outbox: RefCell<Outbox>,
    /// Wakes the connection task when a frame is queued.
    wake: Notify,
}

impl ClientShared {
    /// The error of the last connect while its reconnect backoff lasts.
    fn check_backoff(&self) -> Result<(), RpcError> {
        let mut backing_off = self.backing_off.borrow_mut();
        match &*backing_off {
            Some((until, error)) if Instant::now() < *until => Err(for_each_caller(error)),
            Some(_) => {
                *backing_off = None;
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// A correlation id not in use: never [`ONE_WAY`], never one a call still waits on (after
    /// 2^32 calls the counter wraps).
    fn new_correlation_id(&self) -> u32 {
        let pending = self.pending.borrow();
        loop {
            let id = self.next_correlation_id.get();
            self.next_correlation_id.set(id.wrapping_add(1));
            if id != ONE_WAY && !pending.contains_key(&id) {
                return id;
            }
        }
    }

    /// Hands an answer to its call. A call that gave up already is not an error; an answer
    /// with the one-way id is (the peer speaks some other protocol).
    fn answer(&self, correlation_id: u32, response: ControllerResponse) -> Result<(), RpcError> {
        if correlation_id == ONE_WAY {
            return Err(RpcError::UnexpectedCorrelationId(correlation_id));
        }
        match self.pending.borrow_mut().remove(&correlation_id) {
            Some(reply) => {
                let _ = reply.send(Ok(response));
            }
            None => debug!(correlation_id, "answer to a call that gave up"),
        }
        Ok(())
    }

    /// The connection failed: every call waiting fails with the reason, and frames not
    /// written are dropped (calls fail, Raft sends again).
    fn fail_all(&self, error: &RpcError) {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (_, reply) in pending {
            let _ = reply.send(Err(for_each_caller(error)));
        }
        self.outbox.borrow_mut().clear();
    }
}

/// A copy of a connection's error for each call it fails (`io::Error` is not `Clone`).
fn for_each_caller(error: &RpcError) -> RpcError {
    match error {
        RpcError::Io(error) => RpcError::Io(std::io::Error::new(error.kind(), error.to_string())),
        RpcError::Closed => RpcError::Closed,
        RpcError::Timeout => RpcError::Timeout,
        other => RpcError::ConnectionLost(other.to_string()),
    }
}

/// Removes a call's traces when it ends, however it ends.
struct PendingCall<'a> {
    shared: &'a ClientShared,
    correlation_id: u32,
}

impl Drop for PendingCall<'_> {
    fn drop(&mut self) {
        self.shared
            .pending
            .borrow_mut()
            .remove(&self.correlation_id);
        // A frame still unwritten is withdrawn, so calls timing out against a stalled
        // connection do not pile up in the outbox.
        self.shared
            .outbox
            .borrow_mut()
            .withdraw(self.correlation_id);
    }
}

/// A frame waiting to be written.
struct Outgoing {
    correlation_id: u32,
    bytes: Vec<u8>,
    /// When its sender stops waiting; a connect made for it gives up then.
    deadline: Instant,
}

/// The client's frames not written yet, in order. Calls are bounded by the client's slots,
/// one-way frames by their own limits.
#[derive(Default)]
struct Outbox {
    frames: VecDeque<Outgoing>,
    one_way_frames: usize,
    one_way_bytes: usize,
}

impl Outbox {
    fn push_one_way(&mut self, frame: Outgoing) -> Result<(), RpcError> {
        if self.one_way_frames >= ONE_WAY_QUEUE_FRAMES
            || self.one_way_bytes + frame.bytes.len() > ONE_WAY_QUEUE_BYTES
        {
            return Err(RpcError::QueueFull);
        }
        self.one_way_frames += 1;
        self.one_way_bytes += frame.bytes.len();
        self.frames.push_back(frame);
        Ok(())
    }

    fn pop(&mut self) -> Option<Outgoing> {
        let frame = self.frames.pop_front()?;
        if frame.correlation_id == ONE_WAY {
            self.one_way_frames -= 1;
            self.one_way_bytes -= frame.bytes.len();
        }
        Some(frame)
    }

    fn withdraw(&mut self, correlation_id: u32) {
        if let Some(at) = self
            .frames
            .iter()
            .position(|frame| frame.correlation_id == correlation_id)
        {
            self.frames.remove(at);
        }
    }

    /// Moves queued frames into `batch`: at least one, then more while they fit in
    /// [`WRITE_BATCH_BYTES`].
    fn take_batch(&mut self, batch: &mut Vec<u8>) {
        while let Some(next) = self.frames.front() {
            if !batch.is_empty() && batch.len() + next.bytes.len() > WRITE_BATCH_BYTES {
                break;
            }
            let Some(frame) = self.pop() else { break };
            if batch.is_empty() {
                // A large frame moves as it is, not copied.
                *batch = frame.bytes;
            } else {
                batch.extend_from_slice(&frame.bytes);
            }
        }
    }

    /// The connect for the queued frames may take until the last of their senders gives up.
    fn connect_deadline(&self) -> Option<Instant> {
        self.frames.iter().map(|frame| frame.deadline).max()
    }

    fn clear(&mut self) {
        *self = Outbox::default();
    }
}

/// The client's connection task: connect when there is something to send, then write the
/// outbox and read answers until the connection fails; fail what was in flight; repeat.
async fn run_client(shared: Rc<ClientShared>) {
    loop {
        let deadline = wait_for_work(&shared).await;
        shared.connects.set(shared.connects.get() + 1);
        match connect(shared.address, deadline).await {
            Ok(stream) => {
                shared.backoff.borrow_mut().reset();
                let error = run_connection(&shared, stream).await;
                match &error {
                    RpcError::Io(_) | RpcError::Closed => {
                        debug!(address = %shared.address, %error, "controller RPC connection ended")
                    }
                    _ => {
                        warn!(address = %shared.address, %error, "closing controller RPC connection")
                    }
                }
                shared.fail_all(&error);
            }
            Err(error) => {
                debug!(address = %shared.address, %error, "controller RPC connect failed");
                shared.fail_all(&error);
                // Kafka's `reconnect.backoff.ms`, growing to `reconnect.backoff.max.ms`: a
                // dead peer is not dialled again for every Raft message queued to it, nor
                // 20 times a second for as long as it stays down. Meanwhile its callers fail
                // at once (`check_backoff`), so nothing is queued for the next connect yet.
                let pause = shared.backoff.borrow_mut().next_pause();
                *shared.backing_off.borrow_mut() = Some((Instant::now() + pause, error));
                glommio::timer::sleep(pause).await;
            }
        }
    }
}

/// Pauses between failed connects: `base`, doubling per failure in a row up to `max`.
#[derive(Clone, Copy, Debug)]
struct Backoff {
    base: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max,
            next: base.min(max),
        }
    }

    /// The pause after one more failure.
    fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// A connect succeeded: the next failure pauses `base` again.
    fn reset(&mut self) {
        self.next = self.base.min(self.max);
    }
}

/// Waits until a frame is queued; the deadline for connecting.
async fn wait_for_work(shared: &ClientShared) -> Instant {
    loop {
        if let Some(deadline) = shared.outbox.borrow().connect_deadline() {
            return deadline;
        }
        shared.wake.notified().await;
    }
}

async fn connect(address: SocketAddr, deadline: Instant) -> Result<TcpStream, RpcError> {
    // glommio refuses a zero timeout; the senders already gave up then, a failure is fine.
    let timeout = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let stream = TcpStream::connect_timeout(address, timeout)
        .await
        .map_err(std::io::Error::from)?;
    // Small frames (heartbeats, Raft messages) must not wait for Nagle.
    stream.set_nodelay(true).map_err(std::io::Error::from)?;
    Ok(stream)
}

/// Writes and reads until the connection fails; the reason.
async fn run_connection(shared: &ClientShared, stream: TcpStream) -> RpcError {
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    let ended = futures_lite::future::or(
        read_answers(shared, &mut reader),
        write_outbox(shared, &mut writer),
    )
    .await;
    match ended {
        Ok(never) => match never {},
        Err(error) => error,
    }
}

async fn read_answers<R: AsyncRead + Unpin>(
    shared: &ClientShared,
    reader: &mut R,
) -> Result<Infallible, RpcError> {
    let mut frames = FrameReader::default();
    loop {
        frames.fill(reader).await?;
        while let Some((correlation_id, response)) = frames.next(ControllerResponse::decode)? {
            shared.answer(correlation_id, response)?;
        }
    }
}

async fn write_outbox<W: AsyncWrite + Unpin>(
    shared: &ClientShared,
    writer: &mut W,
) -> Result<Infallible, RpcError> {
    let mut batch = Vec::new();
    loop {
        shared.outbox.borrow_mut().take_batch(&mut batch);
        if batch.is_empty() {
            shared.wake.notified().await;
            continue;
        }
        writer.write_all(&batch).await?;
        reuse_batch(&mut batch);
    }
}

/// Empties a write batch, giving back the memory of a large frame.
fn reuse_batch(batch: &mut Vec<u8>) {
    if batch.capacity() > 2 * WRITE_BATCH_BYTES {
        *batch = Vec::new();
    } else {
        batch.clear();
    }
}

/// Serves a request of the controller listener.
pub trait RpcHandler {
    /// The answer to `request`, or `None` for none. One-way requests (Raft) are handled one
    /// at a time in arrival order, so their handling should be quick; any answer to them is
    /// dropped. A call answered `None` leaves its caller waiting until its timeout.
    fn handle(
        &self,
        request: ControllerRequest,
    ) -> impl Future<Output = Option<ControllerResponse>>;

    /// A connection carried a request of broker `broker_id` itself (registration, heartbeat,
    /// metadata fetch) for the first time.
    fn broker_connected(&self, _broker_id: i32) {}

    /// A connection of broker `broker_id` (see `broker_connected`) ended: `by_peer` when its
    /// end closed it or the socket failed, not when this side closed it (idle, bad frame,
    /// shutdown).
    fn broker_disconnected(&self, _broker_id: i32, _by_peer: bool) {}
}

/// The controller listener's accept loop: serves each connection with `handler`, at most
/// `connections_max` at once (more are closed at once, with a log line); a connection with no
/// frame read and no request in flight for `idle_limit` ([`SERVER_IDLE_LIMIT`] in the broker)
/// is closed. Runs until dropped; dropping it closes the listener and every connection and
/// cancels the requests in progress.
pub async fn serve<H: RpcHandler + 'static>(
    listener: TcpListener,
    handler: Rc<H>,
    connections_max: usize,
    idle_limit: Duration,
) {
    let ended = Rc::new(RefCell::new(Vec::new()));
    // The connection tasks; dropping a handle cancels its task.
    let mut connections: HashMap<u64, Task<()>> = HashMap::new();
    let mut next_id = 0u64;
    loop {
        let stream = match listener.accept().await {
            Ok(stream) => stream,
            Err(error) => {
                warn!(%error, "controller listener accept failed; retrying");
                glommio::timer::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        for id in ended.borrow_mut().drain(..) {
            connections.remove(&id);
        }
        let peer = stream
            .peer_addr()
            .map(|address| address.to_string())
            .unwrap_or_else(|_| "?".to_string());
        if connections.len() >= connections_max {
            warn!(%peer, connections_max, "controller RPC connection refused: too many open");
            continue;
        }
        let _ = stream.set_nodelay(true);
        let end = ConnectionEnd {
            ended: ended.clone(),
            id: next_id,
        };
        let task = glommio::spawn_local(serve_connection(
            stream,
            handler.clone(),
            peer,
            end,
            idle_limit,
        ));
        connections.insert(next_id, task);
        next_id += 1;
    }
}

/// Tells the accept loop that a connection ended, so its task handle can go.
struct ConnectionEnd {
    ended: Rc<RefCell<Vec<u64>>>,
    id: u64,
}

impl Drop for ConnectionEnd {
    fn drop(&mut self) {
        self.ended.borrow_mut().push(self.id);
    }
}

/// One server connection's state.
struct Connection<H> {
    handler: Rc<H>,
    /// Answers ready to write.
    answers: Rc<Answers>,
    /// The tasks handling requests, by task number; dropped (cancelled) with the connection.
    handlers: RefCell<HashMap<u64, Task<()>>>,
    next_task: Cell<u64>,
    /// One permit per request handled or waiting to be written.
    slots: Rc<Semaphore>,
    /// When a frame was last read or answers last written: the idle clock's start.
    last_active: Cell<Instant>,
    /// A one-way request is being handled (in the reader, without a slot).
    handling_one_way: Cell<bool>,
    /// The broker whose own requests this connection carries, once one arrived.
    broker_id: Cell<Option<i32>>,
}

impl<H: RpcHandler> Connection<H> {
    /// Notes whose connection this is from a request naming its broker.
    fn identify(&self, request: &ControllerRequest) {
        let Some(broker_id) = request.broker_id() else {
            return;
        };
        match self.broker_id.get() {
            Some(known) if known == broker_id => {}
            known => {
                // A second broker id on one connection is odd but harmless: the connection
                // now stands for the newer one.
                if let Some(known) = known {
                    self.handler.broker_disconnected(known, false);
                }
                self.broker_id.set(Some(broker_id));
                self.handler.broker_connected(broker_id);
            }
        }
    }
}

impl<H> Connection<H> {
    fn touch(&self) {
        self.last_active.set(Instant::now());
    }

    /// Requests handled, or answers not written yet.
    fn busy(&self) -> bool {
        self.handling_one_way.get() || self.slots.available() < REQUESTS_IN_FLIGHT_MAX as u64
    }
}

/// Answers ready to write, pushed by the request tasks.
#[derive(Default)]
struct Answers {
    queue: RefCell<VecDeque<Answer>>,
    wake: Notify,
}

struct Answer {
    /// The task that made it (finished: pushing the answer is its last step).
    task: u64,
    /// The frame; `None` when there is nothing to send.
    frame: Option<Vec<u8>>,
    /// Held until the frame is written, so unread answers count against the bound.
    _slot: StaticPermit,
}

async fn serve_connection<H: RpcHandler + 'static>(
    stream: TcpStream,
    handler: Rc<H>,
    peer: String,
    _end: ConnectionEnd,
    idle_limit: Duration,
) {
    let (mut reader, mut writer) = futures_lite::io::split(stream);
    let connection = Connection {
        handler,
        answers: Rc::new(Answers::default()),
        handlers: RefCell::new(HashMap::new()),
        next_task: Cell::new(0),
        slots: Rc::new(Semaphore::new(REQUESTS_IN_FLIGHT_MAX as u64)),
        last_active: Cell::new(Instant::now()),
        handling_one_way: Cell::new(false),
        broker_id: Cell::new(None),
    };
    // Ok(None): idle; the reader and the writer only ever end with an error.
    let read = async { read_requests(&connection, &mut reader).await.map(Some) };
    let write = async { write_answers(&connection, &mut writer).await.map(Some) };
    let idle = async {
        idle_out(&connection, idle_limit).await;
        Ok(None)
    };
    let ended = futures_lite::future::or(read, futures_lite::future::or(write, idle)).await;
    if let Some(broker_id) = connection.broker_id.get() {
        let by_peer = matches!(ended, Err(RpcError::Closed) | Err(RpcError::Io(_)));
        connection.handler.broker_disconnected(broker_id, by_peer);
    }
    match ended {
        Ok(Some(never)) => match never {},
        Ok(None) => debug!(
            %peer,
            idle_ms = idle_limit.as_millis() as u64,
            "closing idle controller RPC connection"
        ),
        Err(RpcError::Closed) => debug!(%peer, "controller RPC connection closed"),
        Err(RpcError::Io(error)) => {
            debug!(%peer, %error, "controller RPC connection closed on socket error")
        }
        Err(error) => warn!(%peer, %error, "closing controller RPC connection: bad frame"),
    }
}

/// Returns once the connection has gone `limit` without a frame read or answers written and
/// with nothing in flight. One timer for the connection, reset in place.
async fn idle_out<H>(connection: &Connection<H>, limit: Duration) {
    let mut timer = glommio::timer::Timer::new(limit);
    loop {
        (&mut timer).await;
        let now = Instant::now();
        let idle_since = connection.last_active.get();
        let quiet_for = now.saturating_duration_since(idle_since);
        if quiet_for >= limit && !connection.busy() {
            return;
        }
        // Active since the timer was set: wait out the rest of a limit from that moment. Busy:
        // check again a limit later (the end of the work touches the clock, so the check
        // after it measures from then).
        let rest = if quiet_for >= limit {
            limit
        } else {
            limit - quiet_for
        };
        timer.reset(rest);
    }
}

async fn read_requests<H: RpcHandler + 'static, R: AsyncRead + Unpin>(
    connection: &Connection<H>,
    reader: &mut R,
) -> Result<Infallible, RpcError> {
    let mut frames = FrameReader::default();
    loop {
        while let Some((correlation_id, request)) = frames.next(ControllerRequest::decode)? {
            connection.touch();
            connection.identify(&request);
            if correlation_id == ONE_WAY {
                // Handled here, in arrival order: Raft tolerates lost messages, but reordered
                // ones only slow it down.
                connection.handling_one_way.set(true);
                let _ = connection.handler.handle(request).await;
                connection.handling_one_way.set(false);
                connection.touch();
                continue;
            }
            let slot = connection
                .slots
                .acquire_static_permit(1)
                .await
                .map_err(|_| RpcError::Closed)?;
            connection.spawn(correlation_id, request, slot);
        }
        frames.fill(reader).await?;
    }
}

impl<H: RpcHandler + 'static> Connection<H> {
    /// Handles a call in a task of its own, so a long poll does not hold up the requests
    /// behind it on this connection.
    fn spawn(&self, correlation_id: u32, request: ControllerRequest, slot: StaticPermit) {
        let task = self.next_task.get();
        self.next_task.set(task + 1);
        let handler = self.handler.clone();
        let answers = self.answers.clone();
        let handle = glommio::spawn_local(async move {
            let response = handler.handle(request).await;
            let frame = response.and_then(|response| encode_answer(&response, correlation_id));
            answers.queue.borrow_mut().push_back(Answer {
                task,
                frame,
                _slot: slot,
            });
            answers.wake.notify();
        });
        // `spawn_local` only queues the task, so its handle is in the map before the task can
        // finish and the writer remove it.
        self.handlers.borrow_mut().insert(task, handle);
    }
}

fn encode_answer(response: &ControllerResponse, correlation_id: u32) -> Option<Vec<u8>> {
    let mut frame = Vec::new();
    match response.encode(correlation_id, &mut frame) {
        Ok(()) => Some(frame),
        Err(error) => {
            warn!(correlation_id, %error, "controller RPC answer could not be sent");
            None
        }
    }
}

async fn write_answers<H, W: AsyncWrite + Unpin>(
    connection: &Connection<H>,
    writer: &mut W,
) -> Result<Infallible, RpcError> {
    let mut batch = Vec::new();
    let mut written = Vec::new();
    loop {
        gather_answers(connection, &mut batch, &mut written);
        if written.is_empty() {
            connection.answers.wake.notified().await;
            continue;
        }
        if !batch.is_empty() {
            writer.write_all(&batch).await?;
        }
        reuse_batch(&mut batch);
        // Frees their slots: the reader may take more requests.
        written.clear();
        connection.touch();
    }
}

/// Moves ready answers into `batch` (while they fit in [`WRITE_BATCH_BYTES`]), keeping each
/// answer's slot in `taken` until the batch is written.
fn gather_answers<H>(connection: &Connection<H>, batch: &mut Vec<u8>, taken: &mut Vec<Answer>) {
    let mut queue = connection.answers.queue.borrow_mut();
    while let Some(next) = queue.front() {
        let size = next.frame.as_ref().map_or(0, Vec::len);
        if !batch.is_empty() && batch.len() + size > WRITE_BATCH_BYTES {
            break;
        }
        let Some(mut answer) = queue.pop_front() else {
            break;
        };
        // Its task has finished; its handle can go.
        connection.handlers.borrow_mut().remove(&answer.task);
        if let Some(frame) = answer.frame.take() {
            if batch.is_empty() {
                *batch = frame;
            } else {
                batch.extend_from_slice(&frame);
            }
        }
        taken.push(answer);
    }
}

/// Reads a stream into whole frames. Holds at most one frame being assembled plus one read
/// chunk: a length over the limit is refused as soon as it is read.
#[derive(Default)]
struct FrameReader {
    buffer: Vec<u8>,
    /// Start of the bytes not consumed yet.
    start: usize,
    /// End of the bytes read.
    end: usize,
}

impl FrameReader {
    /// Decodes the next whole frame, if one is in.
    fn next<T>(&mut self, decode: fn(&[u8]) -> Result<T, RpcError>) -> Result<Option<T>, RpcError> {
        let Some((frame, consumed)) = split_frame(&self.buffer[self.start..self.end])? else {
            return Ok(None);
        };
        let value = decode(frame)?;
        self.start += consumed;
        Ok(Some(value))
    }

    /// Reads what the socket has. [`RpcError::Closed`] at the end of the stream.
    async fn fill<R: AsyncRead + Unpin>(&mut self, reader: &mut R) -> Result<(), RpcError> {
        self.make_room();
        let read = reader.read(&mut self.buffer[self.end..]).await?;
        if read == 0 {
            return Err(RpcError::Closed);
        }
        self.end += read;
        Ok(())
    }

    /// At least a read chunk free after `end`: moves the unconsumed bytes to the front, grows
    /// only if that is not enough (the buffer is zeroed once, not per read).
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buffer.len() > READ_BUFFER_RETAINED_BYTES {
                self.buffer = Vec::new();
            }
        }
        if self.buffer.len() - self.end >= READ_CHUNK_BYTES {
            return;
        }
        self.buffer.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if self.buffer.len() - self.end < READ_CHUNK_BYTES {
            self.buffer.resize(self.end + READ_CHUNK_BYTES, 0);
        }
    }
}

/// Wakes the one task that waits on it; a notification given while it is not waiting is kept
/// for its next wait (so a frame queued between its check and its wait is not missed).
#[derive(Default)]
struct Notify {
    notified: Cell<bool>,
    waiter: RefCell<Option<Waker>>,
}

impl Notify {
    fn notify(&self) {
        self.notified.set(true);
        if let Some(waker) = self.waiter.borrow_mut().take() {
            waker.wake();
        }
    }

    async fn notified(&self) {
        poll_fn(|cx| {
            if self.notified.replace(false) {
                return Poll::Ready(());
            }
            *self.waiter.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{HeartbeatState, MetadataEntry};
    use glommio::LocalExecutorBuilder;
    use sluice_shard::ProducerIdBlock;

    const LONG: Duration = Duration::from_secs(5);

    fn run<F, Fut>(test: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        LocalExecutorBuilder::default()
            .spawn(test)
            .unwrap()
            .join()
            .unwrap();
    }

    /// Answers heartbeats at once, producer-id requests after `(100 - broker_id) * 2` ms (so
    /// pipelined ones finish in reverse), metadata fetches after `max_wait_ms`; records Raft
    /// messages; never answers CreateTopics.
    #[derive(Default)]
    struct TestHandler {
        raft: RefCell<Vec<(i32, Vec<u8>)>>,
        finished: RefCell<Vec<i32>>,
    }

    impl RpcHandler for TestHandler {
        async fn handle(&self, request: ControllerRequest) -> Option<ControllerResponse> {
            match request {
                ControllerRequest::Raft {
                    from_node_id,
                    message,
                } => {
                    self.raft.borrow_mut().push((from_node_id, message));
                    None
                }
                ControllerRequest::BrokerHeartbeat { broker_id, .. } => {
                    Some(ControllerResponse::BrokerHeartbeat {
                        result: Ok(HeartbeatState {
                            is_caught_up: broker_id % 2 == 0,
                            is_fenced: false,
                            should_shut_down: false,
                        }),
                    })
                }
                ControllerRequest::AllocateProducerIds { broker_id } => {
                    let wait = (100 - broker_id.clamp(0, 100)) as u64 * 2;
                    glommio::timer::sleep(Duration::from_millis(wait)).await;
                    self.finished.borrow_mut().push(broker_id);
                    Some(ControllerResponse::AllocateProducerIds {
                        result: Ok(ProducerIdBlock {
                            first: i64::from(broker_id),
                            size: 1,
                        }),
                    })
                }
                ControllerRequest::FetchMetadata {
                    offset_after,
                    max_wait_ms,
                    ..
                } => {
                    glommio::timer::sleep(Duration::from_millis(u64::from(max_wait_ms))).await;
                    Some(ControllerResponse::FetchMetadata {
                        entries: vec![MetadataEntry {
                            index: offset_after + 1,
                            term: 1,
                            data: vec![9; 100],
                        }],
                        committed_index: offset_after + 1,
                        leader_id: 1,
                        snapshot_needed: false,
                    })
                }
                ControllerRequest::CreateTopics { .. } => None,
                _ => Some(ControllerResponse::NotController { leader_id: 7 }),
            }
        }
    }

    fn start_server(address: &str) -> (SocketAddr, Rc<TestHandler>, Task<()>) {
        let listener = TcpListener::bind(address).unwrap();
        let address = listener.local_addr().unwrap();
        let handler = Rc::new(TestHandler::default());
        let task = glommio::spawn_local(serve(listener, handler.clone(), 16, SERVER_IDLE_LIMIT));
        (address, handler, task)
    }

    fn heartbeat(broker_id: i32) -> ControllerRequest {
        ControllerRequest::BrokerHeartbeat {
            broker_id,
            broker_epoch: 1,
            current_metadata_offset: 0,
            want_fence: false,
            want_shut_down: false,
        }
    }

    fn assert_heartbeat_answer(response: ControllerResponse, broker_id: i32) {
        let ControllerResponse::BrokerHeartbeat { result: Ok(state) } = response else {
            panic!("unexpected answer {response:?}");
        };
        assert_eq!(state.is_caught_up, broker_id % 2 == 0);
    }

    #[test]
    fn call_round_trip() {
        run(|| async {
            let (address, _handler, _server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            for broker_id in 0..3 {
                let response = client.call(&heartbeat(broker_id), LONG).await.unwrap();
                assert_heartbeat_answer(response, broker_id);
            }
            let response = client
                .call(
                    &ControllerRequest::AllocateProducerIds { broker_id: 100 },
                    LONG,
                )
                .await
                .unwrap();
            assert!(matches!(
                response,
                ControllerResponse::AllocateProducerIds {
                    result: Ok(ProducerIdBlock { first: 100, .. })
                }
            ));
        });
    }

    #[test]
    fn pipelined_calls_answered_in_reverse_are_matched() {
        run(|| async {
            let (address, handler, _server) = start_server("127.0.0.1:0");
            let client = Rc::new(RpcClient::new(address, 128));
            let calls: Vec<_> = (0..100)
                .map(|broker_id| {
                    let client = client.clone();
                    glommio::spawn_local(async move {
                        let request = ControllerRequest::AllocateProducerIds { broker_id };
                        (broker_id, client.call(&request, LONG).await)
                    })
                })
                .collect();
            for call in calls {
                let (broker_id, response) = call.await;
                let Ok(ControllerResponse::AllocateProducerIds {
                    result: Ok(ProducerIdBlock { first, .. }),
                }) = response
                else {
                    panic!("unexpected answer {response:?}");
                };
                assert_eq!(first, i64::from(broker_id));
            }
            // They really were in flight together, and answered last-first.
            let finished = handler.finished.borrow();
            assert_eq!(finished.len(), 100);
            assert!(finished.first() > finished.last(), "{finished:?}");
        });
    }

    #[test]
    fn a_long_poll_does_not_delay_a_quick_call() {
        run(|| async {
            let (address, _handler, _server) = start_server("127.0.0.1:0");
            let client = Rc::new(RpcClient::new(address, 8));
            let started = Instant::now();
            let fetch = glommio::spawn_local({
                let client = client.clone();
                async move {
                    let request = ControllerRequest::FetchMetadata {
                        broker_id: 1,
                        offset_after: 41,
                        max_wait_ms: 1_500,
                        bytes_max: 1 << 20,
                    };
                    client.call(&request, LONG).await
                }
            });
            // Let the fetch go out first.
            glommio::timer::sleep(Duration::from_millis(50)).await;
            let response = client.call(&heartbeat(2), LONG).await.unwrap();
            assert_heartbeat_answer(response, 2);
            assert!(started.elapsed() < Duration::from_millis(1_000));
            let Ok(ControllerResponse::FetchMetadata { entries, .. }) = fetch.await else {
                panic!("fetch failed");
            };
            assert_eq!(entries[0].index, 42);
            assert!(started.elapsed() >= Duration::from_millis(1_500));
        });
    }

    #[test]
    fn one_way_messages_arrive_in_order() {
        run(|| async {
            let (address, handler, _server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            for i in 0..50u8 {
                let request = ControllerRequest::Raft {
                    from_node_id: 2,
                    message: vec![i; usize::from(i)],
                };
                client.send_one_way(request).unwrap();
            }
            let deadline = Instant::now() + LONG;
            while handler.raft.borrow().len() < 50 && Instant::now() < deadline {
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            let raft = handler.raft.borrow();
            assert_eq!(raft.len(), 50);
            for (i, (from, message)) in raft.iter().enumerate() {
                assert_eq!(*from, 2);
                assert_eq!(*message, vec![i as u8; i]);
            }
        });
    }

    #[test]
    fn a_full_one_way_queue_drops_instead_of_blocking() {
        run(|| async {
            let (address, handler, _server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            // No await in between: the connection task cannot drain the queue meanwhile.
            let mut refused = 0;
            for _ in 0..ONE_WAY_QUEUE_FRAMES + 10 {
                let request = ControllerRequest::Raft {
                    from_node_id: 1,
                    message: vec![1],
                };
                if let Err(error) = client.send_one_way(request) {
                    assert!(matches!(error, RpcError::QueueFull));
                    refused += 1;
                }
            }
            assert_eq!(refused, 10);
            let deadline = Instant::now() + LONG;
            while handler.raft.borrow().len() < ONE_WAY_QUEUE_FRAMES && Instant::now() < deadline {
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
            assert_eq!(handler.raft.borrow().len(), ONE_WAY_QUEUE_FRAMES);
            // Drained: the queue takes messages again.
            let request = ControllerRequest::Raft {
                from_node_id: 1,
                message: Vec::new(),
            };
            client.send_one_way(request).unwrap();
        });
    }

    #[test]
    fn an_unanswered_call_times_out_and_the_connection_lives_on() {
        run(|| async {
            let (address, _handler, _server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            let request = ControllerRequest::CreateTopics {
                topics: Vec::new(),
                validate_only: true,
            };
            let started = Instant::now();
            let result = client.call(&request, Duration::from_millis(200)).await;
            assert!(matches!(result, Err(RpcError::Timeout)), "{result:?}");
            assert!(started.elapsed() < Duration::from_millis(1_000));
            assert!(client.shared.pending.borrow().is_empty());
            let response = client.call(&heartbeat(4), LONG).await.unwrap();
            assert_heartbeat_answer(response, 4);
        });
    }

    /// Calls until a call is answered (a client in its reconnect backoff fails them at once).
    async fn call_until_answered(
        client: &RpcClient,
        request: &ControllerRequest,
    ) -> ControllerResponse {
        let started = Instant::now();
        loop {
            match client.call(request, LONG).await {
                Ok(response) => return response,
                Err(error) => {
                    assert!(started.elapsed() < LONG, "no answer: {error}");
                    glommio::timer::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    #[test]
    fn the_client_reconnects_after_a_server_restart() {
        run(|| async {
            let (address, _handler, server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            let response = client.call(&heartbeat(1), LONG).await.unwrap();
            assert_heartbeat_answer(response, 1);
            drop(server);
            // Let the client see its connection close.
            glommio::timer::sleep(Duration::from_millis(50)).await;
            let down = client.call(&heartbeat(1), Duration::from_millis(500)).await;
            assert!(down.is_err(), "{down:?}");
            let (_, _handler, _server) = start_server(&address.to_string());
            // Calls fail at once while the backoff after the refused connect lasts (50 ms),
            // then connect again.
            let started = Instant::now();
            let response = call_until_answered(&client, &heartbeat(3)).await;
            assert_heartbeat_answer(response, 3);
            assert!(started.elapsed() < Duration::from_millis(500));
        });
    }

    #[test]
    fn calls_fail_at_once_during_the_reconnect_backoff() {
        run(|| async {
            let address = {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap()
            };
            let backoff = Backoff::new(Duration::from_millis(300), Duration::from_secs(1));
            let client = RpcClient::with_backoff(address, 8, backoff);
            let refused = client.call(&heartbeat(1), LONG).await;
            assert!(matches!(refused, Err(RpcError::Io(_))), "{refused:?}");
            // Within the pause: no connect, the connect's error at once.
            let started = Instant::now();
            let during = client.call(&heartbeat(1), LONG).await;
            assert!(matches!(during, Err(RpcError::Io(_))), "{during:?}");
            assert!(started.elapsed() < Duration::from_millis(100));
            let one_way = client.send_one_way(ControllerRequest::Raft {
                from_node_id: 1,
                message: Vec::new(),
            });
            assert!(one_way.is_err(), "{one_way:?}");
            assert_eq!(client.shared.connects.get(), 1);
            assert!(client.shared.outbox.borrow().frames.is_empty());
            // The peer is back and the pause over: the next call connects.
            let listener = TcpListener::bind(address).unwrap();
            let handler = Rc::new(TestHandler::default());
            let _server = glommio::spawn_local(serve(listener, handler, 4, SERVER_IDLE_LIMIT));
            glommio::timer::sleep(Duration::from_millis(300)).await;
            let response = client.call(&heartbeat(2), LONG).await.unwrap();
            assert_heartbeat_answer(response, 2);
            assert_eq!(client.shared.connects.get(), 2);
        });
    }

    #[test]
    fn garbage_closes_only_its_own_connection() {
        run(|| async {
            let (address, _handler, _server) = start_server("127.0.0.1:0");
            let client = RpcClient::new(address, 8);
            client.call(&heartbeat(2), LONG).await.unwrap();
            let garbage: [&[u8]; 3] = [
                &[0xFF; 64],                              // a length over the limit
                &[0, 0, 0, 6, 0, 0, 0, 1, 0x55, 0],       // an unknown kind
                &[0, 0, 0, 9, 0, 0, 0, 1, 3, 0, 0, 0, 1], // a truncated heartbeat
            ];
            for bytes in garbage {
                let mut stream = TcpStream::connect(address).await.unwrap();
                stream.write_all(bytes).await.unwrap();
                let mut buffer = [0u8; 16];
                let read = futures_lite::future::or(
                    async { stream.read(&mut buffer).await.ok() },
                    async {
                        glommio::timer::sleep(LONG).await;
                        None
                    },
                )
                .await;
                assert_eq!(read, Some(0), "the server did not close the connection");
            }
            let response = client.call(&heartbeat(4), LONG).await.unwrap();
            assert_heartbeat_answer(response, 4);
            let fresh = RpcClient::new(address, 8);
            let response = fresh.call(&heartbeat(6), LONG).await.unwrap();
            assert_heartbeat_answer(response, 6);
        });
    }

    #[test]
    fn a_call_to_a_dead_port_fails_within_its_timeout() {
        run(|| async {
            let address = {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap()
            };
            let client = RpcClient::new(address, 8);
            let timeout = Duration::from_millis(300);
            for _ in 0..2 {
                let started = Instant::now();
                let result = client.call(&heartbeat(1), timeout).await;
                assert!(result.is_err(), "{result:?}");
                assert!(started.elapsed() < timeout + Duration::from_millis(200));
            }
            // The failed connects left nothing queued.
            assert!(client.shared.outbox.borrow().frames.is_empty());
            assert!(client.shared.pending.borrow().is_empty());
        });
    }

    /// Whether the server closes `stream` within `within` (a read sees the end of the stream).
    async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
        let mut buffer = [0u8; 16];
        let read = futures_lite::future::or(async { stream.read(&mut buffer).await.ok() }, async {
            glommio::timer::sleep(within).await;
            None
        })
        .await;
        read == Some(0)
    }

    #[test]
    fn idle_server_connections_are_closed_and_clients_reconnect() {
        run(|| async {
            let idle = Duration::from_millis(200);
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let handler = Rc::new(TestHandler::default());
            // One connection at a time: a silent socket holding the only place must go.
            let _server = glommio::spawn_local(serve(listener, handler, 1, idle));
            let started = Instant::now();
            let mut silent = TcpStream::connect(address).await.unwrap();
            assert!(
                closed_within(&mut silent, LONG).await,
                "a silent connection was not closed"
            );
            let took = started.elapsed();
            assert!(took >= idle, "closed after {took:?}, before its idle limit");
            assert!(took < idle * 5, "closed only after {took:?}");
            // The place is free again, for a real client.
            let client = RpcClient::new(address, 8);
            client.call(&heartbeat(2), LONG).await.unwrap();
            // A call in flight longer than the limit is not cut.
            let request = ControllerRequest::FetchMetadata {
                broker_id: 1,
                offset_after: 1,
                max_wait_ms: 3 * idle.as_millis() as u32,
                bytes_max: 1 << 20,
            };
            let response = client.call(&request, LONG).await.unwrap();
            assert!(matches!(response, ControllerResponse::FetchMetadata { .. }));
            // Left idle, the client's connection is closed; its next call connects again.
            let connects = client.shared.connects.get();
            glommio::timer::sleep(idle * 3).await;
            client.call(&heartbeat(4), LONG).await.unwrap();
            assert_eq!(
                client.shared.connects.get(),
                connects + 1,
                "no new connection"
            );
        });
    }

    #[test]
    fn backoff_doubles_to_its_max_and_resets() {
        let mut backoff = Backoff::new(RECONNECT_BACKOFF, RECONNECT_BACKOFF_MAX);
        let pauses: Vec<u128> = (0..7).map(|_| backoff.next_pause().as_millis()).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1_000, 1_000]);
        backoff.reset();
        assert_eq!(backoff.next_pause(), RECONNECT_BACKOFF);
    }

    #[test]
    fn a_dead_peer_is_redialled_with_a_growing_backoff() {
        run(|| async {
            let address = {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                listener.local_addr().unwrap()
            };
            // Pauses of 5, 10, 20, 40 then 80 ms: connects at about 0, 5, 15, 35, 75, 155,
            // 235, 315, 395, 475 ms of a 500 ms window, ten in all; at a flat 5 ms it would be
            // a hundred.
            let base = Duration::from_millis(5);
            let backoff = Backoff::new(base, Duration::from_millis(80));
            let client = RpcClient::with_backoff(address, 8, backoff);
            let window = Duration::from_millis(500);
            let started = Instant::now();
            // Always something to send, so every pause ends in a connect.
            while started.elapsed() < window {
                let _ = client.send_one_way(ControllerRequest::Raft {
                    from_node_id: 1,
                    message: vec![1],
                });
                glommio::timer::sleep(Duration::from_millis(1)).await;
            }
            let connects = client.shared.connects.get();
            assert!(
                (6..=13).contains(&connects),
                "{connects} connects in {window:?}"
            );
            // The peer comes back: a successful connect resets the backoff.
            let listener = TcpListener::bind(address).unwrap();
            let handler = Rc::new(TestHandler::default());
            let _server = glommio::spawn_local(serve(listener, handler, 4, SERVER_IDLE_LIMIT));
            call_until_answered(&client, &heartbeat(2)).await;
            assert_eq!(client.shared.backoff.borrow().next, base);
        });
    }

    #[test]
    fn the_server_refuses_connections_past_its_limit() {
        run(|| async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let handler = Rc::new(TestHandler::default());
            let _server = glommio::spawn_local(serve(listener, handler, 1, SERVER_IDLE_LIMIT));
            let first = RpcClient::new(address, 8);
            first.call(&heartbeat(2), LONG).await.unwrap();
            let second = RpcClient::new(address, 8);
            let refused = second.call(&heartbeat(2), LONG).await;
            assert!(refused.is_err(), "{refused:?}");
            // The first one is unaffected.
            first.call(&heartbeat(2), LONG).await.unwrap();
        });
    }
}
