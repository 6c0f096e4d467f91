#!/usr/bin/env python3
"""Client processes of the soak (bench/soak/run): each role is its own process, so the harness can
kill -9 it mid-request and so that no client connection outlives an active phase. Every loop is
bounded in time (--duration) and count (records = rate x duration); every role ends by printing one
JSON line (its summary) on stdout, unless it is killed.

    client.py produce --bootstrap B --topic T --rate R --size S --duration D [--idempotent]
    client.py group   --bootstrap B --topic T --group G --duration D [--client confluent|kafka-python]
    client.py admin   --bootstrap B create|delete|groups [--topics a,b] [--partitions N] [--configs k=v,..]

Clients: confluent-kafka (librdkafka) and kafka-python, as installed by tests/run. Only loopback
bootstrap addresses are accepted.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import time

STOP = False


def _stop(_sig, _frame):
    global STOP
    STOP = True


def loopback_only(bootstrap: str) -> str:
    for hp in bootstrap.split(","):
        host = hp.rsplit(":", 1)[0]
        if not (host.startswith("127.") or host in ("localhost", "[::1]")):
            sys.exit(f"client.py: {hp} is not a loopback address")
    return bootstrap


def produce(a) -> dict:
    from confluent_kafka import Producer

    p = Producer({
        "bootstrap.servers": a.bootstrap, "client.id": f"soak-{a.name}", "acks": "all",
        "enable.idempotence": a.idempotent, "linger.ms": 10, "message.timeout.ms": 30000,
        "socket.timeout.ms": 30000,
    })
    res = dict(role="produce", sent=0, acked=0, failed=0, errors=collections.Counter())

    def report(err, _msg):
        if err is None:
            res["acked"] += 1
        else:
            res["failed"] += 1
            res["errors"][err.name()] += 1

    payload = os.urandom(a.size)
    limit = int(a.rate * a.duration) + 1
    t0 = time.monotonic()
    deadline = t0 + a.duration
    while not STOP and res["sent"] < limit:
        now = time.monotonic()
        if now >= deadline:
            break
        due = min(limit, int((now - t0) * a.rate) + 1)
        while res["sent"] < due:
            try:
                p.produce(a.topic, payload, key=b"k%d" % res["sent"], on_delivery=report)
                res["sent"] += 1
            except BufferError:
                p.poll(0.05)
                break
        p.poll(0)
        time.sleep(0.01)
    res["unflushed"] = p.flush(15)
    res["errors"] = dict(res["errors"])
    return res


def group(a) -> dict:
    res = dict(role="group", client=a.client, records=0, polls=0, commits=0, commit_failed=0,
               assignments=0)
    deadline = time.monotonic() + a.duration
    if a.client == "confluent":
        from confluent_kafka import Consumer, KafkaException

        def on_assign(_c, ps):
            res["assignments"] += 1

        c = Consumer({
            "bootstrap.servers": a.bootstrap, "group.id": a.group, "client.id": f"soak-{a.name}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": a.session_timeout_ms, "heartbeat.interval.ms": 1000,
            "max.poll.interval.ms": 30000, "socket.timeout.ms": 30000,
        })
        c.subscribe([a.topic], on_assign=on_assign)
        while not STOP and time.monotonic() < deadline:
            msgs = c.consume(num_messages=500, timeout=0.5)
            res["polls"] += 1
            good = [m for m in msgs if not m.error()]
            res["records"] += len(good)
            if good:
                try:
                    c.commit(asynchronous=False)
                    res["commits"] += 1
                except KafkaException:
                    res["commit_failed"] += 1
        c.close()  # LeaveGroup
    else:
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                res["assignments"] += 1

        c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group,
                          client_id=f"soak-{a.name}", enable_auto_commit=False,
                          auto_offset_reset="earliest", session_timeout_ms=a.session_timeout_ms,
                          heartbeat_interval_ms=1000, max_poll_interval_ms=30000)
        c.subscribe([a.topic], listener=Listener())
        while not STOP and time.monotonic() < deadline:
            batches = c.poll(timeout_ms=500, max_records=500)
            res["polls"] += 1
            n = sum(len(v) for v in batches.values())
            res["records"] += n
            if n:
                try:
                    c.commit()
                    res["commits"] += 1
                except Exception:  # noqa: BLE001 - a failed commit (rebalance) is counted
                    res["commit_failed"] += 1
        c.close()  # LeaveGroup
    return res


def admin(a) -> dict:
    from confluent_kafka.admin import AdminClient, NewTopic

    ac = AdminClient({"bootstrap.servers": a.bootstrap, "client.id": f"soak-{a.name}",
                      "socket.timeout.ms": 30000})
    res = dict(role="admin", op=a.op, ok=0, failed=0, errors={})
    topics = [t for t in (a.topics or "").split(",") if t]
    if a.op == "create":
        configs = dict(kv.split("=", 1) for kv in (a.configs or "").split(",") if kv)
        # The broker's default replication factor: 1 on a single node, 3 on config/cluster (whose
        # min.insync.replicas=2 refuses acks=all on a topic with one replica).
        futs = ac.create_topics([NewTopic(t, a.partitions, -1, config=configs) for t in topics],
                                operation_timeout=20, request_timeout=30)
    elif a.op == "delete":
        futs = ac.delete_topics(topics, operation_timeout=20, request_timeout=30)
    else:  # groups: ListGroups + DescribeGroups
        futs = {}
        listed = ac.list_consumer_groups(request_timeout=30).result(timeout=35)
        ids = sorted(g.group_id for g in listed.valid)
        res["groups"] = ids
        if ids:
            futs = ac.describe_consumer_groups(ids, request_timeout=30)
    for name, f in futs.items():
        try:
            f.result(timeout=35)
            res["ok"] += 1
        except Exception as e:  # noqa: BLE001 - every failure is reported by name
            res["failed"] += 1
            res["errors"][name] = str(e)[:200]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="role", required=True)
    for role in ("produce", "group", "admin"):
        s = sub.add_parser(role)
        s.add_argument("--bootstrap", required=True)
        s.add_argument("--name", default=role)
        if role == "produce":
            s.add_argument("--topic", required=True)
            s.add_argument("--rate", type=float, required=True, help="records/s")
            s.add_argument("--size", type=int, default=1024)
            s.add_argument("--duration", type=float, required=True)
            s.add_argument("--idempotent", action="store_true")
        elif role == "group":
            s.add_argument("--topic", required=True)
            s.add_argument("--group", required=True)
            s.add_argument("--duration", type=float, required=True)
            s.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
            s.add_argument("--session-timeout-ms", type=int, default=6000)
        else:
            s.add_argument("op", choices=["create", "delete", "groups"])
            s.add_argument("--topics")
            s.add_argument("--partitions", type=int, default=3)
            s.add_argument("--configs")
    a = ap.parse_args()
    loopback_only(a.bootstrap)
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    res = {"produce": produce, "group": group, "admin": admin}[a.role](a)
    print(json.dumps(res), flush=True)
    if a.role == "produce":
        return 1 if res["failed"] or res["unflushed"] else 0
    if a.role == "admin":
        return 1 if res["failed"] else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
