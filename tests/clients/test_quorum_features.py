"""Kafka's operator tools on the controller quorum and the cluster's features, from the Maven
Central jars (kafka_cli.py): `kafka-metadata-quorum describe --status / --replication`
(DescribeQuorum, forwarded by the broker to the active controller), `kafka-features describe /
upgrade / downgrade` (ApiVersions' feature fields, UpdateFeatures), and the Java client's
KIP-714 telemetry with its default `enable.metrics.push=true` against a broker without a
client-metrics plugin.  Every check reads the tools' output; the same tests pass against
Apache Kafka (SLUICE_TARGET=kafka), so no level or id of one implementation is hard-coded."""

from __future__ import annotations

import json
import re
import time

import kafka_api_versions
import kafka_cli
import pytest

from harness import java_create_topic

GET_TELEMETRY_SUBSCRIPTIONS = 71
PUSH_TELEMETRY = 72
UPDATE_FEATURES = 57
DESCRIBE_QUORUM = 55


@pytest.fixture(scope="module")
def cli(broker, tmp_path_factory):
    """run(tool, *args, **kw): the tool against the module's broker (--bootstrap-server first,
    as these tools take it before their sub-command)."""
    kafka_cli.ensure_tools_libs()
    logdir = tmp_path_factory.mktemp("kafka-cli")

    def run(tool, *args, **kw):
        return kafka_cli.run(tool, "--bootstrap-server", broker.bootstrap, *args, logdir=logdir, **kw)

    return run


def quorum_status(cli) -> dict[str, str]:
    """`describe --status` as {field: value}."""
    out = cli("kafka-metadata-quorum", "describe", "--status").stdout
    fields = {}
    for ln in out.splitlines():
        if ":" in ln:
            key, value = ln.split(":", 1)
            fields[key.strip()] = value.strip()
    return fields


def quorum_replication(cli) -> list[dict[str, str]]:
    """`describe --replication` as one {column: value} per replica."""
    rows = [ln.split("\t") for ln in cli("kafka-metadata-quorum", "describe", "--replication").stdout.splitlines()
            if ln.strip()]
    header = [c.strip() for c in rows[0]]
    assert header[:7] == ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                          "LastCaughtUpTimestamp", "Status"], header
    return [dict(zip(header, (c.strip() for c in row))) for row in rows[1:]]


def features(cli) -> dict[str, dict[str, str]]:
    """`kafka-features describe` as {feature: {SupportedMinVersion, SupportedMaxVersion,
    FinalizedVersionLevel, Epoch}}."""
    described = {}
    for ln in cli("kafka-features", "describe").stdout.splitlines():
        m = re.findall(r"(\w+): (\S+)", ln)
        if m and m[0][0] == "Feature":
            described[m[0][1]] = dict(m[1:])
    return described


def release_key(version: str) -> tuple[int, int, int]:
    """metadata.version as the tool prints it ("4.4-IV2") → (4, 4, 2), for ordering."""
    m = re.fullmatch(r"(\d+)\.(\d+)-IV(\d+)", version)
    assert m, version
    return tuple(int(g) for g in m.groups())


def test_metadata_quorum_status(cli):
    status = quorum_status(cli)
    leader = int(status["LeaderId"])
    assert leader >= 0, status
    assert int(status["LeaderEpoch"]) >= 1, status
    # The log holds at least the cluster's first records (registration, cluster id).
    assert int(status["HighWatermark"]) >= 1, status
    assert int(status["MaxFollowerLag"]) >= 0 and int(status["MaxFollowerLagTimeMs"]) >= 0, status
    voters = json.loads(status["CurrentVoters"])
    assert leader in [v["id"] for v in voters], status
    assert isinstance(json.loads(status["CurrentObservers"]), list), status
    assert status["ClusterId"], status


def test_metadata_quorum_replication(cli):
    status = quorum_status(cli)
    rows = quorum_replication(cli)
    leaders = [r for r in rows if r["Status"] == "Leader"]
    assert len(leaders) == 1, rows
    leader = leaders[0]
    assert int(leader["NodeId"]) == int(status["LeaderId"]), (rows, status)
    assert int(leader["Lag"]) == 0, leader
    assert int(leader["LogEndOffset"]) >= int(status["HighWatermark"]) >= 1, (leader, status)
    now_ms = time.time() * 1000
    # The leader reports its own fetch and caught-up times as now.
    for column in ("LastFetchTimestamp", "LastCaughtUpTimestamp"):
        assert abs(int(leader[column]) - now_ms) < 120_000, (column, leader)
    voter_ids = {v["id"] for v in json.loads(status["CurrentVoters"])}
    assert {int(r["NodeId"]) for r in rows if r["Status"] in ("Leader", "Follower")} == voter_ids, rows


def test_describe_quorum_and_update_features_are_advertised(broker):
    apis = kafka_api_versions.query(broker.bootstrap)
    assert apis[DESCRIBE_QUORUM][0] == 0 and apis[DESCRIBE_QUORUM][1] >= 2, apis[DESCRIBE_QUORUM]
    assert apis[UPDATE_FEATURES][0] == 0 and apis[UPDATE_FEATURES][1] >= 1, apis[UPDATE_FEATURES]


def test_features_describe(cli):
    described = features(cli)
    mv = described["metadata.version"]
    lowest, highest, finalized = (release_key(mv[k]) for k in
                                  ("SupportedMinVersion", "SupportedMaxVersion", "FinalizedVersionLevel"))
    # Kafka 4.x runs nothing below 3.3-IV3.
    assert (3, 3, 3) <= lowest <= finalized <= highest, mv
    # KIP-966: a Kafka 4.4 cluster is created with eligible leader replicas on (level 1).
    elr = described["eligible.leader.replicas.version"]
    assert (elr["SupportedMinVersion"], elr["SupportedMaxVersion"], elr["FinalizedVersionLevel"]) == ("0", "1", "1"), elr
    for name, f in described.items():
        assert int(f["Epoch"]) >= 1, (name, f)
        if name != "metadata.version":
            assert int(f["SupportedMinVersion"]) <= int(f["FinalizedVersionLevel"]) <= int(f["SupportedMaxVersion"]), (name, f)


def test_features_upgrade_refused_with_kafkas_message(cli):
    r = cli("kafka-features", "upgrade", "--feature", "group.version=99", check=False)
    assert r.returncode != 0, r.stdout
    assert re.search(r"(Can not|Could not) upgrade group\.version to 99\. The update failed for all features since "
                     r"the following feature had an error: Invalid update version 99 for feature group\.version\. "
                     r"Local controller \d+ only supports versions \d+(-\d+)?$", r.stdout, re.M), r.stdout
    r = cli("kafka-features", "upgrade", "--feature", "sluice.no.such.feature=1", "--dry-run", check=False)
    assert r.returncode != 0, r.stdout
    assert ("Invalid update version 1 for feature sluice.no.such.feature. Local controller" in r.stdout
            and "does not support this feature." in r.stdout), r.stdout


def test_features_upgrade_to_the_finalized_level_goes_through_the_metadata_log(cli):
    before = features(cli)["metadata.version"]
    current = before["FinalizedVersionLevel"]
    # --metadata takes the release name the tool printed (deprecated in 4.x, still served).
    r = cli("kafka-features", "upgrade", "--metadata", current, "--dry-run")
    m = re.search(r"^metadata\.version can be upgraded to (\d+)\.$", r.stdout, re.M)
    assert m, r.stdout
    level = int(m.group(1))
    r = cli("kafka-features", "upgrade", "--feature", f"metadata.version={level}")
    assert f"metadata.version was upgraded to {level}." in r.stdout, r.stdout
    after = features(cli)["metadata.version"]
    assert after["FinalizedVersionLevel"] == current, (before, after)
    # The FeatureLevel record went through the metadata log: the finalized epoch (the metadata
    # offset of the broker's image) moved past it.
    assert int(after["Epoch"]) > int(before["Epoch"]), (before, after)
    r = cli("kafka-features", "downgrade", "--feature", "group.version=0", "--dry-run")
    assert "group.version can be downgraded to 0." in r.stdout, r.stdout


def test_java_client_telemetry_without_a_metrics_plugin(broker, java_tool, tmp_path):
    """KIP-714: a broker without a client-metrics plugin does not advertise
    GetTelemetrySubscriptions/PushTelemetry (Kafka 4.4 lists them UNSUPPORTED), so the Java
    client (enable.metrics.push=true by default) sends neither and logs nothing about it."""
    apis = kafka_api_versions.query(broker.bootstrap)
    assert GET_TELEMETRY_SUBSCRIPTIONS not in apis and PUSH_TELEMETRY not in apis, sorted(apis)
    topic = "telemetry-default"
    java_create_topic(broker.bootstrap, topic, 1, logdir=tmp_path)
    r = java_tool(["produce", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "500",
                   "--acks", "all"], logdir=tmp_path)
    assert "acked=500 failed=0" in r.stdout, r.stdout
    produce_log = r.stderr
    r = java_tool(["consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--expect", "500"],
                  logdir=tmp_path)
    assert r.stdout.rstrip().endswith("OK"), r.stdout
    # The tool logs the clients' WARN and ERROR lines to stderr.
    for log in (produce_log, r.stderr):
        bad = [ln for ln in log.splitlines() if re.search(r"telemetry|metrics push", ln, re.I)]
        assert not bad, bad
