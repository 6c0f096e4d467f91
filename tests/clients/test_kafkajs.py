"""kafkajs 2.x (Node): the admin client creates a 6-partition topic (createTopics, waitForLeaders),
the producer sends 20,000 keyed messages with acks=-1 (idempotent false and true; uncompressed and
gzip, the only codec kafkajs ships), and the admin client reads fetchTopicMetadata, fetchTopicOffsets
and describeConfigs, then deleteTopics.  kafkajs has no consumer without a consumer group, so the
data is read back with kafka-python (assign + seek_to_beginning): exactly once, in
order per partition, offsets contiguous from 0, and each send's per-partition baseOffset is the offset
of that send's first record in the partition.  Needs node and `npm ci` in tests/clients/node.

Consumer groups: `kafkajs_tool.js group-consume` (kafka.consumer({groupId}) with its defaults -- round-robin
assigner, eager rebalancing -- subscribe fromBeginning, run with autoCommit false and commitOffsets
after each batch) runs groups.graceful_leave_scenario: three members split 12 partitions 4/4/4, every
message consumed once, one member leaves (LeaveGroup) while messages are produced and the others take
its partitions with no message consumed twice, and a later member resumes at the committed offsets."""

import json
import shutil
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

import groups
import harness
from harness import verify_exactly_once

BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}

NODE_DIR = harness.NODE_DIR  # tests/clients/node unless SLUICE_NODE_DIR is set (tests/newest)
TOOL = NODE_DIR / "kafkajs_tool.js"
PARTITIONS = 6
COUNT = 20_000
BATCH = 500

pytestmark = pytest.mark.skipif(not shutil.which("node") or not (NODE_DIR / "node_modules" / "kafkajs").is_dir(),
                                reason=f"node or {NODE_DIR}/node_modules/kafkajs missing (npm ci there)")


def kafkajs(broker, logdir, cmd, *args, timeout=55):
    argv = ["node", str(TOOL), cmd, "--bootstrap", broker.bootstrap, *args]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    with open(Path(logdir) / "kafkajs.log", "a") as f:
        f.write(f"$ {' '.join(argv)}\n--- rc={r.returncode} stdout:\n{r.stdout[-2000:]}\n--- stderr:\n{r.stderr}\n")
    assert r.returncode == 0, f"kafkajs {cmd} {' '.join(args)} exited {r.returncode}:\n{r.stderr[-4000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def consume_all(bootstrap, topic, timeout=40):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="none", check_crcs=True, max_poll_records=5000,
                             request_timeout_ms=30000)
    records = []
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(tps)
        pending = {tp for tp in tps if end[tp] > 0}
        deadline = time.time() + timeout
        while pending:
            assert time.time() < deadline, f"read {len(records)} records in {timeout}s, end offsets {end}"
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                for m in msgs:
                    records.append((m.partition, m.offset, m.key.decode(), m.value.decode()))
                    if m.offset + 1 >= end[tp]:
                        pending.discard(tp)
    finally:
        consumer.close()
    return records


def check_acks(acks, records):
    """Each send's baseOffset for partition p is the offset of that send's first record in p."""
    first_in_send = {}  # (send index, partition) -> offset of the lowest seq of that send there
    for p, o, _k, v in records:
        seq = int(v.split("|")[1])
        key = (seq // BATCH, p)
        if key not in first_in_send:  # records come in offset order per partition
            first_in_send[key] = o
    wrong = []
    for a in acks:
        send = a["first"] // BATCH
        for p, base in a["parts"].items():
            if first_in_send.get((send, int(p))) != base:
                wrong.append((send, int(p), base, first_in_send.get((send, int(p)))))
    assert not wrong, f"{len(wrong)} acknowledged baseOffsets differ from the log (send, partition, acked, found): {wrong[:5]}"
    assert len(first_in_send) == sum(len(a["parts"]) for a in acks), "records in partitions no send acknowledged"


def roundtrip(broker, logdir, topic, idempotent, compression):
    created = kafkajs(broker, logdir, "create", "--topic", topic, "--partitions", str(PARTITIONS))
    assert created["created"] is True, created
    md = created["metadata"]["topics"][0]
    assert md["name"] == topic and len(md["partitions"]) == PARTITIONS, md
    assert all(p["leader"] >= 0 and p["partitionErrorCode"] == 0 for p in md["partitions"]), md
    res = kafkajs(broker, logdir, "produce", "--topic", topic, "--count", str(COUNT), "--batch", str(BATCH),
                  "--idempotent", str(idempotent).lower(), "--compression", compression)
    records = consume_all(broker.bootstrap, topic)
    counts = verify_exactly_once(records, COUNT, partitions=PARTITIONS)
    assert len(counts) == PARTITIONS, f"keyed messages used only partitions {counts}"
    check_acks(res["acks"], records)
    return counts


@pytest.mark.parametrize("idempotent,compression", [(False, "none"), (True, "none"), (False, "gzip"),
                                                    (True, "gzip")])
def test_produce(broker, logdir, idempotent, compression):
    roundtrip(broker, logdir, f"kjs-{'idem' if idempotent else 'plain'}-{compression}", idempotent, compression)


def test_admin(broker, logdir):
    topic = "kjs-admin"
    counts = roundtrip(broker, logdir, topic, False, "none")
    info = kafkajs(broker, logdir, "inspect", "--topic", topic)
    assert topic in info["topics"], info["topics"]
    parts = info["metadata"]["topics"][0]["partitions"]
    assert sorted(p["partitionId"] for p in parts) == list(range(PARTITIONS)), parts
    offsets = {o["partition"]: o for o in info["offsets"]}
    assert sorted(offsets) == list(range(PARTITIONS)), info["offsets"]
    for p, n in counts.items():
        o = offsets[p]
        assert (int(o["low"]), int(o["high"]), int(o["offset"])) == (0, n, n), (p, n, o)
    res = info["configs"]["resources"]
    assert len(res) == 1 and res[0]["errorCode"] == 0 and res[0]["resourceName"] == topic, res
    names = {c["configName"] for c in res[0]["configEntries"]}
    assert {"cleanup.policy", "retention.ms", "segment.bytes"} <= names, sorted(names)
    after = kafkajs(broker, logdir, "delete", "--topic", topic)
    deadline = time.time() + 20
    while topic in after["topics"] and time.time() < deadline:
        time.sleep(0.5)
        after = kafkajs(broker, logdir, "list")
    assert topic not in after["topics"], after["topics"]


def test_admin_lists_topics_and_describes_the_cluster(broker, logdir):
    """kafkajs admin: listTopics, fetchTopicMetadata (all topics, then the created ones) and
    describeCluster: the created topics with their partition counts, the broker's node id/host/port,
    the controller, and the cluster id equal to confluent-kafka's DescribeCluster answer."""
    topics = {"kjs-view-a": 1, "kjs-view-b": 3}
    view = kafkajs(broker, logdir, "view", "--topics", ",".join(f"{t}:{n}" for t, n in topics.items()))["view"]
    harness.check_cluster_view(view, broker, topics)


def test_consumer_group(broker, java_tool, tmp_path):
    topic = "kjs-group"
    timings = groups.graceful_leave_scenario(
        broker, tmp_path,
        lambda name: groups.node_consumer(name, tmp_path, broker.bootstrap, topic, f"g-{topic}"),
        topic, label="kafkajs")
    print(f"kafkajs: {timings}")
