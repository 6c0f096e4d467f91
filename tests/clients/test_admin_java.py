"""Java AdminClient (kafka-clients 4.4.0, tests/clients/java) reading the cluster back: listTopics
(with and without internal topics, with topic ids), describeCluster (cluster id, controller, nodes)
and describeTopics (partitions, leader, replicas, ISR per partition; an unknown topic fails only its
own entry). Values are checked against what the test created and against other clients' answers:
the cluster id against librdkafka's Metadata (confluent-kafka), the topic ids against listTopics.

Kafka 4.4's AdminClient describes topics with DescribeTopicPartitions where the broker advertises it
and with Metadata otherwise, so the same test covers whichever the broker serves."""

from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

BROKER_SETTINGS = {"num.partitions": 1, "auto.create.topics.enable": False}
NODE_ID = 1  # the suite's single node (node.id 1 for Sluice and Kafka alike)
OFFSETS_TOPIC_PARTITIONS = 50  # Kafka's offsets.topic.num.partitions default


def admin(java_tool, broker, tmp_path, *args):
    return java_tool(["admin", *args, "--bootstrap", broker.bootstrap], logdir=tmp_path, quick=True).stdout


def listings(java_tool, broker, tmp_path, internal):
    """{name: (topic id, internal)} from listTopics."""
    out = admin(java_tool, broker, tmp_path, "list-detail", "--internal", str(internal).lower())
    found = {}
    for line in out.splitlines():
        if line.startswith("listing "):
            _, name, tid, flag = line.split(" ")
            found[name] = (tid.removeprefix("id="), flag == "internal=true")
    return found


def describe_topics(java_tool, broker, tmp_path, names):
    """{name: {"id", "internal", "partitions": {p: (leader, replicas, isr)}} or the exception name}."""
    out = admin(java_tool, broker, tmp_path, "describe-topics", "--topics", ",".join(names))
    topics = {}
    for line in out.splitlines():
        words = line.split(" ")
        if words[0] == "error":
            topics[words[1]] = words[2]
        elif words[0] == "topic":
            fields = dict(w.split("=", 1) for w in words[2:])
            topics[words[1]] = {"id": fields["id"], "internal": fields["internal"] == "true",
                                "count": int(fields["partitions"]), "partitions": {}}
        elif words[0] == "partition":
            fields = dict(w.split("=", 1) for w in words[3:])
            ids = lambda v: [int(x) for x in v.split(";") if x]  # noqa: E731
            topics[words[1]]["partitions"][int(words[2])] = (int(fields["leader"]), ids(fields["replicas"]),
                                                             ids(fields["isr"]))
    return topics


def test_java_admin_lists_and_describes(broker, java_tool, tmp_path):
    created = {"adm-java-three": 3, "adm-java-one": 1}
    for topic, partitions in created.items():
        out = admin(java_tool, broker, tmp_path, "create", "--topic", topic, "--partitions", str(partitions))
        assert f"created {topic} partitions={partitions}" in out, out
    # A committed offset makes the broker create __consumer_offsets (internal).
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("adm-java-one", b"x").get(timeout=30)
    producer.close()
    consumer = KafkaConsumer("adm-java-one", bootstrap_servers=broker.bootstrap, group_id="adm-java-group",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    assert sum(len(v) for v in consumer.poll(timeout_ms=20000, max_records=1).values()) == 1
    consumer.commit()
    consumer.close()

    # listTopics: user topics only by default, internal ones on request; every topic has an id.
    plain = listings(java_tool, broker, tmp_path, internal=False)
    assert set(plain) == set(created), plain
    assert not any(internal for _, internal in plain.values()), plain
    every = listings(java_tool, broker, tmp_path, internal=True)
    assert set(every) == set(created) | {"__consumer_offsets"}, every
    assert every["__consumer_offsets"][1] is True, every
    ids = {name: tid for name, (tid, _) in every.items()}
    assert len(set(ids.values())) == len(ids) and "AAAAAAAAAAAAAAAAAAAAAA" not in ids.values(), ids

    # describeCluster: this node at the port the test connected to, as controller too, and the
    # cluster id librdkafka reads from Metadata.
    out = admin(java_tool, broker, tmp_path, "describe-cluster")
    assert f"nodes={NODE_ID}@127.0.0.1:{broker.port}\n" in out, out
    assert f"controller={NODE_ID}\n" in out and f"controller_node={NODE_ID}@127.0.0.1:{broker.port}" in out, out
    cluster_id = out.split("cluster_id=")[1].split()[0]
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=30)
    assert cluster_id == metadata.cluster_id and len(cluster_id) == 22, (cluster_id, metadata.cluster_id)

    # describeTopics: every partition led by this node, which is its only replica and in sync.
    described = describe_topics(java_tool, broker, tmp_path,
                                [*created, "adm-java-missing", "__consumer_offsets"])
    assert described["adm-java-missing"] == "UnknownTopicOrPartitionException", described
    for topic, partitions in created.items():
        d = described[topic]
        assert d["id"] == ids[topic] and d["internal"] is False and d["count"] == partitions, d
        assert d["partitions"] == {p: (NODE_ID, [NODE_ID], [NODE_ID]) for p in range(partitions)}, d
    offsets = described["__consumer_offsets"]
    assert offsets["internal"] is True and offsets["id"] == ids["__consumer_offsets"], offsets
    assert offsets["count"] == OFFSETS_TOPIC_PARTITIONS, offsets
    assert all(v == (NODE_ID, [NODE_ID], [NODE_ID]) for v in offsets["partitions"].values()), offsets
