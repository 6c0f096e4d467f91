"""Apache Kafka 4.4.0's own command-line tools, run from the Maven Central jars (kafka_cli.py),
with their default settings: kafka-topics, kafka-console-producer/-consumer (assign mode:
--partition + --offset, and group mode), kafka-configs, kafka-get-offsets, kafka-delete-records,
kafka-broker-api-versions and kafka-cluster.  Every check reads the tools' output (messages,
offsets, config values), not only their exit codes.  The same tests pass against Apache Kafka
(SLUICE_TARGET=kafka)."""

from __future__ import annotations

import json
import re
import time

import kafka_api_versions
import kafka_cli
import pytest

BROKER_SETTINGS = {"num.partitions": 2}
CREATE_PARTITIONS = 37  # API key


@pytest.fixture(scope="module")
def cli(broker, tmp_path_factory):
    """run(tool, *args, **kw): the tool against the module's broker (--bootstrap-server appended)."""
    kafka_cli.ensure_tools_libs()
    logdir = tmp_path_factory.mktemp("kafka-cli")

    def run(tool, *args, **kw):
        return kafka_cli.run(tool, *args, "--bootstrap-server", broker.bootstrap, logdir=logdir, **kw)

    return run


def lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def create_topic(cli, topic: str, *args: str) -> None:
    r = cli("kafka-topics", "--create", "--topic", topic, *args)
    assert r.stdout.strip() == f"Created topic {topic}.", r.stdout


def describe_topics(cli, *args: str) -> dict[str, tuple[dict, list[dict]]]:
    """kafka-topics --describe: {topic: (topic line, partition lines)}, each line as {field: value}."""
    topics: dict[str, tuple[dict, list[dict]]] = {}
    for ln in lines(cli("kafka-topics", "--describe", *args).stdout):
        fields = dict(f.split(": ", 1) if ": " in f else (f.rstrip(":"), "") for f in ln.strip().split("\t"))
        if "PartitionCount" in fields:
            topics[fields["Topic"]] = (fields, [])
        else:
            assert fields.get("Topic") in topics and "Partition" in fields, ln
            topics[fields["Topic"]][1].append(fields)
    return topics


def describe_topic(cli, topic: str) -> tuple[dict, list[dict]]:
    described = describe_topics(cli, "--topic", topic)
    assert list(described) == [topic], described
    return described[topic]


def produce(cli, topic: str, text: str, *args: str) -> None:
    r = cli("kafka-console-producer", "--topic", topic, *args, stdin=text, timeout=120)
    assert r.stdout.strip() == "", r.stdout


def consume(cli, topic: str, partition: int, offset: str, count: int) -> list[dict]:
    """kafka-console-consumer --partition --offset --max-messages: the records, each as
    {ts, partition, offset, headers, key, value}."""
    r = cli("kafka-console-consumer", "--topic", topic, "--partition", str(partition), "--offset", offset,
            "--max-messages", str(count), "--timeout-ms", "30000",
            "--formatter-property", "print.timestamp=true", "--formatter-property", "print.partition=true",
            "--formatter-property", "print.offset=true", "--formatter-property", "print.headers=true",
            "--formatter-property", "print.key=true", timeout=120)
    assert f"Processed a total of {count} messages" in r.stderr, r.stderr[-2000:]
    records = []
    for ln in r.stdout.splitlines():
        ts, p, o, headers, key, value = ln.split("\t")
        assert ts.startswith("CreateTime:") and p.startswith("Partition:") and o.startswith("Offset:"), ln
        records.append({"ts": int(ts.split(":")[1]), "partition": int(p.split(":")[1]),
                        "offset": int(o.split(":")[1]), "headers": headers, "key": key, "value": value})
    assert len(records) == count, r.stdout
    return records


def get_offsets(cli, topic: str, *args: str) -> dict[int, int]:
    """kafka-get-offsets: {partition: offset} for the lines printed for `topic`."""
    out = {}
    for ln in lines(cli("kafka-get-offsets", "--topic", topic, *args).stdout):
        t, p, o = ln.rsplit(":", 2)
        assert t == topic, ln
        out[int(p)] = int(o)
    return out


def topic_configs(cli, topic: str, *args: str) -> dict[str, tuple[str, str]]:
    """kafka-configs --describe for a topic: {name: (value, synonyms text)}."""
    out = lines(cli("kafka-configs", "--entity-type", "topics", "--entity-name", topic, "--describe", *args).stdout)
    header = "All configs" if "--all" in args else "Dynamic configs"
    assert out[0] == f"{header} for topic {topic} are:", out
    return parse_config_lines(out[1:])


def parse_config_lines(out: list[str]) -> dict[str, tuple[str, str]]:
    configs = {}
    for ln in out:
        m = re.fullmatch(r"  ([\w.]+)=(.*) sensitive=(true|false) synonyms=\{(.*)\}", ln)
        assert m, f"unexpected kafka-configs line {ln!r}"
        configs[m.group(1)] = (m.group(2), m.group(4))
    return configs


# ---------------------------------------------------------------------------- kafka-topics

def test_topics_create_list_describe(cli):
    create_topic(cli, "cli-topics-a", "--partitions", "3", "--replication-factor", "1",
                 "--config", "retention.ms=60000", "--config", "segment.bytes=1048576")
    create_topic(cli, "cli-topics-b")  # partitions and replication factor: the broker's defaults

    listed = lines(cli("kafka-topics", "--list").stdout)
    assert {"cli-topics-a", "cli-topics-b"} <= set(listed), listed
    assert listed == sorted(listed), listed

    # --describe without --topic: every topic
    described = describe_topics(cli)
    topic, parts = described["cli-topics-a"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", topic["TopicId"]), topic
    assert topic["PartitionCount"] == "3" and topic["ReplicationFactor"] == "1", topic
    configs = dict(c.split("=", 1) for c in topic["Configs"].split(",") if c)
    assert configs.get("retention.ms") == "60000" and configs.get("segment.bytes") == "1048576", topic
    assert [p["Partition"] for p in parts] == ["0", "1", "2"], parts
    for p in parts:
        assert (p["Topic"], p["Leader"], p["Replicas"], p["Isr"]) == ("cli-topics-a", "1", "1", "1"), p

    topic_b, parts_b = described["cli-topics-b"]
    assert topic_b["PartitionCount"] == "2" and [p["Partition"] for p in parts_b] == ["0", "1"], parts_b
    assert topic_b["TopicId"] != topic["TopicId"]


def test_topics_create_errors(cli):
    create_topic(cli, "cli-topics-dup", "--partitions", "1")
    r = cli("kafka-topics", "--create", "--topic", "cli-topics-dup", check=False)
    assert r.returncode == 1 and "TopicExistsException" in r.stderr, (r.stdout, r.stderr)
    assert re.search(r"Topic 'cli-topics-dup' already exists", r.stdout, re.IGNORECASE), r.stdout

    r = cli("kafka-topics", "--create", "--topic", "cli-topics-dup", "--if-not-exists")
    assert r.stdout.strip() == "", r.stdout

    r = cli("kafka-topics", "--create", "--topic", "bad/name", check=False)
    assert r.returncode == 1 and "InvalidTopicException" in r.stderr, (r.stdout, r.stderr)

    r = cli("kafka-topics", "--create", "--topic", "cli-topics-rf3", "--replication-factor", "3", check=False)
    assert r.returncode == 1 and "InvalidReplicationFactorException" in r.stderr, (r.stdout, r.stderr)
    # Replicas go on registered, unfenced brokers; Kafka's placer's words.
    assert ("Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot be reached "
            "because only 1 broker(s) are registered or some brokers have all their log directories cordoned.") \
        in r.stdout, r.stdout


def test_topics_create_with_replica_assignment(cli):
    """--replica-assignment (CreateTopics with Assignments): the partitions are placed as given; an
    assignment naming a broker that is not registered is refused with Kafka's
    InvalidReplicaAssignmentException and message, and creates nothing."""
    create_topic(cli, "cli-topics-manual", "--replica-assignment", "1,1,1")
    topic, parts = describe_topic(cli, "cli-topics-manual")
    assert topic["PartitionCount"] == "3" and topic["ReplicationFactor"] == "1", topic
    assert [(p["Partition"], p["Leader"], p["Replicas"], p["Isr"]) for p in parts] == \
        [(str(i), "1", "1", "1") for i in range(3)], parts
    r = cli("kafka-topics", "--create", "--topic", "cli-topics-manual-bad", "--replica-assignment", "1:9", check=False)
    assert r.returncode == 1 and "InvalidReplicaAssignmentException" in r.stderr, (r.stdout, r.stderr)
    assert "The manual partition assignment includes broker 9, but no such broker is registered." in r.stdout, \
        (r.stdout, r.stderr)
    assert "cli-topics-manual-bad" not in lines(cli("kafka-topics", "--list").stdout)


def test_topics_alter_partitions(cli, broker):
    """--alter --partitions uses CreatePartitions: grows the topic where the broker advertises it,
    else the tool must report UnsupportedVersionException and change nothing."""
    create_topic(cli, "cli-topics-grow", "--partitions", "2")
    advertised = CREATE_PARTITIONS in kafka_api_versions.query(broker.bootstrap)
    r = cli("kafka-topics", "--alter", "--topic", "cli-topics-grow", "--partitions", "4", check=False)
    topic, parts = describe_topic(cli, "cli-topics-grow")
    if advertised:
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert topic["PartitionCount"] == "4" and [p["Partition"] for p in parts] == ["0", "1", "2", "3"], parts
        assert get_offsets(cli, "cli-topics-grow", "--time", "-1") == {0: 0, 1: 0, 2: 0, 3: 0}
    else:
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert "UnsupportedVersionException" in r.stderr, r.stderr
        assert "does not support CREATE_PARTITIONS" in r.stdout, r.stdout
        assert topic["PartitionCount"] == "2" and len(parts) == 2, parts


def test_topics_delete(cli):
    create_topic(cli, "cli-topics-gone", "--partitions", "2")
    r = cli("kafka-topics", "--delete", "--topic", "cli-topics-gone")
    assert r.stdout.strip() == "", r.stdout
    deadline = time.time() + 30
    while "cli-topics-gone" in (listed := lines(cli("kafka-topics", "--list").stdout)) and time.time() < deadline:
        time.sleep(0.5)
    assert "cli-topics-gone" not in listed, listed

    r = cli("kafka-topics", "--delete", "--topic", "cli-topics-gone", check=False)
    assert r.returncode == 1 and "Topic 'cli-topics-gone' does not exist as expected" in r.stdout, r.stdout


# ---------------------------------------------------------------------------- console producer / consumer

@pytest.fixture(scope="module")
def keyed(cli):
    """A 2-partition topic written by two kafka-console-producer runs (parse.key, key.separator=:),
    40 keyed records, read back whole with kafka-console-consumer: (topic, {partition: records})."""
    topic = "cli-console"
    create_topic(cli, topic, "--partitions", "2")
    for batch in ("a", "b"):
        produce(cli, topic, "".join(f"{batch}{i}:value-{batch}{i}\n" for i in range(20)),
                "--reader-property", "parse.key=true", "--reader-property", "key.separator=:")
    ends = get_offsets(cli, topic, "--time", "-1")
    assert set(ends) == {0, 1} and sum(ends.values()) == 40, ends
    return topic, {p: consume(cli, topic, p, "earliest", end) if end else [] for p, end in ends.items()}


def test_console_producer_consumer_keys(cli, keyed):
    topic, by_partition = keyed
    produced = [f"{b}{i}" for b in "ab" for i in range(20)]
    seen = {}
    for p, records in by_partition.items():
        assert [r["offset"] for r in records] == list(range(len(records))), records
        for r in records:
            assert r["partition"] == p and r["headers"] == "NO_HEADERS" and r["value"] == f"value-{r['key']}", r
            assert r["key"] not in seen, f"{r['key']} read twice"
            seen[r["key"]] = (p, r["offset"])
        keys = [r["key"] for r in records]
        assert keys == [k for k in produced if k in set(keys)], f"partition {p}: order differs from produce order"
    assert sorted(seen) == sorted(produced)
    assert all(by_partition.values()), "all keys landed in one partition"

    # --offset N starts at that record
    p, records = max(by_partition.items(), key=lambda kv: len(kv[1]))
    tail = consume(cli, topic, p, str(len(records) - 2), 2)
    assert [(r["offset"], r["key"]) for r in tail] == [(r["offset"], r["key"]) for r in records[-2:]]


def test_console_consumer_in_a_group(cli):
    """kafka-console-consumer's default mode: it subscribes in a consumer group (--group) and
    commits on close; the next run of the same group resumes after what the first one read."""
    topic, group = "cli-console-group", "cli-console-group-g"
    create_topic(cli, topic, "--partitions", "2")
    produce(cli, topic, "".join(f"first-{i}\n" for i in range(30)))

    def consume_group(count: int, *args: str) -> list[str]:
        r = cli("kafka-console-consumer", "--topic", topic, "--group", group, "--max-messages", str(count),
                "--timeout-ms", "30000", *args, timeout=120)
        assert f"Processed a total of {count} messages" in r.stderr, r.stderr[-2000:]
        return lines(r.stdout)

    assert sorted(consume_group(30, "--from-beginning")) == sorted(f"first-{i}" for i in range(30))
    produce(cli, topic, "".join(f"second-{i}\n" for i in range(10)))
    assert sorted(consume_group(10)) == sorted(f"second-{i}" for i in range(10)), \
        "the group resumes at its committed offsets"
    described = lines(cli("kafka-consumer-groups", "--describe", "--group", group).stdout)
    rows = [ln.split() for ln in described if ln.split()[:2] == [group, topic]]
    assert len(rows) == 2 and all(r[3] == r[4] and r[5] == "0" for r in rows), described
    assert sum(int(r[4]) for r in rows) == 40, described


def test_console_headers_and_null_keys(cli):
    topic = "cli-console-headers"
    create_topic(cli, topic, "--partitions", "1")
    produce(cli, topic, "h1:a,h2:b\tk1\tv1\nh3:c\tk2\tv2\n",
            "--reader-property", "parse.key=true", "--reader-property", "parse.headers=true")
    produce(cli, topic, "no key here\n")
    records = consume(cli, topic, 0, "earliest", 3)
    got = [(r["offset"], r["headers"], r["key"], r["value"]) for r in records]
    assert got == [(0, "h1:a,h2:b", "k1", "v1"), (1, "h3:c", "k2", "v2"), (2, "NO_HEADERS", "null", "no key here")]
    assert all(r["ts"] > 1_600_000_000_000 for r in records), records


def test_console_compression(cli):
    """One producer run per codec (--compression-codec), all into one partition, read back in order."""
    topic = "cli-console-compressed"
    codecs = ["gzip", "snappy", "lz4", "zstd"]
    create_topic(cli, topic, "--partitions", "1")
    n = 100
    expected = []
    for codec in codecs:
        batch = [(f"{codec}{i}", f"{codec}-{i}-{'x' * 50}") for i in range(n)]
        produce(cli, topic, "".join(f"{k}\t{v}\n" for k, v in batch),
                "--compression-codec", codec, "--reader-property", "parse.key=true")
        expected += batch
    assert get_offsets(cli, topic, "--time", "-1") == {0: len(expected)}
    records = consume(cli, topic, 0, "earliest", len(expected))
    assert [(r["offset"], r["key"], r["value"]) for r in records] == \
        [(i, k, v) for i, (k, v) in enumerate(expected)]


# ---------------------------------------------------------------------------- kafka-get-offsets, kafka-delete-records

def test_get_offsets_earliest_latest_and_by_time(cli, keyed):
    topic, by_partition = keyed
    latest = {p: len(records) for p, records in by_partition.items()}
    assert get_offsets(cli, topic, "--time", "-1") == latest
    assert get_offsets(cli, topic, "--time", "-2") == {0: 0, 1: 0}
    r = cli("kafka-get-offsets", "--topic-partitions", f"{topic}:1", "--time", "-1")
    assert lines(r.stdout) == [f"{topic}:1:{latest[1]}"], r.stdout

    # by time: the first offset whose timestamp is at or after it; no line where there is none
    stamps = {p: [r["ts"] for r in records] for p, records in by_partition.items()}
    every = sorted(t for ts in stamps.values() for t in ts)
    for probe in (every[len(every) // 2], every[-1] + 1):
        want = {p: next(i for i, t in enumerate(ts) if t >= probe) for p, ts in stamps.items()
                if ts and ts[-1] >= probe}
        got = get_offsets(cli, topic, "--time", str(probe))
        assert got == want, f"--time {probe}: {got}, expected {want} (timestamps {stamps})"
    # -3 (max-timestamp): a record with the partition's largest timestamp
    max_ts = get_offsets(cli, topic, "--time", "-3")
    assert set(max_ts) == {p for p, ts in stamps.items() if ts}, max_ts
    for p, off in max_ts.items():
        assert stamps[p][off] == max(stamps[p]), (p, off, stamps[p])


def test_delete_records(cli, tmp_path):
    topic = "cli-delete-records"
    create_topic(cli, topic, "--partitions", "1")
    produce(cli, topic, "".join(f"r{i}\n" for i in range(10)))
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 4}]}))
    r = cli("kafka-delete-records", "--offset-json-file", str(spec))
    assert f"partition: {topic}-0\tlow_watermark: 4" in r.stdout, r.stdout
    assert get_offsets(cli, topic, "--time", "-2") == {0: 4}
    assert get_offsets(cli, topic, "--time", "-1") == {0: 10}
    records = consume(cli, topic, 0, "earliest", 6)
    assert [(r["offset"], r["value"]) for r in records] == [(i, f"r{i}") for i in range(4, 10)]


# ---------------------------------------------------------------------------- kafka-configs

def test_configs_topic_describe_alter_delete(cli):
    topic = "cli-configs"
    create_topic(cli, topic, "--partitions", "1", "--config", "retention.ms=60000")

    r = cli("kafka-configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
            "--add-config", "retention.ms=120000,segment.bytes=1048576,cleanup.policy=[compact,delete]")
    assert r.stdout.strip() == f"Completed updating config for topic {topic}.", r.stdout
    dynamic = topic_configs(cli, topic)
    assert {k: v for k, (v, _) in dynamic.items() if k != "min.insync.replicas"} == {
        "retention.ms": "120000", "segment.bytes": "1048576", "cleanup.policy": "compact,delete"}, dynamic
    for name in ("retention.ms", "segment.bytes", "cleanup.policy"):
        assert dynamic[name][1].startswith(f"DYNAMIC_TOPIC_CONFIG:{name}={dynamic[name][0]}"), dynamic[name]

    r = cli("kafka-configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
            "--delete-config", "retention.ms,cleanup.policy")
    assert r.stdout.strip() == f"Completed updating config for topic {topic}.", r.stdout
    r = cli("kafka-configs", "--entity-type", "topics", "--entity-name", topic, "--alter",
            "--add-config", "retention.ms=soon", check=False)
    assert r.returncode == 1 and "InvalidConfigurationException" in r.stdout + r.stderr, (r.stdout, r.stderr)
    dynamic = topic_configs(cli, topic)
    assert "retention.ms" not in dynamic and "cleanup.policy" not in dynamic, dynamic
    assert dynamic["segment.bytes"][0] == "1048576", dynamic

    every = topic_configs(cli, topic, "--all")
    assert every["retention.ms"][0] == "604800000", every["retention.ms"]  # Kafka's default, 7 days
    assert every["cleanup.policy"][0] == "delete" and every["segment.bytes"][0] == "1048576", every
    assert every["max.message.bytes"][0] == "1048588" and every["compression.type"][0] == "producer", every

    r = cli("kafka-configs", "--entity-type", "topics", "--entity-name", "cli-configs-missing", "--describe")
    assert r.stdout.strip() == "The topic 'cli-configs-missing' doesn't exist and doesn't have dynamic config."


def test_configs_broker_describe(cli, broker):
    r = cli("kafka-configs", "--entity-type", "brokers", "--entity-name", "1", "--describe")
    assert lines(r.stdout) == ["Dynamic configs for broker 1 are:"], r.stdout

    r = cli("kafka-configs", "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
    out = lines(r.stdout)
    assert out[0] == "All configs for broker 1 are:", out[:3]
    configs = parse_config_lines(out[1:])
    assert configs["num.partitions"][0] == "2" and \
        configs["num.partitions"][1].startswith("STATIC_BROKER_CONFIG:num.partitions=2"), configs["num.partitions"]
    assert configs["log.dirs"] == (str(broker.data_dir), f"STATIC_BROKER_CONFIG:log.dirs={broker.data_dir}")
    assert configs["node.id"][0] == "1" and configs["log.segment.bytes"][0] == "1073741824", configs

    r = cli("kafka-configs", "--entity-type", "brokers", "--entity-name", "7", "--describe")
    assert r.stdout.strip() == "The broker '7' doesn't exist and doesn't have dynamic config.", r.stdout


# ---------------------------------------------------------------------------- kafka-broker-api-versions, kafka-cluster

def test_broker_api_versions_and_cluster_id(cli, broker):
    out = cli("kafka-broker-api-versions").stdout
    first, *rest = lines(out)
    assert re.fullmatch(rf"{re.escape(broker.bootstrap)} \(id: 1 rack: null isFenced: false\) -> \(", first), first
    shown = {}
    for ln in rest[:-1]:
        m = re.fullmatch(r"\t(\w+)\((\d+)\): (?:UNSUPPORTED|(\d+)(?: to (\d+))? \[usable: (\d+)\]),?", ln)
        assert m, f"unexpected line {ln!r}"
        if m.group(3) is not None:
            lo, hi = int(m.group(3)), int(m.group(4) or m.group(3))
            assert int(m.group(5)) == hi, ln  # the tool's client knows every version the broker offers
            shown[int(m.group(2))] = (lo, hi)
    assert rest[-1] == ")"
    assert shown == kafka_api_versions.query(broker.bootstrap)
    for key in (0, 1, 2, 3, 18, 19, 20, 32):  # Produce .. Metadata, ApiVersions, CreateTopics, DeleteTopics, DescribeConfigs
        assert key in shown, f"API {key} not usable: {out}"

    r = cli("kafka-cluster", "cluster-id")
    assert re.fullmatch(r"Cluster ID: [A-Za-z0-9_-]{22}", r.stdout.strip()), r.stdout
