#!/usr/bin/env python3
"""3+3 cluster benches, Sluice (config/cluster) vs Apache Kafka 4.4 in the same topology, started
by tests/clients/replication_faults.py's launchers (imported, not copied).

    bench/failover/run [--reps 3] [--brokers sluice,kafka] [--sluice-bin PATH] [--date NAME]
    bench/rf3/run [--records N] [--brokers sluice,kafka] [--sluice-bin PATH] [--date NAME]

failover: a topic of 6 partitions, RF=3, min.insync.replicas=2; one confluent-kafka producer
(acks=all, idempotent, librdkafka's defaults otherwise) sends --rate records/s round-robin over
the partitions, and logs every delivery report with its wall-clock time. Per repetition: the
broker leading partition 0 gets kill -9 (or SIGTERM); measured is the time from the signal until
the first delivery report of partition 0 after it (records acknowledged again), with the time
the partition's new leader first shows in Metadata (polled every 50 ms on the other brokers)
beside it. The broker is then restarted and the cluster waited for whole (ISR = replicas).

rf3: a topic of 16 partitions, RF=3, min.insync.replicas=2; Kafka's ProducerPerformance 4.4.0,
acks=all, 1 KiB records, --throughput -1, --print-metrics (request-size-avg = bytes per
produce request); broker CPU = utime+stime of the 3 broker processes over the run.

Cluster work has fixed ports: outside a network namespace this re-runs itself in `ip netns` bench.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests" / "clients"))

import replication_faults as rf  # noqa: E402

RESULTS = REPO / "bench" / "results"
CLK_TCK = os.sysconf("SC_CLK_TCK")
TOPIC_FAILOVER = "failover"
TOPIC_RF3 = "rf3"


def log(msg: str) -> None:
    print(f"[cluster-bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class NoFirewall:
    """The launchers take a firewall for network partitions; these benches cut nothing."""
    ok = False
    error = "not used"

    def preexec(self, name):
        return None


def proc_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def make_cluster(target: str, workdir: Path, binary: Path, overrides: list[str] = ()):
    """`overrides` (key=value) go to every Sluice process as `--override`: what-if runs with
    non-default settings (the committed comparison uses none)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if target == "kafka":
        return rf.KafkaCluster(workdir, NoFirewall())
    cl = rf.SluiceCluster(workdir, NoFirewall(), binary)
    for p in cl.procs.values():
        for kv in overrides:
            p.cmd += ["--override", kv]
    return cl


def leader_of(cl, topic: str, partition: int, exclude: str | None = None) -> int:
    """Partition's leader id as the first live broker (other than `exclude`) reports it; -1 if none."""
    for b in cl.brokers():
        if b == exclude or not cl.alive(b):
            continue
        try:
            _, parts = rf.metadata(cl.procs[b].port, topic, timeout=1)
        except Exception:  # noqa: BLE001 - a broker on its way down; ask the next
            continue
        if partition in parts:
            return parts[partition][0]
    return -1


# ---------------------------------------------------------------------------- failover producer

def run_producer(a) -> int:
    """confluent-kafka, acks=all, idempotent, --rate records/s round-robin over the partitions,
    until --stop-file exists; every delivery report as `partition send_ts ack_ts ok` (wall clock)."""
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": a.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
            "log_level": 3}
    for kv in a.client_conf:
        k, v = kv.split("=", 1)
        conf[k] = v
    p = Producer(conf)
    out = open(a.acked_file, "w", buffering=1 << 16)
    stop = Path(a.stop_file)
    value = b"x" * 1000

    def report(err, msg, sent):
        out.write(f"{msg.partition()} {sent:.4f} {time.time():.4f} {0 if err else 1}\n")

    t0 = time.time()
    seq = 0
    while not (seq % 64 == 0 and stop.exists()):
        due = t0 + seq / a.rate
        now = time.time()
        if due > now:
            p.poll(due - now)
        try:
            now = time.time()
            p.produce(TOPIC_FAILOVER, value=value, partition=seq % a.partitions,
                      on_delivery=lambda err, msg, s=now: report(err, msg, s))
            seq += 1
        except BufferError:
            p.poll(0.05)
        p.poll(0)
        if seq % 200 == 0:
            out.flush()
    p.flush(60)
    out.close()
    return 0


def acks_of(path: Path, partition: int) -> list[tuple[float, float, int]]:
    rows = []
    try:
        text = path.read_text()
    except OSError:
        return rows
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == str(partition):
            rows.append((float(f[1]), float(f[2]), int(f[3])))
    return rows


def failover_target(target: str, a, out: Path) -> dict:
    res: dict = {"target": target, "reps": [], "error": None}
    work = out / f"work-{target}"
    cl = make_cluster(target, work, a.sluice_bin, a.sluice_override)
    stop = work / "stop"
    acked = work / "acked.txt"
    stop.unlink(missing_ok=True)  # left by an earlier run with the same --date
    prod = None
    try:
        log(f"{target}: starting 3 controllers + 3 brokers")
        cl.start()
        err = rf.create_topic(cl.bootstrap(), TOPIC_FAILOVER, a.partitions, 3, 2)
        if err:
            raise RuntimeError(f"create topic: {err}")
        ok, secs, why = rf.wait_whole(cl, TOPIC_FAILOVER, a.partitions, 120)
        if not ok:
            raise RuntimeError(f"topic not whole after {secs:.0f}s: {why}")
        prod = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_producer", "--bootstrap",
                                 cl.bootstrap(), "--rate", str(a.rate), "--partitions", str(a.partitions),
                                 "--acked-file", str(acked), "--stop-file", str(stop),
                                 *[f"--client-conf={kv}" for kv in a.client_conf]],
                                stdout=open(work / "producer.out", "w"), stderr=subprocess.STDOUT)
        # Warm-up: --warmup seconds from partition 0's first ack (the producer's start, its
        # InitProducerId and first Metadata take a while on a loaded host).
        deadline = time.time() + 60
        while not acks_of(acked, 0):
            if time.time() > deadline or prod.poll() is not None:
                raise RuntimeError(f"no acks on partition 0 within 60 s (producer exit {prod.poll()}): "
                                   f"{(work / 'producer.out').read_text()[-2000:]}")
            time.sleep(0.2)
        time.sleep(a.warmup)
        kinds = ["kill", "term"] * a.reps
        for i, kind in enumerate(kinds):
            rep = failover_rep(cl, kind, acked, a)
            rep["rep"] = i // 2 + 1
            res["reps"].append(rep)
            log(f"{target}: {kind} #{rep['rep']}: {json.dumps(rep)}")
            if rep["acked_again_s"] is None:
                raise RuntimeError(f"partition 0 not acknowledged again within {a.timeout}s of the {kind}")
            ok, secs, why = rf.wait_whole(cl, TOPIC_FAILOVER, a.partitions, 180)
            rep["whole_again_s"] = round(secs, 2)
            if not ok:
                raise RuntimeError(f"cluster not whole after {secs:.0f}s: {why}")
            time.sleep(a.gap)
    except Exception as e:  # noqa: BLE001 - reported in the results, never turned into a figure
        res["error"] = f"{type(e).__name__}: {e}"
        log(f"{target}: ERROR {res['error']}")
    finally:
        stop.touch()
        if prod is not None:
            try:
                prod.wait(timeout=90)
            except subprocess.TimeoutExpired:
                prod.kill()
        rows = [r for p in range(a.partitions) for r in acks_of(acked, p)]
        res["producer"] = {"acked": sum(r[2] for r in rows), "failed": sum(1 - r[2] for r in rows)}
        res["exit_codes"] = cl.shutdown()
        res["logs"] = str(work)
        for p in cl.procs.values():  # keep logs, drop data
            subprocess.run(["rm", "-rf", str(p.data)])
    return res


def failover_rep(cl, kind: str, acked: Path, a) -> dict:
    leader_id = leader_of(cl, TOPIC_FAILOVER, 0)
    victim = cl.name_of(leader_id)
    if victim is None:
        raise RuntimeError(f"partition 0 has no leader ({leader_id})")
    proc = cl.procs[victim].popen
    t_sig = time.time()
    t_exit = None
    if kind == "kill":
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        t_exit = time.time()
    else:
        proc.send_signal(signal.SIGTERM)
    # Poll Metadata on the other brokers for the new leader while waiting for acks.
    t_new_leader = None
    new_leader = None
    t_ack = None
    deadline = t_sig + a.timeout
    while time.time() < deadline:
        if t_exit is None and proc.poll() is not None:
            t_exit = time.time()
        if t_new_leader is None:
            ldr = leader_of(cl, TOPIC_FAILOVER, 0, exclude=victim)
            if ldr >= 0 and ldr != leader_id:
                t_new_leader, new_leader = time.time(), ldr
        # An answer the old leader wrote just before the signal can still be read after it: only
        # acks after the process is gone count (for SIGTERM the old leader may ack until it exits).
        rows = [r for r in acks_of(acked, 0) if t_exit is not None and r[1] > t_exit and r[2] == 1]
        if rows:
            t_ack = rows[0][1]
            if t_new_leader is not None and t_exit is not None:
                break
        time.sleep(0.05)
    if t_exit is None:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        t_exit = time.time()
    rep = {"kind": kind, "victim": victim, "victim_id": leader_id, "signal_epoch_s": round(t_sig, 3),
           "exit_code": proc.returncode, "exit_after_s": round(t_exit - t_sig, 3),
           "new_leader": new_leader,
           "new_leader_in_metadata_s": round(t_new_leader - t_sig, 3) if t_new_leader else None,
           "first_ack_after_exit_s": round(t_ack - t_sig, 3) if t_ack else None,
           "p0_acks_signal_to_exit": sum(1 for r in acks_of(acked, 0) if t_sig < r[1] <= t_exit and r[2] == 1),
           }
    apply_outage(rep, acked)
    cl.restart(victim)
    return rep


def outage(acked: Path, t_sig: float, t_end: float) -> tuple[float, float] | None:
    """Partition 0's longest stretch without a successful delivery report, among the reports from
    2 s before the signal to t_end: (its length, its end - the signal). Measured on the acks
    alone, it needs no guess at which broker wrote an answer: the old leader's last acks (an
    answer already on its way at a kill -9; a SIGTERMed broker serving until its leadership has
    moved) and the new leader's first ones are all acks of the partition."""
    times = sorted(r[1] for r in acks_of(acked, 0) if r[2] == 1 and t_sig - 2 <= r[1] <= t_end)
    # Only stretches that end after the signal: a failover quicker than the steady spacing of
    # acks leaves its longest stretch before the signal, which it did not cause.
    stretches = [(b - a, b) for a, b in zip(times, times[1:]) if b > t_sig]
    if not stretches:
        return None
    gap, end = max(stretches)
    return gap, end - t_sig


def apply_outage(rep: dict, acked: Path) -> None:
    """acked_again_s = end of partition 0's longest ack gap around the signal (see outage())."""
    t_sig = rep["signal_epoch_s"]
    t_end = t_sig + rep["first_ack_after_exit_s"] if rep.get("first_ack_after_exit_s") is not None else t_sig + 60
    o = outage(acked, t_sig, t_end + 0.001)
    rep["p0_ack_gap_s"] = round(o[0], 3) if o else None
    rep["acked_again_s"] = round(o[1], 3) if o and o[1] > 0 else None


def summarise(reps: list[dict], kind: str) -> dict:
    xs = [r["acked_again_s"] for r in reps if r["kind"] == kind]
    ok = [x for x in xs if x is not None]
    md = [r["new_leader_in_metadata_s"] for r in reps if r["kind"] == kind and r["new_leader_in_metadata_s"]]
    return {"n": len(xs), "timeouts": len(xs) - len(ok),
            "median_s": round(statistics.median(ok), 3) if ok else None, "max_s": round(max(ok), 3) if ok else None,
            "all_s": xs, "new_leader_median_s": round(statistics.median(md), 3) if md else None}


def failover_rerender(a) -> int:
    """Recomputes the figures of <date>-failover.json from the kept ack logs and rewrites the .md."""
    path = a.results / f"{a.date}-failover.json"
    res = json.loads(path.read_text())
    for r in res["targets"].values():
        acked = Path(r["logs"]) / "acked.txt"
        for rep in r["reps"]:
            if "first_ack_after_exit_s" not in rep:  # written before the gap measure existed
                rep["first_ack_after_exit_s"] = rep["acked_again_s"]
            apply_outage(rep, acked)
        r["kill"] = summarise(r["reps"], "kill")
        r["term"] = summarise(r["reps"], "term")
    res["rerendered"] = f"bench/failover/run --date {a.date} --rerender"
    path.write_text(json.dumps(res, indent=1) + "\n")
    write_failover_md(res, a.results)
    return 0


def failover_main(a, argv) -> int:
    if a.rerender:
        return failover_rerender(a)
    out = REPO / "bench" / "work" / f"{a.date}-failover"
    out.mkdir(parents=True, exist_ok=True)
    res = {"command": "bench/failover/run " + " ".join(argv), "date": a.date, "rate": a.rate,
           "client_conf": a.client_conf, "sluice_overrides": a.sluice_override,
           "partitions": a.partitions, "replication_factor": 3, "min_insync_replicas": 2,
           "host": host_info(), "targets": {}}
    for t in a.brokers.split(","):
        r = failover_target(t, a, out)
        r["kill"] = summarise(r["reps"], "kill")
        r["term"] = summarise(r["reps"], "term")
        res["targets"][t] = r
        (a.results / f"{a.date}-failover.json").write_text(json.dumps(res, indent=1) + "\n")
    write_failover_md(res, a.results)
    return 0 if all(r["error"] is None for r in res["targets"].values()) else 1


def fmt(x, unit="s"):
    return "—" if x is None else f"{x:.2f} {unit}"


def write_failover_md(res: dict, results: Path) -> None:
    L = [f"# Leader failover, 3+3 cluster, Sluice vs Apache Kafka 4.4 ({res['date']})", "",
         f"Command: `{res['command']}` (inside `ip netns exec bench`)."
         + (f" Figures recomputed from the kept ack logs with `{res['rerendered']}`." if res.get("rerendered") else ""),
         "",
         f"Topic: {res['partitions']} partitions, RF=3, min.insync.replicas=2. Producer: confluent-kafka "
         f"(librdkafka), acks=all, enable.idempotence=true, linger.ms=5, {res['rate']} records/s of 1000 B "
         "round-robin over the partitions, client defaults otherwise. Measured per repetition (*acked again*): "
         "signal to the broker leading partition 0 → end of partition 0's longest stretch without a "
         "successful delivery report (reports from 2 s before the signal until the first one after the "
         "broker process is gone); *ack gap* is that stretch's length. At 50 records/s per partition "
         "(linger.ms=5) acks come ~20 ms apart in steady state. *new leader in Metadata*: first time a "
         "surviving broker's Metadata (polled every 50 ms) names another leader. *whole again*: from the victim's restart "
         "(ready) until every broker reports every partition led with ISR = replicas.", "",
         *([f"Non-default Sluice settings (a what-if, not the defaults): "
            f"{', '.join(f'`{x}`' for x in res['sluice_overrides'])}.", ""] if res.get("sluice_overrides") else []),
         *([f"Producer settings added: {', '.join(f'`{x}`' for x in res['client_conf'])}.", ""]
           if res.get("client_conf") else []),
         "| system | event | n | median | max | all | new leader in Metadata (median) |",
         "|---|---|---:|---:|---:|---|---:|"]
    for t, r in res["targets"].items():
        for kind, label in (("kill", "kill -9"), ("term", "SIGTERM")):
            s = r[kind]
            L.append(f"| {t} | {label} | {s['n']} | {fmt(s['median_s'])} | {fmt(s['max_s'])} | "
                     f"{', '.join('timeout' if x is None else f'{x:.2f}' for x in s['all_s'])} | "
                     f"{fmt(s['new_leader_median_s'])} |")
    L += ["", "## Every repetition", "", "| system | event | victim | exit after | new leader in Metadata | "
          "acked again | partition-0 ack gap | first ack after exit | whole again |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for t, r in res["targets"].items():
        for x in r["reps"]:
            L.append(f"| {t} | {x['kind']} | {x['victim']} | {fmt(x['exit_after_s'])} | "
                     f"{fmt(x['new_leader_in_metadata_s'])} | {fmt(x['acked_again_s'])} | {fmt(x['p0_ack_gap_s'])} | "
                     f"{fmt(x.get('first_ack_after_exit_s'))} | "
                     f"{fmt(x.get('whole_again_s'))} |")
        if r["error"]:
            L.append(f"\n**{t} failed:** {r['error']}\n")
        L.append("")
    L += ["Producer totals: " + "; ".join(f"{t}: {r['producer']['acked']} acked, {r['producer']['failed']} failed"
                                           for t, r in res["targets"].items()), "",
          f"Host: {res['host']}", ""]
    (results / f"{res['date']}-failover.md").write_text("\n".join(L))


# ---------------------------------------------------------------------------- rf3 throughput

def kafka_tools_libs() -> Path:
    r = subprocess.run([str(REPO / "bench" / "kafka" / "fetch.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"bench/kafka/fetch.sh: {r.stderr[-2000:]}")
    return Path(r.stdout.strip().splitlines()[-1])


PP_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")
PRODUCER_PROPS = {"acks": "all", "enable.idempotence": "true", "linger.ms": "5", "batch.size": "131072",
                  "compression.type": "none", "max.in.flight.requests.per.connection": "5",
                  "buffer.memory": "33554432"}


def metric(text: str, name: str) -> float | None:
    m = re.search(r"producer-metrics:" + re.escape(name) + r":\{client-id=[^}]*\}\s*:\s*([\d.E+-]+)", text)
    return float(m.group(1)) if m else None


def rf3_target(target: str, a, out: Path, libs: Path) -> dict:
    res: dict = {"target": target, "error": None}
    work = out / f"work-{target}"
    cl = make_cluster(target, work, a.sluice_bin)
    try:
        log(f"{target}: starting 3 controllers + 3 brokers")
        cl.start()
        err = rf.create_topic(cl.bootstrap(), TOPIC_RF3, 16, 3, 2)
        if err:
            raise RuntimeError(f"create topic: {err}")
        ok, secs, why = rf.wait_whole(cl, TOPIC_RF3, 16, 120)
        if not ok:
            raise RuntimeError(f"topic not whole after {secs:.0f}s: {why}")
        props = [f"bootstrap.servers={cl.bootstrap()}"] + [f"{k}={v}" for k, v in PRODUCER_PROPS.items()]
        cmd = ["java", "-Xmx512M", f"-Dlog4j2.configurationFile={REPO / 'bench' / 'kafka' / 'log4j2-tools.properties'}",
               "-cp", f"{libs}/*", "org.apache.kafka.tools.ProducerPerformance", "--topic", TOPIC_RF3,
               "--num-records", "NUM", "--record-size", "1024", "--throughput", "-1", "--print-metrics",
               "--command-property"] + props
        res["command"] = " ".join(cmd)
        # warm-up (discarded): a tenth of the records
        warm = [x if x != "NUM" else str(max(a.records // 10, 1000)) for x in cmd]
        subprocess.run(warm, capture_output=True, text=True, timeout=600)
        pids = {b: cl.procs[b].popen.pid for b in cl.brokers()}
        cpu0 = {b: proc_cpu_s(p) for b, p in pids.items()}
        t0 = time.time()
        r = subprocess.run([x if x != "NUM" else str(a.records) for x in cmd], capture_output=True, text=True,
                           timeout=1800)
        wall = time.time() - t0
        cpu1 = {b: proc_cpu_s(p) for b, p in pids.items()}
        (work / "producer-perf.out").write_text(r.stdout + "\n--- stderr\n" + r.stderr)
        m = PP_SUMMARY.search(r.stdout)
        if r.returncode != 0 or not m:
            raise RuntimeError(f"ProducerPerformance exit {r.returncode}: {(r.stdout + r.stderr)[-2000:]}")
        errors = len(re.findall(r"Exception", r.stdout + r.stderr))
        records = int(m.group(1))
        gib = records * 1024 / (1 << 30)
        cpu = {b: round(cpu1[b] - cpu0[b], 2) for b in pids if cpu1[b] is not None and cpu0[b] is not None}
        res.update({
            "records": records, "records_per_s": float(m.group(2)), "mb_per_s": float(m.group(3)),
            "latency_ms": {"avg": float(m.group(4)), "max": float(m.group(5)), "p50": int(m.group(6)),
                           "p95": int(m.group(7)), "p99": int(m.group(8)), "p999": int(m.group(9))},
            "wall_s": round(wall, 2), "client_exceptions": errors,
            "broker_cpu_s": cpu, "broker_cpu_s_total": round(sum(cpu.values()), 2),
            "broker_cpu_s_per_gib": round(sum(cpu.values()) / gib, 2) if len(cpu) == 3 else None,
            "request_size_avg_bytes": metric(r.stdout, "request-size-avg"),
            "request_size_max_bytes": metric(r.stdout, "request-size-max"),
            "records_per_request_avg": metric(r.stdout, "records-per-request-avg"),
            "batch_size_avg_bytes": metric(r.stdout, "batch-size-avg"),
        })
    except Exception as e:  # noqa: BLE001 - reported, never turned into a figure
        res["error"] = f"{type(e).__name__}: {e}"
        log(f"{target}: ERROR {res['error']}")
    finally:
        res["exit_codes"] = cl.shutdown()
        res["logs"] = str(work)
        for p in cl.procs.values():
            subprocess.run(["rm", "-rf", str(p.data)])
    return res


def rf3_main(a, argv) -> int:
    out = REPO / "bench" / "work" / f"{a.date}-rf3"
    out.mkdir(parents=True, exist_ok=True)
    libs = kafka_tools_libs()
    res = {"command": "bench/rf3/run " + " ".join(argv), "date": a.date, "records": a.records,
           "producer_props": PRODUCER_PROPS, "host": host_info(), "targets": {}}
    for t in a.brokers.split(","):
        res["targets"][t] = rf3_target(t, a, out, libs)
        (a.results / f"{a.date}-rf3.json").write_text(json.dumps(res, indent=1) + "\n")
    write_rf3_md(res, a.results)
    return 0 if all(r["error"] is None for r in res["targets"].values()) else 1


def write_rf3_md(res: dict, results: Path) -> None:
    ts = res["targets"]
    rows = [("produce MB/s", lambda r: r.get("mb_per_s")),
            ("records/s", lambda r: r.get("records_per_s")),
            ("produce latency p50 ms", lambda r: r.get("latency_ms", {}).get("p50")),
            ("produce latency p99 ms", lambda r: r.get("latency_ms", {}).get("p99")),
            ("produce latency max ms", lambda r: r.get("latency_ms", {}).get("max")),
            ("broker CPU s, 3 brokers", lambda r: r.get("broker_cpu_s_total")),
            ("broker CPU s per GiB produced (3 brokers)", lambda r: r.get("broker_cpu_s_per_gib")),
            ("bytes per produce request (avg)", lambda r: r.get("request_size_avg_bytes")),
            ("records per produce request (avg)", lambda r: r.get("records_per_request_avg")),
            ("wall s", lambda r: r.get("wall_s"))]
    names = list(ts)
    L = [f"# RF=3 produce throughput, 3 Sluice vs 3 Kafka 4.4 brokers ({res['date']})", "",
         f"Command: `{res['command']}` (inside `ip netns exec bench`)."
         + (f" Figures recomputed from the kept ack logs with `{res['rerendered']}`." if res.get("rerendered") else ""),
         "",
         f"Kafka's ProducerPerformance 4.4.0, {res['records']:,} records of 1 KiB (after a discarded warm-up "
         "of a tenth of that), `--throughput -1`, 16 partitions, RF=3, min.insync.replicas=2, "
         + ", ".join(f"`{k}={v}`" for k, v in res["producer_props"].items()) +
         ". Latency is send()-to-ack at full speed (mostly queueing in the producer), not end-to-end. "
         "Broker CPU: utime+stime of the 3 broker processes (controllers not counted) over the measured run.",
         "", "| figure | " + " | ".join(names) + (" | Sluice/Kafka |" if len(names) == 2 else " |"),
         "|---|" + "---:|" * (len(names) + (1 if len(names) == 2 else 0))]
    for label, f in rows:
        vals = [f(ts[n]) for n in names]
        cells = ["—" if v is None else (f"{v:,.2f}" if isinstance(v, float) else f"{v:,}") for v in vals]
        ratio = ""
        if len(names) == 2:
            ratio = f" {vals[0] / vals[1]:.2f} |" if all(isinstance(v, (int, float)) and v for v in vals) else " — |"
        L.append(f"| {label} | " + " | ".join(cells) + " |" + ratio)
    L.append("")
    for n in names:
        if ts[n]["error"]:
            L.append(f"**{n} failed:** {ts[n]['error']}\n")
        else:
            L.append(f"- {n}: per-broker CPU s {ts[n]['broker_cpu_s']}, client exceptions {ts[n]['client_exceptions']}")
    L += ["", f"Host: {res['host']}", ""]
    (results / f"{res['date']}-rf3.md").write_text("\n".join(L))


# ---------------------------------------------------------------------------- main

def host_info() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    return f"{os.cpu_count()} vCPU {cpu}, load {' '.join(open('/proc/loadavg').read().split()[:3])} at start"


def main(argv: list[str]) -> int:
    if argv and argv[0] == "_producer":
        ap = argparse.ArgumentParser()
        for k in ("--bootstrap", "--acked-file", "--stop-file"):
            ap.add_argument(k, required=True)
        ap.add_argument("--rate", type=int, required=True)
        ap.add_argument("--partitions", type=int, required=True)
        ap.add_argument("--client-conf", action="append", default=[])
        return run_producer(ap.parse_args(argv[1:]))
    mode = argv[0]
    ap = argparse.ArgumentParser(prog=f"bench/{mode}/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", default="sluice,kafka")
    ap.add_argument("--sluice-bin", type=Path, default=Path(os.environ.get("SLUICE_BIN", REPO / "target/release/sluice")))
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    ap.add_argument("--results", type=Path, default=RESULTS, help="where <date>-{failover,rf3}.{md,json} go")
    ap.add_argument("--in-netns", action="store_true", help=argparse.SUPPRESS)
    if mode == "failover":
        ap.add_argument("--reps", type=int, default=3, help="repetitions of each of kill -9 and SIGTERM")
        ap.add_argument("--rate", type=int, default=300, help="records/s, all partitions together")
        ap.add_argument("--partitions", type=int, default=6)
        ap.add_argument("--warmup", type=float, default=5)
        ap.add_argument("--gap", type=float, default=2, help="s between repetitions once the cluster is whole")
        ap.add_argument("--timeout", type=float, default=60, help="s to wait for partition 0's acks")
        ap.add_argument("--client-conf", action="append", default=[], metavar="K=V",
                        help="librdkafka setting for the producer (repeatable), e.g. debug=metadata,msg")
        ap.add_argument("--sluice-override", action="append", default=[], metavar="K=V",
                        help="a setting for every Sluice process (repeatable): what-if runs only")
        ap.add_argument("--rerender", action="store_true",
                        help="recompute <date>-failover.{json,md} from the ack logs kept in bench/work")
    else:
        ap.add_argument("--records", type=int, default=1_000_000, help="measured records (CI smoke: 30000)")
    a = ap.parse_args(argv[1:])
    a.sluice_bin = a.sluice_bin.resolve()
    a.results = a.results.resolve()
    a.results.mkdir(parents=True, exist_ok=True)

    def interrupted(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    # SIGTERM (and SIGINT, which a shell ignores in background jobs) unwind through the `finally`
    # blocks that stop the clusters.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    if not a.in_netns and not rf.in_named_netns() and not getattr(a, "rerender", False):
        subprocess.run(["ip", "netns", "add", "bench"], capture_output=True)
        subprocess.run(["ip", "netns", "exec", "bench", "ip", "link", "set", "lo", "up"], check=True)
        return subprocess.run(["ip", "netns", "exec", "bench", sys.executable, str(Path(__file__).resolve()),
                               *argv, "--in-netns"]).returncode
    argv = [x for x in argv[1:] if x != "--in-netns"]
    return failover_main(a, argv) if mode == "failover" else rf3_main(a, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
