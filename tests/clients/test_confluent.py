"""confluent-kafka (Python binding of librdkafka): a 6-partition topic created with its AdminClient,
20,000 keyed messages produced with the client's default settings (and once per compression codec
and with enable.idempotence=true), read back per partition with Consumer.assign (no group
coordinator: no subscribe, no commits): exactly once, in order, offsets contiguous from 0, each
record at its acknowledged (partition, offset)."""

import time

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from harness import make_key, make_value, verify_exactly_once  # noqa: E402

PARTITIONS = 6
COUNT = 20_000


def create_topic(bootstrap, topic, partitions=PARTITIONS):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fs = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                             operation_timeout=30, request_timeout=30)
    fs[topic].result(timeout=30)
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if md and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    else:
        raise AssertionError(f"topic {topic} not ready with {partitions} partitions: {md}")


def produce(bootstrap, topic, count=COUNT, prefix="k", pad=16, **conf):
    errors, acked = [], {}

    def on_delivery(err, msg):
        k = msg.key().decode()
        if err is not None:
            errors.append(f"{k}: {err}")
        else:
            acked[k] = (msg.partition(), msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, **conf})
    for i in range(count):
        k = make_key(prefix, i)
        while True:
            try:
                p.produce(topic, key=k.encode(), value=make_value(prefix, i, pad).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    left = p.flush(60)
    assert left == 0, f"{left} messages still queued after flush(60)"
    assert not errors, f"{len(errors)} of {count} deliveries failed, e.g. {errors[:5]}"
    assert len(acked) == count, f"{len(acked)} of {count} delivery reports"
    return acked


def consume_all(bootstrap, topic, expected, timeout=60):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "sluice-unused-group",
                  "enable.auto.commit": False, "enable.auto.offset.store": False,
                  "enable.partition.eof": True, "check.crcs": True})
    records = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        eof = set()
        deadline = time.time() + timeout
        while len(records) < expected or len(eof) < PARTITIONS:
            assert time.time() < deadline, f"read {len(records)} of {expected} records in {timeout}s (eof {eof})"
            for m in c.consume(num_messages=5000, timeout=0.5):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                        continue
                    raise AssertionError(f"consume error: {m.error()}")
                eof.discard(m.partition())
                records.append((m.partition(), m.offset(), m.key().decode(), m.value().decode()))
    finally:
        c.close()
    return records


def roundtrip(broker, topic, **conf):
    if broker.target == "kafka":
        # Apache Kafka answers Produce with NOT_LEADER_OR_FOLLOWER for a moment after CreateTopics and
        # Metadata show the leaders; librdkafka's default producer (not idempotent, many requests in
        # flight) then retries that batch behind later ones, which reorders the partition.  One request
        # in flight keeps the order across retries.  Sluice's leaders are ready when CreateTopics answers,
        # so against Sluice the producer keeps all its defaults.
        conf.setdefault("max.in.flight.requests.per.connection", 1)
    create_topic(broker.bootstrap, topic)
    acked = produce(broker.bootstrap, topic, **conf)
    records = consume_all(broker.bootstrap, topic, COUNT)
    counts = verify_exactly_once(records, COUNT, partitions=PARTITIONS)
    assert len(counts) == PARTITIONS, f"keyed messages used only partitions {counts}"
    wrong = [(k, acked[k], (p, o)) for p, o, k, _ in records if acked[k] != (p, o)]
    assert not wrong, f"{len(wrong)} records not at their acknowledged (partition, offset), e.g. {wrong[:5]}"


def test_default_settings(broker):
    roundtrip(broker, "ck-default")


def test_idempotent_producer(broker):
    roundtrip(broker, "ck-idempotent", **{"enable.idempotence": True})


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression(broker, codec):
    roundtrip(broker, f"ck-{codec}", **{"compression.type": codec})


def test_assign_with_an_unused_group(broker):
    """assign() + consume without commits, with a group.id that never joins: librdkafka still looks
    its coordinator up (FindCoordinator) and gets an answer, on Sluice as on Kafka, and reads
    every record."""
    topic = "ck-nocoord"
    create_topic(broker.bootstrap, topic, 1)
    produce(broker.bootstrap, topic, count=10, pad=0)
    logs = []
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sluice-unused-group",
                  "enable.auto.commit": False, "enable.partition.eof": True, "debug": "cgrp,protocol",
                  "logger": _ListLogger(logs)})
    got = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.time() + 20
        done = False
        while not done and time.time() < deadline:
            for m in c.consume(num_messages=100, timeout=0.5):
                if m.error():
                    done = m.error().code() == KafkaError._PARTITION_EOF and len(got) == 10
                else:
                    got.append(m.offset())
    finally:
        c.close()
    assert got == list(range(10))
    answered = [line for line in logs if "Received FindCoordinatorResponse" in line]
    assert answered, "librdkafka found the group coordinator"


class _ListLogger:
    def __init__(self, lines):
        self.lines = lines

    def _add(self, fmt, *args):
        self.lines.append(fmt % args if args else str(fmt))

    debug = info = warning = error = critical = exception = log = _add

    def log(self, level, fmt, *args):  # noqa: F811
        self._add(fmt, *args)


def test_admin_lists_topics_and_describes_the_cluster(broker):
    """AdminClient's views of the broker, as an operator's tools call them: list_topics() for all
    topics (librdkafka 2.16 sends Metadata v13 with bytes after its fields, which Kafka ignores:
    Sluice used to close the connection), describe_cluster() and describe_topics()."""
    from confluent_kafka import TopicCollection

    topics = {"ck-listed-a": 1, "ck-listed-b": 3}
    for topic, partitions in topics.items():
        create_topic(broker.bootstrap, topic, partitions)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    md = admin.list_topics(timeout=15)
    for topic, partitions in topics.items():
        assert topic in md.topics, f"{topic} not in list_topics(): {sorted(md.topics)}"
        assert len(md.topics[topic].partitions) == partitions
    assert md.brokers, "no brokers in list_topics()"

    cluster = admin.describe_cluster(request_timeout=15).result(timeout=20)
    assert cluster.cluster_id, f"no cluster id: {cluster}"
    ids = sorted(n.id for n in cluster.nodes)
    assert ids == sorted(md.brokers), f"describe_cluster nodes {ids} vs list_topics brokers {sorted(md.brokers)}"
    assert cluster.controller is not None and cluster.controller.id in ids

    described = admin.describe_topics(TopicCollection(list(topics)), request_timeout=15)
    for topic, future in described.items():
        d = future.result(timeout=20)
        assert d.name == topic
        assert len(d.partitions) == topics[topic], f"{topic}: {d.partitions}"
        for p in d.partitions:
            assert p.leader is not None and p.leader.id in ids, f"{topic}/{p.id}: leader {p.leader}"
            assert [r.id for r in p.replicas] == [p.leader.id]
            assert [r.id for r in p.isr] == [p.leader.id]
