//! Test support: start a real `sluice` process on a free port with its own data directory, and
//! talk to it with a small blocking Kafka client built on the protocol crate.
#![allow(clippy::unwrap_used)] // test code
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::header::RequestHeader;
use sluice_protocol::request::{decode_response, encode_request, RequestBody, ResponseBody};

/// A running broker process.
pub struct Broker {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its data directory.
    pub dir: PathBuf,
}

/// A fresh directory under the target dir's tmp.
/// An ApiVersions request as a client sends it: v3+ software name and version that pass
/// Kafka's KIP-511 check (empty ones get INVALID_REQUEST), no v5 identity.
#[allow(dead_code)] // each test binary uses its own subset of this module
pub fn api_versions_request() -> sluice_protocol::messages::api_versions::ApiVersionsRequest {
    sluice_protocol::messages::api_versions::ApiVersionsRequest {
        client_software_name: "sluice-tests".into(),
        client_software_version: "1.0".into(),
        ..Default::default()
    }
}

pub fn temp_dir(name: &str) -> PathBuf {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dir = base.join(format!("{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Broker {
    /// Starts a broker in a new directory with extra `--override`s.
    pub fn start(name: &str, overrides: &[&str]) -> Broker {
        Broker::start_in(&temp_dir(name), free_port(), overrides)
    }

    /// Starts a broker on `dir` and `port` (for restarts on the same data).
    pub fn start_in(dir: &Path, port: u16, overrides: &[&str]) -> Broker {
        let filter = std::env::var("SLUICE_TEST_LOG").unwrap_or_else(|_| "info,glommio=off".into());
        Broker::start_logging(dir, port, overrides, &filter)
    }

    /// Like `start_in`, with the log filter `filter` (RUST_LOG syntax); the log is
    /// `<dir>/broker.log` (`Broker::log`).
    pub fn start_logging(dir: &Path, port: u16, overrides: &[&str], filter: &str) -> Broker {
        let mut broker = Broker::spawn_logging(dir, port, overrides, filter);
        broker.wait_ready();
        broker
    }

    /// Like `start_logging`, without waiting for the broker to be ready (one that never will
    /// be: its controllers cannot be reached).
    pub fn spawn_logging(dir: &Path, port: u16, overrides: &[&str], filter: &str) -> Broker {
        Broker::spawn_with_env(dir, port, overrides, filter, &[])
    }

    /// Like `spawn_logging`, with extra environment variables (test hooks).
    pub fn spawn_with_env(
        dir: &Path,
        port: u16,
        overrides: &[&str],
        filter: &str,
        env: &[(&str, &str)],
    ) -> Broker {
        let data = dir.join("data");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("broker.log"))
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_sluice"));
        command
            .arg("--override")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
            .arg("--override")
            .arg(format!("log.dirs={}", data.display()));
        for item in overrides {
            command.arg("--override").arg(item);
        }
        command.envs(env.iter().copied());
        let child = command
            .env("RUST_LOG", filter)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sluice");
        Broker {
            child: Some(child),
            port,
            dir: dir.to_path_buf(),
        }
    }

    /// Starts `sluice` with no arguments at all, in `dir` as working directory: the embedded
    /// default configuration (127.0.0.1:9092, data in ./data).
    pub fn start_default(dir: &Path) -> Broker {
        let log = std::fs::File::create(dir.join("broker.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sluice");
        let mut broker = Broker {
            child: Some(child),
            port: 9092,
            dir: dir.to_path_buf(),
        };
        broker.wait_ready();
        broker
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("broker exited during start: {status}");
            }
            if self.answers_api_versions() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("broker did not listen on {} within 30 s", self.port);
    }

    /// A full ApiVersions round trip: a bare connect can succeed before the broker listens
    /// (a loopback connect to a free ephemeral port may connect the socket to itself).
    fn answers_api_versions(&self) -> bool {
        let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let mut client = Client {
            stream,
            correlation_id: 0,
        };
        let request = RequestBody::ApiVersions(api_versions_request());
        client.send(18, 3, request);
        client
            .read_frame()
            .and_then(|frame| decode_response(frame, 18, 3).ok())
            .is_some()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// Resident memory in KiB (VmRSS).
    pub fn rss_kib(&self) -> u64 {
        let pid = self.child.as_ref().unwrap().id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// SIGTERM and wait: the graceful shutdown path.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill(2) on our child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        child.wait().unwrap()
    }

    /// SIGTERM, then waits up to `limit` for the exit: its status and how long it took, or
    /// None if the process was still running then (it is killed).
    pub fn stop_within(mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let child = self.child.take().unwrap();
        let asked = Instant::now();
        // SAFETY: kill(2) on our child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        wait_exit(child, limit).map(|status| (status, asked.elapsed()))
    }

    /// Waits up to `limit` for the process to exit on its own: its status, or None if it still
    /// runs (it is killed).
    pub fn exit_within(mut self, limit: Duration) -> Option<ExitStatus> {
        wait_exit(self.child.take().unwrap(), limit)
    }

    /// CPU time the process has used so far (user + system, all threads).
    pub fn cpu_time(&self) -> Duration {
        let pid = self.child.as_ref().unwrap().id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start at state (field 3);
        // utime and stime are fields 14 and 15, in clock ticks.
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<u64>().ok()))
            .sum();
        // SAFETY: sysconf has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Duration::from_micros(ticks * 1_000_000 / per_second)
    }

    /// SIGKILL: a crash.
    pub fn kill(mut self) {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A connected client.
    pub fn client(&self) -> Client {
        Client::connect(self.port)
    }

    /// What the broker has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("broker.log")).unwrap_or_default()
    }
}

/// Waits up to `limit` for `child` to exit: its status, or None (it is killed).
fn wait_exit(mut child: Child, limit: Duration) -> Option<ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A blocking Kafka client: one request at a time, or raw bytes.
pub struct Client {
    /// The socket.
    pub stream: TcpStream,
    correlation_id: i32,
}

impl Client {
    /// Connects to the broker on `port`.
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            stream,
            correlation_id: 0,
        }
    }

    /// Sends a request and reads its response.
    pub fn call(&mut self, api_key: i16, version: i16, body: RequestBody) -> ResponseBody {
        self.send(api_key, version, body);
        self.receive(api_key, version)
    }

    /// Like `call`, but `None` when the connection breaks (the broker was killed).
    pub fn try_call(
        &mut self,
        api_key: i16,
        version: i16,
        body: RequestBody,
    ) -> Option<ResponseBody> {
        self.correlation_id += 1;
        let header = RequestHeader {
            api_key,
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("sluice-test".to_string()),
        };
        self.stream
            .write_all(&encode_request(&header, &body))
            .ok()?;
        let frame = self.read_frame()?;
        decode_response(frame, api_key, version)
            .ok()
            .map(|(_, body)| body)
    }

    /// Sends a request without reading the response.
    pub fn send(&mut self, api_key: i16, version: i16, body: RequestBody) -> i32 {
        self.correlation_id += 1;
        let header = RequestHeader {
            api_key,
            api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("sluice-test".to_string()),
        };
        let frame = encode_request(&header, &body);
        self.stream.write_all(&frame).unwrap();
        self.correlation_id
    }

    /// Reads the next response, for a request of that key and version.
    pub fn receive(&mut self, api_key: i16, version: i16) -> ResponseBody {
        let frame = self.read_frame().expect("response frame");
        let (header, body) = decode_response(frame, api_key, version).expect("decodable response");
        assert!(header.correlation_id > 0);
        body
    }

    /// Reads one raw frame (None at end of stream).
    pub fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).ok()?;
        let size = i32::from_be_bytes(size);
        assert!(size >= 0, "negative response size");
        let mut frame = vec![0u8; size as usize];
        self.stream.read_exact(&mut frame).ok()?;
        Some(Bytes::from(frame))
    }

    /// How many lines of the broker's `log` name this connection (`peer=` its local address)
    /// and contain `needle`.
    pub fn log_lines(&self, log: &str, needle: &str) -> usize {
        let peer = format!("peer={}", self.stream.local_addr().unwrap());
        log.lines()
            .filter(|line| line.contains(needle) && line.contains(&peer))
            .count()
    }
}

/// Creates a topic (CreateTopics v7) and asserts success.
pub fn create_topic(client: &mut Client, name: &str, partitions: i32) {
    use sluice_protocol::messages::create_topics::{CreatableTopic, CreateTopicsRequest};
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor: 1,
            ..CreatableTopic::default()
        }],
        timeout_ms: 30_000,
        validate_only: false,
    };
    let ResponseBody::CreateTopics(response) =
        client.call(19, 7, RequestBody::CreateTopics(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(
        response.topics[0].error_code, 0,
        "create {name}: {:?}",
        response.topics[0].error_message
    );
}

/// Produces one batch (Produce v9) and returns (error code, base offset).
pub fn produce(client: &mut Client, topic: &str, partition: i32, batch: Bytes) -> (i16, i64) {
    try_produce(client, topic, partition, batch).expect("a produce response")
}

/// Like `produce`, but `None` when the connection breaks.
pub fn try_produce(
    client: &mut Client,
    topic: &str,
    partition: i32,
    batch: Bytes,
) -> Option<(i16, i64)> {
    use sluice_protocol::messages::produce::{
        PartitionProduceData, ProduceRequest, TopicProduceData,
    };
    let request = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: topic.to_string(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch.into()),
            }],
            ..TopicProduceData::default()
        }],
    };
    let ResponseBody::Produce(response) = client.try_call(0, 9, RequestBody::Produce(request))?
    else {
        panic!("wrong response kind")
    };
    let p = &response.responses[0].partition_responses[0];
    Some((p.error_code, p.base_offset))
}

/// A Fetch v12 request for one partition.
pub fn fetch_request(
    topic: &str,
    partition: i32,
    offset: i64,
    max_wait_ms: i32,
    min_bytes: i32,
) -> RequestBody {
    use sluice_protocol::messages::fetch::{FetchPartition, FetchRequest, FetchTopic};
    RequestBody::Fetch(FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes,
        max_bytes: 50 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.to_string(),
            partitions: vec![FetchPartition {
                partition,
                current_leader_epoch: -1,
                fetch_offset: offset,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        }],
        ..FetchRequest::default()
    })
}

/// Fetches one partition (Fetch v12) and returns (error code, high watermark, records).
pub fn fetch(client: &mut Client, topic: &str, partition: i32, offset: i64) -> (i16, i64, Bytes) {
    let ResponseBody::Fetch(response) =
        client.call(1, 12, fetch_request(topic, partition, offset, 0, 0))
    else {
        panic!("wrong response kind")
    };
    let p = &response.responses[0].partitions[0];
    (
        p.error_code,
        p.high_watermark,
        p.records.clone().unwrap_or_default(),
    )
}

/// A valid uncompressed batch of `count` records whose values are `prefix-i`.
pub fn batch(prefix: &str, count: usize) -> Bytes {
    let mut builder = sluice_protocol::record_batch::RecordBatchBuilder::new(now_ms());
    for i in 0..count {
        let value = format!("{prefix}-{i}");
        builder = builder.record(Some(value.as_bytes()), Some(value.as_bytes()));
    }
    builder.build()
}

/// Wall-clock milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A topic's id, from a Metadata v13 answer (which must carry no top-level error).
pub fn topic_id(client: &mut Client, name: &str) -> sluice_protocol::codec::Uuid {
    use sluice_protocol::messages::metadata::{MetadataRequest, MetadataRequestTopic};
    let request = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(name.to_string()),
            ..MetadataRequestTopic::default()
        }]),
        allow_auto_topic_creation: false,
        ..MetadataRequest::default()
    };
    let ResponseBody::Metadata(response) = client.call(3, 13, RequestBody::Metadata(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(response.error_code, 0, "top-level error");
    let topic = &response.topics[0];
    assert_eq!(topic.error_code, 0, "topic {name}");
    topic.topic_id
}

/// Waits until FindCoordinator (which creates `__consumer_offsets`, as in Kafka) names a
/// coordinator for `group`.
pub fn wait_for_coordinator(client: &mut Client, group: &str) {
    use sluice_protocol::messages::find_coordinator::FindCoordinatorRequest;
    for _ in 0..500 {
        let request = RequestBody::FindCoordinator(FindCoordinatorRequest {
            key: group.to_string(),
            ..Default::default()
        });
        let ResponseBody::FindCoordinator(r) = client.call(10, 3, request) else {
            panic!("not a FindCoordinator response");
        };
        if r.error_code == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no group coordinator after 10 s");
}

/// A simple (no member, no generation) OffsetCommit of `offset` for partition 0 of `topic`.
pub fn offset_commit(group: &str, topic: &str, offset: i64) -> RequestBody {
    use sluice_protocol::messages::offset_commit::{
        OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    RequestBody::OffsetCommit(OffsetCommitRequest {
        group_id: group.to_string(),
        topics: vec![OffsetCommitRequestTopic {
            name: topic.to_string(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                ..Default::default()
            }],
        }],
        ..Default::default()
    })
}

/// A batch as the leader stores it: the base offset it assigned and the leader epoch it stamped
/// (`leader_epoch`, or any epoch when `None`: a restart may have made a new leader epoch), every
/// other byte as the producer sent it.
pub fn assert_stored_as_sent(
    records: &[u8],
    sent: &[u8],
    base_offset: i64,
    leader_epoch: Option<i32>,
) {
    assert_eq!(
        &records[..8],
        &base_offset.to_be_bytes(),
        "stored with the assigned base offset"
    );
    assert_eq!(&records[8..12], &sent[8..12], "batch length as sent");
    let stamped = i32::from_be_bytes([records[12], records[13], records[14], records[15]]);
    match leader_epoch {
        Some(epoch) => assert_eq!(
            stamped, epoch,
            "partition leader epoch stamped by the leader"
        ),
        None => assert!(stamped >= 0, "a leader epoch stamped, not {stamped}"),
    }
    assert_eq!(
        &records[16..sent.len()],
        &sent[16..],
        "stored as sent from the magic byte on"
    );
}

/// One plain HTTP/1.1 GET of the broker's /metrics on `port`, the body as text.
pub fn scrape(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text
}
