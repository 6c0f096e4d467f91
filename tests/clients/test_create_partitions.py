"""CreatePartitions (API key 37, KIP-195) end to end: kafka-python's
KafkaAdminClient.create_partitions and Kafka 4.4.0's `kafka-topics --alter --partitions` grow a
topic (2 → 5 → 8, then 9 with a manual assignment); validate_only changes nothing; shrinking, the
same count, an unknown topic, a duplicated name and bad manual assignments are refused with Kafka's
error codes and messages; kcat then produces to and consumes from every partition, the new ones
included. The same tests pass against Apache Kafka (SLUICE_TARGET=kafka), which is how the codes
and messages are known to match."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time

import harness
import kafka_cli
import pytest
from kafka.admin import KafkaAdminClient, NewTopic

BROKER_SETTINGS = {"num.partitions": 1}
TOPIC = "cp-grow"

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_PARTITIONS = 37
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42


@pytest.fixture(scope="module")
def admin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="test-create-partitions",
                              request_timeout_ms=30000)
    yield client
    client.close()


@pytest.fixture(scope="module")
def cli(broker, tmp_path_factory):
    kafka_cli.ensure_tools_libs()
    logdir = tmp_path_factory.mktemp("kafka-cli")

    def run(tool, *args, **kw):
        return kafka_cli.run(tool, *args, "--bootstrap-server", broker.bootstrap, logdir=logdir, **kw)

    return run


@pytest.fixture(scope="module")
def node_id(admin):
    brokers = admin.describe_cluster()["brokers"]
    assert len(brokers) == 1, brokers
    return brokers[0]["broker_id"]


def partition_leaders(kcat: str, broker, topic: str) -> dict[int, int]:
    """kcat -L: {partition: leader} of the topic as the broker's Metadata shows it."""
    r = subprocess.run([kcat, "-L", "-J", "-b", broker.bootstrap, "-t", topic], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    topics = [t for t in json.loads(r.stdout)["topics"] if t["topic"] == topic]
    assert len(topics) == 1, r.stdout
    return {p["partition"]: p["leader"] for p in topics[0]["partitions"]}


def wait_partition_count(kcat: str, broker, topic: str, count: int, timeout: float = 30) -> dict[int, int]:
    """Metadata of a broker may follow its controller a moment later (Kafka); wait for it."""
    deadline = time.time() + timeout
    while True:
        leaders = partition_leaders(kcat, broker, topic)
        if len(leaders) >= count or time.time() > deadline:
            return leaders
        time.sleep(0.2)


def results(response) -> dict[str, tuple[int, str | None]]:
    """A CreatePartitions response as {topic: (error_code, error_message)}."""
    out = {}
    for r in response.results:
        name, code, message = r.name, r.error_code, r.error_message
        assert name not in out, f"{name} answered twice: {response}"
        out[name] = (code, message)
    return out


def grow(admin, topics: dict, validate_only: bool = False) -> dict[str, tuple[int, str | None]]:
    return results(admin.create_partitions(topics, validate_only=validate_only, raise_errors=False))


def create_partitions_v1(broker, topics: list[tuple[str, int]], validate_only: bool) -> list[tuple[str, int, str | None]]:
    """CreatePartitions v1 (the non-flexible encoding) over a raw socket: [(name, code, message)] in answer order.
    kafka-python's admin takes a dict, so it cannot name a topic twice; this can."""
    def s16(text: str) -> bytes:
        raw = text.encode()
        return struct.pack(">h", len(raw)) + raw

    body = struct.pack(">i", len(topics))
    for name, count in topics:
        body += s16(name) + struct.pack(">ii", count, -1)  # assignments: null
    body += struct.pack(">ib", 30000, 1 if validate_only else 0)
    frame = struct.pack(">hhi", 37, 1, 4242) + s16("raw-create-partitions") + body
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", harness._recv_exact(s, 4))
        resp = harness._recv_exact(s, size)
    correlation_id, _throttle, count = struct.unpack(">iii", resp[:12])
    assert correlation_id == 4242
    pos, out = 12, []
    for _ in range(count):
        (n,) = struct.unpack(">h", resp[pos:pos + 2])
        name = resp[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        code, m = struct.unpack(">hh", resp[pos:pos + 4])
        pos += 4
        message = None
        if m >= 0:
            message = resp[pos:pos + m].decode()
            pos += m
        out.append((name, code, message))
    assert pos == len(resp), "trailing bytes in the CreatePartitions v1 response"
    return out


def test_grow_with_admin_client_and_cli(broker, admin, cli, kcat, node_id):
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    assert len(wait_partition_count(kcat, broker, TOPIC, 2)) == 2

    # kafka-python: 2 -> 5.
    assert grow(admin, {TOPIC: 5}) == {TOPIC: (NONE, None)}
    leaders = wait_partition_count(kcat, broker, TOPIC, 5)
    assert leaders == {p: node_id for p in range(5)}, leaders

    # validate_only answers as if it were done, and changes nothing.
    assert grow(admin, {TOPIC: 7}, validate_only=True) == {TOPIC: (NONE, None)}
    time.sleep(0.5)
    assert len(partition_leaders(kcat, broker, TOPIC)) == 5

    # Kafka's own tool: 5 -> 8.
    r = cli("kafka-topics", "--alter", "--topic", TOPIC, "--partitions", "8")
    assert r.stdout.strip() == "", r.stdout
    leaders = wait_partition_count(kcat, broker, TOPIC, 8)
    assert leaders == {p: node_id for p in range(8)}, leaders
    described = [ln for ln in cli("kafka-topics", "--describe", "--topic", TOPIC).stdout.splitlines() if ln.strip()]
    assert f"PartitionCount: 8" in described[0], described
    assert [ln.split("Partition: ")[1].split("\t")[0] for ln in described[1:]] == [str(p) for p in range(8)], described

    # A manual assignment: partition 8 on this broker.
    assert grow(admin, {TOPIC: {"count": 9, "assignments": [[node_id]]}}) == {TOPIC: (NONE, None)}
    assert wait_partition_count(kcat, broker, TOPIC, 9) == {p: node_id for p in range(9)}


def test_errors(broker, admin, cli, kcat, node_id):
    """Run after the topic has 9 partitions (test_grow_with_admin_client_and_cli)."""
    assert grow(admin, {TOPIC: 4}) == {
        TOPIC: (INVALID_PARTITIONS, f"The topic {TOPIC} currently has 9 partition(s); 4 would not be an increase.")}
    assert grow(admin, {TOPIC: 9}) == {TOPIC: (INVALID_PARTITIONS, "Topic already has 9 partition(s).")}
    assert grow(admin, {"cp-never-created": 3}) == {"cp-never-created": (UNKNOWN_TOPIC_OR_PARTITION, None)}
    assert grow(admin, {TOPIC: {"count": 11, "assignments": [[node_id]]}}) == {
        TOPIC: (INVALID_REPLICA_ASSIGNMENT,
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")}
    assert grow(admin, {TOPIC: {"count": 10, "assignments": [[node_id + 1000]]}}) == {
        TOPIC: (INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {node_id + 1000}, but no such broker is registered.")}
    assert grow(admin, {TOPIC: {"count": 10, "assignments": [[node_id, node_id]]}}) == {
        TOPIC: (INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {node_id} more than once.")}

    # Several topics in one request are decided one by one; the failing one does not stop the other.
    admin.create_topics([NewTopic("cp-other", 1, 1)])
    assert grow(admin, {"cp-other": 3, "cp-never-created": 2}) == {
        "cp-other": (NONE, None), "cp-never-created": (UNKNOWN_TOPIC_OR_PARTITION, None)}
    assert len(wait_partition_count(kcat, broker, "cp-other", 3)) == 3

    # A name given twice: one INVALID_REQUEST result for it (v1, non-flexible, over a raw socket).
    answered = create_partitions_v1(broker, [("cp-other", 5), ("cp-other", 6), ("cp-never-created", 2)],
                                    validate_only=True)
    assert sorted(answered) == [("cp-never-created", UNKNOWN_TOPIC_OR_PARTITION, None),
                                ("cp-other", INVALID_REQUEST, "Duplicate topic name.")], answered
    assert create_partitions_v1(broker, [], validate_only=False) == []

    # Kafka's tool reports the broker's message and exits 1.
    r = cli("kafka-topics", "--alter", "--topic", TOPIC, "--partitions", "3", check=False)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"The topic {TOPIC} currently has 9 partition(s); 3 would not be an increase." in r.stdout + r.stderr, \
        (r.stdout, r.stderr)
    r = cli("kafka-topics", "--alter", "--topic", "cp-never-created", "--partitions", "3", check=False)
    assert r.returncode == 1 and "Topic 'cp-never-created' does not exist as expected" in r.stdout, (r.stdout, r.stderr)

    # Nothing above changed the topic.
    assert len(partition_leaders(kcat, broker, TOPIC)) == 9


def test_kcat_produces_to_and_consumes_from_the_new_partitions(broker, kcat):
    """Run after the topic has 9 partitions: keyed messages spread over all 9 by librdkafka's
    partitioner, then one partition each by -p; read back per partition with kcat -C."""
    count = 900
    lines = "".join(f"{harness.make_key('k', i)}:{harness.make_value('k', i)}\n" for i in range(count))
    r = subprocess.run([kcat, "-P", "-b", broker.bootstrap, "-t", TOPIC, "-K:"], input=lines, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "error" not in r.stderr.lower(), r.stderr[-3000:]

    def read(partition: int) -> list[tuple[int, int, str, str]]:
        r = subprocess.run([kcat, "-C", "-b", broker.bootstrap, "-t", TOPIC, "-p", str(partition), "-o", "beginning",
                            "-e", "-q", "-f", "%p\t%o\t%k\t%s\n"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "error" not in r.stderr.lower(), r.stderr[-3000:]
        records = []
        for ln in r.stdout.splitlines():
            p, o, k, v = ln.split("\t")
            records.append((int(p), int(o), k, v))
        return records

    records = [rec for p in range(9) for rec in read(p)]
    counts = harness.verify_exactly_once(records, count, prefix="k", partitions=9)
    assert sorted(counts) == list(range(9)), f"every partition, the new ones too, must get records: {counts}"

    # One more record into each new partition by number, read back after the keyed ones.
    for p in range(2, 9):
        r = subprocess.run([kcat, "-P", "-b", broker.bootstrap, "-t", TOPIC, "-p", str(p), "-K:"],
                           input=f"direct-{p}:to-{p}\n", capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "error" not in r.stderr.lower(), r.stderr[-3000:]
        last = read(p)[-1]
        assert last == (p, counts[p], f"direct-{p}", f"to-{p}"), last
