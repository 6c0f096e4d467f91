"""Crash safety: while a Java producer (acks=all, enable.idempotence=false) is producing and
recording every acknowledged (partition, offset, key), the broker is killed with SIGKILL,
restarted on the same data dir, and everything is read back (Java consumer, check.crcs=true):
every acknowledged message is readable at the offset it was acknowledged at, offsets are
contiguous and no batch is corrupt.  Three rounds, each re-verifying all earlier rounds."""

import subprocess
import time

import pytest

from harness import JAVA_JAR, JAVA_LIB, java_create_topic, tail

ROUNDS = 3
COUNT = 200_000        # per round
RATE = 40_000          # msgs/s, so the kill lands mid-run
KILL_AFTER = 20_000    # acknowledged records before the kill
TOPIC = "crash"
PARTITIONS = 6

pytestmark = pytest.mark.slow

BROKER_SETTINGS = {"num.partitions": PARTITIONS}


def _count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def test_kill9_loses_no_acknowledged_message(broker, java_tool, tmp_path):
    java_create_topic(broker.bootstrap, TOPIC, PARTITIONS, logdir=tmp_path)
    all_acked = tmp_path / "all-acked.txt"
    all_acked.write_text("")
    total_acked = 0
    for rnd in range(ROUNDS):
        acked = tmp_path / f"acked-{rnd}.txt"
        out = open(tmp_path / f"producer-{rnd}.log", "w")
        cmd = ["java", "-Xmx768m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
               "-cp", f"{JAVA_JAR}:{JAVA_LIB}/*", "sluice.clients.Main", "produce",
               "--bootstrap", broker.bootstrap, "--topic", TOPIC, "--count", str(COUNT),
               "--key-prefix", f"r{rnd}-", "--acks", "all", "--compression", ["none", "lz4", "zstd"][rnd % 3],
               "--value-size", "100", "--max-rate", str(RATE), "--acked-file", str(acked),
               "--allow-failures", "true", "--delivery-timeout-ms", "120000"]
        producer = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 120
            while _count_lines(acked) < KILL_AFTER:
                assert producer.poll() is None, \
                    f"round {rnd}: producer exited early:\n{tail(tmp_path / f'producer-{rnd}.log')}"
                assert time.time() < deadline, \
                    f"round {rnd}: fewer than {KILL_AFTER} acks after 120s:\n{tail(tmp_path / f'producer-{rnd}.log')}"
                time.sleep(0.05)
            acked_before_kill = _count_lines(acked)
            broker.kill9()
            assert producer.poll() is None, f"round {rnd}: producer finished before the kill; raise COUNT"
            time.sleep(1.0)
            broker.start()
            rc = producer.wait(timeout=300)
        finally:
            if producer.poll() is None:
                producer.kill()
            out.close()
        report = (tmp_path / f"producer-{rnd}.log").read_text(errors="replace")
        assert rc == 0, f"round {rnd}: producer exited {rc}:\n{report[-3000:]}"
        n = _count_lines(acked)
        assert n >= acked_before_kill, f"round {rnd}: acked file shrank"
        total_acked += n
        with open(all_acked, "a") as f:
            f.write(acked.read_text())
        r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", TOPIC, "--mode", "acked",
                       "--expect", str(total_acked), "--acked-file", str(all_acked)], logdir=tmp_path, timeout=600)
        assert r.stdout.rstrip().endswith("OK"), \
            f"round {rnd}: after kill -9 + restart, acknowledged data is missing or corrupt:\n{r.stdout}"
        assert f"acked_checked={total_acked}" in r.stdout, r.stdout
        print(f"round {rnd}: acked before kill {acked_before_kill}, acked total {n}/{COUNT}; {r.stdout.splitlines()[0]}")
