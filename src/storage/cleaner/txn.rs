//! `[pure]` What the cleaner knows of transactions as it reads a log in
//! offset order (Kafka 3.9 `LogCleaner.scala`, class
//! `CleanedTransactionMetadata`: `onBatchRead`, `onControlBatchRead`,
//! `consumeAbortedTxnsUpTo`).
//!
//! - Data of an aborted transaction is neither mapped nor kept: a
//!   committed value of the same key must not be shadowed by an aborted
//!   one, and read_committed consumers skip that data anyway. An aborted
//!   transaction (from the aborted-transaction index) becomes active once
//!   a batch reaches its first offset; while active, its producer's
//!   transactional data batches are aborted data; its ABORT marker ends it.
//! - A marker may go once no data of its transaction is left
//!   (`canDiscardBatch`): a COMMIT when this clean read no data batch of
//!   its transaction (`ongoingCommittedTxns`), an ABORT when this clean
//!   observed none (`lastObservedBatchOffset`), an emptied control batch
//!   always. The filter then gives it a delete horizon, and a later clean
//!   past the horizon drops it (`checkBatchRetention`).
//! - An ABORT marker kept because its data was observed keeps its
//!   transaction in the cleaned segment's aborted-transaction index
//!   ([`CleanedTxnMetadata::take_retained_aborts`]); every other aborted
//!   transaction leaves the index with the clean. An index entry without
//!   its marker would make a read_committed consumer skip the producer's
//!   later committed batches, waiting for an ABORT that is gone.
//!
//! One tracker spans a whole clean, every group in offset order from the
//! log start (Kafka's `doClean` passes one `CleanedTransactionMetadata`
//! to every `cleanSegments`): a transaction may start in one group and
//! end in the next.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::storage::txn_index::AbortedTxn;

/// A batch's kind as the tracker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchKind {
    Data {
        transactional: bool,
    },
    Commit,
    Abort,
    /// A control batch without records (a cleaner emptied it).
    EmptyControl,
    /// A control record of a type this broker does not know.
    OtherControl,
}

/// One batch as the tracker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFacts {
    pub last_offset: i64,
    pub producer_id: i64,
    pub kind: BatchKind,
}

/// An aborted transaction whose first offset was reached (Kafka's
/// `AbortedTransactionMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct OngoingAbort {
    txn: AbortedTxn,
    /// Last offset of its latest data batch read in this clean.
    last_observed_batch_offset: Option<i64>,
}

/// Kafka's `CleanedTransactionMetadata`.
#[derive(Debug, Clone, Default)]
pub struct CleanedTxnMetadata {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Producers whose aborted transaction is being read.
    ongoing_aborted: BTreeMap<i64, OngoingAbort>,
    /// Producers with a transactional data batch read and no marker yet.
    ongoing_committed: BTreeSet<i64>,
    /// Aborted transactions whose ABORT marker stays because its data was
    /// observed: the cleaned segment's index entries, in marker order.
    retained_aborts: Vec<AbortedTxn>,
    /// Last offset of the latest batch read (`check_invariants`).
    last_read: Option<i64>,
}

impl CleanedTxnMetadata {
    /// The tracker for a read starting at `from`: every aborted
    /// transaction whose marker lies at or past it.
    pub fn new(aborted: &[AbortedTxn], from: i64) -> Self {
        let mut pending: Vec<AbortedTxn> = aborted
            .iter()
            .filter(|a| a.last_offset >= from)
            .copied()
            .collect();
        pending.sort_by_key(|a| (a.first_offset, a.last_offset, a.producer_id));
        Self {
            pending: pending.into(),
            ..Self::default()
        }
    }

    /// Kafka's `consumeAbortedTxnsUpTo`: transactions starting at or
    /// before `offset` become active (a producer has one at a time).
    fn consume_aborted_up_to(&mut self, offset: i64) {
        while let Some(txn) = self.pending.front().copied() {
            if txn.first_offset > offset {
                break;
            }
            self.pending.pop_front();
            self.ongoing_aborted
                .entry(txn.producer_id)
                .or_insert(OngoingAbort {
                    txn,
                    last_observed_batch_offset: None,
                });
        }
    }

    /// Kafka's `onBatchRead`: a data batch was read; whether it is data of
    /// an aborted transaction (then it is dropped).
    pub fn on_batch_read(&mut self, b: &BatchFacts) -> bool {
        self.consume_aborted_up_to(b.last_offset);
        self.last_read = Some(b.last_offset);
        let aborted = match b.kind {
            BatchKind::Data {
                transactional: true,
            } => match self.ongoing_aborted.get_mut(&b.producer_id) {
                Some(ongoing) => {
                    ongoing.last_observed_batch_offset = Some(b.last_offset);
                    true
                }
                None => {
                    self.ongoing_committed.insert(b.producer_id);
                    false
                }
            },
            _ => false,
        };
        self.check_invariants();
        aborted
    }

    /// Kafka's `onControlBatchRead`: a control batch was read; whether it
    /// may be discarded (no data of its transaction is left).
    pub fn on_control_batch_read(&mut self, b: &BatchFacts) -> bool {
        self.consume_aborted_up_to(b.last_offset);
        self.last_read = Some(b.last_offset);
        let discardable = match b.kind {
            BatchKind::Abort => match self.ongoing_aborted.remove(&b.producer_id) {
                // The marker stays until every batch of its transaction is
                // gone, and so does its index entry.
                Some(OngoingAbort {
                    txn,
                    last_observed_batch_offset: Some(_),
                }) => {
                    self.retained_aborts.push(txn);
                    false
                }
                _ => true,
            },
            BatchKind::Commit => !self.ongoing_committed.remove(&b.producer_id),
            BatchKind::EmptyControl => true,
            BatchKind::OtherControl | BatchKind::Data { .. } => false,
        };
        self.check_invariants();
        discardable
    }

    /// The aborted transactions whose marker was kept since the last call:
    /// the index entries of the cleaned segment just written (Kafka's
    /// `cleanedIndex`, one per `cleanSegments`).
    pub fn take_retained_aborts(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.retained_aborts)
    }

    pub fn check_invariants(&self) {
        if cfg!(debug_assertions) {
            // Active transactions started at or before the last batch read;
            // pending ones start after it.
            if let Some(at) = self.last_read {
                debug_assert!(self
                    .ongoing_aborted
                    .values()
                    .all(|o| o.txn.first_offset <= at));
                debug_assert!(self.pending.front().is_none_or(|t| t.first_offset > at));
            }
            debug_assert!(self
                .retained_aborts
                .windows(2)
                .all(|w| w[0].last_offset < w[1].last_offset));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(at: i64, pid: i64) -> BatchFacts {
        BatchFacts {
            last_offset: at,
            producer_id: pid,
            kind: BatchKind::Data {
                transactional: true,
            },
        }
    }

    fn plain(at: i64) -> BatchFacts {
        BatchFacts {
            last_offset: at,
            producer_id: -1,
            kind: BatchKind::Data {
                transactional: false,
            },
        }
    }

    fn control(at: i64, pid: i64, kind: BatchKind) -> BatchFacts {
        BatchFacts {
            last_offset: at,
            producer_id: pid,
            kind,
        }
    }

    fn commit(at: i64, pid: i64) -> BatchFacts {
        control(at, pid, BatchKind::Commit)
    }

    fn abort(at: i64, pid: i64) -> BatchFacts {
        control(at, pid, BatchKind::Abort)
    }

    fn aborted_txn(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: first,
        }
    }

    /// Feed `rows` (batch, expected answer) to `t` in order.
    fn feed(t: &mut CleanedTxnMetadata, rows: &[(BatchFacts, bool)]) {
        for (b, want) in rows {
            let got = match b.kind {
                BatchKind::Data { .. } => t.on_batch_read(b),
                _ => t.on_control_batch_read(b),
            };
            assert_eq!(got, *want, "{b:?}");
        }
    }

    #[test]
    fn data_between_an_aborted_transactions_start_and_its_marker_is_aborted() {
        // Producer 1 aborts [0, 3] (marker 3); producer 2 commits [1, 4];
        // producer 1 then commits [5, 6]. Answers: aborted data for data
        // batches, discardable for markers.
        let mut t = CleanedTxnMetadata::new(&[aborted_txn(1, 0, 3)], 0);
        feed(
            &mut t,
            &[
                (data(0, 1), true),
                (data(1, 2), false),
                (plain(2), false),
                (abort(3, 1), false),
                (commit(4, 2), false),
                (data(5, 1), false),
                (commit(6, 1), false),
            ],
        );
        assert_eq!(t.take_retained_aborts(), vec![aborted_txn(1, 0, 3)]);
    }

    #[test]
    fn a_read_starting_past_a_marker_ignores_that_transaction() {
        let aborted = [aborted_txn(1, 0, 3)];
        let mut t = CleanedTxnMetadata::new(&aborted, 4);
        assert!(!t.on_batch_read(&data(5, 1)));
        // A read from inside the transaction still sees it.
        let mut t = CleanedTxnMetadata::new(&aborted, 2);
        assert!(t.on_batch_read(&data(2, 1)));
    }

    #[test]
    fn a_commit_marker_may_go_once_no_data_of_its_transaction_is_read() {
        // Producer 7's first transaction (data 0) is still there; its
        // second (data compacted away before this clean) is not.
        let mut t = CleanedTxnMetadata::new(&[], 0);
        feed(
            &mut t,
            &[
                (data(0, 7), false),
                (commit(1, 7), false),
                (commit(5, 7), true),
            ],
        );
        assert!(t.take_retained_aborts().is_empty());
    }

    #[test]
    fn an_abort_marker_stays_with_its_index_entry_only_while_its_data_is_read() {
        // The clean that drops the aborted data still reads it: marker and
        // entry stay. The next clean finds no data: both may go.
        let txn = aborted_txn(3, 0, 2);
        let mut first = CleanedTxnMetadata::new(&[txn], 0);
        feed(
            &mut first,
            &[(data(0, 3), true), (data(1, 3), true), (abort(2, 3), false)],
        );
        assert_eq!(first.take_retained_aborts(), vec![txn]);
        assert!(first.take_retained_aborts().is_empty(), "taken once");
        let mut next = CleanedTxnMetadata::new(&[txn], 0);
        feed(&mut next, &[(abort(2, 3), true)]);
        assert!(next.take_retained_aborts().is_empty());
        // An abort the index no longer lists (its entry left with an
        // earlier clean) may go as well.
        let mut later = CleanedTxnMetadata::new(&[], 0);
        feed(&mut later, &[(abort(2, 3), true)]);
    }

    #[test]
    fn an_emptied_control_batch_may_go_and_an_unknown_one_stays() {
        let mut t = CleanedTxnMetadata::new(&[], 0);
        feed(
            &mut t,
            &[
                (control(0, 4, BatchKind::EmptyControl), true),
                (control(1, 4, BatchKind::OtherControl), false),
            ],
        );
    }

    #[test]
    fn non_transactional_data_touches_no_transaction() {
        // Producer 5 is idempotent only: its batches never make a marker
        // stay, and are never aborted data.
        let mut t = CleanedTxnMetadata::new(&[aborted_txn(5, 0, 9)], 0);
        let idempotent = BatchFacts {
            kind: BatchKind::Data {
                transactional: false,
            },
            ..data(1, 5)
        };
        feed(&mut t, &[(idempotent, false), (abort(9, 5), true)]);
    }

    #[test]
    fn a_transaction_spanning_two_groups_is_tracked_by_one_tracker() {
        // Group 1 = offsets [0, 10), group 2 = [10, 20). Producer 1 aborts
        // [2, 12] (data 2 in group 1, marker 12 in group 2); producer 2
        // commits [4, 14] (data 4 in group 1, marker 14 in group 2).
        let txn = aborted_txn(1, 2, 12);
        let mut t = CleanedTxnMetadata::new(&[txn], 0);
        feed(&mut t, &[(data(2, 1), true), (data(4, 2), false)]);
        assert!(t.take_retained_aborts().is_empty(), "group 1: no marker");
        feed(&mut t, &[(abort(12, 1), false), (commit(14, 2), false)]);
        assert_eq!(t.take_retained_aborts(), vec![txn], "group 2's index");
        // A tracker per group (the old shape) would have let both markers
        // go in group 2 and dropped the entry: it never saw their data.
        let mut per_group = CleanedTxnMetadata::new(&[txn], 10);
        feed(
            &mut per_group,
            &[(abort(12, 1), true), (commit(14, 2), true)],
        );
    }

    #[test]
    fn one_producers_successive_aborts_each_end_at_their_marker() {
        // Producer 1 aborts [0, 1] with data, commits [2, 3], then aborts
        // [4, 6] whose data an earlier clean removed.
        let (a, b) = (aborted_txn(1, 0, 1), aborted_txn(1, 4, 6));
        let mut t = CleanedTxnMetadata::new(&[b, a], 0);
        feed(
            &mut t,
            &[
                (data(0, 1), true),
                (abort(1, 1), false),
                (data(2, 1), false),
                (commit(3, 1), false),
                (abort(6, 1), true),
            ],
        );
        assert_eq!(t.take_retained_aborts(), vec![a]);
    }
}
