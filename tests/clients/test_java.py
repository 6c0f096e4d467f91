"""Java kafka-clients 4.4.0: 100,000 keyed messages with acks=all for each compression type,
consumed back with assign()+seek (no group, check.crcs=true) exactly once and in order per
partition; every acknowledged (partition, offset, key) is found where it was acknowledged."""

import pytest

from harness import java_create_topic

COUNT = 100_000
PARTITIONS = 6

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_roundtrip(broker, java_tool, codec, tmp_path):
    topic = f"java-{codec}"
    java_create_topic(broker.bootstrap, topic, PARTITIONS, logdir=tmp_path)
    acked = tmp_path / "acked.txt"
    r = java_tool(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(COUNT),
                   "--acks", "all", "--compression", codec, "--value-size", "16", "--acked-file", str(acked)],
                  logdir=tmp_path)
    assert f"acked={COUNT} failed=0" in r.stdout, f"producer did not get {COUNT} acks: {r.stdout}"
    lines = acked.read_text().splitlines()
    assert len(lines) == COUNT, f"acked file has {len(lines)} lines, expected {COUNT}"
    assert len({l.split()[0] for l in lines}) == PARTITIONS, "keyed messages did not spread over all partitions"

    r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--expect", str(COUNT),
                   "--acked-file", str(acked)], logdir=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), f"consumer verification failed:\n{r.stdout}"
    assert f"records={COUNT} acked_checked={COUNT}" in r.stdout, r.stdout


def test_java_acks_1_and_0(broker, java_tool, tmp_path):
    """acks=1 and acks=0 produce paths: everything sent is readable exactly once, in order."""
    for acks in ("1", "0"):
        topic = f"java-acks{acks}"
        java_create_topic(broker.bootstrap, topic, 3, logdir=tmp_path)
        r = java_tool(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "20000",
                       "--acks", acks, "--compression", "lz4"], logdir=tmp_path)
        assert "acked=20000 failed=0" in r.stdout, r.stdout
        r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--expect", "20000"],
                      logdir=tmp_path)
        assert r.stdout.rstrip().endswith("OK"), f"acks={acks}: consumer verification failed:\n{r.stdout}"
