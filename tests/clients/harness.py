"""Shared helpers of the Sluice client test suite: broker launchers, the Java client tool,
kcat, and the record verifier.

Message format shared by every client in the suite:
    key   = f"{prefix}{seq}"
    value = f"{key}|{seq}|" + "x" * pad
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
JAVA_DIR = HERE / "java"
JAVA_JAR = JAVA_DIR / "target" / "sluice-java-client-tool.jar"
JAVA_LIB = JAVA_DIR / "target" / "lib"

TARGET = os.environ.get("SLUICE_TARGET", "sluice").lower()
SLUICE_BIN = Path(os.environ.get("SLUICE_BIN", str(REPO / "target" / "release" / "sluice")))
# The kafkajs tool's directory (kafkajs_tool.js + node_modules) and the Go client tool's binary. Unset:
# tests/clients/node and tests/clients/go/bin/sluice-go-clients (built from go/ when stale). tests/newest
# sets them to copies built with the newest kafkajs, franz-go and Sarama; a set SLUICE_GO_TOOL is never rebuilt.
NODE_DIR = Path(os.environ.get("SLUICE_NODE_DIR") or HERE / "node")
GO_TOOL_OVERRIDE = Path(os.environ["SLUICE_GO_TOOL"]) if os.environ.get("SLUICE_GO_TOOL") else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def api_versions_ok(port: int, timeout: float = 2.0) -> bool:
    """Send a raw ApiVersions v0 request; true when a well-formed answer with error 0 comes back."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            client_id = b"sluice-probe"
            body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
            s.sendall(struct.pack(">i", len(body)) + body)
            hdr = _recv_exact(s, 4)
            (n,) = struct.unpack(">i", hdr)
            resp = _recv_exact(s, n)
            corr, err = struct.unpack(">ih", resp[:6])
            return corr == 7 and err == 0
    except (OSError, struct.error):
        return False


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def tail(path: Path, n: int = 40, containing: str | None = None) -> str:
    """The last `n` lines of the file at `path` (those containing `containing`, if given)."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "<no log>"
    if containing is not None:
        lines = [line for line in lines if containing in line]
    return "\n".join(lines[-n:])


class Broker:
    """One broker under test (Sluice, or Apache Kafka when SLUICE_TARGET=kafka).

    settings: Kafka-named broker settings; written as dotted TOML keys for Sluice.
    """

    def __init__(self, workdir: Path, settings: dict | None = None, target: str = TARGET,
                 extra_args: list[str] | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.target = target
        self.port = free_port()
        self.data_dir = self.workdir / "data"
        self.log_path = self.workdir / "broker.log"
        self.settings = {"num.partitions": 1, "auto.create.topics.enable": True}
        self.settings.update(settings or {})
        self.extra_args = list(extra_args or [])  # sluice only, e.g. ["--override", "k=v"]
        self.starts = 0
        self._proc = None  # subprocess.Popen (sluice) or KafkaProcess
        if target == "kafka":
            from kafka_broker import KafkaProcess
            self._kafka = KafkaProcess(self.port, self.data_dir, self.log_path, self.settings)
        elif target == "sluice":
            self._kafka = None
            if not SLUICE_BIN.exists():
                raise RuntimeError(f"sluice binary not found at {SLUICE_BIN} (build it with `cargo build --release` "
                                   f"or set SLUICE_BIN; SLUICE_TARGET=kafka runs the suite against Apache Kafka)")
        else:
            raise RuntimeError(f"unknown SLUICE_TARGET={target!r} (sluice|kafka)")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self._popen().pid

    def _popen(self) -> subprocess.Popen:
        return self._kafka.proc if self._kafka else self._proc

    def config_text(self) -> str:
        s = {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": str(self.data_dir)}
        s.update(self.settings)
        return "".join(f"{k} = {_toml_value(v)}\n" for k, v in s.items())

    def start(self, timeout: float = 60.0) -> None:
        self.starts += 1
        with open(self.log_path, "a") as f:
            f.write(f"\n===== test harness: start #{self.starts} ({self.target}) on port {self.port} =====\n")
        if self._kafka:
            self._kafka.start()
        else:
            cfg = self.workdir / "sluice.toml"
            cfg.write_text(self.config_text())
            log = open(self.log_path, "ab")
            env = dict(os.environ)
            env.setdefault("RUST_BACKTRACE", "1")
            # Every JoinGroup and SyncGroup with its answer (DEBUG, one line each): a group test
            # that fails shows what the coordinator did (conftest attaches those lines).
            env.setdefault("RUST_LOG", "info,sluice_group=debug,sluice_server::group_manager=debug")
            self._proc = subprocess.Popen([str(SLUICE_BIN), "--config", str(cfg), *self.extra_args], stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
            log.close()
        try:
            self._wait_ready(timeout)
        except AssertionError:
            # A broker that did not come up is not left running (the fixture never stops it).
            p = self._popen()
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=30)
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.time() + timeout
        start_marker = f"start #{self.starts} "
        while time.time() < deadline:
            rc = self._popen().poll()
            if rc is not None:
                raise AssertionError(f"{self.target} exited with code {rc} during startup; log:\n{tail(self.log_path)}")
            if port_open(self.port) and api_versions_ok(self.port):
                if self.target == "sluice":
                    log = self.log_path.read_text(errors="replace")
                    since = log[log.rfind(start_marker):]
                    if "ready" not in since:
                        time.sleep(0.1)
                        continue
                return
            time.sleep(0.2)
        raise AssertionError(f"{self.target} not ready on {self.bootstrap} within {timeout}s "
                             f"(port open, ApiVersions answered, 'ready' logged); log:\n{tail(self.log_path)}")

    def running(self) -> bool:
        p = self._popen()
        return p is not None and p.poll() is None

    def kill9(self) -> None:
        p = self._popen()
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)

    def stop(self, timeout: float = 60.0, sig: int = signal.SIGTERM) -> int:
        """SIGTERM (or sig) and wait; returns the exit code (kills -9 after the timeout and raises)."""
        p = self._popen()
        if p is None or p.poll() is not None:
            return p.returncode if p else 0
        p.send_signal(sig)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError(f"{self.target} did not exit within {timeout}s of SIGTERM; log:\n{tail(self.log_path)}")

    def clean_exit_codes(self) -> tuple:
        # The JVM reports 143 (128+SIGTERM) after Kafka's orderly shutdown hook; Sluice must exit 0.
        return (0, 143) if self.target == "kafka" else (0,)


# ---------------------------------------------------------------------------- Java client tool

def stop_process(proc, timeout: float, what: str, hint) -> int:
    """SIGTERM a JVM tool's process (its shutdown hook runs) and wait for its exit code; one that
    does not exit within `timeout` is killed and fails the test, with `hint` (a string, or a
    function giving one: e.g. the tool's log tail)."""
    if proc is None or proc.poll() is not None:
        return proc.returncode if proc else 0
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{what} did not exit within {timeout}s of SIGTERM; "
                             f"{hint() if callable(hint) else hint}")


def java_tool_built() -> bool:
    if not JAVA_JAR.exists() or not JAVA_LIB.is_dir():
        return False
    jar_mtime = JAVA_JAR.stat().st_mtime
    sources = [JAVA_DIR / "pom.xml", *(JAVA_DIR / "src").rglob("*.java")]
    return all(s.stat().st_mtime <= jar_mtime for s in sources)


def build_java_tool() -> None:
    if java_tool_built():
        return
    cmd = ["mvn", "-q", "-B", "package", "-DskipTests"]
    # copy-dependencies adds jars and never removes one: after a version change the old
    # kafka-clients jar would stay on the classpath beside the new one.
    shutil.rmtree(JAVA_LIB, ignore_errors=True)
    last = None
    for extra in (["-o"], []):
        last = subprocess.run(cmd + extra, cwd=JAVA_DIR, capture_output=True, text=True, timeout=900)
        if last.returncode == 0 and java_tool_built():
            return
    raise RuntimeError(f"building the Java client tool failed:\n{last.stdout[-4000:]}\n{last.stderr[-4000:]}")


def java(args: list[str], timeout: float = 600, logdir: Path | None = None, check: bool = True,
         quick: bool = False) -> subprocess.CompletedProcess:
    """Run the Java client tool (tests/clients/java). stdout is the tool's report; client logs
    (WARN and up) go to stderr."""
    cmd = ["java", "-Xmx768m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
           "-Dorg.slf4j.simpleLogger.logFile=System.err"]
    if quick:
        cmd.append("-XX:TieredStopAtLevel=1")
    cmd += ["-cp", f"{JAVA_JAR}:{JAVA_LIB}/*", "sluice.clients.Main", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if logdir is not None:
        with open(Path(logdir) / "java-client.log", "a") as f:
            f.write(f"$ {' '.join(args)}\n--- rc={r.returncode} stdout:\n{r.stdout}\n--- stderr:\n{r.stderr}\n")
    if check and r.returncode != 0:
        raise AssertionError(f"java client `{' '.join(args)}` exited {r.returncode}:\n{r.stdout[-6000:]}\n"
                             f"--- stderr (tail):\n{r.stderr[-3000:]}")
    return r


def java_create_topic(bootstrap: str, topic: str, partitions: int, logdir: Path | None = None) -> None:
    java(["admin", "create", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(partitions)],
         timeout=120, logdir=logdir, quick=True)


# ---------------------------------------------------------------------------- kcat

def kcat_bin() -> str:
    k = shutil.which("kcat") or shutil.which("kafkacat")
    if not k:
        raise RuntimeError("kcat is not installed (apt-get install kcat)")
    return k


# ---------------------------------------------------------------------------- verification

def make_key(prefix: str, seq: int) -> str:
    return f"{prefix}{seq}"


def make_value(prefix: str, seq: int, pad: int = 0) -> str:
    return f"{prefix}{seq}|{seq}|" + "x" * pad


def verify_exactly_once(records, expected_count: int, prefix: str = "k", start: int = 0,
                        partitions: int | None = None) -> dict:
    """records: iterable of (partition, offset, key, value) as read back, in read order.

    Checks: every seq in [start, start+expected_count) exactly once; value matches key;
    per partition offsets contiguous from 0 and seq strictly increasing (produce order).
    Returns {partition: count}.  Raises AssertionError with a readable summary."""
    errors: list[str] = []

    def err(msg):
        if len(errors) < 25:
            errors.append(msg)
        elif len(errors) == 25:
            errors.append("... (more errors suppressed)")

    next_off: dict[int, int] = defaultdict(int)
    last_seq: dict[int, int] = {}
    seen: dict[str, tuple] = {}
    total = 0
    for p, o, k, v in records:
        total += 1
        if o != next_off[p]:
            err(f"partition {p}: offset {o} where {next_off[p]} was expected (offsets must be contiguous from 0)")
        next_off[p] = o + 1
        if k in seen:
            err(f"key {k!r} read twice: at {seen[k]} and at ({p}, {o})")
        seen[k] = (p, o)
        fields = v.split("|") if isinstance(v, str) else None
        if not fields or len(fields) != 3 or fields[0] != k or set(fields[2]) - {"x"}:
            err(f"partition {p} offset {o}: value {v!r:.80} does not match key {k!r}")
            continue
        try:
            seq = int(fields[1])
        except ValueError:
            err(f"partition {p} offset {o}: bad seq in value {v!r:.80}")
            continue
        if k != make_key(prefix, seq):
            err(f"partition {p} offset {o}: key {k!r} does not match seq {seq}")
        if p in last_seq and seq <= last_seq[p]:
            err(f"partition {p} offset {o}: seq {seq} after seq {last_seq[p]} (order differs from produce order)")
        last_seq[p] = seq
    expected = {make_key(prefix, s) for s in range(start, start + expected_count)}
    missing = expected - seen.keys()
    extra = seen.keys() - expected
    if missing:
        err(f"{len(missing)} produced records never read back, e.g. {sorted(missing)[:5]}")
    if extra:
        err(f"{len(extra)} unexpected keys read back, e.g. {sorted(extra)[:5]}")
    if total != expected_count:
        err(f"read {total} records, expected {expected_count}")
    if partitions is not None:
        used = set(next_off)
        if not used <= set(range(partitions)):
            err(f"records from unexpected partitions {sorted(used - set(range(partitions)))}")
    counts = dict(sorted(next_off.items()))
    if errors:
        raise AssertionError(f"read-back verification failed ({total} records, per-partition counts {counts}):\n  "
                             + "\n  ".join(errors))
    return counts


def reference_cluster_view(bootstrap: str) -> dict:
    """The broker as confluent-kafka's AdminClient.describe_cluster() (DescribeCluster) sees it, the
    reference the other clients' admin views are compared with: cluster id, controller, brokers."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    c = admin.describe_cluster(request_timeout=15).result(timeout=20)
    assert c.cluster_id, f"confluent-kafka describe_cluster() without a cluster id: {c}"
    return {"cluster_id": c.cluster_id, "controller": c.controller.id,
            "brokers": sorted((n.id, n.host, n.port) for n in c.nodes)}


def check_cluster_view(view: dict, broker, topics: dict[str, int]) -> None:
    """Checks one client's admin view (the VIEW shape of go/admin.go and `kafkajs_tool.js view`):
    the single broker is node 1 at 127.0.0.1:<port> and the controller; every call's cluster id
    equals the reference's (confluent-kafka DescribeCluster); each created topic is listed with its
    partition count and described with partitions 0..n-1, each led by node 1 with replicas = ISR = [1]."""
    who = view["client"]
    ref = reference_cluster_view(broker.bootstrap)
    assert ref["brokers"] == [(1, "127.0.0.1", broker.port)], f"reference view: {ref}"
    brokers = sorted((b["id"], b["host"], b["port"]) for b in view["brokers"])
    assert brokers == ref["brokers"], f"{who}: brokers {brokers}, expected {ref['brokers']}"
    assert view["controller"] == ref["controller"] == 1, f"{who}: controller {view['controller']}, ref {ref}"
    assert view["cluster_ids"], f"{who}: no cluster id reported"
    for call, cluster_id in view["cluster_ids"].items():
        assert cluster_id == ref["cluster_id"], \
            f"{who}: {call} cluster id {cluster_id!r}, DescribeCluster says {ref['cluster_id']!r}"
    for topic, partitions in topics.items():
        assert view["listed"].get(topic) == partitions, \
            f"{who}: {topic} listed with {view['listed'].get(topic)} partitions, expected {partitions}: {view['listed']}"
        described = sorted(view["described"].get(topic, []), key=lambda p: p["partition"])
        assert [p["partition"] for p in described] == list(range(partitions)), f"{who}: {topic}: {described}"
        for p in described:
            assert (p["leader"], p["replicas"], p["isr"]) == (1, [1], [1]), f"{who}: {topic}/{p['partition']}: {p}"
