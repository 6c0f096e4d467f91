"""AlterPartitionReassignments / ListPartitionReassignments (API keys 45/46, KIP-455) on one node,
through raw requests and Kafka 4.4.0's `kafka-reassign-partitions`: the answers a single broker can
give without moving data. A target naming a broker that is not registered, one naming a broker twice,
or an empty one is refused with INVALID_REPLICA_ASSIGNMENT and Kafka's message; cancelling where no
reassignment is in progress with NO_REASSIGNMENT_IN_PROGRESS; an unknown topic or partition with
UNKNOWN_TOPIC_OR_PARTITION; a changed replica count with INVALID_REPLICATION_FACTOR when v1's
allow_replication_factor_change is false; the current replicas as a target change nothing. Listing
finds no reassignment. The same tests pass against Apache Kafka (SLUICE_TARGET=kafka), which is how
the answers are known to match. Moves between brokers are in test_cluster.py (they need brokers)."""

from __future__ import annotations

import json
import struct

import kafka_cli
import pytest
import wire
from kafka.admin import KafkaAdminClient, NewTopic

TOPIC = "ra-one"
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85


@pytest.fixture(scope="module")
def topic(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="test-reassign",
                             request_timeout_ms=30000)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    admin.close()
    return TOPIC


@pytest.fixture(scope="module")
def node_id(broker, topic):
    """The single broker's id (the replica of every partition)."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="test-reassign-describe")
    try:
        brokers = admin.describe_cluster()["brokers"]
        assert len(brokers) == 1, brokers
        return brokers[0]["broker_id"]
    finally:
        admin.close()


def _alter(broker, targets: list[tuple[str, list[tuple[int, list[int] | None]]]], version: int = 0,
           allow_rf_change: bool = True, timeout_ms: int = 30000):
    """One AlterPartitionReassignments: (top-level error, message, [(topic, [(partition, error,
    message)])])."""
    def partition(p, replicas):
        ids = None if replicas is None else [struct.pack(">i", r) for r in replicas]
        return struct.pack(">i", p) + wire.carray(ids) + b"\x00"

    topics = [wire.cstring(t) + wire.carray([partition(p, r) for p, r in ps]) + b"\x00" for t, ps in targets]
    body = struct.pack(">i", timeout_ms)
    if version >= 1:
        body += struct.pack(">?", allow_rf_change)
    body += wire.carray(topics) + b"\x00"
    r = wire.call(broker, ALTER_PARTITION_REASSIGNMENTS, version, body)
    assert r.take("i") >= 0
    if version >= 1:
        assert r.take("?") == allow_rf_change
    error, message = r.take("h"), r.string()

    def part(r):
        p = (r.take("i"), r.take("h"), r.string())
        r.tags()
        return p

    def top(r):
        t = (r.string(), r.array(part))
        r.tags()
        return t

    results = r.array(top)
    r.tags()
    return error, message, results


def _list(broker, topics: list[tuple[str, list[int]]] | None):
    items = None if topics is None else [
        wire.cstring(t) + wire.carray([struct.pack(">i", p) for p in ps]) + b"\x00" for t, ps in topics]
    r = wire.call(broker, LIST_PARTITION_REASSIGNMENTS, 0, struct.pack(">i", 30000) + wire.carray(items) + b"\x00")
    assert r.take("i") >= 0
    error, message = r.take("h"), r.string()

    def ids(r):
        return r.take("i")

    def part(r):
        p = (r.take("i"), r.array(ids), r.array(ids), r.array(ids))
        r.tags()
        return p

    def top(r):
        t = (r.string(), r.array(part))
        r.tags()
        return t

    topics_out = r.array(top)
    r.tags()
    return error, message, topics_out


def test_a_missing_broker_is_an_invalid_replica_assignment(broker, topic, node_id):
    error, message, results = _alter(broker, [(topic, [(0, [node_id, 99])])])
    assert (error, message) == (0, None)
    assert results == [(topic, [(0, INVALID_REPLICA_ASSIGNMENT,
                                 "The manual partition assignment includes broker 99, but no such broker is "
                                 "registered.")])]


def test_duplicate_and_empty_targets_are_invalid(broker, topic, node_id):
    _, _, results = _alter(broker, [(topic, [(0, [node_id, node_id]), (1, [])])])
    assert results == [(topic, [
        (0, INVALID_REPLICA_ASSIGNMENT,
         f"The manual partition assignment includes the broker {node_id} more than once."),
        (1, INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
    ])]


def test_cancelling_nothing_and_unknown_partitions(broker, topic, node_id):
    _, _, results = _alter(broker, [(topic, [(1, None), (7, [node_id])]), ("ra-nope", [(0, None)])])
    assert results == [
        # Kafka sends no message for this one (the exception's is the code's own).
        (topic, [(1, NO_REASSIGNMENT_IN_PROGRESS, None),
                 (7, UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:7.")]),
        ("ra-nope", [(0, UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named ra-nope.")]),
    ]


def test_v1_can_forbid_changing_the_replica_count(broker, topic, node_id):
    error, _, results = _alter(broker, [(topic, [(0, [node_id, 99])])], version=1, allow_rf_change=False)
    assert error == 0
    # The target is checked for unknown brokers first.
    assert results[0][1][0][1] == INVALID_REPLICA_ASSIGNMENT, results
    _, _, results = _alter(broker, [(topic, [(0, [node_id]), (1, [node_id])])], version=1,
                           allow_rf_change=False)
    assert results == [(topic, [(0, 0, None), (1, 0, None)])]


def test_the_current_replicas_change_nothing_and_nothing_is_listed(broker, topic, node_id):
    error, _, results = _alter(broker, [(topic, [(0, [node_id])])])
    assert (error, results) == (0, [(topic, [(0, 0, None)])])
    assert _list(broker, None) == (0, None, [])
    assert _list(broker, [(topic, [0, 1, 5]), ("ra-nope", [0])]) == (0, None, [])


def test_the_tool_lists_no_reassignment_and_refuses_an_unknown_broker(broker, topic, node_id, tmp_path):
    r = kafka_cli.run("kafka-reassign-partitions", "--bootstrap-server", broker.bootstrap, "--list",
                      logdir=tmp_path)
    assert r.stdout == "No partition reassignments found.\n", r
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [node_id, 99]}]}))
    r = kafka_cli.run("kafka-reassign-partitions", "--bootstrap-server", broker.bootstrap, "--execute",
                      "--reassignment-json-file", str(plan), logdir=tmp_path, check=False)
    assert r.returncode == 1, r
    assert "Unknown broker id 99" in r.stdout + r.stderr, r


def test_throttle_rates_are_dynamic_broker_configs(broker, node_id, tmp_path):
    """kafka-configs sets the replication throttle rates on the broker (what
    `kafka-reassign-partitions --throttle` does), shows them as dynamic broker configs, refuses a
    negative rate, and deletes them (what `--verify` does)."""
    def configs(*args, check=True):
        return kafka_cli.run("kafka-configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "brokers",
                             "--entity-name", str(node_id), *args, logdir=tmp_path, check=check)

    configs("--alter", "--add-config",
            "leader.replication.throttled.rate=1000000,follower.replication.throttled.rate=2000000")
    shown = configs("--describe").stdout.splitlines()
    assert shown[0] == f"Dynamic configs for broker {node_id} are:", shown
    dynamic = {l.split("=", 1)[0].strip(): l for l in shown[1:]}
    assert dynamic["leader.replication.throttled.rate"].strip().startswith(
        "leader.replication.throttled.rate=1000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "leader.replication.throttled.rate=1000000"), shown
    assert "follower.replication.throttled.rate=2000000" in dynamic["follower.replication.throttled.rate"], shown
    r = configs("--alter", "--add-config", "leader.replication.throttled.rate=-1", check=False)
    assert r.returncode != 0, r
    configs("--alter", "--delete-config", "leader.replication.throttled.rate,follower.replication.throttled.rate")
    assert configs("--describe").stdout.splitlines() == [f"Dynamic configs for broker {node_id} are:"]
