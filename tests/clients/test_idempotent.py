"""Idempotent producer: the Java producer with Kafka's default settings (enable.idempotence left
to its default, i.e. on; acks=all) sends 1,000,000 small messages through a proxy that cuts its
connections mid-flight every few hundred ms, so requests are lost in both directions and the
producer must retry. Read back with assign+seek (check.crcs): every message exactly once, in
produce order per partition, each at its acknowledged offset — no duplicate, no gap."""

import pytest

from chaos_proxy import ChaosProxy
from harness import free_port, java_create_topic

COUNT = 1_000_000
PARTITIONS = 3
PROXY_PORT = free_port()

# Clients learn the broker's address from Metadata: advertise the proxy, so every connection
# (bootstrap and producer) goes through it.
BROKER_SETTINGS = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{PROXY_PORT}"}

pytestmark = pytest.mark.slow


def test_idempotent_producer_survives_cut_connections(broker, java_tool, tmp_path):
    topic = "idempotent-chaos"
    bootstrap = f"127.0.0.1:{PROXY_PORT}"
    with ChaosProxy(PROXY_PORT, broker.port, min_interval=0.1, max_interval=0.4, seed=20261129) as proxy:
        java_create_topic(bootstrap, topic, PARTITIONS, logdir=tmp_path)
        acked = tmp_path / "acked.txt"
        proxy.chaos = True
        r = java_tool(["produce", "--bootstrap", bootstrap, "--topic", topic, "--count", str(COUNT),
                       "--idempotence", "default", "--value-size", "8", "--acked-file", str(acked)],
                      logdir=tmp_path, timeout=300)
        proxy.chaos = False
        cuts = proxy.cuts
        assert f"acked={COUNT} failed=0" in r.stdout, f"producer did not get {COUNT} acks: {r.stdout}"
        assert cuts >= 5, f"the proxy cut only {cuts} connections; the test did not force retries"
        lines = acked.read_text().splitlines()
        assert len(lines) == COUNT, f"acked file has {len(lines)} lines, expected {COUNT}"

        r = java_tool(["consume", "--bootstrap", bootstrap, "--topic", topic, "--expect", str(COUNT),
                       "--acked-file", str(acked)], logdir=tmp_path, timeout=300)
        assert r.stdout.rstrip().endswith("OK"), f"consumer verification failed:\n{r.stdout[-4000:]}"
        assert f"records={COUNT} acked_checked={COUNT}" in r.stdout, r.stdout
    print(f"connections cut: {cuts}")
