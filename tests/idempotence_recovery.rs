//! Idempotent producer state survives broker restarts (issue 6): raw
//! idempotent Produce requests, then a `kill -9` (the state is rebuilt
//! from the last roll snapshot plus a replay of the log tail) or a clean
//! stop (the state comes from the snapshot written at the log end). A
//! retried batch gets its original offsets and appends nothing, the next
//! sequence appends, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER (45) and a
//! fenced epoch is INVALID_PRODUCER_EPOCH (47).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use bytes::Bytes;
use common::idempotence::{
    create_topic, idempotent_batch, init_producer_id, kill_keeping_dir, latest_offset, produce,
    snapshot_offsets,
};
use common::Broker;

const TOPIC: &str = "idem-raw";
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;

/// What the test produced before the restart.
struct Before {
    /// Producer A: (id, current epoch, next sequence).
    a: (i64, i16, i32),
    a_last: Bytes,
    a_last_offset: i64,
    /// Producer B wrote one batch early, in the first segment.
    b: (i64, i16, i32),
    b_last: Bytes,
    b_last_offset: i64,
    log_end: i64,
}

/// Flushed appends, so everything acked survives SIGKILL; small segments,
/// so the log rolls (and snapshots) several times.
const BROKER: &[&str] = &["shardlog.flush.every.append=true"];

fn produce_ok(broker: &Broker, batch: &Bytes) -> i64 {
    let (code, base) = produce(broker, TOPIC, 0, batch);
    assert_eq!(code, 0, "produce failed");
    base
}

fn produce_before_restart(broker: &Broker) -> Before {
    create_topic(broker, TOPIC, 1, &[("segment.bytes", "16384")]);
    let (b_id, b_epoch) = init_producer_id(broker, -1, -1);
    let b_last = idempotent_batch(b_id, b_epoch, 0, 4, 100, "b");
    let b_last_offset = produce_ok(broker, &b_last);

    // Producer A at epoch 0, then at epoch 1 from sequence 0: an idempotent
    // producer bumps its own epoch (KIP-360), and the partition accepts it.
    let (a_id, epoch0) = init_producer_id(broker, -1, -1);
    let mut seq = 0;
    for _ in 0..12 {
        produce_ok(broker, &idempotent_batch(a_id, epoch0, seq, 10, 200, "a0"));
        seq += 10;
    }
    let epoch1 = epoch0 + 1;
    let mut seq = 0;
    let mut last = (Bytes::new(), -1);
    for _ in 0..15 {
        let batch = idempotent_batch(a_id, epoch1, seq, 10, 200, "a1");
        last = (batch.clone(), produce_ok(broker, &batch));
        seq += 10;
    }
    Before {
        a: (a_id, epoch1, seq),
        a_last: last.0,
        a_last_offset: last.1,
        b: (b_id, b_epoch, 4),
        b_last,
        b_last_offset,
        log_end: latest_offset(broker, TOPIC, 0),
    }
}

/// After the restart: the same answers a broker that never stopped gives.
fn check_after_restart(broker: &Broker, before: &Before) {
    assert_eq!(
        latest_offset(broker, TOPIC, 0),
        before.log_end,
        "acked data lost"
    );
    // Retries answer with the original offsets and append nothing.
    assert_eq!(
        produce(broker, TOPIC, 0, &before.a_last),
        (0, before.a_last_offset)
    );
    assert_eq!(
        produce(broker, TOPIC, 0, &before.b_last),
        (0, before.b_last_offset)
    );
    assert_eq!(latest_offset(broker, TOPIC, 0), before.log_end);

    let (a_id, a_epoch, a_seq) = before.a;
    // A gap after the last sequence is refused.
    let gap = idempotent_batch(a_id, a_epoch, a_seq + 1, 1, 10, "gap");
    assert_eq!(
        produce(broker, TOPIC, 0, &gap).0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    // The epoch A left behind is fenced.
    let old = idempotent_batch(a_id, a_epoch - 1, 120, 1, 10, "old");
    assert_eq!(produce(broker, TOPIC, 0, &old).0, INVALID_PRODUCER_EPOCH);
    // The next sequence of each producer appends at the log end.
    let next = idempotent_batch(a_id, a_epoch, a_seq, 3, 10, "next");
    assert_eq!(produce(broker, TOPIC, 0, &next), (0, before.log_end));
    let (b_id, b_epoch, b_seq) = before.b;
    let next_b = idempotent_batch(b_id, b_epoch, b_seq, 1, 10, "next-b");
    assert_eq!(produce(broker, TOPIC, 0, &next_b), (0, before.log_end + 3));
    assert_eq!(latest_offset(broker, TOPIC, 0), before.log_end + 4);
    // And the retry of the just-appended batch is again a duplicate.
    assert_eq!(produce(broker, TOPIC, 0, &next), (0, before.log_end));
}

#[test]
fn producer_state_is_rebuilt_from_the_log_tail_after_kill_9() {
    let broker = Broker::start_with(BROKER);
    let before = produce_before_restart(&broker);
    let dir = kill_keeping_dir(broker);

    // No clean-shutdown snapshot at the log end: only roll snapshots, so
    // the batches after the newest one must be replayed from the log.
    let snaps = snapshot_offsets(&dir.path().join(format!("{TOPIC}-0")));
    assert!(!snaps.is_empty(), "segments rolled, so snapshots exist");
    assert!(snaps.len() <= 2, "only the newest two are kept: {snaps:?}");
    assert!(
        snaps.iter().all(|&o| o < before.a_last_offset),
        "the last batch comes from the replay, not a snapshot: {snaps:?}"
    );

    let broker = Broker::start_in(dir, BROKER);
    check_after_restart(&broker, &before);
}

#[test]
fn producer_state_is_loaded_from_the_shutdown_snapshot_after_a_clean_stop() {
    let broker = Broker::start_with(BROKER);
    let before = produce_before_restart(&broker);
    let (status, dir) = broker.stop_keeping_dir();
    assert!(status.success(), "{status}");

    let snaps = snapshot_offsets(&dir.path().join(format!("{TOPIC}-0")));
    assert_eq!(
        snaps.last(),
        Some(&before.log_end),
        "clean stop snapshots at the log end: {snaps:?}"
    );
    assert_eq!(snaps.len(), 2, "{snaps:?}");

    let broker = Broker::start_in(dir, BROKER);
    check_after_restart(&broker, &before);
    // A second clean cycle keeps working from the new snapshot.
    let end = latest_offset(&broker, TOPIC, 0);
    let (_, dir) = broker.stop_keeping_dir();
    let broker = Broker::start_in(dir, BROKER);
    let (a_id, a_epoch, a_seq) = before.a;
    let next = idempotent_batch(a_id, a_epoch, a_seq, 3, 10, "next");
    assert_eq!(produce(&broker, TOPIC, 0, &next), (0, before.log_end));
    let after = idempotent_batch(a_id, a_epoch, a_seq + 3, 1, 10, "after");
    assert_eq!(produce(&broker, TOPIC, 0, &after), (0, end));
}

#[test]
fn an_idle_producer_expires_after_producer_id_expiration_ms() {
    let broker = Broker::start_with(&[
        "producer.id.expiration.ms=5000",
        "log.retention.check.interval.ms=1000",
    ]);
    create_topic(&broker, "idem-expire", 1, &[]);
    let (id, epoch) = init_producer_id(&broker, -1, -1);
    let first = idempotent_batch(id, epoch, 0, 2, 10, "x");
    assert_eq!(produce(&broker, "idem-expire", 0, &first), (0, 0));
    // While the producer is known a gap is refused; once the housekeeping
    // timer expired it, the broker has no state and (KIP-360) accepts any
    // sequence. Poll: refusals change nothing. The deadline only guards
    // against a hang.
    let gap = idempotent_batch(id, epoch, 7, 1, 10, "y");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut refusals = 0;
    let accepted_at = loop {
        match produce(&broker, "idem-expire", 0, &gap) {
            (0, offset) => break offset,
            (OUT_OF_ORDER_SEQUENCE_NUMBER, _) => refusals += 1,
            other => panic!("unexpected answer {other:?}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "producer never expired"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(accepted_at, 2);
    // The expired producer's state restarts from the accepted batch.
    let next = idempotent_batch(id, epoch, 8, 1, 10, "z");
    assert_eq!(produce(&broker, "idem-expire", 0, &next), (0, 3));
    // The first try came right after the append, well inside the 5 s.
    assert!(
        refusals >= 1,
        "the gap must be refused while the producer is known"
    );
}

#[test]
fn a_damaged_shutdown_snapshot_falls_back_to_the_older_one_and_the_log() {
    let broker = Broker::start_with(BROKER);
    let before = produce_before_restart(&broker);
    let (_, dir) = broker.stop_keeping_dir();
    let part_dir = dir.path().join(format!("{TOPIC}-0"));
    let snaps = snapshot_offsets(&part_dir);
    assert_eq!(snaps.last(), Some(&before.log_end), "{snaps:?}");
    // Flip a byte of the newest snapshot's body: its CRC-32C fails.
    let newest = part_dir.join(format!("{:020}.snapshot", before.log_end));
    let mut bytes = std::fs::read(&newest).expect("snapshot");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&newest, bytes).expect("damage snapshot");

    let broker = Broker::start_in(dir, BROKER);
    check_after_restart(&broker, &before);
}
