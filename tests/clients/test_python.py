"""kafka-python: 100,000 keyed messages to a 6-partition topic, read back with assign +
seek_to_beginning (no group): exactly once, in order per partition, offsets contiguous; then one
round-trip per compression codec kafka-python supports (gzip, snappy, lz4, zstd)."""

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from harness import make_key, make_value, verify_exactly_once

PARTITIONS = 6


def create_topic(bootstrap, topic, partitions):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        deadline = time.time() + 30
        while time.time() < deadline:
            d = admin.describe_topics([topic])
            parts = d[0]["partitions"] if d else []
            if len(parts) == partitions and all(p["leader_id"] >= 0 for p in parts):
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {topic} has no leaders for all {partitions} partitions after 30s: {d}")
    finally:
        admin.close()


def produce(bootstrap, topic, count, compression=None, prefix="k", pad=16, acks="all"):
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, compression_type=compression,
                             enable_idempotence=False, linger_ms=5, batch_size=65536,
                             max_in_flight_requests_per_connection=5, retries=5, request_timeout_ms=30000,
                             delivery_timeout_ms=60000)
    errors = []
    acked = {}
    futures = []
    try:
        for i in range(count):
            k = make_key(prefix, i)
            fut = producer.send(topic, key=k.encode(), value=make_value(prefix, i, pad).encode())
            futures.append((k, fut))
        producer.flush(timeout=120)
        for k, fut in futures:
            try:
                md = fut.get(timeout=60)
                acked[k] = (md.partition, md.offset)
            except Exception as e:  # noqa: BLE001 - report all delivery errors
                errors.append(f"{k}: {e!r}")
    finally:
        producer.close(timeout=30)
    assert not errors, f"{len(errors)} of {count} sends failed, e.g. {errors[:5]}"
    return acked


def consume_all(bootstrap, topic, timeout=180):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", check_crcs=True, max_poll_records=5000,
                             request_timeout_ms=30000)
    records = []
    try:
        parts = None
        deadline = time.time() + 30
        while not parts and time.time() < deadline:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                time.sleep(0.2)
        assert parts, f"no partitions known for {topic}"
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        begin = consumer.beginning_offsets(tps)
        assert all(v == 0 for v in begin.values()), f"log start offsets not 0: {begin}"
        end = consumer.end_offsets(tps)
        pending = {tp for tp in tps if end[tp] > 0}
        deadline = time.time() + timeout
        while pending:
            assert time.time() < deadline, (
                f"timeout reading {topic}: positions {[(tp.partition, consumer.position(tp), end[tp]) for tp in pending]}")
            batch = consumer.poll(timeout_ms=500)
            for tp, recs in batch.items():
                for r in recs:
                    records.append((r.partition, r.offset, r.key.decode(), r.value.decode()))
            for tp in list(pending):
                if consumer.position(tp) >= end[tp]:
                    pending.discard(tp)
    finally:
        consumer.close()
    return records


@pytest.mark.slow
def test_python_100k_roundtrip(broker):
    topic = "py-100k"
    count = 100_000
    create_topic(broker.bootstrap, topic, PARTITIONS)
    acked = produce(broker.bootstrap, topic, count)
    assert len(acked) == count
    records = consume_all(broker.bootstrap, topic)
    counts = verify_exactly_once(records, count, "k", partitions=PARTITIONS)
    assert len(counts) == PARTITIONS, f"keyed messages landed in only {sorted(counts)} partitions"
    got = {k: (p, o) for p, o, k, _ in records}
    wrong = [k for k, po in acked.items() if got.get(k) != po]
    assert not wrong, f"{len(wrong)} records not at their acknowledged (partition, offset), e.g. " \
                      f"{[(k, acked[k], got.get(k)) for k in wrong[:5]]}"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_python_compression(broker, codec):
    topic = f"py-{codec}"
    count = 20_000
    create_topic(broker.bootstrap, topic, PARTITIONS)
    acked = produce(broker.bootstrap, topic, count, compression=codec, pad=64)
    records = consume_all(broker.bootstrap, topic)
    verify_exactly_once(records, count, "k", partitions=PARTITIONS)
    got = {k: (p, o) for p, o, k, _ in records}
    assert all(got.get(k) == po for k, po in acked.items()), "records not at their acknowledged offsets"


def test_python_acks_1(broker):
    topic = "py-acks1"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, 5000, acks=1)
    verify_exactly_once(consume_all(broker.bootstrap, topic), 5000, "k", partitions=2)


def test_python_long_poll_tail(broker):
    """A consumer positioned at the (empty) end receives records produced afterwards while it
    polls (Fetch long poll wakes up on new data), exactly once and in order."""
    import threading

    topic = "py-tail"
    count = 3000
    create_topic(broker.bootstrap, topic, 2)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", fetch_max_wait_ms=2000, request_timeout_ms=30000)
    tps = [TopicPartition(topic, p) for p in range(2)]
    consumer.assign(tps)
    consumer.seek_to_end()
    assert [consumer.position(tp) for tp in tps] == [0, 0]

    def slow_producer():
        p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False, linger_ms=0)
        for i in range(count):
            p.send(topic, key=make_key("k", i).encode(), value=make_value("k", i).encode())
            if i % 300 == 0:
                p.flush()
                time.sleep(0.1)
        p.flush()
        p.close()

    t = threading.Thread(target=slow_producer)
    started = time.time()
    t.start()
    records = []
    try:
        while len(records) < count and time.time() - started < 60:
            for recs in consumer.poll(timeout_ms=1000).values():
                records.extend((r.partition, r.offset, r.key.decode(), r.value.decode()) for r in recs)
    finally:
        t.join(timeout=60)
        consumer.close()
    verify_exactly_once(records, count, "k", partitions=2)


def test_python_list_offsets_by_timestamp(broker):
    """ListOffsets: earliest/latest and by timestamp (offsets_for_times) on CreateTime records."""
    topic = "py-times"
    create_topic(broker.bootstrap, topic, 1)
    base = 1_700_000_000_000
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False)
    for i in range(100):
        producer.send(topic, key=make_key("k", i).encode(), value=make_value("k", i).encode(),
                      timestamp_ms=base + 1000 * i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 100}
        found = consumer.offsets_for_times({tp: base + 1000 * 50})[tp]
        assert found is not None and found.offset == 50 and found.timestamp == base + 1000 * 50, found
        found = consumer.offsets_for_times({tp: base + 1000 * 50 - 500})[tp]
        assert found is not None and found.offset == 50, f"first record at or after the timestamp: {found}"
        assert consumer.offsets_for_times({tp: base + 1000 * 1000})[tp] is None, "no record that late"
        records = []
        consumer.assign([tp])
        consumer.seek(tp, 0)
        while len(records) < 100:
            for recs in consumer.poll(timeout_ms=1000).values():
                records.extend(recs)
        assert [r.timestamp for r in records] == [base + 1000 * i for i in range(100)], "CreateTime not preserved"
    finally:
        consumer.close()


def test_python_large_records(broker):
    """Records of 300 KB (larger than the consumer's max_partition_fetch_bytes) are still fetched."""
    topic = "py-large"
    create_topic(broker.bootstrap, topic, 1)
    size = 300 * 1024
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False,
                             max_request_size=1024 * 1024, batch_size=16384)
    for i in range(10):
        producer.send(topic, key=make_key("k", i).encode(), value=make_value("k", i, size).encode())
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                             max_partition_fetch_bytes=100 * 1024, fetch_max_bytes=100 * 1024, check_crcs=True)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    records = []
    deadline = time.time() + 60
    try:
        while len(records) < 10 and time.time() < deadline:
            for recs in consumer.poll(timeout_ms=1000).values():
                records.extend((r.partition, r.offset, r.key.decode(), r.value.decode()) for r in recs)
    finally:
        consumer.close()
    verify_exactly_once(records, 10, "k", partitions=1)
