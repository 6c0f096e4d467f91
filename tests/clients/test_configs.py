"""Topic configs and DeleteRecords through the Java AdminClient: a topic created with
segment.bytes=1 MiB and retention.ms=60000 shows both in describeConfigs as
DYNAMIC_TOPIC_CONFIG; incrementalAlterConfigs changes retention.ms (and DELETE falls back to the
default); deleteRecords(beforeOffset=N) answers lowWatermark N, and a consumer seeking to the
beginning then starts at N."""

TOPIC = "cfg-java"


def _configs(java_tool, broker, tmp_path):
    r = java_tool(["admin", "describe-configs", "--bootstrap", broker.bootstrap, "--topic", TOPIC],
                  logdir=tmp_path, quick=True)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("config "):
            name, rest = line[len("config "):].split("=", 1)
            value, source = rest.split(" source=", 1)
            out[name] = (value, source.split()[0])
    return out, r.stdout


def test_java_topic_configs_and_delete_records(broker, java_tool, tmp_path):
    bs = broker.bootstrap
    r = java_tool(["admin", "create", "--bootstrap", bs, "--topic", TOPIC, "--partitions", "1",
                   "--configs", "segment.bytes=1048576,retention.ms=60000"], logdir=tmp_path, quick=True)
    assert f"created {TOPIC}" in r.stdout, r.stdout

    configs, out = _configs(java_tool, broker, tmp_path)
    assert configs.get("segment.bytes") == ("1048576", "DYNAMIC_TOPIC_CONFIG"), out
    assert configs.get("retention.ms") == ("60000", "DYNAMIC_TOPIC_CONFIG"), out
    assert configs.get("cleanup.policy", ("", ""))[0] == "delete", out
    assert configs.get("max.message.bytes", ("", ""))[1] in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG"), out

    r = java_tool(["admin", "alter-configs", "--bootstrap", bs, "--topic", TOPIC,
                   "--set", "retention.ms=120000", "--delete", "segment.bytes"], logdir=tmp_path, quick=True)
    assert "altered" in r.stdout, r.stdout
    configs, out = _configs(java_tool, broker, tmp_path)
    assert configs.get("retention.ms") == ("120000", "DYNAMIC_TOPIC_CONFIG"), out
    assert configs.get("segment.bytes", ("", ""))[1] != "DYNAMIC_TOPIC_CONFIG", out

    r = java_tool(["produce", "--bootstrap", bs, "--topic", TOPIC, "--count", "100"], logdir=tmp_path)
    assert "acked=100 failed=0" in r.stdout, r.stdout
    n = 37
    r = java_tool(["admin", "delete-records", "--bootstrap", bs, "--topic", TOPIC, "--partition", "0",
                   "--before", str(n)], logdir=tmp_path, quick=True)
    assert f"low_watermark={n}" in r.stdout, r.stdout
    r = java_tool(["admin", "first-offset", "--bootstrap", bs, "--topic", TOPIC, "--partition", "0"],
                  logdir=tmp_path, quick=True)
    assert f"position={n} first_offset={n}" in r.stdout, r.stdout
