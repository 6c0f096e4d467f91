"""aiokafka (asyncio client): a 6-partition topic created with AIOKafkaAdminClient, 20,000 keyed
messages produced with the client's default settings (and once per compression codec, and with
enable_idempotence=True), read back with AIOKafkaConsumer(group_id=None) + assign + seek_to_beginning
(no group coordinator, no commits): exactly once, in order per partition, offsets contiguous from 0,
each record at its acknowledged (partition, offset).

Consumer groups: `group_consumer.py --client aiokafka` (AIOKafkaConsumer(group_id=...) with its defaults
except enable_auto_commit=False and auto_offset_reset="earliest"; commit after each getmany, and in
on_partitions_revoked as aiokafka documents for manual commits) runs groups.graceful_leave_scenario:
three members split 12 partitions 4/4/4, every message consumed once, one member leaves (LeaveGroup)
while messages are produced and the others take its partitions with no message consumed twice, and a
later member resumes at the committed offsets."""

import asyncio
import time

import pytest

aiokafka = pytest.importorskip("aiokafka")
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka import codec as aiocodec  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402

import groups  # noqa: E402
from harness import make_key, make_value, verify_exactly_once  # noqa: E402

BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}

PARTITIONS = 6
COUNT = 20_000
CODECS = {"gzip": aiocodec.has_gzip, "snappy": aiocodec.has_snappy, "lz4": aiocodec.has_lz4,
          "zstd": aiocodec.has_zstd}


async def create_topic(bootstrap, topic, partitions=PARTITIONS):
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
        deadline = time.time() + 30
        while time.time() < deadline:
            d = await admin.describe_topics([topic])
            parts = d[0]["partitions"] if d else []
            if d and d[0]["error_code"] == 0 and len(parts) == partitions and all(p["leader"] >= 0 for p in parts):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"topic {topic} not ready with {partitions} partitions: {d}")
    finally:
        await admin.close()


async def produce(bootstrap, topic, count=COUNT, prefix="k", pad=16, **conf):
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **conf)
    await producer.start()
    acked, errors = {}, []
    try:
        futs = []
        for i in range(count):
            k = make_key(prefix, i)
            futs.append((k, await producer.send(topic, key=k.encode(), value=make_value(prefix, i, pad).encode())))
        await producer.flush()
        for k, fut in futs:
            try:
                md = await asyncio.wait_for(fut, 60)
                acked[k] = (md.partition, md.offset)
            except Exception as e:  # noqa: BLE001 - report all delivery errors
                errors.append(f"{k}: {e!r}")
    finally:
        await producer.stop()
    assert not errors, f"{len(errors)} of {count} sends failed, e.g. {errors[:5]}"
    return acked


async def consume_all(bootstrap, topic, expected, timeout=60):
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                auto_offset_reset="none", check_crcs=True)
    await consumer.start()
    records = []
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        begin = await consumer.beginning_offsets(tps)
        assert all(v == 0 for v in begin.values()), f"log start offsets not 0: {begin}"
        end = await consumer.end_offsets(tps)
        assert sum(end.values()) == expected, f"end offsets {end} do not add up to {expected}"
        pending = {tp for tp in tps if end[tp] > 0}
        deadline = time.time() + timeout
        while pending:
            assert time.time() < deadline, f"read {len(records)} of {expected} records in {timeout}s"
            batch = await consumer.getmany(timeout_ms=500, max_records=5000)
            for tp, msgs in batch.items():
                for m in msgs:
                    records.append((m.partition, m.offset, m.key.decode(), m.value.decode()))
                    if m.offset + 1 >= end[tp]:
                        pending.discard(tp)
        # Nothing past the end offsets.
        extra = await consumer.getmany(timeout_ms=300)
        assert not any(extra.values()), f"records past the end offsets: {extra}"
    finally:
        await consumer.stop()
    return records


def roundtrip(broker, topic, **conf):
    async def run():
        await create_topic(broker.bootstrap, topic)
        acked = await produce(broker.bootstrap, topic, **conf)
        records = await consume_all(broker.bootstrap, topic, COUNT)
        return acked, records

    acked, records = asyncio.run(asyncio.wait_for(run(), 55))
    counts = verify_exactly_once(records, COUNT, partitions=PARTITIONS)
    assert len(counts) == PARTITIONS, f"keyed messages used only partitions {counts}"
    wrong = [(k, acked[k], (p, o)) for p, o, k, _ in records if acked[k] != (p, o)]
    assert not wrong, f"{len(wrong)} records not at their acknowledged (partition, offset), e.g. {wrong[:5]}"


def test_default_settings(broker):
    roundtrip(broker, "aio-default")


def test_idempotent_producer(broker):
    roundtrip(broker, "aio-idempotent", enable_idempotence=True)


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_compression(broker, codec):
    if not CODECS[codec]():
        pytest.skip(f"aiokafka has no {codec} codec installed")
    roundtrip(broker, f"aio-{codec}", compression_type=codec)


def test_consumer_group(broker, java_tool, tmp_path):
    topic = "aio-group"
    timings = groups.graceful_leave_scenario(
        broker, tmp_path,
        lambda name: groups.python_consumer(name, tmp_path, broker.bootstrap, topic, f"g-{topic}", "aiokafka"),
        topic, label="aiokafka")
    print(f"aiokafka: {timings}")
