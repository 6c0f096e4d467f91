"""Log compaction, as Kafka 4.4 does it: a topic with cleanup.policy=compact, 1 MiB segments and
min.cleanable.dirty.ratio=0.01 gets many updates of few keys (kafka-python); the broker's cleaner
(log.cleaner.backoff.ms shortened) compacts the closed segments until DescribeLogDirs reports the
partition shrunk; a consumer reading from the start then sees, per key, the latest value, offsets
still increasing. A record without a key is refused on such a topic (Kafka's LogValidator
.validateKey): INVALID_RECORD (87), with the per-record error naming the record in the batch
(kafka-python raises it for that record, and a batch-mate's error says its batch held an invalid
record) and the same refusal through librdkafka (confluent-kafka)."""

import random
import re
import struct
import time
import urllib.request

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import errors as Errors
from kafka.admin import NewTopic
from kafka.record.default_records import DefaultRecordBatchBuilder

import harness
import kafka_cli
import wire

BROKER_SETTINGS = {"log.cleaner.backoff.ms": 200}
TOPIC = "compact-keyed"
KEYS = 20
UPDATES = 6000
VALUE_PAD = "x" * 1000
# a compacted topic whose closed 1 MiB segments the cleaner takes at once
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.01"}


def _partition_size(admin, topic):
    """The partition's size as DescribeLogDirs reports it (bytes of its segments)."""
    sizes = []
    for response in admin.describe_log_dirs(topic_partitions={topic: [0]}):
        for log_dir in response["log_dirs"]:
            for t in log_dir["topics"]:
                if t["name"] != topic:
                    continue
                sizes.extend(p["partition_size"] for p in t["partitions"] if p["partition_index"] == 0)
    assert sizes, f"DescribeLogDirs names {topic}-0"
    return max(sizes)


def _create(admin, topic, configs):
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    deadline = time.time() + 30
    while time.time() < deadline:
        if topic in admin.list_topics():
            return
        time.sleep(0.2)
    raise AssertionError(f"{topic} not created")


def _produce_updates(bs, topic):
    """UPDATES records over KEYS keys to partition 0; the latest value per key."""
    producer = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=5)
    latest = {}
    for i in range(UPDATES):
        key = f"k{i % KEYS}"
        value = f"{i}|{VALUE_PAD}"
        producer.send(topic, key=key.encode(), value=value.encode(), partition=0)
        latest[key] = value
    producer.flush()
    producer.close()
    return latest


def _wait_compacted(admin, topic):
    """Waits until DescribeLogDirs shows the partition at a third of what was written, at most."""
    written = UPDATES * (len(VALUE_PAD) + 8)
    deadline = time.time() + 90
    size = _partition_size(admin, topic)
    while size > written // 3 and time.time() < deadline:
        time.sleep(0.5)
        size = _partition_size(admin, topic)
    assert size <= written // 3, f"compaction shrank the partition from ~{written} bytes: {size}"


def _check_latest_per_key(bs, topic, latest):
    """Reads the partition from the start: the latest value of every key, offsets increasing and
    never rewritten, the superseded records gone."""
    consumer = KafkaConsumer(bootstrap_servers=bs, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    assert end == UPDATES, "offsets are never rewritten: the log end stays"
    seen = {}
    offsets = []
    for record in consumer:
        offsets.append(record.offset)
        seen[record.key.decode()] = record.value.decode()
        if record.offset >= end - 1:
            break
    consumer.close()
    assert offsets == sorted(set(offsets)), "offsets increase"
    assert offsets[-1] == UPDATES - 1, "the last record is kept"
    assert len(offsets) < UPDATES // 2, f"superseded records are gone: {len(offsets)} of {UPDATES} read"
    assert seen == latest, "the latest value of every key survives"


def test_compacted_topic_shrinks_and_keeps_the_latest_value_per_key(broker):
    bs = broker.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        _create(admin, TOPIC, COMPACTED)
        latest = _produce_updates(bs, TOPIC)
        _wait_compacted(admin, TOPIC)
        _check_latest_per_key(bs, TOPIC, latest)
    finally:
        admin.close()


def test_partly_superseded_lz4_batches_lose_their_stale_records(broker):
    """A compressed batch that holds a live record beside a superseded one: Kafka's cleaner
    rewrites it with the live record only (Sluice writes it back uncompressed; Kafka
    re-compresses). librdkafka sends lz4 batches of two records each: batch i updates key i+1
    (superseded by batch i+1) and sets key i's final value. ~1.5 MiB of later filler puts those
    batches in a closed 1 MiB segment."""
    bs = broker.bootstrap
    topic = "compact-lz4"
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        _create(admin, topic, COMPACTED)
    finally:
        admin.close()
    rng = random.Random(18)
    # 250 random bytes four times: lz4 shrinks it (librdkafka sends a batch uncompressed when
    # compressing does not make it smaller), and each record still takes ~260 bytes
    value = lambda tag: tag.encode() + b"|" + rng.randbytes(250) * 4  # noqa: E731
    p = Producer({"bootstrap.servers": bs, "compression.type": "lz4", "linger.ms": 100, "acks": "all"})
    final = {}
    for i in range(KEYS):
        if i + 1 < KEYS:
            p.produce(topic, key=f"k{i + 1}".encode(), value=value("stale"), partition=0)
        final[f"k{i}"] = value(f"final-{i}")
        p.produce(topic, key=f"k{i}".encode(), value=final[f"k{i}"], partition=0)
        assert p.flush(10) == 0, "delivered"
    for _ in range(6000):
        p.produce(topic, key=b"filler", value=value("filler"), partition=0)
    assert p.flush(30) == 0, "delivered"

    deadline = time.time() + 90
    while True:
        consumer = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, consumer_timeout_ms=5_000)
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        seen = []
        for record in consumer:
            if record.key != b"filler":
                seen.append((record.offset, record.key.decode(), record.value))
            if record.offset >= end - 1:
                break
        consumer.close()
        if len(seen) == KEYS or time.time() > deadline:
            break
        time.sleep(1)
    assert [k for _, k, _ in seen] == [f"k{i}" for i in range(KEYS)], \
        f"one record per key left, the stale ones gone from their compressed batches: {[k for _, k, _ in seen]}"
    assert all(v == final[k] for _, k, v in seen), "each key keeps its final value"
    offsets = [o for o, _, _ in seen]
    assert offsets == sorted(offsets) and offsets[0] == 1, "offsets are never rewritten"


def test_kafka_configs_turns_compaction_on_at_run_time(broker):
    """A topic created with Kafka's default policy (delete) keeps every update; Kafka 4.4's
    kafka-configs then sets cleanup.policy=compact and the dirty ratio on the running broker, and
    the cleaner compacts what is already there. An out-of-range ratio is refused with Kafka's
    INVALID_CONFIG message and changes nothing."""
    bs = broker.bootstrap
    topic = "compact-later"
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        _create(admin, topic, {"segment.bytes": "1048576"})
        latest = _produce_updates(bs, topic)
        written = UPDATES * (len(VALUE_PAD) + 8)
        assert _partition_size(admin, topic) >= written, "cleanup.policy=delete keeps every update"

        refused = kafka_cli.run("kafka-configs", "--bootstrap-server", bs, "--alter", "--entity-type", "topics",
                                "--entity-name", topic, "--add-config", "min.cleanable.dirty.ratio=1.5",
                                check=False)
        out = refused.stdout + refused.stderr
        assert refused.returncode != 0, out
        assert "Invalid value 1.5 for configuration min.cleanable.dirty.ratio" in out, out

        kafka_cli.run("kafka-configs", "--bootstrap-server", bs, "--alter", "--entity-type", "topics",
                      "--entity-name", topic, "--add-config", "cleanup.policy=compact,min.cleanable.dirty.ratio=0.01")
        described = kafka_cli.run("kafka-configs", "--bootstrap-server", bs, "--describe", "--entity-type", "topics",
                                  "--entity-name", topic).stdout
        assert "cleanup.policy=compact" in described and "min.cleanable.dirty.ratio=0.01" in described, described
        _wait_compacted(admin, topic)
        _check_latest_per_key(bs, topic, latest)
    finally:
        admin.close()


def test_keyless_record_is_refused_on_a_compacted_topic(broker):
    bs = broker.bootstrap
    topic = "compact-keyless"
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        _create(admin, topic, {"cleanup.policy": "compact,delete"})
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=500, retries=0)
    keyed = producer.send(topic, key=b"k", value=b"v", partition=0)
    keyless = producer.send(topic, value=b"no key", partition=0)
    producer.flush()
    producer.close()
    with pytest.raises(Errors.InvalidRecordError) as refused:
        keyless.get(timeout=10)
    assert str(refused.value).endswith(
        f"Compacted topic cannot accept message without key in topic partition {topic}-0"), str(refused.value)
    with pytest.raises(Errors.KafkaError) as batch_mate:
        keyed.get(timeout=10)
    assert "part of a batch which had one more more invalid records" in str(batch_mate.value), str(batch_mate.value)

    errors = []
    p = Producer({"bootstrap.servers": bs, "retries": 0})
    p.produce(topic, value=b"no key", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.produce(topic, key=b"k", value=b"keyed", partition=0, on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert len(errors) == 2
    assert errors[0] is not None and errors[0].code() == KafkaError.INVALID_RECORD, errors[0]


def _produce_v9(broker, topic, records):
    """One Produce v9 of one batch of (key, value) records; the partition's response fields."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    now = int(time.time() * 1000)
    for offset, (key, value) in enumerate(records):
        builder.append(offset, now, key, value, [])
    batch = bytes(builder.build())
    partition = struct.pack(">i", 0) + wire.uvarint(len(batch) + 1) + batch + b"\x00"
    topic_data = wire.cstring(topic) + wire.carray([partition]) + b"\x00"
    body = wire.cstring(None) + struct.pack(">hi", -1, 10_000) + wire.carray([topic_data]) + b"\x00"
    r = wire.call(broker, 0, 9, body)

    def record_error(r):
        e = (r.take("i"), r.string())
        r.tags()
        return e

    def partition_response(r):
        p = {"index": r.take("i"), "error_code": r.take("h"), "base_offset": r.take("q"),
             "log_append_time_ms": r.take("q"), "log_start_offset": r.take("q"),
             "record_errors": r.array(record_error), "error_message": r.string()}
        r.tags()
        return p

    def topic_response(r):
        t = (r.string(), r.array(partition_response))
        r.tags()
        return t

    [(name, [p])] = r.array(topic_response)
    assert name == topic
    return p


def test_keyless_refusal_carries_kafkas_record_errors_and_message(broker):
    topic = "compact-keyless-wire"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        _create(admin, topic, {"cleanup.policy": "compact"})
    finally:
        admin.close()
    deadline = time.time() + 30
    while True:
        p = _produce_v9(broker, topic, [(b"k", b"v"), (None, b"a"), (b"k2", None), (None, None)])
        if p["error_code"] != 6 or time.time() > deadline:  # NOT_LEADER_OR_FOLLOWER while electing
            break
        time.sleep(0.2)
    per_record = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
    assert p["error_code"] == 87, p
    assert p["base_offset"] == -1, p
    assert p["record_errors"] == [(1, per_record), (3, per_record)], p
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{per_record}')" for i in (1, 3))
    assert p["error_message"] == ("One or more records have been rejected due to 2 record errors in total, "
                                  f"and only showing the first three errors at most: [{shown}]"), p
    ok = _produce_v9(broker, topic, [(b"k", b"v"), (b"k2", None)])
    assert ok["error_code"] == 0 and ok["record_errors"] == [] and ok["error_message"] is None, ok


def test_the_cleaners_work_shows_in_the_metrics(tmp_path):
    """(Sluice only: Kafka shows its LogCleaner metrics over JMX.) After a compaction, the
    shards' cleaner metrics count at least one clean that read more than it wrote."""
    if harness.TARGET != "sluice":
        pytest.skip("Kafka's LogCleaner metrics are JMX beans, not a Prometheus endpoint")
    metrics_port = harness.free_port()
    b = harness.Broker(tmp_path / "cleaner-metrics", {**BROKER_SETTINGS,
                                                       "sluice.metrics.listener": f"127.0.0.1:{metrics_port}"})
    b.start()
    try:
        topic = "compact-metrics"
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            _create(admin, topic, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                                   "min.cleanable.dirty.ratio": "0.01"})
            _produce_updates(b.bootstrap, topic)
            _wait_compacted(admin, topic)
        finally:
            admin.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            text = r.read().decode()

        def total(name):
            values = [float(v) for v in re.findall(rf'^{name}\{{shard="\d+"\}} (\S+)$', text, re.M)]
            assert values, f"{name} is exposed per shard"
            return sum(values)

        assert total("sluice_log_cleaner_runs_total") >= 1
        read, written = total("sluice_log_cleaner_read_bytes_total"), total("sluice_log_cleaner_written_bytes_total")
        assert read > written > 0, (read, written)
        recopy = [float(v) for v in re.findall(
            r'^kafka_log_logcleaner_cleaner_recopy_percent\{shard="\d+"\} (\S+)$', text, re.M)]
        assert recopy and min(recopy) < 100, recopy
    finally:
        assert b.stop() in b.clean_exit_codes()
