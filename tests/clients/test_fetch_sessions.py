"""Fetch sessions (KIP-227, incremental fetch), the same tests against Sluice and Apache Kafka 4.4:

- Raw Fetch v12/v13 on one connection: a full fetch (session 0, epoch 0) opens a session; the
  next epochs name only changed partitions and are answered with only the partitions that have
  something new (records, a moved high watermark); a forgotten partition is no longer answered;
  a wrong epoch is INVALID_FETCH_SESSION_EPOCH (71), an unknown session FETCH_SESSION_ID_NOT_FOUND
  (70), a v13 request in a session opened by name FETCH_SESSION_TOPIC_ID_ERROR (106), each with
  session id 0 and no partitions, and none of them moves the session's epoch; epoch -1 closes it.
- The Java consumer (it uses sessions) reads every record exactly once, in order, while its
  assignment grows, shrinks and changes (`session-consume` in java/), and its session handler
  logs incremental fetches with no session error.
- confluent-kafka (librdkafka: full fetches, no sessions) through the same assignment changes.
- `max.incremental.fetch.session.cache.slots` bounds the cache: with 16 slots, of 100 full fetches
  from a consumer exactly 16 get a session, and those 16 keep working (on Sluice, with one shard,
  the /metrics gauge counts 16).
- Sluice only: with its session evicted again and again, the Java consumer is answered
  FETCH_SESSION_ID_NOT_FOUND (as for a session of another shard), re-sends full fetches and reads
  every record once."""

from __future__ import annotations

import re
import struct
import time
import urllib.request

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import harness  # noqa: E402
import wire  # noqa: E402
from wire import carray, cstring  # noqa: E402

# Four shards on two cores (ignored by Kafka): a session lives on its connection's shard while
# its partitions are read on all four.
BROKER_SETTINGS = {"sluice.shards": 4}
FETCH = 1
NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR = 0, 70, 71, 106


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=30)[topic].result(timeout=30)
    # A broker opening many partitions may answer Metadata late: retry until it lists them all.
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        except ck.KafkaException:
            continue
        if md and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} not ready")


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """`counts[p]` records to partition p, acknowledged by all replicas."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for partition, n in counts.items():
        for i in range(n):
            p.produce(topic, value=b"v%d" % i, partition=partition)
    assert p.flush(30) == 0


# ---------------------------------------------------------------------------- raw Fetch v12/v13

def fetch_body(version: int, session_id: int, epoch: int, topics: list[tuple[str, list[tuple[int, int]]]],
               forgotten: list[tuple[str, list[int]]] = (), max_wait_ms: int = 100) -> bytes:
    """A consumer's Fetch v12 (topics by name) or v13 (by id; only empty topic lists here)."""
    def partition(p: int, offset: int) -> bytes:
        # partition, current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset,
        # partition_max_bytes, tags
        return struct.pack(">iiqiqi", p, -1, offset, -1, -1, 1 << 20) + b"\x00"

    assert version == 12 or not topics and not forgotten
    body = struct.pack(">iiiib", -1, max_wait_ms, 1, 1 << 20, 0) + struct.pack(">ii", session_id, epoch)
    body += carray([cstring(t) + carray([partition(p, o) for p, o in ps]) + b"\x00" for t, ps in topics])
    body += carray([cstring(t) + carray([struct.pack(">i", p) for p in ps]) + b"\x00" for t, ps in forgotten])
    return body + cstring("") + b"\x00"


def read_fetch(r: wire.Reader, version: int) -> tuple[int, int, dict[int, tuple[int, int, int]]]:
    """(error code, session id, {partition: (error, high watermark, next offset after its records)})."""
    r.take("i")
    error, session_id = r.take("h"), r.take("i")
    answered: dict[int, tuple[int, int, int]] = {}

    def partition(r: wire.Reader) -> None:
        index, perror, hw = r.take("i"), r.take("h"), r.take("q")
        r.take("q"), r.take("q")
        r.array(lambda r: (r.take("q"), r.take("q"), r.tags()))
        r.take("i")
        n = r.uvarint() - 1
        records = r.raw(n) if n > 0 else b""
        r.tags()
        end, pos = -1, 0
        while pos + 61 <= len(records):
            base, length = struct.unpack_from(">qi", records, pos)
            (last_delta,) = struct.unpack_from(">i", records, pos + 23)
            end = base + last_delta + 1
            pos += 12 + length
        answered[index] = (perror, hw, end)

    def topic(r: wire.Reader) -> None:
        if version >= 13:
            r.raw(16)
        else:
            r.string()
        r.array(partition)
        r.tags()

    r.array(topic)
    return error, session_id, answered


class RawFetcher:
    def __init__(self, broker):
        self.c = wire.Connection(broker)
        self.correlation = 0

    def fetch(self, version: int, session_id: int, epoch: int, topics=(), forgotten=(), max_wait_ms: int = 100):
        self.correlation += 1
        frame = wire.header(FETCH, version, self.correlation, b"sessions", b"\x00")
        frame += fetch_body(version, session_id, epoch, list(topics), list(forgotten), max_wait_ms)
        r = wire.Reader(self.c.roundtrip(frame))
        assert r.take("i") == self.correlation
        r.tags()
        return read_fetch(r, version)

    def close(self):
        self.c.close()


def test_a_session_answers_what_changed_and_session_errors_have_kafkas_codes(broker):
    topic = "sessions-raw"
    create_topic(broker.bootstrap, topic, 2)
    produce(broker.bootstrap, topic, {0: 5, 1: 3})
    f = RawFetcher(broker)
    try:
        error, sid, answered = f.fetch(12, 0, 0, [(topic, [(0, 0), (1, 0)])])
        assert error == NONE and sid != 0, (error, sid)
        assert answered == {0: (NONE, 5, 5), 1: (NONE, 3, 3)}
        # Epoch 1 names the new fetch offsets; nothing new anywhere: an empty answer.
        assert f.fetch(12, sid, 1, [(topic, [(0, 5), (1, 3)])]) == (NONE, sid, {})
        # Records for partition 1 only: only it is answered, though epoch 2 names nothing.
        produce(broker.bootstrap, topic, {1: 2})
        assert f.fetch(12, sid, 2, max_wait_ms=5000) == (NONE, sid, {1: (NONE, 5, 5)})
        # Forget partition 0, move partition 1 on: records for 0 are no longer answered.
        assert f.fetch(12, sid, 3, [(topic, [(1, 5)])], forgotten=[(topic, [0])]) == (NONE, sid, {})
        produce(broker.bootstrap, topic, {0: 1})
        assert f.fetch(12, sid, 4) == (NONE, sid, {})
        # Session errors: session 0, no partitions, and the session's epoch does not move.
        assert f.fetch(12, sid, 9) == (INVALID_FETCH_SESSION_EPOCH, 0, {})
        unknown = sid + 1 if sid < 2**31 - 1 else sid - 1
        assert f.fetch(12, unknown, 1) == (FETCH_SESSION_ID_NOT_FOUND, 0, {})
        assert f.fetch(12, 0, 1) == (FETCH_SESSION_ID_NOT_FOUND, 0, {})
        assert f.fetch(13, sid, 5) == (FETCH_SESSION_TOPIC_ID_ERROR, 0, {})
        # Partition 0 named again (added back): answered once, with the record appended meanwhile.
        assert f.fetch(12, sid, 5, [(topic, [(0, 5)])]) == (NONE, sid, {0: (NONE, 6, 6)})
        # Epoch -1 closes the session: served without one, the session is gone.
        error, closed, answered = f.fetch(12, sid, -1, [(topic, [(0, 6)])])
        assert (error, closed, answered) == (NONE, 0, {0: (NONE, 6, -1)})
        assert f.fetch(12, sid, 6) == (FETCH_SESSION_ID_NOT_FOUND, 0, {})
        # Sessionless (0, -1) stays as before KIP-227: every named partition answered, no session.
        assert f.fetch(12, 0, -1, [(topic, [(0, 6), (1, 5)])]) == (NONE, 0, {0: (NONE, 6, -1), 1: (NONE, 5, -1)})
    finally:
        f.close()


# ---------------------------------------------------------------------------- real consumers

PHASES = "0,1,2;0,1,2,3,4,5;3,4,5;0,5;1;0,1,2,3,4,5"


def test_java_consumer_keeps_its_session_across_assignment_changes(broker, java_tool, logdir):
    topic = "sessions-java"
    create_topic(broker.bootstrap, topic, 6)
    r = java_tool(["session-consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--phases", PHASES,
                   "--per-phase", "100"], logdir=logdir, timeout=300)
    assert "OK phases=6" in r.stdout, r.stdout[-3000:]
    log = r.stderr
    created = len(re.findall(r"created a new incremental fetch session", log))
    incremental = len(re.findall(r"sent an incremental fetch response", log))
    assert created >= 1, log[-3000:]
    assert incremental >= 6, f"only {incremental} incremental fetches:\n{log[-3000:]}"
    for bad in ("was unable to process the fetch request", "invalid full fetch response",
                "invalid incremental fetch response", "was likely evicted"):
        assert bad not in log, f"{bad!r} in the consumer's log:\n{log[-3000:]}"
    print(f"java consumer: {created} session(s) created, {incremental} incremental fetch responses")


def test_confluent_consumer_across_assignment_changes(broker):
    topic = "sessions-confluent"
    create_topic(broker.bootstrap, topic, 6)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "sessions-unused",
                         "enable.auto.commit": False, "auto.offset.reset": "error"})
    produced = {p: 0 for p in range(6)}
    position = {p: 0 for p in range(6)}
    try:
        for phase in PHASES.split(";"):
            wanted = [int(p) for p in phase.split(",")]
            produce(broker.bootstrap, topic, {p: 50 for p in range(6)})
            for p in range(6):
                produced[p] += 50
            consumer.assign([TopicPartition(topic, p, position[p]) for p in wanted])
            deadline = time.time() + 60
            while any(position[p] < produced[p] for p in wanted):
                assert time.time() < deadline, f"phase {phase}: positions {position}, produced {produced}"
                for m in consumer.consume(500, timeout=0.5):
                    assert m.error() is None, m.error()
                    p = m.partition()
                    assert p in wanted, f"phase {phase}: a record of partition {p}"
                    assert m.offset() == position[p], (p, m.offset(), position[p])
                    assert m.value() == b"v%d" % (m.offset() % 50)
                    position[p] += 1
    finally:
        consumer.close()
    assert position == produced


# ---------------------------------------------------------------------------- the cache's bound

def test_the_cache_is_bounded_by_its_slots(tmp_path):
    metrics_port = harness.free_port()
    settings = {"max.incremental.fetch.session.cache.slots": 16, "sluice.shards": 1,
                "sluice.metrics.listener": f"127.0.0.1:{metrics_port}"}
    b = harness.Broker(tmp_path / "bounded", settings)
    b.start()
    try:
        topic = "sessions-bound"
        create_topic(b.bootstrap, topic, 1)
        produce(b.bootstrap, topic, {0: 1})
        f = RawFetcher(b)
        try:
            ids = [f.fetch(12, 0, 0, [(topic, [(0, 1)])], max_wait_ms=0)[1] for _ in range(100)]
            opened = [i for i in ids if i != 0]
            assert len(opened) == 16 and len(set(opened)) == 16, ids
            # Every open session still answers its next epoch.
            for sid in opened:
                assert f.fetch(12, sid, 1, max_wait_ms=0) == (NONE, sid, {})
            if b.target == "sluice":
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
                    text = r.read().decode()
                live = re.search(r'^kafka_server_fetchsessioncache_numincrementalfetchsessions\{shard="0"\} (\S+)$',
                                 text, re.M)
                cached = re.search(
                    r'^kafka_server_fetchsessioncache_numincrementalfetchpartitionscached\{shard="0"\} (\S+)$',
                    text, re.M)
                assert live and float(live.group(1)) == 16, text[-2000:]
                assert cached and float(cached.group(1)) == 16
        finally:
            f.close()
    finally:
        assert b.stop() in b.clean_exit_codes()


def test_the_java_consumer_recovers_from_evicted_sessions(tmp_path, java_tool, logdir):
    """(Sluice only: Kafka's eviction time is a constant 120 s.) One slot, sessions unused for
    more than 0 ms evictable: a raw fetcher opening a session every few milliseconds keeps
    evicting the Java consumer's, which is then answered FETCH_SESSION_ID_NOT_FOUND — as a
    request naming a session of another shard is — re-sends a full fetch, and still reads every
    record once, in order."""
    if harness.TARGET == "kafka":
        pytest.skip("min.incremental.fetch.session.eviction.ms is a constant (120 s) in Kafka")
    import threading

    settings = {"max.incremental.fetch.session.cache.slots": 1, "sluice.shards": 1,
                "sluice.min.incremental.fetch.session.eviction.ms": 0}
    b = harness.Broker(tmp_path / "evicting", settings)
    b.start()
    stop = threading.Event()
    opened = []
    try:
        topic = "sessions-evicted"
        create_topic(b.bootstrap, topic, 6)
        create_topic(b.bootstrap, "sessions-evictor", 1)

        def evict():
            f = RawFetcher(b)
            try:
                while not stop.is_set():
                    opened.append(f.fetch(12, 0, 0, [("sessions-evictor", [(0, 0)])], max_wait_ms=0)[1])
                    time.sleep(0.005)
            finally:
                f.close()

        evictor = threading.Thread(target=evict, daemon=True)
        evictor.start()
        try:
            r = java_tool(["session-consume", "--bootstrap", b.bootstrap, "--topic", topic, "--phases", PHASES,
                           "--per-phase", "100"], logdir=logdir, timeout=300)
        finally:
            stop.set()
            evictor.join(10)
        assert "OK phases=6" in r.stdout, r.stdout[-3000:]
        # Kafka 4.4's FetchSessionHandler logs one of two lines for it, depending on its path.
        evicted = sum(1 for ln in r.stderr.splitlines() if "FetchSessionHandler" in ln and (
            "was likely evicted" in ln or ("unable to process" in ln and "FETCH_SESSION_ID_NOT_FOUND" in ln)))
        assert evicted >= 1, r.stderr[-3000:]
        assert sum(1 for i in opened if i != 0) >= 1
        print(f"java consumer: {evicted} FETCH_SESSION_ID_NOT_FOUND answers, recovered with full fetches; "
              f"{len(opened)} raw sessions opened")
    finally:
        stop.set()
        assert b.stop() in b.clean_exit_codes()
