"""The replication fault test, short (CI): 10 rounds of 2-4 s faults on the 3+3 cluster (config/cluster
for Sluice, the same topology of Apache Kafka 4.4 with SLUICE_TARGET=kafka), RF=3,
min.insync.replicas=2, then the checker. See replication_faults.py; the long run is its CLI.

SLUICE_FAULTS_SEED replays a schedule; SLUICE_FAULTS_ROUNDS changes the number of rounds.
Skipped when not root (it needs cgroups, iptables and a network namespace) or when the cluster
refuses RF=3 (Sluice before replication)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import harness

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_replication_faults(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: cgroups, iptables, a network namespace")
    seed = int(os.environ.get("SLUICE_FAULTS_SEED") or random.SystemRandom().randrange(1 << 31))
    rounds = int(os.environ.get("SLUICE_FAULTS_ROUNDS") or 10)
    out = tmp_path / "faults"
    cmd = [sys.executable, str(HERE / "replication_faults.py"), "--rounds", str(rounds), "--seed", str(seed),
           "--quick", "--target", harness.TARGET, "--out", str(out), "--bin", str(harness.SLUICE_BIN)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    print(r.stdout)
    results = out / "results.json"
    assert results.exists(), f"no results (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    res = json.loads(results.read_text())
    if r.returncode == 4:
        pytest.skip(res.get("skipped", "skipped"))
    report = (out / "results.md").read_text() if (out / "results.md").exists() else ""
    assert r.returncode == 0 and res["status"] == "passed", (
        f"seed {seed}; replay: {res.get('replay')}\n{report[-6000:]}\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")
    check = res["check"]
    assert res["rounds_done"] == rounds
    assert min(check["acked"].values()) > 0 and check["consumed"] > 0
