//! The idempotent producer end to end: InitProducerId, then duplicate, out-of-order and
//! stale-epoch batches over the wire; producer state surviving a clean restart (snapshot) and a
//! crash (log scan); producer ids never reused across restarts.

#![allow(clippy::unwrap_used)] // test code
mod support;

use std::collections::HashSet;

use bytes::Bytes;
use sluice_protocol::messages::init_producer_id::{InitProducerIdRequest, InitProducerIdResponse};
use sluice_protocol::record_batch::RecordBatchBuilder;
use sluice_protocol::request::{RequestBody, ResponseBody};
use support::{create_topic, now_ms, produce, Broker, Client};

const NONE: i16 = 0;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;

fn init_producer_id(
    client: &mut Client,
    version: i16,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let ResponseBody::InitProducerId(response) =
        client.call(22, version, RequestBody::InitProducerId(request))
    else {
        panic!("wrong response kind")
    };
    response
}

fn new_producer(client: &mut Client) -> (i64, i16) {
    let r = init_producer_id(client, 4, InitProducerIdRequest::default());
    assert_eq!(r.error_code, NONE);
    (r.producer_id, r.producer_epoch)
}

fn idempotent(pid: i64, epoch: i16, seq: i32, records: usize) -> Bytes {
    RecordBatchBuilder::new(now_ms())
        .producer(pid, epoch, seq)
        .records(records, b"value")
        .build()
}

#[test]
fn duplicates_gaps_and_stale_epochs_over_the_wire() {
    let broker = Broker::start("idempotent", &["sluice.shards=2"]);
    let (dir, port) = (broker.dir.clone(), broker.port);
    let mut client = broker.client();
    create_topic(&mut client, "idem", 1);

    // A transactional id: transactions are not served.
    let r = init_producer_id(
        &mut client,
        4,
        InitProducerIdRequest {
            transactional_id: Some("txn".into()),
            transaction_timeout_ms: 60_000,
            ..Default::default()
        },
    );
    assert_eq!(r.error_code, COORDINATOR_NOT_AVAILABLE);

    // Every version answers; ids are distinct, epoch 0.
    let mut ids = HashSet::new();
    for version in 0..=5 {
        let r = init_producer_id(&mut client, version, InitProducerIdRequest::default());
        assert_eq!((r.error_code, r.producer_epoch), (NONE, 0), "v{version}");
        assert!(r.producer_id >= 0);
        assert!(
            ids.insert(r.producer_id),
            "id {} handed out twice",
            r.producer_id
        );
    }

    let (pid, epoch) = new_producer(&mut client);
    assert_eq!(epoch, 0);
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 0, 0, 3)),
        (NONE, 0)
    );
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 0, 3, 2)),
        (NONE, 3)
    );
    // Retries of either batch: success with the original offsets, nothing written.
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 0, 0, 3)),
        (NONE, 0)
    );
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 0, 3, 2)),
        (NONE, 3)
    );
    // A gap.
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid, 0, 9, 1));
    assert_eq!(error, OUT_OF_ORDER_SEQUENCE_NUMBER);
    // An unknown producer that does not start at 0.
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid + 1_000_000, 0, 4, 1));
    assert_eq!(error, OUT_OF_ORDER_SEQUENCE_NUMBER);
    // The next batch in sequence lands right after the first two.
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 0, 5, 1)),
        (NONE, 5)
    );

    // A producer re-initialising with its id and epoch (KIP-360) gets a fresh id with epoch 0,
    // as from Kafka's broker (a non-transactional InitProducerId never bumps a given id: any
    // client could otherwise fence another's producer).
    let r = init_producer_id(
        &mut client,
        4,
        InitProducerIdRequest {
            producer_id: pid,
            producer_epoch: 0,
            ..Default::default()
        },
    );
    assert_eq!((r.error_code, r.producer_epoch), (NONE, 0));
    assert!(ids.insert(r.producer_id), "a new id, not {pid} again");

    // A batch of a newer epoch (as a transactional producer's bump will send) starts the new
    // epoch's sequences at 0 and fences the old epoch.
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid, 1, 6, 1));
    assert_eq!(
        error, OUT_OF_ORDER_SEQUENCE_NUMBER,
        "a new epoch starts at 0"
    );
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 0, 4)),
        (NONE, 6)
    );
    // The old epoch is fenced.
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid, 0, 6, 1));
    assert_eq!(error, INVALID_PRODUCER_EPOCH);
    assert_eq!(
        produce(&mut client, "idem", 0, support::batch("plain", 2)),
        (NONE, 10)
    );

    // A clean restart: the state comes back from the snapshot written at close.
    drop(client);
    broker.stop();
    let snapshots: Vec<_> = std::fs::read_dir(dir.join("data").join("idem-0"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".snapshot"))
        .collect();
    assert_eq!(snapshots, vec![format!("{:020}.snapshot", 12)]);
    let broker = Broker::start_in(&dir, port, &["sluice.shards=2"]);
    let mut client = broker.client();
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 0, 4)),
        (NONE, 6)
    );
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid, 0, 6, 1));
    assert_eq!(error, INVALID_PRODUCER_EPOCH);
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 4, 1)),
        (NONE, 12)
    );
    for _ in 0..3 {
        let (id, _) = new_producer(&mut client);
        assert!(ids.insert(id), "id {id} reused after a restart");
    }

    // A crash: the snapshot is older than the log; the rest is rebuilt by scanning.
    drop(client);
    broker.kill();
    let broker = Broker::start_in(&dir, port, &["sluice.shards=2"]);
    let mut client = broker.client();
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 4, 1)),
        (NONE, 12)
    );
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 0, 4)),
        (NONE, 6)
    );
    let (error, _) = produce(&mut client, "idem", 0, idempotent(pid, 1, 7, 1));
    assert_eq!(error, OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(
        produce(&mut client, "idem", 0, idempotent(pid, 1, 5, 1)),
        (NONE, 13)
    );
    // Ids from other connections (other shards) and after the crash are all new.
    for _ in 0..4 {
        let mut other = broker.client();
        let (id, _) = new_producer(&mut other);
        assert!(ids.insert(id), "id {id} reused");
    }
}

#[test]
fn corrupt_snapshot_falls_back_to_a_full_scan() {
    let broker = Broker::start("idem-corrupt", &[]);
    let (dir, port) = (broker.dir.clone(), broker.port);
    let mut client = broker.client();
    create_topic(&mut client, "corrupt", 1);
    let (pid, _) = new_producer(&mut client);
    for seq in 0..10 {
        assert_eq!(
            produce(&mut client, "corrupt", 0, idempotent(pid, 0, seq * 2, 2)),
            (NONE, i64::from(seq) * 2)
        );
    }
    drop(client);
    broker.stop();
    let snapshot = dir
        .join("data")
        .join("corrupt-0")
        .join(format!("{:020}.snapshot", 20));
    let mut data = std::fs::read(&snapshot).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    std::fs::write(&snapshot, data).unwrap();
    let broker = Broker::start_in(&dir, port, &[]);
    let mut client = broker.client();
    // The last five batches are known again (from the scan), the sixth-last is not.
    assert_eq!(
        produce(&mut client, "corrupt", 0, idempotent(pid, 0, 18, 2)),
        (NONE, 18)
    );
    assert_eq!(
        produce(&mut client, "corrupt", 0, idempotent(pid, 0, 10, 2)),
        (NONE, 10)
    );
    let (error, _) = produce(&mut client, "corrupt", 0, idempotent(pid, 0, 8, 2));
    assert_eq!(error, OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(
        produce(&mut client, "corrupt", 0, idempotent(pid, 0, 20, 1)),
        (NONE, 20)
    );
}
