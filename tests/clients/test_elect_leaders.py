"""ElectLeaders (API key 43, KIP-183 / KIP-460) on one node, through Kafka 4.4.0's
`kafka-leader-election` and raw requests: a partition led by its preferred replica needs no
election (preferred, or unclean since it has a leader), --all-topic-partitions answers only the
partitions that needed one (none here), an unknown topic or partition is refused with Kafka's code
and message, an unknown election type fails the whole request with INVALID_REQUEST and a
timeout_ms of 0 with REQUEST_TIMED_OUT. The same
tests pass against Apache Kafka (SLUICE_TARGET=kafka), which is how the outputs are known to
match. The elections that move leadership are in test_cluster.py (they need replicas)."""

from __future__ import annotations

import struct

import kafka_cli
import pytest
import wire
from kafka.admin import KafkaAdminClient, NewTopic

TOPIC = "el-one"
ELECT_LEADERS = 43
INVALID_REQUEST = 42
REQUEST_TIMED_OUT = 7


@pytest.fixture(scope="module")
def topic(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="test-elect-leaders",
                             request_timeout_ms=30000)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    admin.close()
    return TOPIC


@pytest.fixture(scope="module")
def elect(broker, tmp_path_factory):
    kafka_cli.ensure_tools_libs()
    logdir = tmp_path_factory.mktemp("kafka-cli")

    def run(*args, check=True):
        return kafka_cli.run("kafka-leader-election", "--bootstrap-server", broker.bootstrap, *args,
                             logdir=logdir, check=check)

    return run


def test_a_preferred_leader_needs_no_election(topic, elect):
    r = elect("--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert r.stdout == f"Valid replica already elected for partitions {topic}-0\n", r


def test_an_unclean_election_is_not_needed_where_there_is_a_leader(topic, elect):
    r = elect("--election-type", "unclean", "--topic", topic, "--partition", "1")
    assert r.stdout == f"Valid replica already elected for partitions {topic}-1\n", r


def test_all_partitions_answer_only_those_that_needed_an_election(topic, elect):
    r = elect("--election-type", "preferred", "--all-topic-partitions")
    assert r.stdout == "", r


@pytest.mark.parametrize("name, partition, message", [
    ("el-nope", 0, "No such topic as el-nope"),
    (TOPIC, 5, f"No such partition as {TOPIC}-5"),
])
def test_unknown_topics_and_partitions_are_refused(topic, elect, name, partition, message):
    r = elect("--election-type", "preferred", "--topic", name, "--partition", str(partition), check=False)
    assert r.returncode == 1, r
    assert r.stdout == (f"Error completing leader election (PREFERRED) for partition: {name}-{partition}: "
                        f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: {message}\n"), r
    assert "1 replica(s) could not be elected" in r.stderr, r.stderr


def _elect_v2(broker, election_type: int, topics: list[tuple[str, list[int]]] | None, timeout_ms: int = 30000):
    items = None if topics is None else [
        wire.cstring(t) + wire.uvarint(len(ps) + 1) + b"".join(struct.pack(">i", p) for p in ps) + b"\x00"
        for t, ps in topics]
    body = struct.pack(">b", election_type) + wire.carray(items) + struct.pack(">i", timeout_ms) + b"\x00"
    r = wire.call(broker, ELECT_LEADERS, 2, body)
    throttle, error = r.take("i"), r.take("h")

    def partition(r):
        p = (r.take("i"), r.take("h"), r.string())
        r.tags()
        return p

    def topic(r):
        t = (r.string(), r.array(partition))
        r.tags()
        return t

    results = r.array(topic)
    r.tags()
    assert throttle >= 0
    return error, results


def test_an_unknown_election_type_fails_the_whole_request(broker, topic):
    error, results = _elect_v2(broker, 2, [(topic, [0, 1])])
    message = "Unknown election type 2"
    assert (error, results) == (INVALID_REQUEST, [(topic, [(0, INVALID_REQUEST, message),
                                                           (1, INVALID_REQUEST, message)])])


def test_the_raw_answer_groups_partitions_per_requested_topic(broker, topic):
    error, results = _elect_v2(broker, 0, [(topic, [1, 0]), ("el-nope", [3])])
    assert error == 0
    assert results == [
        (topic, [(1, 84, "Leader election not needed for topic partition."),
                 (0, 84, "Leader election not needed for topic partition.")]),
        ("el-nope", [(3, 3, "No such topic as el-nope")]),
    ]


def test_a_request_whose_timeout_has_passed_times_out(broker, topic):
    """timeout_ms is the controller's deadline: 0 has passed before the election is decided."""
    error, results = _elect_v2(broker, 0, [(topic, [0])], timeout_ms=0)
    assert error == REQUEST_TIMED_OUT, (error, results)
    assert [(t, [p[:2] for p in ps]) for t, ps in results] == [(topic, [(0, REQUEST_TIMED_OUT)])], results
