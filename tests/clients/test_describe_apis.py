"""DescribeTopicPartitions, DescribeLogDirs and DescribeProducers, through the tools that call them
(Kafka's kafka-topics --describe, kafka-log-dirs --describe, kafka-transactions describe-producers,
from the Maven Central jars of kafka_cli.py) and through raw requests for what the tools hide (the
pagination cursor, error codes and messages, the log directory's volume sizes).  Every check reads
real values: leaders, replicas and ISR, log sizes that grow with what was produced, the producer
id, epoch, last sequence and last timestamp of an idempotent producer.  The same tests pass against
Apache Kafka (SLUICE_TARGET=kafka)."""

from __future__ import annotations

import json
import os
import re
import struct

import kafka_api_versions
import kafka_cli
import pytest
from kafka import KafkaProducer
from wire import call, carray, cstring

BROKER_SETTINGS = {"num.partitions": 1}
NODE_ID = 1  # both targets run node.id 1

DESCRIBE_LOG_DIRS = 35
DESCRIBE_PRODUCERS = 61
DESCRIBE_TOPIC_PARTITIONS = 75

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUEST = 42
# Every operation on a topic, as a broker without an authorizer reports them (READ, WRITE, CREATE,
# DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS as bits of their ACL operation codes).
TOPIC_OPERATIONS_ALL = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


@pytest.fixture(scope="module")
def cli(broker, tmp_path_factory):
    """run(tool, *args, **kw): the tool against the module's broker (--bootstrap-server first, as
    kafka-transactions wants it before its sub-command)."""
    kafka_cli.ensure_tools_libs()
    logdir = tmp_path_factory.mktemp("kafka-cli")

    def run(tool, *args, **kw):
        return kafka_cli.run(tool, "--bootstrap-server", broker.bootstrap, *args, logdir=logdir, **kw)

    return run


def create_topic(cli, topic: str, partitions: int) -> None:
    r = cli("kafka-topics", "--create", "--topic", topic, "--partitions", str(partitions))
    assert r.stdout.strip() == f"Created topic {topic}.", r.stdout


def produce(broker, topic: str, partition: int, count: int, first_ts: int, size: int = 100) -> tuple[int, int]:
    """Sends `count` records one at a time (one batch each) with an idempotent producer; returns
    its (producer id, epoch)."""
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all")
    try:
        for i in range(count):
            p.send(topic, value=b"x" * size, partition=partition, timestamp_ms=first_ts + i).get(timeout=30)
        pid = p._transaction_manager.producer_id_and_epoch
        return pid.producer_id, pid.epoch
    finally:
        p.close()


# ---------------------------------------------------------------------------- raw requests

def describe_topic_partitions(broker, topics: list[str], limit: int = 2000,
                              cursor: tuple[str, int] | None = None) -> dict:
    body = carray([cstring(t) + b"\x00" for t in topics]) + struct.pack(">i", limit)
    body += b"\xff" if cursor is None else b"\x01" + cstring(cursor[0]) + struct.pack(">i", cursor[1]) + b"\x00"
    r = call(broker, DESCRIBE_TOPIC_PARTITIONS, 0, body + b"\x00")

    def ids(r):
        return r.array(lambda r: r.take("i"))

    def partition(r):
        p = {"error": r.take("h"), "index": r.take("i"), "leader": r.take("i"), "epoch": r.take("i"),
             "replicas": ids(r), "isr": ids(r), "elr": ids(r), "last_known_elr": ids(r), "offline": ids(r)}
        r.tags()
        return p

    def topic(r):
        t = {"error": r.take("h"), "name": r.string(), "id": r.raw(16)}
        t.update(internal=r.take("?"), partitions=r.array(partition), operations=r.take("i"))
        r.tags()
        return t

    r.take("i")
    out = {"topics": r.array(topic)}
    out["next"] = None
    if r.take("b") >= 0:
        out["next"] = (r.string(), r.take("i"))
        r.tags()
    r.tags()
    return out


def describe_producers_raw(broker, topic: str, partitions: list[int]) -> list[dict]:
    body = carray([cstring(topic) + carray([struct.pack(">i", p) for p in partitions]) + b"\x00"]) + b"\x00"
    r = call(broker, DESCRIBE_PRODUCERS, 0, body)

    def producer(r):
        p = dict(zip(("id", "epoch", "last_sequence", "last_timestamp", "coordinator_epoch", "txn_start"),
                     (r.take("q"), r.take("i"), r.take("i"), r.take("q"), r.take("i"), r.take("q"))))
        r.tags()
        return p

    def partition(r):
        p = {"index": r.take("i"), "error": r.take("h"), "message": r.string(), "producers": r.array(producer)}
        r.tags()
        return p

    def topic_(r):
        t = {"name": r.string(), "partitions": r.array(partition)}
        r.tags()
        return t

    r.take("i")
    topics = r.array(topic_)
    assert [t["name"] for t in topics] == [topic]
    return topics[0]["partitions"]


def describe_log_dirs_v4(broker, topics: dict[str, list[int]] | None) -> dict:
    items = None if topics is None else [
        cstring(t) + carray([struct.pack(">i", p) for p in ps]) + b"\x00" for t, ps in topics.items()]
    r = call(broker, DESCRIBE_LOG_DIRS, 4, carray(items) + b"\x00")

    def partition(r):
        p = {"index": r.take("i"), "size": r.take("q"), "lag": r.take("q"), "future": r.take("?")}
        r.tags()
        return p

    def topic(r):
        t = {"name": r.string(), "partitions": r.array(partition)}
        r.tags()
        return t

    def result(r):
        d = {"error": r.take("h"), "dir": r.string(), "topics": r.array(topic), "total": r.take("q"),
             "usable": r.take("q")}
        r.tags()
        return d

    r.take("i")
    return {"error": r.take("h"), "results": r.array(result)}


# ---------------------------------------------------------------------------- DescribeTopicPartitions

def test_broker_serves_the_describe_apis(broker):
    advertised = kafka_api_versions.query(broker.bootstrap)
    assert advertised.get(DESCRIBE_TOPIC_PARTITIONS) == (0, 0), advertised
    assert advertised.get(DESCRIBE_PRODUCERS) == (0, 0), advertised
    low, high = advertised.get(DESCRIBE_LOG_DIRS, (None, None))
    # Kafka 4.1 serves 1-4, 4.4 adds v5 (IsCordoned).
    assert low == 1 and high >= 4, advertised


def parse_describe(text: str) -> dict[str, tuple[dict, list[dict]]]:
    """kafka-topics --describe: {topic: (topic line, partition lines)}, each line as {field: value}."""
    topics: dict[str, tuple[dict, list[dict]]] = {}
    for ln in (ln for ln in text.splitlines() if ln.strip()):
        fields = dict(f.split(": ", 1) if ": " in f else (f.rstrip(":"), "") for f in ln.strip().split("\t"))
        if "PartitionCount" in fields:
            topics[fields["Topic"]] = (fields, [])
        else:
            topics[fields["Topic"]][1].append(fields)
    return topics


def test_topics_describe_pages_through_every_partition(cli):
    sizes = {"dtp-a": 3, "dtp-b": 5, "dtp-c": 1}
    for topic, n in sizes.items():
        create_topic(cli, topic, n)
    # A page of 2 partitions: the admin client follows the cursor across and within topics.
    for extra in ([], ["--partition-size-limit-per-response", "2"]):
        described = parse_describe(cli("kafka-topics", "--describe", *extra).stdout)
        for topic, n in sizes.items():
            head, parts = described[topic]
            assert head["PartitionCount"] == str(n) and head["ReplicationFactor"] == "1", head
            assert re.fullmatch(r"[A-Za-z0-9_-]{22}", head["TopicId"]), head
            assert [p["Partition"] for p in parts] == [str(i) for i in range(n)], parts
            for p in parts:
                assert (p["Leader"], p["Replicas"], p["Isr"]) == (str(NODE_ID),) * 3, p
                # Only DescribeTopicPartitions carries the eligible leader replicas (empty here).
                assert p.get("Elr") == "" and p.get("LastKnownElr") == "", p
    head, parts = parse_describe(cli("kafka-topics", "--describe", "--topic", "dtp-b").stdout)["dtp-b"]
    assert len(parts) == 5


def test_describe_topic_partitions_cursor_and_errors(broker, cli):
    for topic, n in {"zz-page-a": 3, "zz-page-b": 2}.items():
        create_topic(cli, topic, n)

    def summary(r):
        return [(t["name"], t["error"], [p["index"] for p in t["partitions"]]) for t in r["topics"]], r["next"]

    # Every topic from the cursor on ("zz-page-" sorts before both and after every other topic).
    r = describe_topic_partitions(broker, [], limit=2, cursor=("zz-page-", 0))
    assert summary(r) == ([("zz-page-a", 0, [0, 1])], ("zz-page-a", 2))
    r = describe_topic_partitions(broker, [], limit=2, cursor=("zz-page-a", 2))
    assert summary(r) == ([("zz-page-a", 0, [2]), ("zz-page-b", 0, [0])], ("zz-page-b", 1))
    r = describe_topic_partitions(broker, [], limit=1, cursor=("zz-page-b", 1))
    assert summary(r) == ([("zz-page-b", 0, [1])], None)
    # The limit used up at a topic's end: the cursor names the next topic, partition 0.
    r = describe_topic_partitions(broker, ["zz-page-b", "zz-page-a"], limit=3)
    assert summary(r) == ([("zz-page-a", 0, [0, 1, 2])], ("zz-page-b", 0))

    # Named topics: sorted, unknown and illegal names answered with Kafka's errors.
    r = describe_topic_partitions(broker, ["zz-nope", "zz-page-b", "bad/name"])
    assert summary(r) == ([("bad/name", INVALID_TOPIC_EXCEPTION, []), ("zz-nope", UNKNOWN_TOPIC_OR_PARTITION, []),
                           ("zz-page-b", 0, [0, 1])], None)
    for t in r["topics"]:
        assert t["operations"] == TOPIC_OPERATIONS_ALL and not t["internal"], t
        if t["error"]:
            assert t["id"] == bytes(16), t
        else:
            assert t["id"] != bytes(16), t
    for p in r["topics"][2]["partitions"]:
        assert (p["error"], p["leader"], p["replicas"], p["isr"], p["offline"]) == (0, NODE_ID, [NODE_ID], [NODE_ID], []), p
        assert p["epoch"] >= 0 and p["elr"] == [] and p["last_known_elr"] == [], p

    # A cursor naming a topic the list lacks refuses the request.
    r = describe_topic_partitions(broker, ["zz-page-a"], cursor=("zz-page-b", 0))
    assert summary(r) == ([("zz-page-a", INVALID_REQUEST, [])], None)


# ---------------------------------------------------------------------------- DescribeLogDirs

def log_dirs(cli, topics: str) -> dict:
    """kafka-log-dirs --describe: {log dir: {partition name: entry}} for broker 1."""
    out = cli("kafka-log-dirs", "--describe", "--topic-list", topics).stdout
    doc = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    (b,) = doc["brokers"]
    assert b["broker"] == NODE_ID, doc
    return {d["logDir"]: (d["error"], {p["partition"]: p for p in d["partitions"]}) for d in b["logDirs"]}


def test_log_dirs_sizes_grow_with_produced_data(broker, cli):
    create_topic(cli, "ld-sizes", 2)
    create_topic(cli, "ld-other", 1)
    produce(broker, "ld-sizes", 0, 20, 1_760_000_000_000)
    produce(broker, "ld-other", 0, 5, 1_760_000_000_000)

    def sizes():
        dirs = log_dirs(cli, "ld-sizes")
        assert len(dirs) == 1, dirs
        ((path, (error, parts)),) = dirs.items()
        assert os.path.realpath(path) == os.path.realpath(broker.data_dir), path
        assert error is None, error
        # Only the topic asked for.
        assert sorted(parts) == ["ld-sizes-0", "ld-sizes-1"], parts
        for p in parts.values():
            assert p["offsetLag"] == 0 and p["isFuture"] is False, p
        return parts["ld-sizes-0"]["size"], parts["ld-sizes-1"]["size"]

    first, untouched = sizes()
    # 20 batches of one 100-byte record: each batch is 61 header bytes + the record (~110).
    assert first >= 20 * 150 and untouched == 0, (first, untouched)
    produce(broker, "ld-sizes", 0, 10, 1_760_000_001_000)
    produce(broker, "ld-sizes", 1, 3, 1_760_000_001_000)
    grown, second = sizes()
    assert grown >= first + 10 * 150 and second >= 3 * 150, (first, grown, second)
    # The growth is the bytes of the new batches: the same per batch as before.
    assert (grown - first) * 20 == first * 10, (first, grown)

    both = log_dirs(cli, "ld-sizes,ld-other")
    ((_, (_, parts)),) = both.items()
    assert sorted(parts) == ["ld-other-0", "ld-sizes-0", "ld-sizes-1"] and parts["ld-other-0"]["size"] > 0, parts


def test_log_dirs_v4_reports_the_volume(broker, cli):
    create_topic(cli, "ld-volume", 1)
    produce(broker, "ld-volume", 0, 2, 1_760_000_000_000)
    r = describe_log_dirs_v4(broker, None)
    assert r["error"] == 0 and len(r["results"]) == 1, r
    (d,) = r["results"]
    assert d["error"] == 0 and os.path.realpath(d["dir"]) == os.path.realpath(broker.data_dir), d
    st = os.statvfs(broker.data_dir)
    assert d["total"] == st.f_blocks * st.f_frsize, (d, st)
    assert 0 <= d["usable"] <= d["total"] and abs(d["usable"] - st.f_bavail * st.f_frsize) < 1 << 30, (d, st)
    # Null topics: every partition hosted, ours among them.
    topics = {t["name"]: t["partitions"] for t in d["topics"]}
    assert [p["index"] for p in topics["ld-volume"]] == [0] and topics["ld-volume"][0]["size"] > 0, topics
    # Named partitions that do not exist are left out.
    r = describe_log_dirs_v4(broker, {"ld-volume": [0, 5], "ld-missing": [0]})
    (d,) = r["results"]
    assert [(t["name"], [p["index"] for p in t["partitions"]]) for t in d["topics"]] == [("ld-volume", [0])], d


# ---------------------------------------------------------------------------- DescribeProducers

def describe_producers(cli, topic: str, partition: int) -> list[dict]:
    """kafka-transactions describe-producers: one {column: value} per active producer."""
    out = cli("kafka-transactions", "describe-producers", "--topic", topic, "--partition", str(partition)).stdout
    rows = [ln.split() for ln in out.splitlines() if ln.strip()]
    assert rows[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                       "CurrentTransactionStartOffset"], out
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def test_describe_producers_shows_the_idempotent_producer(broker, cli):
    create_topic(cli, "dp-idem", 2)
    assert describe_producers(cli, "dp-idem", 0) == []
    pid, epoch = produce(broker, "dp-idem", 0, 10, 1_760_000_000_000)
    assert pid >= 0 and epoch >= 0
    (row,) = describe_producers(cli, "dp-idem", 0)
    assert row == {"ProducerId": str(pid), "ProducerEpoch": str(epoch), "LatestCoordinatorEpoch": "-1",
                   "LastSequence": "9", "LastTimestamp": str(1_760_000_000_009),
                   "CurrentTransactionStartOffset": "None"}, row
    # A second producer: both listed; its sequence starts again at 0.
    pid2, epoch2 = produce(broker, "dp-idem", 0, 3, 1_760_000_005_000)
    assert pid2 != pid
    rows = {r["ProducerId"]: r for r in describe_producers(cli, "dp-idem", 0)}
    assert set(rows) == {str(pid), str(pid2)}, rows
    assert (rows[str(pid2)]["LastSequence"], rows[str(pid2)]["LastTimestamp"]) == ("2", str(1_760_000_005_002))
    assert rows[str(pid)]["LastSequence"] == "9"
    # The other partition saw none of them.
    assert describe_producers(cli, "dp-idem", 1) == []


def test_describe_producers_errors(broker, cli):
    create_topic(cli, "dp-errors", 1)
    pid, epoch = produce(broker, "dp-errors", 0, 2, 1_760_000_000_000)
    got = describe_producers_raw(broker, "dp-errors", [0, 1, -1])
    assert [(p["index"], p["error"], p["message"]) for p in got] == [
        (0, 0, None), (1, UNKNOWN_TOPIC_OR_PARTITION, None), (-1, UNKNOWN_TOPIC_OR_PARTITION, None)], got
    assert got[0]["producers"] == [{"id": pid, "epoch": epoch, "last_sequence": 1,
                                    "last_timestamp": 1_760_000_000_001, "coordinator_epoch": -1,
                                    "txn_start": -1}], got
    got = describe_producers_raw(broker, "dp-missing", [0, 3])
    assert [(p["index"], p["error"], p["message"]) for p in got] == [
        (i, UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.") for i in (0, 3)], got
    got = describe_producers_raw(broker, "bad/name", [0])
    assert [(p["error"], p["message"]) for p in got] == [
        (INVALID_TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' contains one or more characters other "
                                  "than ASCII alphanumerics, '.', '_' and '-'")], got
