//! The settings of a multi-node (KRaft-style) cluster: the static controller quorum
//! (`controller.quorum.voters`), the controller's own listener (`controller.listener.names`), and
//! the checks that span several settings, which can only run once every source is applied.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use crate::{BrokerConfig, ConfigError, Listener, ProcessRole};

/// One entry of `controller.quorum.voters`, e.g. `1@127.0.0.1:19093`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuorumVoter {
    /// The voter's `node.id`.
    pub id: i32,
    /// Host its controller listener is reached at; empty only for the implicit local voter of
    /// the single-node default (see [`BrokerConfig::voters`]).
    pub host: String,
    /// Port of its controller listener; 0 only for the implicit local voter.
    pub port: u16,
}

impl QuorumVoter {
    /// The address to connect to. Unlike a listener's empty host (bind every interface), a
    /// voter without a host is the implicit local voter, which has no network address at all.
    pub fn socket_addr(&self) -> Result<SocketAddr, String> {
        if self.host.is_empty() || self.port == 0 {
            return Err(format!(
                "voter {} is the local voter of a single-node quorum and has no network address",
                self.id
            ));
        }
        let text = host_port(&self.host, self.port);
        text.parse()
            .map_err(|e| format!("voter {} address '{text}': {e}", self.id))
    }
}

impl fmt::Display for QuorumVoter {
    /// Kafka's syntax, `id@host:port`, as `controller.quorum.voters` takes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.id, host_port(&self.host, self.port))
    }
}

/// `host:port`, with an IPv6 host in brackets.
pub(crate) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Parses Kafka's voter list syntax: `id@host:port[,id@host:port]` (IPv6 hosts in brackets).
/// Empty text is the empty list. Ids must be unique: a quorum counts votes per id.
pub fn parse_quorum_voters(text: &str) -> Result<Vec<QuorumVoter>, String> {
    let mut voters: Vec<QuorumVoter> = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let voter = parse_voter(entry)?;
        if voters.iter().any(|v| v.id == voter.id) {
            return Err(format!(
                "node id {} appears more than once; voter ids must be unique",
                voter.id
            ));
        }
        voters.push(voter);
    }
    Ok(voters)
}

fn parse_voter(entry: &str) -> Result<QuorumVoter, String> {
    let malformed = || format!("'{entry}' is not of the form id@host:port");
    let (id, address) = entry.split_once('@').ok_or_else(malformed)?;
    if address.contains('@') {
        return Err(malformed());
    }
    let id: i32 = id
        .trim()
        .parse()
        .ok()
        .filter(|id| *id >= 0)
        .ok_or_else(|| format!("'{entry}' has an invalid node id (a number >= 0)"))?;
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| format!("'{entry}' has no port"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("'{entry}' has an invalid port (1-65535)"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("'{entry}' has no host"));
    }
    // Other voters connect to this address; Kafka refuses the wildcard for the same reason.
    if host == "0.0.0.0" || host == "::" {
        return Err(format!(
            "'{entry}' has the non-routable host {host}; give an address the other nodes can reach"
        ));
    }
    Ok(QuorumVoter {
        id,
        host: host.to_string(),
        port,
    })
}

impl BrokerConfig {
    /// Whether this process runs the controller role.
    pub fn is_controller(&self) -> bool {
        self.process_roles.contains(&ProcessRole::Controller)
    }

    /// The effective controller quorum. `controller.quorum.voters` when set; otherwise, for a
    /// process with the controller role, the single-node default: this node as the only voter,
    /// with no address (`host` empty, `port` 0) because nothing connects to it over the
    /// network. A broker-only process always has a voter list once loaded (checked by
    /// [`BrokerConfig::finalize`]).
    pub fn voters(&self) -> Vec<QuorumVoter> {
        if !self.controller_quorum_voters.is_empty() {
            return self.controller_quorum_voters.clone();
        }
        if self.is_controller() {
            return vec![QuorumVoter {
                id: self.node_id,
                host: String::new(),
                port: 0,
            }];
        }
        Vec::new()
    }

    /// The listeners that serve Kafka clients: every entry of `listeners` whose name is not in
    /// `controller.listener.names`. After loading this is all of `config.listeners`.
    pub fn client_listeners(&self) -> Vec<&Listener> {
        self.listeners
            .iter()
            .filter(|l| !self.is_controller_listener_name(&l.name))
            .collect()
    }

    /// The listener other voters and the brokers reach this controller on, if it has one
    /// (the single-node default needs none). Also correct before [`BrokerConfig::finalize`] has
    /// moved it out of `listeners`.
    pub fn controller_listener(&self) -> Option<&Listener> {
        self.controller_listener.as_ref().or_else(|| {
            self.listeners
                .iter()
                .find(|l| self.is_controller_listener_name(&l.name))
        })
    }

    /// Where the metadata log lives: `metadata.log.dir`, else `log.dirs` (Kafka's fallback).
    pub fn effective_metadata_log_dir(&self) -> &Path {
        self.metadata_log_dir.as_deref().unwrap_or(&self.log_dirs)
    }

    /// Whether `name` is one of `controller.listener.names`. Listener names are compared
    /// case-insensitively, as Kafka normalises them to upper case.
    fn is_controller_listener_name(&self, name: &str) -> bool {
        self.controller_listener_names
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Checks the rules that span several settings, then moves the controller listener out of
    /// `listeners` into `controller_listener`, so code that binds every entry of `listeners`
    /// for clients, or advertises `listeners`, never exposes the controller's port.
    ///
    /// [`BrokerConfig::load`] calls this once every source is applied: the keys of a file come
    /// in no particular order and an override may change either side of a rule. It is
    /// idempotent; call it again after changing settings with [`BrokerConfig::set`]. On error
    /// the configuration is left unchanged.
    pub fn finalize(&mut self) -> Result<(), ConfigError> {
        // A listener split off by an earlier call goes back in, so the split is redone under
        // the current controller.listener.names.
        let (controller, client): (Vec<Listener>, Vec<Listener>) = self
            .listeners
            .iter()
            .chain(self.controller_listener.as_ref())
            .cloned()
            .partition(|l| self.is_controller_listener_name(&l.name));
        self.check_cluster_rules(&controller, &client)?;
        self.listeners = client;
        self.controller_listener = controller.into_iter().next();
        Ok(())
    }

    fn check_cluster_rules(
        &self,
        controller: &[Listener],
        client: &[Listener],
    ) -> Result<(), ConfigError> {
        let conflict = |message: String| Err(ConfigError::Conflict { message });
        let names = self.controller_listener_names.join(",");
        let voter_ids = self
            .controller_quorum_voters
            .iter()
            .map(|v| v.id.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let broker_only = self.process_roles == [ProcessRole::Broker];
        let controller_only = self.process_roles == [ProcessRole::Controller];

        if controller.len() > 1 {
            return conflict(format!(
                "listeners has {} controller listeners ({}); a process binds one controller \
                 listener (controller.listener.names={names})",
                controller.len(),
                list(controller)
            ));
        }
        if let Some(l) = self
            .advertised_listeners
            .iter()
            .find(|l| self.is_controller_listener_name(&l.name))
        {
            return conflict(format!(
                "advertised.listeners must not contain the controller listener {l}: clients are \
                 only told about broker listeners, and controllers are reached at their \
                 controller.quorum.voters address"
            ));
        }
        if broker_only {
            if self.controller_listener_names.is_empty() {
                return conflict(
                    "controller.listener.names must contain at least one value when \
                     process.roles=broker"
                        .to_string(),
                );
            }
            if let Some(l) = controller.first() {
                return conflict(format!(
                    "listeners must not contain the controller listener {l} when \
                     process.roles=broker: a broker-only process runs no controller \
                     (controller.listener.names={names})"
                ));
            }
            if self.controller_quorum_voters.is_empty() {
                return conflict(
                    "controller.quorum.voters must list the controllers when process.roles=broker: \
                     a broker-only process has no local controller to fall back on"
                        .to_string(),
                );
            }
            if self
                .controller_quorum_voters
                .iter()
                .any(|v| v.id == self.node_id)
            {
                return conflict(format!(
                    "node.id {} must not be in controller.quorum.voters (ids {voter_ids}) when \
                     process.roles=broker: voters are controllers",
                    self.node_id
                ));
            }
        }
        if self.is_controller() && !self.controller_quorum_voters.is_empty() {
            let Some(own) = self
                .controller_quorum_voters
                .iter()
                .find(|v| v.id == self.node_id)
            else {
                return conflict(format!(
                    "node.id {} must be in controller.quorum.voters (ids {voter_ids}) when \
                     process.roles contains controller",
                    self.node_id
                ));
            };
            let Some(l) = controller.first() else {
                return conflict(format!(
                    "a controller in a multi-node quorum needs a controller listener: listeners \
                     must contain one named in controller.listener.names={names}, on port {} \
                     as this node's voter entry {own} says",
                    own.port
                ));
            };
            if l.port != own.port {
                return conflict(format!(
                    "the controller listener {l} is on port {} but this node's entry in \
                     controller.quorum.voters is {own}: the other nodes connect to port {}",
                    l.port, own.port
                ));
            }
        }
        if controller_only && !client.is_empty() {
            return conflict(format!(
                "listeners must only contain controller listeners (controller.listener.names=\
                 {names}) when process.roles=controller; found {}",
                list(client)
            ));
        }
        if self.is_broker() && client.is_empty() {
            return conflict(format!(
                "a broker needs at least one client listener, but every entry of listeners is a \
                 controller listener (controller.listener.names={names})"
            ));
        }
        if i64::from(self.replica_fetch_wait_max_ms) > self.replica_lag_time_max_ms {
            return conflict(format!(
                "replica.fetch.wait.max.ms ({}) must be at most replica.lag.time.max.ms ({}): a \
                 follower whose fetch waits longer would keep leaving the ISR (Kafka's rule)",
                self.replica_fetch_wait_max_ms, self.replica_lag_time_max_ms
            ));
        }
        if self.broker_session_timeout_ms <= self.broker_heartbeat_interval_ms {
            return conflict(format!(
                "broker.session.timeout.ms ({}) must be greater than \
                 broker.heartbeat.interval.ms ({}): a broker would be fenced between two \
                 heartbeats (Kafka advises at most half the session timeout)",
                self.broker_session_timeout_ms, self.broker_heartbeat_interval_ms
            ));
        }
        Ok(())
    }
}

fn list(listeners: &[Listener]) -> String {
    listeners
        .iter()
        .map(Listener::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOTERS: &str = "1@127.0.0.1:19093,2@127.0.0.1:19094,3@127.0.0.1:19095";

    /// Loads the embedded default plus `lines`, as `sluice --config` does with a file.
    fn load(lines: &[&str]) -> Result<BrokerConfig, ConfigError> {
        let mut config = BrokerConfig::default_single_node();
        config.apply_toml(&lines.join("\n"), "test.toml")?;
        config.finalize()?;
        Ok(config)
    }

    fn conflict(lines: &[&str]) -> String {
        match load(lines) {
            Err(ConfigError::Conflict { message }) => message,
            other => panic!("expected a conflict for {lines:?}, got {other:?}"),
        }
    }

    #[test]
    fn replica_fetch_wait_is_at_most_the_lag_time() {
        let message = conflict(&[
            "replica.fetch.wait.max.ms = 2000",
            "replica.lag.time.max.ms = 1000",
        ]);
        assert!(
            message.contains("replica.fetch.wait.max.ms (2000)"),
            "{message}"
        );
        let config = load(&[
            "replica.fetch.wait.max.ms = 1000",
            "replica.lag.time.max.ms = 1000",
        ])
        .unwrap();
        assert_eq!(config.replica_fetch_wait_max_ms, 1000);
        let defaults = BrokerConfig::default_single_node();
        assert_eq!(
            (
                defaults.replica_fetch_max_bytes,
                defaults.replica_fetch_response_max_bytes,
                defaults.replica_fetch_wait_max_ms,
                defaults.replica_fetch_min_bytes,
                defaults.replica_fetch_backoff_ms,
                defaults.replica_lag_time_max_ms,
            ),
            (1_048_576, 10_485_760, 500, 1, 1_000, 30_000)
        );
    }

    fn voters_line() -> String {
        format!("controller.quorum.voters = \"{VOTERS}\"")
    }

    #[test]
    fn voters_parse_kafka_syntax() {
        let voters = parse_quorum_voters(VOTERS).unwrap();
        assert_eq!(voters.len(), 3);
        assert_eq!(
            voters[1],
            QuorumVoter {
                id: 2,
                host: "127.0.0.1".into(),
                port: 19094
            }
        );
        assert_eq!(
            voters[0].socket_addr().unwrap(),
            "127.0.0.1:19093".parse().unwrap()
        );
        let v6 = parse_quorum_voters(" 7@[::1]:9093 , ").unwrap();
        assert_eq!(v6[0].host, "::1");
        assert_eq!(v6[0].to_string(), "7@[::1]:9093");
        assert_eq!(v6[0].socket_addr().unwrap(), "[::1]:9093".parse().unwrap());
        assert!(parse_quorum_voters("").unwrap().is_empty());
        let named = parse_quorum_voters("1@controller-1.example:9093").unwrap();
        assert_eq!(named[0].host, "controller-1.example");
    }

    #[test]
    fn malformed_voters_are_rejected() {
        for bad in [
            "127.0.0.1:19093",
            "x@127.0.0.1:19093",
            "-1@127.0.0.1:19093",
            "1@127.0.0.1",
            "1@127.0.0.1:0",
            "1@127.0.0.1:70000",
            "1@:19093",
            "1@0.0.0.0:19093",
            "1@a@b:1",
        ] {
            assert!(parse_quorum_voters(bad).is_err(), "{bad} was accepted");
        }
        let err = parse_quorum_voters("1@a:1,2@b:2,1@c:3").unwrap_err();
        assert!(err.contains("node id 1"), "{err}");
        let mut config = BrokerConfig::default_single_node();
        let err = config
            .apply_toml("controller.quorum.voters = \"1@a:1,1@b:2\"", "t.toml")
            .unwrap_err();
        assert!(
            matches!(&err, ConfigError::InvalidValue { key, .. } if key == "controller.quorum.voters"),
            "{err}"
        );
    }

    #[test]
    fn default_is_a_single_local_voter_without_controller_listener() {
        let config = BrokerConfig::load(None, &[]).unwrap();
        assert!(config.controller_quorum_voters.is_empty());
        assert_eq!(config.controller_listener_names, ["CONTROLLER"]);
        assert_eq!(config.controller_listener, None);
        assert_eq!(config.controller_listener(), None);
        assert_eq!(config.client_listeners().len(), 1);
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.advertised()[0].port, 9092);
        let voters = config.voters();
        assert_eq!(
            voters,
            [QuorumVoter {
                id: 1,
                host: String::new(),
                port: 0
            }]
        );
        assert!(voters[0].socket_addr().is_err());
        assert_eq!(config.broker_heartbeat_interval_ms, 2000);
        assert_eq!(config.broker_session_timeout_ms, 9000);
        assert_eq!(config.initial_broker_registration_timeout_ms, 60_000);
        assert_eq!(config.controller_quorum_election_timeout_ms, 1000);
        assert_eq!(config.controller_quorum_fetch_timeout_ms, 2000);
        assert_eq!(config.broker_rack, None);
        assert_eq!(config.metadata_log_dir, None);
        assert_eq!(config.effective_metadata_log_dir(), Path::new("./data"));
    }

    #[test]
    fn combined_listeners_are_split() {
        let config = load(&[
            "node.id = 2",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19094\"",
        ])
        .unwrap();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.listeners[0].name, "PLAINTEXT");
        let controller = config.controller_listener.clone().unwrap();
        assert_eq!(controller.port, 19094);
        assert_eq!(config.controller_listener(), Some(&controller));
        assert_eq!(config.client_listeners(), [&config.listeners[0]]);
        assert_eq!(config.advertised().len(), 1);
        assert_eq!(config.advertised()[0].name, "PLAINTEXT");
        assert_eq!(config.voters().len(), 3);
    }

    #[test]
    fn split_is_idempotent_and_follows_the_last_names() {
        let mut config =
            load(&["listeners = \"PLAINTEXT://127.0.0.1:9092,controller://127.0.0.1:9093\""])
                .unwrap();
        // Case-insensitive, as Kafka normalises listener names.
        assert_eq!(config.controller_listener().unwrap().port, 9093);
        config.finalize().unwrap();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.controller_listener.as_ref().unwrap().port, 9093);
        // Renaming the controller listener after the split moves the old one back.
        config
            .apply_override("controller.listener.names=PLAINTEXT")
            .unwrap();
        config.finalize().unwrap();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.listeners[0].name, "controller");
        assert_eq!(config.controller_listener.as_ref().unwrap().port, 9092);
        // Setting listeners replaces them all, the split-off controller listener included.
        config
            .apply_override("listeners=PLAINTEXT://127.0.0.1:9000,X://127.0.0.1:9001")
            .unwrap();
        config
            .apply_override("controller.listener.names=X")
            .unwrap();
        config.finalize().unwrap();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.listeners[0].port, 9000);
        assert_eq!(config.controller_listener.as_ref().unwrap().port, 9001);
    }

    #[test]
    fn split_happens_after_every_source_whatever_the_key_order() {
        // controller.listener.names arrives last, from an override.
        let dir = std::env::temp_dir().join(format!("sluice-config-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(
            &file,
            "listeners = \"PLAINTEXT://127.0.0.1:9092,CTL://127.0.0.1:9093\"\n",
        )
        .unwrap();
        let config =
            BrokerConfig::load(Some(&file), &["controller.listener.names=CTL".into()]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(config.listeners.len(), 1);
        assert_eq!(config.controller_listener.unwrap().name, "CTL");
    }

    #[test]
    fn controller_only_process() {
        let config = load(&[
            "process.roles = \"controller\"",
            "node.id = 3",
            &voters_line(),
            "listeners = \"CONTROLLER://127.0.0.1:19095\"",
        ])
        .unwrap();
        assert!(config.listeners.is_empty());
        assert!(config.client_listeners().is_empty());
        assert!(config.advertised().is_empty());
        assert_eq!(config.controller_listener().unwrap().port, 19095);
        assert!(!config.is_broker());
        assert!(config.is_controller());

        let message = conflict(&[
            "process.roles = \"controller\"",
            "node.id = 3",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19095\"",
        ]);
        assert!(
            message.contains("must only contain controller listeners"),
            "{message}"
        );

        // Without voters a controller-only process is a one-node quorum and needs no listener
        // beyond the controller's.
        let alone = load(&[
            "process.roles = \"controller\"",
            "listeners = \"CONTROLLER://127.0.0.1:9093\"",
        ])
        .unwrap();
        assert_eq!(alone.voters()[0].id, 1);
    }

    #[test]
    fn broker_only_process() {
        let config = load(&[
            "process.roles = \"broker\"",
            "node.id = 4",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:19192\"",
            "broker.rack = \"r1\"",
        ])
        .unwrap();
        assert_eq!(config.controller_listener(), None);
        assert_eq!(config.client_listeners().len(), 1);
        assert_eq!(config.voters().len(), 3);
        assert_eq!(config.broker_rack.as_deref(), Some("r1"));
        assert!(!config.is_controller());
    }

    #[test]
    fn broker_only_needs_voters() {
        let message = conflict(&["process.roles = \"broker\"", "node.id = 4"]);
        assert!(
            message.contains("controller.quorum.voters must list"),
            "{message}"
        );
    }

    #[test]
    fn broker_only_must_not_be_a_voter() {
        let message = conflict(&["process.roles = \"broker\"", "node.id = 2", &voters_line()]);
        assert!(
            message.contains("must not be in controller.quorum.voters"),
            "{message}"
        );
    }

    #[test]
    fn broker_only_must_not_have_a_controller_listener() {
        let message = conflict(&[
            "process.roles = \"broker\"",
            "node.id = 4",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:19192,CONTROLLER://127.0.0.1:19096\"",
        ]);
        assert!(
            message.contains("must not contain the controller listener"),
            "{message}"
        );
    }

    #[test]
    fn broker_only_needs_controller_listener_names() {
        let message = conflict(&[
            "process.roles = \"broker\"",
            "node.id = 4",
            &voters_line(),
            "controller.listener.names = \"\"",
        ]);
        assert!(message.contains("at least one value"), "{message}");
    }

    #[test]
    fn controller_must_be_a_voter() {
        let message = conflict(&[
            "node.id = 9",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:19093\"",
        ]);
        assert!(
            message.contains("must be in controller.quorum.voters"),
            "{message}"
        );
    }

    #[test]
    fn controller_with_voters_needs_its_controller_listener() {
        let message = conflict(&["node.id = 1", &voters_line()]);
        assert!(message.contains("needs a controller listener"), "{message}");
        assert!(message.contains("19093"), "{message}");
    }

    #[test]
    fn controller_listener_port_must_match_its_voter_entry() {
        let message = conflict(&[
            "process.roles = \"controller\"",
            "node.id = 1",
            &voters_line(),
            "listeners = \"CONTROLLER://127.0.0.1:19094\"",
        ]);
        assert!(
            message.contains("the other nodes connect to port 19093"),
            "{message}"
        );
    }

    #[test]
    fn one_controller_listener_at_most() {
        let message = conflict(&[
            "controller.listener.names = \"CONTROLLER,CTL2\"",
            "listeners = \"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,CTL2://127.0.0.1:9094\"",
        ]);
        assert!(message.contains("2 controller listeners"), "{message}");
    }

    #[test]
    fn a_broker_needs_a_client_listener() {
        let message = conflict(&["listeners = \"CONTROLLER://127.0.0.1:9093\""]);
        assert!(
            message.contains("at least one client listener"),
            "{message}"
        );
    }

    #[test]
    fn controller_listener_is_never_advertised() {
        let message = conflict(&[
            "listeners = \"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\"",
            "advertised.listeners = \"PLAINTEXT://broker:9092,CONTROLLER://broker:9093\"",
        ]);
        assert!(
            message.contains("advertised.listeners must not contain"),
            "{message}"
        );
    }

    #[test]
    fn session_timeout_must_exceed_heartbeat_interval() {
        let message = conflict(&[
            "broker.heartbeat.interval.ms = 3000",
            "broker.session.timeout.ms = 3000",
        ]);
        assert!(
            message.contains("broker.session.timeout.ms (3000)"),
            "{message}"
        );
        assert!(load(&["broker.session.timeout.ms = 2001"]).is_ok());
    }

    #[test]
    fn failed_finalize_leaves_the_config_unchanged() {
        let mut config = BrokerConfig::default_single_node();
        config
            .apply_toml(
                "listeners = \"PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\"\n\
                 broker.heartbeat.interval.ms = 10000",
                "t",
            )
            .unwrap();
        assert!(config.finalize().is_err());
        assert_eq!(config.listeners.len(), 2);
        assert_eq!(config.controller_listener, None);
    }

    #[test]
    fn describe_configs_shows_the_settings_as_configured() {
        let config = load(&[
            "node.id = 2",
            &voters_line(),
            "listeners = \"PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19094\"",
            "broker.rack = \"r2\"",
            "replica.selector.class = \"org.apache.kafka.common.replica.RackAwareReplicaSelector\"",
        ])
        .unwrap();
        assert_eq!(
            config.replica_selector_class,
            Some(crate::ReplicaSelectorClass::RackAware)
        );
        let described = config.described_settings();
        let value = |name: &str| {
            let s = described.iter().find(|s| s.name == name).unwrap();
            (s.value.clone(), s.is_default)
        };
        assert_eq!(
            value("listeners").0.as_deref(),
            Some("PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19094")
        );
        assert_eq!(value("controller.quorum.voters").0.as_deref(), Some(VOTERS));
        assert_eq!(value("broker.rack"), (Some("r2".to_string()), false));
        assert_eq!(
            value("replica.selector.class"),
            (
                Some("org.apache.kafka.common.replica.RackAwareReplicaSelector".to_string()),
                false
            )
        );
        assert_eq!(
            value("controller.listener.names"),
            (Some("CONTROLLER".to_string()), true)
        );
        assert_eq!(
            value("broker.session.timeout.ms"),
            (Some("9000".to_string()), true)
        );
        assert_eq!(value("metadata.log.dir"), (None, true));
    }

    #[test]
    fn new_settings_are_typed_and_range_checked() {
        let config = load(&[
            "metadata.log.dir = \"/var/sluice/meta\"",
            "controller.quorum.election.timeout.ms = 800",
            "controller.quorum.fetch.timeout.ms = 1500",
            "initial.broker.registration.timeout.ms = 30000",
        ])
        .unwrap();
        assert_eq!(
            config.effective_metadata_log_dir(),
            Path::new("/var/sluice/meta")
        );
        assert_eq!(config.controller_quorum_election_timeout_ms, 800);
        assert_eq!(config.controller_quorum_fetch_timeout_ms, 1500);
        assert_eq!(config.initial_broker_registration_timeout_ms, 30_000);
        let mut config = BrokerConfig::default_single_node();
        assert!(config
            .apply_toml("broker.heartbeat.interval.ms = 0", "t")
            .is_err());
        assert!(config
            .apply_toml("controller.quorum.fetch.timeout.ms = -5", "t")
            .is_err());
        assert!(config
            .apply_toml("metadata.log.dir = \"/a,/b\"", "t")
            .is_err());
        assert!(config.apply_toml("broker.rack = 3", "t").is_err());
        // Kafka fails at start on a replica selector class it cannot load.
        assert!(config
            .apply_toml("replica.selector.class = \"com.example.Nearest\"", "t")
            .is_err());
        assert!(config
            .apply_toml("listeners = \"PLAINTEXT://a:1,plaintext://a:2\"", "t")
            .is_err());
        assert!(config.apply_toml("listeners = \"://a:1\"", "t").is_err());
    }
}
