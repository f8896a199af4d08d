//! `[pure]` tests of the transaction state machine.

use super::*;
use crate::txn::records::{decode_value, encode_value};
use TxnState::*;

const PID: i64 = 1000;
const TIMEOUT_MS: i32 = 60_000;

fn tp(topic: &str, partition: i32) -> (String, i32) {
    (topic.to_owned(), partition)
}

/// Metadata loaded in `state` (epoch 3), with partition t-0 when a
/// transaction is running, as Kafka writes it.
fn loaded(state: TxnState) -> TxnMetadata {
    let running = matches!(
        state,
        Ongoing | PrepareCommit | PrepareAbort | PrepareEpochFence
    );
    TxnMetadata::from_log(
        "tx",
        &TxnLogValue {
            producer_id: PID,
            producer_epoch: 3,
            transaction_timeout_ms: TIMEOUT_MS,
            state,
            partitions: if running {
                vec![("t".into(), vec![0])]
            } else {
                Vec::new()
            },
            last_update_timestamp_ms: 100,
            start_timestamp_ms: if state == Empty { -1 } else { 50 },
        },
    )
}

/// Prepare `t`, check it, and apply it as if the append succeeded.
fn commit(m: &mut TxnMetadata, t: Result<TxnTransit, TxnStateError>) -> TxnTransit {
    let t = t.unwrap();
    assert_eq!(m.pending_state(), Some(t.state));
    m.complete_transition(&t).unwrap();
    assert_eq!(m.state(), t.state);
    assert!(!m.has_pending_state());
    t
}

#[test]
fn ids_and_names_are_kafkas() {
    // (state, TransactionStatus id, name) as in TransactionState.scala.
    let rows = [
        (Empty, 0, "Empty"),
        (Ongoing, 1, "Ongoing"),
        (PrepareCommit, 2, "PrepareCommit"),
        (PrepareAbort, 3, "PrepareAbort"),
        (CompleteCommit, 4, "CompleteCommit"),
        (CompleteAbort, 5, "CompleteAbort"),
        (Dead, 6, "Dead"),
        (PrepareEpochFence, 7, "PrepareEpochFence"),
    ];
    for (state, id, name) in rows {
        assert_eq!(state.id(), id);
        assert_eq!(TxnState::from_id(id), Some(state));
        assert_eq!(state.name(), name);
        assert_eq!(TxnState::from_name(name), Some(state));
    }
    assert_eq!(TxnState::from_id(8), None);
    assert_eq!(TxnState::from_id(-1), None);
    assert_eq!(TxnState::from_name("ongoing"), None);
}

#[test]
fn the_transition_table_is_kafkas() {
    // (to, valid previous states) from TransactionState.scala in 3.9.
    let rows: [(TxnState, &[TxnState]); 8] = [
        (Empty, &[Empty, CompleteCommit, CompleteAbort]),
        (Ongoing, &[Ongoing, Empty, CompleteCommit, CompleteAbort]),
        (PrepareCommit, &[Ongoing]),
        (PrepareAbort, &[Ongoing, PrepareEpochFence]),
        (CompleteCommit, &[PrepareCommit]),
        (CompleteAbort, &[PrepareAbort]),
        (Dead, &[Empty, CompleteAbort, CompleteCommit]),
        (PrepareEpochFence, &[Ongoing]),
    ];
    for (to, from) in rows {
        let want: BTreeSet<_> = from.iter().copied().collect();
        let got: BTreeSet<_> = to.valid_previous_states().iter().copied().collect();
        assert_eq!(got, want, "{to:?}");
    }
    let expirable: Vec<_> = TxnState::ALL
        .into_iter()
        .filter(|s| s.is_expiration_allowed())
        .collect();
    assert_eq!(expirable, [Empty, CompleteCommit, CompleteAbort]);
}

#[test]
fn every_legal_move_is_prepared_and_every_illegal_one_refused_unchanged() {
    for from in TxnState::ALL {
        for to in TxnState::ALL {
            let mut m = loaded(from);
            let before = m.clone();
            let next = TxnTransit {
                state: to,
                ..m.prepare_no_transit()
            };
            match m.prepare_transition_to(next) {
                Ok(t) => {
                    assert!(from.can_move_to(to), "{from:?} → {to:?}");
                    assert_eq!(m.pending_state(), Some(to));
                    assert_eq!(t.last_producer_id, PID);
                    assert_eq!(m.state(), from, "nothing applied before completion");
                }
                Err(e) => {
                    assert!(!from.can_move_to(to), "{from:?} → {to:?}: {e}");
                    assert_eq!(e, TxnStateError::IllegalTransition { from, to });
                    assert_eq!(m, before, "{from:?} → {to:?}");
                }
            }
        }
    }
}

#[test]
fn a_pending_transition_blocks_the_next_until_cleared() {
    let mut m = loaded(Ongoing);
    m.prepare_abort_or_commit(PrepareCommit, 200).unwrap();
    let before = m.clone();
    assert_eq!(
        m.prepare_add_partitions([tp("u", 1)], 201),
        Err(TxnStateError::TransitionPending {
            pending: PrepareCommit,
            to: Ongoing
        })
    );
    assert!(m.prepare_increment_producer_epoch(1, None, 201).is_err());
    assert!(m.prepare_fence_producer_epoch().is_err());
    assert_eq!(m, before);
    // The append failed: the pending state is dropped, the state kept.
    m.clear_pending_state();
    assert_eq!(m.state(), Ongoing);
    let add = m.prepare_add_partitions([tp("u", 1)], 202);
    commit(&mut m, add);
}

#[test]
fn illegal_arguments_are_refused_unchanged() {
    let mut m = loaded(Ongoing);
    let before = m.clone();
    let bad_id = TxnTransit {
        producer_id: -1,
        ..m.prepare_no_transit()
    };
    assert_eq!(
        m.prepare_transition_to(bad_id),
        Err(TxnStateError::IllegalProducerId(-1))
    );
    let bad_epoch = TxnTransit {
        producer_epoch: -1,
        ..m.prepare_no_transit()
    };
    assert_eq!(
        m.prepare_transition_to(bad_epoch),
        Err(TxnStateError::IllegalProducerEpoch(-1))
    );
    assert_eq!(
        m.prepare_abort_or_commit(Ongoing, 1),
        Err(TxnStateError::NotAnEndState(Ongoing))
    );
    assert!(m.remove_partition("t", 0).is_err());
    assert_eq!(m, before);
    // Dead may carry no epoch: a transactional id that never got one.
    let mut fresh = TxnMetadata::new("tx", PID, TIMEOUT_MS, 0);
    assert_eq!(fresh.prepare_dead().unwrap().producer_epoch, -1);
}

#[test]
fn commit_path_end_to_end() {
    let mut m = TxnMetadata::new("tx", PID, TIMEOUT_MS, 10);
    assert_eq!((m.state(), m.producer_epoch()), (Empty, -1));

    let init = m.prepare_increment_producer_epoch(TIMEOUT_MS, None, 20);
    let t = commit(&mut m, init);
    assert_eq!((t.producer_epoch, t.last_producer_epoch), (0, -1));
    assert_eq!(m.producer_epoch(), 0);

    let add = m.prepare_add_partitions([tp("t", 0), tp("u", 2)], 30);
    let t = commit(&mut m, add);
    assert_eq!(t.txn_start_timestamp_ms, 30);
    assert_eq!(m.txn_start_timestamp_ms(), 30);
    let add = m.prepare_add_partitions([tp("t", 1)], 40);
    commit(&mut m, add);
    assert_eq!(m.txn_start_timestamp_ms(), 30, "still the same transaction");
    assert_eq!(m.topic_partitions().len(), 3);

    let end = m.prepare_abort_or_commit(PrepareCommit, 50);
    let t = commit(&mut m, end);
    assert_eq!(t.producer_epoch, 0, "3.9 does not bump the epoch at EndTxn");
    assert_eq!(m.topic_partitions().len(), 3);
    assert_eq!(m.remove_partition("u", 2), Ok(true));
    assert_eq!(m.remove_partition("u", 2), Ok(false));

    let done = m.prepare_complete(60);
    let t = commit(&mut m, done);
    assert_eq!(t.state, CompleteCommit);
    assert!(m.topic_partitions().is_empty());
    assert_eq!(m.txn_last_update_timestamp_ms(), 60);

    // The next transaction starts from CompleteCommit.
    let add = m.prepare_add_partitions([tp("v", 0)], 70);
    commit(&mut m, add);
    assert_eq!((m.state(), m.txn_start_timestamp_ms()), (Ongoing, 70));
    assert_eq!(m.producer_epoch(), 0);
}

#[test]
fn abort_path_end_to_end_then_a_new_producer_epoch() {
    let mut m = loaded(Empty);
    let add = m.prepare_add_partitions([tp("t", 0)], 200);
    commit(&mut m, add);
    let end = m.prepare_abort_or_commit(PrepareAbort, 210);
    commit(&mut m, end);
    // A commit cannot follow an abort, nor complete before it is prepared.
    let before = m.clone();
    assert!(m.prepare_abort_or_commit(PrepareCommit, 215).is_err());
    assert_eq!(m, before);
    let done = m.prepare_complete(220);
    commit(&mut m, done);
    assert_eq!(m.state(), CompleteAbort);

    let init = m.prepare_increment_producer_epoch(30_000, None, 230);
    let t = commit(&mut m, init);
    assert_eq!(
        (m.state(), m.producer_epoch(), m.txn_timeout_ms()),
        (Empty, 4, 30_000)
    );
    assert_eq!(t.txn_start_timestamp_ms, -1);

    let dead = m.prepare_dead().unwrap();
    assert_eq!(
        m.complete_transition(&dead),
        Err(TxnStateError::DeadIsRemoved)
    );
}

#[test]
fn recovering_producers_bump_retry_or_are_fenced() {
    // (expected (pid, epoch), metadata (epoch, last epoch), outcome)
    // where outcome is Some((new epoch, new last epoch)) or None = fenced.
    type Row = (Option<(i64, i16)>, (i16, i16), Option<(i16, i16)>);
    let rows: [Row; 7] = [
        (None, (3, 2), Some((4, -1))),
        (Some((PID, 3)), (3, 2), Some((4, 3))),
        (Some((PID, 2)), (3, 2), Some((3, 2))), // a retry of that bump
        (Some((PID, 1)), (3, 2), None),
        (Some((PID + 1, 3)), (3, 2), None), // another producer id
        (Some((PID, 7)), (-1, -1), Some((0, -1))), // just created
        (Some((PID + 1, 7)), (-1, -1), Some((0, -1))),
    ];
    for (expected, (epoch, last), outcome) in rows {
        let mut m = loaded(CompleteCommit);
        m.producer_epoch = epoch;
        m.last_producer_epoch = last;
        let before = m.clone();
        let got = m.prepare_increment_producer_epoch(TIMEOUT_MS, expected, 300);
        match outcome {
            Some((e, l)) => {
                let t = got.unwrap();
                assert_eq!(
                    (t.producer_epoch, t.last_producer_epoch),
                    (e, l),
                    "{expected:?}"
                );
                m.complete_transition(&t).unwrap();
                assert_eq!((m.producer_epoch(), m.last_producer_epoch()), (e, l));
            }
            None => {
                assert!(
                    matches!(got, Err(TxnStateError::ProducerFenced { .. })),
                    "{expected:?}: {got:?}"
                );
                assert_eq!(m, before);
            }
        }
    }
}

#[test]
fn init_producer_id_is_refused_while_a_transaction_runs() {
    for state in [Ongoing, PrepareCommit, PrepareAbort] {
        let mut m = loaded(state);
        let before = m.clone();
        assert_eq!(
            m.prepare_increment_producer_epoch(TIMEOUT_MS, None, 1),
            Err(TxnStateError::IllegalTransition {
                from: state,
                to: Empty
            })
        );
        assert_eq!(
            m.prepare_producer_id_rotation(PID + 1, TIMEOUT_MS, 1, false),
            Err(TxnStateError::TransactionInProgress(state))
        );
        assert_eq!(m, before);
    }
}

#[test]
fn exhausted_epochs_rotate_the_producer_id() {
    let mut m = loaded(Empty);
    m.producer_epoch = i16::MAX - 2;
    assert!(!m.is_producer_epoch_exhausted());
    let init = m.prepare_increment_producer_epoch(TIMEOUT_MS, Some((PID, i16::MAX - 2)), 1);
    commit(&mut m, init);
    assert_eq!(m.producer_epoch(), i16::MAX - 1);
    assert!(m.is_producer_epoch_exhausted());
    assert!(is_epoch_exhausted(i16::MAX));

    let before = m.clone();
    for expected in [None, Some((PID, i16::MAX - 1))] {
        assert_eq!(
            m.prepare_increment_producer_epoch(TIMEOUT_MS, expected, 2),
            Err(TxnStateError::EpochExhausted {
                producer_id: PID,
                producer_epoch: i16::MAX - 1
            })
        );
    }
    assert!(matches!(
        m.prepare_increment_producer_epoch(TIMEOUT_MS, Some((PID, 5)), 2),
        Err(TxnStateError::ProducerFenced { .. })
    ));
    assert_eq!(m, before);

    let rotate = m.prepare_producer_id_rotation(PID + 1, TIMEOUT_MS, 3, true);
    let t = commit(&mut m, rotate);
    assert_eq!((t.producer_id, t.last_producer_id), (PID + 1, PID));
    assert_eq!(
        (
            m.producer_id(),
            m.last_producer_id(),
            m.producer_epoch(),
            m.last_producer_epoch()
        ),
        (PID + 1, PID, 0, i16::MAX - 1)
    );
    // The producer retries with the old id and its exhausted epoch: not
    // fenced, and given the same new epoch (a retry of the rotation).
    let retry = m.prepare_increment_producer_epoch(TIMEOUT_MS, Some((PID, i16::MAX - 1)), 4);
    let t = commit(&mut m, retry);
    assert_eq!((t.producer_id, t.producer_epoch), (PID + 1, 0));
    // Without the producer named, the last epoch is not recorded.
    let mut m = loaded(CompleteAbort);
    m.producer_epoch = i16::MAX - 1;
    let rotate = m.prepare_producer_id_rotation(PID + 9, TIMEOUT_MS, 5, false);
    assert_eq!(commit(&mut m, rotate).last_producer_epoch, -1);
}

#[test]
fn a_fence_bumps_the_epoch_once_and_aborts() {
    let mut m = loaded(Ongoing);
    let fence = m.prepare_fence_producer_epoch().unwrap();
    assert_eq!(
        (fence.state, fence.producer_epoch, fence.last_producer_epoch),
        (PrepareEpochFence, 4, -1)
    );
    assert_eq!(m.pending_state(), Some(PrepareEpochFence));
    assert_eq!(
        m.complete_transition(&fence),
        Err(TxnStateError::UnexpectedTransit {
            to: PrepareEpochFence,
            reason: "PrepareEpochFence is never completed"
        })
    );

    let abort = m.prepare_fenced_abort(&fence, 500).unwrap();
    assert_eq!(
        (abort.state, abort.producer_epoch, abort.last_producer_epoch),
        (PrepareAbort, 4, -1)
    );
    assert_eq!(m.producer_epoch(), 4, "taken at once, as Kafka does");
    // The abort's append fails: the next fence reuses epoch 4.
    m.clear_pending_state();
    m.on_epoch_fence_append_failed();
    let fence = m.prepare_fence_producer_epoch().unwrap();
    assert_eq!(fence.producer_epoch, 4);
    let abort = m.prepare_fenced_abort(&fence, 600);
    commit(&mut m, abort);
    let done = m.prepare_complete(700);
    commit(&mut m, done);
    assert_eq!((m.state(), m.producer_epoch()), (CompleteAbort, 4));
    assert!(!m.has_failed_epoch_fence());
}

#[test]
fn fences_that_cannot_happen_are_refused_unchanged() {
    let mut m = loaded(Ongoing);
    m.producer_epoch = i16::MAX;
    let before = m.clone();
    assert_eq!(
        m.prepare_fence_producer_epoch(),
        Err(TxnStateError::EpochOverflow(i16::MAX))
    );
    assert_eq!(m, before);
    for state in [Empty, PrepareCommit, CompleteAbort] {
        let mut m = loaded(state);
        let before = m.clone();
        assert!(m.prepare_fence_producer_epoch().is_err(), "{state:?}");
        assert_eq!(m, before);
    }
    // No fence pending, or a stale one.
    let mut m = loaded(Ongoing);
    let fence = m.clone().prepare_fence_producer_epoch().unwrap();
    assert!(m.prepare_fenced_abort(&fence, 1).is_err());
    let real = m.prepare_fence_producer_epoch().unwrap();
    let before = m.clone();
    let stale = TxnTransit {
        producer_epoch: 2,
        ..real
    };
    assert!(matches!(
        m.prepare_fenced_abort(&stale, 1),
        Err(TxnStateError::ProducerFenced { .. })
    ));
    assert_eq!(m, before);
}

#[test]
fn transits_that_do_not_fit_are_not_applied() {
    let mut m = loaded(Ongoing);
    let fresh = m.clone();
    let same = m.prepare_no_transit();
    assert_eq!(
        m.complete_transition(&same),
        Err(TxnStateError::NoPendingTransition)
    );
    let good = m.prepare_add_partitions([tp("u", 0)], 10).unwrap();
    let pending = m.clone();
    let bad: [(TxnTransit, &str); 5] = [
        (
            TxnTransit {
                state: PrepareAbort,
                ..good.clone()
            },
            "its state is not the pending state",
        ),
        (
            TxnTransit {
                producer_epoch: 9,
                ..good.clone()
            },
            "the producer changed",
        ),
        (
            TxnTransit {
                topic_partitions: BTreeSet::new(),
                ..good.clone()
            },
            "partitions were dropped",
        ),
        (
            TxnTransit {
                txn_timeout_ms: 1,
                ..good.clone()
            },
            "the timeout changed",
        ),
        (
            TxnTransit {
                producer_id: 1,
                ..good.clone()
            },
            "the producer changed",
        ),
    ];
    for (t, reason) in bad {
        assert_eq!(
            m.complete_transition(&t),
            Err(TxnStateError::UnexpectedTransit {
                to: Ongoing,
                reason
            })
        );
        assert_eq!(m, pending);
    }
    m.complete_transition(&good).unwrap();
    assert_ne!(m, fresh);

    // Empty: the epoch may only be kept, bumped, or 0 with a new id.
    let mut m = loaded(CompleteCommit);
    let t = m
        .prepare_increment_producer_epoch(TIMEOUT_MS, None, 20)
        .unwrap();
    for epoch in [2, 5] {
        let jump = TxnTransit {
            producer_epoch: epoch,
            ..t.clone()
        };
        assert!(m.complete_transition(&jump).is_err());
    }
    let started = TxnTransit {
        txn_start_timestamp_ms: 1,
        ..t.clone()
    };
    assert!(m.complete_transition(&started).is_err());
    m.complete_transition(&t).unwrap();
}

#[test]
fn transits_become_kafkas_record_and_load_back() {
    let mut m = loaded(Empty);
    let t = m
        .prepare_add_partitions([tp("b", 2), tp("a", 1), tp("b", 0)], 40)
        .unwrap();
    let value = t.to_log_value();
    assert_eq!(
        value.partitions,
        vec![("a".to_owned(), vec![1]), ("b".to_owned(), vec![0, 2])]
    );
    assert_eq!(t.to_log_value(), value);
    m.complete_transition(&t).unwrap();

    let stored = decode_value(&encode_value(&value)).unwrap();
    let back = TxnMetadata::from_log("tx", &stored);
    assert_eq!(back.state(), Ongoing);
    assert_eq!(back.topic_partitions(), m.topic_partitions());
    assert_eq!(back.producer_epoch(), m.producer_epoch());
    assert_eq!(back.txn_start_timestamp_ms(), 40);
    assert_eq!(back.txn_last_update_timestamp_ms(), 40);
    assert_eq!(back.last_producer_epoch(), -1, "not stored");

    // An Empty record's partitions are ignored on load.
    let odd = TxnLogValue {
        state: Empty,
        ..value
    };
    assert!(TxnMetadata::from_log("tx", &odd)
        .topic_partitions()
        .is_empty());
}

#[test]
fn a_new_epoch_never_inherits_partitions_from_an_odd_record() {
    // Kafka never writes partitions for a completed transaction; if a log
    // holds some, a new producer epoch still starts with none.
    let mut m = TxnMetadata::from_log(
        "tx",
        &TxnLogValue {
            producer_id: PID,
            producer_epoch: 3,
            transaction_timeout_ms: TIMEOUT_MS,
            state: CompleteCommit,
            partitions: vec![("t".into(), vec![0, 1])],
            last_update_timestamp_ms: 100,
            start_timestamp_ms: 50,
        },
    );
    let init = m.prepare_increment_producer_epoch(TIMEOUT_MS, None, 200);
    commit(&mut m, init);
    assert!(m.topic_partitions().is_empty());
}
