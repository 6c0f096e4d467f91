//! A blocking Kafka connection over std TCP: framing, version negotiation
//! (ApiVersions) and the admin calls (Metadata, CreateTopics, ListOffsets).
//! Requests are encoded and responses decoded with `sluice-protocol`.

use std::io::{IoSlice, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::messages::api_versions::ApiVersionsRequest;
use sluice_protocol::messages::create_topics::{
    self, CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use sluice_protocol::messages::delete_topics::{self, DeleteTopicState, DeleteTopicsRequest};
use sluice_protocol::messages::fetch;
use sluice_protocol::messages::list_offsets::{
    self, ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use sluice_protocol::messages::metadata::{self, MetadataRequest, MetadataRequestTopic};
use sluice_protocol::messages::produce;
use sluice_protocol::{
    decode_response, encode_request_vectored, ApiKey, RequestBody, RequestHeader, ResponseBody,
    Segment, Uuid,
};

use crate::error::{error_name, Error, Result};

/// Largest response frame accepted (a Fetch is bounded by its `max_bytes`).
pub const MAX_FRAME: usize = 256 << 20;

/// UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
/// REPLICA_NOT_AVAILABLE, OFFSET_NOT_AVAILABLE.
const RETRIABLE: [i16; 5] = [3, 5, 6, 9, 78];

/// `TOPIC_ALREADY_EXISTS`.
const TOPIC_ALREADY_EXISTS: i16 = 36;

/// The versions used with one broker: the highest both sides implement.
#[derive(Debug, Clone, Copy)]
pub struct Versions {
    /// Produce.
    pub produce: i16,
    /// Fetch.
    pub fetch: i16,
    /// Metadata.
    pub metadata: i16,
    /// ListOffsets.
    pub list_offsets: i16,
    /// CreateTopics.
    pub create_topics: i16,
    /// DeleteTopics.
    pub delete_topics: i16,
}

impl Versions {
    /// The version to use for `key` (only the APIs above are used).
    pub fn of(&self, key: ApiKey) -> i16 {
        match key {
            ApiKey::Produce => self.produce,
            ApiKey::Fetch => self.fetch,
            ApiKey::Metadata => self.metadata,
            ApiKey::ListOffsets => self.list_offsets,
            ApiKey::CreateTopics => self.create_topics,
            ApiKey::DeleteTopics => self.delete_topics,
            _ => 0,
        }
    }
}

/// Writes one request frame.
pub fn write_request(
    w: &mut impl Write,
    client_id: &str,
    correlation_id: i32,
    version: i16,
    body: &RequestBody,
) -> Result<()> {
    let header = RequestHeader {
        api_key: body.api_key().as_i16(),
        api_version: version,
        correlation_id,
        client_id: Some(client_id.to_string()),
    };
    // Vectored, as librdkafka writes its message sets: a Produce request's
    // batches go from their own buffers to the socket instead of being copied
    // into one frame first (that copy was ~12 % of the load generator's CPU
    // at max rate, a profile of `bench/ab/run`).
    let segments = encode_request_vectored(&header, body);
    let mut slices = Vec::with_capacity(segments.len());
    for segment in &segments {
        match segment {
            Segment::Bytes(b) => slices.push(IoSlice::new(b)),
            Segment::File(_) => {
                return Err(Error::Unexpected("a request segment from a file".into()));
            }
        }
    }
    write_all_vectored(w, &mut slices)
}

/// `Write::write_all_vectored` (unstable in std): writes every slice, resuming
/// after short writes.
fn write_all_vectored(w: &mut impl Write, mut slices: &mut [IoSlice<'_>]) -> Result<()> {
    // Drops leading empty slices, so that a write of nothing ends here instead of failing as
    // a zero-length write.
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match w.write_vectored(slices) {
            Ok(0) => return Err(Error::Io(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Reads one response frame (without its size prefix).
pub fn read_frame(r: &mut impl Read) -> Result<Bytes> {
    let mut prefix = [0u8; 4];
    r.read_exact(&mut prefix)?;
    let size = i32::from_be_bytes(prefix);
    let size = usize::try_from(size).map_err(|_| Error::FrameTooLarge(0))?;
    if size > MAX_FRAME {
        return Err(Error::FrameTooLarge(size));
    }
    // Read into spare capacity: `read_to_end` does not zero it first (zeroing
    // each Fetch response's buffer was ~5 % of the load generator's CPU).
    let mut buf = Vec::with_capacity(size);
    r.take(size as u64).read_to_end(&mut buf)?;
    if buf.len() != size {
        return Err(Error::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(Bytes::from(buf))
}

/// Decodes a response frame of `key`/`version` and checks its correlation id.
pub fn decode(frame: Bytes, key: ApiKey, version: i16, expected: i32) -> Result<ResponseBody> {
    let (header, body) = decode_response(frame, key.as_i16(), version)?;
    if header.correlation_id != expected {
        return Err(Error::Correlation {
            expected,
            got: header.correlation_id,
        });
    }
    Ok(body)
}

/// One connection, used request by request (admin calls, consumers).
pub struct Conn {
    stream: TcpStream,
    client_id: String,
    next_correlation: i32,
    /// Negotiated versions.
    pub versions: Versions,
}

impl Conn {
    /// Connects and negotiates versions with ApiVersions.
    pub fn connect(bootstrap: &str, client_id: &str) -> Result<Conn> {
        let stream = TcpStream::connect(bootstrap)?;
        stream.set_nodelay(true)?;
        let mut conn = Conn {
            stream,
            client_id: client_id.to_string(),
            next_correlation: 1,
            versions: Versions {
                produce: 0,
                fetch: 0,
                metadata: 0,
                list_offsets: 0,
                create_topics: 0,
                delete_topics: 0,
            },
        };
        conn.negotiate()?;
        Ok(conn)
    }

    fn negotiate(&mut self) -> Result<()> {
        // v3 (flexible) is implemented by Kafka 2.4+ and Sluice.
        let body = RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "sluice-loadgen".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            ..ApiVersionsRequest::default()
        });
        let resp = match self.call_version(body, 3)? {
            ResponseBody::ApiVersions(r) => r,
            other => return Err(Error::Unexpected(format!("{:?}", other.api_key()))),
        };
        if resp.error_code != 0 {
            return Err(Error::broker("ApiVersions", resp.error_code));
        }
        let pick = |key: ApiKey, min: i16, max: i16| -> Result<i16> {
            let theirs = resp
                .api_keys
                .iter()
                .find(|k| k.api_key == key.as_i16())
                .map(|k| (k.min_version, k.max_version));
            match theirs {
                Some((lo, hi)) if hi.min(max) >= lo.max(min) => Ok(hi.min(max)),
                _ => Err(Error::Unsupported {
                    api: key.name(),
                    min,
                    max,
                }),
            }
        };
        self.versions = Versions {
            // The generator names topics in its produce requests; from v13 Produce takes topic
            // ids instead, so it stays at the last version by name.
            produce: pick(
                ApiKey::Produce,
                produce::MIN_VERSION,
                produce::TOPIC_ID_MIN_VERSION - 1,
            )?,
            fetch: pick(ApiKey::Fetch, fetch::MIN_VERSION, fetch::MAX_VERSION)?,
            metadata: pick(ApiKey::Metadata, 1, metadata::MAX_VERSION)?,
            list_offsets: pick(
                ApiKey::ListOffsets,
                list_offsets::MIN_VERSION,
                list_offsets::MAX_VERSION,
            )?,
            create_topics: pick(
                ApiKey::CreateTopics,
                create_topics::MIN_VERSION,
                create_topics::MAX_VERSION,
            )?,
            delete_topics: pick(
                ApiKey::DeleteTopics,
                delete_topics::MIN_VERSION,
                delete_topics::MAX_VERSION,
            )?,
        };
        Ok(())
    }

    /// Sends `body` in the negotiated version and waits for the answer.
    pub fn call(&mut self, body: RequestBody) -> Result<ResponseBody> {
        let version = self.versions.of(body.api_key());
        self.call_version(body, version)
    }

    fn call_version(&mut self, body: RequestBody, version: i16) -> Result<ResponseBody> {
        let corr = self.next_correlation;
        self.next_correlation = self.next_correlation.wrapping_add(1);
        let key = body.api_key();
        write_request(&mut self.stream, &self.client_id, corr, version, &body)?;
        let frame = read_frame(&mut self.stream)?;
        decode(frame, key, version, corr)
    }

    /// Splits into the write and read halves (pipelined producers).
    pub fn into_halves(self) -> Result<(TcpStream, TcpStream, String, Versions)> {
        let reader = self.stream.try_clone()?;
        Ok((self.stream, reader, self.client_id, self.versions))
    }

    /// Creates `topic` (replication factor 1) unless it exists.
    pub fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(String, String)],
    ) -> Result<()> {
        let body = RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: topic.to_string(),
                num_partitions: partitions,
                replication_factor: 1,
                assignments: Vec::new(),
                configs: configs
                    .iter()
                    .map(|(k, v)| CreatableTopicConfig {
                        name: k.clone(),
                        value: Some(v.clone()),
                    })
                    .collect(),
            }],
            timeout_ms: 60_000,
            validate_only: false,
        });
        let resp = match self.call(body)? {
            ResponseBody::CreateTopics(r) => r,
            other => return Err(Error::Unexpected(format!("{:?}", other.api_key()))),
        };
        for t in resp.topics {
            if t.error_code != 0 && t.error_code != TOPIC_ALREADY_EXISTS {
                return Err(Error::Broker {
                    context: format!(
                        "CreateTopics {topic}: {}",
                        t.error_message.unwrap_or_default()
                    ),
                    code: t.error_code,
                    name: error_name(t.error_code),
                });
            }
        }
        Ok(())
    }

    /// Deletes `topic` (a missing topic is not an error).
    pub fn delete_topic(&mut self, topic: &str) -> Result<()> {
        let body = RequestBody::DeleteTopics(DeleteTopicsRequest {
            topics: vec![DeleteTopicState {
                name: Some(topic.to_string()),
                topic_id: Uuid::ZERO,
            }],
            topic_names: vec![topic.to_string()],
            timeout_ms: 60_000,
        });
        let resp = match self.call(body)? {
            ResponseBody::DeleteTopics(r) => r,
            other => return Err(Error::Unexpected(format!("{:?}", other.api_key()))),
        };
        for r in resp.responses {
            // UNKNOWN_TOPIC_OR_PARTITION: already gone
            if r.error_code != 0 && r.error_code != 3 {
                return Err(Error::broker(format!("DeleteTopics {topic}"), r.error_code));
            }
        }
        Ok(())
    }

    /// Waits until every partition of `topic` has a leader; returns the
    /// partition ids (sorted) and the topic id.
    pub fn wait_topic(&mut self, topic: &str, timeout: Duration) -> Result<(Vec<i32>, Uuid)> {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            let body = RequestBody::Metadata(MetadataRequest {
                topics: Some(vec![MetadataRequestTopic {
                    topic_id: Uuid::ZERO,
                    name: Some(topic.to_string()),
                }]),
                allow_auto_topic_creation: false,
                include_cluster_authorized_operations: false,
                include_topic_authorized_operations: false,
            });
            match self.call(body)? {
                ResponseBody::Metadata(m) => {
                    if let Some(t) = m.topics.iter().find(|t| t.name.as_deref() == Some(topic)) {
                        let ready = t.error_code == 0
                            && !t.partitions.is_empty()
                            && t.partitions
                                .iter()
                                .all(|p| p.error_code == 0 && p.leader_id >= 0);
                        if ready {
                            let mut ids: Vec<i32> =
                                t.partitions.iter().map(|p| p.partition_index).collect();
                            ids.sort_unstable();
                            return Ok((ids, t.topic_id));
                        }
                        last = format!(
                            "topic error {} ({}), {} partitions",
                            t.error_code,
                            error_name(t.error_code),
                            t.partitions.len()
                        );
                    }
                }
                other => return Err(Error::Unexpected(format!("{:?}", other.api_key()))),
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!(
                    "metadata of {topic} not ready ({last})"
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// ListOffsets for `partitions` at `timestamp` (-1 latest, -2 earliest).
    /// Retries for up to 30 s while the broker answers with a retriable error
    /// (Kafka serves a new topic's partitions a moment after its metadata
    /// names their leader).
    pub fn list_offsets(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<Vec<(i32, i64)>> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match self.list_offsets_once(topic, partitions, timestamp) {
                Err(Error::Broker { code, .. })
                    if RETRIABLE.contains(&code) && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                other => return other,
            }
        }
    }

    fn list_offsets_once(
        &mut self,
        topic: &str,
        partitions: &[i32],
        timestamp: i64,
    ) -> Result<Vec<(i32, i64)>> {
        let body = RequestBody::ListOffsets(ListOffsetsRequest {
            replica_id: -1,
            isolation_level: 0,
            topics: vec![ListOffsetsTopic {
                name: topic.to_string(),
                partitions: partitions
                    .iter()
                    .map(|&p| ListOffsetsPartition {
                        partition_index: p,
                        current_leader_epoch: -1,
                        timestamp,
                    })
                    .collect(),
            }],
            timeout_ms: 0,
        });
        let resp = match self.call(body)? {
            ResponseBody::ListOffsets(r) => r,
            other => return Err(Error::Unexpected(format!("{:?}", other.api_key()))),
        };
        let mut out = Vec::new();
        for t in resp.topics {
            for p in t.partitions {
                if p.error_code != 0 {
                    return Err(Error::broker(
                        format!("ListOffsets {topic}-{}", p.partition_index),
                        p.error_code,
                    ));
                }
                out.push((p.partition_index, p.offset));
            }
        }
        if out.len() != partitions.len() {
            return Err(Error::Unexpected(format!(
                "ListOffsets answered {} of {} partitions",
                out.len(),
                partitions.len()
            )));
        }
        Ok(out)
    }
}
