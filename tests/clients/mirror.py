"""Apache Kafka's MirrorMaker 2, unmodified, from the Maven Central jars of mirror/pom.xml, run in its
dedicated mode (`org.apache.kafka.connect.mirror.MirrorMaker`, what Kafka's bin/connect-mirror-maker.sh
starts) for test_mirrormaker.py and the README's "Moving from Kafka".

The jars are copied by `mvn dependency:copy-dependencies` into a cache directory (default
~/.cache/sluice-tests/mirror-<version>/libs, override with MIRROR_LIBS_DIR), once per pom.xml content
(a stamp file holds the pom's hash). `tests/run` fetches them before the suite:
    python3 -c 'import mirror; print(mirror.ensure_mirror_libs())'     (in tests/clients)

Stand-alone use, with an mm2.properties of your own:
    python3 tests/clients/mirror.py mm2.properties [--clusters sluice]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import harness
import kafka_cli

HERE = Path(__file__).resolve().parent
MIRROR_DIR = HERE / "mirror"
POM = MIRROR_DIR / "pom.xml"
LOG4J_CONFIG = MIRROR_DIR / "log4j2.properties"
MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"


def mirror_version() -> str:
    """connect-mirror's version, as pinned by mirror/pom.xml (`mirror.version`)."""
    m = re.search(r"<mirror\.version>([^<]+)</mirror\.version>", POM.read_text())
    if not m:
        raise RuntimeError(f"{POM} has no <mirror.version>")
    return m.group(1)


def libs_dir() -> Path:
    env = os.environ.get("MIRROR_LIBS_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "sluice-tests" / f"mirror-{mirror_version()}" / "libs"


def ensure_mirror_libs() -> Path:
    """Return the directory holding MirrorMaker 2's jars, fetching them with Maven when missing or
    when mirror/pom.xml changed since the last fetch (offline from ~/.m2 first)."""
    return kafka_cli.ensure_maven_libs(POM, libs_dir(), f"connect-mirror-{mirror_version()}.jar")


def command(properties: Path, clusters: list[str] | None = None, heap: str = "512m") -> list[str]:
    """The java command line of a dedicated MirrorMaker 2 reading `properties`; `clusters` limits the
    herders it runs to those target clusters (`--clusters`)."""
    cmd = ["java", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xlog:disable",
           "-Xlog:all=error:stderr", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-Djava.awt.headless=true",
           "-cp", f"{ensure_mirror_libs()}/*", MAIN, str(properties)]
    if clusters:
        cmd += ["--clusters", *clusters]
    return cmd


def properties_text(settings: dict) -> str:
    return "".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}\n" for k, v in settings.items())


class MirrorMaker:
    """One dedicated MirrorMaker 2 process; its log (INFO, log4j2.properties) goes to `log_path`."""

    def __init__(self, workdir: Path, settings: dict, clusters: list[str] | None = None, name: str = "mm2"):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.properties = self.workdir / f"{name}.properties"
        self.log_path = self.workdir / f"{name}.log"
        self.settings = dict(settings)
        self.clusters = clusters
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.properties.write_text(properties_text(self.settings))
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(command(self.properties, self.clusters), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        log.close()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (MirrorMaker's shutdown hook stops its herders and connectors) and wait."""
        return harness.stop_process(self.proc, timeout, "MirrorMaker 2", f"see {self.log_path}")

    def __enter__(self) -> "MirrorMaker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.running():
            try:
                self.stop()
            except AssertionError:
                pass


def wait_for(what: str, check, timeout: float, mm: MirrorMaker | None = None, interval: float = 0.5):
    """Poll check() until it returns something truthy; fail with `what` (and MM2's log tail) at the timeout."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if mm is not None and not mm.running():
            raise AssertionError(f"MirrorMaker 2 exited ({mm.proc.returncode}) while waiting for {what}; log tail:\n"
                                 + "\n".join(mm.log().splitlines()[-60:]))
        last = check()
        if last:
            return last
        time.sleep(interval)
    tail = "\n".join(mm.log().splitlines()[-60:]) if mm is not None else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})\n{tail}")


def main() -> int:
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} mm2.properties [--clusters NAME...]", file=sys.stderr)
        return 2
    return subprocess.call(["java", "-Xmx512m", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                            "-cp", f"{ensure_mirror_libs()}/*", MAIN, *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
