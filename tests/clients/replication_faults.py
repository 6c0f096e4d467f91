"""Replication fault test: a 3-controller + 3-broker cluster (Sluice's config/cluster, or the same
topology of Apache Kafka 4.4), a topic with RF=3 and min.insync.replicas=2, two idempotent
acks=all producers (the Java tool and confluent-kafka) and a consumer, while a seeded schedule of
faults runs; then a checker reads everything back after healing.

    python3 tests/clients/replication_faults.py --rounds 100 --seed 7 --target sluice --out DIR
    python3 tests/clients/replication_faults.py --rounds 10 --quick --target kafka --out DIR

Faults, one per round, in blocks of four where each kind comes once in a seeded order:
    kill-broker       kill -9 of a broker (half the time the leader of a random partition), restart
    stop-broker       SIGSTOP of a broker, SIGCONT
    partition-broker  one broker cut off from the other brokers and the controllers, its clients
                      still reaching it (iptables DROP in OUTPUT, matched by the cgroup v2 each
                      cluster process is started in: loopback only, no proxies)
    kill-controller   kill -9 of the active controller (from DescribeQuorum), restart
Each lasts 5-15 s (2-4 s with --quick). After each, the round waits until the cluster is whole
again (3 brokers registered, every partition led, ISR = replicas) before the next.

The checker (after the producers stopped and the cluster healed):
    acked         every acknowledged (partition, offset, key) is in the final log at that offset,
                  with its value (read back from the beginning through the leaders)
    exactly-once  no key is in the log twice (both producers are idempotent)
    consumed      every record the consumer saw during the faults is still there: same offset,
                  same key, same value (CRC-32)
    replicas      the segment files (`<log dir>/<topic>-<p>/*.log`) of every replica hold the
                  same record batches, byte for byte, below the high watermark (ListOffsets latest
                  on the leader), and cover it; one replica's batches decoded give the offsets and
                  keys read back through the client
    self-check    the same checks on this run's data with an acknowledged record taken out of the
                  read-back, and with a byte of a replica's first batch flipped (in a copy): each
                  must be reported
A failure prints the seed and the command that replays the schedule.

Runs as root (cgroups, iptables). Outside a network namespace it re-runs itself inside a fresh one
(`ip netns add`), so its fixed ports and firewall rules touch nothing else on the host.
Results: DIR/results.json and DIR/results.md; every process's log in DIR.
Exit codes: 0 passed, 1 a check failed, 2 harness error, 4 skipped (e.g. RF=3 refused).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

TOPIC = "faults"
PARTITIONS = 6
VALUE_PAD = 100
KINDS = ("kill-broker", "stop-broker", "partition-broker", "kill-controller")
CHAIN = "SLUICE_FAULTS"
EXIT_PASSED, EXIT_FAILED, EXIT_ERROR, EXIT_SKIPPED = 0, 1, 2, 4


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------- network namespace

def in_named_netns() -> bool:
    """Whether this process runs in a network namespace of `ip netns` (its own, for the fixed
    ports and the firewall rules). /proc/1/ns/net is not always readable (a VM's init may hide
    it), so ask `ip netns identify` instead of comparing with init's namespace."""
    r = subprocess.run(["ip", "netns", "identify", str(os.getpid())], capture_output=True, text=True)
    return r.returncode == 0 and bool(r.stdout.strip())


def reexec_in_netns(argv: list[str]) -> int:
    """Runs this script again inside a fresh network namespace (deleted afterwards)."""
    name = f"sluice-faults-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
        return subprocess.run(["ip", "netns", "exec", name, sys.executable, str(Path(__file__).resolve()),
                               *argv, "--in-netns"]).returncode
    finally:
        subprocess.run(["ip", "netns", "delete", name])


# ---------------------------------------------------------------------------- cgroups + iptables

class Firewall:
    """Each cluster process starts in its own cgroup v2 (joined before exec, so every socket it
    opens carries it); a partition is a set of DROP rules in OUTPUT matching the cgroup of the
    sender and the destination port. Loopback traffic passes OUTPUT, so this cuts connections
    between processes on 127.0.0.1 while leaving every other process (the clients) untouched."""

    def __init__(self, workdir: Path):
        self.error = ""
        self.root = None
        self.base = ""
        try:
            self.root = self._cgroup2_root(workdir)
            self.base = f"sluice-faults-{os.getpid()}"
            (self.root / self.base).mkdir(exist_ok=True)
        except (OSError, subprocess.CalledProcessError) as e:
            self.error = f"no writable cgroup v2 hierarchy: {e}"
            return
        if not shutil.which("iptables"):
            self.error = "iptables is not installed"
            return
        for cmd in (["iptables", "-N", CHAIN], ["iptables", "-I", "OUTPUT", "-j", CHAIN]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0 and "exists" not in r.stderr:
                self.error = f"{' '.join(cmd)}: {r.stderr.strip()}"
                return
        # Is the cgroup match there? Add and remove one rule.
        probe = ["-m", "cgroup", "--path", self.base, "-p", "tcp", "--dport", "9", "-j", "DROP"]
        r = subprocess.run(["iptables", "-A", CHAIN, *probe], capture_output=True, text=True)
        if r.returncode != 0:
            self.error = f"iptables cgroup match unavailable: {r.stderr.strip()}"
            return
        subprocess.run(["iptables", "-D", CHAIN, *probe], capture_output=True)

    @staticmethod
    def _cgroup2_root(workdir: Path) -> Path:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                return Path(parts[1])
        # `ip netns exec` mounts a fresh /sys without cgroups: mount the v2 hierarchy privately
        # (the namespace's own mount table; nothing outside sees it).
        mnt = workdir / "cgroup2"
        mnt.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "cgroup2", "none", str(mnt)], check=True, capture_output=True)
        return mnt

    @property
    def ok(self) -> bool:
        return not self.error

    def cgroup(self, name: str) -> str:
        return f"{self.base}/{name}"

    def preexec(self, name: str):
        """A Popen preexec_fn: the child joins its cgroup before exec."""
        if not self.ok:
            return None
        d = self.root / self.base / name
        d.mkdir(exist_ok=True)
        procs = str(d / "cgroup.procs")

        def join():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        return join

    def isolate(self, name: str, others: list[str], ports_of: dict[str, int], cut_ports: list[int]) -> None:
        """Cut `name` off: its packets to cut_ports (the controllers and the other brokers) and the
        other brokers' packets to its port are dropped."""
        for port in cut_ports:
            self._rule("-A", self.cgroup(name), port)
        for other in others:
            self._rule("-A", self.cgroup(other), ports_of[name])

    def probe(self, cgroup_name: str | None, port: int, timeout: float = 1.0) -> bool:
        """Whether a TCP connect to 127.0.0.1:port succeeds from a process in cgroup_name's
        cgroup (None: this one's), to show a partition cuts what it should and nothing else."""
        code = ("import socket,sys\n"
                f"s=socket.socket(); s.settimeout({timeout})\n"
                f"try:\n s.connect(('127.0.0.1',{port})); sys.exit(0)\n"
                "except OSError:\n sys.exit(1)\n")
        r = subprocess.run([sys.executable, "-c", code],
                           preexec_fn=self.preexec(cgroup_name) if cgroup_name else None)
        return r.returncode == 0

    def heal(self) -> None:
        subprocess.run(["iptables", "-F", CHAIN], check=True)

    def listing(self) -> str:
        return subprocess.run(["iptables", "-L", "OUTPUT", "-v", "-n"], capture_output=True, text=True).stdout + \
            subprocess.run(["iptables", "-L", CHAIN, "-v", "-n"], capture_output=True, text=True).stdout

    def _rule(self, op: str, cgroup: str, port: int) -> None:
        subprocess.run(["iptables", op, CHAIN, "-m", "cgroup", "--path", cgroup, "-p", "tcp",
                        "--dport", str(port), "-j", "DROP"], check=True)

    def close(self) -> None:
        if self.ok:
            subprocess.run(["iptables", "-F", CHAIN], capture_output=True)
            subprocess.run(["iptables", "-D", "OUTPUT", "-j", CHAIN], capture_output=True)
            subprocess.run(["iptables", "-X", CHAIN], capture_output=True)
        if self.root is not None and self.base:
            base = self.root / self.base
            for d in sorted(base.glob("*"), reverse=True):
                try:
                    d.rmdir()
                except OSError:
                    pass
            try:
                base.rmdir()
            except OSError:
                pass


# ---------------------------------------------------------------------------- cluster processes

@dataclass
class Proc:
    name: str
    node_id: int
    role: str  # "controller" | "broker"
    port: int
    cmd: list[str]
    log: Path
    data: Path
    popen: subprocess.Popen | None = None
    stopped: bool = False  # SIGSTOPped
    starts: int = 0
    log_offset: int = 0  # where this life's output starts


class ClusterBase:
    target = ""

    def __init__(self, workdir: Path, fw: Firewall):
        self.dir = workdir
        self.fw = fw
        self.procs: dict[str, Proc] = {}

    # -- lifecycle
    def launch(self, name: str) -> None:
        p = self.procs[name]
        p.starts += 1
        with open(p.log, "ab") as f:
            f.write(f"===== replication_faults: start #{p.starts} at epoch_ms={int(time.time() * 1000)} =====\n".encode())
            p.log_offset = f.tell()
            env = dict(os.environ, RUST_BACKTRACE="1")
            p.popen = subprocess.Popen(p.cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True, preexec_fn=self.fw.preexec(name))
        p.stopped = False

    def alive(self, name: str) -> bool:
        p = self.procs[name].popen
        return p is not None and p.poll() is None

    def kill9(self, name: str) -> None:
        p = self.procs[name]
        assert self.alive(name), f"{name} is not running"
        p.popen.send_signal(signal.SIGKILL)
        p.popen.wait(timeout=30)
        p.stopped = False

    def sigstop(self, name: str) -> None:
        self.procs[name].popen.send_signal(signal.SIGSTOP)
        self.procs[name].stopped = True

    def sigcont(self, name: str) -> None:
        self.procs[name].popen.send_signal(signal.SIGCONT)
        self.procs[name].stopped = False

    def restart(self, name: str) -> None:
        self.launch(name)
        self.wait_ready(name)

    def shutdown(self) -> dict:
        """SIGTERM to the brokers, then the controllers; SIGKILL after 60 s. name -> exit code."""
        codes = {}
        for group in (self.brokers(), self.controllers()):
            for n in group:
                if self.alive(n):
                    if self.procs[n].stopped:
                        self.sigcont(n)
                    self.procs[n].popen.send_signal(signal.SIGTERM)
            for n in group:
                p = self.procs[n].popen
                if p is None:
                    continue
                try:
                    codes[n] = p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    codes[n] = p.wait()
        return codes

    def controllers(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.role == "controller"]

    def brokers(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.role == "broker"]

    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.procs[n].port}" for n in self.brokers())

    def name_of(self, node_id: int) -> str | None:
        for n, p in self.procs.items():
            if p.node_id == node_id:
                return n
        return None

    def start(self) -> None:
        for n in self.controllers():
            self.launch(n)
        for n in self.brokers():
            self.launch(n)
        for n in self.controllers() + self.brokers():
            self.wait_ready(n)

    def wait_ready(self, name: str, timeout: float = 90) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.alive(name):
                raise RuntimeError(f"{name} exited ({self.procs[name].popen.poll()}); log tail:\n"
                                   f"{harness.tail(self.procs[name].log, 30)}")
            if self.ready(name):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} not ready within {timeout}s; log tail:\n{harness.tail(self.procs[name].log, 30)}")

    def ready(self, name: str) -> bool:
        raise NotImplementedError

    def partition_dir(self, broker: str, topic: str, partition: int) -> Path:
        return self.procs[broker].data / f"{topic}-{partition}"

    def active_controller(self) -> str | None:
        """The quorum leader, from DescribeQuorum (v0) sent to a live broker, which forwards it."""
        for b in self.brokers():
            if not self.alive(b) or self.procs[b].stopped:
                continue
            try:
                leader = describe_quorum_leader(self.procs[b].port)
            except (OSError, AssertionError, struct.error):
                continue
            if leader is not None and leader >= 0:
                return self.name_of(leader)
        return None


def describe_quorum_leader(port: int) -> int | None:
    """DescribeQuorum v0 for __cluster_metadata-0: the leader id (None on an error code)."""
    import wire
    part = struct.pack(">i", 0) + b"\x00"
    topic = wire.cstring("__cluster_metadata") + wire.carray([part]) + b"\x00"
    body = wire.carray([topic]) + b"\x00"
    r = wire.call(("127.0.0.1", port), 55, 0, body)
    if r.take("h") != 0:
        return None
    if r.uvarint() - 1 < 1:
        return None
    r.string()
    if r.uvarint() - 1 < 1:
        return None
    r.take("i")  # partition index
    if r.take("h") != 0:
        return None
    return r.take("i")


class SluiceCluster(ClusterBase):
    """config/cluster's six processes, each started as config/cluster/start starts it."""
    target = "sluice"

    def __init__(self, workdir: Path, fw: Firewall, binary: Path):
        super().__init__(workdir, fw)
        import cluster as cl
        self.cl = cl
        for name in cl.CONTROLLERS + cl.BROKERS:
            data = workdir / name
            data.mkdir(parents=True, exist_ok=True)
            self.procs[name] = Proc(
                name, int(cl.setting(name, "node.id")),
                "controller" if name.startswith("controller") else "broker",
                int(cl.setting(name, "listeners").rsplit(":", 1)[1]),
                [str(binary), "--config", str(cl.CLUSTER_DIR / f"{name}.toml"), "--override", f"log.dirs={data}"],
                workdir / f"{name}.log", data)

    def ready(self, name: str) -> bool:
        p = self.procs[name]
        with open(p.log, "rb") as f:
            f.seek(p.log_offset)
            return self.cl.READY.encode() in f.read()


KAFKA_CONTROLLER_PORTS = (29093, 29094, 29095)
KAFKA_BROKER_PORTS = (29192, 29292, 29392)


class KafkaCluster(ClusterBase):
    """Apache Kafka 4.4 in the same topology: controllers 1-3 (controller-only), brokers 4-6
    (broker-only), a static voter set, Kafka's defaults otherwise."""
    target = "kafka"

    def __init__(self, workdir: Path, fw: Firewall):
        super().__init__(workdir, fw)
        import kafka_broker
        libs = kafka_broker.ensure_kafka_libs()
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(KAFKA_CONTROLLER_PORTS))
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        }
        specs = [(f"controller-{i + 1}", i + 1, "controller", p) for i, p in enumerate(KAFKA_CONTROLLER_PORTS)]
        specs += [(f"broker-{i + 1}", i + 4, "broker", p) for i, p in enumerate(KAFKA_BROKER_PORTS)]
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        for name, node_id, role, port in specs:
            data = workdir / name
            s = dict(common, **{"process.roles": role, "node.id": node_id, "log.dirs": str(data)})
            if role == "controller":
                s["listeners"] = f"CONTROLLER://127.0.0.1:{port}"
                heap = "256m"
            else:
                s.update({
                    "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "broker.rack": f"r{node_id - 3}",
                    "group.initial.rebalance.delay.ms": 0,
                })
                heap = "512m"
            props = workdir / f"{name}.properties"
            props.write_text("".join(f"{k}={v}\n" for k, v in s.items()))
            java = ["java", f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-XX:TieredStopAtLevel=1",
                    "-Djava.awt.headless=true", "-cp", str(libs / "*")]
            self.procs[name] = Proc(name, node_id, role, port, java + ["kafka.Kafka", str(props)],
                                    workdir / f"{name}.log", data)
            self.procs[name].format_cmd = java[:1] + ["-Xmx256m", "-cp", str(libs / "*"), "kafka.tools.StorageTool",
                                                      "format", f"--cluster-id={self.cluster_id}", "-c", str(props)]

    def start(self) -> None:
        fmts = [subprocess.Popen(p.format_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for p in self.procs.values()]
        for f in fmts:
            out, _ = f.communicate(timeout=300)
            if f.returncode != 0:
                raise RuntimeError(f"kafka storage format failed: {out[-3000:]}")
        super().start()

    def ready(self, name: str) -> bool:
        p = self.procs[name]
        if p.role == "controller":
            return harness.port_open(p.port)
        return harness.api_versions_ok(p.port)


# ---------------------------------------------------------------------------- metadata

def admin(bootstrap: str):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})


def metadata(port: int, topic: str, timeout: float = 5) -> tuple[set, dict]:
    """Metadata v12 for one topic from the broker at `port` only (a client library would pick
    any broker it knows, and a broker cut off from the controllers answers with what it last
    knew): (broker ids, partition -> (leader, replicas, isr))."""
    import wire
    body = wire.carray([b"\x00" * 16 + wire.cstring(topic) + b"\x00"]) + b"\x00\x00" + b"\x00"
    frame = wire.header(3, 12, 1, b"faults", b"\x00") + body
    with wire.Connection(("127.0.0.1", port), timeout=timeout) as c:
        r = wire.Reader(c.roundtrip(frame))
    assert r.take("i") == 1
    r.tags()
    r.take("i")  # throttle

    def broker(rd):
        node = rd.take("i")
        rd.string()
        rd.take("i")
        rd.string()
        rd.tags()
        return node

    def ints(rd):
        return rd.take("i")

    def partition(rd):
        err = rd.take("h")
        index = rd.take("i")
        leader = rd.take("i")
        rd.take("i")  # leader epoch
        replicas = rd.array(ints) or []
        isr = rd.array(ints) or []
        rd.array(ints)  # offline
        rd.tags()
        return index, (leader if err == 0 else -1, replicas, isr)

    brokers = set(r.array(broker) or [])
    r.string()  # cluster id
    r.take("i")  # controller id
    parts = {}
    for _ in range(r.uvarint() - 1):
        err = r.take("h")
        name = r.string()
        r.raw(16)
        r.take("?")
        ps = r.array(partition) or []
        r.take("i")
        r.tags()
        if err == 0 and name == topic:
            parts = dict(ps)
    return brokers, parts


def topic_state(cl: ClusterBase, topic: str) -> tuple[set, dict]:
    """Metadata from the first broker that answers."""
    last = None
    for b in cl.brokers():
        if not cl.alive(b) or cl.procs[b].stopped:
            continue
        try:
            return metadata(cl.procs[b].port, topic)
        except (OSError, AssertionError, struct.error) as e:
            last = e
    raise RuntimeError(f"no broker answered Metadata: {last}")


def wait_whole(cl: ClusterBase, topic: str, partitions: int, timeout: float) -> tuple[bool, float, str]:
    """Until every broker, asked on its own, lists the 3 brokers and every partition with a
    leader and ISR = replicas, all of them the same (the metadata has converged)."""
    t0 = time.time()
    last = ""
    expected = {cl.procs[b].node_id for b in cl.brokers()}
    while time.time() - t0 < timeout:
        views = {}
        try:
            for b in cl.brokers():
                views[b] = metadata(cl.procs[b].port, topic, timeout=2)
        except (OSError, AssertionError, struct.error) as e:
            last = f"metadata: {e}"
            time.sleep(0.25)
            continue
        problems = []
        for b, (brokers, parts) in views.items():
            bad = {p: v for p, v in parts.items() if v[0] < 0 or set(v[1]) != set(v[2])}
            if not brokers >= expected or len(parts) != partitions or bad:
                problems.append(f"{b} sees brokers {sorted(brokers)}, {len(parts)} partitions, not whole: {bad}")
        leaders = {b: {p: v[0] for p, v in parts.items()} for b, (_, parts) in views.items()}
        if len({json.dumps(x, sort_keys=True) for x in leaders.values()}) > 1:
            problems.append(f"brokers disagree on leaders: {leaders}")
        if not problems:
            return True, time.time() - t0, ""
        last = "; ".join(problems)
        time.sleep(0.25)
    return False, time.time() - t0, last


def create_topic(bootstrap: str, topic: str, partitions: int, rf: int, min_isr: int) -> str | None:
    """Creates the topic; returns the error text if the cluster refuses it."""
    from confluent_kafka.admin import NewTopic
    client = admin(bootstrap)  # kept alive until the result: destroying it fails the future
    fs = client.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=rf,
                  config={"min.insync.replicas": str(min_isr)})], operation_timeout=30, request_timeout=30)
    try:
        fs[topic].result(timeout=60)
        return None
    except Exception as e:  # noqa: BLE001 - the refusal's text is the result
        return str(e)


# ---------------------------------------------------------------------------- clients

def java_producer_cmd(bootstrap: str, topic: str, rate: int, acked: Path, stop: Path) -> list[str]:
    return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-Dorg.slf4j.simpleLogger.logFile=System.err", "-cp", f"{harness.JAVA_JAR}:{harness.JAVA_LIB}/*",
            "sluice.clients.Main", "produce", "--bootstrap", bootstrap, "--topic", topic, "--count", "1000000000",
            "--acks", "all", "--idempotence", "true", "--key-prefix", "j", "--value-size", str(VALUE_PAD),
            "--max-rate", str(rate), "--allow-failures", "true", "--acked-file", str(acked),
            "--stop-file", str(stop), "--delivery-timeout-ms", "60000", "--request-timeout-ms", "15000"]


def run_confluent_producer(a) -> int:
    """A confluent-kafka producer (acks=all, idempotent) at --rate records/s until --stop-file exists;
    each delivery report's (partition, offset, key) goes to --acked-file."""
    from confluent_kafka import KafkaException, Producer
    conf = {"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "message.timeout.ms": 60000, "request.timeout.ms": 15000, "reconnect.backoff.max.ms": 500}
    stats = {"sent": 0, "acked": 0, "failed": 0, "fatal": 0, "first_error": None}
    out = open(a.acked_file, "w")

    def report(err, msg):
        if err is not None:
            stats["failed"] += 1
            stats["first_error"] = stats["first_error"] or str(err)
            return
        stats["acked"] += 1
        out.write(f"{msg.partition()} {msg.offset()} {msg.key().decode()}\n")

    producers = [Producer(conf)]
    stop = Path(a.stop_file)
    t0 = time.time()
    seq = 0
    while not (seq % 64 == 0 and stop.exists()):
        due = t0 + seq / a.rate
        now = time.time()
        if due > now:
            time.sleep(due - now)
        try:
            producers[-1].produce(a.topic, key=harness.make_key("c", seq).encode(),
                                  value=harness.make_value("c", seq, VALUE_PAD).encode(), on_delivery=report)
            seq += 1
            stats["sent"] += 1
        except BufferError:
            producers[-1].poll(0.1)
            continue
        except KafkaException as e:
            # A fatal idempotence error ends this producer (its queued records fail); go on with a
            # new one (new producer id), as an application would.
            stats["fatal"] += 1
            stats["first_error"] = stats["first_error"] or str(e)
            producers[-1].flush(30)
            producers.append(Producer(conf))
            continue
        producers[-1].poll(0)
    for p in producers:
        p.flush(120)
    out.close()
    print(json.dumps(stats), flush=True)
    return 0


def run_consumer(a) -> int:
    """Reads every partition from the beginning (assign, no group) until --stop-file exists,
    logging `partition offset key crc32(value)` of every record seen."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "faults-checker-unused",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0})
    c.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in range(a.partitions)])
    stop = Path(a.stop_file)
    seen = errors = 0
    with open(a.seen_file, "w") as out:
        while not stop.exists():
            for m in c.consume(1000, 0.5):
                if m.error():
                    errors += 1
                    continue
                seen += 1
                out.write(f"{m.partition()} {m.offset()} {m.key().decode()} {zlib.crc32(m.value())}\n")
    c.close()
    print(json.dumps({"seen": seen, "errors": errors}), flush=True)
    return 0


def read_back(bootstrap: str, topic: str, partitions: int, timeout: float = 180) -> tuple[dict, dict]:
    """partition -> {offset: (key, value)}, read from the beginning up to each partition's high
    watermark; and partition -> (log start, high watermark) from ListOffsets on the leaders."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "faults-checker-unused",
                  "enable.auto.commit": False, "log_level": 0, "fetch.max.bytes": 8 << 20})
    marks = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
             for p in range(partitions)}
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out = {p: {} for p in range(partitions)}
    pending = {p for p in range(partitions) if marks[p][1] > marks[p][0]}
    next_offset = {p: marks[p][0] for p in range(partitions)}
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        for m in c.consume(5000, 1.0):
            if m.error():
                continue
            p = m.partition()
            out[p][m.offset()] = (m.key().decode(), m.value())
            next_offset[p] = m.offset() + 1
            if next_offset[p] >= marks[p][1]:
                pending.discard(p)
    c.close()
    if pending:
        raise RuntimeError(f"read-back incomplete after {timeout}s: partitions {sorted(pending)} "
                           f"at {next_offset}, high watermarks {marks}")
    return out, marks


# ---------------------------------------------------------------------------- segment files

def read_batches(part_dir: Path) -> tuple[list[tuple[int, int, bytes]], int]:
    """Every record batch of a partition's segment files in offset order: (base offset, last
    offset, bytes); and the count of trailing bytes that are no batch (a preallocated or torn tail)."""
    batches, tail = [], 0
    for seg in sorted(part_dir.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            end = pos + 12 + length
            if length < 49 or end > len(data):
                break
            last_delta = struct.unpack_from(">i", data, pos + 23)[0]
            batches.append((base, base + last_delta, data[pos:end]))
            pos = end
        tail += len(data) - pos
    return batches, tail


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def decode_keys(batch: bytes) -> dict[int, bytes] | None:
    """offset -> key of an uncompressed v2 batch's records (None for compressed or control)."""
    base = struct.unpack_from(">q", batch, 0)[0]
    attrs = struct.unpack_from(">h", batch, 21)[0]
    if attrs & 0x07 or attrs & 0x20:
        return None
    count = struct.unpack_from(">i", batch, 57)[0]
    pos, out = 61, {}
    for _ in range(count):
        length, pos = _varint(batch, pos)
        end = pos + length
        pos += 1  # attributes
        _, pos = _varint(batch, pos)  # timestamp delta
        delta, pos = _varint(batch, pos)
        klen, pos = _varint(batch, pos)
        out[base + delta] = batch[pos:pos + klen] if klen >= 0 else b""
        pos = end
    return out


# ---------------------------------------------------------------------------- checker

def load_lines(path: Path, fields: int) -> list[list[str]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == fields:  # a line cut by a kill is not a complete record
            out.append(parts)
    return out


def check(cl: ClusterBase, topic: str, partitions: int, out_dir: Path) -> dict:
    """Reads the final state from the healed cluster and its files, then judges it."""
    bootstrap = cl.bootstrap()
    final, marks = read_back(bootstrap, topic, partitions)
    _, parts = topic_state(cl, topic)
    replica_dirs = {p: {cl.name_of(node): cl.partition_dir(cl.name_of(node), topic, p)
                        for node in parts.get(p, (-1, [], []))[1]} for p in range(partitions)}
    acked = [("java", r) for r in load_lines(out_dir / "acked-java.txt", 3)]
    acked += [("confluent", r) for r in load_lines(out_dir / "acked-confluent.txt", 3)]
    seen = load_lines(out_dir / "seen.txt", 4)
    res = judge(final, marks, replica_dirs, acked, seen)
    res["self_check"] = self_check(final, marks, replica_dirs, acked, seen, out_dir / "self-check")
    if not res["self_check"].startswith("passed"):
        res["failures"].append(f"checker self-check: {res['self_check']}")
    return res


def self_check(final: dict, marks: dict, replica_dirs: dict, acked: list, seen: list, scratch: Path) -> str:
    """The checker on this run's real data with one fault put in: an acknowledged record taken
    out of the read-back, then one byte of a replica's first batch flipped (in a copy). Each must
    be reported, so a pass above is not a checker that sees nothing."""
    if not acked:
        return "nothing acknowledged to test with"
    src, (p, o, key) = acked[len(acked) // 2]
    p, o = int(p), int(o)
    mutated = {q: (dict(recs) if q != p else {k: v for k, v in recs.items() if k != o}) for q, recs in final.items()}
    fails = judge(mutated, marks, replica_dirs, acked, seen)["failures"]
    if not any(f.startswith("acked:") and key in f for f in fails):
        return f"a removed acknowledged record ({key} at {p}@{o}) went unreported"
    part = next((q for q in sorted(replica_dirs) if len(replica_dirs[q]) > 1 and marks[q][1] > marks[q][0]), None)
    if part is None:
        return "passed (one replica per partition: no replica comparison to test)"
    dirs = dict(replica_dirs[part])
    name = sorted(dirs)[-1]
    shutil.rmtree(scratch, ignore_errors=True)
    copy = scratch / name / dirs[name].name
    shutil.copytree(dirs[name], copy)
    seg = sorted(copy.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    data[12] ^= 0x01  # the first batch's partition leader epoch: outside the CRC, only a byte compare sees it
    seg.write_bytes(bytes(data))
    dirs[name] = copy
    fails = judge(final, marks, {**replica_dirs, part: dirs}, acked, seen)["failures"]
    shutil.rmtree(scratch, ignore_errors=True)
    if not any("differ below the high watermark" in f for f in fails):
        return f"a flipped byte in {name}'s copy of partition {part} went unreported"
    return "passed"


def judge(final: dict, marks: dict, replica_dirs: dict, acked: list, seen: list) -> dict:
    """The checks on the gathered state (no I/O but the segment files), so they can be tested
    on made-up states too (test_replication_faults.py's checker tests).
    final: partition -> {offset: (key str, value bytes)} read back up to the high watermark
    marks: partition -> (log start, high watermark)
    replica_dirs: partition -> {broker name: its `<topic>-<p>` directory}
    acked: [(producer, [partition, offset, key])]; seen: [[partition, offset, key, crc32]]"""
    failures: list[str] = []
    res: dict = {"records": sum(len(v) for v in final.values()),
                 "high_watermarks": {p: marks[p][1] for p in marks}}

    # acked: at its offset, with its value
    res["acked"] = {"java": sum(1 for s, _ in acked if s == "java"),
                    "confluent": sum(1 for s, _ in acked if s == "confluent")}
    bad_acked = 0
    acked_keys = set()
    # librdkafka acknowledges some records without an offset: an idempotent retry the broker
    # refuses as out of order because its sequence is already written (librdkafka's "persisted"
    # status; Kafka answers the same). Those are looked for by key in their partition.
    where: dict[str, tuple[int, int]] = {}
    for fp, recs in final.items():
        for fo, (fkey, _) in recs.items():
            where.setdefault(fkey, (fp, fo))
    res["acked_without_offset"] = 0
    for src, (p, o, key) in acked:
        p = int(p)
        if o == "None":
            res["acked_without_offset"] += 1
            o = where.get(key, (p, -1))[1] if where.get(key, (None,))[0] == p else -1
        o = int(o)
        if key in acked_keys:
            failures.append(f"acked: {key} acknowledged twice ({src})")
        acked_keys.add(key)
        got = final.get(p, {}).get(o)
        prefix, seq = key[0], int(key[1:])
        want = harness.make_value(prefix, seq, VALUE_PAD).encode()
        if got is None or got[0] != key or got[1] != want:
            bad_acked += 1
            if bad_acked <= 20:
                failures.append(f"acked: {src} {key} acknowledged at {p}@{o}; final log has "
                                f"{'nothing' if got is None else got[0]} there")
    res["acked_missing_or_wrong"] = bad_acked

    # exactly once
    count: dict[str, int] = {}
    for recs in final.values():
        for key, _ in recs.values():
            count[key] = count.get(key, 0) + 1
    dups = {k: n for k, n in count.items() if n > 1}
    res["duplicate_keys"] = len(dups)
    for k in sorted(dups)[:20]:
        failures.append(f"exactly-once: {k} is in the log {dups[k]} times")
    res["unacked_in_log"] = len(set(count) - acked_keys)

    # consumed records never vanish
    res["consumed"] = len(seen)
    vanished = 0
    for p, o, key, crc in seen:
        got = final.get(int(p), {}).get(int(o))
        if got is None or got[0] != key or zlib.crc32(got[1]) != int(crc):
            vanished += 1
            if vanished <= 20:
                failures.append(f"consumed: {key} seen at {p}@{o} is gone; final log has "
                                f"{'nothing' if got is None else got[0]} there")
    res["consumed_vanished"] = vanished

    # replicas byte-identical below the high watermark, and covering it
    rep = {}
    for p in sorted(marks):
        lso, hw = marks[p]
        per = {}
        for name, d in sorted(replica_dirs.get(p, {}).items()):
            if d is None or not d.is_dir():
                failures.append(f"replicas: partition {p} has no directory {d} on {name}")
                continue
            batches, tail = read_batches(d)
            below = [b for b in batches if b[1] < hw and b[0] >= lso]
            per[name] = (below, tail, batches)
        if not per:
            failures.append(f"replicas: partition {p}: no replica directory to compare")
        first = None
        for name, (below, tail, batches) in per.items():
            covered = below[-1][1] + 1 if below else lso
            straddle = [b for b in batches if b[0] < hw <= b[1]]
            if covered != hw or straddle:
                failures.append(f"replicas: partition {p} on {name}: batches below the high watermark {hw} "
                                f"end at {covered}{' (a batch straddles it)' if straddle else ''}")
            blob = [b[2] for b in below]
            if first is None:
                first = (name, blob)
                decoded = {}
                for b in below:
                    keys = decode_keys(b[2])
                    if keys is not None:
                        decoded.update(keys)
                client = {o: kv[0].encode() for o, kv in final.get(p, {}).items()}
                if decoded != client:
                    diff = sorted(set(decoded.items()) ^ set(client.items()))[:5]
                    failures.append(f"replicas: partition {p} on {name}: decoded segment records differ from "
                                    f"the records read back ({len(decoded)} vs {len(client)}; e.g. {diff})")
            elif blob != first[1]:
                at = next((i for i, (x, y) in enumerate(zip(blob, first[1])) if x != y),
                          min(len(blob), len(first[1])))
                failures.append(f"replicas: partition {p}: {name} and {first[0]} differ below the high watermark "
                                f"{hw} at batch #{at} ({len(blob)} vs {len(first[1])} batches)")
        rep[p] = {"high_watermark": hw, "log_start": lso, "replicas": sorted(per),
                  "batches": len(first[1]) if first else 0,
                  "bytes": sum(len(x) for x in first[1]) if first else 0}
    res["replicas"] = rep
    res["failures"] = failures
    return res


# ---------------------------------------------------------------------------- schedule

@dataclass
class Round:
    index: int
    kind: str
    target: str = ""
    duration_s: float = 0.0
    settle_s: float = 0.0
    whole: bool = True
    note: str = ""
    wall_s: float = 0.0
    during: str = ""  # the cluster as another broker saw it at the end of the fault


def snapshot(cl: ClusterBase, topic: str, victim: str) -> str:
    """How the fault shows at its end, asked of a broker other than the victim: the partitions
    the victim leads and the ISR sizes (evidence the fault had an effect, or did not)."""
    vid = cl.procs[victim].node_id if victim in cl.procs else None
    for b in cl.brokers():
        if b == victim or not cl.alive(b) or cl.procs[b].stopped:
            continue
        try:
            brokers, parts = metadata(cl.procs[b].port, topic, timeout=2)
        except (OSError, AssertionError, struct.error):
            continue
        led = sum(1 for v in parts.values() if v[0] == vid)
        isr = [len(parts[p][2]) for p in sorted(parts)]
        return f"via {b}: brokers {sorted(brokers)}, victim leads {led}, ISR sizes {isr}"
    return "no other broker answered"


def schedule(seed: int, rounds: int) -> list[str]:
    rng = random.Random(seed)
    kinds: list[str] = []
    while len(kinds) < rounds:
        block = list(KINDS)
        rng.shuffle(block)
        kinds += block
    return kinds[:rounds]


def run_round(cl: ClusterBase, fw: Firewall, r: Round, rng: random.Random, quick: bool, topic: str) -> None:
    lo, hi = (2.0, 4.0) if quick else (5.0, 15.0)
    r.duration_s = round(rng.uniform(lo, hi), 2)
    brokers = cl.brokers()
    if r.kind == "kill-broker":
        victim = rng.choice(brokers)
        if rng.random() < 0.5:
            try:
                _, parts = topic_state(cl, topic)
                p = rng.choice(sorted(parts))
                leader = cl.name_of(parts[p][0])
                if leader:
                    victim = leader
                    r.note = f"leader of partition {p}"
            except Exception as e:  # noqa: BLE001 - metadata unavailable: the random broker stays
                r.note = f"leader lookup failed: {e}"
        r.target = victim
        cl.kill9(victim)
        time.sleep(r.duration_s)
        r.during = snapshot(cl, topic, victim)
        cl.restart(victim)
    elif r.kind == "stop-broker":
        victim = rng.choice(brokers)
        r.target = victim
        cl.sigstop(victim)
        time.sleep(r.duration_s)
        r.during = snapshot(cl, topic, victim)
        cl.sigcont(victim)
    elif r.kind == "partition-broker":
        victim = rng.choice(brokers)
        r.target = victim
        if not fw.ok:
            r.note = f"skipped: {fw.error}"
            return
        others = [b for b in brokers if b != victim]
        cut = [cl.procs[c].port for c in cl.controllers()] + [cl.procs[b].port for b in others]
        t0 = time.time()
        ports = {n: p.port for n, p in cl.procs.items()}
        # The cut holds (the victim reaches no controller, another broker does not reach the
        # victim) and the clients still reach the victim; else the round tests nothing.
        fw.isolate(victim, others, ports, cut)
        out_cut = not fw.probe(victim, cut[0])
        in_cut = not fw.probe(others[0], cl.procs[victim].port)
        client_ok = fw.probe(None, cl.procs[victim].port)
        cut_ok = out_cut and in_cut
        r.note = (f"cut verified: {cut_ok}" + ("" if cut_ok else f" (to a controller: {out_cut}, from a broker: "
                                                                 f"{in_cut})") + f", clients reach it: {client_ok}")
        if not (cut_ok and client_ok):
            log(f"partition of {victim} not verified: {r.note}; iptables:\n{fw.listing()}")
        time.sleep(max(0.0, r.duration_s - (time.time() - t0)))
        r.during = snapshot(cl, topic, victim)
        fw.heal()
        if not (cut_ok and client_ok):
            raise RuntimeError(f"the partition of {victim} did not work: {r.note}")
    elif r.kind == "kill-controller":
        victim = cl.active_controller()
        if victim is None:
            victim = rng.choice(cl.controllers())
            r.note = "active controller unknown (DescribeQuorum failed): a random controller"
        r.target = victim
        cl.kill9(victim)
        time.sleep(r.duration_s)
        r.during = snapshot(cl, topic, victim)
        r.during += f"; active controller: {cl.active_controller()}"
        cl.restart(victim)


# ---------------------------------------------------------------------------- main

def replay_command(a) -> str:
    return (f"python3 tests/clients/replication_faults.py --target {a.target} --rounds {a.rounds} --seed {a.seed}"
            f"{' --quick' if a.quick else ''} --replication-factor {a.replication_factor} --out DIR")


def write_results(out: Path, res: dict) -> None:
    (out / "results.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    lines = [f"# Replication fault test: {res['target']}, {res['rounds_done']} rounds, seed {res['seed']}", "",
             f"Result: **{res['status']}**", "", f"Replay: `{res['replay']}`", ""]
    if res.get("skipped"):
        lines += [f"Skipped: {res['skipped']}", ""]
    if res.get("firewall"):
        lines += [f"Network partitions unavailable (those rounds did nothing): {res['firewall']}", ""]
    if res.get("error"):
        lines += ["Harness error:", "", "```", str(res["error"])[-3000:], "```", ""]
    lines += [f"Topic `{res['topic']}`: {res['partitions']} partitions, RF={res['replication_factor']}, "
              f"min.insync.replicas={res['min_insync_replicas']}. Fault length {res['fault_range_s']} s.", ""]
    if res.get("rounds"):
        walls = [x["wall_s"] for x in res["rounds"]]
        lines += [f"Time per round: mean {sum(walls) / len(walls):.1f} s, max {max(walls):.1f} s "
                  f"(fault + restart + until whole again); whole run {res.get('total_s', 0):.0f} s.", "",
                  "| # | fault | target | fault s | until whole s | note | at the end of the fault |",
                  "|---|---|---|---|---|---|---|"]
        for x in res["rounds"]:
            whole = f"{x['settle_s']:.1f}" if x["whole"] else f"NOT WHOLE after {x['settle_s']:.0f}"
            lines.append(f"| {x['index']} | {x['kind']} | {x['target']} | {x['duration_s']} | {whole} | {x['note']} | {x['during']} |")
        lines.append("")
    c = res.get("check")
    if c:
        lines += ["Checker:", "",
                  f"- records in the final log: {c['records']}; acknowledged: java {c['acked']['java']}, "
                  f"confluent {c['acked']['confluent']}; unacknowledged but written: {c['unacked_in_log']}",
                  f"- acknowledged missing or elsewhere: {c['acked_missing_or_wrong']}; duplicate keys: "
                  f"{c['duplicate_keys']}",
                  f"- consumed during the faults: {c['consumed']}; vanished since: {c['consumed_vanished']}",
                  f"- the checker's self-check on this data (a removed acknowledged record, a flipped replica "
                  f"byte must be reported): {c.get('self_check')}",
                  "- replicas below the high watermark: " + ", ".join(
                      f"p{p} hw {v['high_watermark']} {v['batches']} batches x{len(v['replicas'])}"
                      for p, v in c["replicas"].items()), ""]
        if c["failures"]:
            lines += ["Failures:", ""] + [f"- {f}" for f in c["failures"][:50]] + [""]
    for k in ("producers", "consumer"):
        if res.get(k):
            lines.append(f"{k}: `{json.dumps(res[k])}`")
    (out / "results.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--target", choices=("sluice", "kafka"), default=harness.TARGET)
    ap.add_argument("--out", type=Path, default=None, help="results and logs (default: a new temp dir)")
    ap.add_argument("--quick", action="store_true", help="CI: faults of 2-4 s instead of 5-15 s")
    ap.add_argument("--replication-factor", type=int, default=3)
    ap.add_argument("--min-insync-replicas", type=int, default=None, help="default: 2 (1 when RF=1)")
    ap.add_argument("--partitions", type=int, default=PARTITIONS)
    ap.add_argument("--rate", type=int, default=400, help="records/s of each producer")
    ap.add_argument("--settle-timeout", type=float, default=120, help="s to wait for the cluster to be whole")
    ap.add_argument("--bin", type=Path, default=harness.SLUICE_BIN)
    ap.add_argument("--in-netns", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-netns", action="store_true", help="run in the current network namespace")
    a = ap.parse_args(argv)
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1 << 31)
        argv = [*argv, "--seed", str(a.seed)]
    if a.out is None:
        import tempfile
        a.out = Path(tempfile.mkdtemp(prefix="replication-faults-"))
        argv = [*argv, "--out", str(a.out)]
    a.out = a.out.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        res = {"status": "skipped", "skipped": "needs root (cgroups, iptables, network namespace)"}
        (a.out / "results.json").write_text(json.dumps(res) + "\n")
        print(res["skipped"])
        return EXIT_SKIPPED
    if not a.in_netns and not a.no_netns and not in_named_netns():
        return reexec_in_netns([x if not isinstance(x, Path) else str(x) for x in argv])
    if a.min_insync_replicas is None:
        a.min_insync_replicas = 2 if a.replication_factor > 1 else 1

    res: dict = {"target": a.target, "seed": a.seed, "rounds_requested": a.rounds, "rounds_done": 0,
                 "quick": a.quick, "topic": TOPIC, "partitions": a.partitions,
                 "replication_factor": a.replication_factor, "min_insync_replicas": a.min_insync_replicas,
                 "fault_range_s": "2-4" if a.quick else "5-15", "replay": replay_command(a), "rounds": [],
                 "status": "error"}
    log(f"replication faults: target={a.target} rounds={a.rounds} seed={a.seed} out={a.out}")
    fw = Firewall(a.out)
    if not fw.ok:
        log(f"network partitions unavailable: {fw.error}")
        res["firewall"] = fw.error
    stop_file = a.out / "stop"
    stop_file.unlink(missing_ok=True)
    clients: dict[str, subprocess.Popen] = {}
    cl: ClusterBase | None = None
    t_start = time.time()
    code = EXIT_ERROR
    try:
        harness.build_java_tool()
        cl = KafkaCluster(a.out, fw) if a.target == "kafka" else SluiceCluster(a.out, fw, a.bin)
        log("starting the cluster")
        cl.start()
        bootstrap = cl.bootstrap()
        err = create_topic(bootstrap, TOPIC, a.partitions, a.replication_factor, a.min_insync_replicas)
        if err is not None:
            res["status"] = "skipped"
            res["skipped"] = f"the cluster refused topic {TOPIC} with RF={a.replication_factor}: {err}"
            log(res["skipped"])
            code = EXIT_SKIPPED
            return code
        ok, secs, why = wait_whole(cl, TOPIC, a.partitions, a.settle_timeout)
        if not ok:
            raise RuntimeError(f"the new topic is not whole after {secs:.0f}s: {why}")
        log(f"topic {TOPIC} ready; starting producers and the consumer")
        me = [sys.executable, str(Path(__file__).resolve())]
        clients["java"] = subprocess.Popen(
            java_producer_cmd(bootstrap, TOPIC, a.rate, a.out / "acked-java.txt", stop_file),
            stdout=open(a.out / "producer-java.out", "w"), stderr=open(a.out / "producer-java.err", "w"))
        clients["confluent"] = subprocess.Popen(
            me + ["_confluent-producer", "--bootstrap", bootstrap, "--topic", TOPIC, "--rate", str(a.rate),
                  "--acked-file", str(a.out / "acked-confluent.txt"), "--stop-file", str(stop_file)],
            stdout=subprocess.PIPE, stderr=open(a.out / "producer-confluent.err", "w"), text=True)
        consumer_stop = a.out / "stop-consumer"
        consumer_stop.unlink(missing_ok=True)
        clients["consumer"] = subprocess.Popen(
            me + ["_consumer", "--bootstrap", bootstrap, "--topic", TOPIC, "--partitions", str(a.partitions),
                  "--seen-file", str(a.out / "seen.txt"), "--stop-file", str(consumer_stop)],
            stdout=subprocess.PIPE, stderr=open(a.out / "consumer.err", "w"), text=True)
        time.sleep(3)  # producers connected and writing before the first fault

        kinds = schedule(a.seed, a.rounds)
        rng = random.Random(a.seed ^ 0x5EED)
        for i, kind in enumerate(kinds):
            r = Round(i + 1, kind)
            t0 = time.time()
            run_round(cl, fw, r, rng, a.quick, TOPIC)
            r.whole, r.settle_s, why = wait_whole(cl, TOPIC, a.partitions, a.settle_timeout)
            if not r.whole:
                r.note = (r.note + "; " if r.note else "") + f"not whole: {why}"
            r.settle_s = round(r.settle_s, 2)
            r.wall_s = round(time.time() - t0, 2)
            res["rounds"].append(r.__dict__)
            res["rounds_done"] = i + 1
            log(f"round {r.index}/{a.rounds}: {r.kind} {r.target} for {r.duration_s}s, whole again after "
                f"{r.settle_s}s{' (' + r.note + ')' if r.note else ''}")
            for name, p in clients.items():
                if p.poll() is not None:
                    raise RuntimeError(f"client {name} exited early ({p.returncode})")

        log("stopping the producers")
        stop_file.touch()
        res["producers"] = {}
        for name in ("java", "confluent"):
            p = clients[name]
            p.wait(timeout=240)
            out = (a.out / "producer-java.out").read_text() if name == "java" else p.stdout.read()
            res["producers"][name] = {"exit": p.returncode, "report": out.strip()[-500:]}
        ok, secs, why = wait_whole(cl, TOPIC, a.partitions, a.settle_timeout)
        if not ok:
            raise RuntimeError(f"the cluster did not heal within {secs:.0f}s after the last round: {why}")
        time.sleep(2)  # the consumer reads up to the final high watermark
        consumer_stop.touch()
        clients["consumer"].wait(timeout=60)
        res["consumer"] = clients["consumer"].stdout.read().strip()
        log("checking")
        c = check(cl, TOPIC, a.partitions, a.out)
        res["check"] = c
        if sum(c["acked"].values()) == 0 or c["consumed"] == 0:
            c["failures"].append("nothing was acknowledged or consumed: the run tested nothing")
        res["status"] = "failed" if c["failures"] else "passed"
        code = EXIT_FAILED if c["failures"] else EXIT_PASSED
    except Exception as e:  # noqa: BLE001 - reported with the replay command
        import traceback
        res["error"] = traceback.format_exc()
        log(f"harness error: {e}")
    finally:
        stop_file.touch()
        (a.out / "stop-consumer").touch()
        for p in clients.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if fw.ok:
            fw.heal()
        if cl is not None:
            res["exit_codes"] = cl.shutdown()
        fw.close()
        res["total_s"] = round(time.time() - t_start, 1)
        write_results(a.out, res)
    log(f"{res['status']}: results in {a.out}/results.md")
    if res.get("check", {}).get("failures"):
        for f in res["check"]["failures"][:30]:
            print("  " + f)
    if code in (EXIT_FAILED, EXIT_ERROR):
        print(f"seed {a.seed}; replay: {res['replay']}")
    return code


def sub_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("role")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--rate", type=int, default=400)
    ap.add_argument("--partitions", type=int, default=PARTITIONS)
    ap.add_argument("--acked-file")
    ap.add_argument("--seen-file")
    ap.add_argument("--stop-file", required=True)
    a = ap.parse_args(argv)
    return run_confluent_producer(a) if a.role == "_confluent-producer" else run_consumer(a)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("_confluent-producer", "_consumer"):
        sys.exit(sub_main(sys.argv[1:]))
    sys.exit(main(sys.argv[1:]))
