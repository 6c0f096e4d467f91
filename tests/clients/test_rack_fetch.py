"""Fetch from the closest replica (KIP-392) on a 3-broker cluster: the same test against Sluice and
against Apache Kafka 4.4 (SLUICE_TARGET=kafka).

Both clusters have controllers 1-3 and brokers 4-6 in racks r1-r3 with replica.selector.class =
org.apache.kafka.common.replica.RackAwareReplicaSelector: Sluice's is config/cluster (its broker
files set it; cluster.py), Kafka's the one replication_faults.py runs, with the selector added.
Ports are fixed (Sluice 19093-19095 / 19192-19392, Kafka 29093-29095 / 29192-29392): run it in a
network namespace of its own when anything else may use them.

A topic with replicas 4, 5, 6 (led by 4) takes 3,000 acks=all records; a confluent-kafka consumer
with client.rack = r2 reads them all exactly once, and librdkafka's own statistics count the bytes
each broker sent it: broker 5 (a follower) sent at least the records, broker 4 (the leader) not
even half of them. Broker 5 is then stopped (SIGSTOP) for 3 s while 3,000 more records are produced
with acks=1, and the consumer reads those exactly once from broker 5 as it catches up. A consumer
with client.rack = r1 (the leader's rack) and one with no rack read everything from the leader,
fetching nothing from broker 5. Kafka's Java consumer with client.rack = r2 reads all 6,000 exactly
once (the tool's `consume` checks), and its consumer-node-metrics show broker 5 sent them.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

import harness

LEADER, FOLLOWER, OTHER = 4, 5, 6
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
TOPIC, FIRST, SECOND = "rack-fetch", 3000, 3000


class _NoFirewall:
    """replication_faults' cluster starts each process in a cgroup for its network faults; none
    here."""

    def preexec(self, _name):
        return None


class _Target:
    def __init__(self, bootstrap: str, pid_of_node):
        self.bootstrap = bootstrap
        self.pid_of_node = pid_of_node


@pytest.fixture(scope="module")
def rack_cluster(tmp_path_factory):
    if harness.TARGET == "kafka":
        import replication_faults as rf
        cl = rf.KafkaCluster(tmp_path_factory.mktemp("kafka-rack"), _NoFirewall())
        busy = [p.port for p in cl.procs.values() if harness.port_open(p.port)]
        assert not busy, f"ports {busy} are in use"
        for name in cl.brokers():
            with open(cl.dir / f"{name}.properties", "a") as f:
                f.write(f"replica.selector.class={SELECTOR}\n")
        cl.start()
        try:
            yield _Target(cl.bootstrap(), lambda node: cl.procs[cl.name_of(node)].popen.pid)
        finally:
            codes = cl.shutdown()
            print(f"\nkafka cluster stopped: {codes}")
    else:
        from cluster import Cluster, setting
        for n in (1, 2, 3):
            assert setting(f"broker-{n}", "replica.selector.class") == SELECTOR
        c = Cluster(tmp_path_factory.mktemp("cluster-rack"))
        busy = c.busy_ports()
        assert not busy, f"ports {busy} of config/cluster are in use"
        c.start()
        try:
            yield _Target(c.bootstrap, lambda node: c.pid(c.names_by_id[node]))
        finally:
            print("\n" + c.stop().strip())
            panics = c.grep("panicked at")
            assert not panics, f"panics in the cluster's logs: {panics}"


def _partition_state(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(topic=TOPIC, timeout=10)
    t = md.topics.get(TOPIC)
    if t is None or t.error is not None or 0 not in t.partitions:
        return None
    p = t.partitions[0]
    return p.leader, sorted(p.isrs)


def _wait(fn, what: str, timeout: float = 60):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001 - retried until the deadline, then reported
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}: {last}")


def _produce(bootstrap: str, start: int, count: int, acks: str, during=None) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5, "message.timeout.ms": 60000,
                  "enable.idempotence": False, "log_level": 0})
    failed = []
    for i in range(start, start + count):
        while True:
            try:
                p.produce(TOPIC, key=harness.make_key("rf", i), value=harness.make_value("rf", i, 200), partition=0,
                          on_delivery=lambda err, _m: failed.append(err) if err else None)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
        if during and i == start + count // 4:
            during()
    assert p.flush(90) == 0 and not failed, failed[:5]


class _Consumer:
    """An assign-only confluent-kafka consumer from the beginning of partition 0, with librdkafka's
    statistics: bytes received and Fetch requests sent per broker node id."""

    def __init__(self, bootstrap: str, rack: str | None):
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        self.stats = {}
        conf = {"bootstrap.servers": bootstrap, "group.id": "rack-fetch-unused", "enable.auto.commit": False,
                "fetch.wait.max.ms": 200, "statistics.interval.ms": 200, "log_level": 0,
                "stats_cb": self._on_stats}
        if rack is not None:
            conf["client.rack"] = rack
        self.c = Consumer(conf)
        self.c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])

    def _on_stats(self, text: str) -> None:
        brokers = json.loads(text).get("brokers", {})
        self.stats = {b["nodeid"]: (b.get("rxbytes", 0), b.get("req", {}).get("Fetch", 0))
                      for b in brokers.values() if b.get("nodeid", -1) >= 0}

    def read(self, count: int, timeout: float = 120) -> list:
        out = []
        deadline = time.time() + timeout
        while len(out) < count and time.time() < deadline:
            for m in self.c.consume(1000, 0.5):
                assert m.error() is None, f"consumer error: {m.error()}"
                out.append((m.partition(), m.offset(), m.key().decode(), m.value().decode()))
        assert len(out) == count, f"read {len(out)} of {count} records"
        return out

    def per_broker(self) -> dict:
        """node id -> (bytes received, Fetch requests), from a statistics report made after now."""
        self.stats = {}
        deadline = time.time() + 10
        while not self.stats and time.time() < deadline:
            assert not self.c.consume(1, 0.3), "no more records expected"
        assert self.stats, "no statistics from librdkafka"
        return dict(self.stats)

    def close(self) -> None:
        self.c.close()


def test_consumer_fetches_from_the_follower_in_its_rack(rack_cluster, java_tool, tmp_path):
    bootstrap = rack_cluster.bootstrap
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=-1, replication_factor=-1,
                                      replica_assignments={0: [LEADER, FOLLOWER, OTHER]},
                                      topic_configs={"min.insync.replicas": "2"})])
    finally:
        admin.close()
    _wait(lambda: _partition_state(bootstrap) == (LEADER, [LEADER, FOLLOWER, OTHER]),
          f"{TOPIC}-0 led by {LEADER} with every replica in sync")
    _produce(bootstrap, 0, FIRST, "all")

    consumer = _Consumer(bootstrap, "r2")
    try:
        records = consumer.read(FIRST)
        payload = sum(len(k) + len(v) for _p, _o, k, v in records)
        first = consumer.per_broker()
        rx = {n: first.get(n, (0, 0))[0] for n in (LEADER, FOLLOWER, OTHER)}
        assert rx[FOLLOWER] >= payload, f"client.rack=r2: bytes per broker {rx}, records {payload}"
        assert rx[LEADER] < payload / 2, f"client.rack=r2: bytes per broker {rx}, records {payload}"
        print(f"\n[{harness.TARGET}] client.rack=r2: {FIRST} records ({payload} bytes of keys and values); "
              f"(bytes, fetches) per broker {first}")

        # The follower lags: stopped for 3 s while the producer runs (acks=1: the leader takes
        # the records at once), then it catches up, its high watermark trailing the leader's.
        pid = rack_cluster.pid_of_node(FOLLOWER)

        def stop_follower():
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(3)
            finally:
                os.kill(pid, signal.SIGCONT)

        producer = threading.Thread(target=_produce, args=(bootstrap, FIRST, SECOND, "1", stop_follower))
        producer.start()
        more = consumer.read(SECOND)
        producer.join(120)
        records += more
        harness.verify_exactly_once(records, FIRST + SECOND, "rf")
        second = consumer.per_broker()
        more_payload = sum(len(k) + len(v) for _p, _o, k, v in more)
        grew = {n: second.get(n, (0, 0))[0] - first.get(n, (0, 0))[0] for n in (LEADER, FOLLOWER, OTHER)}
        assert grew[FOLLOWER] >= more_payload, f"after the stop: bytes per broker {grew}, records {more_payload}"
        print(f"[{harness.TARGET}] broker {FOLLOWER} stopped 3 s mid-produce: {SECOND} more read exactly once; "
              f"bytes per broker since {grew}")
    finally:
        consumer.close()

    # Kafka's Java consumer (kafka-clients 4.4.0) with client.rack = r2: every record once, and its
    # own per-node byte counts (consumer-node-metrics) show the follower sent them.
    total = payload + more_payload
    r = java_tool(["consume", "--bootstrap", bootstrap, "--topic", TOPIC, "--expect", str(FIRST + SECOND),
                   "--client-rack", "r2", "--timeout-s", "120"], logdir=tmp_path)
    node_bytes = {int(f[1]): int(f[2]) for f in (ln.split() for ln in r.stdout.splitlines())
                  if len(f) == 3 and f[0] == "NODE_BYTES"}
    assert node_bytes.get(FOLLOWER, 0) >= total and node_bytes.get(LEADER, 0) < total / 2, \
        f"Java client.rack=r2: bytes per broker {node_bytes}, records {total}\n{r.stdout[-2000:]}"
    print(f"[{harness.TARGET}] Java consumer, client.rack=r2: {FIRST + SECOND} records once; bytes per broker "
          f"{node_bytes}")

    # The leader's rack, or no rack: everything from the leader, no fetch to the follower.
    for rack in ("r1", None):
        c = _Consumer(bootstrap, rack)
        try:
            harness.verify_exactly_once(c.read(FIRST + SECOND), FIRST + SECOND, "rf")
            seen = c.per_broker()
            assert seen.get(FOLLOWER, (0, 0))[1] == 0, f"client.rack={rack}: (bytes, fetches) per broker {seen}"
            assert seen.get(LEADER, (0, 0))[0] >= payload + more_payload, seen
            print(f"[{harness.TARGET}] client.rack={rack}: (bytes, fetches) per broker {seen}")
        finally:
            c.close()
