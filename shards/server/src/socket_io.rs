//! Socket reads and writes that glommio's stream does not offer: a read into the spare capacity
//! of the frame buffer (no zero-filling per read) and a gathering write of response segments
//! (record data goes out from the log's buffers without being copied into the response, or
//! from the segment file itself with `sendfile`).
//!
//! Both try the non-blocking system call first and fall back to glommio only to wait: `peek` of
//! one byte waits for readability, `write_all` of the current segment waits for writability.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, RawFd};
use std::sync::OnceLock;

use bytes::BytesMut;
use futures_lite::AsyncWriteExt;
use glommio::net::{TcpListener, TcpStream};
use sluice_protocol::{FileRegion, Segment};
use socket2::{Domain, Protocol, Socket, Type};

/// Segments gathered per system call (well under IOV_MAX).
const IOVECS_MAX: usize = 64;

/// Reads at least one byte: at most `limit` into `buf`'s spare capacity (the caller made room),
/// and once that is full, on into `after` in the same system call. Returns the bytes read into
/// each; (0, 0) at end of stream.
pub async fn read_into(
    stream: &TcpStream,
    buf: &mut BytesMut,
    limit: usize,
    after: &mut [u8],
) -> io::Result<(usize, usize)> {
    loop {
        let spare = buf.spare_capacity_mut();
        let room = limit.min(spare.len());
        let spare = &mut spare[..room];
        assert!(!spare.is_empty(), "read_into without room to read into");
        let iovecs = [
            libc::iovec {
                iov_base: spare.as_mut_ptr().cast(),
                iov_len: spare.len(),
            },
            libc::iovec {
                iov_base: after.as_mut_ptr().cast(),
                iov_len: after.len(),
            },
        ];
        // SAFETY: an all-zero msghdr is valid (no name, no control data).
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_iov = iovecs.as_ptr().cast_mut();
        message.msg_iovlen = if after.is_empty() { 1 } else { 2 };
        // SAFETY: recvmsg writes at most each iovec's length into memory we own and borrow
        // mutably here; `set_len` below covers exactly the bytes it reports for the first.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut message, libc::MSG_DONTWAIT) };
        if n >= 0 {
            let n = n as usize;
            let into_buf = n.min(spare.len());
            // SAFETY: the kernel initialised these bytes (it fills the first iovec first).
            unsafe { buf.set_len(buf.len() + into_buf) };
            return Ok((into_buf, n - into_buf));
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::WouldBlock => {
                // Wait until readable without consuming anything.
                let mut probe = [0u8; 1];
                if stream.peek(&mut probe).await? == 0 {
                    return Ok((0, 0));
                }
            }
            io::ErrorKind::Interrupted => {}
            _ => return Err(error),
        }
    }
}

/// Kafka's `socket.send.buffer.bytes` and `socket.receive.buffer.bytes` on one connection:
/// SO_SNDBUF and SO_RCVBUF, each only when it is not -1 (the kernel's autotuning).
pub fn set_buffer_sizes(fd: RawFd, send_bytes: i32, receive_bytes: i32) -> io::Result<()> {
    for (option, bytes) in [
        (libc::SO_SNDBUF, send_bytes),
        (libc::SO_RCVBUF, receive_bytes),
    ] {
        if bytes != -1 {
            set_socket_option(fd, option, bytes)?;
        }
    }
    Ok(())
}

/// Whether a connection between `local` and `peer` runs over the loopback interface: a
/// loopback peer, or this host's own address on both ends (the kernel routes it through `lo`).
pub fn is_loopback_path(local: IpAddr, peer: IpAddr) -> bool {
    let peer = peer.to_canonical();
    peer.is_loopback() || peer == local.to_canonical()
}

/// Binds a client listener as glommio's `TcpListener::bind` does (SO_REUSEPORT, so that every
/// shard listens on the address; a backlog of 1,024), with `TCP_CONGESTION` = `congestion_control`
/// set before `listen` unless it is empty. An accepted socket is born with its listener's
/// congestion control, and only being born with it keeps the host's default out: BBR's start
/// marks a socket as pacing itself (a timer and a softirq per burst) and a later switch to reno
/// leaves the mark, so the switch after `accept` that Sluice made before paced on (the
/// Java consumer's loopback reads: `bench/results/2026-12-07-born-reno-ab.md`). A connection
/// from another host is given the host's default back ([`host_congestion_control`]). A name
/// this host lacks, or may not set, leaves the listener with the host's default, logged once
/// per listener (each shard binds its own).
pub fn bind_listener(addr: SocketAddr, congestion_control: &str) -> io::Result<TcpListener> {
    let domain = if addr.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_port(true)?;
    if !congestion_control.is_empty() {
        if let Err(error) = set_congestion_control(socket.as_raw_fd(), congestion_control) {
            tracing::warn!(%error, %congestion_control, "cannot set the listener's TCP congestion control; loopback connections keep the host's");
        }
    }
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    // SAFETY: the descriptor is a bound, listening TCP socket that nothing else owns from here.
    Ok(unsafe { TcpListener::from_raw_fd(socket.into_raw_fd()) })
}

/// `TCP_CONGESTION` = `name` on one socket. A name this host lacks, or may not set, fails here
/// (ENOENT, EPERM).
pub fn set_congestion_control(fd: RawFd, name: &str) -> io::Result<()> {
    set_option(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_bytes())
}

/// The `TCP_CONGESTION` of one socket.
pub fn congestion_control_of(fd: RawFd) -> io::Result<String> {
    // TCP_CA_NAME_MAX is 16.
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into a live local.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let len = (len as usize).min(name.len());
    let end = name[..len].iter().position(|&b| b == 0).unwrap_or(len);
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// This host's default TCP congestion control (`net.ipv4.tcp_congestion_control` of the
/// broker's network namespace), read once from a new socket; `None` if no socket can say.
pub fn host_congestion_control() -> Option<&'static str> {
    static HOST: OnceLock<Option<String>> = OnceLock::new();
    HOST.get_or_init(|| {
        [Domain::IPV4, Domain::IPV6].into_iter().find_map(|domain| {
            let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP)).ok()?;
            congestion_control_of(socket.as_raw_fd()).ok()
        })
    })
    .as_deref()
}

/// Turns on SO_KEEPALIVE (with the kernel's probe timings), as Kafka does for accepted
/// sockets: a peer host that vanished without a FIN is noticed even on an idle connection.
pub fn set_keepalive(stream: &TcpStream) -> io::Result<()> {
    set_socket_option(stream.as_raw_fd(), libc::SO_KEEPALIVE, 1)
}

/// Sets one integer `SOL_SOCKET` option of `fd`.
fn set_socket_option(fd: RawFd, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    set_option(fd, libc::SOL_SOCKET, option, &value.to_ne_bytes())
}

/// `setsockopt(fd, level, option)` with `value`'s bytes.
fn set_option(fd: RawFd, level: libc::c_int, option: libc::c_int, value: &[u8]) -> io::Result<()> {
    // SAFETY: setsockopt reads `value.len()` bytes from a live slice; no other memory.
    let result = unsafe {
        libc::setsockopt(
            fd,
            level,
            option,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes every segment, in order: runs of bytes gathered up to `IOVECS_MAX` per `sendmsg`,
/// file regions with `sendfile` (the page cache's pages go to the socket without a copy into
/// user space, as Kafka's `FileRecords.writeTo`).
pub async fn write_segments(stream: &mut TcpStream, segments: &[Segment]) -> io::Result<()> {
    // Once per response, not per region: a fetch of 1,000 partitions sends dozens of regions.
    if segments.iter().any(|s| matches!(s, Segment::File(_))) {
        set_nonblocking(stream.as_raw_fd())?;
    }
    let mut start = 0;
    while start < segments.len() {
        let end = segments[start..]
            .iter()
            .position(|s| matches!(s, Segment::File(_)))
            .map_or(segments.len(), |i| start + i);
        if end > start {
            // MSG_MORE before a region: its header and its first pages leave in one packet.
            let more = end < segments.len();
            write_gathered(stream, &segments[start..end], more).await?;
        }
        if let Some(Segment::File(region)) = segments.get(end) {
            send_region(stream, region).await?;
        }
        start = end + 1;
    }
    Ok(())
}

/// The bytes of a `Segment::Bytes` (runs given to [`write_gathered`] hold no regions).
fn bytes_of(segment: &Segment) -> &[u8] {
    match segment {
        Segment::Bytes(b) => b,
        Segment::File(_) => unreachable!("a run of bytes segments holds no region"),
    }
}

async fn write_gathered(
    stream: &mut TcpStream,
    segments: &[Segment],
    more: bool,
) -> io::Result<()> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    let mut index = 0;
    let mut offset = 0;
    while index < segments.len() {
        let iovecs: Vec<libc::iovec> = segments[index..]
            .iter()
            .take(IOVECS_MAX)
            .enumerate()
            .map(|(i, s)| {
                let skip = if i == 0 { offset } else { 0 };
                let b = bytes_of(s);
                libc::iovec {
                    iov_base: b[skip..].as_ptr() as *mut libc::c_void,
                    iov_len: b.len() - skip,
                }
            })
            .collect();
        // SAFETY: a zeroed msghdr is valid; we point it at iovecs that live across the call.
        let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
        message.msg_iov = iovecs.as_ptr() as *mut libc::iovec;
        message.msg_iovlen = iovecs.len();
        // SAFETY: sendmsg only reads the buffers described by `message`.
        let sent = unsafe { libc::sendmsg(stream.as_raw_fd(), &message, flags) };
        if sent >= 0 {
            (index, offset) = advance(segments, index, offset, sent as usize);
            continue;
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::WouldBlock => {
                // Let glommio wait for room and write the rest of this segment.
                stream
                    .write_all(&bytes_of(&segments[index])[offset..])
                    .await?;
                index += 1;
                offset = 0;
            }
            io::ErrorKind::Interrupted => {}
            _ => return Err(error),
        }
    }
    Ok(())
}

/// Sends `region` with `sendfile` on a socket [`write_segments`] made non-blocking (glommio's
/// sockets are blocking descriptors driven with MSG_DONTWAIT, which `sendfile` has no flag
/// for), so a full socket buffer returns EAGAIN instead of stalling the shard; the region's
/// pages are in the page cache (the log checked), so the file side does not wait for the disk.
async fn send_region(stream: &mut TcpStream, region: &FileRegion) -> io::Result<()> {
    let socket = stream.as_raw_fd();
    let file = region.fd().as_raw_fd();
    let Ok(mut offset) = libc::off_t::try_from(region.position()) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    let end = offset + region.len() as libc::off_t;
    while offset < end {
        let count = (end - offset) as usize;
        // SAFETY: sendfile reads `file` from `offset` (a live local it advances) into the
        // socket; no user memory is passed.
        let sent = unsafe { libc::sendfile(socket, file, &mut offset, count) };
        if sent > 0 {
            continue;
        }
        if sent == 0 {
            // Kafka closes the connection too when a segment shrank under a response.
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the segment file ended inside a region being sent",
            ));
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            // The socket buffer is full: wait for room through the ring (glommio patch 7),
            // then `sendfile` goes on; no byte of the region passes through user space.
            io::ErrorKind::WouldBlock => stream.writable().await.map_err(io::Error::from)?,
            io::ErrorKind::Interrupted => {}
            _ => return Err(error),
        }
    }
    Ok(())
}

/// Sets O_NONBLOCK on `fd` if it is not set (once per connection in practice: one F_GETFL per
/// response with regions after that). glommio's own socket calls work the same either way: its sends use
/// MSG_DONTWAIT and its receives go through io_uring, which polls a non-blocking socket.
fn set_nonblocking(fd: libc::c_int) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL read and set the descriptor's status flags; no memory passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_NONBLOCK != 0 {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Moves (segment, offset) forward by `sent` bytes.
fn advance(
    segments: &[Segment],
    mut index: usize,
    mut offset: usize,
    mut sent: usize,
) -> (usize, usize) {
    while sent > 0 {
        let left = segments[index].len() - offset;
        if sent < left {
            return (index, offset + sent);
        }
        sent -= left;
        index += 1;
        offset = 0;
    }
    // Skip empty segments so the loop never builds an empty iovec list.
    while index < segments.len() && segments[index].len() == offset {
        index += 1;
        offset = 0;
    }
    (index, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn advance_walks_segment_boundaries() {
        let segments = vec![
            Segment::Bytes(Bytes::from_static(b"abc")),
            Segment::Bytes(Bytes::new()),
            Segment::Bytes(Bytes::from_static(b"de")),
        ];
        assert_eq!(advance(&segments, 0, 0, 2), (0, 2));
        assert_eq!(advance(&segments, 0, 0, 3), (2, 0));
        assert_eq!(advance(&segments, 0, 2, 2), (2, 1));
        assert_eq!(advance(&segments, 0, 0, 5), (3, 0));
    }

    #[test]
    fn buffer_sizes_are_set_unless_minus_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let socket = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let fd = socket.as_raw_fd();
        let get = |option| {
            let mut value: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: getsockopt writes at most `len` bytes into a live local.
            let rc = unsafe {
                libc::getsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    option,
                    (&mut value as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            assert_eq!(rc, 0);
            value
        };
        let (send_before, receive_before) = (get(libc::SO_SNDBUF), get(libc::SO_RCVBUF));
        set_buffer_sizes(fd, -1, -1).unwrap();
        assert_eq!(
            (get(libc::SO_SNDBUF), get(libc::SO_RCVBUF)),
            (send_before, receive_before)
        );
        // Linux doubles the size asked for (its bookkeeping overhead), as it does for Kafka.
        set_buffer_sizes(fd, 102_400, 65_536).unwrap();
        assert_eq!(
            (get(libc::SO_SNDBUF), get(libc::SO_RCVBUF)),
            (204_800, 131_072)
        );
    }

    #[test]
    fn only_a_path_through_loopback_counts_as_loopback() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(is_loopback_path(ip("127.0.0.1"), ip("127.0.0.1")));
        assert!(is_loopback_path(ip("127.0.0.1"), ip("127.0.0.53")));
        assert!(is_loopback_path(ip("::1"), ip("::1")));
        assert!(is_loopback_path(
            ip("::ffff:127.0.0.1"),
            ip("::ffff:127.0.0.1")
        ));
        // This host's own address on both ends goes through `lo` too.
        assert!(is_loopback_path(ip("10.1.2.3"), ip("10.1.2.3")));
        assert!(is_loopback_path(ip("::ffff:10.1.2.3"), ip("10.1.2.3")));
        assert!(!is_loopback_path(ip("10.1.2.3"), ip("10.1.2.4")));
        assert!(!is_loopback_path(ip("fe80::1"), ip("fe80::2")));
    }

    /// The accepted side of a real loopback connection takes the name given, and a name this
    /// host does not have fails without changing it.
    #[test]
    fn congestion_control_is_set_on_a_loopback_socket() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        let local = accepted.local_addr().unwrap();
        assert!(is_loopback_path(local.ip(), peer.ip()));
        let fd = accepted.as_raw_fd();
        let get = || congestion_control_of(fd).unwrap();
        // reno is built into every kernel and any process may set it.
        set_congestion_control(fd, "reno").unwrap();
        assert_eq!(get(), "reno");
        assert!(set_congestion_control(fd, "no_such_cc").is_err());
        assert_eq!(get(), "reno");
    }

    /// A socket accepted by `bind_listener`'s listener is born with the listener's congestion
    /// control, nothing set after `accept`; with "" or a name this host lacks, with the host's.
    #[test]
    fn accepted_sockets_are_born_with_the_listeners_congestion_control() {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async {
                let host = host_congestion_control()
                    .expect("the host's default")
                    .to_string();
                for (name, expected) in [
                    ("reno", "reno"),
                    ("", host.as_str()),
                    ("no_such_cc", host.as_str()),
                ] {
                    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
                    let listener = bind_listener(addr, name).unwrap();
                    let addr = listener.local_addr().unwrap();
                    // The handshake completes in the backlog; accept takes it from there.
                    let _client = std::net::TcpStream::connect(addr).unwrap();
                    let accepted = listener.accept().await.unwrap();
                    assert_eq!(
                        congestion_control_of(accepted.as_raw_fd()).unwrap(),
                        expected
                    );
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }

    /// A region larger than the socket buffers, sent to a slow reader: `sendfile` meets a full
    /// buffer (EAGAIN) many times, waits through glommio, and every byte arrives in order,
    /// after the bytes segment in front of it and before the one behind it.
    #[test]
    fn a_region_reaches_a_slow_reader_whole_and_in_order() {
        use std::io::Read;
        use std::os::fd::OwnedFd;
        use std::sync::Arc;

        let dir = std::env::temp_dir().join(format!("sluice-sendfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("segment");
        let data: Vec<u8> = (0..16 << 20).map(|i: u32| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let region_at = 4096;
        let region_len = (12 << 20) + 5;
        let expected: Vec<u8> = [
            &b"head"[..],
            &data[region_at..region_at + region_len],
            b"tail",
        ]
        .concat();

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let reader = std::thread::spawn(move || {
            let mut stream = loop {
                match std::net::TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => break s,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            };
            let mut got = Vec::new();
            let mut chunk = vec![0u8; 256 << 10];
            loop {
                // Slower than the sender: the socket buffers fill up.
                std::thread::sleep(std::time::Duration::from_millis(2));
                let n = stream.read(&mut chunk).unwrap();
                if n == 0 {
                    return got;
                }
                got.extend_from_slice(&chunk[..n]);
            }
        });
        glommio::LocalExecutorBuilder::default()
            .spawn(move || async move {
                let listener = glommio::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
                let mut stream = listener.accept().await.unwrap();
                let fd = Arc::new(OwnedFd::from(std::fs::File::open(&path).unwrap()));
                let segments = [
                    Segment::Bytes(Bytes::from_static(b"head")),
                    Segment::File(FileRegion::new(fd, region_at as u64, region_len)),
                    Segment::Bytes(Bytes::from_static(b"tail")),
                ];
                write_segments(&mut stream, &segments).await.unwrap();
                stream.close().await.unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
        let got = reader.join().unwrap();
        assert_eq!(got.len(), expected.len());
        assert!(got == expected, "the bytes arrive as sent");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
