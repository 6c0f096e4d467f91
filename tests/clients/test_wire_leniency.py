"""Raw request frames that Kafka's parsers accept although no common client sends them (issue 14,
point 1: accept what Kafka accepts). Each frame is written byte by byte to one connection; the
broker must answer it and keep the connection open. The same tests run against Apache Kafka
(SLUICE_TARGET=kafka), which is where the expected answers come from. The audit behind them, with a
verdict per check, is the table in shards/protocol/README.md ("Accepting what Kafka accepts").

- header v2 with unknown tagged fields (out of order, one repeated) and a null client id;
- unknown tagged fields in a nested struct (Metadata's topic) and in the body, repeated;
- a compact array length written as a 5-byte varint whose last byte carries bits past 32
  (Kafka's readUnsignedVarint drops them);
- invalid UTF-8 in a topic name (Kafka decodes strings leniently: the topic gets
  INVALID_TOPIC_EXCEPTION, the connection lives), and an empty topic name and client id;
- a null client id in header v1;
- ApiVersions at a version from the future, with header tags: a v0 answer with
  UNSUPPORTED_VERSION that lists only ApiVersions' own range, as Kafka does."""

import struct
import time

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from wire import Connection, Reader, cstring, header, uvarint

BROKER_SETTINGS = {"auto.create.topics.enable": False}
TOPIC = "wire-lenient"
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35


def metadata_v12(names: list[bytes], topic_tags: bytes = b"\x00", tags: bytes = b"\x00",
                 count: bytes | None = None) -> bytes:
    body = count if count is not None else uvarint(len(names) + 1)
    for n in names:
        body += b"\x00" * 16 + cstring(n) + topic_tags
    return body + b"\x01\x00" + tags  # allow_auto_topic_creation, include_topic_authorized_operations


def parse_metadata_v12(frame: bytes, corr: int) -> dict:
    """Metadata v12 response (header v1): brokers, cluster id, controller, topics with their error
    code and partition count."""
    r = Reader(frame)
    assert r.take("i") == corr, "correlation id"
    r.tags()
    r.take("i")  # throttle
    brokers = []
    for _ in range(r.uvarint() - 1):
        brokers.append((r.take("i"), r.string("replace"), r.take("i")))
        r.string("replace")
        r.tags()
    cluster_id, controller = r.string("replace"), r.take("i")
    topics = {}
    for _ in range(r.uvarint() - 1):
        error, name = r.take("h"), r.string("replace")
        r.raw(16)
        r.take("b")
        partitions = r.uvarint() - 1
        for _ in range(max(partitions, 0)):
            r.take("h"), r.take("i"), r.take("i"), r.take("i")
            for _ in range(3):
                for _ in range(r.uvarint() - 1):
                    r.take("i")
            r.tags()
        r.take("i")
        r.tags()
        topics[name] = (error, partitions)
    r.tags()
    return {"brokers": brokers, "cluster_id": cluster_id, "controller": controller, "topics": topics}


@pytest.fixture(scope="module")
def conn(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
    admin.close()
    c = Connection(broker, timeout=15)
    # Kafka publishes a created topic to its metadata asynchronously.
    deadline = time.time() + 30
    while True:
        md = parse_metadata_v12(c.roundtrip(header(3, 12, 1, b"probe", b"\x00") + metadata_v12([TOPIC.encode()])), 1)
        if md["topics"].get(TOPIC) == (0, 2) or time.time() > deadline:
            break
        time.sleep(0.2)
    yield c
    c.close()


def test_header_v2_unknown_tags_and_null_client_id(broker, conn):
    tags = b"\x03" + b"\x07\x02\xaa\xbb" + b"\x03\x00" + b"\x07\x01\x01"  # out of order, tag 7 twice
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 11, None, tags) + metadata_v12([TOPIC.encode()])), 11)
    assert md["topics"] == {TOPIC: (0, 2)}, md
    assert md["brokers"] == [(1, "127.0.0.1", broker.port)], md


def test_unknown_tags_in_a_nested_struct_and_the_body(conn):
    topic_tags = b"\x03" + b"\x09\x01\x00" + b"\x01\x00" + b"\x09\x01\x05"
    tags = b"\x02" + b"\x04\x03\x01\x02\x03" + b"\x00\x00"
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 12, b"c", b"\x00")
                                           + metadata_v12([TOPIC.encode()], topic_tags, tags)), 12)
    assert md["topics"] == {TOPIC: (0, 2)}, md


def test_five_byte_varint_with_high_bits(conn):
    # 2 (one topic, +1) in five bytes; the fifth byte's 0x70 bits lie past 32 and are dropped.
    count = bytes([0x82, 0x80, 0x80, 0x80, 0x70])
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 13, b"c", b"\x00")
                                           + metadata_v12([TOPIC.encode()], count=count)), 13)
    assert md["topics"] == {TOPIC: (0, 2)}, md


def test_invalid_utf8_and_empty_names(conn):
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 14, b"", b"\x00")
                                           + metadata_v12([b"bad\xffname", b"", TOPIC.encode()])), 14)
    assert md["topics"]["bad\ufffdname"] == (INVALID_TOPIC_EXCEPTION, 0), md
    assert md["topics"][""] == (INVALID_TOPIC_EXCEPTION, 0), md
    assert md["topics"][TOPIC] == (0, 2), md
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 15, b"c", b"\x00")
                                           + metadata_v12([b"never-created"])), 15)
    assert md["topics"] == {"never-created": (UNKNOWN_TOPIC_OR_PARTITION, 0)}, md


def test_null_client_id_in_header_v1(conn):
    # Metadata v1 (header v1): topics as a classic array of one classic string.
    body = struct.pack(">i", 1) + struct.pack(">h", len(TOPIC)) + TOPIC.encode()
    frame = conn.roundtrip(header(3, 1, 16, None, None) + body)
    r = Reader(frame)
    assert r.take("i") == 16
    for _ in range(r.take("i")):  # brokers: node_id, host, port, rack
        r.take("i"), r.raw(r.take("h")), r.take("i")
        n = r.take("h")
        if n > 0:
            r.raw(n)
    r.take("i")  # controller
    assert r.take("i") == 1
    error, name = r.take("h"), r.raw(r.take("h")).decode()
    assert (error, name) == (0, TOPIC)


def test_api_versions_from_the_future(conn):
    frame = conn.roundtrip(header(18, 99, 17, b"future", b"\x01\x03\x01\xff") + b"\xde\xad\xbe\xef")
    r = Reader(frame)
    assert r.take("i") == 17  # response header v0, always, for ApiVersions
    assert r.take("h") == UNSUPPORTED_VERSION
    keys = {}
    for _ in range(r.take("i")):  # v0 body: classic array of (api_key, min, max)
        k, lo, hi = r.take("h"), r.take("h"), r.take("h")
        keys[k] = (lo, hi)
    # Kafka lists only ApiVersions' own range (ApiVersionsRequest.getErrorResponse).
    assert list(keys) == [18] and keys[18][0] == 0 and keys[18][1] >= 3, keys
    # The connection still serves requests.
    md = parse_metadata_v12(conn.roundtrip(header(3, 12, 18, b"c", b"\x00") + metadata_v12([TOPIC.encode()])), 18)
    assert md["topics"] == {TOPIC: (0, 2)}, md
