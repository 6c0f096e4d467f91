"""Go clients: franz-go v1.22 (kgo + kadm) and IBM Sarama v1.61, with their default settings.

Each scenario (tests/clients/go, one CLI: `sluice-go-clients franz|sarama [--idempotent]`) creates a
6-partition topic with the client's admin API, produces 20,000 keyed messages (franz-go: default
idempotent acks=all; Sarama: default acks=1, and once with Idempotent, acks=all, MaxOpenRequests=1,
Version 3.0.0), checks the end offsets, reads every partition back by direct assignment (no groups)
and verifies every message exactly once, in produce order per partition, at its acknowledged offset;
then describe cluster, list topics, describe the topic's configs, and delete the topic.

Consumer groups (`sluice-go-clients franz-group|sarama-group`, go/group.go): franz-go's group consumer
(default cooperative-sticky balancer; DisableAutoCommit + BlockRebalanceOnPoll, committing each poll's
records with CommitRecords) and Sarama's ConsumerGroup (default range strategy; AutoCommit off,
MarkMessage + Commit after each batch; Offsets.Initial=OffsetOldest) run groups.graceful_leave_scenario:
three members split 12 partitions 4/4/4, every message consumed once, one member leaves (LeaveGroup)
while messages are produced and the others take its partitions with no message consumed twice, and a
later member resumes at the committed offsets.

The program is built once with `go build` (skipped when the binary is newer than the sources);
the module's dependencies come from the Go module proxy. Without `go` and without a built binary
the tests are skipped."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import groups
import harness

BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}
GO_DIR = Path(__file__).resolve().parent / "go"
GO_BIN = harness.GO_TOOL_OVERRIDE or GO_DIR / "bin" / "sluice-go-clients"  # SLUICE_GO_TOOL (tests/newest)
COUNT = 20_000
PARTITIONS = 6


def go_tool_built() -> bool:
    if not GO_BIN.exists():
        return False
    mtime = GO_BIN.stat().st_mtime
    sources = [GO_DIR / "go.mod", GO_DIR / "go.sum", *GO_DIR.glob("*.go")]
    return all(s.stat().st_mtime <= mtime for s in sources)


def build_go_tool() -> bool:
    """Builds tests/clients/go into go/bin (if stale). False when `go` is not installed.
    With SLUICE_GO_TOOL set, that binary is used as it is (an error if it does not exist)."""
    if harness.GO_TOOL_OVERRIDE:
        if not GO_BIN.is_file():
            raise RuntimeError(f"SLUICE_GO_TOOL={GO_BIN} does not exist")
        return True
    if go_tool_built():
        return True
    go = shutil.which("go")
    if not go:
        return False
    r = subprocess.run([go, "build", "-buildvcs=false", "-o", str(GO_BIN), "."], cwd=GO_DIR,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not GO_BIN.exists():
        raise RuntimeError(f"building the Go client tool failed (rc={r.returncode}):\n{r.stdout[-4000:]}\n"
                           f"{r.stderr[-4000:]}")
    GO_BIN.touch()  # `go build` leaves an up-to-date binary untouched; mark it fresh for go_tool_built
    return True


@pytest.fixture(scope="module")
def go_tool():
    if not build_go_tool():
        pytest.skip("`go` is not installed and tests/clients/go is not built")
    return GO_BIN


def run_go(go_tool, args, logdir: Path, timeout: float = 90) -> str:
    r = subprocess.run([str(go_tool), *args], capture_output=True, text=True, timeout=timeout)
    with open(Path(logdir) / "go-client.log", "a") as f:
        f.write(f"$ {' '.join(args)}\n--- rc={r.returncode} stdout:\n{r.stdout}\n--- stderr:\n{r.stderr}\n")
    assert r.returncode == 0 and r.stdout.rstrip().endswith("OK"), (
        f"go client `{' '.join(args)}` exited {r.returncode}:\n{r.stdout[-6000:]}\n--- stderr (tail):\n"
        f"{r.stderr[-3000:]}")
    return r.stdout


def check_report(out: str, topic: str) -> None:
    assert "describe-cluster " in out and "controller=1 brokers=[1]" in out, out
    assert f"created topic={topic} partitions={PARTITIONS}" in out, out
    assert f"produced acked={COUNT} failed=0" in out, out
    assert f"end-offsets total={COUNT}" in out, out
    assert f"consumed records={COUNT} " in out, out
    consumed = next(l for l in out.splitlines() if l.startswith("consumed "))
    assert consumed.count(":") == PARTITIONS, f"keyed messages did not land in all {PARTITIONS} partitions: {consumed}"
    assert f"verified exactly-once order=per-partition acked_checked={COUNT}" in out, out
    assert f"list-topics has={topic} partitions={PARTITIONS}" in out, out
    assert "describe-configs entries=" in out, out
    assert f"deleted topic={topic}" in out, out


def test_franz_go(broker, go_tool, tmp_path):
    """franz-go defaults: idempotent producer, acks=all; kadm admin; ConsumePartitions."""
    topic = "go-franz"
    out = run_go(go_tool, ["franz", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(COUNT),
                           "--partitions", str(PARTITIONS), "--timeout", "30s"], tmp_path)
    check_report(out, topic)
    assert "metadata cluster=" in out and "controller=1" in out, out
    assert "cleanup.policy=delete" in out, f"describe configs must show cleanup.policy=delete:\n{out}"


@pytest.mark.parametrize("idempotent", [False, True], ids=["acks1", "idempotent"])
def test_sarama(broker, go_tool, tmp_path, idempotent):
    """Sarama defaults (acks=1, hash partitioner), and Idempotent + acks=all + MaxOpenRequests=1 + V3_0_0_0."""
    topic = "go-sarama-idempotent" if idempotent else "go-sarama"
    args = ["sarama", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(COUNT),
            "--partitions", str(PARTITIONS), "--timeout", "30s"]
    if idempotent:
        args.append("--idempotent")
    out = run_go(go_tool, args, tmp_path)
    if idempotent:
        assert "idempotent=true acks=-1" in out, out
    else:
        assert "idempotent=false acks=1" in out, out
    check_report(out, topic)


@pytest.mark.parametrize("client", ["franz", "sarama"])
def test_go_admin_lists_topics_and_describes_the_cluster(broker, go_tool, tmp_path, client):
    """franz-go kadm (ListTopics, BrokerMetadata, Metadata, and DescribeCluster as a raw kmsg request)
    and Sarama's ClusterAdmin (ListTopics, DescribeCluster, DescribeTopics, plus the controller's
    Metadata for the cluster id): the created topics with their partition counts, the broker's
    node id/host/port, the controller, and the cluster id of every call equal to DescribeCluster's."""
    topics = {f"go-{client}-view-a": 1, f"go-{client}-view-b": 3}
    out = run_go(go_tool, [f"{client}-admin", "--bootstrap", broker.bootstrap, "--topics",
                           ",".join(f"{t}:{n}" for t, n in topics.items())], tmp_path)
    view = json.loads(next(l for l in out.splitlines() if l.startswith("VIEW "))[len("VIEW "):])
    harness.check_cluster_view(view, broker, topics)
    print(f"{client}: {view['cluster_ids']} controller={view['controller']} brokers={view['brokers']}")


@pytest.mark.parametrize("client", ["franz", "sarama"])
def test_go_consumer_group(broker, go_tool, java_tool, tmp_path, client):
    """Three members over 12 partitions; one leaves gracefully; a later member resumes (see groups.py)."""
    topic = f"go-group-{client}"
    timings = groups.graceful_leave_scenario(
        broker, tmp_path,
        lambda name: groups.go_consumer(name, tmp_path, broker.bootstrap, topic, f"g-{topic}", client),
        topic, label=client)
    print(f"{client}: {timings}")
