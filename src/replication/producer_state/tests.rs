use super::*;

fn b(pid: i64, epoch: i16, first: i32, count: i32) -> ProducerBatch {
    ProducerBatch {
        is_transactional: false,
        producer_id: pid,
        epoch,
        first_seq: first,
        last_seq: first.wrapping_add(count - 1),
    }
}

fn meta(batch: &ProducerBatch, first_offset: i64) -> BatchMetadata {
    BatchMetadata {
        first_seq: batch.first_seq,
        last_seq: batch.last_seq,
        first_offset,
        last_offset: first_offset + batch.last_seq.wrapping_sub(batch.first_seq) as i64,
        max_timestamp: 1_000,
    }
}

/// State: producer 7 at epoch 2 has appended seq 0..=9 (offsets 100..=109)
/// and 10..=14 (offsets 110..=114).
fn state() -> ProducerStateManager {
    let mut s = ProducerStateManager::new();
    let b1 = b(7, 2, 0, 10);
    s.on_append(&b1, meta(&b1, 100), 1_000, None);
    let b2 = b(7, 2, 10, 5);
    s.on_append(&b2, meta(&b2, 110), 1_000, None);
    s
}

#[test]
fn sequence_and_epoch_rules_follow_kafka() {
    let dup1 = meta(&b(7, 2, 0, 10), 100);
    let dup2 = meta(&b(7, 2, 10, 5), 110);
    // (case, batch, expected) — each row cites the Kafka behaviour.
    let table: Vec<(&str, ProducerBatch, Result<SeqCheck, ProducerError>)> = vec![
        (
            "non-idempotent batches (pid -1) skip all checks",
            b(-1, -1, -1, 3),
            Ok(SeqCheck::Append),
        ),
        (
            "next in sequence appends (ProducerAppendInfo.checkSequence)",
            b(7, 2, 15, 3),
            Ok(SeqCheck::Append),
        ),
        (
            "retry of the last batch is a duplicate (findDuplicateBatch)",
            b(7, 2, 10, 5),
            Ok(SeqCheck::Duplicate(dup2)),
        ),
        (
            "retry of an older cached batch is a duplicate too",
            b(7, 2, 0, 10),
            Ok(SeqCheck::Duplicate(dup1)),
        ),
        (
            "gap in sequence is OUT_OF_ORDER_SEQUENCE_NUMBER",
            b(7, 2, 16, 1),
            Err(ProducerError::OutOfOrderSequence),
        ),
        (
            "overlap that is not an exact retry is out of order",
            b(7, 2, 12, 5),
            Err(ProducerError::OutOfOrderSequence),
        ),
        (
            "older epoch is INVALID_PRODUCER_EPOCH (KIP-588)",
            b(7, 1, 15, 1),
            Err(ProducerError::InvalidProducerEpoch),
        ),
        (
            "new epoch starting at 0 appends (epoch bump)",
            b(7, 3, 0, 1),
            Ok(SeqCheck::Append),
        ),
        (
            "new epoch not starting at 0 is out of order",
            b(7, 3, 5, 1),
            Err(ProducerError::OutOfOrderSequence),
        ),
        (
            "unknown producer with any sequence appends (KIP-360)",
            b(8, 0, 42, 1),
            Ok(SeqCheck::Append),
        ),
    ];
    let s = state();
    for (case, batch, want) in table {
        assert_eq!(s.check(&batch), want, "{case}");
    }
}

#[test]
fn sequence_wraps_from_max_to_zero() {
    let mut s = ProducerStateManager::new();
    let last = ProducerBatch {
        is_transactional: false,
        producer_id: 1,
        epoch: 0,
        first_seq: i32::MAX - 1,
        last_seq: i32::MAX,
    };
    s.on_append(&last, meta(&last, 0), 0, None);
    assert_eq!(s.check(&b(1, 0, 0, 1)), Ok(SeqCheck::Append));
}

#[test]
fn only_the_last_five_batches_are_remembered() {
    let mut s = ProducerStateManager::new();
    for i in 0..7 {
        let x = b(1, 0, i, 1);
        s.on_append(&x, meta(&x, i as i64), 0, None);
    }
    assert_eq!(s.entry(1).map(|e| e.batches.len()), Some(BATCHES_KEPT));
    assert_eq!(
        s.check(&b(1, 0, 6, 1)),
        Ok(SeqCheck::Duplicate(meta(&b(1, 0, 6, 1), 6)))
    );
    // Batch seq 0 fell out of the window: no longer a duplicate.
    assert_eq!(
        s.check(&b(1, 0, 0, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
}

#[test]
fn epoch_bump_resets_the_batch_window() {
    let mut s = state();
    let x = b(7, 3, 0, 2);
    s.on_append(&x, meta(&x, 200), 2_000, None);
    let e = s.entry(7).expect("entry");
    assert_eq!((e.epoch, e.batches.len()), (3, 1));
}

#[test]
fn expiration_drops_idle_producers() {
    let mut s = state();
    assert_eq!(
        s.remove_expired(
            1_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS - 1,
            DEFAULT_PRODUCER_ID_EXPIRATION_MS
        ),
        0
    );
    assert_eq!(
        s.remove_expired(
            1_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            DEFAULT_PRODUCER_ID_EXPIRATION_MS
        ),
        1
    );
    assert!(s.is_empty());
}

#[test]
fn truncation_forgets_batches_past_the_offset() {
    let mut s = state();
    s.truncate_to(110);
    assert_eq!(
        s.check(&b(7, 2, 10, 5)),
        Ok(SeqCheck::Append),
        "seq 10 is next again"
    );
    s.truncate_to(50);
    assert!(s.is_empty());
}

#[test]
fn snapshot_round_trips_the_last_batch_per_producer() {
    let s = state();
    let bytes = s.encode_snapshot();
    let back = ProducerStateManager::decode_snapshot(&bytes).expect("decode");
    assert_eq!(
        back.check(&b(7, 2, 10, 5)),
        Ok(SeqCheck::Duplicate(meta(&b(7, 2, 10, 5), 110)))
    );
    assert_eq!(back.check(&b(7, 2, 15, 1)), Ok(SeqCheck::Append));
}

#[test]
fn damaged_snapshot_is_rejected() {
    let mut bytes = state().encode_snapshot();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert!(ProducerStateManager::decode_snapshot(&bytes).is_none());
    assert!(ProducerStateManager::decode_snapshot(&bytes[..3]).is_none());
    assert!(ProducerStateManager::decode_snapshot(&[]).is_none());
}

fn logged(pid: i64, epoch: i16, first_seq: i32, count: i32, base: i64) -> LoggedBatch {
    LoggedBatch {
        is_transactional: false,
        marker: None,
        base_offset: base,
        last_offset_delta: count - 1,
        max_timestamp: 5_000,
        producer_id: pid,
        producer_epoch: epoch,
        base_sequence: first_seq,
        is_control: false,
    }
}

#[test]
fn replaying_the_log_rebuilds_duplicate_detection() {
    let log = [
        logged(7, 0, 0, 3, 0),
        logged(-1, -1, -1, 2, 3),
        logged(8, 1, 0, 1, 5),
        logged(7, 0, 3, 2, 6),
        LoggedBatch {
            is_transactional: false,
            marker: None,
            is_control: true,
            ..logged(8, 1, -1, 1, 8)
        },
    ];
    let mut s = ProducerStateManager::new();
    for l in &log {
        s.on_replay(l);
    }
    assert_eq!(s.len(), 2, "control and non-idempotent batches add nobody");
    let retry = s.check(&b(7, 0, 3, 2));
    let Ok(SeqCheck::Duplicate(m)) = retry else {
        panic!("retry of a replayed batch must be a duplicate: {retry:?}");
    };
    assert_eq!((m.first_offset, m.last_offset), (6, 7));
    assert_eq!(s.check(&b(7, 0, 5, 1)), Ok(SeqCheck::Append));
    assert_eq!(
        s.check(&b(7, 0, 6, 1)),
        Err(ProducerError::OutOfOrderSequence)
    );
    assert_eq!(s.check(&b(8, 1, 1, 1)), Ok(SeqCheck::Append));
    assert_eq!(
        s.check(&b(8, 0, 1, 1)),
        Err(ProducerError::InvalidProducerEpoch)
    );
    assert_eq!(s.entry(7).map(|e| e.last_timestamp_ms), Some(5_000));
}

/// A producer's appends: (producer id, epoch bump?, record count).
fn appends() -> impl proptest::strategy::Strategy<Value = Vec<(i64, bool, i32)>> {
    proptest::collection::vec((1i64..4, proptest::bool::weighted(0.1), 1i32..20), 1..40)
}

proptest::proptest! {
    #[test]
    fn snapshot_plus_replay_of_the_tail_equals_the_live_state(
        ops in appends(),
        cut_at in 0usize..40,
    ) {
        // Live: every batch goes through check + on_append. Log: the
        // same batches as headers. Rebuilt: snapshot of the first
        // `cut` batches, decoded, then the rest replayed.
        let mut live = ProducerStateManager::new();
        let mut log = Vec::new();
        let mut next: BTreeMap<i64, (i16, i32)> = BTreeMap::new();
        let mut offset = 0i64;
        for (pid, bump, count) in ops {
            let (epoch, seq) = next.entry(pid).or_insert((0, 0));
            if bump {
                *epoch += 1;
                *seq = 0;
            }
            let l = LoggedBatch { max_timestamp: offset, ..logged(pid, *epoch, *seq, count, offset) };
            let batch = b(pid, *epoch, *seq, count);
            proptest::prop_assert_eq!(live.check(&batch), Ok(SeqCheck::Append));
            live.on_append(&batch, BatchMetadata { max_timestamp: offset, ..meta(&batch, offset) }, offset, None);
            log.push(l);
            *seq += count;
            offset += i64::from(count);
        }
        let cut = cut_at.min(log.len());
        let mut head = ProducerStateManager::new();
        log[..cut].iter().for_each(|l| {
            head.on_replay(l);
        });
        let mut rebuilt = ProducerStateManager::decode_snapshot(&head.encode_snapshot())
            .expect("own snapshot decodes");
        log[cut..].iter().for_each(|l| {
            rebuilt.on_replay(l);
        });
        proptest::prop_assert_eq!(rebuilt.len(), live.len());
        for (pid, (epoch, seq)) in &next {
            let entry = live.entry(*pid).expect("live entry");
            let last = *entry.batches.back().expect("a batch");
            let again = ProducerBatch { producer_id: *pid, epoch: *epoch, first_seq: last.first_seq, last_seq: last.last_seq, is_transactional: false };
            proptest::prop_assert_eq!(rebuilt.check(&again), Ok(SeqCheck::Duplicate(last)));
            proptest::prop_assert_eq!(rebuilt.check(&b(*pid, *epoch, *seq, 1)), Ok(SeqCheck::Append));
            proptest::prop_assert_eq!(rebuilt.check(&b(*pid, *epoch, seq + 1, 1)), Err(ProducerError::OutOfOrderSequence));
            proptest::prop_assert_eq!(rebuilt.entry(*pid).map(|e| (e.epoch, e.last_timestamp_ms)), Some((entry.epoch, entry.last_timestamp_ms)));
        }
    }
}

#[test]
fn snapshot_with_an_impossible_entry_is_rejected() {
    let mut s = ProducerStateManager::new();
    let x = b(3, 0, 0, 2);
    s.on_append(&x, meta(&x, 10), 0, None);
    let mut bytes = s.encode_snapshot();
    // offset_delta at body offset 4 + 22: make it negative, fix the CRC.
    bytes[6 + 4 + 22..6 + 4 + 26].copy_from_slice(&(-5i32).to_be_bytes());
    let crc = crc32c::crc32c(&bytes[6..]);
    bytes[2..6].copy_from_slice(&crc.to_be_bytes());
    assert!(ProducerStateManager::decode_snapshot(&bytes).is_none());
}

proptest::proptest! {
    #[test]
    fn snapshot_decoder_never_panics(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        let _ = ProducerStateManager::decode_snapshot(&data);
    }
}
