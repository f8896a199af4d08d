use super::*;

fn txn_batch(pid: i64, epoch: i16, first: i32, count: i32) -> ProducerBatch {
    ProducerBatch {
        producer_id: pid,
        epoch,
        first_seq: first,
        last_seq: first + count - 1,
        is_transactional: true,
    }
}

fn at(batch: &ProducerBatch, first_offset: i64) -> BatchMetadata {
    BatchMetadata {
        first_seq: batch.first_seq,
        last_seq: batch.last_seq,
        first_offset,
        last_offset: first_offset + i64::from(batch.last_seq - batch.first_seq),
        max_timestamp: 5,
    }
}

const COMMIT: TxnMarker = TxnMarker {
    commit: true,
    coordinator_epoch: 3,
};
const ABORT: TxnMarker = TxnMarker {
    commit: false,
    coordinator_epoch: 3,
};

/// Producer 1's transaction at offsets 10..=14 (position 1000), producer
/// 2's at 20..=21 (position 2000).
fn two_open() -> ProducerStateManager {
    let mut s = ProducerStateManager::new();
    let a = txn_batch(1, 0, 0, 5);
    s.on_append(&a, at(&a, 10), 0, Some(1000));
    let b = txn_batch(2, 0, 0, 2);
    s.on_append(&b, at(&b, 20), 0, Some(2000));
    s
}

#[test]
fn the_first_open_transaction_holds_the_lso_until_its_marker_is_replicated() {
    let mut s = two_open();
    assert_eq!(s.first_unstable_offset(22), Some((10, Some(1000))));
    assert_eq!(s.open_transactions(), vec![(1, 10), (2, 20)]);
    // A second batch of the same transaction does not move its start.
    let more = txn_batch(1, 0, 5, 1);
    s.on_append(&more, at(&more, 22), 0, Some(2500));
    assert_eq!(s.first_unstable_offset(23), Some((10, Some(1000))));
    // Producer 1 commits at 23; the HW (23) has not passed the marker.
    let done = s.on_marker(1, 0, COMMIT, 23, 0).unwrap();
    assert_eq!(
        done,
        CompletedTxn {
            producer_id: 1,
            first_offset: 10,
            last_offset: 23,
            is_aborted: false
        }
    );
    assert_eq!(s.first_unstable_offset(23), Some((10, Some(1000))));
    // Once the HW is past the marker, producer 2's transaction is first.
    assert_eq!(s.first_unstable_offset(24), Some((20, Some(2000))));
    s.on_high_watermark(24);
    assert_eq!(s.first_unstable_offset(0), Some((20, Some(2000))));
    s.on_marker(2, 0, ABORT, 24, 0).unwrap();
    assert_eq!(s.first_unstable_offset(25), None);
}

#[test]
fn an_aborted_transaction_records_the_lso_after_it() {
    let mut s = two_open();
    // Producer 2 aborts first: producer 1's open transaction bounds the LSO.
    let d = s.on_marker(2, 0, ABORT, 22, 0).unwrap();
    assert!(d.is_aborted);
    assert_eq!(s.last_stable_offset_after(&d), 10);
    let d = s.on_marker(1, 0, ABORT, 23, 0).unwrap();
    assert_eq!(s.last_stable_offset_after(&d), 24);
}

#[test]
fn a_marker_without_an_open_transaction_completes_nothing() {
    let mut s = ProducerStateManager::new();
    assert_eq!(s.on_marker(5, 0, COMMIT, 0, 0), None);
    assert_eq!(s.entry(5).unwrap().coordinator_epoch, 3);
}

#[test]
fn transactional_rules_follow_kafka() {
    let s = two_open();
    // A non-transactional batch while producer 1's transaction is open.
    let plain = ProducerBatch {
        is_transactional: false,
        ..txn_batch(1, 0, 5, 1)
    };
    assert_eq!(s.check(&plain), Err(ProducerError::InvalidTxnState));
    assert_eq!(ProducerError::InvalidTxnState.error_code(), 48);
    // The next transactional batch is fine.
    assert_eq!(s.check(&txn_batch(1, 0, 5, 1)), Ok(SeqCheck::Append));
    // Markers: an older producer epoch, an older coordinator epoch.
    let mut s = s;
    s.on_marker(1, 2, COMMIT, 30, 0);
    assert_eq!(
        s.check_marker(1, 1, 3),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(
        s.check_marker(1, 2, 2),
        Err(ProducerError::CoordinatorFenced)
    );
    assert_eq!(ProducerError::CoordinatorFenced.error_code(), 52);
    assert_eq!(s.check_marker(1, 2, 3), Ok(()));
    assert_eq!(s.check_marker(99, 0, 0), Ok(()));
    // The marker's new epoch cleared producer 1's batches: a data batch
    // of the new epoch must start at sequence 0.
    assert_eq!(s.entry(1).unwrap().epoch, 2);
    assert!(s.entry(1).unwrap().batches.is_empty());
}

#[test]
fn snapshots_keep_open_transactions_and_epoch_only_producers() {
    let mut s = two_open();
    s.on_marker(2, 1, ABORT, 22, 0);
    let back = ProducerStateManager::decode_snapshot(&s.encode_snapshot()).unwrap();
    assert_eq!(back.open_transactions(), vec![(1, 10)]);
    assert_eq!(back.entry(1).unwrap().current_txn_first_offset, Some(10));
    let two = back.entry(2).unwrap();
    assert_eq!((two.epoch, two.coordinator_epoch), (1, 3));
    assert!(two.batches.is_empty());
    // Positions are not in Kafka's file: unknown after a load.
    assert_eq!(back.first_unstable_offset(30), Some((10, None)));
}

#[test]
fn a_producer_with_an_open_transaction_does_not_expire() {
    let mut s = two_open();
    s.on_marker(2, 0, COMMIT, 22, 0);
    assert_eq!(s.remove_expired(1_000_000, 10), 1);
    assert!(s.entry(1).is_some() && s.entry(2).is_none());
}

#[test]
fn replayed_markers_end_transactions_and_truncation_reopens_nothing_past_the_end() {
    let logged = |base: i64, pid: i64, marker: Option<TxnMarker>| LoggedBatch {
        base_offset: base,
        last_offset_delta: 0,
        max_timestamp: 0,
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: if marker.is_some() { -1 } else { 0 },
        is_control: marker.is_some(),
        is_transactional: true,
        marker,
    };
    let mut s = ProducerStateManager::new();
    assert_eq!(s.on_replay(&logged(0, 4, None)), None);
    let done = s.on_replay(&logged(1, 4, Some(ABORT))).unwrap();
    assert_eq!((done.first_offset, done.last_offset), (0, 1));
    // A new transaction at 2; a control batch the cleaner emptied (no
    // marker record) completes nothing.
    assert_eq!(s.on_replay(&logged(2, 4, None)), None);
    let emptied = LoggedBatch {
        is_control: true,
        ..logged(3, 4, None)
    };
    assert_eq!(s.on_replay(&emptied), None);
    assert_eq!(s.open_transactions(), vec![(4, 2)]);
    // Truncating below the open transaction forgets it; the aborted one
    // (marker at 1, below the HW 2) no longer holds the LSO.
    s.truncate_to(2);
    assert!(s.open_transactions().is_empty());
    assert_eq!(s.first_unstable_offset(2), None);
    assert_eq!(s.first_unstable_offset(1), Some((0, None)));
}

/// KIP-890: a transaction opens here only with the guard its verification
/// handed out; a marker in between ends the verification (the ABA case:
/// a stale "verified" cannot open a transaction after an abort).
#[test]
fn a_transaction_opens_only_with_its_verifications_guard() {
    let mut s = ProducerStateManager::new();
    let b = txn_batch(1, 0, 0, 3);
    assert_eq!(
        s.check_verified(&b, None),
        Err(ProducerError::InvalidTxnState),
        "no verification started"
    );
    let g = s
        .start_verification(1, 0, 0, 100, 41)
        .expect("verification starts");
    assert_eq!(g, 41);
    assert_eq!(
        s.start_verification(1, 0, 0, 101, 42),
        Some(41),
        "a running verification keeps its guard"
    );
    assert_eq!(
        s.check_verified(&b, Some(40)),
        Err(ProducerError::InvalidTxnState)
    );
    // An abort marker arrives before the verified batch: the guard is gone.
    s.on_marker(1, 0, ABORT, 5, 0);
    assert_eq!(
        s.check_verified(&b, Some(41)),
        Err(ProducerError::InvalidTxnState)
    );
    // A new verification, then the batch with its guard: the transaction
    // opens and needs no further verification.
    let g = s.start_verification(1, 0, 0, 102, 43).unwrap();
    assert_eq!(s.check_verified(&b, Some(g)), Ok(()));
    s.on_append(&b, at(&b, 10), 0, None);
    assert!(s.verification(1).is_none(), "used up by the append");
    assert_eq!(s.start_verification(1, 3, 0, 103, 44), None, "already open");
    let next = txn_batch(1, 0, 3, 1);
    assert_eq!(s.check_verified(&next, None), Ok(()));
    // Plain batches and other producers' verifications are not concerned.
    let plain = ProducerBatch {
        is_transactional: false,
        ..txn_batch(2, 0, 0, 1)
    };
    assert_eq!(s.check_verified(&plain, None), Ok(()));
}

/// Kafka's `VerificationStateEntry`: while verifying, the lowest sequence
/// seen is the only one that may be appended first (a later batch of the
/// same transaction racing ahead is out of order); a newer epoch resets it.
#[test]
fn a_batch_past_the_verifications_lowest_sequence_is_out_of_order() {
    let mut s = ProducerStateManager::new();
    s.start_verification(1, 5, 0, 0, 1);
    s.start_verification(1, 3, 0, 0, 2);
    assert_eq!(s.verification(1).map(|v| v.lowest_seq), Some(3));
    assert_eq!(
        s.check(&txn_batch(1, 0, 5, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    assert_eq!(s.check(&txn_batch(1, 0, 3, 2)), Ok(SeqCheck::Append));
    s.start_verification(1, 0, 1, 0, 3);
    let v = s.verification(1).copied().unwrap();
    assert_eq!((v.epoch, v.lowest_seq, v.guard), (1, 0, 1));
}

#[test]
fn lingering_verifications_expire_with_producer_ids() {
    let mut s = ProducerStateManager::new();
    s.start_verification(1, 0, 0, 1_000, 1);
    s.start_verification(2, 0, 0, 5_000, 2);
    s.remove_expired(6_000, 4_000);
    assert!(s.verification(1).is_none());
    assert!(s.verification(2).is_some());
}

#[test]
fn a_transaction_whose_producer_went_quiet_past_the_max_timeout_and_five_minutes_is_late() {
    let mut s = ProducerStateManager::new();
    assert!(!s.has_late_transaction(10_000_000, 900_000));
    let a = txn_batch(1, 0, 0, 5);
    s.on_append(&a, at(&a, 10), 1_000, None);
    let due = 1_000 + 900_000 + 300_000;
    assert!(!s.has_late_transaction(due, 900_000));
    assert!(s.has_late_transaction(due + 1, 900_000));
    // Its producer appending again is on time again.
    let b = txn_batch(1, 0, 5, 1);
    s.on_append(&b, at(&b, 15), due, None);
    assert!(!s.has_late_transaction(due + 1, 900_000));
}
