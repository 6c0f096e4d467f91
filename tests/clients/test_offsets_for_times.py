"""offsetsForTimes from the Java consumer: records produced (by kafka-python) with CreateTime
timestamps base + 1000*i; the Java consumer's offsetsForTimes finds the first record at or after
a time — exactly, inside a batch, and also through a compressed batch — and nothing past the end."""

import pytest
from kafka import KafkaProducer

BASE = 1_700_000_000_000


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_java_offsets_for_times(broker, java_tool, tmp_path, codec):
    topic = f"times-{codec or 'none'}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=50,
                             compression_type=codec)
    futures = [producer.send(topic, value=b"v%d" % i, partition=0, timestamp_ms=BASE + 1000 * i)
               for i in range(100)]
    producer.flush()
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    assert offsets == list(range(100)), offsets

    def lookup(ts):
        r = java_tool(["admin", "offsets-for-times", "--bootstrap", broker.bootstrap, "--topic", topic,
                       "--partition", "0", "--timestamp", str(ts)], logdir=tmp_path, quick=True)
        return r.stdout.strip().splitlines()[-1]

    assert lookup(BASE + 50_000) == f"offset=50 timestamp={BASE + 50_000}"
    assert lookup(BASE + 49_001) == f"offset=50 timestamp={BASE + 50_000}"
    assert lookup(BASE) == f"offset=0 timestamp={BASE}"
    assert lookup(BASE + 1_000_000) == "offset=none"
