"""Apache Kafka's own command-line tools (kafka-topics, kafka-console-producer, ...), run from the
Maven Central jars listed in kafka-tools/pom.xml, for test_cli_tools.py.

The jars are copied by `mvn dependency:copy-dependencies` into a cache directory (default
~/.cache/sluice-tests/kafka-tools-<version>/libs, override with KAFKA_TOOLS_LIBS_DIR), once per
pom.xml content (a stamp file holds the pom's hash). `tests/run` fetches them before the suite:
    python3 -c 'import kafka_cli; print(kafka_cli.ensure_tools_libs())'     (in tests/clients)

A tool runs as `java -cp 'LIBS/*' <main class> ARGS`, as Kafka's bin/*.sh scripts do:
    python3 tests/clients/kafka_cli.py kafka-topics --bootstrap-server 127.0.0.1:9092 --list
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS_DIR = HERE / "kafka-tools"
POM = TOOLS_DIR / "pom.xml"
LOG4J_CONFIG = TOOLS_DIR / "log4j2.properties"
KAFKA_VERSION = "4.4.0"

# bin/<script>.sh -> the main class it runs in Kafka 4.4.0 (kafka-configs is
# org.apache.kafka.tools.ConfigCommand there; 4.1 still had it as kafka.admin.ConfigCommand).
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
}


def libs_dir() -> Path:
    env = os.environ.get("KAFKA_TOOLS_LIBS_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "sluice-tests" / f"kafka-tools-{KAFKA_VERSION}" / "libs"


def _pom_hash() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def _stamp(libs: Path) -> Path:
    return libs / ".pom-sha256"


def tools_libs_ready(libs: Path | None = None) -> bool:
    libs = libs or libs_dir()
    stamp = _stamp(libs)
    return stamp.exists() and stamp.read_text().strip() == _pom_hash()


def ensure_tools_libs() -> Path:
    """Return the directory holding the tools' jars, fetching them with Maven when missing or
    when kafka-tools/pom.xml changed since the last fetch (offline from ~/.m2 first)."""
    return ensure_maven_libs(POM, libs_dir(), f"kafka-tools-{KAFKA_VERSION}.jar")


def ensure_maven_libs(pom: Path, libs: Path, marker_jar: str) -> Path:
    """Copy the runtime dependencies of `pom` into `libs` unless a stamp there says they were copied
    from this very pom (its hash); `marker_jar` must be among them. Offline from ~/.m2 first."""
    pom_hash = hashlib.sha256(pom.read_bytes()).hexdigest()
    stamp = _stamp(libs)
    if stamp.exists() and stamp.read_text().strip() == pom_hash:
        return libs
    # copy-dependencies adds jars and never removes one: start empty, so a jar of an older pin
    # never stays on the classpath beside the new one.
    if libs.exists():
        shutil.rmtree(libs)
    cmd = ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
           f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    r = None
    for extra in (["-o"], []):
        r = subprocess.run(cmd + extra, check=False, capture_output=True, text=True, timeout=900)
        if r.returncode == 0 and (libs / marker_jar).exists():
            stamp.write_text(pom_hash + "\n")
            return libs
    raise RuntimeError(f"could not fetch the jars of {pom} with Maven:\n"
                       f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")


def _cds_dir() -> Path:
    """Where the class-data-sharing archives live: one directory per JVM build and jar set."""
    java = Path(shutil.which("java") or "java").resolve()
    key = f"{java}:{java.stat().st_mtime_ns if java.exists() else 0}:{_pom_hash()}"
    return libs_dir().parent / "cds" / hashlib.sha256(key.encode()).hexdigest()[:16]


def _cds() -> tuple[list[str], tuple[Path, Path] | None]:
    """JVM flags for an application class-data-sharing archive (kafka-clients, the tools): a tool's
    JVM starts in ~0.6 s instead of ~1.1 s. One archive serves every tool (classes it lacks load from
    the jars as usual); the first tool run records it (to a temp name, renamed when the tool
    succeeded), later runs map it. KAFKA_CLI_CDS=0 turns this off."""
    if os.environ.get("KAFKA_CLI_CDS", "1") == "0":
        return [], None
    archive = _cds_dir() / "tools.jsa"
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}"], None
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f"tools.{os.getpid()}.{time.monotonic_ns()}.jsa.tmp")
    return [f"-XX:ArchiveClassesAtExit={tmp}"], (tmp, archive)


def command(tool: str, *args: str, jvm_flags: tuple[str, ...] = ()) -> list[str]:
    """The java command line running `tool` (a bin/ script name from TOOLS) with args."""
    main = TOOLS[tool]
    # JVM log output (CDS notes among it) goes to stderr at error level only: stdout is the tool's.
    return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Xlog:disable", "-Xlog:all=error:stderr", *jvm_flags,
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-Djava.awt.headless=true",
            "-cp", f"{ensure_tools_libs()}/*", main, *args]


def run(tool: str, *args: str, stdin: str | None = None, timeout: float = 120, logdir: Path | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    """Run a tool and return the finished process (text stdout/stderr). With check, a non-zero exit
    raises with both outputs; logdir gets every invocation appended to kafka-cli.log."""
    cds_flags, recording = _cds()
    cmd = command(tool, *args, jvm_flags=tuple(cds_flags))
    r = None
    try:
        r = subprocess.run(cmd, check=False, input=stdin, capture_output=True, text=True, timeout=timeout,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{tool} {' '.join(args)} did not finish within {timeout}s; "
                             f"stdout:\n{e.stdout}\nstderr:\n{e.stderr}") from None
    finally:
        if recording:
            tmp, archive = recording
            if r is not None and r.returncode == 0 and tmp.exists():
                os.replace(tmp, archive)
            tmp.unlink(missing_ok=True)
    if logdir is not None:
        with open(Path(logdir) / "kafka-cli.log", "a") as f:
            f.write(f"$ {tool} {' '.join(args)}\n--- rc={r.returncode} stdout:\n{r.stdout}\n--- stderr:\n{r.stderr}\n")
    if check and r.returncode != 0:
        raise AssertionError(f"{tool} {' '.join(args)} exited {r.returncode}:\n{r.stdout[-4000:]}\n"
                             f"--- stderr:\n{r.stderr[-4000:]}")
    return r


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in TOOLS:
        print(f"usage: {sys.argv[0]} {{{'|'.join(TOOLS)}}} ARGS...", file=sys.stderr)
        return 2
    return subprocess.call(command(sys.argv[1], *sys.argv[2:]))


if __name__ == "__main__":
    sys.exit(main())
