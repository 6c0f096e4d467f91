"""Kafka Connect 4.4.0 against the broker: Apache Kafka's distributed worker (`ConnectDistributed`,
unmodified, `connect_worker.py`) with the FileStream connectors copies a file through a topic into
another file, is killed with -9 mid-stream and restarted, and resumes at its committed offsets.

The worker creates its three internal topics itself and refuses to start unless each one is
`cleanup.policy=compact` (it reads the topic's config back with DescribeConfigs); the test reads them
back too. A FileStreamSource (file -> topic, one partition) and a FileStreamSink (topic -> file)
copy 5,000 seeded lines, which must arrive complete and in order, with both connectors and their
tasks RUNNING in the REST API. Then a writer appends 6,000 more lines at about 1,000 a second, the
worker is killed with -9 while the sink is writing them (4.5 s or more into it), and restarted.

The worker creates its offsets topic with the topic settings given as offset.storage.* (segment.ms=1000,
min.cleanable.dirty.ratio=0.01), so the source's position commits, one a second, roll into segments
that the cleaner compacts: after the kill fewer than half of them are left, the latest among them, and
the restarted worker resumes from that compacted topic.

At-least-once's in-flight window, measured exactly: the source commits the file position it has
read to (in the offsets topic) and the sink its consumer group's offset, each every
offset.flush.interval.ms (1 s here). After the kill the test reads both, so it knows what the
restarted worker must redo: the sink rewrites topic offsets [committed sink offset, records it had
written), the source re-reads lines [committed position, lines in the topic). The sink file must then
be exactly: what was written before the kill, those two re-deliveries, and the rest of the lines,
every line present and in order within each part. Each window is also bounded by time: at most the
lines appended in the 2 flush intervals plus 2 s before the kill (a commit is at most one interval
old, plus the source's 1 s idle wait and the time to produce and write).

Also: a worker whose offsets topic exists with cleanup.policy=delete refuses to start, and KIP-875's
offsets endpoints read, reset and alter a sink's consumer group. Passes against Kafka 4.4
(SLUICE_TARGET=kafka) too."""

import json
import random
import threading
import time

from confluent_kafka import ConsumerGroupTopicPartitions, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

import connect_worker

# The worker's and the sink's groups start rebalancing at once, as kafka_broker.py's Kafka does.
# The cleaner looks for work every 200 ms (Kafka's default: 15 s), so the offsets topic compacts within the test.
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0, "log.cleaner.backoff.ms": 200}
TOPIC = "connect-lines"
SOURCE = "file-source"
SINK = "file-sink"
INTERNAL = {"connect-configs": 1, "connect-offsets": 25, "connect-status": 5}  # Connect's default partitions
FLUSH_MS = 1000
FIRST = 5_000
SECOND = 6_000
APPEND_PER_S = 1_000


def _lines(seed=18):
    rnd = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    return [f"{i:06d} " + " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 12)))
            for i in range(FIRST + SECOND)]


def _read_lines(path):
    if not path.exists():
        return []
    text = path.read_text()
    # a line is complete once its newline is written
    return text.split("\n")[:-1]


def _end_offset(bs, topic, partition=0):
    c = Consumer({"bootstrap.servers": bs, "group.id": "connect-test-watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        c.close()


def _sink_committed(bs):
    """The sink task's committed offset (its consumer group is connect-<connector name>)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": f"connect-{SINK}", "enable.auto.commit": False})
    try:
        (tp,) = c.committed([TopicPartition(TOPIC, 0)], timeout=10)
        return tp.offset
    finally:
        c.close()


def _source_offsets(bs, source_file):
    """The source task's last committed file position, from the worker's offsets topic (JSON key
    [connector, partition], value {"position": bytes}), the number of its records read from the
    start of the topic and the end offset of their partition (only this task writes there)."""
    key = [SOURCE, {"filename": str(source_file)}]
    c = Consumer({"bootstrap.servers": bs, "group.id": "connect-test-offsets-reader", "enable.auto.commit": False})
    try:
        parts = c.list_topics("connect-offsets", timeout=10).topics["connect-offsets"].partitions
        ends = {p: c.get_watermark_offsets(TopicPartition("connect-offsets", p), timeout=10)[1] for p in parts}
        c.assign([TopicPartition("connect-offsets", p, 0) for p in parts if ends[p] > 0])
        position, records, where, seen = None, 0, None, {p: 0 for p in parts}
        deadline = time.time() + 30
        while any(seen[p] < ends[p] for p in parts) and time.time() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            seen[m.partition()] = m.offset() + 1
            if m.key() is not None and json.loads(m.key()) == key:
                position = json.loads(m.value())["position"] if m.value() is not None else None
                records, where = records + 1, m.partition()
        assert all(seen[p] >= ends[p] for p in parts), f"read connect-offsets to its end: {seen} of {ends}"
        return position, records, ends.get(where, 0)
    finally:
        c.close()


def _running(worker, name):
    s = worker.request("GET", f"/connectors/{name}/status")
    ok = s["connector"]["state"] == "RUNNING" and len(s["tasks"]) == 1 and s["tasks"][0]["state"] == "RUNNING"
    return s if ok else None


def _wait_sink(worker, sink_file, count, timeout=60):
    return worker.wait_for(f"the sink file holds {count} lines",
                           lambda: (lambda got: got if len(got) >= count else None)(_read_lines(sink_file)),
                           timeout=timeout)


class _Appender(threading.Thread):
    """Appends lines to the source file at APPEND_PER_S, flushing each write, noting when each went in."""

    def __init__(self, path, lines):
        super().__init__(daemon=True)
        self.path, self.lines, self.times = path, lines, []

    def run(self):
        start = time.time()
        with open(self.path, "a") as f:
            for i in range(0, len(self.lines), 50):
                time.sleep(max(0.0, start + i / APPEND_PER_S - time.time()))
                f.write("".join(line + "\n" for line in self.lines[i:i + 50]))
                f.flush()
                self.times.extend([time.time()] * len(self.lines[i:i + 50]))


def test_file_source_and_sink_survive_kill9(broker, tmp_path):
    bs = broker.bootstrap
    lines = _lines()
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    source_file, sink_file = tmp_path / "source.txt", tmp_path / "sink.txt"
    source_file.write_text("")

    # The sink task's consumer gets the worker's 10 s session timeout instead of the consumer's 45 s: its
    # group rebalances for the restarted task only once the killed task's member has expired.
    worker = connect_worker.Worker(tmp_path / "worker", bs, {"offset.flush.interval.ms": FLUSH_MS,
                                                             "consumer.session.timeout.ms": 10_000,
                                                             # offset.storage.<topic config>: the worker
                                                             # creates its offsets topic with these, so its
                                                             # segments roll each second and get compacted
                                                             "offset.storage.segment.ms": 1000,
                                                             "offset.storage.min.cleanable.dirty.ratio": 0.01})
    worker.start()
    try:
        root = worker.wait_rest()
        assert root["version"] == connect_worker.KAFKA_VERSION, root
        assert root["kafka_cluster_id"] == admin.describe_cluster().result(30).cluster_id, root

        # The worker created its internal topics compacted (it stops at startup if one is not).
        # /health (KIP-1017) is healthy once the herder has started: its internal topics are created and read.
        worker.wait_for("the worker healthy", lambda: worker.request("GET", "/health")["status"] == "healthy")
        meta = admin.list_topics(timeout=10).topics
        for topic, partitions in INTERNAL.items():
            assert topic in meta and len(meta[topic].partitions) == partitions, (topic, meta.get(topic))
            res = ConfigResource(ConfigResource.Type.TOPIC, topic)
            configs = admin.describe_configs([res])[res].result(30)
            assert configs["cleanup.policy"].value == "compact", (topic, configs["cleanup.policy"])
        offsets_res = ConfigResource(ConfigResource.Type.TOPIC, "connect-offsets")
        offsets_configs = admin.describe_configs([offsets_res])[offsets_res].result(30)
        assert (offsets_configs["segment.ms"].value, offsets_configs["min.cleanable.dirty.ratio"].value) == \
            ("1000", "0.01"), "the worker passed its offset.storage.* topic settings to CreateTopics"

        plugins = {p["class"] for p in worker.request("GET", "/connector-plugins")}
        assert {"org.apache.kafka.connect.file.FileStreamSourceConnector",
                "org.apache.kafka.connect.file.FileStreamSinkConnector"} <= plugins, plugins
        created = worker.request("POST", "/connectors", {"name": SOURCE, "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file), "topic": TOPIC, "tasks.max": "1"}})
        assert created["name"] == SOURCE and created["config"]["file"] == str(source_file), created
        created = worker.request("POST", "/connectors", {"name": SINK, "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file), "topics": TOPIC, "tasks.max": "1"}})
        assert created["name"] == SINK, created

        with open(source_file, "a") as f:
            f.write("".join(line + "\n" for line in lines[:FIRST]))
        t0 = time.time()
        got = _wait_sink(worker, sink_file, FIRST)
        assert got == lines[:FIRST], "the first lines arrive complete, once, in order"
        print(f"{FIRST} lines copied in {time.time() - t0:.1f}s")
        for name in (SOURCE, SINK):
            s = worker.wait_for(f"{name} and its task RUNNING", lambda: _running(worker, name), timeout=30)
            assert s["tasks"][0]["worker_id"] == f"127.0.0.1:{worker.rest_port}", s
        listed = worker.request("GET", "/connectors?expand=status")
        assert {name: (c["status"]["connector"]["state"], [t["state"] for t in c["status"]["tasks"]])
                for name, c in listed.items()} == {SOURCE: ("RUNNING", ["RUNNING"]), SINK: ("RUNNING", ["RUNNING"])}
        assert _end_offset(bs, TOPIC) == FIRST, "one record per line"

        # Kill -9 while the sink is writing the appended lines.
        appender = _Appender(source_file, lines[FIRST:])
        appender.start()
        # Late enough that the appender has run for longer than the window bound below (4 s).
        _wait_sink(worker, sink_file, FIRST + 4_500)
        worker.kill9()
        killed_at = time.time()
    except BaseException:
        worker.stop()
        raise
    appender.join(60)
    assert not appender.is_alive() and len(appender.times) == SECOND, "every line appended"

    # What the restarted worker must redo, from what the dead one had committed.
    written = len(_read_lines(sink_file))
    produced = _end_offset(bs, TOPIC)
    sink_committed = _sink_committed(bs)
    position, records, written_records = _source_offsets(bs, source_file)
    assert position is not None, "the source had committed a position"
    # The source committed a position every second into the compacted offsets topic: once the cleaner
    # has been through it, fewer records are left of it, the latest among them, and the restarted worker
    # resumes from what is left.
    deadline = time.time() + 30
    while records > written_records // 2 and time.time() < deadline:
        time.sleep(0.5)
        latest, records, written_records = _source_offsets(bs, source_file)
        assert latest == position, "compaction kept the latest committed position"
    print(f"connect-offsets: {written_records} commits of the source's position, {records} left after compaction")
    # >= 4: the appender ran 4.5 s or more before the kill, a commit each second
    assert written_records >= 4 and records <= written_records // 2, (records, written_records)
    source_committed = source_file.read_bytes()[:position].count(b"\n")
    assert FIRST <= sink_committed <= written <= produced, (sink_committed, written, produced)
    assert FIRST <= source_committed <= produced <= FIRST + SECOND, (source_committed, produced)
    sink_window, source_window = written - sink_committed, produced - source_committed
    window_s = 2 * FLUSH_MS / 1000 + 2
    recent = sum(1 for t in appender.times if killed_at - window_s < t <= killed_at)
    print(f"at the kill: sink wrote {written}, committed {sink_committed} (in flight {sink_window}); "
          f"topic has {produced}, source committed {source_committed} (in flight {source_window}); "
          f"lines appended in the last {window_s:.0f}s: {recent}")
    assert sink_window <= recent and source_window <= recent, \
        f"an in-flight window is older than {window_s}s: sink {sink_window}, source {source_window}, bound {recent}"

    restarted_at = time.time()
    worker.start()
    try:
        worker.wait_rest()
        expected = lines[:written] + lines[sink_committed:produced] + lines[source_committed:]
        got = _wait_sink(worker, sink_file, len(expected), timeout=90)
        print(f"resumed: all {FIRST + SECOND} lines in the sink {time.time() - restarted_at:.1f}s after the restart, "
              f"{len(got) - len(lines)} duplicates")
        for name in (SOURCE, SINK):
            worker.wait_for(f"{name} and its task RUNNING after the restart", lambda: _running(worker, name),
                            timeout=30)
        time.sleep(2 * FLUSH_MS / 1000)  # nothing more may come
        got = _read_lines(sink_file)
        assert set(got) == set(lines), "every line reached the sink"
        assert got == expected, (
            "the sink file is what was written before the kill, then the sink's and the source's "
            f"in-flight windows re-delivered, then the rest: {len(got)} lines, expected {len(expected)}; "
            f"first difference at line {next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), None)}")
        assert len(got) - len(lines) == sink_window + source_window
        assert _end_offset(bs, TOPIC) == len(lines) + source_window, "the source re-produced only its window"
    finally:
        rc = worker.stop()
    assert rc in (0, 143), f"the worker exited {rc} after SIGTERM; log:\n{worker.log_tail()}"


def test_worker_refuses_an_internal_topic_not_compacted(broker, tmp_path):
    """The worker reads its internal topics' cleanup.policy back (DescribeConfigs) and stops at startup
    when one is not `compact`, with the topic, the property and the policy it found in its message."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("connect-offsets-deleting", 25, 1, config={"cleanup.policy": "delete"})]
                        )["connect-offsets-deleting"].result(30)
    worker = connect_worker.Worker(tmp_path / "worker", broker.bootstrap, {
        "group.id": "connect-refused", "offset.storage.topic": "connect-offsets-deleting",
        "config.storage.topic": "connect-refused-configs", "status.storage.topic": "connect-refused-status"})
    worker.start()
    try:
        # Its herder thread stops with the refusal, and the process then shuts down, which can take
        # Connect 45 s (an executor's shutdown timeout): the test stops waiting once the refusal is logged.
        refused = "Uncaught exception in herder work thread, exiting"
        deadline = time.time() + 90
        while time.time() < deadline and worker.running() and refused not in worker.log_path.read_text():
            time.sleep(0.3)
    finally:
        if worker.running():
            worker.kill9()
    log = worker.log_path.read_text()
    assert refused in log, worker.log_tail()
    assert ("Topic 'connect-offsets-deleting' supplied via the 'offset.storage.topic' property is required to "
            "have 'cleanup.policy=compact'") in log, worker.log_tail()
    assert "found the topic currently has 'cleanup.policy=delete'" in log, worker.log_tail()


def test_offsets_api_alters_and_resets_the_sink_group(broker, tmp_path):
    """KIP-875's offsets endpoints, which run on the sink's consumer group through the worker's admin
    client: GET /connectors/<sink>/offsets shows the committed offset; with the connector stopped,
    DELETE resets it (the group is deleted) and PATCH alters it (an offset commit for the group), and
    the resumed sink rewrites the topic from the altered offset."""
    bs = broker.bootstrap
    topic, sink = "connect-offsets-api-lines", "offsets-api-sink"
    lines = [f"{i:04d} offsets api" for i in range(1000)]
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for line in lines:
        p.produce(topic, value=line.encode())
    assert p.flush(30) == 0
    sink_file = tmp_path / "sink.txt"
    worker = connect_worker.Worker(tmp_path / "worker", bs, {
        "group.id": "connect-offsets-api", "offset.flush.interval.ms": FLUSH_MS,
        "config.storage.topic": "connect-offsets-api-configs", "offset.storage.topic": "connect-offsets-api-offsets",
        "status.storage.topic": "connect-offsets-api-status"})
    worker.start()
    try:
        worker.wait_rest()
        worker.wait_for("the worker healthy", lambda: worker.request("GET", "/health")["status"] == "healthy")
        worker.request("POST", "/connectors", {"name": sink, "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file), "topics": topic, "tasks.max": "1"}})
        assert _wait_sink(worker, sink_file, len(lines)) == lines
        partition = {"kafka_topic": topic, "kafka_partition": 0}
        committed = {"offsets": [{"partition": partition, "offset": {"kafka_offset": len(lines)}}]}
        worker.wait_for("the sink's committed offset in GET offsets",
                        lambda: worker.request("GET", f"/connectors/{sink}/offsets") == committed)
        group = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(f"connect-{sink}")])
        (tp,) = group[f"connect-{sink}"].result(30).topic_partitions
        assert (tp.topic, tp.partition, tp.offset) == (topic, 0, len(lines))

        worker.request("PUT", f"/connectors/{sink}/stop")
        worker.wait_for(f"{sink} STOPPED", lambda: worker.request("GET", f"/connectors/{sink}/status")[
            "connector"]["state"] == "STOPPED")
        reset = worker.request("DELETE", f"/connectors/{sink}/offsets")
        assert reset["message"] == "The offsets for this connector have been reset successfully", reset
        assert worker.request("GET", f"/connectors/{sink}/offsets") == {"offsets": []}
        altered = worker.request("PATCH", f"/connectors/{sink}/offsets", {
            "offsets": [{"partition": partition, "offset": {"kafka_offset": 400}}]})
        assert altered["message"] == "The offsets for this connector have been altered successfully", altered
        assert worker.request("GET", f"/connectors/{sink}/offsets") == {
            "offsets": [{"partition": partition, "offset": {"kafka_offset": 400}}]}

        worker.request("PUT", f"/connectors/{sink}/resume")
        got = _wait_sink(worker, sink_file, len(lines) + 600)
        time.sleep(2 * FLUSH_MS / 1000)
        assert _read_lines(sink_file) == lines + lines[400:], "the resumed sink rewrote the topic from offset 400"
        worker.wait_for("the sink's committed offset back at the end",
                        lambda: worker.request("GET", f"/connectors/{sink}/offsets") == committed)
        assert got[-1] == lines[-1]
    finally:
        rc = worker.stop()
    assert rc in (0, 143), f"the worker exited {rc} after SIGTERM; log:\n{worker.log_tail()}"
