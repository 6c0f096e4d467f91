"""Consumer groups with librdkafka (confluent-kafka, kcat -G) and kafka-python, the same way as
the Java suite: three members over 12 partitions get 4 each; one is killed with -9 and the others
take its partitions once its session ends; no partition is owned twice at once; every message is
consumed, none twice except those in flight at the kill."""

import subprocess
import time

import pytest

import groups
import harness

SESSION_TIMEOUT_MS = 6000
BROKER_SETTINGS = {"group.initial.rebalance.delay.ms": 0}


def _kill_one_of_three(broker, tmp_path, client, topic):
    group = f"g-{topic}"
    harness.java_create_topic(broker.bootstrap, topic, 12, logdir=tmp_path)
    groups.kill_one_of_three_scenario(
        broker,
        lambda name: groups.python_consumer(name, tmp_path, broker.bootstrap, topic, group, client,
                                            session_timeout_ms=SESSION_TIMEOUT_MS),
        topic, count=20000, rate=4000, session_timeout_ms=SESSION_TIMEOUT_MS, label=client)


def test_confluent_kafka_group(broker, java_tool, tmp_path):
    _kill_one_of_three(broker, tmp_path, "confluent", "grp-confluent")


def test_kafka_python_group(broker, java_tool, tmp_path):
    _kill_one_of_three(broker, tmp_path, "kafka-python", "grp-kpy")


def test_kcat_balanced_consumer_group(broker, java_tool, kcat, tmp_path):
    """Two `kcat -G` members split the partitions; together they read every message once; a later
    member of the same group starts from the committed offsets (nothing is read again)."""
    topic, group = "grp-kcat", "g-kcat"
    harness.java_create_topic(broker.bootstrap, topic, 6, logdir=tmp_path)
    outs = [open(tmp_path / f"kcat{i}.out", "w") for i in range(2)]
    errs = [open(tmp_path / f"kcat{i}.err", "w") for i in range(2)]
    cmd = [kcat, "-b", broker.bootstrap, "-G", group, "-o", "beginning", "-f", "%p %o %k\\n", "-q", "-u",
           "-X", "auto.commit.interval.ms=200", "-X", "session.timeout.ms=6000", topic]
    procs = [subprocess.Popen(cmd, stdout=outs[i], stderr=errs[i]) for i in range(2)]
    try:
        time.sleep(8)  # both join; with an initial rebalance delay of 0 they settle in a few rounds
        r = harness.java(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "6000",
                          "--key-prefix", "c", "--acks", "all"], logdir=tmp_path)
        assert "acked=6000 failed=0" in r.stdout, r.stdout

        def lines():
            return [[ln.split() for ln in (tmp_path / f"kcat{i}.out").read_text().splitlines() if ln.strip()]
                    for i in range(2)]
        deadline = time.time() + 60
        while time.time() < deadline and sum(len(x) for x in lines()) < 6000:
            time.sleep(0.5)
        time.sleep(2)  # let auto-commit run
        got = lines()
        keys = [k for member in got for _, _, k in member]
        assert len(keys) == 6000 and set(keys) == {f"c{i}" for i in range(6000)}, \
            f"{len(keys)} records, {len(set(keys))} distinct"
        parts = [{int(p) for p, _, _ in member} for member in got]
        assert all(parts) and not (parts[0] & parts[1]), f"the members split the partitions: {parts}"
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
    # No -o here: kcat -G -o assigns that offset explicitly, overriding the committed ones.
    later = subprocess.run([kcat, "-b", broker.bootstrap, "-G", group, "-f", "%k\\n", "-q", "-e", topic],
                           capture_output=True, text=True, timeout=60)
    assert later.stdout.strip() == "", f"a new member resumes at the committed offsets: {later.stdout[:200]}"


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_python_clients_resume_after_restart(broker, java_tool, tmp_path, client):
    topic, group = f"grp-restart-{client}", f"g-restart-{client}"
    harness.java_create_topic(broker.bootstrap, topic, 3, logdir=tmp_path)
    r = harness.java(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "900",
                      "--key-prefix", "a", "--acks", "all"], logdir=tmp_path)
    assert "acked=900 failed=0" in r.stdout
    first = groups.python_consumer(f"{client}-first", tmp_path, broker.bootstrap, topic, group, client).start()
    keys_a = {f"a{i}" for i in range(900)}
    groups.wait_until(lambda: keys_a <= groups.consumed_keys([first]), 60, "the first 900", [first])
    assert first.stop() == 0
    assert broker.stop() in broker.clean_exit_codes()
    broker.start()
    r = harness.java(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "300",
                      "--key-prefix", "b", "--acks", "all"], logdir=tmp_path)
    assert "acked=300 failed=0" in r.stdout
    second = groups.python_consumer(f"{client}-second", tmp_path, broker.bootstrap, topic, group, client).start()
    keys_b = {f"b{i}" for i in range(300)}
    groups.wait_until(lambda: keys_b <= groups.consumed_keys([second]), 60, "the next 300", [second])
    time.sleep(1)
    assert second.stop() == 0
    assert not (groups.consumed_keys([second]) & keys_a), "resumed from the committed offsets"
