//! End-to-end: topic configs (CreateTopics overrides, DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs) and DeleteRecords, over the broker's Kafka listener.

#![allow(clippy::unwrap_used)] // test code
mod support;

use sluice_protocol::messages::alter_configs::{
    AlterConfigsRequest, AlterConfigsResource, AlterableConfig,
};
use sluice_protocol::messages::create_topics::{
    CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use sluice_protocol::messages::delete_records::{
    DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic,
};
use sluice_protocol::messages::describe_configs::{
    config_source, config_type, DescribeConfigsRequest, DescribeConfigsResource,
    DescribeConfigsResult, RESOURCE_BROKER, RESOURCE_TOPIC,
};
use sluice_protocol::messages::incremental_alter_configs::{
    self as iac, IncrementalAlterConfigsRequest,
};
use sluice_protocol::messages::list_offsets::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{batch, fetch, produce, Broker, Client};

const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const OFFSET_OUT_OF_RANGE: i16 = 1;

fn create_with_configs(client: &mut Client, name: &str, configs: &[(&str, &str)]) -> i16 {
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.to_string(),
            num_partitions: 2,
            replication_factor: 1,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: k.to_string(),
                    value: Some(v.to_string()),
                })
                .collect(),
            ..CreatableTopic::default()
        }],
        timeout_ms: 30_000,
        validate_only: false,
    };
    let ResponseBody::CreateTopics(response) =
        client.call(19, 7, RequestBody::CreateTopics(request))
    else {
        panic!("wrong response kind")
    };
    response.topics[0].error_code
}

fn describe(
    client: &mut Client,
    version: i16,
    resource_type: i8,
    name: &str,
    keys: Option<&[&str]>,
    synonyms: bool,
) -> DescribeConfigsResult {
    let request = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type,
            resource_name: name.to_string(),
            configuration_keys: keys.map(|k| k.iter().map(|s| s.to_string()).collect()),
        }],
        include_synonyms: synonyms,
        include_documentation: true,
    };
    let ResponseBody::DescribeConfigs(mut response) =
        client.call(32, version, RequestBody::DescribeConfigs(request))
    else {
        panic!("wrong response kind")
    };
    response.results.remove(0)
}

fn value_of(result: &DescribeConfigsResult, name: &str) -> (Option<String>, i8) {
    let entry = result
        .configs
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} not described"));
    (entry.value.clone(), entry.config_source)
}

fn incremental(
    client: &mut Client,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let request = IncrementalAlterConfigsRequest {
        resources: vec![iac::AlterConfigsResource {
            resource_type,
            resource_name: name.to_string(),
            configs: ops
                .iter()
                .map(|(k, op, v)| iac::AlterableConfig {
                    name: k.to_string(),
                    config_operation: *op,
                    value: v.map(str::to_string),
                })
                .collect(),
        }],
        validate_only,
    };
    let ResponseBody::IncrementalAlterConfigs(response) =
        client.call(44, 1, RequestBody::IncrementalAlterConfigs(request))
    else {
        panic!("wrong response kind")
    };
    let r = &response.responses[0];
    (r.error_code, r.error_message.clone())
}

#[test]
fn topic_configs_are_created_described_and_altered() {
    let broker = Broker::start("topic-configs", &[]);
    let mut client = broker.client();
    assert_eq!(
        create_with_configs(
            &mut client,
            "cfg",
            &[("segment.bytes", "1048576"), ("retention.ms", "60000")]
        ),
        0
    );
    assert_eq!(
        create_with_configs(&mut client, "bad-name", &[("no.such.config", "1")]),
        INVALID_CONFIG
    );
    assert_eq!(
        create_with_configs(&mut client, "bad-value", &[("segment.bytes", "12")]),
        INVALID_CONFIG
    );

    // Every version answers; overrides are DYNAMIC_TOPIC_CONFIG, the rest defaults.
    for version in 1..=4 {
        let result = describe(&mut client, version, RESOURCE_TOPIC, "cfg", None, true);
        assert_eq!(result.error_code, 0, "v{version}");
        assert_eq!(
            value_of(&result, "segment.bytes"),
            (Some("1048576".into()), config_source::DYNAMIC_TOPIC_CONFIG)
        );
        assert_eq!(
            value_of(&result, "retention.ms"),
            (Some("60000".into()), config_source::DYNAMIC_TOPIC_CONFIG)
        );
        assert_eq!(
            value_of(&result, "cleanup.policy"),
            (Some("delete".into()), config_source::DEFAULT_CONFIG)
        );
        let retention = result
            .configs
            .iter()
            .find(|c| c.name == "retention.ms")
            .unwrap();
        assert_eq!(
            retention.synonyms[0].source,
            config_source::DYNAMIC_TOPIC_CONFIG
        );
        assert!(retention
            .synonyms
            .iter()
            .any(|s| s.name == "log.retention.ms" && s.source == config_source::DEFAULT_CONFIG));
        if version >= 3 {
            assert_eq!(retention.config_type, config_type::LONG);
            assert!(retention.documentation.is_some());
        }
    }
    // Asked keys only; no synonyms unless asked.
    let result = describe(
        &mut client,
        4,
        RESOURCE_TOPIC,
        "cfg",
        Some(&["retention.ms"]),
        false,
    );
    assert_eq!(result.configs.len(), 1);
    assert!(result.configs[0].synonyms.is_empty());
    assert_eq!(
        describe(&mut client, 4, RESOURCE_TOPIC, "nope", None, false).error_code,
        UNKNOWN_TOPIC_OR_PARTITION
    );

    // IncrementalAlterConfigs: validate_only changes nothing; SET, APPEND, DELETE do.
    let (code, _) = incremental(
        &mut client,
        RESOURCE_TOPIC,
        "cfg",
        &[("retention.ms", iac::OP_SET, Some("120000"))],
        true,
    );
    assert_eq!(code, 0);
    let result = describe(&mut client, 4, RESOURCE_TOPIC, "cfg", None, false);
    assert_eq!(
        value_of(&result, "retention.ms").0.as_deref(),
        Some("60000")
    );
    let (code, message) = incremental(
        &mut client,
        RESOURCE_TOPIC,
        "cfg",
        &[
            ("retention.ms", iac::OP_SET, Some("120000")),
            ("cleanup.policy", iac::OP_APPEND, Some("compact")),
            ("segment.bytes", iac::OP_DELETE, None),
        ],
        false,
    );
    assert_eq!(code, 0, "{message:?}");
    let result = describe(&mut client, 4, RESOURCE_TOPIC, "cfg", None, false);
    assert_eq!(
        value_of(&result, "retention.ms"),
        (Some("120000".into()), config_source::DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        value_of(&result, "cleanup.policy").0.as_deref(),
        Some("delete,compact")
    );
    assert_eq!(
        value_of(&result, "segment.bytes"),
        (Some("1073741824".into()), config_source::DEFAULT_CONFIG)
    );
    let (code, _) = incremental(
        &mut client,
        RESOURCE_TOPIC,
        "cfg",
        &[("cleanup.policy", iac::OP_SUBTRACT, Some("delete"))],
        false,
    );
    assert_eq!(code, 0);
    let result = describe(&mut client, 4, RESOURCE_TOPIC, "cfg", None, false);
    assert_eq!(
        value_of(&result, "cleanup.policy").0.as_deref(),
        Some("compact")
    );
    // Errors: unknown name, bad value, APPEND to a non-list, unknown topic.
    let bad = [
        (("no.such.config", iac::OP_SET, Some("1")), INVALID_CONFIG),
        (("retention.ms", iac::OP_SET, Some("soon")), INVALID_CONFIG),
        (("retention.ms", iac::OP_APPEND, Some("1")), INVALID_CONFIG),
        (("retention.ms", 9, Some("1")), INVALID_REQUEST),
    ];
    for (op, expected) in bad {
        let (code, message) = incremental(&mut client, RESOURCE_TOPIC, "cfg", &[op], false);
        assert_eq!(code, expected, "{op:?}: {message:?}");
    }
    let (code, _) = incremental(
        &mut client,
        RESOURCE_TOPIC,
        "nope",
        &[("retention.ms", iac::OP_SET, Some("1"))],
        false,
    );
    assert_eq!(code, UNKNOWN_TOPIC_OR_PARTITION);

    // AlterConfigs replaces the whole override set.
    let request = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: RESOURCE_TOPIC,
            resource_name: "cfg".into(),
            configs: vec![AlterableConfig {
                name: "max.message.bytes".into(),
                value: Some("2048".into()),
            }],
        }],
        validate_only: false,
    };
    let ResponseBody::AlterConfigs(response) =
        client.call(33, 2, RequestBody::AlterConfigs(request))
    else {
        panic!("wrong response kind")
    };
    assert_eq!(response.responses[0].error_code, 0);
    let result = describe(&mut client, 4, RESOURCE_TOPIC, "cfg", None, false);
    assert_eq!(
        value_of(&result, "max.message.bytes"),
        (Some("2048".into()), config_source::DYNAMIC_TOPIC_CONFIG)
    );
    assert_eq!(
        value_of(&result, "retention.ms").1,
        config_source::DEFAULT_CONFIG
    );
    // ... and the new max.message.bytes applies to produce at once.
    let (code, _) = produce(&mut client, "cfg", 0, batch(&"x".repeat(1000), 4));
    assert_eq!(code, 10, "MESSAGE_TOO_LARGE");

    // Broker configs: described read-only; altering one is refused.
    let result = describe(&mut client, 4, RESOURCE_BROKER, "1", None, true);
    assert_eq!(result.error_code, 0);
    let segment = result
        .configs
        .iter()
        .find(|c| c.name == "log.segment.bytes")
        .expect("log.segment.bytes");
    assert!(segment.read_only);
    assert_eq!(segment.value.as_deref(), Some("1073741824"));
    assert_eq!(
        describe(&mut client, 4, RESOURCE_BROKER, "7", None, false).error_code,
        INVALID_REQUEST
    );
    let (code, message) = incremental(
        &mut client,
        RESOURCE_BROKER,
        "1",
        &[("log.segment.bytes", iac::OP_SET, Some("1048576"))],
        false,
    );
    assert_eq!(code, INVALID_REQUEST, "{message:?}");

    // Overrides survive a restart (they are metadata records).
    drop(client);
    let dir = broker.dir.clone();
    let port = broker.port;
    broker.stop();
    let broker = Broker::start_in(&dir, port, &[]);
    let mut client = broker.client();
    let result = describe(&mut client, 4, RESOURCE_TOPIC, "cfg", None, false);
    assert_eq!(
        value_of(&result, "max.message.bytes").0.as_deref(),
        Some("2048")
    );
    assert_eq!(
        value_of(&result, "cleanup.policy").1,
        config_source::DEFAULT_CONFIG
    );
}

fn delete_records(client: &mut Client, topic: &str, partition: i32, offset: i64) -> (i16, i64) {
    let request = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: topic.to_string(),
            partitions: vec![DeleteRecordsPartition {
                partition_index: partition,
                offset,
            }],
        }],
        timeout_ms: 30_000,
    };
    let ResponseBody::DeleteRecords(response) =
        client.call(21, 2, RequestBody::DeleteRecords(request))
    else {
        panic!("wrong response kind")
    };
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.low_watermark)
}

fn earliest(client: &mut Client, topic: &str, partition: i32) -> i64 {
    let request = ListOffsetsRequest {
        replica_id: -1,
        isolation_level: 0,
        topics: vec![ListOffsetsTopic {
            name: topic.to_string(),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                current_leader_epoch: -1,
                timestamp: -2,
            }],
        }],
        timeout_ms: 0,
    };
    let ResponseBody::ListOffsets(response) = client.call(2, 7, RequestBody::ListOffsets(request))
    else {
        panic!("wrong response kind")
    };
    response.topics[0].partitions[0].offset
}

#[test]
fn delete_records_moves_the_log_start_offset() {
    // Several shards, so that some partitions are owned by a shard other than the one serving.
    let broker = Broker::start("delete-records", &["sluice.shards=2"]);
    let mut client = broker.client();
    assert_eq!(create_with_configs(&mut client, "dr", &[]), 0);
    for partition in 0..2 {
        for i in 0..5 {
            let (code, _) = produce(&mut client, "dr", partition, batch(&format!("b{i}"), 2));
            assert_eq!(code, 0);
        }
        assert_eq!(delete_records(&mut client, "dr", partition, 4), (0, 4));
        assert_eq!(earliest(&mut client, "dr", partition), 4);
        let (code, _, _) = fetch(&mut client, "dr", partition, 0);
        assert_eq!(code, OFFSET_OUT_OF_RANGE);
        let (code, _, records) = fetch(&mut client, "dr", partition, 4);
        assert_eq!(code, 0);
        assert!(!records.is_empty());
        // Never backwards; past the high watermark is out of range; -1 means the high watermark.
        assert_eq!(delete_records(&mut client, "dr", partition, 2), (0, 4));
        assert_eq!(
            delete_records(&mut client, "dr", partition, 11).0,
            OFFSET_OUT_OF_RANGE
        );
        assert_eq!(delete_records(&mut client, "dr", partition, -1), (0, 10));
        assert_eq!(earliest(&mut client, "dr", partition), 10);
    }
    assert_eq!(
        delete_records(&mut client, "nope", 0, 1).0,
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(
        delete_records(&mut client, "dr", 9, 1).0,
        UNKNOWN_TOPIC_OR_PARTITION
    );
}
