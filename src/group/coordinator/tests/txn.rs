//! Transactional offset commits (TxnOffsetCommit, KIP-98) on the parent
//! module's harness: written in the producer's transactional batch, held
//! until the marker, committed by COMMIT, dropped by ABORT, and rebuilt by
//! loading the records and markers.

use super::*;

fn txn_commit(h: &mut Harness, pid: i64, parts: &[(&str, i32, i64)]) -> Vec<Action> {
    let w = h.waiter();
    let req = CommitRequest {
        txn: Some(crate::types::TxnWriter {
            producer_id: pid,
            epoch: 3,
            guard: Some(9),
        }),
        group_id: "g".into(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: -1,
        partitions: parts
            .iter()
            .map(|(t, p, o)| CommitPartition {
                topic: (*t).into(),
                partition: *p,
                offset: *o,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp_ms: -1,
            })
            .collect(),
    };
    h.c.on_commit(w, req, h.now)
}

fn offset(h: &mut Harness, topic: &str) -> i64 {
    h.fetch("g", Some(vec![(topic.into(), 0)])).partitions[0].offset
}

#[test]
fn transactional_offsets_wait_for_the_marker() {
    let mut h = Harness::new();
    h.auto_ack = None;
    let actions = txn_commit(&mut h, 77, &[("t", 0, 10)]);
    // The records go in a transactional batch of producer 77, epoch 3.
    let [Action::Append {
        partition,
        token,
        producer,
        ..
    }] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(
        *producer,
        Some(crate::types::TxnWriter {
            producer_id: 77,
            epoch: 3,
            guard: Some(9)
        }),
        "the append carries the producer and its verification guard"
    );
    let (partition, token) = (*partition, *token);
    let done = h.c.on_appended(token, ErrorCode::NONE, 0);
    assert!(
        matches!(&done[..], [Action::Reply(_, Answer::Commit(r))] if r[0].2 == ErrorCode::NONE)
    );
    assert_eq!(offset(&mut h, "t"), -1, "not visible before the marker");
    assert!(h.c.has_pending_txn_offset("g", &("t".into(), 0)));
    // KIP-447: a stable fetch is told to retry.
    let stable = h.c.on_fetch(
        99,
        FetchRequest {
            group_id: "g".into(),
            partitions: Some(vec![("t".into(), 0)]),
            require_stable: true,
        },
    );
    assert!(matches!(&stable[..], [Action::Reply(99, Answer::Fetch(a))]
        if a.partitions[0].error == ErrorCode::UNSTABLE_OFFSET_COMMIT));
    // A marker on another partition changes nothing.
    h.c.on_txn_marker(partition + 1, 77, true);
    assert_eq!(offset(&mut h, "t"), -1);
    h.c.on_txn_marker(partition, 77, true);
    assert_eq!(offset(&mut h, "t"), 10);
    assert!(!h.c.has_pending_txn_offset("g", &("t".into(), 0)));
    // An aborted transaction's offsets are dropped.
    let actions = txn_commit(&mut h, 77, &[("t", 0, 20)]);
    let [Action::Append { token, .. }] = &actions[..] else {
        panic!("{actions:?}")
    };
    h.c.on_appended(*token, ErrorCode::NONE, 0);
    h.c.on_txn_marker(partition, 77, false);
    assert_eq!(offset(&mut h, "t"), 10);
}

#[test]
fn loading_holds_transactional_records_until_their_marker() {
    let mut h = Harness::new();
    let p = h.c.partition_of("g");
    let key = crate::group::records::OffsetCommitKey {
        group: "g".into(),
        topic: "t".into(),
        partition: 0,
    };
    let value = |o: i64| {
        OffsetCommitValue {
            offset: o,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: 5,
            expire_timestamp_ms: -1,
        }
        .encode()
    };
    h.c.load_txn_offset(8, &key, &value(30));
    h.c.load_txn_offset(9, &key, &value(40));
    h.c.on_txn_marker(p, 8, true);
    h.c.on_txn_marker(p, 9, false);
    assert_eq!(offset(&mut h, "t"), 30);
}
