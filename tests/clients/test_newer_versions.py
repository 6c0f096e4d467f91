"""The request versions Kafka 4.4 added to APIs Sluice serves, sent as raw frames and answered as
Apache Kafka 4.4.0 answers them (the same test runs with SLUICE_TARGET=kafka):

- ApiVersions v5: the cluster id and node id the client expects. Both unset: the normal answer;
  naming another cluster or node: REBOOTSTRAP_REQUIRED (129) with no APIs; only one of the two:
  INVALID_REQUEST (42); bad v3+ client software fields: INVALID_REQUEST.
- ListOffsets v11: the earliest-pending-upload timestamp (-6). Every special timestamp needs the
  version that introduced it (-3 v7, -4 v8, -5 v9, -6 v11), otherwise, and for undefined negative
  timestamps, UNSUPPORTED_VERSION (35) for that partition; without tiered storage -4 is the log
  start offset and -5/-6 find no offset (-1).
- DeleteGroups v3: a per-group error message (null for these errors), GROUP_ID_NOT_FOUND (69) for
  unknown groups and the empty id, NON_EMPTY_GROUP (68) for a group with members."""

from __future__ import annotations

import struct

from kafka import KafkaConsumer, KafkaProducer

import wire
from wire import carray, cstring

BROKER_SETTINGS = {"num.partitions": 1, "auto.create.topics.enable": True}
NONE, UNSUPPORTED_VERSION, UNKNOWN_TOPIC_OR_PARTITION = 0, 35, 3
INVALID_REQUEST, REBOOTSTRAP_REQUIRED = 42, 129
GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP = 69, 68


def call(broker, key: int, version: int, body: bytes, flexible: bool = True) -> wire.Reader:
    """This module's requests: client id "newer-versions", correlation id 11."""
    return wire.call(broker, key, version, body, flexible=flexible, client_id=b"newer-versions", correlation_id=11)


def api_versions(broker, version: int, name: str = "sluice-tests", cluster_id: str | None = None,
                 node_id: int = -1) -> tuple[int, int]:
    """(error code, number of APIs listed). The response header is v0 for every version."""
    body = cstring(name) + cstring("1.0")
    if version >= 5:
        body += cstring(cluster_id) + struct.pack(">i", node_id)
    r = call(broker, 18, version, body + b"\x00")
    return r.take("h"), r.uvarint() - 1


def metadata_identity(broker) -> tuple[str, int]:
    """The cluster id and node id the broker reports in Metadata v12 (all topics)."""
    body = b"\x00\x00\x00\x00"  # topics null (all), no auto creation, no authorized operations, tags
    r = call(broker, 3, 12, body)
    r.take("i")  # throttle
    brokers = []
    for _ in range(r.uvarint() - 1):
        node = r.take("i")
        r.string()
        r.take("i")
        r.string()
        r.tags()
        brokers.append(node)
    cluster_id = r.string()
    assert len(brokers) == 1, brokers
    return cluster_id, brokers[0]


def test_api_versions_v5_checks_the_expected_identity(broker):
    cluster_id, node_id = metadata_identity(broker)
    _, listed_v4 = api_versions(broker, 4)
    assert listed_v4 > 20
    assert api_versions(broker, 5) == (NONE, listed_v4)
    assert api_versions(broker, 5, cluster_id=cluster_id, node_id=node_id) == (NONE, listed_v4)
    assert api_versions(broker, 5, cluster_id="not-" + cluster_id, node_id=node_id) == (REBOOTSTRAP_REQUIRED, 0)
    assert api_versions(broker, 5, cluster_id=cluster_id, node_id=node_id + 1) == (REBOOTSTRAP_REQUIRED, 0)
    assert api_versions(broker, 5, cluster_id=cluster_id, node_id=-1) == (INVALID_REQUEST, 0)
    assert api_versions(broker, 5, cluster_id=None, node_id=node_id) == (INVALID_REQUEST, 0)
    assert api_versions(broker, 3, name="-not-a-name") == (INVALID_REQUEST, 0)
    assert api_versions(broker, 4, name="") == (INVALID_REQUEST, 0)


def list_offsets(broker, version: int, topic: str, timestamp: int) -> tuple[int, int, int]:
    """(error code, timestamp, offset) for partition 0 of `topic`."""
    flexible = version >= 6
    partition = struct.pack(">i", 0) + (struct.pack(">i", -1) if version >= 4 else b"") + struct.pack(">q", timestamp)
    if flexible:
        body = (struct.pack(">ib", -1, 0) + carray([cstring(topic) + carray([partition + b"\x00"]) + b"\x00"])
                + (struct.pack(">i", 5000) if version >= 10 else b"") + b"\x00")
    else:
        name = topic.encode()
        body = (struct.pack(">i", -1) + (b"\x00" if version >= 2 else b"") + struct.pack(">i", 1)
                + struct.pack(">h", len(name)) + name + struct.pack(">i", 1) + partition)
    r = call(broker, 2, version, body, flexible=flexible)
    if version >= 2:
        r.take("i")  # throttle
    if flexible:
        assert r.uvarint() == 2 and r.string() == topic and r.uvarint() == 2
    else:
        assert r.take("i") == 1
        n = r.take("h")
        assert r.raw(n).decode() == topic
        assert r.take("i") == 1
    assert r.take("i") == 0  # partition index
    return r.take("h"), r.take("q"), r.take("q")


def test_list_offsets_special_timestamps_by_version(broker):
    topic = "newer-list-offsets"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    base_ms = 1_700_000_000_000
    for i in range(5):
        producer.send(topic, b"v%d" % i, partition=0, timestamp_ms=base_ms + 10 * i)
    producer.flush()
    producer.close()
    first_version = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}
    found = {-1: (NONE, -1, 5), -2: (NONE, -1, 0), -3: (NONE, base_ms + 40, 4), -4: (NONE, -1, 0),
             -5: (NONE, -1, -1), -6: (NONE, -1, -1)}
    refused = (UNSUPPORTED_VERSION, -1, -1)
    for version in (1, 4, 6, 7, 8, 9, 10, 11):
        for timestamp, first in first_version.items():
            got = list_offsets(broker, version, topic, timestamp)
            assert got == (found[timestamp] if version >= first else refused), (version, timestamp, got)
        assert list_offsets(broker, version, topic, -7) == refused, version
        assert list_offsets(broker, version, topic, base_ms + 15) == (NONE, base_ms + 20, 2), version
    # The version check comes before the topic lookup, as in Kafka's ReplicaManager.
    assert list_offsets(broker, 10, "newer-no-such-topic", -6) == refused
    assert list_offsets(broker, 11, "newer-no-such-topic", -6)[0] == UNKNOWN_TOPIC_OR_PARTITION


def delete_groups(broker, version: int, groups: list[str]) -> dict[str, tuple[int, str | None]]:
    r = call(broker, 42, version, carray([cstring(g) for g in groups]) + b"\x00")
    r.take("i")  # throttle
    out = {}
    for _ in range(r.uvarint() - 1):
        group, code = r.string(), r.take("h")
        message = r.string() if version >= 3 else "absent"
        r.tags()
        out[group] = (code, message)
    return out


def test_delete_groups_v3(broker):
    topic = "newer-delete-groups"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send(topic, b"x").get(timeout=30)
    producer.close()
    consumers = {}
    for group in ("newer-active", "newer-empty"):
        c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False)
        assert sum(len(v) for v in c.poll(timeout_ms=20000, max_records=1).values()) == 1
        c.commit()
        consumers[group] = c
    consumers.pop("newer-empty").close()
    try:
        got = delete_groups(broker, 3, ["newer-unknown", "newer-active", "", "newer-empty"])
        assert got == {"newer-unknown": (GROUP_ID_NOT_FOUND, None), "newer-active": (NON_EMPTY_GROUP, None),
                       "": (GROUP_ID_NOT_FOUND, None), "newer-empty": (NONE, None)}, got
        # Deleted: now unknown, at v2 (no message field) as at v3.
        assert delete_groups(broker, 2, ["newer-empty"]) == {"newer-empty": (GROUP_ID_NOT_FOUND, "absent")}
    finally:
        consumers["newer-active"].close()
