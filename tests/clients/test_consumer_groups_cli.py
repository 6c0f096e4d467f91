"""Kafka 4.x's `kafka-consumer-groups` (from the Kafka tools jars) on consumer groups of the
broker: lists them, describes offsets, lag, members and state, resets offsets (a consumer then
reads again from there), deletes offsets and deletes the group."""

import re

import groups
import harness
import kafka_cli

BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}
TOPIC, GROUP = "cg-cli", "cg-cli-group"


def _cg(broker, tmp_path, *args, check=True):
    return kafka_cli.run("kafka-consumer-groups", "--bootstrap-server", broker.bootstrap, *args,
                         logdir=tmp_path, check=check)


def _offsets(describe_out: str) -> dict:
    """partition -> (current offset, log end offset, lag) from `--describe --offsets`."""
    out = {}
    for line in describe_out.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == GROUP and cols[1] == TOPIC:
            cur = -1 if cols[3] == "-" else int(cols[3])
            lag = -1 if cols[5] == "-" else int(cols[5])
            out[int(cols[2])] = (cur, int(cols[4]), lag)
    return out


def test_list_describe_reset_delete(broker, java_tool, tmp_path):
    harness.java_create_topic(broker.bootstrap, TOPIC, 3, logdir=tmp_path)
    r = java_tool(["produce", "--bootstrap", broker.bootstrap, "--topic", TOPIC, "--count", "300",
                   "--key-prefix", "a", "--acks", "all", "--spread", "3"], logdir=tmp_path)
    assert "acked=300 failed=0" in r.stdout, r.stdout
    keys = {f"a{i}" for i in range(300)}
    c = groups.java_consumer("cli", tmp_path, broker.bootstrap, TOPIC, GROUP).start()
    try:
        groups.wait_until(lambda: keys <= groups.consumed_keys([c]), 60, "every message", [c])
        listed = _cg(broker, tmp_path, "--list").stdout.split()
        assert GROUP in listed, listed
        described = _cg(broker, tmp_path, "--describe", "--group", GROUP).stdout
        offsets = _offsets(described)
        assert set(offsets) == {0, 1, 2}, described
        assert all(cur == end and lag == 0 for cur, end, lag in offsets.values()), described
        assert sum(end for _, end, _ in offsets.values()) == 300, described
        members = _cg(broker, tmp_path, "--describe", "--group", GROUP, "--members").stdout
        assert re.search(rf"^{GROUP}\s+\S+\s+/127\.0\.0\.1\s+\S+\s+3\s*$", members, re.M), members
        state = _cg(broker, tmp_path, "--describe", "--group", GROUP, "--state").stdout
        assert "Stable" in state, state
        # Resetting needs an inactive group: Kafka refuses while members are in it.
        busy = _cg(broker, tmp_path, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                   "--execute", check=False)
        assert "inactive" in (busy.stdout + busy.stderr), busy.stdout + busy.stderr
    finally:
        assert c.stop() == 0

    state = _cg(broker, tmp_path, "--describe", "--group", GROUP, "--state").stdout
    assert "Empty" in state, state
    reset = _cg(broker, tmp_path, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                "--execute").stdout
    assert len(re.findall(rf"^{GROUP}\s+{TOPIC}\s+\d\s+0\s*$", reset, re.M)) == 3, reset
    _cg(broker, tmp_path, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1", "--to-offset", "40",
        "--execute")
    offsets = _offsets(_cg(broker, tmp_path, "--describe", "--group", GROUP).stdout)
    assert offsets[0][0] == 0 and offsets[1][0] == 40 and offsets[2][0] == 0, offsets
    assert offsets[1][2] == offsets[1][1] - 40, "lag = log end - committed"

    again = groups.java_consumer("cli-again", tmp_path, broker.bootstrap, TOPIC, GROUP).start()
    try:
        groups.wait_until(lambda: len(again.events().records) >= 260, 60, "re-reading from the reset", [again])
    finally:
        assert again.stop() == 0
    first = {}
    for p, o, _ in again.events().records:
        first[p] = min(first.get(p, o), o)
    assert first == {0: 0, 1: 40, 2: 0}, f"the consumer starts where the offsets were reset to: {first}"

    deleted = _cg(broker, tmp_path, "--delete-offsets", "--group", GROUP, "--topic", TOPIC).stdout
    assert "successful" in deleted.lower() or "Successful" in deleted, deleted
    offsets = _offsets(_cg(broker, tmp_path, "--describe", "--group", GROUP, check=False).stdout)
    assert all(cur == -1 for cur, _, _ in offsets.values()), offsets
    gone = _cg(broker, tmp_path, "--delete", "--group", GROUP).stdout
    assert "successful" in gone, gone
    assert GROUP not in _cg(broker, tmp_path, "--list").stdout.split()


def test_clients_cannot_write_to_the_offsets_topic(broker, java_tool, kcat, tmp_path):
    """__consumer_offsets belongs to the group coordinator: a client's produce is refused
    (INVALID_TOPIC_EXCEPTION, as Kafka answers), while describing it works and shows 50
    partitions, compacted."""
    import subprocess
    # FindCoordinator (behind --list) creates the topic if no group made it yet.
    kafka_cli.run("kafka-consumer-groups", "--bootstrap-server", broker.bootstrap, "--list", logdir=tmp_path)
    r = subprocess.run([kcat, "-b", broker.bootstrap, "-P", "-t", "__consumer_offsets", "-p", "0"],
                       input="x\n", capture_output=True, text=True, timeout=60)
    assert "Invalid topic" in r.stderr or "INVALID_TOPIC" in r.stderr, (r.returncode, r.stderr[-2000:])
    d = kafka_cli.run("kafka-topics", "--bootstrap-server", broker.bootstrap, "--describe", "--topic",
                      "__consumer_offsets", logdir=tmp_path).stdout
    assert "PartitionCount: 50" in d and "cleanup.policy=compact" in d, d[:2000]
