use super::*;

const T: &str = "copier-1";

/// A coordinator leading every partition, and the log it wrote.
struct Harness {
    c: Coordinator,
    log: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Harness {
    fn new() -> Self {
        let mut c = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS);
        for p in 0..50 {
            c.on_loaded(p, 5, &[]);
        }
        Harness { c, log: Vec::new() }
    }

    /// Run `actions` to the end: appends succeed and are logged, producer
    /// ids come from 1000 up, markers are written. Returns the replies and
    /// the markers sent.
    fn settle(&mut self, mut actions: Vec<Action>) -> (Vec<(WaiterId, Answer)>, Vec<Action>) {
        let (mut replies, mut markers) = (Vec::new(), Vec::new());
        let mut next_pid = 1000;
        while let Some(a) = actions.pop() {
            match a {
                Action::Reply(w, answer) => replies.push((w, answer)),
                Action::Append {
                    key, value, token, ..
                } => {
                    self.log.push((key, value));
                    actions.extend(self.c.on_appended(token, true, 10));
                }
                Action::AllocateProducerId { waiter } => {
                    actions.extend(self.c.on_producer_id(waiter, Some(next_pid), 10));
                    next_pid += 1;
                }
                Action::SendMarkers { token, .. } => {
                    markers.push(a.clone());
                    actions.extend(self.c.on_markers_written(token, 10));
                }
            }
        }
        replies.sort_by_key(|r| r.0);
        (replies, markers)
    }

    fn init(&mut self, w: WaiterId, timeout_ms: i32) -> Answer {
        let actions = self.c.on_init_producer_id(w, T, timeout_ms, None, 0);
        let (replies, _) = self.settle(actions);
        replies.into_iter().find(|r| r.0 == w).unwrap().1
    }

    fn add(&mut self, pid: i64, epoch: i16, parts: &[(&str, i32)]) -> ErrorCode {
        let parts = parts.iter().map(|(t, p)| (t.to_string(), *p)).collect();
        let actions = self.c.on_add_partitions(1, T, pid, epoch, parts, 0);
        match self.settle(actions).0.as_slice() {
            [(1, Answer::Done(e))] => *e,
            other => panic!("{other:?}"),
        }
    }

    fn end(&mut self, pid: i64, epoch: i16, commit: bool) -> (ErrorCode, Vec<Action>) {
        let actions = self.c.on_end_txn(2, T, pid, epoch, commit, 0);
        let (replies, markers) = self.settle(actions);
        match replies.as_slice() {
            [(2, Answer::Done(e))] => (*e, markers),
            other => panic!("{other:?}"),
        }
    }

    fn state(&self) -> TxnState {
        self.c.metadata(T).unwrap().state()
    }
}

fn ok(pid: i64, epoch: i16) -> Answer {
    Answer::InitProducerId {
        error: ErrorCode::NONE,
        producer_id: pid,
        producer_epoch: epoch,
    }
}

#[test]
fn partition_for_is_javas_string_hash_modulo_the_partitions() {
    // "hello".hashCode() == 99162322 in Java; "" hashes to 0.
    assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
    assert_eq!(partition_for("", 50), 0);
    // A negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE,
    // which Kafka's Utils.abs maps to 0.
    assert_eq!(partition_for("polygenelubricants", 50), 0);
}

#[test]
fn a_transaction_commits_through_prepare_markers_and_complete() {
    let mut h = Harness::new();
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.state(), TxnState::Empty);
    assert_eq!(h.add(1000, 0, &[("t", 0), ("t", 1)]), ErrorCode::NONE);
    assert_eq!(h.state(), TxnState::Ongoing);
    let before = h.log.len();
    assert_eq!(h.add(1000, 0, &[("t", 1)]), ErrorCode::NONE, "already in");
    assert_eq!(h.log.len(), before, "nothing written again");
    let (code, markers) = h.end(1000, 0, true);
    assert_eq!(code, ErrorCode::NONE);
    assert_eq!(
        markers,
        vec![Action::SendMarkers {
            token: match markers[0] {
                Action::SendMarkers { token, .. } => token,
                _ => unreachable!(),
            },
            producer_id: 1000,
            producer_epoch: 0,
            coordinator_epoch: 5,
            commit: true,
            partitions: vec![("t".into(), 0), ("t".into(), 1)],
        }]
    );
    assert_eq!(h.state(), TxnState::CompleteCommit);
    // The records say the same, in Kafka's format.
    let states: Vec<TxnState> = h
        .log
        .iter()
        .map(|(_, v)| records::decode_value(v.as_deref().unwrap()).unwrap().state)
        .collect();
    use TxnState::*;
    assert_eq!(states, vec![Empty, Ongoing, PrepareCommit, CompleteCommit]);
    // A retried commit is fine; an abort of a committed transaction is not.
    assert_eq!(h.end(1000, 0, true).0, ErrorCode::NONE);
    assert_eq!(h.end(1000, 0, false).0, ErrorCode::INVALID_TXN_STATE);
    // The next transaction of the same producer.
    assert_eq!(h.add(1000, 0, &[("u", 3)]), ErrorCode::NONE);
    let (code, markers) = h.end(1000, 0, false);
    assert_eq!(code, ErrorCode::NONE);
    assert!(
        matches!(&markers[0], Action::SendMarkers { commit: false, partitions, .. } if partitions == &vec![("u".to_string(), 3)])
    );
    assert_eq!(h.state(), TxnState::CompleteAbort);
}

#[test]
fn requests_get_kafkas_errors() {
    let mut h = Harness::new();
    let timeout = |h: &mut Harness, ms| h.init(9, ms);
    assert_eq!(
        timeout(&mut h, 0),
        Answer::init_error(ErrorCode::INVALID_TRANSACTION_TIMEOUT)
    );
    assert_eq!(
        timeout(&mut h, DEFAULT_MAX_TIMEOUT_MS + 1),
        Answer::init_error(ErrorCode::INVALID_TRANSACTION_TIMEOUT)
    );
    assert_eq!(
        h.add(1000, 0, &[("t", 0)]),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING,
        "unknown id"
    );
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(
        h.add(1001, 0, &[("t", 0)]),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(h.add(1000, 1, &[("t", 0)]), ErrorCode::PRODUCER_FENCED);
    assert_eq!(
        h.end(1000, 0, true).0,
        ErrorCode::INVALID_TXN_STATE,
        "nothing running"
    );
    // While a transition is being written: CONCURRENT_TRANSACTIONS.
    let parts = vec![("t".to_string(), 0)];
    let pending = h.c.on_add_partitions(3, T, 1000, 0, parts, 0);
    assert!(matches!(pending[..], [Action::Append { .. }]));
    assert_eq!(
        h.add(1000, 0, &[("t", 1)]),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    // A failed append answers NOT_COORDINATOR and changes nothing.
    let Action::Append { token, .. } = pending[0] else {
        unreachable!()
    };
    assert_eq!(
        h.c.on_appended(token, false, 0),
        vec![Action::Reply(3, Answer::Done(ErrorCode::NOT_COORDINATOR))]
    );
    assert_eq!(h.state(), TxnState::Empty);
    // Partitions not led here, or loading.
    let p = h.c.partition_of(T);
    h.c.unload(p);
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NOT_COORDINATOR);
    h.c.begin_load(p);
    assert_eq!(
        h.add(1000, 0, &[("t", 0)]),
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
}

#[test]
fn a_new_producer_fences_the_running_transaction_and_aborts_it() {
    let mut h = Harness::new();
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NONE);
    // A second producer with the same id: the running transaction is
    // aborted under epoch 1 and the new producer retries.
    let actions = h.c.on_init_producer_id(2, T, 60_000, None, 0);
    let (replies, markers) = h.settle(actions);
    assert_eq!(
        replies,
        vec![(2, Answer::init_error(ErrorCode::CONCURRENT_TRANSACTIONS))]
    );
    assert!(matches!(
        &markers[..],
        [Action::SendMarkers {
            commit: false,
            producer_epoch: 1,
            ..
        }]
    ));
    assert_eq!(h.state(), TxnState::CompleteAbort);
    assert_eq!(h.init(3, 60_000), ok(1000, 2));
    // The old producer is fenced.
    assert_eq!(h.end(1000, 0, true).0, ErrorCode::PRODUCER_FENCED);
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::PRODUCER_FENCED);
}

#[test]
fn a_transaction_past_its_timeout_is_aborted_by_the_timer() {
    let mut h = Harness::new();
    assert_eq!(h.init(1, 1_000), ok(1000, 0));
    let parts = vec![("t".to_string(), 0)];
    let actions = h.c.on_add_partitions(1, T, 1000, 0, parts, 5_000);
    h.settle(actions);
    assert!(h.c.on_timer(5_500).is_empty(), "not yet");
    let actions = h.c.on_timer(6_001);
    let (_, markers) = h.settle(actions);
    assert!(matches!(
        &markers[..],
        [Action::SendMarkers {
            commit: false,
            producer_epoch: 1,
            ..
        }]
    ));
    assert_eq!(h.state(), TxnState::CompleteAbort);
    assert_eq!(h.end(1000, 0, true).0, ErrorCode::PRODUCER_FENCED);
}

#[test]
fn a_new_coordinator_finishes_a_commit_found_in_the_log() {
    let mut h = Harness::new();
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NONE);
    // EndTxn written (PrepareCommit), then the coordinator dies before
    // the markers: the log ends at PrepareCommit.
    let actions = h.c.on_end_txn(2, T, 1000, 0, true, 0);
    let [Action::Append { key, value, .. }] = &actions[..] else {
        panic!("{actions:?}")
    };
    h.log.push((key.clone(), value.clone()));
    let p = h.c.partition_of(T);
    let mut next = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS);
    next.begin_load(p);
    let resent = next.on_loaded(p, 6, &h.log);
    assert!(matches!(
        &resent[..],
        [Action::SendMarkers {
            commit: true,
            coordinator_epoch: 6,
            producer_id: 1000,
            ..
        }]
    ));
    let Action::SendMarkers { token, .. } = resent[0] else {
        unreachable!()
    };
    let done = next.on_markers_written(token, 20);
    let [Action::Append { token, .. }] = done[..] else {
        panic!("{done:?}")
    };
    next.on_appended(token, true, 20);
    assert_eq!(next.metadata(T).unwrap().state(), TxnState::CompleteCommit);
    // Tombstones remove an id.
    let mut log = h.log.clone();
    log.push((records::encode_key(T), None));
    let mut gone = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS);
    assert!(gone.on_loaded(p, 7, &log).is_empty());
    assert!(gone.metadata(T).is_none());
}

#[test]
fn an_idle_id_expires_into_a_tombstone() {
    let mut h = Harness::new();
    h.c = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS)
        .with_id_expiration(1_000)
        .with_id_expiry_interval(1);
    for p in 0..50 {
        h.c.on_loaded(p, 5, &[]);
    }
    assert!(h.c.on_timer(0).is_empty(), "the first tick arms the sweep");
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NONE);
    // A running transaction is not expired (it times out instead).
    let actions = h.c.on_timer(500);
    assert!(actions.is_empty(), "{actions:?}");
    let (code, _) = h.end(1000, 0, true);
    assert_eq!(code, ErrorCode::NONE);
    // Settled at 10 ms; idle for 1 s from then.
    assert!(h.c.on_timer(900).is_empty());
    let before = h.log.len();
    let actions = h.c.on_timer(1_010);
    h.settle(actions);
    assert!(h.c.metadata(T).is_none(), "removed");
    assert_eq!(h.log[before], (records::encode_key(T), None), "a tombstone");
    // The id starts over: epoch 0 of a freshly allocated producer id, not
    // the epoch bump (1) an existing id gets.
    assert_eq!(h.init(2, 60_000), ok(1000, 0));
}

/// `transactional.id.expiration.ms`, read from `server.properties` and
/// handed to the coordinator as the broker's `TxnHost::new` does
/// (`with_id_expiration`): Kafka's
/// `TransactionStateManager.removeExpiredTransactionalIds` removes an id
/// idle for that long, and keeps one idle for less.
#[test]
fn transactional_id_expiration_ms_removes_an_id_idle_that_long() {
    let server =
        crate::config::ServerConfig::from_properties("transactional.id.expiration.ms=60000\n", &[])
            .expect("valid properties")
            .config;
    let mut h = Harness::new();
    h.c = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS)
        .with_id_expiration(i64::from(server.transactional_id_expiration_ms))
        .with_id_expiry_interval(1);
    for p in 0..50 {
        h.c.on_loaded(p, 5, &[]);
    }
    assert!(h.c.on_timer(0).is_empty(), "the first tick arms the sweep");
    // Empty after InitProducerId, last updated when its append settled
    // (10 ms).
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.state(), TxnState::Empty);
    let actions = h.c.on_timer(60_009);
    assert!(actions.is_empty(), "idle 59999 ms: kept, {actions:?}");
    assert!(h.c.metadata(T).is_some());
    // The default (604800000) would keep it for a week.
    let before = h.log.len();
    let actions = h.c.on_timer(60_010);
    h.settle(actions);
    assert!(h.c.metadata(T).is_none(), "idle 60000 ms: removed");
    assert_eq!(h.log[before..], [(records::encode_key(T), None)]);
}

/// KIP-890's verify-only AddPartitionsToTxn (Kafka's
/// `handleVerifyPartitionsInTransaction`): a code per partition, nothing
/// written.
#[test]
fn verification_answers_per_partition_and_writes_nothing() {
    let mut h = Harness::new();
    let tp = |t: &str, p: i32| (t.to_string(), p);
    let asked = [tp("t", 0), tp("t", 1)];
    assert_eq!(
        h.c.verify_partitions(T, 1000, 0, &asked),
        vec![ErrorCode::INVALID_PRODUCER_ID_MAPPING; 2],
        "unknown transactional id"
    );
    assert_eq!(
        h.c.verify_partitions("", 1000, 0, &asked),
        vec![ErrorCode::INVALID_REQUEST; 2]
    );
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NONE);
    let logged = h.log.len();
    assert_eq!(
        h.c.verify_partitions(T, 1000, 0, &asked),
        vec![ErrorCode::NONE, ErrorCode::TRANSACTION_ABORTABLE]
    );
    assert_eq!(h.log.len(), logged, "nothing written");
    assert_eq!(
        h.c.verify_partitions(T, 999, 0, &asked),
        vec![ErrorCode::INVALID_PRODUCER_ID_MAPPING; 2]
    );
    assert_eq!(
        h.c.verify_partitions(T, 1000, 1, &asked),
        vec![ErrorCode::PRODUCER_FENCED; 2]
    );
    // PrepareCommit written, markers not yet: the transaction is ending.
    let actions = h.c.on_end_txn(2, T, 1000, 0, true, 0);
    let token = actions
        .iter()
        .find_map(|a| match a {
            Action::Append { token, .. } => Some(*token),
            _ => None,
        })
        .expect("PrepareCommit is appended");
    let after = h.c.on_appended(token, true, 10);
    assert_eq!(h.state(), TxnState::PrepareCommit);
    assert_eq!(
        h.c.verify_partitions(T, 1000, 0, &asked),
        vec![ErrorCode::CONCURRENT_TRANSACTIONS; 2]
    );
    h.settle(after);
    assert_eq!(h.state(), TxnState::CompleteCommit);
    assert_eq!(
        h.c.verify_partitions(T, 1000, 0, &asked[..1]),
        vec![ErrorCode::TRANSACTION_ABORTABLE],
        "a completed transaction holds no partitions"
    );
}

#[test]
fn the_partition_count_follows_the_topic_only_while_nothing_is_loaded() {
    let mut c = Coordinator::new(50, 900_000);
    c.set_partition_count(3);
    assert_eq!(c.partition_count(), 3);
    c.begin_load(1);
    c.set_partition_count(7);
    assert_eq!(c.partition_count(), 3, "ids already mapped with 3");
}

#[test]
fn a_failed_completion_is_appended_again_until_written() {
    let mut h = Harness::new();
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    assert_eq!(h.add(1000, 0, &[("t", 0)]), ErrorCode::NONE);
    // EndTxn: PrepareCommit written, the client answered, markers out.
    let actions = h.c.on_end_txn(2, T, 1000, 0, true, 0);
    let Some(Action::Append { token, .. }) = actions.first().cloned() else {
        panic!("{actions:?}");
    };
    let after_prepare = h.c.on_appended(token, true, 1);
    let Some(Action::SendMarkers { token, .. }) = after_prepare.last().cloned() else {
        panic!("{after_prepare:?}");
    };
    // The markers are written; the CompleteCommit append fails (the
    // partition's ISR fell below min.insync.replicas).
    let complete = h.c.on_markers_written(token, 2);
    let Some(Action::Append { token, .. }) = complete.first().cloned() else {
        panic!("{complete:?}");
    };
    assert!(h.c.on_appended(token, false, 3).is_empty());
    assert_eq!(h.state(), TxnState::PrepareCommit);
    assert!(h.c.has_retries());
    assert_eq!(
        h.c.on_end_txn(3, T, 1000, 0, true, 4),
        vec![Action::Reply(
            3,
            Answer::Done(ErrorCode::CONCURRENT_TRANSACTIONS)
        )],
        "still completing"
    );
    // Appended again: it fails once more, then is written.
    let again = h.c.retry_failed_appends();
    let Some(Action::Append { token, .. }) = again.first().cloned() else {
        panic!("{again:?}");
    };
    assert!(h.c.on_appended(token, false, 5).is_empty());
    let again = h.c.retry_failed_appends();
    let Some(Action::Append { token, .. }) = again.first().cloned() else {
        panic!("{again:?}");
    };
    assert!(h.c.on_appended(token, true, 6).is_empty());
    assert_eq!(h.state(), TxnState::CompleteCommit);
    assert!(!h.c.has_retries());
    assert_eq!(h.end(1000, 0, true).0, ErrorCode::NONE);
    // A retry whose partition moved away is dropped.
    assert_eq!(h.add(1000, 0, &[("t", 1)]), ErrorCode::NONE);
    let actions = h.c.on_end_txn(4, T, 1000, 0, false, 7);
    let Some(Action::Append { token, .. }) = actions.first().cloned() else {
        panic!("{actions:?}");
    };
    let markers = h.c.on_appended(token, true, 8);
    let Some(Action::SendMarkers { token, .. }) = markers.last().cloned() else {
        panic!("{markers:?}");
    };
    let Some(Action::Append { token, .. }) = h.c.on_markers_written(token, 9).first().cloned()
    else {
        panic!("no completion");
    };
    assert!(h.c.on_appended(token, false, 10).is_empty());
    h.c.unload(h.c.partition_of(T));
    assert!(!h.c.has_retries());
    assert!(h.c.retry_failed_appends().is_empty());
}

/// `transaction.remove.expired.transaction.cleanup.interval.ms`, read from
/// `server.properties`: expired ids are looked for once per that period
/// (Kafka's `TransactionStateManager` schedule), first one period after
/// the first timer tick, whatever the ticks in between see.
#[test]
fn transaction_remove_expired_transaction_cleanup_interval_ms_paces_the_id_sweep() {
    let server = crate::config::ServerConfig::from_properties(
        "transaction.remove.expired.transaction.cleanup.interval.ms=30000\n\
         transactional.id.expiration.ms=1000\n",
        &[],
    )
    .expect("valid properties")
    .config;
    let mut h = Harness::new();
    h.c = Coordinator::new(50, DEFAULT_MAX_TIMEOUT_MS)
        .with_id_expiration(i64::from(server.transactional_id_expiration_ms))
        .with_id_expiry_interval(i64::from(
            server.transaction_remove_expired_transaction_cleanup_interval_ms,
        ));
    for p in 0..50 {
        h.c.on_loaded(p, 5, &[]);
    }
    assert!(h.c.on_timer(0).is_empty());
    assert_eq!(h.init(1, 60_000), ok(1000, 0));
    // Idle past its 1 s expiry from 1_010 on, but the sweep is due at 30 s.
    for now in [5_000, 20_000, 29_999] {
        let actions = h.c.on_timer(now);
        assert!(actions.is_empty(), "at {now}: {actions:?}");
        assert!(h.c.metadata(T).is_some(), "kept at {now}");
    }
    let actions = h.c.on_timer(30_000);
    h.settle(actions);
    assert!(h.c.metadata(T).is_none(), "removed by the sweep at 30 s");
}
