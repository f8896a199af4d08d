//! `[pure]` The delayed-operation contract and the per-shard `Purgatory`
//! core: one timing wheel (timeouts) + watch lists (events), combined as in
//! Kafka's `DelayedOperationPurgatory`.
//!
//! Exactly-once completion: an operation lives in exactly one place, the
//! wheel's slab. Completing it by an event removes it from the slab
//! (`cancel`), expiring it removes it too (`advance`); whichever comes first
//! wins and the other finds a stale handle. Kafka needs an atomic
//! `completed` flag for this because its reaper thread races request
//! threads; a shard is single-threaded, so ownership is enough.
//!
//! Completions are returned as data; the caller (the driver) delivers them.

use std::hash::Hash;

use crate::purgatory::timing_wheel::{Expired, TimerHandle, TimingWheel};
use crate::purgatory::watch_list::{WatchList, DEFAULT_PURGE_INTERVAL_REQUESTS};

/// Identity of a parked operation (its timing wheel handle).
pub type OpId = TimerHandle;

/// Kafka's `DelayedOperation`: `tryComplete`, `onComplete`, `onExpiration`.
pub trait DelayedOperation {
    /// What the operation watches (a partition).
    type Key: Hash + Eq + Ord + Clone;
    /// What `try_complete` reads (the shard's partition view).
    type View: ?Sized;
    /// What the operation answers with.
    type Outcome;

    /// How long the op may wait (Kafka's `delayMs`: produce `timeout_ms`,
    /// fetch `max_wait_ms`).
    fn delay_ms(&self) -> i64;
    /// True when the op can answer now; may record partial progress.
    fn try_complete(&mut self, now_ms: i64, view: &Self::View) -> bool;
    /// Builds the answer after `try_complete` returned true.
    fn on_complete(self) -> Self::Outcome;
    /// Builds the answer when the delay ran out first.
    fn on_expire(self) -> Self::Outcome;
}

/// Result of [`Purgatory::try_complete_else_watch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parked<O> {
    /// Completed on the first try; nothing was parked.
    Completed(O),
    /// Parked under this id until an event or the timeout.
    Watching(OpId),
}

/// An operation that finished, by event or by expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedOp<O> {
    pub op_id: OpId,
    pub outcome: O,
}

/// An operation whose delay ran out.
pub type ExpiredOp<O> = CompletedOp<O>;

/// A change in which keys this purgatory watches, for telling owner shards
/// to start/stop sending "partition advanced" notes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchChange<K> {
    Watch(K),
    Unwatch(K),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgatoryConfig {
    /// `producer.purgatory.purge.interval.requests` /
    /// `fetch.purgatory.purge.interval.requests` (Kafka default 1000).
    pub purge_interval_requests: usize,
}

impl Default for PurgatoryConfig {
    fn default() -> Self {
        Self {
            purge_interval_requests: DEFAULT_PURGE_INTERVAL_REQUESTS,
        }
    }
}

#[derive(Debug)]
struct Entry<Op> {
    op: Op,
    /// How many watch lists hold this op (for the stale-entry count).
    watched_keys: usize,
}

pub struct Purgatory<Op: DelayedOperation> {
    config: PurgatoryConfig,
    wheel: TimingWheel<Entry<Op>>,
    watch: WatchList<Op::Key>,
    /// Watch-list entries that belong to live ops; the rest are stale.
    live_watch_entries: usize,
    changes: Vec<WatchChange<Op::Key>>,
    expired_buf: Vec<Expired<Entry<Op>>>,
}

impl<Op: DelayedOperation> Purgatory<Op> {
    pub fn new(config: PurgatoryConfig, start_ms: i64) -> Self {
        Self {
            config,
            wheel: TimingWheel::new(start_ms),
            watch: WatchList::new(),
            live_watch_entries: 0,
            changes: Vec::new(),
            expired_buf: Vec::new(),
        }
    }

    /// Kafka's `tryCompleteElseWatch`: answer now if possible, else park the
    /// op on every key in `keys` and on the wheel at `now_ms + delay_ms`.
    pub fn try_complete_else_watch(
        &mut self,
        mut op: Op,
        keys: &[Op::Key],
        now_ms: i64,
        view: &Op::View,
    ) -> Parked<Op::Outcome> {
        if op.try_complete(now_ms, view) {
            return Parked::Completed(op.on_complete());
        }
        let deadline_ms = now_ms.saturating_add(op.delay_ms().max(0));
        let mut unique: Vec<&Op::Key> = keys.iter().collect();
        unique.sort();
        unique.dedup();
        let id = self.wheel.insert(
            deadline_ms,
            Entry {
                op,
                watched_keys: unique.len(),
            },
        );
        for key in unique {
            if self.watch.watch(key, id) {
                self.changes.push(WatchChange::Watch(key.clone()));
            }
            self.live_watch_entries += 1;
        }
        self.debug_check();
        Parked::Watching(id)
    }

    /// Kafka's `checkAndComplete(key)`: re-tries every op watching `key`,
    /// returning those that completed, in the order they were parked.
    #[allow(
        clippy::expect_used,
        reason = "the entry was found live in the wheel just above"
    )]
    pub fn check_and_complete(
        &mut self,
        key: &Op::Key,
        now_ms: i64,
        view: &Op::View,
    ) -> Vec<CompletedOp<Op::Outcome>> {
        let mut done = Vec::new();
        let wheel = &mut self.wheel;
        let mut released = 0;
        let emptied = self.watch.retain(key, |&id| {
            let Some(entry) = wheel.get_mut(id) else {
                return false; // stale: completed via another key, or expired
            };
            if !entry.op.try_complete(now_ms, view) {
                return true;
            }
            let entry = wheel.cancel(id).expect("entry was live");
            released += entry.watched_keys;
            done.push(CompletedOp {
                op_id: id,
                outcome: entry.op.on_complete(),
            });
            false
        });
        self.live_watch_entries -= released;
        if emptied == Some(true) {
            self.changes.push(WatchChange::Unwatch(key.clone()));
        }
        self.maybe_purge();
        self.debug_check();
        done
    }

    /// Kafka's expiration reaper: expires every op whose deadline is
    /// `<= now_ms`.
    pub fn advance(&mut self, now_ms: i64) -> Vec<ExpiredOp<Op::Outcome>> {
        let mut buf = std::mem::take(&mut self.expired_buf);
        self.wheel.advance_into(now_ms, &mut buf);
        let mut out = Vec::with_capacity(buf.len());
        for e in buf.drain(..) {
            self.live_watch_entries -= e.payload.watched_keys;
            out.push(CompletedOp {
                op_id: e.handle,
                outcome: e.payload.op.on_expire(),
            });
        }
        self.expired_buf = buf;
        self.maybe_purge();
        self.debug_check();
        out
    }

    /// Removes a parked op without answering (its connection went away).
    pub fn cancel(&mut self, id: OpId) -> Option<Op> {
        let entry = self.wheel.cancel(id)?;
        self.live_watch_entries -= entry.watched_keys;
        self.maybe_purge();
        Some(entry.op)
    }

    /// When the driver's timer should fire next.
    pub fn next_deadline(&self) -> Option<i64> {
        self.wheel.next_deadline()
    }

    /// Keys that started or stopped being watched since the last call.
    pub fn drain_watch_changes(&mut self) -> Vec<WatchChange<Op::Key>> {
        std::mem::take(&mut self.changes)
    }

    /// Parked operations.
    pub fn len(&self) -> usize {
        self.wheel.len()
    }

    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    pub fn is_watching(&self, id: OpId) -> bool {
        self.wheel.contains(id)
    }

    /// Watch-list entries, live + stale (what the purge bounds).
    pub fn watch_entries(&self) -> usize {
        self.watch.entries()
    }

    pub fn watched_keys(&self) -> usize {
        self.watch.keys()
    }

    /// Sweeps stale entries once they reach `purge_interval_requests`
    /// (Kafka's purge in `DelayedOperationPurgatory.tryCompleteElseWatch`).
    fn maybe_purge(&mut self) {
        let stale = self.watch.entries() - self.live_watch_entries;
        if stale < self.config.purge_interval_requests.max(1) {
            return;
        }
        let wheel = &self.wheel;
        let mut unwatched = self.watch.purge(|h| wheel.contains(h));
        unwatched.sort();
        self.changes
            .extend(unwatched.into_iter().map(WatchChange::Unwatch));
    }

    fn debug_check(&self) {
        // Each check walks every watch entry: only small purgatories are
        // checked on every operation, or a debug build's 1,000-partition
        // follower fetches (one entry per partition) spend their time here.
        #[cfg(debug_assertions)]
        if self.wheel.len() < 4_096 && self.watch.entries() < 4_096 {
            self.check_invariants();
        }
    }

    pub fn check_invariants(&self) {
        self.wheel.check_invariants();
        self.watch.check_invariants();
        assert!(
            self.live_watch_entries <= self.watch.entries(),
            "more live than total watch entries"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ErrorCode;
    use crate::purgatory::delayed_fetch::{
        DelayedFetch, FetchCompletion, FetchIsolation, FetchPartitionSpec,
    };
    use crate::purgatory::delayed_produce::{AppendResult, DelayedProduce, ProduceOutcome};
    use crate::purgatory::notes::{apply_notes, AdvanceCoalescer, RemoteWatchRegistry};
    use crate::purgatory::view::{LogOffsetMetadata, PartitionSnapshot, PartitionView};
    use crate::types::{ShardId, TopicPartition};

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn produce(timeout_ms: i64, parts: &[(i32, i64)]) -> DelayedProduce {
        DelayedProduce::new(
            timeout_ms,
            parts
                .iter()
                .map(|&(p, last)| (tp(p), AppendResult::Appended { last_offset: last }))
                .collect(),
        )
    }

    fn park(
        p: &mut Purgatory<DelayedProduce>,
        op: DelayedProduce,
        now: i64,
        view: &PartitionView,
    ) -> OpId {
        let keys = op.keys();
        match p.try_complete_else_watch(op, &keys, now, view) {
            Parked::Watching(id) => id,
            Parked::Completed(o) => panic!("completed unexpectedly: {o:?}"),
        }
    }

    #[test]
    fn produce_satisfied_on_arrival_is_not_parked() {
        let mut p: Purgatory<DelayedProduce> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        view.update(tp(0), PartitionSnapshot::leader_at(10, 0));
        let op = produce(1_000, &[(0, 9)]);
        let keys = op.keys();
        let r = p.try_complete_else_watch(op, &keys, 0, &view);
        assert_eq!(
            r,
            Parked::Completed(ProduceOutcome {
                partitions: vec![(tp(0), ErrorCode(0))],
                expired: false
            })
        );
        assert!(p.is_empty());
        assert_eq!(p.next_deadline(), None);
        assert!(p.drain_watch_changes().is_empty());
    }

    #[test]
    fn produce_completes_on_hw_event_and_is_removed_from_the_wheel() {
        let mut p: Purgatory<DelayedProduce> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        view.update(tp(0), PartitionSnapshot::leader_at(5, 0));
        let id = park(&mut p, produce(1_000, &[(0, 9)]), 0, &view);
        assert_eq!(p.drain_watch_changes(), vec![WatchChange::Watch(tp(0))]);
        assert!(p.check_and_complete(&tp(0), 3, &view).is_empty());
        view.update(tp(0), PartitionSnapshot::leader_at(10, 0));
        let done = p.check_and_complete(&tp(0), 4, &view);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].op_id, id);
        assert!(!done[0].outcome.expired);
        assert!(p.is_empty());
        assert_eq!(p.drain_watch_changes(), vec![WatchChange::Unwatch(tp(0))]);
        assert!(
            p.advance(10_000).is_empty(),
            "completed op must not expire too"
        );
    }

    #[test]
    fn produce_expires_with_request_timed_out_at_its_deadline() {
        let mut p: Purgatory<DelayedProduce> = Purgatory::new(PurgatoryConfig::default(), 100);
        let view = PartitionView::new();
        let id = park(&mut p, produce(30_000, &[(0, 9), (1, 3)]), 100, &view);
        assert!(p.advance(30_099).is_empty());
        let exp = p.advance(30_100);
        assert_eq!(exp.len(), 1);
        assert_eq!(exp[0].op_id, id);
        assert_eq!(
            exp[0].outcome,
            ProduceOutcome {
                partitions: vec![(tp(0), ErrorCode(7)), (tp(1), ErrorCode(7))],
                expired: true
            }
        );
        assert!(p.check_and_complete(&tp(0), 30_100, &view).is_empty());
    }

    /// Event and expiry land on the same tick, in both orders: exactly one
    /// completion either way (Kafka guards this with `completed.compareAndSet`).
    #[test]
    fn racing_event_and_expiry_complete_exactly_once() {
        for event_first in [true, false] {
            let mut p: Purgatory<DelayedProduce> = Purgatory::new(PurgatoryConfig::default(), 0);
            let mut view = PartitionView::new();
            park(&mut p, produce(50, &[(0, 9)]), 0, &view);
            view.update(tp(0), PartitionSnapshot::leader_at(10, 0));
            let (completed, expired) = if event_first {
                let c = p.check_and_complete(&tp(0), 50, &view);
                (c, p.advance(50))
            } else {
                let e = p.advance(50);
                (p.check_and_complete(&tp(0), 50, &view), e)
            };
            assert_eq!(
                completed.len() + expired.len(),
                1,
                "event_first={event_first}"
            );
            if event_first {
                assert_eq!(completed[0].outcome.partitions, vec![(tp(0), ErrorCode(0))]);
            } else {
                assert_eq!(expired[0].outcome.partitions, vec![(tp(0), ErrorCode(7))]);
            }
            assert!(p.is_empty());
        }
    }

    #[test]
    fn op_watching_two_keys_completes_once_and_its_other_entry_is_purged() {
        let cfg = PurgatoryConfig {
            purge_interval_requests: 2,
        };
        let mut p: Purgatory<DelayedProduce> = Purgatory::new(cfg, 0);
        let mut view = PartitionView::new();
        for i in 0..2 {
            park(&mut p, produce(1_000, &[(0, i), (1, i)]), 0, &view);
        }
        assert_eq!(p.watch_entries(), 4);
        view.update(tp(0), PartitionSnapshot::leader_at(100, 0));
        view.update(tp(1), PartitionSnapshot::leader_at(100, 0));
        assert_eq!(p.check_and_complete(&tp(0), 1, &view).len(), 2);
        // Their tp1 entries were stale (2 >= purge interval) and got swept.
        assert_eq!(p.watch_entries(), 0);
        assert!(p.check_and_complete(&tp(1), 1, &view).is_empty());
        let mut changes = p.drain_watch_changes();
        changes.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            changes,
            vec![
                WatchChange::Unwatch(tp(0)),
                WatchChange::Unwatch(tp(1)),
                WatchChange::Watch(tp(0)),
                WatchChange::Watch(tp(1))
            ]
        );
    }

    #[test]
    fn cancelled_op_neither_completes_nor_expires() {
        let mut p: Purgatory<DelayedProduce> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        let id = park(&mut p, produce(10, &[(0, 9)]), 0, &view);
        assert!(p.cancel(id).is_some());
        assert!(p.cancel(id).is_none());
        view.update(tp(0), PartitionSnapshot::leader_at(10, 0));
        assert!(p.check_and_complete(&tp(0), 5, &view).is_empty());
        assert!(p.advance(100).is_empty());
    }

    /// A produce spanning partitions owned by shards 1 and 2, parked on
    /// shard 0: it completes only once notes from both owners have arrived
    /// through their coalescers.
    #[test]
    fn produce_across_owner_shards_completes_after_notes_from_all_owners() {
        let watcher = ShardId(0);
        let mut purgatory: Purgatory<DelayedProduce> =
            Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        // Owners: tp0 on shard 1, tp1 on shard 2.
        let mut owners = [
            (RemoteWatchRegistry::new(), AdvanceCoalescer::new()),
            (RemoteWatchRegistry::new(), AdvanceCoalescer::new()),
        ];
        park(&mut purgatory, produce(1_000, &[(0, 9), (1, 19)]), 0, &view);
        for change in purgatory.drain_watch_changes() {
            let WatchChange::Watch(t) = change else {
                panic!("unexpected {change:?}")
            };
            let owner = &mut owners[t.partition as usize];
            assert!(owner.0.on_watch(watcher, &t));
            // First watch: the owner sends its current state right away.
            owner
                .1
                .record(watcher, &t, PartitionSnapshot::leader_at(0, 0));
        }
        let deliver = |owner: &mut (RemoteWatchRegistry, AdvanceCoalescer),
                       view: &mut PartitionView,
                       p: &mut Purgatory<DelayedProduce>,
                       now| {
            let mut done = Vec::new();
            for msg in owner.1.drain() {
                assert_eq!(msg.to, watcher);
                for t in apply_notes(view, msg) {
                    done.extend(p.check_and_complete(&t, now, view));
                }
            }
            done
        };
        assert!(deliver(&mut owners[0], &mut view, &mut purgatory, 1).is_empty());
        assert!(deliver(&mut owners[1], &mut view, &mut purgatory, 1).is_empty());
        // Shard 1's HW passes 10 several times before a flush: one note.
        for hw in [5, 8, 10, 12] {
            owners[0].1.on_partition_advanced(
                &owners[0].0,
                &tp(0),
                PartitionSnapshot::leader_at(hw, 0),
            );
        }
        assert!(
            deliver(&mut owners[0], &mut view, &mut purgatory, 2).is_empty(),
            "tp1 still below 20"
        );
        owners[1].1.on_partition_advanced(
            &owners[1].0,
            &tp(1),
            PartitionSnapshot::leader_at(20, 0),
        );
        let done = deliver(&mut owners[1], &mut view, &mut purgatory, 3);
        assert_eq!(done.len(), 1);
        assert_eq!(
            done[0].outcome.partitions,
            vec![(tp(0), ErrorCode(0)), (tp(1), ErrorCode(0))]
        );
        assert!(purgatory.advance(5_000).is_empty());
    }

    fn fetch_spec(p: i32, offset: i64, position: i64) -> FetchPartitionSpec {
        FetchPartitionSpec {
            tp: tp(p),
            fetch_offset: LogOffsetMetadata::new(offset, 0, position),
            partition_max_bytes: 1 << 20,
            current_leader_epoch: None,
        }
    }

    #[test]
    fn fetch_parks_until_min_bytes_then_completes_or_expires() {
        let mut p: Purgatory<DelayedFetch> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        view.update(tp(0), PartitionSnapshot::leader_at(10, 1_000));
        let mk = |min| {
            DelayedFetch::new(
                500,
                min,
                1 << 20,
                FetchIsolation::HighWatermark,
                vec![fetch_spec(0, 10, 1_000)],
            )
        };
        let small = mk(100);
        let big = mk(10_000);
        let (ks, kb) = (small.keys(), big.keys());
        assert!(matches!(
            p.try_complete_else_watch(small, &ks, 0, &view),
            Parked::Watching(_)
        ));
        assert!(matches!(
            p.try_complete_else_watch(big, &kb, 0, &view),
            Parked::Watching(_)
        ));
        view.update(tp(0), PartitionSnapshot::leader_at(11, 1_200));
        let done = p.check_and_complete(&tp(0), 10, &view);
        assert_eq!(done.len(), 1);
        assert_eq!(
            done[0].outcome.reason,
            FetchCompletion::MinBytes {
                accumulated_bytes: 200
            }
        );
        let expired = p.advance(500);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].outcome.reason, FetchCompletion::Expired);
    }

    #[test]
    fn fetch_answers_early_when_leadership_moves() {
        let mut p: Purgatory<DelayedFetch> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        view.update(tp(0), PartitionSnapshot::leader_at(10, 1_000));
        let op = DelayedFetch::new(
            500,
            1,
            1 << 20,
            FetchIsolation::LogEnd,
            vec![fetch_spec(0, 10, 1_000)],
        );
        let keys = op.keys();
        assert!(matches!(
            p.try_complete_else_watch(op, &keys, 0, &view),
            Parked::Watching(_)
        ));
        let mut s = PartitionSnapshot::leader_at(10, 1_000);
        s.role = crate::purgatory::view::PartitionRole::Follower;
        view.update(tp(0), s);
        let done = p.check_and_complete(&tp(0), 1, &view);
        assert_eq!(
            done[0].outcome.reason,
            FetchCompletion::PartitionError {
                partition_index: 0,
                error_code: ErrorCode(6)
            }
        );
    }

    /// A fetch over partitions owned by shards 1 and 2, parked on shard 0:
    /// `min_bytes` is reached only by the sum of both owners' notes.
    #[test]
    fn fetch_across_owner_shards_needs_bytes_noted_by_both_owners() {
        let watcher = ShardId(0);
        let mut p: Purgatory<DelayedFetch> = Purgatory::new(PurgatoryConfig::default(), 0);
        let mut view = PartitionView::new();
        let op = DelayedFetch::new(
            500,
            1_000,
            1 << 20,
            FetchIsolation::HighWatermark,
            vec![fetch_spec(0, 10, 0), fetch_spec(1, 10, 0)],
        );
        let keys = op.keys();
        assert!(matches!(
            p.try_complete_else_watch(op, &keys, 0, &view),
            Parked::Watching(_)
        ));
        let mut registry = [RemoteWatchRegistry::new(), RemoteWatchRegistry::new()];
        for change in p.drain_watch_changes() {
            let WatchChange::Watch(t) = change else {
                panic!("unexpected {change:?}")
            };
            registry[t.partition as usize].on_watch(watcher, &t);
        }
        let mut coalescers = [AdvanceCoalescer::new(), AdvanceCoalescer::new()];
        coalescers[0].on_partition_advanced(
            &registry[0],
            &tp(0),
            PartitionSnapshot::leader_at(15, 600),
        );
        let mut completed = Vec::new();
        for msg in coalescers[0].drain() {
            for t in apply_notes(&mut view, msg) {
                completed.extend(p.check_and_complete(&t, 1, &view));
            }
        }
        assert!(completed.is_empty(), "600 bytes from shard 1 alone < 1 000");
        coalescers[1].on_partition_advanced(
            &registry[1],
            &tp(1),
            PartitionSnapshot::leader_at(14, 400),
        );
        for msg in coalescers[1].drain() {
            for t in apply_notes(&mut view, msg) {
                completed.extend(p.check_and_complete(&t, 2, &view));
            }
        }
        assert_eq!(completed.len(), 1);
        assert_eq!(
            completed[0].outcome.reason,
            FetchCompletion::MinBytes {
                accumulated_bytes: 1_000
            }
        );
    }

    #[derive(Debug, Clone)]
    enum Step {
        Park {
            parts: Vec<(i32, i64)>,
            timeout_ms: i64,
        },
        Hw {
            partition: i32,
            delta: i64,
        },
        Tick(i64),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            2 => (prop::collection::btree_map(0i32..4, 0i64..30, 1..4), 0i64..60)
                .prop_map(|(m, timeout_ms)| Step::Park { parts: m.into_iter().collect(), timeout_ms }),
            2 => (0i32..4, 0i64..8).prop_map(|(partition, delta)| Step::Hw { partition, delta }),
            1 => (0i64..25).prop_map(Step::Tick),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Every parked op completes exactly once: by event only when all its
        /// partitions reached their offsets, by expiry only at the first
        /// advance past its deadline and only if some partition was short.
        #[test]
        fn every_parked_op_completes_exactly_once(steps in proptest::collection::vec(step(), 1..120)) {
            use std::collections::HashMap;
            let cfg = PurgatoryConfig { purge_interval_requests: 3 };
            let mut p: Purgatory<DelayedProduce> = Purgatory::new(cfg, 0);
            let mut view = PartitionView::new();
            let mut hw = [0i64; 4];
            for (i, h) in hw.iter().enumerate() {
                view.update(tp(i as i32), PartitionSnapshot::leader_at(*h, 0));
            }
            let (mut now, mut last_advance, mut advances) = (0i64, -1i64, 0usize);
            // op id -> (deadline, required offsets, advances done before parking)
            type Model = HashMap<OpId, (i64, Vec<(i32, i64)>, usize)>;
            let mut parked: Model = HashMap::new();
            let mut finished: HashMap<OpId, bool> = HashMap::new();
            let check_expired = |exp: Vec<ExpiredOp<ProduceOutcome>>, parked: &Model, finished: &mut HashMap<OpId, bool>, (now, last, advances): (i64, i64, usize), hw: &[i64; 4]| {
                for e in exp {
                    let (deadline, req, parked_after) = &parked[&e.op_id];
                    assert!(*deadline <= now, "expired at {now} before deadline {deadline}");
                    // Not late: an advance after parking and past the deadline would have expired it.
                    assert!(*parked_after == advances || *deadline > last, "expired late at {now}, deadline {deadline}, previous advance {last}");
                    assert!(e.outcome.expired);
                    assert!(req.iter().any(|&(q, last_offset)| hw[q as usize] < last_offset + 1));
                    assert!(finished.insert(e.op_id, false).is_none(), "op finished twice");
                }
            };
            for s in steps {
                match s {
                    Step::Park { parts, timeout_ms } => {
                        let op = produce(timeout_ms, &parts);
                        let keys = op.keys();
                        if let Parked::Watching(id) = p.try_complete_else_watch(op, &keys, now, &view) {
                            parked.insert(id, (now + timeout_ms, parts, advances));
                        }
                    }
                    Step::Hw { partition, delta } => {
                        hw[partition as usize] += delta;
                        view.update(tp(partition), PartitionSnapshot::leader_at(hw[partition as usize], 0));
                        for c in p.check_and_complete(&tp(partition), now, &view) {
                            let (_, req, _) = &parked[&c.op_id];
                            proptest::prop_assert!(req.iter().all(|&(q, last_offset)| hw[q as usize] > last_offset));
                            proptest::prop_assert!(c.outcome.partitions.iter().all(|(_, code)| *code == ErrorCode::NONE));
                            proptest::prop_assert!(finished.insert(c.op_id, true).is_none(), "op finished twice");
                        }
                    }
                    Step::Tick(dt) => {
                        now += dt;
                        let exp = p.advance(now);
                        check_expired(exp, &parked, &mut finished, (now, last_advance, advances), &hw);
                        last_advance = now;
                        advances += 1;
                    }
                }
                p.check_invariants();
            }
            now += 1_000;
            let exp = p.advance(now);
            check_expired(exp, &parked, &mut finished, (now, last_advance, advances), &hw);
            proptest::prop_assert_eq!(finished.len(), parked.len());
            proptest::prop_assert!(p.is_empty());
        }
    }
}
