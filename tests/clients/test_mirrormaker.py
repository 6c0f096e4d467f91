"""MirrorMaker 2 (Apache Kafka's own, unmodified: mirror.py) moving topics and consumer groups'
committed offsets from Apache Kafka 4.4 to Sluice, and back.

Kafka -> Sluice is the README's "Moving from Kafka" recipe (IdentityReplicationPolicy: the topic keeps
its name). Seeded keyed records on a 3-partition topic of a Kafka 4.4 broker; group `billing` has
processed 60% of each partition and committed, group `drained` everything. MM2 starts: the topic is
copied with its configs, `drained`'s offsets are translated exactly; records keep arriving on Kafka
at a live pace while `billing` keeps consuming there, until it stops a little behind the head; its
offsets are translated; more records arrive and are copied. Then the copy must equal the original
record by record (partition, offset, key, value, headers, timestamp), and the groups switched to
Sluice start at their translated offsets: every record after a Kafka commit is read (none skipped),
the records read twice are those between the translated offset and the commit, counted, tied to an
offset sync MM2 wrote and bounded (check_translation); `drained` reads nothing twice.

Sluice -> Kafka (the default replication policy: the topic arrives as `sluice.<topic>`): the data, and
a group's offsets translated exactly.

With SLUICE_TARGET=kafka the "sluice" side is a second Kafka 4.4 broker: Kafka -> Kafka is the reference.
"""

from __future__ import annotations

import random
import struct
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                    NewTopic)

import harness
import mirror

PARTITIONS = 3
FIRST_RECORDS = 3000  # produced on Kafka before MM2 starts
COMMITTED_SHARE = 0.6  # of each partition, the Kafka consumer group reads and commits this share
MORE_RECORDS = 900  # produced on Kafka while MM2 runs and the application still consumes there
TOTAL_RECORDS = 4500  # the rest is produced on Kafka after the application stopped there
LIVE_BEHIND = 20  # records per partition the application leaves unprocessed when it stops on Kafka
# MirrorSourceTask writes an offset sync at most every offset.lag.max records (Kafka's default 100);
# denser syncs give the checkpoints finer translation (check_translation).
OFFSET_LAG_MAX = 10
# How many records before its commit a consumer stopped LIVE_BEHIND records behind the head may be
# translated to (check_translation): the store's precision there, plus the spacing of the syncs.
LIVE_BOUND = 4 * LIVE_BEHIND + OFFSET_LAG_MAX
SYNCS_ON_KAFKA = "mm2-offset-syncs.sluice.internal"  # MM2's offset syncs live on the source cluster
BACK_RECORDS = 1000  # Sluice -> Kafka: produced on Sluice before MM2 starts
BACK_MORE = 300  # and while it runs
# Set on the source topic; MM2 creates the copy with them and keeps them in sync
# (sync.topic.configs; its default filter leaves out min.insync.replicas, timestamp and throttle configs).
TOPIC_CONFIGS = {"retention.ms": "2592000000", "max.message.bytes": "2097152"}
SEED = 18
DRAINED = "drained"  # a group that had read every record before the switch

# No auto-creation: the target's topics are MM2's to create (with the source's partition count).
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0, "auto.create.topics.enable": False}


def wait_translated(target, group: str, topic: str, expected, mm, syncs) -> None:
    """Waits until MM2 has committed `group`'s offsets for `topic` on `target` exactly as
    `expected` (the source's commits); on failure names both and `syncs()` (MM2's offset syncs)."""
    seen = {}

    def exact():
        seen["got"] = committed(target, group, topic, PARTITIONS)
        return seen["got"] == expected
    try:
        mirror.wait_for(f"group {group}'s offsets for {topic} on {target.target}, exactly", exact, 30, mm)
    except AssertionError:
        raise AssertionError(f"{group}: committed {expected} on the source, {seen['got']} on "
                             f"{target.target}; syncs {syncs()}") from None

def mm2_settings(kafka: harness.Broker, sluice: harness.Broker, flow: str, topic: str, group: str,
                 identity: bool) -> dict:
    """An mm2.properties for one flow ("kafka->sluice" or "sluice->kafka"), sized for one-broker
    clusters and a fast test (the README recipe is the same with the intervals left at their defaults)."""
    s = {
        "clusters": "kafka, sluice",
        "kafka.bootstrap.servers": kafka.bootstrap,
        "sluice.bootstrap.servers": sluice.bootstrap,
        f"{flow}.enabled": "true",
        f"{flow}.topics": topic,
        f"{flow}.groups": group,
        # One-broker clusters: every topic MM2 creates (replicas, heartbeats, checkpoints, offset syncs,
        # and the Connect worker's config/offset/status topics) has one replica.
        "replication.factor": 1,
        "checkpoints.topic.replication.factor": 1,
        "heartbeats.topic.replication.factor": 1,
        "offset-syncs.topic.replication.factor": 1,
        "config.storage.replication.factor": 1,
        "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "tasks.max": 1,
        "offset.lag.max": OFFSET_LAG_MAX,
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": 1,
        "emit.checkpoints.interval.seconds": 1,
        "emit.heartbeats.interval.seconds": 1,
        "refresh.topics.interval.seconds": 2,
        "refresh.groups.interval.seconds": 2,
        "sync.topic.configs.interval.seconds": 2,
        # Neither cluster runs an ACL authorizer (Sluice has none; the Kafka brokers here are started
        # without one): there are no ACLs to copy.
        "sync.topic.acls.enabled": "false",
    }
    # The Connect worker of the flow's target cluster (worker settings take the cluster's prefix) flushes
    # the source task's positions every 60 s by default, and only then does MirrorSourceTask send the
    # offset sync of a partition's last record (a "delayed" sync): a short interval lets a group that
    # stopped at a partition's end be translated exactly within seconds.
    target = flow.split("->")[1]
    s[f"{target}.offset.flush.interval.ms"] = 1000
    if identity:
        s["replication.policy.class"] = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    return s


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    """A Kafka 4.4 source and the target under test (Sluice; a second Kafka with SLUICE_TARGET=kafka)."""
    mirror.ensure_mirror_libs()
    workdir = tmp_path_factory.mktemp("mirrormaker")
    kafka = harness.Broker(workdir / "kafka", BROKER_SETTINGS, target="kafka")
    sluice = harness.Broker(workdir / "sluice", BROKER_SETTINGS, target=harness.TARGET)
    started = []
    try:
        for b in (kafka, sluice):
            b.start(timeout=120)
            started.append(b)
        yield kafka, sluice
    finally:
        for b in started:
            running = b.running()
            rc = b.stop()
            assert running, f"{b.target} broker died during the test (exit {rc}); log:\n{harness.tail(b.log_path)}"
            assert rc in b.clean_exit_codes(), f"{b.target} exited {rc}; log:\n{harness.tail(b.log_path)}"


def create_topic(b: harness.Broker, topic: str, partitions: int, configs: dict | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])[topic].result(timeout=30)


def topic_configs(b: harness.Broker, topic: str) -> dict[str, str] | None:
    """The topic's configs set on the topic (DYNAMIC_TOPIC_CONFIG); None while it does not exist."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource("topic", topic)
    try:
        entries = admin.describe_configs([res])[res].result(timeout=30)
    except KafkaException:
        return None
    return {k: e.value for k, e in entries.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}


def alter_topic_config(b: harness.Broker, topic: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(timeout=30)


def produce(b: harness.Broker, topic: str, seqs: range, rng: random.Random, paced: bool = False) -> None:
    """Keyed records in the suite's format, each with a header and a CreateTime; every one acknowledged.
    paced: in sends of 30 records 20 ms apart (about 1,500 records/s), as live traffic arrives."""
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "linger.ms": 5})
    failed = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(err)

    base_ms = int(time.time() * 1000) - 3_600_000
    for seq in seqs:
        p.produce(topic, key=harness.make_key("k", seq), value=harness.make_value("k", seq, rng.randrange(0, 200)),
                  headers=[("seq", str(seq).encode())], timestamp=base_ms + seq, on_delivery=on_delivery)
        if seq % 500 == 0:
            p.poll(0)
        if paced and seq % 30 == 29:
            p.flush(10)
            time.sleep(0.02)
    assert p.flush(60) == 0, "records still unacknowledged after 60 s"
    assert not failed, f"produce errors: {failed[:5]}"


def end_offsets(b: harness.Broker, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "mm2-test-probe", "enable.auto.commit": False})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        c.close()


def copied(b: harness.Broker, topic: str, ends: dict[int, int]) -> bool:
    """Whether the topic exists on b with these end offsets."""
    try:
        return end_offsets(b, topic, len(ends)) == ends
    except KafkaException:
        return False  # not created yet


def read_all(b: harness.Broker, topic: str, partitions: int, raw: bool = False) -> list[tuple]:
    """Every record of the topic, read by assignment from the start to the end offsets of now:
    (partition, offset, key, value, headers, timestamp)."""
    ends = end_offsets(b, topic, partitions)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "mm2-test-reader", "enable.auto.commit": False,
                  "enable.partition.eof": False})
    out = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        done = {p for p, e in ends.items() if e == 0}
        deadline = time.time() + 60
        while len(done) < partitions:
            assert time.time() < deadline, f"{topic}: read {len(out)} records, ends {ends}"
            for m in c.consume(500, timeout=1.0):
                if m.error():
                    raise KafkaException(m.error())
                key, value = (m.key(), m.value()) if raw else (m.key().decode(), m.value().decode())
                out.append((m.partition(), m.offset(), key, value,
                            tuple((k, v.decode()) for k, v in (m.headers() or [])), m.timestamp()))
                if m.offset() + 1 >= ends[m.partition()]:
                    done.add(m.partition())
    finally:
        c.close()
    return sorted(out)


def offset_syncs(b: harness.Broker, syncs_topic: str, topic: str) -> dict[int, list[tuple[int, int]]]:
    """MM2's offset syncs for `topic` (its offset-syncs topic, one partition, on the source cluster):
    per partition the (upstream, downstream) offset pairs in the order written. The key is a
    Kafka-protocol struct {topic: STRING, partition: INT32}, the value {upstream: INT64, downstream: INT64}."""
    syncs: dict[int, list[tuple[int, int]]] = {}
    for _p, _o, key, value, _h, _t in read_all(b, syncs_topic, 1, raw=True):
        (n,) = struct.unpack_from(">h", key)
        name = key[2:2 + n].decode()
        (partition,) = struct.unpack_from(">i", key, 2 + n)
        if name == topic:
            syncs.setdefault(partition, []).append(struct.unpack(">qq", value))
    return syncs


def committed(b: harness.Broker, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets on the broker (OffsetFetch through the AdminClient); absent ones left out."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    res = admin.list_consumer_group_offsets([req])[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in res.topic_partitions if tp.offset >= 0 and not tp.error}


class Member:
    """A consumer-group member that processes each partition up to a given offset and commits there
    (records it fetched past that point are not processed, so not committed), as an application
    would between polls; it stays in the group until closed."""

    def __init__(self, b: harness.Broker, topic: str, group: str):
        self.topic, self.group = topic, group
        self.consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe([topic])
        self.position: dict[int, int] = {}

    def process_to(self, targets: dict[int, int]) -> dict[int, int]:
        """Reads until every partition's position is at its target, commits the targets, returns the commits."""
        c = self.consumer
        c.resume([TopicPartition(self.topic, p) for p in targets])
        deadline = time.time() + 60
        while any(self.position.get(p, 0) < t for p, t in targets.items()):
            assert time.time() < deadline, f"group {self.group}: positions {self.position}, targets {targets}"
            for m in c.consume(500, timeout=1.0):
                if m.error():
                    raise KafkaException(m.error())
                if m.offset() < targets[m.partition()]:
                    self.position[m.partition()] = m.offset() + 1
            for p, t in targets.items():
                if self.position.get(p, 0) >= t:
                    c.pause([TopicPartition(self.topic, p)])
        # Rewind what was fetched past the targets, so the next call reads it (a pause keeps the position).
        for p, t in targets.items():
            c.seek(TopicPartition(self.topic, p, t))
        commits = c.commit(offsets=[TopicPartition(self.topic, p, t) for p, t in targets.items()], asynchronous=False)
        return {tp.partition: tp.offset for tp in commits if tp.offset >= 0}

    def close(self) -> None:
        self.consumer.close()


def resume(b: harness.Broker, topic: str, group: str, ends: dict[int, int]) -> list[tuple]:
    """A member of `group` with no reset policy to hide a missing commit (auto.offset.reset=error): it
    starts where the group's committed offsets say and reads to `ends`. Returns (partition, offset, key)."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "error"})
    c.subscribe([topic])
    out = []
    position: dict[int, int] = {}
    deadline = time.time() + 60
    try:
        while any(position.get(p, -1) < e for p, e in ends.items() if e > 0) or not out:
            assert time.time() < deadline, f"{group} on {b.target}: read {len(out)}, positions {position}, ends {ends}"
            for m in c.consume(500, timeout=1.0):
                if m.error():
                    raise KafkaException(m.error())
                out.append((m.partition(), m.offset(), m.key().decode()))
                position[m.partition()] = m.offset() + 1
        c.commit(asynchronous=False)
    finally:
        c.close()
    return out


def check_translation(commits: dict[int, int], translated: dict[int, int], syncs: dict[int, list[tuple[int, int]]],
                      bound: int) -> None:
    """The records a switched consumer reads twice come from offset translation's granularity only.

    MM2 translates a committed upstream offset C through an offset sync (u, d) it wrote with u <= C:
    to d + 1 (d when u == C), never past C. Its OffsetSyncStore keeps one sync per power of two behind
    its newest (each slot i at most 2^i - 1 offsets older than the newest; distinct neighbours at least
    2^(i-2) apart), so a commit `behind` records before the newest sync is translated through a sync
    fewer than 4 * behind offsets before it when syncs are dense (one per offset.lag.max records, as
    for live traffic: bound). With identity offsets (a new target topic) d == u."""
    for p, c in commits.items():
        t = translated[p]
        assert t <= c, f"partition {p}: translated {t} past the commit {c}: records would be skipped"
        used = [(u, d) for u, d in syncs.get(p, []) if u <= c and t == (d if u == c else d + 1)]
        assert used, f"partition {p}: commit {c} translated to {t}, through none of MM2's syncs {syncs.get(p)}"
        assert c - t <= bound, f"partition {p}: {c - t} records re-read (commit {c}, translated {t}), bound {bound}"


def test_kafka_to_sluice(clusters, tmp_path):
    kafka, sluice = clusters
    rng = random.Random(SEED)
    topic, group = "orders", "billing"
    create_topic(kafka, topic, PARTITIONS, TOPIC_CONFIGS)
    produce(kafka, topic, range(FIRST_RECORDS), rng)
    first_ends = end_offsets(kafka, topic, PARTITIONS)
    # The application on Kafka has processed about 60% when the migration starts.
    member = Member(kafka, topic, group)
    first_commits = member.process_to({p: int(e * COMMITTED_SHARE) for p, e in first_ends.items()})
    assert committed(kafka, group, topic, PARTITIONS) == first_commits
    # Another group had read everything: at a partition's end MM2 translates exactly (its newest offset
    # sync is the partition's last record, sent at the task's next offset flush), so it reads nothing twice.
    drained = Member(kafka, topic, DRAINED)
    drained_commits = drained.process_to(first_ends)
    drained.close()

    mm = mirror.MirrorMaker(tmp_path, mm2_settings(kafka, sluice, "kafka->sluice", topic, f"{group}|{DRAINED}",
                                                   identity=True), clusters=["sluice"])
    t0 = time.time()
    with mm:
        mirror.wait_for(f"{topic} copied to {sluice.target}", lambda: copied(sluice, topic, first_ends), 90, mm)
        t_copied = time.time() - t0
        # The checkpoint connector translates the groups' Kafka commits and, as neither group has a member on
        # the target, commits them there (sync.group.offsets).
        wait_translated(sluice, DRAINED, topic, drained_commits, mm,
                        lambda: offset_syncs(kafka, SYNCS_ON_KAFKA, topic))
        t_translated = time.time() - t0

        # Topic configs: created with the source's, then kept in sync (IncrementalAlterConfigs with every
        # config of a Kafka 4.4 topic, SET for its overrides and DELETE for the rest).
        assert topic_configs(sluice, topic) == TOPIC_CONFIGS
        alter_topic_config(kafka, topic, "retention.ms", "1296000000")
        changed = dict(TOPIC_CONFIGS, **{"retention.ms": "1296000000"})
        mirror.wait_for(f"{topic}'s changed retention.ms on {sluice.target}",
                        lambda: topic_configs(sluice, topic) == changed, 30, mm)

        # Producers still write to Kafka and the application still consumes there while MM2 copies live;
        # it stops a little behind the head (LIVE_BEHIND records per partition), as one switched mid-stream.
        produce(kafka, topic, range(FIRST_RECORDS, FIRST_RECORDS + MORE_RECORDS), rng, paced=True)
        live_ends = end_offsets(kafka, topic, PARTITIONS)
        kafka_commits = member.process_to({p: e - LIVE_BEHIND for p, e in live_ends.items()})
        member.close()  # the application stops on Kafka
        seen = {}

        def translated_within_bound():
            seen["billing"] = committed(sluice, group, topic, PARTITIONS)
            return len(seen["billing"]) == PARTITIONS and all(
                kafka_commits[p] - LIVE_BOUND <= seen["billing"][p] <= kafka_commits[p] for p in range(PARTITIONS))
        try:
            mirror.wait_for(f"group {group}'s offsets on {sluice.target}", translated_within_bound, 30, mm)
        except AssertionError:
            raise AssertionError(f"{group}: committed {kafka_commits} on Kafka, {seen['billing']} on {sluice.target}; "
                                 f"syncs {offset_syncs(kafka, SYNCS_ON_KAFKA, topic)}") from None
        # ... and its producers go on writing to Kafka until they are switched too.
        produce(kafka, topic, range(FIRST_RECORDS + MORE_RECORDS, TOTAL_RECORDS), rng)
        kafka_ends = end_offsets(kafka, topic, PARTITIONS)
        mirror.wait_for(f"the later records copied to {sluice.target}", lambda: copied(sluice, topic, kafka_ends),
                        60, mm)
        assert mm.stop() in (0, 143), f"MirrorMaker 2 exit; log {mm.log_path}"
    print(f"\nMM2 {mirror.mirror_version()} kafka->{sluice.target}: {FIRST_RECORDS} records copied "
          f"{t_copied:.1f} s after start, group offsets translated at {t_translated:.1f} s")

    # The copy: record for record, the same partition, offset, key, value, header and timestamp.
    original = read_all(kafka, topic, PARTITIONS)
    copy = read_all(sluice, topic, PARTITIONS)
    assert len(original) == TOTAL_RECORDS
    assert copy == original, f"{len(copy)} records on {sluice.target}, {len(original)} on Kafka; first difference: " \
        + str(next(((a, b) for a, b in zip(copy, original) if a != b), None))
    by_offset = {(r[0], r[1]): r[2] for r in original}

    # The switched consumers start at the translated offsets, never after their Kafka commits.
    translated = committed(sluice, group, topic, PARTITIONS)
    read = resume(sluice, topic, group, kafka_ends)
    firsts = {}
    for p, o, _ in read:
        firsts.setdefault(p, o)
    assert firsts == translated, f"first offsets read {firsts}, translated commits {translated}"
    keys_read = [k for _, _, k in read]
    assert len(keys_read) == len(set(keys_read)), "a record read twice by the switched consumer"
    for p, o, k in read:
        assert by_offset[(p, o)] == k, f"{sluice.target} {p}/{o} holds {k}, Kafka {by_offset[(p, o)]}"
    must_read = {k for (p, o), k in by_offset.items() if o >= kafka_commits[p]}
    skipped = must_read - set(keys_read)
    assert not skipped, f"{len(skipped)} records after the Kafka commit never read on {sluice.target}, " \
                        f"e.g. {sorted(skipped)[:5]}"
    again = {p: kafka_commits[p] - translated[p] for p in range(PARTITIONS)}
    assert sum(1 for p, o, _ in read if o < kafka_commits[p]) == sum(again.values())
    check_translation(kafka_commits, translated, offset_syncs(kafka, SYNCS_ON_KAFKA, topic), LIVE_BOUND)

    drained_read = resume(sluice, topic, DRAINED, kafka_ends)
    assert sorted(k for _, _, k in drained_read) == sorted(k for (p, o), k in by_offset.items()
                                                           if o >= drained_commits[p]), \
        f"{DRAINED} on {sluice.target}: not exactly the records produced after its commit"
    assert len(drained_read) == TOTAL_RECORDS - FIRST_RECORDS
    print(f"switched consumer: {len(read)} records read, {len(must_read)} after the Kafka commits "
          f"{kafka_commits}, re-read per partition {again} (translated {translated}); {DRAINED}: "
          f"{len(drained_read)} read, none twice")


def test_sluice_to_kafka(clusters, tmp_path):
    """The way back, with the default replication policy (the topic arrives on Kafka as sluice.<topic>):
    the data, and a group that had read everything on Sluice resumes on Kafka with the records produced
    since, each once (its commits at the partitions' ends are translated exactly)."""
    kafka, sluice = clusters
    rng = random.Random(SEED + 1)
    topic, group = "returns", "audit"
    remote = f"sluice.{topic}"
    create_topic(sluice, topic, PARTITIONS)
    produce(sluice, topic, range(BACK_RECORDS), rng)
    member = Member(sluice, topic, group)
    commits = member.process_to(end_offsets(sluice, topic, PARTITIONS))
    member.close()

    mm = mirror.MirrorMaker(tmp_path, mm2_settings(kafka, sluice, "sluice->kafka", topic, group, identity=False),
                            clusters=["kafka"])
    with mm:
        mirror.wait_for(f"{topic} copied to Kafka as {remote}", lambda: copied(kafka, remote, commits), 90, mm)
        wait_translated(kafka, group, remote, commits, mm,
                        lambda: offset_syncs(sluice, 'mm2-offset-syncs.kafka.internal', topic))
        produce(sluice, topic, range(BACK_RECORDS, BACK_RECORDS + BACK_MORE), rng)
        ends = end_offsets(sluice, topic, PARTITIONS)
        mirror.wait_for(f"the later records copied to Kafka as {remote}", lambda: copied(kafka, remote, ends), 60, mm)
        assert mm.stop() in (0, 143), f"MirrorMaker 2 exit; log {mm.log_path}"

    original = read_all(sluice, topic, PARTITIONS)
    copy = read_all(kafka, remote, PARTITIONS)
    assert len(original) == BACK_RECORDS + BACK_MORE
    assert copy == original, f"{len(copy)} records on Kafka, {len(original)} on {sluice.target}"
    read = resume(kafka, remote, group, ends)
    assert sorted(k for _, _, k in read) == sorted(harness.make_key("k", s)
                                                   for s in range(BACK_RECORDS, BACK_RECORDS + BACK_MORE))
    print(f"\nMM2 {sluice.target}->kafka: {BACK_RECORDS + BACK_MORE} records copied; group {group} translated "
          f"exactly {commits}, then read the {BACK_MORE} later records once")
