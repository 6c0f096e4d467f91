"""The local Sluice cluster of config/cluster (3 controllers + 3 brokers on 127.0.0.1) for
test_cluster.py: start and stop it with config/cluster/start and config/cluster/stop, kill -9 and
restart one process, read the processes' logs (the active controller, elections, fencing).

Processes (config/cluster/<name>.toml):
    controller-1/2/3   node.id 1/2/3, CONTROLLER://127.0.0.1:19093/19094/19095
    broker-1/2/3       node.id 4/5/6, PLAINTEXT://127.0.0.1:19192/19292/19392

`start` runs each as `sluice --config config/cluster/NAME.toml --override log.dirs=DIR/NAME` with
its log in DIR/NAME.log and its pid in DIR/NAME.pid. A restart here runs the same command line,
appends to the same log (after a marker line) and rewrites the pid file, so `stop` still finds it.

Log lines read here (tracing's fmt layer, no ANSI colours when stderr is a file; stripped anyway):
    quorum leader elected: this node leads term N  node_id=.. term=.. index_first=.. epoch_ms=..
    active controller: node X in term N  node_id=.. term=.. epoch_ms=..
    quorum role changed  node_id=.. term=.. leader_id=.. role=..
    broker fenced: its session expired  broker_id=..
    registered with the controller / broker unfenced  broker_id=..
    sluice ready: node N (roles) ...
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import harness

# SLUICE_CLUSTER_DIR: a copy of config/cluster (files and scripts; its directory must be named
# `cluster`) with other ports, to run beside a cluster already using the files' ports.
CLUSTER_DIR = Path(os.environ.get("SLUICE_CLUSTER_DIR") or harness.REPO / "config" / "cluster")
START = CLUSTER_DIR / "start"
STOP = CLUSTER_DIR / "stop"

CONTROLLERS = ("controller-1", "controller-2", "controller-3")
BROKERS = ("broker-1", "broker-2", "broker-3")
ALL = CONTROLLERS + BROKERS

ANSI = re.compile(r"\x1b\[[0-9;]*m")
ELECTED = re.compile(r"quorum leader elected: this node leads term (\d+)")
ACTIVE = re.compile(r"active controller: node (\d+) in term (\d+)")
ROLE_CHANGED = re.compile(r"quorum role changed")
READY = "sluice ready"
FIELD = re.compile(r"\b([a-z_]+)=(\S+)")
RESTART_MARKER = "===== test harness: restart"


def strip(line: str) -> str:
    return ANSI.sub("", line)


def fields(line: str) -> dict:
    """key=value fields of a tracing line (values unquoted)."""
    return {k: v.strip('"') for k, v in FIELD.findall(strip(line))}


def flat_toml(path: Path) -> dict:
    """A config file's settings with Kafka's dotted names (TOML dotted keys nest; flatten them)."""
    out = {}

    def walk(prefix, d):
        for k, v in d.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                walk(name, v)
            else:
                out[name] = v

    walk("", tomllib.loads(Path(path).read_text()))
    return out


def setting(name: str, key: str, default=None):
    """A setting of config/cluster/<name>.toml, else of the embedded default config/sluice.toml."""
    for path in (CLUSTER_DIR / f"{name}.toml", harness.REPO / "config" / "sluice.toml"):
        s = flat_toml(path)
        if key in s:
            return s[key]
    return default


def alive(pid: int) -> bool:
    """Whether pid is a live process (a zombie is not: it has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2:][:1]
    return state not in ("Z", "X", "")


@dataclass
class Election:
    """One `quorum leader elected` line."""
    process: str
    node_id: int
    term: int
    epoch_ms: int
    line: str


@dataclass
class Activation:
    """One `active controller` line."""
    process: str
    node_id: int
    term: int
    epoch_ms: int
    line: str


class Cluster:
    def __init__(self, data_dir: Path, binary: Path = harness.SLUICE_BIN):
        self.data = Path(data_dir)
        self.data.mkdir(parents=True, exist_ok=True)
        self.binary = Path(binary)
        self.bootstrap = ""
        self.restarts: dict[str, int] = {n: 0 for n in ALL}
        self._children: dict[str, subprocess.Popen] = {}  # processes restarted by us
        self.killed: set[str] = set()  # killed by kill9 and not restarted since
        self.life_start: dict[str, int] = {n: 0 for n in ALL}  # log offset where the running process's lines start
        self.node_ids = {n: int(setting(n, "node.id")) for n in ALL}
        self.ports = {n: int(setting(n, "listeners").rsplit(":", 1)[1]) for n in ALL}
        self.names_by_id = {v: k for k, v in self.node_ids.items()}

    # ------------------------------------------------------------------ processes

    def log_path(self, name: str) -> Path:
        return self.data / f"{name}.log"

    def pid(self, name: str) -> int | None:
        try:
            return int((self.data / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def running(self, name: str) -> bool:
        pid = self.pid(name)
        return pid is not None and alive(pid)

    def busy_ports(self) -> list[int]:
        return [p for p in self.ports.values() if harness.port_open(p)]

    def start(self, timeout: float = 120) -> str:
        """config/cluster/start --data DIR --bin BIN; returns the bootstrap list it prints."""
        r = subprocess.run([str(START), "--data", str(self.data), "--bin", str(self.binary)],
                           capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise AssertionError(f"config/cluster/start exited {r.returncode}:\n{r.stderr[-6000:]}\n"
                                 f"{self.tails(30)}")
        self.bootstrap = r.stdout.strip().splitlines()[-1]
        return self.bootstrap

    def stop(self, timeout: float = 90) -> str:
        """config/cluster/stop, then SIGKILL to anything of ours still alive. Returns stop's stderr."""
        out = ""
        try:
            r = subprocess.run([str(STOP), "--data", str(self.data)], capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            out = r.stderr
        except subprocess.TimeoutExpired as e:
            out = f"config/cluster/stop timed out: {e.stderr}"
        for name in ALL:
            pid = self.pid(name)
            if pid is not None and alive(pid) and self._ours(pid, name):
                os.kill(pid, signal.SIGKILL)
        for p in self._children.values():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
        return out

    def _ours(self, pid: int, name: str) -> bool:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        return f"cluster/{name}.toml" in cmdline

    def kill9(self, name: str, timeout: float = 10) -> float:
        """SIGKILL one process and wait until it is gone; returns the wall time (unix ms) of the kill."""
        pid = self.pid(name)
        assert pid is not None and alive(pid) and self._ours(pid, name), f"{name} is not running (pid {pid})"
        t = time.time() * 1000
        os.kill(pid, signal.SIGKILL)
        self.killed.add(name)
        child = self._children.get(name)
        if child is not None and child.pid == pid:
            child.wait(timeout=timeout)
        deadline = time.time() + timeout
        while alive(pid):
            assert time.time() < deadline, f"{name} (pid {pid}) still alive {timeout}s after SIGKILL"
            time.sleep(0.01)
        return t

    def restart(self, name: str, overrides: tuple[str, ...] = ()) -> int:
        """Start one process again as config/cluster/start does (same command line and data dir),
        appending to its log; `overrides` ("key=value") are added as further --override. Returns
        the log offset where this run's output starts."""
        assert not self.running(name), f"{name} is still running"
        self.restarts[name] += 1
        log = self.log_path(name)
        with open(log, "a") as f:
            f.write(f"{RESTART_MARKER} #{self.restarts[name]} at epoch_ms={int(time.time() * 1000)} =====\n")
        offset = log.stat().st_size
        self.life_start[name] = offset
        (self.data / name).mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")
        env = dict(os.environ)
        env.setdefault("RUST_BACKTRACE", "1")
        p = subprocess.Popen([str(self.binary), "--config", str(CLUSTER_DIR / f"{name}.toml"),
                              "--override", f"log.dirs={self.data / name}",
                              *(a for o in overrides for a in ("--override", o))],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        out.close()
        self._children[name] = p
        self.killed.discard(name)
        (self.data / f"{name}.pid").write_text(f"{p.pid}\n")
        return offset

    # ------------------------------------------------------------------ logs

    def log_size(self, name: str) -> int:
        try:
            return self.log_path(name).stat().st_size
        except OSError:
            return 0

    def lines(self, name: str, since: int = 0) -> list[str]:
        try:
            with open(self.log_path(name), "rb") as f:
                f.seek(since)
                data = f.read()
        except OSError:
            return []
        return [strip(l) for l in data.decode(errors="replace").splitlines()]

    def wait_line(self, name: str, pattern, since: int = 0, timeout: float = 30, what: str = "") -> str:
        """The first line of name's log after byte offset `since` matching pattern (regex or str)."""
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.time() + timeout
        while True:
            for line in self.lines(name, since):
                if rx.search(line):
                    return line
            if time.time() >= deadline:
                raise AssertionError(f"{name}: no line matching {rx.pattern!r} {what} within {timeout}s; "
                                     f"log tail:\n{harness.tail(self.log_path(name), 25)}")
            time.sleep(0.02)

    def elections(self, names=CONTROLLERS, since: dict | None = None) -> list[Election]:
        out = []
        for name in names:
            for line in self.lines(name, (since or {}).get(name, 0)):
                m = ELECTED.search(line)
                if m:
                    f = fields(line)
                    out.append(Election(name, int(f.get("node_id", self.node_ids[name])), int(m.group(1)),
                                        int(f.get("epoch_ms", 0)), line))
        return out

    def activations(self, names=CONTROLLERS, since: dict | None = None) -> list[Activation]:
        out = []
        for name in names:
            for line in self.lines(name, (since or {}).get(name, 0)):
                m = ACTIVE.search(line)
                if m:
                    f = fields(line)
                    out.append(Activation(name, int(m.group(1)), int(m.group(2)), int(f.get("epoch_ms", 0)), line))
        return out

    def active_controller(self, timeout: float = 30) -> Activation:
        """The active controller now: the running controller with the highest-term `active controller`
        line, provided no controller has logged an election for a later term (that one is taking over)."""
        deadline = time.time() + timeout
        while True:
            # Only the running processes' lines from their current life count.
            live = [n for n in CONTROLLERS if self.running(n)]
            acts = self.activations(live, self.life_start)
            terms = [e.term for e in self.elections(live, self.life_start)]
            if acts:
                best = max(acts, key=lambda a: a.term)
                if not terms or best.term >= max(terms):
                    return best
            if time.time() >= deadline:
                raise AssertionError(f"no active controller within {timeout}s; activations {acts}, election terms "
                                     f"{terms}\n{self.tails(15, CONTROLLERS)}")
            time.sleep(0.05)

    def wait_rejoined(self, name: str, since: int, leader_id: int, timeout: float = 30) -> float:
        """After a controller's restart: its ready line, then a role line naming leader_id as leader
        (it heard from the leader). Returns seconds waited."""
        t0 = time.time()
        self.wait_line(name, READY, since, timeout, "(ready after restart)")
        rx = re.compile(rf"(quorum role changed.*leader_id={leader_id}\b)|(active controller: node)|"
                        rf"(quorum leader elected)")
        self.wait_line(name, rx, since, max(1.0, timeout - (time.time() - t0)),
                       f"(following leader {leader_id} after restart)")
        return time.time() - t0

    def grep(self, needle: str, names=ALL) -> dict:
        """name -> the log lines containing needle (first 10 per process), for names that have any."""
        out = {}
        for name in names:
            hits = [l for l in self.lines(name) if needle in l]
            if hits:
                out[name] = hits[:10]
        return out

    def tails(self, n: int = 20, names=ALL) -> str:
        return "\n".join(f"---- {self.log_path(name)} (last {n} lines) ----\n{harness.tail(self.log_path(name), n)}"
                         for name in names)

    # ------------------------------------------------------------------ metadata through kcat

    def broker_address(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def kcat_metadata(self, via: str, topic: str | None = None, timeout: float = 15) -> dict:
        """`kcat -L -J` through one broker only (via: broker name or host:port)."""
        addr = self.broker_address(via) if via in self.ports else via
        cmd = [harness.kcat_bin(), "-L", "-J", "-b", addr, "-m", "5", "-X", "topic.metadata.refresh.interval.ms=-1"]
        if topic:
            cmd += ["-t", topic]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(f"kcat -L via {addr} exited {r.returncode}: {r.stderr[-2000:]}")
        return json.loads(r.stdout)


def broker_ids(md: dict) -> list[int]:
    return sorted(b["id"] for b in md.get("brokers", []))


def partition_leaders(md: dict, topic: str) -> dict:
    """partition -> leader id (-1: none) of topic in kcat -L -J output; {} if the topic is missing."""
    for t in md.get("topics", []):
        if t.get("topic") == topic and t.get("partitions"):
            return {p["partition"]: p.get("leader", -1) for p in t.get("partitions", [])}
    return {}


def topic_names(md: dict) -> set:
    return {t["topic"] for t in md.get("topics", []) if not t.get("error")}
