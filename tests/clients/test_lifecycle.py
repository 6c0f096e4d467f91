"""Broker lifecycle: `sluice --help`, `--override key=value` on the command line, graceful
shutdown on SIGINT/SIGTERM (exit 0), and data surviving a graceful restart with offsets
continuing where they stopped."""

import signal
import subprocess

import pytest

import harness
from harness import Broker, java_create_topic, verify_exactly_once
from test_python import consume_all, produce

sluice_only = pytest.mark.skipif(harness.TARGET != "sluice", reason="Sluice command line only")


@sluice_only
def test_help():
    r = subprocess.run([str(harness.SLUICE_BIN), "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"sluice --help exited {r.returncode}: {r.stdout}{r.stderr}"
    out = r.stdout + r.stderr
    assert "--config" in out and "--override" in out, f"--help must document --config and --override:\n{out}"


@sluice_only
def test_override_and_sigint(tmp_path, java_tool):
    port = harness.free_port()
    b = Broker(tmp_path / "ovr", {"num.partitions": 1},
               extra_args=["--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                           "--override", "num.partitions=5",
                           "--override", f"log.dirs={tmp_path / 'ovr' / 'data-override'}"])
    configured_port = b.port
    b.port = port  # the override wins over the config file
    try:
        b.start()
        assert not harness.port_open(configured_port), "broker also listens on the port of the config file"
        r = java_tool(["admin", "autocreate", "--bootstrap", b.bootstrap, "--topic", "ovr"], logdir=tmp_path,
                      quick=True)
        assert "partitions=5" in r.stdout, f"--override num.partitions=5 not applied:\n{r.stdout}"
        produce(b.bootstrap, "ovr", 100)
        assert (tmp_path / "ovr" / "data-override").is_dir() and any((tmp_path / "ovr" / "data-override").iterdir()), \
            "--override log.dirs not applied: nothing written there"
    finally:
        rc = b.stop(sig=signal.SIGINT)
    assert rc == 0, f"sluice exited {rc} after SIGINT; log:\n{harness.tail(b.log_path)}"


def test_graceful_restart_keeps_data(tmp_path, java_tool):
    b = Broker(tmp_path / "restart")
    b.start()
    try:
        java_create_topic(b.bootstrap, "persist", 3, logdir=tmp_path)
        produce(b.bootstrap, "persist", 10_000, compression="gzip")
        rc = b.stop()
        assert rc in b.clean_exit_codes(), f"exit code {rc} after SIGTERM; log:\n{harness.tail(b.log_path)}"
        b.start()
        verify_exactly_once(consume_all(b.bootstrap, "persist"), 10_000, "k", partitions=3)
        # offsets continue after the restart: produce the next 10k (same keys' partitions), read 20k
        producer_keys = produce(b.bootstrap, "persist", 10_000, prefix="n")
        assert min(o for _, o in producer_keys.values()) > 0, "offsets restarted from 0 after a restart"
        recs = consume_all(b.bootstrap, "persist")
        assert len(recs) == 20_000, f"read {len(recs)} records after restart + 10k more, expected 20000"
        by_part = {}
        for p, o, k, v in recs:
            by_part.setdefault(p, []).append(o)
        for p, offs in by_part.items():
            assert offs == list(range(len(offs))), f"partition {p}: offsets not contiguous across the restart"
        assert {k for _, _, k, _ in recs} == {f"k{i}" for i in range(10_000)} | {f"n{i}" for i in range(10_000)}
    finally:
        rc = b.stop()
    assert rc in b.clean_exit_codes(), f"exit code {rc} after SIGTERM; log:\n{harness.tail(b.log_path)}"
