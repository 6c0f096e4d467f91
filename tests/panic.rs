//! A panic anywhere stops the whole process, loudly: a shard thread that panics must not leave
//! a broker that still accepts connections but no longer answers for that shard's partitions.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::time::{Duration, Instant};

use support::{free_port, temp_dir, Broker};

#[test]
fn a_panic_on_a_shard_thread_stops_the_process_with_the_panic_logged() {
    let dir = temp_dir("injected-panic");
    let mut broker = Broker::spawn_with_env(
        &dir,
        free_port(),
        &["sluice.shards=2"],
        "info,glommio=off",
        &[("SLUICE_TEST_INJECT_PANIC", "1:1500")],
    );
    // It starts and serves before the panic.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !broker.log().contains("sluice ready") {
        assert!(
            broker.is_running(),
            "exited before the injected panic:\n{}",
            broker.log()
        );
        assert!(Instant::now() < deadline, "never ready:\n{}", broker.log());
        std::thread::sleep(Duration::from_millis(20));
    }
    let log_dir = broker.dir.clone();
    let status = broker
        .exit_within(Duration::from_secs(30))
        .expect("the process outlived a panic on one of its shards");
    let log = std::fs::read_to_string(log_dir.join("broker.log")).unwrap();
    assert_eq!(status.code(), Some(101), "exit status {status}:\n{log}");
    assert!(
        log.contains("panic on thread shard-1") && log.contains("injected panic on shard 1"),
        "the panic is not in the log:\n{log}"
    );
}
