"""The Prometheus endpoint (`sluice.metrics.listener`), scraped the way Prometheus does and parsed
with Prometheus' own text-format parser (prometheus_client.parser) while confluent-kafka produces
and consumes: bytes in / messages in per topic grow by what was produced, bytes out by what was
consumed, the per-API request counters and latency histograms of Produce and Fetch grow and stay
cumulative, log sizes and end offsets match the records, per-shard partition and leader counts add
up, and a group's lag is the records produced after its last commit (then 0 once it commits).
/health and /ready answer 200 on a ready broker; a broker that cannot reach its controller stays
503 on /ready while /health says 200.

Sluice only: Apache Kafka has no HTTP endpoint (its metrics are JMX MBeans); the metric names map
Kafka's MBeans (see ARCHITECTURE.md, "Metrics")."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest

import harness

DASHBOARD = harness.REPO / "deploy" / "grafana" / "sluice-dashboard.json"

pytestmark = pytest.mark.skipif(harness.TARGET != "sluice",
                                reason="Sluice's own HTTP metrics endpoint (Kafka exposes JMX)")

ck = pytest.importorskip("confluent_kafka")
parser = pytest.importorskip("prometheus_client.parser")
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

METRICS_PORT = harness.free_port()
# Two shards, so that per-shard figures and the cross-shard lag join are exercised on any host.
BROKER_SETTINGS = {"sluice.metrics.listener": f"127.0.0.1:{METRICS_PORT}", "sluice.shards": 2}

PARTITIONS = 4
COUNT = 3000
MORE = 500
KEY_BYTES = 8
VALUE_BYTES = 100


def get(path: str, port: int = METRICS_PORT) -> tuple[int, str, str]:
    """(status, content type, body) of an HTTP GET to the endpoint."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


class Scrape:
    """One /metrics scrape, parsed by prometheus_client's parser."""

    def __init__(self):
        status, content_type, text = get("/metrics")
        assert status == 200, f"/metrics answered {status}: {text[:500]}"
        assert content_type.startswith("text/plain; version=0.0.4"), content_type
        self.families = {f.name: f for f in parser.text_string_to_metric_families(text)}
        self.samples = [s for f in self.families.values() for s in f.samples]

    def value(self, name: str, **labels) -> float:
        """The sample `name` with exactly these labels (0 when absent: a counter not yet started)."""
        found = [s.value for s in self.samples if s.name == name and s.labels == labels]
        assert len(found) <= 1, f"{name}{labels} appears {len(found)} times"
        return found[0] if found else 0.0

    def matching(self, name: str, **labels) -> list:
        return [s for s in self.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels) -> float:
        return sum(s.value for s in self.matching(name, **labels))


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)],
                        operation_timeout=30)[topic].result(timeout=30)
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        if md and md.error is None and len(md.partitions) == PARTITIONS:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} not ready")


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> int:
    """Produces `count` records (8-byte keys, 100-byte values); returns their key+value bytes."""
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    payload = 0
    for i in range(start, start + count):
        key = f"{i:08d}".encode()
        value = (f"{i:08d}" * (VALUE_BYTES // 8 + 1))[:VALUE_BYTES].encode()
        payload += len(key) + len(value)
        while True:
            try:
                p.produce(topic, key=key, value=value,
                          on_delivery=lambda err, _m: errors.append(err) if err else None)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:5]
    return payload


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int) -> None:
    """Reads `count` records in group `group`, then commits synchronously."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.time() + 60
        while got < count and time.time() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got += 1
        assert got == count, f"consumed {got} of {count}"
        c.commit(asynchronous=False)
    finally:
        c.close()


def check_histograms(scrape: Scrape) -> None:
    """Every histogram series: buckets sorted by le, cumulative, +Inf bucket == _count, _sum >= 0."""
    histograms = [f for f in scrape.families.values() if f.type == "histogram"]
    assert histograms, "no histogram family"
    for family in histograms:
        series = {}
        for s in family.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            series.setdefault(key, []).append(s)
        for key, samples in series.items():
            buckets = [(float(s.labels["le"]), s.value) for s in samples if s.name.endswith("_bucket")]
            count = [s.value for s in samples if s.name.endswith("_count")]
            total = [s.value for s in samples if s.name.endswith("_sum")]
            assert buckets and count and total, (family.name, key)
            bounds = [b for b, _ in buckets]
            assert bounds == sorted(bounds) and bounds[-1] == float("inf"), (family.name, key, bounds)
            values = [v for _, v in buckets]
            assert all(a <= b for a, b in zip(values, values[1:])), (family.name, key, values)
            assert values[-1] == count[0], (family.name, key, values[-1], count[0])
            assert total[0] >= 0


def test_health_and_ready(broker):
    assert get("/health")[0] == 200
    status, _, body = get("/ready")
    assert (status, body) == (200, "ready\n")
    assert get("/no-such-path")[0] == 404


def test_idle_connections_are_bounded_and_time_out(broker):
    """Connections that send nothing: at most 8 are held (more are closed at accept), each for 5 s
    (the endpoint's read timeout); then scrapes are served again."""
    import socket
    held = [socket.create_connection(("127.0.0.1", METRICS_PORT), timeout=10) for _ in range(8)]
    try:
        extra = socket.create_connection(("127.0.0.1", METRICS_PORT), timeout=10)
        assert extra.recv(1) == b"", "a ninth idle connection was held open"
        extra.close()
        started = time.monotonic()
        for s in held:
            assert s.recv(1) == b"", "an idle connection got bytes"
        closed_after = time.monotonic() - started
        assert closed_after < 8, f"idle connections held for {closed_after:.1f} s"
        assert get("/health")[0] == 200
    finally:
        for s in held:
            s.close()


def test_metrics_move_with_traffic(broker):
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    group = f"metrics-group-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic)
    before = Scrape()
    produce_requests = before.value("kafka_network_requestmetrics_requests_total", request="Produce")
    fetch_requests = before.value("kafka_network_requestmetrics_requests_total", request="Fetch")
    # The topic exists (4 empty partitions) but has seen no traffic.
    assert before.value("kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == 0
    assert before.total("kafka_log_log_logendoffset", topic=topic) == 0
    assert len(before.matching("kafka_log_log_size_bytes", topic=topic)) == PARTITIONS

    payload = produce(broker.bootstrap, topic, COUNT)
    produced = Scrape()
    bytes_in = produced.value("kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
    # Record batches carry the keys and values plus batch and record headers.
    assert bytes_in >= payload, (bytes_in, payload)
    assert produced.value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == COUNT
    assert produced.value("kafka_network_requestmetrics_requests_total", request="Produce") > produce_requests
    assert produced.value("kafka_network_requestmetrics_totaltime_seconds_count", request="Produce") > \
        before.value("kafka_network_requestmetrics_totaltime_seconds_count", request="Produce")
    assert produced.total("kafka_log_log_logendoffset", topic=topic) == COUNT
    # Nothing compresses by default: the logs hold exactly the appended batches.
    assert produced.total("kafka_log_log_size_bytes", topic=topic) == bytes_in
    assert all(s.value > 0 for s in produced.matching("kafka_log_log_size_bytes", topic=topic)), \
        "every partition got records (keyed, 3000 keys over 4 partitions)"
    assert produced.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic) == 0

    consume_and_commit(broker.bootstrap, topic, group, COUNT)
    consumed = Scrape()
    bytes_out = consumed.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
    assert bytes_out >= payload, (bytes_out, payload)
    assert consumed.value("kafka_network_requestmetrics_requests_total", request="Fetch") > fetch_requests
    lags = consumed.matching("kafka_consumergroup_lag", consumergroup=group, topic=topic)
    assert len(lags) == PARTITIONS, lags
    assert all(s.value == 0 for s in lags), lags
    assert consumed.total("kafka_consumergroup_current_offset", consumergroup=group, topic=topic) == COUNT
    for request in ("OffsetCommit", "JoinGroup", "SyncGroup", "FindCoordinator"):
        assert consumed.value("kafka_network_requestmetrics_requests_total", request=request) > 0, request

    # Records produced after the commit are the group's lag, until it commits again.
    produce(broker.bootstrap, topic, MORE, start=COUNT)
    lagging = Scrape()
    assert lagging.total("kafka_consumergroup_lag", consumergroup=group, topic=topic) == MORE
    assert lagging.value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == COUNT + MORE
    consume_and_commit(broker.bootstrap, topic, group, MORE)
    caught_up = Scrape()
    assert caught_up.total("kafka_consumergroup_lag", consumergroup=group, topic=topic) == 0
    assert caught_up.value("kafka_server_brokertopicmetrics_bytesout_total", topic=topic) > bytes_out

    check_histograms(caught_up)
    # Per shard: the partitions add up to the topic's plus __consumer_offsets' 50, all led here.
    partitions = caught_up.matching("kafka_server_replicamanager_partitioncount")
    leaders = caught_up.matching("kafka_server_replicamanager_leadercount")
    assert {s.labels["shard"] for s in partitions} == {"0", "1"}
    assert sum(s.value for s in partitions) == PARTITIONS + 50
    assert sum(s.value for s in leaders) == PARTITIONS + 50
    assert caught_up.value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert caught_up.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert caught_up.total("kafka_server_socketservermetrics_incoming_byte_total") >= payload
    assert caught_up.total("kafka_server_socketservermetrics_outgoing_byte_total") >= payload
    # Busy time moved with the traffic; busy + idle never exceed the time since start (plus a tick).
    busy = caught_up.total("sluice_shard_busy_seconds_total")
    assert busy > before.total("sluice_shard_busy_seconds_total")
    assert caught_up.total("sluice_shard_idle_seconds_total") > 0
    assert caught_up.value("process_resident_memory_bytes") > 0
    assert caught_up.value("process_open_fds") > 0
    assert caught_up.value("process_cpu_seconds_total") >= busy - 0.05
    assert caught_up.value("sluice_ready") == 1
    assert caught_up.value("sluice_metrics_shard_timeouts_total") == 0


def test_dashboard_queries_only_metrics_the_broker_exports(broker):
    """Every metric the Grafana dashboard (deploy/grafana) queries is in a real scrape."""
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["schemaVersion"] >= 30 and dashboard["panels"]
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)]
    assert exprs
    used = {m for e in exprs for m in re.findall(r"\b((?:kafka|sluice|process)_[a-z0-9_]+)", e)}
    scrape = Scrape()
    # A family is exported even before it has a sample (no group has committed yet, say): its
    # # TYPE line is there, and its samples will be named as the dashboard names them.
    exported = {s.name for s in scrape.samples}
    for f in scrape.families.values():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}.get(f.type, [""])
        exported.update(f.name + suffix for suffix in suffixes)
    missing = sorted(m for m in used if m not in exported)
    assert not missing, f"the dashboard queries metrics the broker does not export: {missing}"


def test_ready_is_503_while_the_controller_is_unreachable(tmp_path):
    """A broker whose controller never answers never gets its first metadata image: /ready says
    503 while /health says 200; SIGTERM still stops it cleanly."""
    port, metrics_port, controller_port = harness.free_port(), harness.free_port(), harness.free_port()
    config = tmp_path / "broker.toml"
    config.write_text(
        'node.id = 7\nprocess.roles = "broker"\n'
        f'controller.quorum.voters = "1@127.0.0.1:{controller_port}"\n'
        'controller.listener.names = "CONTROLLER"\n'
        f'listeners = "PLAINTEXT://127.0.0.1:{port}"\n'
        f'log.dirs = "{tmp_path / "data"}"\n'
        f'sluice.metrics.listener = "127.0.0.1:{metrics_port}"\nsluice.shards = 1\n')
    log = open(tmp_path / "broker.log", "wb")
    proc = subprocess.Popen([str(harness.SLUICE_BIN), "--config", str(config)], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        health = None
        while time.time() < deadline:
            try:
                health = get("/health", metrics_port)[0]
                break
            except OSError:
                assert proc.poll() is None, harness.tail(tmp_path / "broker.log")
                time.sleep(0.1)
        assert health == 200, harness.tail(tmp_path / "broker.log")
        for _ in range(5):
            assert get("/ready", metrics_port)[:1] == (503,)
            time.sleep(0.2)
        status, _, body = get("/ready", metrics_port)
        assert (status, body) == (503, "starting\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        log.close()
    assert rc == 0, harness.tail(tmp_path / "broker.log")
