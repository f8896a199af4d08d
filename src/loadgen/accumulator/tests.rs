//! `[pure]` Unit tests of `loadgen::accumulator`.

use super::*;
use crate::loadgen::partitioner::StickyPartitioner;

fn rec(value_len: usize, ts: i64) -> PendingRecord<u32> {
    PendingRecord {
        key: None,
        value: Bytes::from(vec![0u8; value_len]),
        timestamp_ms: ts,
        meta: 0,
    }
}

fn cfg(batch_size: usize, linger_ms: i64) -> AccumulatorConfig {
    AccumulatorConfig {
        batch_size,
        linger_ms,
        buffer_memory: 1 << 20,
        ..AccumulatorConfig::default()
    }
}

fn appended<M>(o: Result<AppendOutcome<M>, AccumulatorError>) -> bool {
    matches!(o, Ok(AppendOutcome::Appended { .. }))
}

#[test]
fn batch_waits_for_linger_when_not_full() {
    let mut acc = Accumulator::new(cfg(16_384, 20), &[0], 1);
    assert!(appended(acc.on_append(1_000, 0, rec(100, 1_000))));
    assert!(acc.on_drain(1_000).is_empty());
    assert!(acc.on_drain(1_019).is_empty());
    assert_eq!(acc.next_ready_ms(), Some(1_020));
    let out = acc.on_drain(1_020);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].batches[0].record_count(), 1);
}

#[test]
fn full_batch_is_sent_before_linger_expires() {
    // A record with a 100-byte value takes 109 bytes: 61 + 9 * 109 =
    // 1042 fits in 1100, the 10th record opens a second batch.
    let mut acc = Accumulator::new(cfg(1_100, 10_000), &[0], 1);
    for _ in 0..10 {
        assert!(appended(acc.on_append(0, 0, rec(100, 0))));
    }
    let out = acc.on_drain(1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].batches.len(), 1, "only the full batch goes");
    assert_eq!(out[0].batches[0].record_count(), 9);
    assert!(out[0].batches[0].estimated_bytes <= 1_100);
    assert_eq!(acc.queued_records(0), 1);
}

#[test]
fn linger_zero_sends_immediately() {
    let mut acc = Accumulator::new(cfg(16_384, 0), &[0], 1);
    assert!(appended(acc.on_append(5, 0, rec(10, 5))));
    assert_eq!(acc.on_drain(5).len(), 1);
}

#[test]
fn buffer_memory_refuses_appends_until_a_batch_completes() {
    let config = AccumulatorConfig {
        batch_size: 1_000,
        linger_ms: 1_000,
        buffer_memory: 2_000,
        ..AccumulatorConfig::default()
    };
    let mut acc = Accumulator::new(config, &[0, 0, 0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    assert!(appended(acc.on_append(0, 1, rec(10, 0))));
    assert_eq!(acc.memory_used(), 2_000);
    // A third batch has no memory: the record comes back.
    let refused = acc.on_append(0, 2, rec(10, 0)).unwrap();
    let AppendOutcome::BufferFull(r) = refused else {
        panic!("expected back-pressure, got {refused:?}");
    };
    // Appending into an existing open batch needs no new memory.
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    // Exhaustion makes batches sendable at once so memory comes back.
    let out = acc.on_drain(1);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].batches.len(), 2);
    acc.on_request_complete(0);
    // Still no memory until a batch is done.
    assert!(matches!(
        acc.on_append(1, 2, r.clone()),
        Ok(AppendOutcome::BufferFull(_))
    ));
    acc.on_batch_done(&out[0].batches[0]);
    assert!(appended(acc.on_append(1, 2, r)));
    acc.check_invariants();
}

#[test]
fn record_larger_than_buffer_memory_is_an_error() {
    let config = AccumulatorConfig {
        buffer_memory: 500,
        batch_size: 100,
        ..AccumulatorConfig::default()
    };
    let mut acc = Accumulator::new(config, &[0], 1);
    assert!(matches!(
        acc.on_append(0, 0, rec(1_000, 0)),
        Err(AccumulatorError::RecordTooLarge { .. })
    ));
    assert_eq!(
        acc.on_append(0, 7, rec(1, 0)),
        Err(AccumulatorError::UnknownSlot(7))
    );
}

#[test]
fn in_flight_cap_holds_back_drains_per_node() {
    let config = AccumulatorConfig {
        max_in_flight_requests_per_connection: 2,
        ..cfg(16_384, 0)
    };
    // Slot 0 on node 0, slot 1 on node 1.
    let mut acc = Accumulator::new(config, &[0, 1], 2);
    for t in 0..3 {
        assert!(appended(acc.on_append(t, 0, rec(10, t))));
        let out = acc.on_drain(t);
        if t < 2 {
            assert_eq!(out.len(), 1, "request {t} goes out");
        } else {
            assert!(out.is_empty(), "third request waits for the cap");
        }
    }
    assert_eq!(acc.in_flight(0), 2);
    // Node 1 is not affected by node 0's cap.
    assert!(appended(acc.on_append(3, 1, rec(10, 3))));
    let out = acc.on_drain(3);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].node, 1);
    acc.on_request_complete(0);
    let out = acc.on_drain(4);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].node, 0);
    acc.check_invariants();
}

#[test]
fn ready_node_carries_other_partitions_batches_in_one_request() {
    let mut acc = Accumulator::new(cfg(16_384, 100), &[0, 0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    assert!(appended(acc.on_append(90, 1, rec(10, 90))));
    let out = acc.on_drain(100);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].batches.len(), 2);
    assert_eq!(acc.in_flight(0), 1);
}

#[test]
fn max_request_size_splits_requests() {
    let config = AccumulatorConfig {
        max_request_size: 1_500,
        ..cfg(1_000, 0)
    };
    let mut acc = Accumulator::new(config, &[0, 0], 1);
    for slot in 0..2 {
        for _ in 0..8 {
            assert!(appended(acc.on_append(0, slot, rec(100, 0))));
        }
    }
    let first = acc.on_drain(0);
    assert_eq!(first[0].batches.len(), 1);
    let second = acc.on_drain(0);
    assert_eq!(second[0].batches.len(), 1);
    assert_ne!(first[0].batches[0].slot, second[0].batches[0].slot);
}

#[test]
fn retried_batch_waits_for_backoff_and_keeps_sequence_order() {
    let mut acc = Accumulator::new(cfg(16_384, 0), &[0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    let mut b1 = acc.on_drain(0).pop().unwrap().batches.pop().unwrap();
    b1.base_sequence = Some(0);
    b1.attempts = 1;
    assert!(appended(acc.on_append(1, 0, rec(10, 1))));
    let mut b2 = acc.on_drain(1).pop().unwrap().batches.pop().unwrap();
    b2.base_sequence = Some(1);
    b2.attempts = 1;
    acc.on_request_complete(0);
    acc.on_request_complete(0);
    // Re-enqueued out of order, they come back in sequence order.
    acc.on_retry(10, b2);
    acc.on_retry(10, b1);
    assert!(acc.on_drain(50).is_empty(), "backing off");
    assert_eq!(acc.next_ready_ms(), Some(110));
    let out = acc.on_drain(110);
    let seqs: Vec<_> = out[0].batches.iter().map(|b| b.base_sequence).collect();
    // Both are on one partition: one batch per partition per request.
    assert_eq!(seqs, vec![Some(0)]);
    let out = acc.on_drain(110);
    assert_eq!(out[0].batches[0].base_sequence, Some(1));
}

#[test]
fn queued_batches_expire_after_delivery_timeout() {
    let config = AccumulatorConfig {
        delivery_timeout_ms: 1_000,
        max_in_flight_requests_per_connection: 1,
        ..cfg(16_384, 0)
    };
    let mut acc = Accumulator::new(config, &[0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    assert_eq!(acc.on_drain(0).len(), 1);
    assert!(appended(acc.on_append(5, 0, rec(10, 5))));
    assert!(acc.on_expire(1_004).is_empty());
    let expired = acc.on_expire(1_005);
    assert_eq!(expired.len(), 1);
    acc.on_batch_done(&expired[0]);
    assert_eq!(acc.queued_batches(), 0);
}

#[test]
fn leader_change_routes_queued_batches_to_the_new_node() {
    let mut acc = Accumulator::new(cfg(16_384, 0), &[0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    acc.on_leader_change(0, 2);
    let out = acc.on_drain(0);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].node, 2);
    assert_eq!(acc.in_flight(2), 1);
    assert_eq!(acc.in_flight(0), 0);
    acc.check_invariants();
}

#[test]
fn flush_makes_lingering_batches_sendable() {
    let mut acc = Accumulator::new(cfg(16_384, 60_000), &[0], 1);
    assert!(appended(acc.on_append(0, 0, rec(10, 0))));
    assert!(acc.on_drain(1).is_empty());
    acc.begin_flush();
    assert_eq!(acc.on_drain(1).len(), 1);
}

#[test]
fn sticky_partitioner_switches_only_when_batch_is_sent() {
    let mut acc = Accumulator::new(cfg(16_384, 1_000), &[0, 0, 0], 1);
    let mut sticky = StickyPartitioner::new(3);
    let mut route = |acc: &mut Accumulator<u32>, now: i64, random: u32| {
        let r = rec(10, now);
        let mut p = sticky.partition(random).unwrap();
        if acc.would_open_new_batch(p as usize, &r) {
            p = sticky.on_new_batch(p, random).unwrap();
        }
        assert!(appended(acc.on_append(now, p as usize, r)));
        p
    };
    let first = route(&mut acc, 0, 1);
    for t in 1..20 {
        assert_eq!(route(&mut acc, t, t as u32), first, "no batch sent yet");
    }
    // The batch lingers out and is sent: the next record moves on.
    let out = acc.on_drain(1_000);
    assert_eq!(out[0].batches.len(), 1);
    assert_eq!(out[0].batches[0].record_count(), 20);
    let second = route(&mut acc, 1_001, 5);
    assert_ne!(second, first);
    assert_eq!(route(&mut acc, 1_002, 9), second);
}

#[test]
fn record_size_matches_kafka_varint_layout() {
    // 1 attr + 1 ts delta + 1 offset delta + 1 null key + 1 value len
    // + 3 value + 1 headers = 9, plus 1 length byte.
    assert_eq!(record_size_in_bytes(0, 0, None, 3), 10);
    // Key "ab": key length 1 + 2 bytes instead of the null marker.
    assert_eq!(record_size_in_bytes(0, 0, Some(2), 3), 12);
    // 64 as zig-zag needs two bytes.
    assert_eq!(record_size_in_bytes(64, 0, None, 3), 11);
}

mod props {
    use super::*;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[derive(Debug, Clone)]
    enum Op {
        Append { slot: usize, len: usize },
        Advance(i64),
        Drain,
        Complete,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..3, 0usize..400).prop_map(|(slot, len)| Op::Append { slot, len }),
            1 => (0i64..5).prop_map(Op::Advance),
            2 => Just(Op::Drain),
            2 => Just(Op::Complete),
        ]
    }

    /// The accumulator plus what a test harness observed of it.
    struct Model {
        acc: Accumulator<u32>,
        now: i64,
        next_id: u32,
        appended: Vec<Vec<u32>>,
        drained: Vec<Vec<u32>>,
        requests: VecDeque<Drained<u32>>,
    }

    impl Model {
        fn new() -> Self {
            let config = AccumulatorConfig {
                batch_size: 300,
                linger_ms: 3,
                buffer_memory: 1_500,
                max_in_flight_requests_per_connection: 2,
                max_request_size: 700,
                ..AccumulatorConfig::default()
            };
            Self {
                acc: Accumulator::new(config, &[0, 1, 0], 2),
                now: 0,
                next_id: 0,
                appended: vec![Vec::new(); 3],
                drained: vec![Vec::new(); 3],
                requests: VecDeque::new(),
            }
        }

        fn apply(&mut self, op: Op) {
            match op {
                Op::Append { slot, len } => {
                    let r = PendingRecord {
                        key: None,
                        value: Bytes::from(vec![0u8; len]),
                        timestamp_ms: self.now,
                        meta: self.next_id,
                    };
                    let outcome = self.acc.on_append(self.now, slot, r);
                    if let Ok(AppendOutcome::Appended { .. }) = outcome {
                        self.appended[slot].push(self.next_id);
                    }
                    self.next_id += 1;
                }
                Op::Advance(ms) => self.now += ms,
                Op::Drain => self.drain(),
                Op::Complete => self.complete(),
            }
        }

        fn drain(&mut self) {
            for d in self.acc.on_drain(self.now) {
                for b in &d.batches {
                    self.drained[b.slot].extend(b.records.iter().map(|r| r.meta));
                }
                self.requests.push_back(d);
            }
        }

        fn complete(&mut self) {
            if let Some(d) = self.requests.pop_front() {
                self.acc.on_request_complete(d.node);
                for b in &d.batches {
                    self.acc.on_batch_done(b);
                }
            }
        }
    }

    fn record(i: usize, key: Option<usize>, value: usize, ts: i64) -> Record {
        Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: -1 + i as i32,
            timestamp: ts,
            key: key.map(|k| Bytes::from(vec![1u8; k])),
            value: Some(Bytes::from(vec![2u8; value])),
            headers: Default::default(),
        }
    }

    proptest! {
        /// Whatever the interleaving, records leave each partition in
        /// append order exactly once, memory stays within buffer.memory
        /// and in-flight requests within the cap.
        #[test]
        fn records_drain_in_order_exactly_once_within_limits(
            ops in proptest::collection::vec(op(), 1..200)
        ) {
            let mut m = Model::new();
            for op in ops {
                m.apply(op);
                m.acc.check_invariants();
                prop_assert!(m.acc.memory_used() <= 1_500);
                prop_assert!(m.acc.in_flight(0) <= 2 && m.acc.in_flight(1) <= 2);
                for slot in 0..3 {
                    let n = m.drained[slot].len();
                    prop_assert_eq!(&m.drained[slot][..], &m.appended[slot][..n]);
                }
            }
            m.acc.begin_flush();
            while m.acc.queued_batches() > 0 || !m.requests.is_empty() {
                m.drain();
                m.complete();
            }
            prop_assert_eq!(&m.drained, &m.appended);
            prop_assert_eq!(m.acc.memory_used(), 0);
        }

        /// The size estimate is exact for uncompressed v2 batches, as
        /// Java's `DefaultRecord.sizeInBytes` is.
        #[test]
        fn size_estimate_matches_encoded_batch(
            spec in proptest::collection::vec(
                (proptest::option::of(0usize..300), 0usize..3000, 0i64..100_000),
                1..20,
            )
        ) {
            let base_ts = 1_700_000_000_000i64;
            let recs: Vec<Record> = spec
                .iter()
                .enumerate()
                .map(|(i, (k, v, dt))| record(i, *k, *v, base_ts + if i == 0 { 0 } else { *dt }))
                .collect();
            let mut buf = bytes::BytesMut::new();
            let opts = RecordEncodeOptions { version: 2, compression: Compression::None };
            RecordBatchEncoder::encode(&mut buf, recs.iter(), &opts).unwrap();
            let estimate: usize = RECORD_BATCH_OVERHEAD
                + recs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let key = r.key.as_ref().map(Bytes::len);
                        let value = r.value.as_ref().map_or(0, Bytes::len);
                        record_size_in_bytes(i as i64, r.timestamp - base_ts, key, value)
                    })
                    .sum::<usize>();
            prop_assert_eq!(estimate, buf.len());
        }
    }
}
