"""Fixtures of the Sluice end-to-end client suite.

Each test module gets its own broker (`broker` fixture, module scope): a temp config with a
free port and a temp data dir, started from $SLUICE_BIN (default <repo>/target/release/sluice),
stopped with SIGTERM at the end, asserting a clean exit.  With SLUICE_TARGET=kafka the same
tests run against a real Apache Kafka 4.x (see kafka_broker.py).

A module can set BROKER_SETTINGS = {...} (Kafka setting names) to change the broker config.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402


def pytest_configure(config):
    # kafka-python logs every reconnect attempt at ERROR; keep failure reports readable.
    if not os.environ.get("SLUICE_TEST_VERBOSE"):
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
    config.addinivalue_line("markers", "slow: long-running test (crash rounds, 100k-message runs)")


def pytest_report_header(config):
    return f"sluice client suite: target={harness.TARGET} sluice_bin={harness.SLUICE_BIN}"


@pytest.fixture(scope="module")
def broker(request, tmp_path_factory):
    settings = getattr(request.module, "BROKER_SETTINGS", {})
    workdir = tmp_path_factory.mktemp(request.module.__name__.split(".")[-1])
    b = harness.Broker(workdir, settings)
    b.start()
    yield b
    running = b.running()
    rc = b.stop()
    assert running, f"broker died during the tests (exit code {rc}); log:\n{harness.tail(b.log_path)}"
    assert rc in b.clean_exit_codes(), (
        f"broker exited with code {rc} after SIGTERM (expected {b.clean_exit_codes()}); "
        f"log:\n{harness.tail(b.log_path)}")


@pytest.fixture(scope="session")
def java_tool():
    """Builds tests/clients/java once (mvn, offline first) and returns harness.java."""
    harness.build_java_tool()
    return harness.java


@pytest.fixture(scope="session")
def kcat():
    return harness.kcat_bin()


@pytest.fixture
def logdir(tmp_path):
    return tmp_path


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, attach the tail of the module broker's log (and say if it died)."""
    outcome = yield
    rep = outcome.get_result()
    if rep.failed and "broker" in getattr(item, "fixturenames", ()):
        b = item.funcargs.get("broker") if hasattr(item, "funcargs") else None
        if isinstance(b, harness.Broker):
            state = "running" if b.running() else f"NOT RUNNING (exit code {b._popen().poll()})"
            rep.sections.append((f"broker log ({b.target} {state}, {b.log_path})", harness.tail(b.log_path, 30)))
            if "group" in item.nodeid:
                rep.sections.append(("the broker's group coordinator lines",
                                     harness.tail(b.log_path, 80, containing="group=")))
