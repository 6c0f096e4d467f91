"""Kafka Streams 4.4.0 against the broker: the Java tool's `streams-wordcount` (a word count with a
persistent RocksDB store, its compacted changelog, a repartition topic, at_least_once, commit every
100 ms, state.dir under the test's tmp dir) counts a seeded text stream of 20,000 lines from a fixed
vocabulary. The app counts the first half, is killed with SIGKILL, its local state dir is deleted
(so the restart can only get its counts back from the changelog), the second half is produced, and
the restarted app restores its store from the changelog (its restore listener reports the records
read) and counts the rest. The latest count per word on the counts topic must equal the exact counts
computed here from the input.

The kill comes once the first half is processed and committed (the group's committed offsets are
at the log end of the input and repartition topics): at_least_once may legitimately count twice the
records processed after the last commit, so killing mid-window would make the right answer depend
on timing; at a commit boundary the true counts are the only correct result, on Kafka 4.4 as on
Sluice (SLUICE_TARGET=kafka runs this same test)."""

import collections
import random
import shutil
import signal
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

import harness

APP_ID = "wordcount"
INPUT = "streams-lines"
OUTPUT = "streams-counts"
CHANGELOG = f"{APP_ID}-counts-changelog"
REPARTITION = f"{APP_ID}-words-repartition"
PARTITIONS = 3
LINES = 20_000
VOCABULARY = [f"w{i:03d}" for i in range(200)]


def _lines(seed=18):
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(VOCABULARY) for _ in range(rnd.randint(1, 8))) for _ in range(LINES)]


def _produce(bs, lines):
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5})
    for i, line in enumerate(lines):
        p.produce(INPUT, value=line.encode(), partition=i % PARTITIONS)
        p.poll(0)
    assert p.flush(60) == 0, "every line acknowledged"


def _start_app(bs, state_dir, logdir, run):
    out = open(logdir / f"streams-{run}.out", "w")
    err = open(logdir / f"streams-{run}.err", "w")
    cmd = ["java", "-Xmx512m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
           "-Dorg.slf4j.simpleLogger.logFile=System.err",
           "-cp", f"{harness.JAVA_JAR}:{harness.JAVA_LIB}/*", "sluice.clients.Main", "streams-wordcount",
           "--bootstrap", bs, "--app-id", APP_ID, "--input", INPUT, "--output", OUTPUT,
           "--state-dir", str(state_dir), "--commit-ms", "100"]
    return subprocess.Popen(cmd, stdout=out, stderr=err)


def _end_offsets(bs, topic):
    c = Consumer({"bootstrap.servers": bs, "group.id": "streams-test-watermarks"})
    try:
        meta = c.list_topics(topic, timeout=10).topics[topic]
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in meta.partitions}
    finally:
        c.close()


def _committed(bs, topic, partitions):
    c = Consumer({"bootstrap.servers": bs, "group.id": APP_ID, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in partitions], timeout=10)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def _wait_caught_up(bs, app, logdir, run, timeout=240):
    """Until the app's group has committed the log end of the input and repartition topics, twice
    in a row one second apart (the second read sees the repartition records the first caused)."""
    deadline = time.time() + timeout
    streak = 0
    while time.time() < deadline:
        assert app.poll() is None, f"the app exited {app.returncode}:\n{harness.tail(logdir / f'streams-{run}.err')}"
        ok = True
        for topic in (INPUT, REPARTITION):
            try:
                ends = _end_offsets(bs, topic)
            except Exception:
                ok = False
                break
            if topic == INPUT and not all(ends.values()):
                ok = False
            try:
                ok = ok and _committed(bs, topic, ends) == ends
            except Exception:  # the group's coordinator is still loading or moving: ask again
                ok = False
        streak = streak + 1 if ok else 0
        if streak >= 2:
            return
        time.sleep(1)
    raise AssertionError(f"the app did not catch up in {timeout}s:\n{harness.tail(logdir / f'streams-{run}.out')}\n"
                         f"{harness.tail(logdir / f'streams-{run}.err')}")


def _latest_counts(bs):
    ends = _end_offsets(bs, OUTPUT)
    c = Consumer({"bootstrap.servers": bs, "group.id": "streams-test-reader", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(OUTPUT, p, 0) for p in ends])
    latest = {}
    position = {p: 0 for p in ends}
    deadline = time.time() + 60
    while any(position[p] < ends[p] for p in ends) and time.time() < deadline:
        m = c.poll(1.0)
        if m is None or m.error():
            continue
        latest[m.key().decode()] = int(m.value().decode())
        position[m.partition()] = m.offset() + 1
    c.close()
    assert all(position[p] >= ends[p] for p in ends), f"read the counts topic to its end: {position} of {ends}"
    return latest, sum(ends.values())


def _restoration(logdir, run):
    """From the app's restore listener: the changelog end offset each store partition restored up
    to (restore-start ... to=O) and the records restored in all."""
    ends, restored = {}, 0
    for line in (logdir / f"streams-{run}.out").read_text().splitlines():
        if line.startswith("restore-start counts ") and CHANGELOG in line:
            tp = line.split()[2]
            ends[int(tp.rsplit("-", 1)[1])] = int(line.rsplit("to=", 1)[1])
        elif line.startswith("restore-end counts ") and CHANGELOG in line:
            restored += int(line.rsplit("restored=", 1)[1])
    return ends, restored


def test_word_count_restores_from_changelog_after_kill9(broker, java_tool, tmp_path):
    bs = broker.bootstrap
    lines = _lines()
    truth = collections.Counter(w for line in lines for w in line.split())
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(INPUT, PARTITIONS, 1), NewTopic(OUTPUT, PARTITIONS, 1)]).values():
        f.result(30)
    state_dir = tmp_path / "state"
    half = LINES // 2

    _produce(bs, lines[:half])
    app = _start_app(bs, state_dir, tmp_path, 1)
    try:
        _wait_caught_up(bs, app, tmp_path, 1)
        first, first_records = _latest_counts(bs)
        assert first_records > 0, "the first run produced counts"
        assert first == collections.Counter(w for line in lines[:half] for w in line.split()), \
            "after the first half the counts are exact"
    finally:
        app.send_signal(signal.SIGKILL)
        app.wait(30)
    assert app.returncode == -signal.SIGKILL
    assert any(p.name == "rocksdb" for p in state_dir.rglob("*")), "the first run kept a RocksDB store in state.dir"
    shutil.rmtree(state_dir)
    changelog_ends = _end_offsets(bs, CHANGELOG)
    assert sum(changelog_ends.values()) >= len(first), f"every count of the first run is in {CHANGELOG}"

    # The changelog is a compacted topic (Streams creates it with cleanup.policy=compact).
    res = ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG)
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["cleanup.policy"].value == "compact", configs["cleanup.policy"]

    _produce(bs, lines[half:])
    app = _start_app(bs, state_dir, tmp_path, 2)
    try:
        _wait_caught_up(bs, app, tmp_path, 2)
    finally:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(60)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait(10)
    restored_to, restored = _restoration(tmp_path, 2)
    assert restored_to == changelog_ends, "the restart restored each store partition up to its changelog's end"
    assert restored >= len(first), f"the restart restored its store from {CHANGELOG}: {restored} records"

    final, _ = _latest_counts(bs)
    assert final == truth, {w: (final.get(w), truth[w]) for w in truth if final.get(w) != truth[w]}
