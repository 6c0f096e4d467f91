//! One client connection: read size-prefixed frames, handle each request in order, write each
//! response in request order.
//!
//! Requests are read ahead (a client may pipeline many: they wait in the read buffer, which
//! holds at most the frame being assembled plus one read chunk), but handled one at a time, as
//! Kafka does:
//! that keeps a producer's batches to a partition in the order it sent them, which idempotence
//! and `max.in.flight.requests.per.connection` > 1 rely on.
//!
//! A connection is accepted by whichever shard the kernel picks (SO_REUSEPORT). The first
//! group request on it (a consumer's coordinator connection: Java and librdkafka open one for
//! the group alone) may move it to the shard that coordinates that group, at that request's
//! boundary: with nothing in flight, the socket and the unhandled bytes go over the mesh, and
//! every later request of the group is served without a hop between cores. A connection moves
//! at most once, so one that serves many groups (an admin tool) never bounces.
//!
//! Kafka's `connections.max.idle.ms`: a connection that sends no request for that long is
//! closed. The idle clock starts when the connection is served (accepted or adopted) and again
//! each time a request has been handled and its response written; it runs only while the
//! connection waits for bytes, so the time a request takes (a long-poll Fetch) never counts.
//! Bytes of an incomplete frame do not restart it: a request must arrive whole within the
//! limit, so a trickle of bytes cannot pin a read buffer forever. One timer per connection,
//! reset after each request, is raced against the read wait (no allocation per request).
//! Accepted sockets also get SO_KEEPALIVE, as in Kafka, so the kernel notices a peer host that
//! vanished without a FIN even when the idle limit is off.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use glommio::timer::Timer;
use sluice_protocol::{ProtocolError, Segment};
use sluice_shard::{ConnectionHandoff, ShardId, ShardMessage};
use tracing::{debug, info, warn};

use crate::context::ShardContext;
use crate::dispatch::{dispatch, Outcome};
use crate::fetch_home::{self, FetchHome};
use crate::frame_buffer::{FillError, FrameBuffer};
use crate::group_router::{self, ConnectionHome};
use crate::socket_io;

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Socket error.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
    /// A frame size that is negative or over `socket.request.max.bytes`.
    #[error("{0}")]
    FrameSize(#[from] ProtocolError),
    /// The request could not be answered (see the log line before).
    #[error("request could not be answered; closing")]
    Unanswerable,
}

impl From<FillError> for ConnectionError {
    fn from(error: FillError) -> Self {
        match error {
            FillError::Io(error) => Self::Io(error),
            FillError::Frame(error) => Self::FrameSize(error),
        }
    }
}

/// Where a connection came from.
pub enum Origin {
    /// Accepted by this shard's listener; it may still move to its group's coordinator.
    Accepted,
    /// Handed over by another shard, with the bytes it had read and not handled (they start
    /// at a frame); it stays here.
    HandedOver(Bytes),
}

/// How serving a connection ended without an error.
enum Ended {
    /// The client closed it, or the broker is shutting down.
    Closed,
    /// No request came for `connections.max.idle.ms`.
    Idle,
    /// It belongs on `shard`: move it there, starting with `frame` (unhandled).
    MoveTo(ShardId, Bytes, MoveReason),
}

/// Why a connection moves.
#[derive(Clone, Copy, Debug)]
enum MoveReason {
    /// Its group is coordinated there (`group_router::connection_home`).
    Group,
    /// A follower's: its partitions are owned there (`fetch_home`).
    ReplicaFetch,
}

/// Serves `stream` as a task of the shard's connection gate (which shutdown waits for).
pub fn spawn(ctx: &Rc<ShardContext>, stream: TcpStream, origin: Origin) {
    let task_ctx = ctx.clone();
    match ctx
        .connections
        .spawn(async move { serve(task_ctx, stream, origin).await })
    {
        Ok(task) => drop(task.detach()),
        Err(error) => warn!(%error, "connection refused: shard is closing"),
    }
}

/// Takes over a connection another shard handed over.
pub fn adopt(ctx: &Rc<ShardContext>, handoff: ConnectionHandoff) {
    // SAFETY: the descriptor comes out of an `OwnedFd`, so it is open and nothing else owns
    // it; the stream takes that ownership.
    let stream = unsafe { TcpStream::from_raw_fd(handoff.socket.into_raw_fd()) };
    let origin = if handoff.placed {
        Origin::Accepted
    } else {
        Origin::HandedOver(handoff.buffered)
    };
    spawn(ctx, stream, origin);
}

/// Hands a connection just accepted, before reading from it, to `shard`, whose turn it is to
/// serve one (`ShardMesh::next_connection_shard`).
pub async fn place(ctx: &Rc<ShardContext>, stream: TcpStream, shard: ShardId) {
    let Some(socket) = duplicate_socket(stream).await else {
        return;
    };
    let handoff = ConnectionHandoff {
        socket,
        buffered: Bytes::new(),
        placed: true,
    };
    if let Err(error) = ctx
        .mesh
        .send_to_shard(shard, ShardMessage::AdoptConnection(handoff))
        .await
    {
        warn!(%error, "cannot hand a new connection to its shard; closed");
    }
}

/// The socket as an owned descriptor that can cross to another shard: glommio's stream cannot
/// give its descriptor up, so the socket travels as a duplicate, and dropping the stream then
/// closes only its own descriptor (no shutdown of the socket). None (the stream closed) when
/// the descriptor cannot be duplicated.
async fn duplicate_socket(mut stream: TcpStream) -> Option<OwnedFd> {
    // SAFETY: the stream is alive for this borrow.
    match unsafe { BorrowedFd::borrow_raw(stream.as_raw_fd()) }.try_clone_to_owned() {
        Ok(socket) => {
            drop(stream);
            Some(socket)
        }
        Err(error) => {
            warn!(%error, "cannot duplicate a socket to move it; closing the connection");
            let _ = stream.close().await;
            None
        }
    }
}

/// The congestion control of a connection whose peer is another host: the listener gave every
/// accepted socket `sluice.loopback.tcp.congestion.control` (`socket_io::bind_listener`: a
/// loopback path has no bottleneck, and BBR's pacing timer cost the broker more than half its
/// CPU in loopback reads; ARCHITECTURE.md, "Loopback connections use reno, born with it"), so
/// this one is given the host's default back.
fn set_congestion_control_for_peer(
    ctx: &ShardContext,
    stream: &TcpStream,
    remote: Option<SocketAddr>,
    peer: &str,
) {
    let loopback = &ctx.config.sluice_loopback_tcp_congestion_control;
    if loopback.is_empty() {
        return;
    }
    let (Ok(local), Some(remote)) = (stream.local_addr(), remote) else {
        return;
    };
    if socket_io::is_loopback_path(local.ip(), remote.ip()) {
        return;
    }
    let Some(host) = socket_io::host_congestion_control() else {
        return;
    };
    if host == loopback {
        return;
    }
    if let Err(error) = socket_io::set_congestion_control(stream.as_raw_fd(), host) {
        debug!(%peer, %error, congestion_control = %host, "cannot give the connection the host's congestion control");
    }
}

/// Serves one connection until the client closes it, an error, shutdown, or a move.
async fn serve(ctx: Rc<ShardContext>, mut stream: TcpStream, origin: Origin) {
    let remote = stream.peer_addr().ok();
    let peer = remote.map_or_else(|| "?".to_string(), |a| a.to_string());
    let _ = stream.set_nodelay(true);
    // A handed-over socket is the same socket (a duplicated descriptor): setting it again is
    // harmless, and keeps this independent of where the connection was accepted.
    let (send_bytes, receive_bytes) = (
        ctx.config.socket_send_buffer_bytes,
        ctx.config.socket_receive_buffer_bytes,
    );
    if let Err(error) = socket_io::set_buffer_sizes(stream.as_raw_fd(), send_bytes, receive_bytes) {
        debug!(%peer, %error, "cannot set the socket's buffer sizes");
    }
    set_congestion_control_for_peer(&ctx, &stream, remote, &peer);
    if let Err(error) = socket_io::set_keepalive(&stream) {
        debug!(%peer, %error, "cannot set SO_KEEPALIVE");
    }
    let client_host = remote.map_or_else(|| "/".to_string(), |a| format!("/{}", a.ip()));
    let mut reader = FrameBuffer::new(ctx.config.socket_request_max_bytes as usize);
    let may_move = match origin {
        Origin::Accepted => true,
        Origin::HandedOver(buffered) => {
            reader.extend_from_slice(&buffered);
            false
        }
    };
    let idle_limit = idle_limit(ctx.config.connections_max_idle_ms);
    let counted = ctx.metrics.as_ref().map(|m| m.connection());
    let ended = serve_frames(
        &ctx,
        &mut stream,
        &mut reader,
        &client_host,
        may_move,
        idle_limit,
    )
    .await;
    drop(counted);
    match ended {
        Ok(Ended::Closed) => debug!(%peer, "connection closed"),
        Ok(Ended::Idle) => debug!(
            %peer,
            idle_ms = ctx.config.connections_max_idle_ms,
            "closing connection: no request for connections.max.idle.ms"
        ),
        Ok(Ended::MoveTo(shard, frame, reason)) => {
            match reason {
                MoveReason::Group => {
                    debug!(%peer, from = %ctx.shard_id, to = %shard, "connection moves to its group's coordinator shard")
                }
                MoveReason::ReplicaFetch => {
                    debug!(%peer, from = %ctx.shard_id, to = %shard, "follower connection moves to its partitions' shard")
                }
            }
            return hand_over(&ctx, stream, shard, frame, reader).await;
        }
        Err(ConnectionError::Io(error)) => {
            debug!(%peer, %error, "connection closed on socket error")
        }
        Err(error) => info!(%peer, %error, "closing connection"),
    }
    let _ = stream.close().await;
}

/// `connections.max.idle.ms` as a duration; None (no limit) when negative.
fn idle_limit(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// What ended a wait for bytes.
enum Woken {
    Read(Result<bool, ConnectionError>),
    Shutdown,
    Idle,
}

async fn serve_frames(
    ctx: &ShardContext,
    stream: &mut TcpStream,
    reader: &mut FrameBuffer,
    client_host: &str,
    mut may_move: bool,
    idle_limit: Option<Duration>,
) -> Result<Ended, ConnectionError> {
    // The idle clock: charged for `idle_limit` now and after each request, raced only against
    // the waits for bytes. One timer for the connection's life, reset in place.
    let mut idle = idle_limit.map(Timer::new);
    // Whether a Fetch told whose connection this is (a follower's, or a consumer's).
    let mut fetch_judged = false;
    loop {
        let frame = if let Some(frame) = reader.take_frame()? {
            frame
        } else {
            let read = async {
                Woken::Read(
                    reader
                        .fill(stream)
                        .await
                        .map(|n| n > 0)
                        .map_err(ConnectionError::from),
                )
            };
            let shutdown = async {
                ctx.shutdown.wait().await;
                Woken::Shutdown
            };
            let idle_out = async {
                match idle.as_mut() {
                    Some(timer) => {
                        timer.await;
                        Woken::Idle
                    }
                    None => std::future::pending().await,
                }
            };
            match futures_lite::future::or(read, futures_lite::future::or(shutdown, idle_out)).await
            {
                Woken::Shutdown => return Ok(Ended::Closed),
                Woken::Idle => return Ok(Ended::Idle),
                Woken::Read(Ok(true)) => continue,
                Woken::Read(Ok(false)) => return Ok(Ended::Closed),
                Woken::Read(Err(error)) => return Err(error),
            }
        };
        if may_move && !ctx.shutdown.is_triggered() {
            let (home, reason) = if !fetch_judged && fetch_home::is_fetch(&frame) {
                let home = match fetch_home::fetch_home(ctx, &frame) {
                    FetchHome::NotReplica => {
                        fetch_judged = true;
                        ConnectionHome::Undecided
                    }
                    FetchHome::Unknown => ConnectionHome::Undecided,
                    FetchHome::Decided(home) => home,
                };
                (home, MoveReason::ReplicaFetch)
            } else {
                (
                    group_router::connection_home(ctx, &frame),
                    MoveReason::Group,
                )
            };
            match home {
                ConnectionHome::Undecided => {}
                ConnectionHome::Here => may_move = false,
                ConnectionHome::Shard(shard) => {
                    return Ok(Ended::MoveTo(shard, frame.freeze(), reason))
                }
            }
        }
        // Counted from the frame read to the response written, however it ends.
        let request = ctx.metrics.as_ref().map(|m| (m, m.request(&frame)));
        match dispatch(ctx, frame, client_host).await {
            Outcome::Respond(segments) => {
                socket_io::write_segments(stream, &segments).await?;
                if let Some((metrics, _)) = &request {
                    let sendfile_bytes = segments
                        .iter()
                        .filter(|s| matches!(s, Segment::File(_)))
                        .map(Segment::len)
                        .sum();
                    metrics
                        .response_written(segments.iter().map(Segment::len).sum(), sendfile_bytes);
                }
            }
            Outcome::NoResponse => {}
            Outcome::Close => return Err(ConnectionError::Unanswerable),
        }
        drop(request);
        if ctx.shutdown.is_triggered() && !reader.has_frame()? {
            return Ok(Ended::Closed);
        }
        // The request is answered: the connection is idle from here until the next one.
        if let (Some(timer), Some(limit)) = (idle.as_mut(), idle_limit) {
            timer.reset(limit);
        }
        // Pipelined requests answered without waiting (from the tail cache, say) must not keep
        // the executor from its other connections and timers.
        glommio::yield_if_needed().await;
    }
}

/// Sends the connection to `shard`: its socket, then `frame` (not handled yet) and whatever
/// was read after it. Every earlier request has been answered and nothing is in flight, so the
/// other shard continues exactly where this one stopped. If the move fails the socket is
/// closed with the message, and the client reconnects as after any lost connection.
async fn hand_over(
    ctx: &ShardContext,
    stream: TcpStream,
    shard: ShardId,
    frame: Bytes,
    reader: FrameBuffer,
) {
    let Some(socket) = duplicate_socket(stream).await else {
        return;
    };
    let mut buffered = BytesMut::with_capacity(4 + frame.len() + reader.buffered().len());
    // The frame passed the size check when it was read, so its length fits.
    buffered.put_u32(frame.len() as u32);
    buffered.extend_from_slice(&frame);
    buffered.extend_from_slice(reader.buffered());
    let handoff = ConnectionHandoff {
        socket,
        buffered: buffered.freeze(),
        placed: false,
    };
    if let Err(error) = ctx
        .mesh
        .send_to_shard(shard, ShardMessage::AdoptConnection(handoff))
        .await
    {
        warn!(%error, "cannot move a connection to its group's coordinator shard; closed");
    }
}
