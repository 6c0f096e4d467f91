"""kcat (librdkafka 2.x): 100,000 keyed messages into a 6-partition topic, uncompressed and with
each codec, read back per partition: each message exactly once, per-partition order equals
produce order, offsets contiguous from 0."""

import subprocess

import pytest

from harness import java_create_topic, make_key, make_value, verify_exactly_once

COUNT = 100_000
PARTITIONS = 6
PAD = 16

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_roundtrip(broker, kcat, java_tool, codec, tmp_path):
    topic = f"kcat-{codec}"
    java_create_topic(broker.bootstrap, topic, PARTITIONS, logdir=tmp_path)

    inp = tmp_path / "input.txt"
    with open(inp, "w") as f:
        for i in range(COUNT):
            f.write(f"{make_key('k', i)}:{make_value('k', i, PAD)}\n")
    with open(inp, "rb") as stdin:
        r = subprocess.run([kcat, "-P", "-b", broker.bootstrap, "-t", topic, "-K:", "-z", codec,
                            "-X", "acks=all", "-X", "linger.ms=5", "-X", "enable.idempotence=false",
                            "-X", "message.timeout.ms=60000"],
                           stdin=stdin, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"kcat -P ({codec}) exited {r.returncode}: {r.stderr[-3000:]}"
    assert "fail" not in r.stderr.lower() and "error" not in r.stderr.lower(), \
        f"kcat -P ({codec}) reported delivery problems: {r.stderr[-3000:]}"

    records = []
    for p in range(PARTITIONS):
        r = subprocess.run([kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-p", str(p), "-o", "beginning",
                            "-e", "-q", "-X", "check.crcs=true", "-f", "%p %o %k %s\\n"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"kcat -C partition {p} ({codec}) exited {r.returncode}: {r.stderr[-3000:]}"
        assert "error" not in r.stderr.lower(), f"kcat -C partition {p} ({codec}) reported: {r.stderr[-3000:]}"
        for line in r.stdout.splitlines():
            part, off, key, value = line.split(" ", 3)
            assert int(part) == p, f"kcat -p {p} printed a record of partition {part}"
            records.append((int(part), int(off), key, value))

    counts = verify_exactly_once(records, COUNT, "k", partitions=PARTITIONS)
    # keyed messages must spread over the partitions
    assert len(counts) == PARTITIONS, f"keyed messages landed in only {sorted(counts)} of {PARTITIONS} partitions"
