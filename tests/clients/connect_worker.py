"""Apache Kafka 4.4.0's Kafka Connect distributed worker (`ConnectDistributed`, unmodified, from the
Maven Central jars of connect/pom.xml) with the FileStream connectors as a plugin
(connect/file-plugin/pom.xml: connect-file 4.3.1, the newest on Maven Central; the pom says why it must
be a plugin in plugin.path rather than on the classpath), for test_connect.py.

The jars are copied by `mvn dependency:copy-dependencies` into a cache directory (default
~/.cache/sluice-tests/connect-4.4.0/, override with CONNECT_CACHE_DIR): libs/ for the worker and
plugins/connect-file/ for the connectors, each once per pom content. `tests/run` fetches them before
the suite:
    python3 -c 'import connect_worker; print(connect_worker.ensure_connect_libs())'   (in tests/clients)

A worker runs as Kafka's bin/connect-distributed.sh runs it: `java -cp 'LIBS/*'
org.apache.kafka.connect.cli.ConnectDistributed worker.properties`; `Worker` writes the properties,
logs to a file and talks to the REST API with urllib.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import harness
import kafka_cli

HERE = Path(__file__).resolve().parent
CONNECT_DIR = HERE / "connect"
POM = CONNECT_DIR / "pom.xml"
FILE_PLUGIN_POM = CONNECT_DIR / "file-plugin" / "pom.xml"
LOG4J_CONFIG = CONNECT_DIR / "log4j2.properties"
KAFKA_VERSION = "4.4.0"
MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"


def file_connectors_version() -> str:
    """The connect-file version file-plugin/pom.xml pins."""
    m = re.search(r"<artifactId>connect-file</artifactId>\s*<version>([^<]+)</version>", FILE_PLUGIN_POM.read_text())
    return m.group(1) if m else "?"


def cache_dir() -> Path:
    env = os.environ.get("CONNECT_CACHE_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "sluice-tests" / f"connect-{KAFKA_VERSION}"


def ensure_connect_libs() -> tuple[Path, Path]:
    """(the worker's classpath directory, the plugin.path directory), fetched with Maven when missing
    or when a pom changed since the last fetch (offline from ~/.m2 first)."""
    libs = kafka_cli.ensure_maven_libs(POM, cache_dir() / "libs", f"connect-runtime-{KAFKA_VERSION}.jar")
    plugins = cache_dir() / "plugins"
    kafka_cli.ensure_maven_libs(FILE_PLUGIN_POM, plugins / "connect-file",
                                f"connect-file-{file_connectors_version()}.jar")
    return libs, plugins


class RestError(Exception):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class Worker:
    """One distributed worker process; `properties` override the defaults below (worker config names)."""

    def __init__(self, workdir: Path, bootstrap: str, properties: dict | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.rest_port = harness.free_port()
        self.properties = {
            "bootstrap.servers": bootstrap,
            "group.id": "sluice-connect",
            "config.storage.topic": "connect-configs",
            "offset.storage.topic": "connect-offsets",
            "status.storage.topic": "connect-status",
            "config.storage.replication.factor": 1,
            "offset.storage.replication.factor": 1,
            "status.storage.replication.factor": 1,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "listeners": f"http://127.0.0.1:{self.rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": self.rest_port,
            # every plugin here (the FileStream jar too) has ServiceLoader manifests: no class scan
            "plugin.discovery": "service_load",
        }
        self.properties.update(properties or {})
        self.runs = 0
        self.proc: subprocess.Popen | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def start(self) -> None:
        self.runs += 1
        libs, plugins = ensure_connect_libs()
        props = self.workdir / "worker.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in {"plugin.path": plugins, **self.properties}.items()))
        self.log_path = self.workdir / f"worker-{self.runs}.log"
        log = open(self.log_path, "wb")
        cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
               "-cp", f"{libs}/*", MAIN, str(props)]
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 60) -> str:
        return harness.tail(self.log_path, n) if self.log_path else ""

    def _check_alive(self) -> None:
        if not self.running():
            raise AssertionError(f"the Connect worker exited with code {self.proc.poll()}; log:\n{self.log_tail()}")

    def request(self, method: str, path: str, body=None, timeout: float = 30.0):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raise RestError(e.code, e.read().decode(errors="replace")) from None
        return json.loads(text) if text else None

    def wait_rest(self, timeout: float = 90.0) -> dict:
        """Until `GET /` answers (the REST server is up; the herder may still be joining its group)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            self._check_alive()
            try:
                return self.request("GET", "/", timeout=5)
            except (OSError, RestError):
                time.sleep(0.3)
        raise AssertionError(f"the worker's REST API did not answer within {timeout}s; log:\n{self.log_tail()}")

    def wait_for(self, what: str, check, timeout: float = 60.0, interval: float = 0.3):
        """Until check() returns a true value (REST errors and not-yet-true answers are retried)."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            self._check_alive()
            try:
                got = check()
                if got:
                    return got
                last = got
            except (OSError, RestError) as e:
                last = e
            time.sleep(interval)
        raise AssertionError(f"{what}: not within {timeout}s (last: {last}); worker log:\n{self.log_tail()}")

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (the worker's shutdown hook stops the herder and leaves the group) and wait."""
        return harness.stop_process(self.proc, timeout, "the worker", lambda: f"log:\n{self.log_tail()}")
