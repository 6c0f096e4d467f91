"""Run a real single-node Apache Kafka 4.x (KRaft combined mode) from Maven Central jars.

Used by the client test suite when SLUICE_TARGET=kafka, so the suite itself is validated
against the reference implementation.  No Kafka tarball is needed: the broker's jars
(org.apache.kafka:kafka_2.13 and its runtime dependencies) are copied by Maven into a cache
directory (default ~/.cache/sluice-tests/kafka-<version>/libs, override with KAFKA_LIBS_DIR).

Stand-alone use:
    python3 tests/clients/kafka_broker.py --port 29092 --data /tmp/kafka-data
"""

from __future__ import annotations

import argparse
import base64
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

KAFKA_VERSION = os.environ.get("KAFKA_VERSION", "4.4.0")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>sluice.tests</groupId><artifactId>kafka-dist</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{v}</version></dependency>
  </dependencies>
</project>
"""


def libs_dir() -> Path:
    env = os.environ.get("KAFKA_LIBS_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "sluice-tests" / f"kafka-{KAFKA_VERSION}" / "libs"


def ensure_kafka_libs() -> Path:
    """Return the directory holding Kafka's jars, fetching them with Maven if needed."""
    libs = libs_dir()
    marker = libs / f"kafka_2.13-{KAFKA_VERSION}.jar"
    if marker.exists():
        return libs
    pom_dir = libs.parent / "pom"
    pom_dir.mkdir(parents=True, exist_ok=True)
    (pom_dir / "pom.xml").write_text(_POM.format(v=KAFKA_VERSION))
    cmd = ["mvn", "-q", "-B", "dependency:copy-dependencies",
           f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    # Offline first (reuses ~/.m2), then online.
    for extra in (["-o"], []):
        r = subprocess.run(cmd + extra, cwd=pom_dir, capture_output=True, text=True)
        if r.returncode == 0 and marker.exists():
            return libs
    raise RuntimeError(f"could not fetch Kafka {KAFKA_VERSION} jars with Maven:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaProcess:
    """A single-node KRaft Kafka.  `settings` are Kafka broker settings (the same dict the
    Sluice fixture writes to TOML); keys starting with `sluice.` are ignored here."""

    def __init__(self, port: int, data_dir: Path, log_path: Path, settings: dict | None = None,
                 controller_port: int | None = None, heap: str = "768m"):
        self.port = port
        self.controller_port = controller_port or _free_port()
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path)
        self.settings = dict(settings or {})
        self.heap = heap
        self.proc: subprocess.Popen | None = None
        self.props_path = self.data_dir.parent / f"kafka-{port}.properties"

    def _write_props(self) -> None:
        s = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "offsets.topic.replication.factor": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "log.dirs": str(self.data_dir),
        }
        for k, v in self.settings.items():
            if k.startswith("sluice.") or k in ("listeners", "log.dirs", "node.id"):
                continue
            s[k] = str(v).lower() if isinstance(v, bool) else v
        self.props_path.write_text("".join(f"{k}={v}\n" for k, v in s.items()))

    def _java(self, main: str, *args: str, heap: str | None = None) -> list[str]:
        heap = heap or self.heap
        return ["java", f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC",
                "-Djava.awt.headless=true", "-cp", str(ensure_kafka_libs() / "*"), main, *args]

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_props()
        if not (self.data_dir / "meta.properties").exists():
            cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            # `--cluster-id=ID` in one argument: a random id may start with "-", which the tool's
            # argument parser would otherwise take for an option.
            cmd = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                             "-c", str(self.props_path), "--standalone", heap="256m")
            for attempt in range(3):
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
                if r.returncode == 0:
                    break
                with open(self.log_path, "a") as f:
                    f.write(f"storage format attempt {attempt} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}\n")
                time.sleep(1)
            else:
                raise RuntimeError(f"kafka storage format failed ({r.returncode}): {r.stdout[-2000:]}\n{r.stderr[-4000:]}")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self._java("kafka.Kafka", str(self.props_path)),
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def send_signal(self, sig: int) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=29092)
    ap.add_argument("--data", required=True)
    ap.add_argument("--num-partitions", type=int, default=1)
    a = ap.parse_args()
    data = Path(a.data)
    data.mkdir(parents=True, exist_ok=True)
    k = KafkaProcess(a.port, data / "data", data / "kafka.log", {"num.partitions": a.num_partitions})
    k.start()
    print(f"kafka starting on 127.0.0.1:{a.port} (pid {k.proc.pid}, log {k.log_path})", flush=True)
    try:
        return k.proc.wait()
    except KeyboardInterrupt:
        k.send_signal(signal.SIGTERM)
        return k.wait(60)


if __name__ == "__main__":
    sys.exit(main())
