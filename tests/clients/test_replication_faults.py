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
    # Fetched here, outside the run's network namespace (it has no way out to Maven Central).
    harness.build_java_tool()
    if harness.TARGET == "kafka":
        import kafka_broker
        kafka_broker.ensure_kafka_libs()
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
    assert not res.get("firewall"), f"the network partition fault could not run: {res['firewall']}"
    check = res["check"]
    assert res["rounds_done"] == rounds
    assert min(check["acked"].values()) > 0 and check["consumed"] > 0


# ---------------------------------------------------------------------------- the checker itself
# Made-up final states, each with one fault the checker must report (and a clean one it must pass),
# in Kafka's segment layout: `<dir>/<topic>-<p>/00000000000000000000.log` of v2 record batches.

import struct  # noqa: E402
import zlib  # noqa: E402

import replication_faults as rf  # noqa: E402


def _zz(n: int) -> bytes:
    """Zig-zag varint, as record fields are written."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _batch(base: int, records: list[tuple[bytes, bytes]], leader_epoch: int = 0) -> bytes:
    body = b""
    for i, (k, v) in enumerate(records):
        rec = b"\x00" + _zz(0) + _zz(i) + _zz(len(k)) + k + _zz(len(v)) + v + _zz(0)
        body += _zz(len(rec)) + rec
    after = (struct.pack(">ib", leader_epoch, 2) + struct.pack(">I", 0)
             + struct.pack(">hiqqqhii", 0, len(records) - 1, 0, 0, -1, -1, -1, len(records)) + body)
    return struct.pack(">qi", base, len(after)) + after


def _record(prefix: str, seq: int) -> tuple[str, bytes]:
    import harness as h
    return h.make_key(prefix, seq), h.make_value(prefix, seq, rf.VALUE_PAD).encode()


def _state(tmp_path, brokers=("broker-1", "broker-2", "broker-3")):
    """Two partitions of three 2-record batches each, on every broker; all acked, all seen."""
    final, marks, dirs, acked, seen, segs = {}, {}, {}, [], [], {}
    seq = 0
    for p in range(2):
        final[p] = {}
        blob = b""
        for b in range(3):
            recs = []
            for i in range(2):
                key, value = _record("j", seq)
                seq += 1
                off = b * 2 + i
                final[p][off] = (key, value)
                recs.append((key.encode(), value))
                acked.append(("java", [str(p), str(off), key]))
                seen.append([str(p), str(off), key, str(zlib.crc32(value))])
            blob += _batch(b * 2, recs, leader_epoch=b)
        segs[p] = blob
        marks[p] = (0, 6)
        dirs[p] = {}
        for name in brokers:
            d = tmp_path / name / f"faults-{p}"
            d.mkdir(parents=True)
            (d / "00000000000000000000.log").write_bytes(blob)
            dirs[p][name] = d
    return final, marks, dirs, acked, seen, segs


def _failures(state) -> list[str]:
    final, marks, dirs, acked, seen, _ = state
    return rf.judge(final, marks, dirs, acked, seen)["failures"]


def test_checker_passes_a_clean_state(tmp_path):
    st = _state(tmp_path)
    res = rf.judge(*st[:5])
    assert res["failures"] == []
    assert res["records"] == 12 and res["consumed"] == 12 and res["acked"]["java"] == 12
    assert all(v["batches"] == 3 and len(v["replicas"]) == 3 for v in res["replicas"].values())


def test_checker_finds_an_acked_record_missing_or_moved(tmp_path):
    st = _state(tmp_path)
    st[3][4][1][1] = "5"  # acknowledged at offset 5, where another record is
    assert any(f.startswith("acked:") for f in _failures(st))
    st = _state(tmp_path / "b")
    del st[0][1][3]  # the read-back lacks an acknowledged record
    assert any(f.startswith("acked:") for f in _failures(st))


def test_checker_finds_a_record_acked_without_offset_by_its_key(tmp_path):
    # librdkafka reports some idempotent retries as delivered with no offset (None).
    st = _state(tmp_path)
    st[3][4][1][1] = "None"
    res = rf.judge(*st[:5])
    assert res["failures"] == [] and res["acked_without_offset"] == 1
    st = _state(tmp_path / "b")
    st[3][4][1][1] = "None"
    del st[0][0][4]  # ... and not in the log
    assert any(f.startswith("acked:") for f in _failures(st))


def test_checker_finds_a_duplicate(tmp_path):
    st = _state(tmp_path)
    st[0][1][6] = st[0][0][0]
    assert any(f.startswith("exactly-once:") for f in _failures(st))


def test_checker_finds_a_consumed_record_that_vanished(tmp_path):
    st = _state(tmp_path)
    st[4].append(["1", "7", "j99", "1"])  # seen past today's end
    assert any(f.startswith("consumed:") for f in _failures(st))


def test_checker_finds_diverged_replicas(tmp_path):
    st = _state(tmp_path)
    seg = st[2][1]["broker-2"] / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[12] ^= 1  # the first batch's partition leader epoch
    seg.write_bytes(bytes(data))
    fails = _failures(st)
    assert any("differ below the high watermark" in f for f in fails), fails


def test_checker_finds_a_replica_short_of_the_high_watermark(tmp_path):
    st = _state(tmp_path)
    seg = st[2][0]["broker-3"] / "00000000000000000000.log"
    blob = st[5][0]
    batches, _ = rf.read_batches(st[2][0]["broker-1"])
    seg.write_bytes(b"".join(b[2] for b in batches[:2]))
    assert blob.startswith(seg.read_bytes())
    fails = _failures(st)
    assert any("broker-3" in f and "end at 4" in f for f in fails), fails


def test_checker_finds_a_batch_straddling_the_high_watermark(tmp_path):
    st = _state(tmp_path)
    st[1][0] = (0, 5)
    del st[0][0][5]
    st[3][:] = [a for a in st[3] if not (a[1][0] == "0" and a[1][1] == "5")]
    st[4][:] = [s for s in st[4] if not (s[0] == "0" and s[1] == "5")]
    fails = _failures(st)
    assert any("straddles" in f for f in fails), fails
