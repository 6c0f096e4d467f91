"""The versions of the client suite's clients, tools and reference broker: where each is pinned and
what is installed. Used by tests/compat/generate (COMPATIBILITY.md, "Versions") and tests/newest.

    python3 tests/clients/versions.py        # prints the table

Pins: tests/clients/requirements.txt (Python), node/package.json + package-lock.json (kafkajs),
go/go.mod + go.sum (franz-go, kadm, kmsg, Sarama), java/pom.xml (kafka-clients, kafka-streams),
kafka-tools/pom.xml (Kafka's CLI tools), connect/pom.xml and connect/file-plugin/pom.xml (the Kafka
Connect worker and the FileStream connectors), mirror/pom.xml (MirrorMaker 2), kafka_broker.py (the
Apache Kafka reference broker).
kcat is Debian's package (tests/run installs it with apt-get) and cannot be pinned.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import harness

HERE = harness.HERE
REPO = harness.REPO
REQUIREMENTS = HERE / "requirements.txt"
NODE_DIR = HERE / "node"
GO_DIR = HERE / "go"
GO_BIN = GO_DIR / "bin" / "sluice-go-clients"
JAVA_POM = HERE / "java" / "pom.xml"
TOOLS_POM = HERE / "kafka-tools" / "pom.xml"

# Go modules of go/go.mod that are clients (the rest are their dependencies).
GO_CLIENTS = {
    "github.com/twmb/franz-go": "franz-go",
    "github.com/twmb/franz-go/pkg/kadm": "franz-go kadm",
    "github.com/twmb/franz-go/pkg/kmsg": "franz-go kmsg",
    "github.com/IBM/sarama": "Sarama",
}
# Python packages that are clients (the rest of requirements.txt: codecs, pytest, dependencies).
PYTHON_CLIENTS = ("kafka-python", "confluent-kafka", "aiokafka")


def rel(path: Path) -> str:
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def shown(path) -> str:
    """A path outside the repository, with the home directory as ~."""
    home = str(Path.home())
    path = str(path)
    return "~" + path[len(home):] if home != "/" and path.startswith(home + "/") else path


def run(cmd: list[str], cwd: Path | None = None) -> str | None:
    """stdout + stderr of a command, or None when it is missing or fails."""
    if not shutil.which(cmd[0]) and not Path(cmd[0]).is_file():
        return None
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (r.stdout + r.stderr).strip() if r.returncode == 0 else None


# ---------------------------------------------------------------------------- Python

def python_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """{name: version} of requirements.txt's `name==version` lines, in file order."""
    pins = {}
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = (x.strip() for x in line.partition("=="))
            pins[name] = pinned
    return pins


def python_installed(names, python: str | None = None) -> dict[str, str | None]:
    """{name: installed version or None} for this interpreter, or for another one (`python`)."""
    names = list(names)
    if python is None:
        out = {}
        for n in names:
            try:
                out[n] = version(n)
            except PackageNotFoundError:
                out[n] = None
        return out
    code = ("import json, sys\nfrom importlib.metadata import version, PackageNotFoundError\nout = {}\n"
            "for n in sys.argv[1:]:\n    try: out[n] = version(n)\n    except PackageNotFoundError: out[n] = None\n"
            "print(json.dumps(out))")
    r = subprocess.run([python, "-c", code, *names], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def librdkafka_of_confluent(python: str | None = None) -> str | None:
    """The librdkafka version bundled with the installed confluent-kafka."""
    r = run([python or sys.executable, "-c", "import confluent_kafka; print(confluent_kafka.libversion()[0])"])
    return r.splitlines()[-1] if r else None


# ---------------------------------------------------------------------------- Node

def kafkajs_pinned(node_dir: Path = NODE_DIR) -> tuple[str, str | None]:
    """(package.json's kafkajs spec, package-lock.json's resolved version)."""
    spec = json.loads((node_dir / "package.json").read_text())["dependencies"]["kafkajs"]
    lock = node_dir / "package-lock.json"
    locked = None
    if lock.exists():
        locked = json.loads(lock.read_text()).get("packages", {}).get("node_modules/kafkajs", {}).get("version")
    return spec, locked


def kafkajs_installed(node_dir: Path = NODE_DIR) -> str | None:
    p = node_dir / "node_modules" / "kafkajs" / "package.json"
    return json.loads(p.read_text())["version"] if p.exists() else None


# ---------------------------------------------------------------------------- Go

def go_mod(go_dir: Path = GO_DIR) -> tuple[str | None, str | None, dict[str, str]]:
    """(go directive, toolchain directive, {module: version}) of go.mod."""
    text = (go_dir / "go.mod").read_text()
    go = re.search(r"^go\s+(\S+)", text, re.M)
    toolchain = re.search(r"^toolchain\s+(\S+)", text, re.M)
    mods = dict(re.findall(r"^\s*(?:require\s+)?([\w./-]+\.[\w./-]+)\s+(v\S+)", text, re.M))
    return go and go.group(1), toolchain and toolchain.group(1), mods


def go_binary_modules(binary: Path = GO_BIN) -> dict[str, str] | None:
    """{module: version} compiled into a Go binary (`go version -m`), None when unknown."""
    if not Path(binary).is_file():
        return None
    out = run(["go", "version", "-m", str(binary)])
    if out is None:
        return None
    mods = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "dep":
            mods[parts[1]] = parts[2]
        elif len(parts) >= 3 and parts[0] == "=>" and mods:  # a replace directive
            mods[list(mods)[-1]] = parts[2]
    return mods


def go_toolchain() -> str | None:
    out = run(["go", "version"])
    return out.split()[2] if out else None


# ---------------------------------------------------------------------------- Java, kcat, Kafka

def pom_kafka_version(pom: Path) -> str:
    m = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", pom.read_text())
    return m.group(1) if m else "?"


def jar_version(libs: Path, artifact: str) -> str | None:
    """Version of `artifact` from the jar name in a directory of jars (artifact-1.2.3.jar)."""
    if not libs.is_dir():
        return None
    found = sorted(p.name[len(artifact) + 1:-4] for p in libs.glob(f"{artifact}-*.jar")
                   if re.fullmatch(r"\d[\w.-]*", p.name[len(artifact) + 1:-4]))
    return found[-1] if found else None


def java_runtime() -> str | None:
    out = run(["java", "-version"])
    return out.splitlines()[0] if out else None


def maven() -> str | None:
    out = run(["mvn", "-v"])
    return re.sub(r"\x1b\[[0-9;]*m", "", out.splitlines()[0]) if out else None


def kcat() -> str | None:
    """'kcat 1.7.1, librdkafka 2.0.2 (Debian package kcat 1.7.1-2)' from `kcat -V` and dpkg."""
    binary = shutil.which("kcat") or shutil.which("kafkacat")
    if not binary:
        return None
    out = run([binary, "-V"]) or ""
    m = re.search(r"Version (\S+) .*?librdkafka (\S+)", out)
    if not m:
        return out.splitlines()[0] if out else None
    text = f"kcat {m.group(1)}, librdkafka {m.group(2)}"
    deb = run(["dpkg-query", "-W", "-f", "${Version}", Path(binary).name])
    if deb:
        text += f" (Debian package {Path(binary).name} {deb})"
    return text


def reference_kafka() -> tuple[str, str | None]:
    """(the reference broker's Kafka version, the cached jars' directory or None)."""
    import kafka_broker
    libs = kafka_broker.libs_dir()
    return kafka_broker.KAFKA_VERSION, (str(libs) if (libs / f"kafka_2.13-{kafka_broker.KAFKA_VERSION}.jar").exists()
                                        else None)


def sluice_commit() -> str:
    head = run(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    if not head:
        return "unknown (not a git checkout)"
    dirty = run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
    return head + (" (work tree with uncommitted changes)" if dirty else "")


# ---------------------------------------------------------------------------- the table

def rows() -> list[tuple[str, str, str, str]]:
    """(component, pinned version, where the pin is, installed here now) for every client, tool and broker."""
    out = []
    pins = python_pins()
    installed = python_installed(pins)
    out.append(("Python", "—", "—", sys.version.split()[0] + f" (`{shown(sys.executable)}`)"))
    for name in pins:  # file order: clients, codecs, pytest, dependencies
        have = installed[name] or "not installed"
        if name == "confluent-kafka" and installed[name]:
            lib = librdkafka_of_confluent()
            have += f" (bundled librdkafka {lib})" if lib else ""
        out.append((name, pins[name], f"`{rel(REQUIREMENTS)}`", have))

    node = run(["node", "--version"])
    out.append(("Node.js", "—", "—", node or "not installed"))
    spec, locked = kafkajs_pinned()
    pinned = spec if locked in (None, spec) else f"{spec} (lock file: {locked})"
    out.append(("kafkajs", pinned, f"`{rel(NODE_DIR / 'package.json')}`, `package-lock.json`",
                kafkajs_installed() or "not installed (`npm ci` in tests/clients/node)"))

    go_dir_v, toolchain, mods = go_mod()
    built = go_binary_modules()
    pinned_go = f"go {go_dir_v} (minimum)" + (f", toolchain {toolchain}" if toolchain else "")
    out.append(("Go toolchain", pinned_go, f"`{rel(GO_DIR / 'go.mod')}`", go_toolchain() or "not installed"))
    for mod, label in GO_CLIENTS.items():
        have = (built or {}).get(mod) or ("not built (`go build` in tests/clients/go)" if built is None
                                          else "not in the binary")
        out.append((f"{label} (`{mod}`)", mods.get(mod, "?"), f"`{rel(GO_DIR / 'go.mod')}`, `go.sum`",
                    f"{have} (in `{rel(GO_BIN)}`)" if built else have))

    out.append(("Java runtime", "—", "—", java_runtime() or "not installed"))
    out.append(("Maven", "—", "—", maven() or "not installed"))
    out.append(("Java kafka-clients", pom_kafka_version(JAVA_POM), f"`{rel(JAVA_POM)}`",
                jar_version(harness.JAVA_LIB, "kafka-clients") or "not built (`mvn package` in tests/clients/java)"))
    out.append(("Java kafka-streams (`test_streams.py`)", pom_kafka_version(JAVA_POM), f"`{rel(JAVA_POM)}`",
                jar_version(harness.JAVA_LIB, "kafka-streams") or "not built (`mvn package` in tests/clients/java)"))
    import kafka_cli
    tools = jar_version(kafka_cli.libs_dir(), "kafka-tools")
    out.append(("Kafka CLI tools (kafka-tools, kafka_2.13)", pom_kafka_version(TOOLS_POM), f"`{rel(TOOLS_POM)}`",
                f"{tools} (jars in `{shown(kafka_cli.libs_dir())}`)" if tools else "not fetched"))
    import connect_worker
    worker = jar_version(connect_worker.cache_dir() / "libs", "connect-runtime")
    out.append(("Kafka Connect worker (connect-runtime, `test_connect.py`)", pom_kafka_version(connect_worker.POM),
                f"`{rel(connect_worker.POM)}`",
                f"{worker} (jars in `{shown(connect_worker.cache_dir() / 'libs')}`)" if worker else "not fetched"))
    files = jar_version(connect_worker.cache_dir() / "plugins" / "connect-file", "connect-file")
    out.append(("Kafka Connect FileStream connectors (connect-file, a plugin)", connect_worker.file_connectors_version(),
                f"`{rel(connect_worker.FILE_PLUGIN_POM)}`", files or "not fetched"))
    import mirror
    mm2 = jar_version(mirror.libs_dir(), "connect-mirror")
    out.append(("MirrorMaker 2 (connect-mirror; `test_mirrormaker.py`)", mirror.mirror_version(), f"`{rel(mirror.POM)}`",
                f"{mm2} (jars in `{shown(mirror.libs_dir())}`)" if mm2 else "not fetched"))
    out.append(("kcat", "not pinned: Debian's `kcat` package", "`tests/run` (apt-get install kcat)",
                kcat() or "not installed"))
    kv, libs = reference_kafka()
    out.append(("Reference broker: Apache Kafka (`SLUICE_TARGET=kafka`)", kv,
                "`tests/clients/kafka_broker.py` (`KAFKA_VERSION`, Maven Central jars)",
                f"{kv} (jars in `{shown(libs)}`)" if libs else "not fetched"))
    return out


def markdown_table() -> list[str]:
    lines = ["| Component | Pinned | Pin in | Installed |", "|---|---|---|---|"]
    lines += [f"| {c} | {p} | {w} | {i} |" for c, p, w, i in rows()]
    return lines


if __name__ == "__main__":
    print("\n".join(markdown_table()))
    print(f"\nSluice commit: {sluice_commit()}")
