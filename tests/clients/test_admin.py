"""Admin: create/delete/list topics and describe cluster through the Java AdminClient and
kafka-python's KafkaAdminClient; creating an existing topic fails with TopicExistsException;
metadata for an unknown topic (auto create on) creates it with num.partitions partitions."""

import time

import pytest
from kafka import KafkaProducer

import harness
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import TopicAlreadyExistsError

NUM_PARTITIONS = 3
BROKER_SETTINGS = {"num.partitions": NUM_PARTITIONS, "auto.create.topics.enable": True}


def _java_topics(java_tool, broker, tmp_path):
    r = java_tool(["admin", "list", "--bootstrap", broker.bootstrap], logdir=tmp_path, quick=True)
    return {l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("topic ")}


def _eventually(fn, what, timeout=30):
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_java_admin(broker, java_tool, tmp_path):
    bs = broker.bootstrap
    r = java_tool(["admin", "describe-cluster", "--bootstrap", bs], logdir=tmp_path, quick=True)
    assert f"nodes=1@127.0.0.1:{broker.port}" in r.stdout, f"describe cluster must show node 1 at {bs}:\n{r.stdout}"
    assert "controller=1" in r.stdout, r.stdout
    cluster_id = r.stdout.split("cluster_id=")[1].split()[0]
    assert cluster_id and cluster_id != "null", r.stdout

    r = java_tool(["admin", "create", "--bootstrap", bs, "--topic", "adm-java", "--partitions", "4"],
                  logdir=tmp_path, quick=True)
    assert "created adm-java partitions=4" in r.stdout, r.stdout
    r = java_tool(["admin", "create", "--bootstrap", bs, "--topic", "adm-java", "--partitions", "4"],
                  logdir=tmp_path, quick=True, check=False)
    assert r.returncode == 10 and "TopicExistsException" in r.stdout, \
        f"creating an existing topic must fail with TopicExistsException, got rc={r.returncode}:\n{r.stdout}\n{r.stderr[-2000:]}"
    r = java_tool(["admin", "describe-topic", "--bootstrap", bs, "--topic", "adm-java"], logdir=tmp_path, quick=True)
    assert "partitions=4" in r.stdout and r.stdout.count("leader=1 ") == 4, r.stdout
    assert "adm-java" in _java_topics(java_tool, broker, tmp_path)

    r = java_tool(["admin", "delete", "--bootstrap", bs, "--topic", "adm-java"], logdir=tmp_path, quick=True)
    assert "deleted adm-java" in r.stdout, r.stdout
    _eventually(lambda: "adm-java" not in _java_topics(java_tool, broker, tmp_path), "adm-java to disappear from the topic list")
    r = java_tool(["admin", "delete", "--bootstrap", bs, "--topic", "adm-java-never-existed"], logdir=tmp_path,
                  quick=True, check=False)
    assert r.returncode != 0 and "UnknownTopicOrPartitionException" in r.stdout, \
        f"deleting an unknown topic must fail with UnknownTopicOrPartitionException:\n{r.stdout}"


def test_java_metadata_auto_create(broker, java_tool, tmp_path):
    bs = broker.bootstrap
    r = java_tool(["admin", "autocreate", "--bootstrap", bs, "--topic", "auto-java"], logdir=tmp_path, quick=True)
    assert f"partitions={NUM_PARTITIONS}" in r.stdout, \
        f"auto-created topic must have num.partitions={NUM_PARTITIONS} partitions:\n{r.stdout}"
    r = java_tool(["admin", "describe-topic", "--bootstrap", bs, "--topic", "auto-java"], logdir=tmp_path, quick=True)
    assert f"partitions={NUM_PARTITIONS}" in r.stdout, r.stdout
    # usable right away
    r = java_tool(["produce", "--bootstrap", bs, "--topic", "auto-java", "--count", "1000"], logdir=tmp_path)
    assert "acked=1000 failed=0" in r.stdout, r.stdout
    r = java_tool(["consume", "--bootstrap", bs, "--topic", "auto-java", "--expect", "1000"], logdir=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), r.stdout


def test_python_admin(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        cl = admin.describe_cluster()
        assert [(b["broker_id"], b["host"], b["port"]) for b in cl["brokers"]] == [(1, "127.0.0.1", broker.port)], cl
        assert cl["controller_id"] == 1, cl
        assert cl["cluster_id"], cl

        admin.create_topics([NewTopic("adm-py-a", num_partitions=2, replication_factor=1),
                             NewTopic("adm-py-b", num_partitions=5, replication_factor=1)])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("adm-py-a", num_partitions=2, replication_factor=1)])
        topics = set(admin.list_topics())
        assert {"adm-py-a", "adm-py-b"} <= topics, topics
        d = {t["name"]: t for t in admin.describe_topics(["adm-py-a", "adm-py-b"])}
        assert len(d["adm-py-a"]["partitions"]) == 2 and len(d["adm-py-b"]["partitions"]) == 5, d
        assert all(p["leader_id"] == 1 for t in d.values() for p in t["partitions"]), d

        admin.delete_topics(["adm-py-a"])
        _eventually(lambda: "adm-py-a" not in set(admin.list_topics()), "adm-py-a to disappear")
        assert "adm-py-b" in set(admin.list_topics())
    finally:
        admin.close()


def test_python_admin_lists_topics_and_describes_the_cluster(broker):
    """kafka-python's KafkaAdminClient view, checked like every client's (harness.check_cluster_view):
    list_topics(), describe_topics() of all topics and of the created ones, describe_cluster()."""
    topics = {"adm-py-view-a": 1, "adm-py-view-b": 3}
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1) for t, n in topics.items()])

        def led():  # Kafka publishes a created topic to its metadata asynchronously
            try:
                d = admin.describe_topics(list(topics))
            except Exception:  # kafka-python raises for an unknown topic
                return False
            return all(t["error_code"] == 0 and len(t["partitions"]) == topics[t["name"]]
                       and all(p["leader_id"] >= 0 for p in t["partitions"]) for t in d)
        _eventually(led, "the created topics to be led")
        names = set(admin.list_topics())
        every = {t["name"]: t for t in admin.describe_topics()}
        assert names == set(every), f"list_topics() {sorted(names)} vs describe_topics() {sorted(every)}"
        described = {t["name"]: t for t in admin.describe_topics(list(topics))}
        cluster = admin.describe_cluster()
        view = {
            "client": "kafka-python KafkaAdminClient",
            "cluster_ids": {"describe_cluster": cluster["cluster_id"]},
            "controller": cluster["controller_id"],
            "brokers": [{"id": b["broker_id"], "host": b["host"], "port": b["port"]} for b in cluster["brokers"]],
            "listed": {n: len(t["partitions"]) for n, t in every.items()},
            "described": {n: [{"partition": p["partition_index"], "leader": p["leader_id"],
                               "replicas": p["replica_nodes"], "isr": p["isr_nodes"]} for p in t["partitions"]]
                          for n, t in described.items()},
        }
        for n, t in described.items():
            assert t["error_code"] == 0, t
        harness.check_cluster_view(view, broker, topics)
    finally:
        admin.close()


def test_python_metadata_auto_create(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False, max_block_ms=30000)
    try:
        parts = producer.partitions_for("auto-py")
        assert parts == set(range(NUM_PARTITIONS)), \
            f"auto-created topic must have num.partitions={NUM_PARTITIONS} partitions, got {parts}"
        md = producer.send("auto-py", key=b"k", value=b"v").get(timeout=30)
        assert md.offset == 0, md
    finally:
        producer.close()
