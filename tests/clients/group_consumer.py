"""A consumer-group member for the client suite, with librdkafka (confluent-kafka),
kafka-python or aiokafka (run_aiokafka): subscribes, logs ownership changes and every record to an events file (format in
groups.py), commits synchronously after each processed poll, and leaves the group when the stop
file appears.

    group_consumer.py --client confluent|kafka-python|aiokafka --bootstrap B --topic T --group G
                      --events F --stop-file S [--session-timeout-ms 6000] [--assignor range]
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import time


def now_ms() -> int:
    return int(time.time() * 1000)


class EventLog:
    def __init__(self, path: str):
        self.f = open(path, "a")

    def ownership(self, kind: str, partitions) -> None:
        ps = ",".join(str(p) for p in sorted(partitions)) or "-"
        self.f.write(f"{kind} {now_ms()} {ps}\n")
        self.f.flush()

    def record(self, partition: int, offset: int, key: bytes) -> None:
        self.f.write(f"REC {partition} {offset} {key.decode()}\n")

    def committed(self, offsets: dict) -> None:
        self.f.write(f"COMMITTED {now_ms()} " + "".join(f"{p}={o}," for p, o in offsets.items()) + "\n")
        self.f.flush()

    def commit_failed(self, what: str) -> None:
        self.f.write(f"COMMIT_FAILED {now_ms()} {what}\n")
        self.f.flush()

    def flush(self) -> None:
        self.f.flush()


def run_confluent(a, log: EventLog) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    c = Consumer({
        "bootstrap.servers": a.bootstrap, "group.id": a.group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": a.session_timeout_ms,
        "heartbeat.interval.ms": a.heartbeat_interval_ms, "partition.assignment.strategy": a.assignor,
    })
    c.subscribe([a.topic],
                on_assign=lambda _c, ps: log.ownership("ASSIGN", [p.partition for p in ps]),
                on_revoke=lambda _c, ps: log.ownership("REVOKE", [p.partition for p in ps]),
                on_lost=lambda _c, ps: log.ownership("LOST", [p.partition for p in ps]))
    while not os.path.exists(a.stop_file):
        msgs = c.consume(num_messages=500, timeout=0.2)
        nxt = {}
        for m in msgs:
            if m.error():
                continue
            log.record(m.partition(), m.offset(), m.key())
            nxt[m.partition()] = m.offset() + 1
        if not nxt:
            continue
        log.flush()
        try:
            c.commit(offsets=[TopicPartition(a.topic, p, o) for p, o in nxt.items()], asynchronous=False)
            log.committed(nxt)
        except KafkaException as e:
            log.commit_failed(type(e).__name__)
    c.close()


def run_kafka_python(a, log: EventLog) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.structs import OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            log.ownership("REVOKE", [p.partition for p in revoked])

        def on_partitions_assigned(self, assigned):
            log.ownership("ASSIGN", [p.partition for p in assigned])

    c = KafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, enable_auto_commit=False,
                      auto_offset_reset="earliest", session_timeout_ms=a.session_timeout_ms,
                      heartbeat_interval_ms=a.heartbeat_interval_ms)
    c.subscribe([a.topic], listener=Listener())
    while not os.path.exists(a.stop_file):
        batches = c.poll(timeout_ms=200, max_records=500)
        nxt = {}
        for tp, msgs in batches.items():
            for m in msgs:
                log.record(tp.partition, m.offset, m.key)
                nxt[tp.partition] = m.offset + 1
        if not nxt:
            continue
        log.flush()
        try:
            c.commit({TopicPartition(a.topic, p): OffsetAndMetadata(o, "", -1) for p, o in nxt.items()})
            log.committed(nxt)
        except Exception as e:  # noqa: BLE001 - any commit failure is logged and counted
            log.commit_failed(type(e).__name__)
    c.close()


def run_aiokafka(a, log: EventLog) -> None:
    """aiokafka with its defaults except enable_auto_commit=False and auto_offset_reset="earliest"
    (session and heartbeat settings are not passed).  Its coordinator rebalances in the background,
    between our awaits, so -- as aiokafka's ConsumerRebalanceListener documents for manual commits --
    processed but not yet committed offsets are committed in on_partitions_revoked, which it awaits
    before rejoining."""
    import asyncio

    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=a.bootstrap, group_id=a.group, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        pending = {}  # partition -> next offset, processed but not committed yet

        async def commit(offsets: dict) -> None:
            if not offsets:
                return
            offsets = dict(offsets)
            try:
                await consumer.commit({TopicPartition(a.topic, p): o for p, o in offsets.items()})
            except Exception as e:  # noqa: BLE001 - any commit failure is logged and counted
                log.commit_failed(type(e).__name__)
                return
            log.committed(offsets)
            for p, o in offsets.items():
                if pending.get(p) == o:
                    del pending[p]

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                await commit({tp.partition: pending[tp.partition] for tp in revoked if tp.partition in pending})
                log.ownership("REVOKE", [tp.partition for tp in revoked])

            async def on_partitions_assigned(self, assigned):
                log.ownership("ASSIGN", [tp.partition for tp in assigned])

        consumer.subscribe([a.topic], listener=Listener())
        await consumer.start()
        try:
            while not os.path.exists(a.stop_file):
                batches = await consumer.getmany(timeout_ms=200, max_records=500)
                nxt = {}
                for tp, msgs in batches.items():
                    for m in msgs:
                        log.record(tp.partition, m.offset, m.key)
                        nxt[tp.partition] = m.offset + 1
                if not nxt:
                    continue
                log.flush()
                pending.update(nxt)
                await commit(nxt)
            await commit(pending)
            # aiokafka calls no listener on stop(); nothing is processed from here on.
            log.ownership("REVOKE", [tp.partition for tp in consumer.assignment()])
        finally:
            await consumer.stop()  # LeaveGroup

    asyncio.run(run())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", choices=["confluent", "kafka-python", "aiokafka"], required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--stop-file", required=True)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=500)
    ap.add_argument("--assignor", default="range")
    a = ap.parse_args()
    # A member that stops answering (groups.wait_until timing out) is asked for its threads'
    # stacks with SIGUSR1: they go to stderr, the member's log, which the failure report tails.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    if a.client == "kafka-python":
        # Its coordinator's INFO lines (joined, assignment received, heartbeat failures) say
        # where a member stuck in a rebalance stopped: in an intermittent failure (CI, 2026-12-07)
        # a leader never acted on the SyncGroup answer the broker logged as sent.
        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
        logging.getLogger("kafka.net").setLevel(logging.WARNING)  # per-connection chatter
    log = EventLog(a.events)
    {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}[a.client](a, log)
    print("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
