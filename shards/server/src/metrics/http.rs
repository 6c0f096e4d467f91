//! The metrics endpoint: a minimal HTTP/1.1 server on the controller's executor. GET
//! `/metrics` (the exposition), `/health` (200 while the process runs) and `/ready` (200 once
//! every shard holds a metadata image and listens, 503 before that and while shutting down).
//! One request per connection (`Connection: close`), as Prometheus scrapes need no more; few
//! connections at a time, bounded request heads, timeouts on both directions, and one scrape at
//! a time, so a misbehaving client costs little and never reaches a data shard.

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::sync::Semaphore;
use sluice_shard::ShardSenders;
use tracing::{debug, warn};

use super::{scrape, Readiness, Registry};

/// Connections served at once; more are closed at accept.
const CONNECTIONS_MAX: usize = 8;
/// Longest request head read.
const REQUEST_HEAD_BYTES_MAX: usize = 8 * 1024;
/// Read and write timeout of a connection.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the endpoint's address, without SO_REUSEPORT: a second process on the same address
/// fails to start instead of sharing the scrapes.
pub fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let listener = std::net::TcpListener::bind(addr)?;
    // SAFETY: the descriptor is a bound, listening TCP socket whose ownership moves here.
    Ok(unsafe { TcpListener::from_raw_fd(listener.into_raw_fd()) })
}

/// Serves until the executor ends. `mesh`: the data shards to scrape (None in a
/// controller-only process, which shows its process figures only).
pub async fn serve(listener: TcpListener, registry: Arc<Registry>, mesh: Option<Rc<ShardSenders>>) {
    let open = Rc::new(Semaphore::new(CONNECTIONS_MAX as u64));
    let scraping = Rc::new(Semaphore::new(1));
    loop {
        let stream = match listener.accept().await {
            Ok(stream) => stream,
            Err(error) => {
                warn!(%error, "metrics endpoint: accept failed");
                glommio::timer::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = open.clone().try_acquire_static_permit(1) else {
            debug!("metrics endpoint: too many connections; one closed");
            drop(stream);
            continue;
        };
        let registry = registry.clone();
        let mesh = mesh.clone();
        let scraping = scraping.clone();
        glommio::spawn_local(async move {
            if let Err(error) = answer(stream, &registry, mesh.as_ref(), &scraping).await {
                debug!(%error, "metrics endpoint: connection ended");
            }
            drop(permit);
        })
        .detach();
    }
}

/// A request's target, as routed.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Metrics,
    Health,
    Ready,
    NotFound,
    MethodNotAllowed,
    BadRequest,
}

/// Routes a request head (`GET /path HTTP/1.1` and headers); HEAD is served as GET without a
/// body. A query string is ignored.
pub fn route(head: &[u8]) -> (Route, bool) {
    let Some(line) = head.split(|b| *b == b'\n').next() else {
        return (Route::BadRequest, false);
    };
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end().split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return (Route::BadRequest, false);
    };
    if !version.starts_with("HTTP/1.") {
        return (Route::BadRequest, false);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (Route::MethodNotAllowed, false);
    }
    let path = target.split('?').next().unwrap_or("");
    let route = match path {
        "/metrics" => Route::Metrics,
        "/health" => Route::Health,
        "/ready" => Route::Ready,
        _ => Route::NotFound,
    };
    (route, head_only)
}

async fn answer(
    mut stream: TcpStream,
    registry: &Arc<Registry>,
    mesh: Option<&Rc<ShardSenders>>,
    scraping: &Semaphore,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = read_head(&mut stream).await?;
    let (route, head_only) = match &head {
        Some(head) => route(head),
        None => (Route::BadRequest, false),
    };
    let (status, content_type, body) = match route {
        Route::Metrics => {
            let text = {
                // Never closed, so the acquire cannot fail; a failure would only mean scraping
                // without the turn.
                let _one_at_a_time = scraping.acquire_permit(1).await;
                scrape::scrape(registry, mesh).await
            };
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", text)
        }
        Route::Health => ("200 OK", "text/plain", "ok\n".to_string()),
        Route::Ready => match registry.readiness() {
            Readiness::Ready => ("200 OK", "text/plain", "ready\n".to_string()),
            Readiness::Starting => (
                "503 Service Unavailable",
                "text/plain",
                "starting\n".to_string(),
            ),
            Readiness::Stopping => (
                "503 Service Unavailable",
                "text/plain",
                "shutting down\n".to_string(),
            ),
        },
        Route::NotFound => (
            "404 Not Found",
            "text/plain",
            "not found: /metrics, /health, /ready\n".to_string(),
        ),
        Route::MethodNotAllowed => (
            "405 Method Not Allowed",
            "text/plain",
            "GET or HEAD\n".to_string(),
        ),
        Route::BadRequest => ("400 Bad Request", "text/plain", "bad request\n".to_string()),
    };
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    if !head_only {
        stream.write_all(body.as_bytes()).await?;
    }
    stream.flush().await?;
    stream.close().await
}

/// Reads up to the end of the request head; None when the peer closed first or the head is
/// larger than `REQUEST_HEAD_BYTES_MAX`.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&chunk[..n]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(head));
        }
        if head.len() > REQUEST_HEAD_BYTES_MAX {
            return Ok(None);
        }
    }
}
