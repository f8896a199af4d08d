//! `[pure]` Unit tests of `purgatory::timing_wheel`.

use super::*;
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

fn payloads(v: Vec<Expired<u32>>) -> Vec<u32> {
    v.into_iter().map(|e| e.payload).collect()
}

#[test]
fn entry_expires_on_its_exact_tick_and_not_before() {
    let mut w = TimingWheel::new(1_000);
    w.insert(1_007, 7u32);
    assert_eq!(w.next_deadline(), Some(1_007));
    assert!(w.advance(1_006).is_empty());
    w.check_invariants();
    let out = w.advance(1_007);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].deadline_ms, 1_007);
    assert_eq!(out[0].payload, 7);
    assert!(w.is_empty());
    assert_eq!(w.next_deadline(), None);
    w.check_invariants();
}

#[test]
fn far_deadlines_create_overflow_levels_and_are_demoted_to_expire_exactly() {
    let mut w = TimingWheel::new(0);
    // 20 ms fits level 0? No: level 0 covers [0, 20); 20 goes to level 1.
    let deadlines = [5i64, 19, 20, 399, 400, 7_999, 8_000, 123_457];
    for (i, d) in deadlines.iter().enumerate() {
        w.insert(*d, i as u32);
    }
    assert_eq!(w.levels(), 4, "123 457 ms needs level 3 (8 000 ms buckets)");
    w.check_invariants();
    for (i, d) in deadlines.iter().enumerate() {
        assert!(w.advance(d - 1).is_empty(), "deadline {d} fired early");
        w.check_invariants();
        assert_eq!(payloads(w.advance(*d)), vec![i as u32], "deadline {d}");
        w.check_invariants();
    }
    assert!(w.is_empty());
}

#[test]
fn next_deadline_is_a_bucket_expiration_not_later_than_the_earliest_op() {
    let mut w = TimingWheel::new(0);
    w.insert(4_321, 1u32);
    let first = w.next_deadline().expect("non-empty");
    assert!(first <= 4_321);
    // Following the driver loop (sleep until next_deadline, advance)
    // reaches the op on its exact tick.
    let mut fired = Vec::new();
    while let Some(t) = w.next_deadline() {
        for e in w.advance(t) {
            fired.push((t, e.payload));
        }
    }
    assert_eq!(fired, vec![(4_321, 1)]);
}

#[test]
fn cancelled_entry_never_expires_and_stale_handle_is_rejected() {
    let mut w = TimingWheel::new(0);
    let a = w.insert(10, 1u32);
    let b = w.insert(10, 2u32);
    let c = w.insert(500, 3u32);
    assert_eq!(w.cancel(a), Some(1));
    assert_eq!(w.cancel(a), None, "second cancel of the same handle");
    assert_eq!(w.cancel(c), Some(3));
    w.check_invariants();
    assert_eq!(payloads(w.advance(1_000)), vec![2]);
    assert_eq!(w.cancel(b), None, "expired handle cannot be cancelled");
    // Freed slots are reused with a new generation: old handles stay dead.
    let d = w.insert(2_000, 4u32);
    assert!(d.index() == a.index() || d.index() == b.index() || d.index() == c.index());
    assert!(w.get(a).is_none() && w.get(b).is_none());
    assert_eq!(w.get(d), Some(&4));
}

#[test]
fn slot_reused_right_after_cancel_gets_a_new_generation() {
    let mut w = TimingWheel::new(0);
    let old = w.insert(10, 1u32);
    assert_eq!(w.cancel(old), Some(1));
    let new = w.insert(10, 2u32);
    assert_eq!(
        new.index(),
        old.index(),
        "cancelled last slot is handed out again"
    );
    assert_ne!(new, old);
    assert_eq!(w.get(old), None);
    assert_eq!(
        w.cancel(old),
        None,
        "stale handle must not cancel the new op"
    );
    assert_eq!(w.get(new), Some(&2));
    w.check_invariants();
    assert_eq!(payloads(w.advance(10)), vec![2]);
}

#[test]
fn cancel_in_an_open_chunk_frees_only_the_last_slot_for_reuse() {
    let mut w = TimingWheel::new(0);
    let a = w.insert(10, 1u32);
    let b = w.insert(10, 2u32);
    // `a` is not the chunk's last handed-out slot: cancelling it must
    // not rewind the fill point onto `b`'s slot.
    assert_eq!(w.cancel(a), Some(1));
    let c = w.insert(10, 3u32);
    assert_ne!(
        c.index(),
        a.index(),
        "a middle slot is not handed out again"
    );
    assert_ne!(c.index(), b.index());
    assert_eq!((w.get(a), w.get(b), w.get(c)), (None, Some(&2), Some(&3)));
    w.check_invariants();
    // Expiry after the chunk closes goes through its bookkeeping; the
    // handles of expired ops stay stale though their slots are unused.
    assert_eq!(payloads(w.advance(10)), vec![2, 3]);
    assert!(!w.contains(b) && !w.contains(c));
    assert_eq!(w.cancel(b), None);
    w.check_invariants();
    assert_eq!(
        w.free_chunks.len(),
        w.chunks.len(),
        "emptied chunk reusable"
    );
}

#[test]
fn slab_stops_growing_once_ops_expire_or_are_cancelled() {
    let mut w = TimingWheel::new(0);
    let mut sizes = Vec::new();
    for round in 0..6i64 {
        let now = w.current_time_ms();
        let mut handles = Vec::new();
        for i in 0..20_000i64 {
            handles.push(w.insert(now + 1 + (i * 7_919) % 3_000, i));
        }
        // Park-then-complete churn on top: every other op is cancelled.
        for h in handles.iter().step_by(2) {
            assert!(w.cancel(*h).is_some());
        }
        for i in 0..5_000i64 {
            let h = w.insert(now + 1 + (i * 31) % 3_000, -i);
            assert_eq!(w.cancel(h), Some(-i));
        }
        w.check_invariants();
        let mut expired = 0;
        while let Some(t) = w.next_deadline() {
            expired += w.advance(t).len();
        }
        assert_eq!(expired, 10_000, "round {round}");
        sizes.push(w.slots.len());
    }
    assert!(
        sizes[1..].iter().all(|s| *s <= sizes[1]),
        "slab kept growing: {sizes:?}"
    );
    assert!(
        w.free_chunks.len()
            == w.chunks.len()
                - w.buckets
                    .iter()
                    .filter(|b| b.open_chunk != NO_CHUNK)
                    .count()
    );
}

#[test]
fn cancelled_bucket_does_not_report_a_deadline() {
    let mut w = TimingWheel::new(0);
    let a = w.insert(10, 1u32);
    w.insert(30, 2u32);
    w.cancel(a);
    assert_eq!(w.next_deadline(), Some(20), "level-1 bucket [20,40)");
}

#[test]
fn overdue_insert_expires_on_next_advance() {
    let mut w = TimingWheel::new(0);
    w.advance(100);
    w.insert(50, 9u32);
    w.insert(100, 10u32);
    assert_eq!(w.next_deadline(), Some(100));
    let mut got = payloads(w.advance(100));
    got.sort();
    assert_eq!(got, vec![9, 10]);
}

#[test]
fn huge_deadline_is_accepted_without_unbounded_levels() {
    let mut w = TimingWheel::new(0);
    let h = w.insert(i64::MAX, 1u32);
    assert!(w.levels() < 20);
    assert!(w.advance(1_000_000).is_empty());
    assert_eq!(w.cancel(h), Some(1));
}

#[test]
fn one_million_ops_all_expire_once_on_their_tick() {
    let mut w = TimingWheel::new(0);
    let n = 1_000_000u32;
    for i in 0..n {
        // Deadlines spread over 0..30 s (Kafka's request.timeout.ms).
        w.insert(1 + (i as i64 * 7_919) % 30_000, i);
    }
    assert_eq!(w.len(), n as usize);
    let mut seen = vec![false; n as usize];
    let mut count = 0usize;
    let mut out = Vec::new();
    while let Some(t) = w.next_deadline() {
        out.clear();
        w.advance_into(t, &mut out);
        for e in &out {
            assert_eq!(e.deadline_ms, 1 + (e.payload as i64 * 7_919) % 30_000);
            assert!(e.deadline_ms <= t);
            assert!(!seen[e.payload as usize], "expired twice");
            seen[e.payload as usize] = true;
            count += 1;
        }
    }
    assert_eq!(count, n as usize);
    w.check_invariants();
}

#[derive(Debug, Clone)]
enum Step {
    Insert(i64),
    Cancel(usize),
    Advance(i64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop_oneof![0i64..30, 0i64..1_000, 0i64..200_000].prop_map(Step::Insert),
        1 => any::<usize>().prop_map(Step::Cancel),
        2 => prop_oneof![0i64..5, 0i64..100, 0i64..20_000].prop_map(Step::Advance),
    ]
}

proptest! {
    #[test]
    fn division_free_quotient_matches_integer_division(level in 0u32..15, frac in 0.0f64..1.0) {
        let tick = (WHEEL_SIZE as i64).saturating_pow(level);
        let l = Level::new(tick, 0);
        let window = if l.interval_ms == i64::MAX { i64::MAX } else { l.interval_ms - 1 };
        let rel = (window as f64 * frac) as i64;
        prop_assert_eq!(l.ticks_in(rel), rel / tick);
        prop_assert_eq!(l.ticks_in(window), window / tick);
    }

    #[test]
    fn multiply_high_quotient_is_exact_below_two_to_the_32(tick in 2i64..(1 << 32), rel in 0i64..(1 << 32)) {
        let l = Level::new(tick, 0);
        prop_assert_eq!(l.ticks_in(rel), rel / tick);
        prop_assert_eq!(l.ticks_in((1 << 32) - 1), ((1i64 << 32) - 1) / tick);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn wheel_matches_binary_heap_reference(start in 0i64..100_000, steps in prop::collection::vec(step(), 1..300)) {
        let mut wheel = TimingWheel::new(start);
        // Reference model: a heap ordered by (deadline, id).
        let mut reference: BinaryHeap<Reverse<(i64, u32)>> = BinaryHeap::new();
        let mut cancelled: BTreeSet<u32> = BTreeSet::new();
        let mut handles: Vec<(TimerHandle, u32)> = Vec::new();
        let mut now = start;
        let mut next_id = 0u32;
        for s in steps {
            match s {
                Step::Insert(delay) => {
                    let h = wheel.insert(now + delay, next_id);
                    reference.push(Reverse((now + delay, next_id)));
                    handles.push((h, next_id));
                    next_id += 1;
                }
                Step::Cancel(i) if !handles.is_empty() => {
                    let (h, id) = handles.swap_remove(i % handles.len());
                    let live = !cancelled.contains(&id) && reference.iter().any(|Reverse((_, r))| *r == id);
                    prop_assert_eq!(wheel.cancel(h).is_some(), live);
                    if live { cancelled.insert(id); }
                }
                Step::Cancel(_) => {}
                Step::Advance(dt) => {
                    now += dt;
                    let got = wheel.advance(now);
                    let got_pairs: Vec<(i64, u32)> = got.iter().map(|e| (e.deadline_ms, e.payload)).collect();
                    let mut want = Vec::new();
                    while let Some(Reverse((d, id))) = reference.peek().copied() {
                        if d > now { break; }
                        reference.pop();
                        if !cancelled.contains(&id) { want.push((d, id)); }
                    }
                    // Same ops, each on or after its deadline, in deadline order.
                    prop_assert!(got_pairs.windows(2).all(|w| w[0].0 <= w[1].0), "out of order: {:?}", got_pairs);
                    let mut sorted = got_pairs.clone();
                    sorted.sort();
                    prop_assert_eq!(sorted, want);
                }
            }
            wheel.check_invariants();
            let live_min = reference.iter().filter(|Reverse((_, id))| !cancelled.contains(id)).map(|Reverse((d, _))| *d).min();
            let next = wheel.next_deadline();
            prop_assert_eq!(next.is_some(), live_min.is_some());
            if let (Some(n), Some(m)) = (next, live_min) {
                prop_assert!(n <= m, "next_deadline {} after earliest op {}", n, m);
                // A driver sleeping until `n` must not spin: future ops
                // give a future bucket.
                prop_assert!(m <= now || n > now, "next_deadline {} not in the future of {}", n, now);
            }
        }
    }
}
