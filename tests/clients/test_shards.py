"""Shards: Sluice with sluice.shards = 4 (more shards than cores); a 16-partition topic spread over
all shards, produced to through one producer connection (explicit partition per record, so every
partition gets data) and read back by the Java and the Python consumer."""

import pytest
from kafka import KafkaProducer

from harness import java_create_topic, make_key, make_value, verify_exactly_once
from test_python import consume_all

BROKER_SETTINGS = {"sluice.shards": 4}
PARTITIONS = 16
COUNT = 48_000


def test_16_partitions_over_4_shards(broker, java_tool, tmp_path):
    topic = "sharded"
    java_create_topic(broker.bootstrap, topic, PARTITIONS, logdir=tmp_path)
    r = java_tool(["admin", "describe-topic", "--bootstrap", broker.bootstrap, "--topic", topic],
                  logdir=tmp_path, quick=True)
    assert f"partitions={PARTITIONS}" in r.stdout, r.stdout
    assert r.stdout.count("leader=1 ") == PARTITIONS, f"every partition must be led by node 1:\n{r.stdout}"

    # one kafka-python producer = one connection to the single broker
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False,
                             linger_ms=5, compression_type="lz4", max_in_flight_requests_per_connection=5)
    futures = []
    for i in range(COUNT):
        futures.append(producer.send(topic, key=make_key("k", i).encode(), value=make_value("k", i, 32).encode(),
                                     partition=i % PARTITIONS))
    producer.flush(timeout=120)
    offsets = {}
    for i, f in enumerate(futures):
        md = f.get(timeout=60)
        assert md.partition == i % PARTITIONS
        offsets[i] = md.offset
    producer.close()
    for p in range(PARTITIONS):
        got = sorted(offsets[i] for i in range(p, COUNT, PARTITIONS))
        assert got == list(range(COUNT // PARTITIONS)), f"partition {p}: acknowledged offsets are not 0..n-1"

    counts = verify_exactly_once(consume_all(broker.bootstrap, topic), COUNT, "k", partitions=PARTITIONS)
    assert counts == {p: COUNT // PARTITIONS for p in range(PARTITIONS)}, counts

    r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--expect", str(COUNT)],
                  logdir=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), r.stdout


def test_java_producer_all_partitions(broker, java_tool, tmp_path):
    topic = "sharded-java"
    java_create_topic(broker.bootstrap, topic, PARTITIONS, logdir=tmp_path)
    acked = tmp_path / "acked.txt"
    r = java_tool(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(COUNT),
                   "--spread", str(PARTITIONS), "--compression", "zstd", "--acked-file", str(acked)], logdir=tmp_path)
    assert f"acked={COUNT} failed=0" in r.stdout, r.stdout
    r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--expect", str(COUNT),
                   "--acked-file", str(acked)], logdir=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), r.stdout
    per_part = r.stdout.split("partitions=")[1].split()[0]
    assert per_part == ",".join(f"{p}:{COUNT // PARTITIONS}" for p in range(PARTITIONS)), per_part
