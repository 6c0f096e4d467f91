//! New connections are served by the shards in turn, as Kafka's `Acceptor` hands them to its
//! network processors round-robin: whichever shard's listener the kernel gives a connection
//! to (SO_REUSEPORT spreads them by a hash of their addresses, so two of them share a shard half
//! the time), it is handed to the shard whose turn it is before its first request.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::time::{Duration, Instant};

use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{api_versions_request, Broker, Client};

const CONNECTIONS: usize = 10;

/// Client connections each shard serves (Kafka's connection-count gauge, per shard).
fn connections_per_shard(metrics_port: u16) -> [u64; 2] {
    let mut counts = [0u64; 2];
    for line in support::scrape(metrics_port)
        .lines()
        .filter(|l| l.starts_with("kafka_server_socketservermetrics_connection_count{"))
    {
        let shard = if line.contains("shard=\"0\"") { 0 } else { 1 };
        counts[shard] = line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64;
    }
    counts
}

#[test]
fn new_connections_are_spread_over_the_shards_in_turn() {
    let metrics_port = support::free_port();
    let listener = format!("sluice.metrics.listener=127.0.0.1:{metrics_port}");
    let broker = Broker::start("placement", &["sluice.shards=2", &listener]);
    // Whatever the start-up left open closes first.
    let deadline = Instant::now() + Duration::from_secs(10);
    while connections_per_shard(metrics_port) != [0, 0] {
        assert!(Instant::now() < deadline, "start-up connections stay open");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut clients: Vec<Client> = (0..CONNECTIONS)
        .map(|_| Client::connect(broker.port))
        .collect();
    // Every connection is served, wherever it landed and went.
    for client in &mut clients {
        let ResponseBody::ApiVersions(response) =
            client.call(18, 3, RequestBody::ApiVersions(api_versions_request()))
        else {
            panic!("wrong response kind")
        };
        assert_eq!(response.error_code, 0);
    }
    let counts = connections_per_shard(metrics_port);
    assert_eq!(
        counts,
        [CONNECTIONS as u64 / 2; 2],
        "{CONNECTIONS} connections served per shard"
    );
    drop(clients);
    assert_eq!(broker.stop().code(), Some(0));
}
