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
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; owned: {state}"
                         f"{stacks_of(consumers)}")


def stacks_of(consumers) -> str:
    """Each live Python member's threads' stacks (group_consumer.py writes them to its log on
    SIGUSR1) and its log's last lines: where a member that stopped answering is stuck."""
    live = [c for c in consumers if c.proc is not None and c.proc.poll() is None
            and "group_consumer.py" in " ".join(c.cmd)]
    if not live:
        return ""
    for c in live:
        c.proc.send_signal(signal.SIGUSR1)
    time.sleep(1.0)
    return "".join(f"\n--- {c.name} (pid {c.proc.pid}), last lines of its log:\n{harness.tail(c.log_path, 120)}"
                   for c in live)


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


# ---------------------------------------------------------------------------- other clients' members
# Members from the Go CLI (go/, `franz-group` / `sarama-group`) and the kafkajs tool (node/,
# `group-consume`), writing the same events file as above. Build the Go CLI first (test_go.build_go_tool).

GO_BIN = harness.GO_TOOL_OVERRIDE or HERE / "go" / "bin" / "sluice-go-clients"  # SLUICE_GO_TOOL
KAFKAJS_TOOL = harness.NODE_DIR / "kafkajs_tool.js"  # SLUICE_NODE_DIR


def go_consumer(name, workdir, bootstrap, topic, group, client: str, debug: bool = False) -> GroupConsumer:
    """client: franz | sarama."""
    cmd = [str(GO_BIN), f"{client}-group", "--bootstrap", bootstrap, "--topic", topic, "--group", group]
    if debug:
        cmd.append("--debug")
    return GroupConsumer(name, workdir, cmd)


def node_consumer(name, workdir, bootstrap, topic, group, debug: bool = False) -> GroupConsumer:
    cmd = ["node", str(KAFKAJS_TOOL), "group-consume", "--bootstrap", bootstrap, "--topic", topic, "--group", group]
    if debug:
        cmd += ["--debug", "true"]
    return GroupConsumer(name, workdir, cmd)


def graceful_leave_scenario(broker, workdir: Path, make_consumer, topic: str, partitions: int = 12,
                            members: int = 3, count: int = 6000, label: str = "") -> dict:
    """The client suites' group scenario, for members that commit synchronously after processing:

    `members` members (make_consumer(name) -> GroupConsumer, not started) of one group over a
    `partitions`-partition topic get an even split; `count` keyed messages (Java producer) are all
    consumed, none twice; then `count` more are produced while one member stops (LeaveGroup) and the
    others take over its partitions: every message consumed, none twice, no partition owned by two
    members at once. Finally all stop, `count // 6` more are produced, and a later member of the same
    group reads exactly those (it resumes at the committed offsets). Returns timings."""
    label = label or topic
    harness.java_create_topic(broker.bootstrap, topic, partitions, logdir=workdir)
    consumers = [make_consumer(f"{label}-m{i}").start() for i in range(members)]
    later = None
    timings = {}
    try:
        t0 = time.time()
        groups_each = partitions // members if partitions % members == 0 else None
        wait_until(balanced(consumers, partitions, each=groups_each), 90,
                   f"{members} members to split {partitions} partitions evenly", consumers)
        timings["first_balance_s"] = round(time.time() - t0, 1)
        r = harness.java(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(count),
                          "--key-prefix", "a", "--acks", "all"], logdir=workdir, quick=True)
        assert f"acked={count} failed=0" in r.stdout, r.stdout
        keys_a = {f"a{i}" for i in range(count)}
        wait_until(lambda: keys_a <= consumed_keys(consumers), 90, "every message consumed", consumers)
        assert_all_consumed_once(consumers, keys_a)
        assert_exclusive_ownership(consumers)

        # A second batch, produced while one member leaves the group.
        producer = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-cp", f"{harness.JAVA_JAR}:{harness.JAVA_LIB}/*",
             "sluice.clients.Main", "produce", "--bootstrap", broker.bootstrap, "--topic", topic,
             "--count", str(count), "--key-prefix", "b", "--acks", "all", "--max-rate", str(max(count // 4, 1))],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(1.5)
        leaver, survivors = consumers[0], consumers[1:]
        leaver_partitions = leaver.events().owned()
        t_leave = time.time()
        assert leaver.stop() == 0, harness.tail(leaver.log_path)
        timings["leave_s"] = round(time.time() - t_leave, 1)
        left_ms = leaver.end_ms
        wait_until(balanced(survivors, partitions), 60, f"the other members to own all {partitions} partitions",
                   survivors)
        took_over = [ts for c in survivors for ts, kind, ps in c.events().ownership
                     if kind == "ASSIGN" and ps & leaver_partitions]
        timings["takeover_ms"] = max(took_over) - left_ms if took_over else None
        out, _ = producer.communicate(timeout=120)
        assert f"acked={count} failed=0" in out, out
        keys_ab = keys_a | {f"b{i}" for i in range(count)}
        wait_until(lambda: keys_ab <= consumed_keys(consumers), 90, "every message consumed after the leave",
                   survivors)
        time.sleep(1)  # anything consumed twice would show up now
        for c in survivors:
            assert c.stop() == 0, harness.tail(c.log_path)
        dupes = assert_all_consumed_once(consumers, keys_ab)
        assert dupes == 0
        assert_exclusive_ownership(consumers)
        failures = {c.name: c.events().commit_failures for c in consumers}
        timings["commit_failures"] = failures

        # A later member resumes at the committed offsets.
        n_c = max(count // 6, 1)
        r = harness.java(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(n_c),
                          "--key-prefix", "c", "--acks", "all"], logdir=workdir, quick=True)
        assert f"acked={n_c} failed=0" in r.stdout, r.stdout
        keys_c = {f"c{i}" for i in range(n_c)}
        later = make_consumer(f"{label}-later").start()
        wait_until(lambda: keys_c <= consumed_keys([later]), 90, "the later member to read the new messages",
                   [later])
        time.sleep(1.5)
        assert later.stop() == 0, harness.tail(later.log_path)
        recs = later.events().records
        again = sorted({k for _, _, k in recs} - keys_c)
        assert not again, f"the later member read {len(again)} messages committed before, e.g. {again[:5]}"
        assert len(recs) == n_c, f"the later member read {len(recs)} records for {n_c} new messages"
        assert later.events().owned() == set(), "the later member's partitions were revoked when it left"
        return timings
    finally:
        for c in consumers + ([later] if later else []):
            if c.alive():
                c.proc.kill()
                c.proc.wait()


def kill_one_of_three_scenario(broker, make_consumer, topic: str, count: int, rate: int,
                               session_timeout_ms: int, label: str) -> None:
    """Three members (`make_consumer(name)` builds each, not started) over a 12-partition topic get
    4 partitions each; while `count` messages are produced at `rate`/s, one member is killed with
    -9. The others must own all 12 partitions once its session ends (the time is printed), every
    message is consumed, none twice except the victim's uncommitted ones, and no partition is owned
    by two members at once."""
    consumers = [make_consumer(f"{label}{i}").start() for i in range(3)]
    try:
        wait_until(balanced(consumers, 12, each=4), 90, "4 partitions each", consumers)
        producer = subprocess.Popen(
            ["java", "-cp", f"{harness.JAVA_JAR}:{harness.JAVA_LIB}/*", "sluice.clients.Main", "produce",
             "--bootstrap", broker.bootstrap, "--topic", topic, "--count", str(count), "--key-prefix", "k",
             "--acks", "all", "--max-rate", str(rate)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        victim = consumers[0]
        # The victim dies while consuming: wait for its first records (a loaded machine can take
        # seconds to start the producer's JVM), then let it read for a moment more.
        wait_until(lambda: bool(victim.events().records), 90, "the victim to consume", [victim])
        time.sleep(1)
        victim_partitions = victim.events().owned()
        killed_at = victim.kill9()
        survivors = consumers[1:]
        wait_until(balanced(survivors, 12), session_timeout_ms / 1000 + 30,
                   "the survivors to own all 12 partitions", survivors)
        took_over_ms = max(ts for c in survivors for ts, kind, ps in c.events().ownership
                           if kind == "ASSIGN" and ps & victim_partitions) - killed_at
        print(f"{label}: survivors took the victim's partitions {took_over_ms} ms after the kill "
              f"(session timeout {session_timeout_ms} ms)")
        # Not before the coordinator could know (the session), and then within one rebalance round
        # (heartbeats every 500 ms; a client that polls slowly may need a few seconds more).
        assert session_timeout_ms - 1000 <= took_over_ms <= session_timeout_ms + 10_000, took_over_ms
        out, _ = producer.communicate(timeout=180)
        assert f"acked={count} failed=0" in out, out
        keys = {f"k{i}" for i in range(count)}
        wait_until(lambda: keys <= consumed_keys(consumers), 90, "every message consumed", survivors)
        for c in survivors:
            assert c.stop() == 0, harness.tail(c.log_path)
        dupes = assert_all_consumed_once(consumers, keys, killed=[victim])
        print(f"{label}: {dupes} messages consumed twice (in flight at the kill)")
        assert_exclusive_ownership(consumers)
    finally:
        for c in consumers:
            if c.alive():
                c.proc.kill()
