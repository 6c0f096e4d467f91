"""Consumer-group helpers of the client suite: consumer processes that log what they own and
what they consume to an events file, and the checks made on those files.

Events file lines (written by the Java tool's `group-consume` and by group_consumer.py):
    ASSIGN <ts_ms> p,p,...     partitions added      (REVOKE / LOST: removed)
    REC <partition> <offset> <key>
    COMMITTED <ts_ms> p=o,p=o,...                     (after a successful commit)
    COMMIT_FAILED <ts_ms> <what>
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent


@dataclass
class Events:
    """A consumer's events file, parsed (a torn last line from kill -9 is ignored)."""
    ownership: list = field(default_factory=list)  # (ts, kind, set)
    records: list = field(default_factory=list)  # (partition, offset, key)
    commits: dict = field(default_factory=dict)  # partition -> last committed offset
    commit_failures: int = 0

    @staticmethod
    def read(path: Path) -> "Events":
        e = Events()
        if not path.exists():
            return e
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(" ")
            try:
                if parts[0] in ("ASSIGN", "REVOKE", "LOST") and len(parts) == 3:
                    ps = set() if parts[2] == "-" else {int(p) for p in parts[2].split(",")}
                    e.ownership.append((int(parts[1]), parts[0], ps))
                elif parts[0] == "REC" and len(parts) == 4:
                    e.records.append((int(parts[1]), int(parts[2]), parts[3]))
                elif parts[0] == "COMMITTED" and len(parts) == 3:
                    for item in filter(None, parts[2].split(",")):
                        p, o = item.split("=")
                        e.commits[int(p)] = max(e.commits.get(int(p), 0), int(o))
                elif parts[0] == "COMMIT_FAILED":
                    e.commit_failures += 1
            except ValueError:
                continue  # torn line
        return e

    def owned(self) -> set:
        """Partitions owned after the last event."""
        s = set()
        for _, kind, ps in self.ownership:
            s = s | ps if kind == "ASSIGN" else s - ps
        return s

    def intervals(self, end_ms: int) -> dict:
        """partition -> [(from_ms, to_ms)] of ownership, closing open ones at end_ms."""
        out = defaultdict(list)
        since = {}
        for ts, kind, ps in self.ownership:
            for p in ps:
                if kind == "ASSIGN":
                    since.setdefault(p, ts)
                elif p in since:
                    out[p].append((since.pop(p), ts))
        for p, ts in since.items():
            out[p].append((ts, end_ms))
        return out


class GroupConsumer:
    """One consumer process of a group."""

    def __init__(self, name: str, workdir: Path, cmd: list[str]):
        self.name = name
        self.events_path = workdir / f"{name}.events"
        self.stop_path = workdir / f"{name}.stop"
        self.log_path = workdir / f"{name}.log"
        self.cmd = cmd + ["--events", str(self.events_path), "--stop-file", str(self.stop_path)]
        self.proc = None
        self.end_ms = None

    def start(self) -> "GroupConsumer":
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        return self

    def events(self) -> Events:
        return Events.read(self.events_path)

    def kill9(self) -> int:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.end_ms = int(time.time() * 1000)
        return self.end_ms

    def stop(self, timeout: float = 60) -> int:
        self.stop_path.touch()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"{self.name} did not stop; log:\n{harness.tail(self.log_path)}")
        self.end_ms = int(time.time() * 1000)
        return rc

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def java_consumer(name, workdir, bootstrap, topic, group, **opts) -> GroupConsumer:
    cmd = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
           "-cp", f"{harness.JAVA_JAR}:{harness.JAVA_LIB}/*", "sluice.clients.Main", "group-consume",
           "--bootstrap", bootstrap, "--topic", topic, "--group", group]
    for k, v in opts.items():
        cmd += ["--" + k.replace("_", "-"), str(v)]
    return GroupConsumer(name, workdir, cmd)


def python_consumer(name, workdir, bootstrap, topic, group, client: str, **opts) -> GroupConsumer:
    cmd = [sys.executable, str(HERE / "group_consumer.py"), "--client", client, "--bootstrap", bootstrap,
           "--topic", topic, "--group", group]
    for k, v in opts.items():
        cmd += ["--" + k.replace("_", "-"), str(v)]
    return GroupConsumer(name, workdir, cmd)


def wait_until(predicate, timeout: float, what: str, consumers=()):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        for c in consumers:
            if c.proc is not None and c.end_ms is None and c.proc.poll() is not None:
                raise AssertionError(f"{c.name} exited ({c.proc.returncode}) while waiting for {what}; "
                                     f"log:\n{harness.tail(c.log_path)}")
        time.sleep(0.1)
    state = {c.name: sorted(c.events().owned()) for c in consumers}
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; owned: {state}")


def owned_by(consumers) -> dict:
    return {c.name: c.events().owned() for c in consumers if c.end_ms is None}


def balanced(consumers, partitions: int, each: int | None = None):
    def check():
        owned = owned_by(consumers)
        union = set().union(*owned.values()) if owned else set()
        if union != set(range(partitions)) or sum(len(s) for s in owned.values()) != partitions:
            return False
        return each is None or all(len(s) == each for s in owned.values())
    return check


def assert_exclusive_ownership(consumers):
    """No partition owned by two consumers at the same time (intervals from the events, each
    consumer's ownership ending when it was killed or stopped)."""
    by_partition = defaultdict(list)
    now = int(time.time() * 1000)
    for c in consumers:
        for p, spans in c.events().intervals(c.end_ms or now).items():
            for a, b in spans:
                by_partition[p].append((a, b, c.name))
    for p, spans in by_partition.items():
        spans.sort()
        for (a1, b1, n1), (a2, b2, n2) in zip(spans, spans[1:]):
            assert a2 >= b1 or n1 == n2, f"partition {p} owned by {n1} [{a1},{b1}) and {n2} [{a2},{b2}) at once"


def assert_all_consumed_once(consumers, keys: set, killed=()):
    """Every key consumed; a key consumed twice only if a killed consumer processed it after its
    last successful commit of that partition (in flight at the kill)."""
    counts = Counter()
    in_flight = set()
    for c in consumers:
        ev = c.events()
        for p, o, k in ev.records:
            counts[k] += 1
            if c in killed and o >= ev.commits.get(p, 0):
                in_flight.add(k)
    missing = keys - set(counts)
    assert not missing, f"{len(missing)} keys never consumed, e.g. {sorted(missing)[:5]}"
    dupes = {k for k, n in counts.items() if n > 1}
    unexplained = dupes - in_flight
    assert not unexplained, (f"{len(unexplained)} keys consumed twice that were not in flight at a kill, "
                             f"e.g. {sorted(unexplained)[:5]}")
    return len(dupes)


def consumed_keys(consumers) -> set:
    keys = set()
    for c in consumers:
        keys.update(k for _, _, k in c.events().records)
    return keys
