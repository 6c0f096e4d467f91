//! The local cluster's files (config/cluster/*.toml) load through the same path as
//! `sluice --config FILE --override log.dirs=…` (what config/cluster/start runs), and describe
//! the intended cluster: 3 controller-only voters, 3 broker-only nodes, one voter list.

use std::path::{Path, PathBuf};

use sluice_config::{BrokerConfig, ProcessRole, QuorumVoter};

const VOTERS: &str = "1@127.0.0.1:19093,2@127.0.0.1:19094,3@127.0.0.1:19095";

fn cluster_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster")
}

/// Loads `config/cluster/<name>.toml` as `config/cluster/start` runs it.
fn load(name: &str) -> BrokerConfig {
    let file = cluster_dir().join(format!("{name}.toml"));
    let data = format!("log.dirs=/tmp/sluice-cluster/{name}");
    BrokerConfig::load(Some(&file), &[data]).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn the_cluster_has_exactly_six_files() {
    let mut names: Vec<String> = std::fs::read_dir(cluster_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "broker-1.toml",
            "broker-2.toml",
            "broker-3.toml",
            "controller-1.toml",
            "controller-2.toml",
            "controller-3.toml"
        ]
    );
}

#[test]
fn controllers_are_controller_only_voters() {
    let voters = sluice_config::parse_quorum_voters(VOTERS).unwrap();
    for n in 1..=3 {
        let name = format!("controller-{n}");
        let config = load(&name);
        assert_eq!(config.process_roles, [ProcessRole::Controller], "{name}");
        assert_eq!(config.node_id, n, "{name}");
        assert_eq!(config.controller_quorum_voters, voters, "{name}");
        assert_eq!(config.voters(), voters, "{name}");
        assert!(config.listeners.is_empty(), "{name}: client listeners");
        assert!(config.advertised().is_empty(), "{name}");
        let listener = config.controller_listener().expect("a controller listener");
        assert_eq!(listener.name, "CONTROLLER");
        assert_eq!(listener.host, "127.0.0.1");
        let own: &QuorumVoter = voters.iter().find(|v| v.id == n).unwrap();
        assert_eq!(listener.port, own.port, "{name}: port of its voter entry");
        assert_eq!(config.controller_quorum_election_timeout_ms, 800);
        assert_eq!(config.sluice_shards, 1);
        assert_eq!(
            config.log_dirs,
            PathBuf::from(format!("/tmp/sluice-cluster/{name}"))
        );
    }
}

#[test]
fn brokers_are_broker_only_with_their_own_port_and_rack() {
    let voters = sluice_config::parse_quorum_voters(VOTERS).unwrap();
    for n in 1..=3 {
        let name = format!("broker-{n}");
        let config = load(&name);
        assert_eq!(config.process_roles, [ProcessRole::Broker], "{name}");
        assert_eq!(config.node_id, n + 3, "{name}");
        assert_eq!(config.controller_quorum_voters, voters, "{name}");
        assert_eq!(config.controller_listener(), None, "{name}");
        assert_eq!(config.listeners.len(), 1, "{name}");
        let listener = &config.advertised()[0];
        assert_eq!(listener.name, "PLAINTEXT");
        assert_eq!(listener.host, "127.0.0.1");
        assert_eq!(listener.port, 19092 + 100 * n as u16, "{name}");
        assert_eq!(config.broker_rack, Some(format!("r{n}")), "{name}");
        assert_eq!(
            config.replica_selector_class,
            Some(sluice_config::ReplicaSelectorClass::RackAware),
            "{name}"
        );
        assert_eq!(config.controller_quorum_election_timeout_ms, 800);
        assert_eq!(config.sluice_shards, 1);
    }
}

#[test]
fn node_ids_and_ports_are_unique_across_the_cluster() {
    let names = [
        "controller-1",
        "controller-2",
        "controller-3",
        "broker-1",
        "broker-2",
        "broker-3",
    ];
    let configs: Vec<BrokerConfig> = names.iter().map(|n| load(n)).collect();
    let mut ids: Vec<i32> = configs.iter().map(|c| c.node_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        6,
        "node ids must be unique across controllers and brokers"
    );
    let mut ports: Vec<u16> = configs
        .iter()
        .flat_map(|c| c.listeners.iter().chain(c.controller_listener.as_ref()))
        .map(|l| l.port)
        .collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), 6, "every process binds its own port");
}

#[test]
fn the_start_script_prints_the_brokers_listeners() {
    let bootstrap = (1..=3)
        .map(|n| {
            let l = &load(&format!("broker-{n}")).listeners[0];
            format!("{}:{}", l.host, l.port)
        })
        .collect::<Vec<_>>()
        .join(",");
    let script = std::fs::read_to_string(cluster_dir().join("start")).unwrap();
    assert!(
        script.contains(&format!("BOOTSTRAP={bootstrap}\n")),
        "config/cluster/start must print {bootstrap}"
    );
}
