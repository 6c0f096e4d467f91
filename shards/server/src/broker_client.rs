//! A Kafka-protocol client connection from this broker to another (the replica fetcher's): one
//! glommio `TcpStream`, one request at a time, written and answered in order. Kafka's
//! `NetworkClient` as `ReplicaFetcherBlockingSend` uses it — minus ApiVersions negotiation:
//! both ends are Sluice brokers of one build, so the caller names the versions.

use std::io;
use std::time::Duration;

use glommio::net::TcpStream;
use sluice_protocol::apis::{RequestBody, ResponseBody};
use sluice_protocol::header::RequestHeader;
use sluice_protocol::request::{decode_response, encode_request};
use sluice_protocol::ProtocolError;
use sluice_protocol::Segment;

use crate::frame_buffer::{FillError, FrameBuffer};
use crate::socket_io;

/// Why a request to another broker failed; the connection is unusable after any of them.
#[derive(Debug, thiserror::Error)]
pub enum BrokerClientError {
    /// Connecting, writing or reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The peer closed the connection.
    #[error("connection closed by the peer")]
    Closed,
    /// No answer within the request timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The response frame did not decode, or was too large.
    #[error("bad response: {0}")]
    Protocol(#[from] ProtocolError),
    /// The response carried another request's correlation id.
    #[error("response correlation id {got}, expected {expected}")]
    CorrelationMismatch {
        /// The id sent.
        expected: i32,
        /// The id received.
        got: i32,
    },
    /// The response body was of another API than the request's.
    #[error("response body of another API")]
    WrongApi,
}

impl From<FillError> for BrokerClientError {
    fn from(error: FillError) -> Self {
        match error {
            FillError::Io(error) => Self::Io(error),
            FillError::Frame(error) => Self::Protocol(error),
        }
    }
}

/// One connection to a broker's client listener.
pub struct BrokerConnection {
    stream: TcpStream,
    /// Responses as they are read; a Fetch response's records are pieces of its frame.
    frames: FrameBuffer,
    client_id: String,
    correlation_id: i32,
}

impl BrokerConnection {
    /// Connects to `host:port` within `timeout`. `frame_max_bytes` bounds every response
    /// frame, so a peer's size prefix never reserves unbounded memory.
    pub async fn connect(
        host: &str,
        port: u16,
        timeout: Duration,
        client_id: String,
        frame_max_bytes: usize,
    ) -> Result<BrokerConnection, BrokerClientError> {
        let address = resolve(host, port)?;
        // glommio refuses a zero timeout.
        let timeout = timeout.max(Duration::from_millis(1));
        let stream = TcpStream::connect_timeout(address, timeout)
            .await
            .map_err(io::Error::from)?;
        // Requests are small and each one waits for its answer: Nagle would only delay them.
        stream.set_nodelay(true).map_err(io::Error::from)?;
        // A leader host that vanished without a FIN is noticed on an idle connection too.
        socket_io::set_keepalive(&stream)?;
        Ok(BrokerConnection {
            stream,
            frames: FrameBuffer::new(frame_max_bytes),
            client_id,
            correlation_id: 0,
        })
    }

    /// Sends `body` as `version` and waits up to `timeout` for its response.
    pub async fn send(
        &mut self,
        body: RequestBody,
        version: i16,
        timeout: Duration,
    ) -> Result<ResponseBody, BrokerClientError> {
        let exchange = self.exchange(body, version);
        futures_lite::future::or(exchange, async {
            glommio::timer::sleep(timeout).await;
            Err(BrokerClientError::Timeout(timeout))
        })
        .await
    }

    async fn exchange(
        &mut self,
        body: RequestBody,
        version: i16,
    ) -> Result<ResponseBody, BrokerClientError> {
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let header = RequestHeader {
            api_key: body.api_key().as_i16(),
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some(self.client_id.clone()),
        };
        let frame = Segment::Bytes(encode_request(&header, &body).freeze());
        socket_io::write_segments(&mut self.stream, std::slice::from_ref(&frame)).await?;
        let frame = loop {
            if let Some(frame) = self.frames.take_frame()? {
                break frame.freeze();
            }
            let read = self.frames.fill(&self.stream).await?;
            if read == 0 {
                return Err(BrokerClientError::Closed);
            }
        };
        let (response_header, response) = decode_response(frame, header.api_key, version)?;
        if response_header.correlation_id != header.correlation_id {
            return Err(BrokerClientError::CorrelationMismatch {
                expected: header.correlation_id,
                got: response_header.correlation_id,
            });
        }
        if response.api_key() != body.api_key() {
            return Err(BrokerClientError::WrongApi);
        }
        Ok(response)
    }
}

/// `host:port` as a socket address: an IP literal directly, else through the system resolver.
/// The resolver blocks the shard's thread; brokers advertise IPs or names the host resolves
/// locally (`/etc/hosts`), and it runs once per connection, not per request.
fn resolve(host: &str, port: u16) -> io::Result<std::net::SocketAddr> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(std::net::SocketAddr::new(ip, port));
    }
    use std::net::ToSocketAddrs;
    (host, port).to_socket_addrs()?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{host} resolves to no address"),
        )
    })
}
