"""Record timestamps as Kafka 4.x keeps them, with kafka-python: `message.timestamp.type=
LogAppendTime` replaces the producer's timestamps with the broker's time (the produce answer and
the consumer both see it), and with CreateTime a batch more than `message.timestamp.after.max.ms`
(one hour by default) ahead of the broker's clock, or more than `message.timestamp.before.max.ms`
behind it, is refused with INVALID_TIMESTAMP. The same tests pass against Apache Kafka
(SLUICE_TARGET=kafka)."""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import InvalidTimestampError

HOUR_MS = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


def create_topic(bootstrap, topic, configs=None):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs=configs or {})])
    finally:
        admin.close()


def send_one(bootstrap, topic, value: bytes, timestamp_ms: int):
    """One record in a batch of its own; its RecordMetadata, or the exception the send ended with."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=False, retries=5,
                             request_timeout_ms=30000)
    try:
        future = producer.send(topic, value=value, timestamp_ms=timestamp_ms)
        producer.flush(timeout=60)
        try:
            return future.get(timeout=60)
        except Exception as e:  # noqa: BLE001 - the caller checks which
            return e
    finally:
        producer.close(timeout=30)


def read_all(bootstrap, topic, count):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records, deadline = [], time.time() + 60
        while len(records) < count and time.time() < deadline:
            for recs in consumer.poll(timeout_ms=1000).values():
                records.extend(recs)
        assert len(records) == count, records
        return records
    finally:
        consumer.close()


def test_log_append_time_replaces_the_producers_timestamps(broker):
    topic = "ts-log-append"
    create_topic(broker.bootstrap, topic, {"message.timestamp.type": "LogAppendTime"})
    old = 1_600_000_000_000  # 2020: kept by a CreateTime topic, replaced here
    before = now_ms()
    answers = [send_one(broker.bootstrap, topic, b"v%d" % i, old) for i in range(3)]
    after = now_ms()
    for md in answers:
        assert not isinstance(md, Exception), md
        assert before - 1000 <= md.timestamp <= after + 1000, f"the produce answer carries the append time: {md}"
    records = read_all(broker.bootstrap, topic, 3)
    for r, md in zip(records, answers):
        assert r.timestamp_type == 1, "LogAppendTime"
        assert r.timestamp == md.timestamp, (r, md)


def test_create_time_is_kept_within_the_bounds(broker):
    topic = "ts-create-time"
    create_topic(broker.bootstrap, topic)
    month_ago = now_ms() - 30 * 24 * HOUR_MS
    soon = now_ms() + HOUR_MS // 2
    for ts in (month_ago, soon):
        md = send_one(broker.bootstrap, topic, b"ok", ts)
        assert not isinstance(md, Exception), md
        assert md.timestamp == ts
    too_late = send_one(broker.bootstrap, topic, b"late", now_ms() + 2 * HOUR_MS)
    assert isinstance(too_late, InvalidTimestampError), f"2 h ahead, default after.max.ms 1 h: {too_late!r}"
    records = read_all(broker.bootstrap, topic, 2)
    assert [(r.timestamp_type, r.timestamp) for r in records] == [(0, month_ago), (0, soon)]


@pytest.mark.parametrize("bound", ["before", "after"])
def test_topic_bounds_refuse_records_out_of_range(broker, bound):
    topic = f"ts-bound-{bound}"
    create_topic(broker.bootstrap, topic, {f"message.timestamp.{bound}.max.ms": str(HOUR_MS)})
    sign = -1 if bound == "before" else 1
    inside = send_one(broker.bootstrap, topic, b"in", now_ms() + sign * HOUR_MS // 2)
    assert not isinstance(inside, Exception), inside
    outside = send_one(broker.bootstrap, topic, b"out", now_ms() + sign * 2 * HOUR_MS)
    assert isinstance(outside, InvalidTimestampError), repr(outside)
    records = read_all(broker.bootstrap, topic, 1)
    assert records[0].value == b"in"
