//! `[pure]` Which batches the cleaner reads belong to aborted
//! transactions (Kafka's `CleanedTransactionMetadata`: `onBatchRead`,
//! `onControlBatchRead`, `consumeAbortedTxnsUpTo`). The cleaner neither
//! maps nor keeps the records of an aborted transaction: a committed
//! value of the same key must not be shadowed by an aborted one, and
//! read_committed consumers skip that data anyway.
//!
//! Batches come in offset order. An aborted transaction (from the
//! aborted-transaction index) becomes active once a batch reaches its
//! first offset; while active, its producer's transactional data batches
//! are aborted data; its ABORT marker ends it.

use std::collections::{BTreeSet, VecDeque};

use crate::storage::txn_index::AbortedTxn;

/// One batch as the tracker sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchFacts {
    pub base_offset: i64,
    pub last_offset: i64,
    pub producer_id: i64,
    pub is_transactional: bool,
    /// A control batch's marker: `Some(commit)`; `None` for data batches.
    pub marker: Option<bool>,
}

#[derive(Debug, Clone, Default)]
pub struct AbortedTracker {
    /// Aborted transactions not reached yet: (first offset, producer id).
    pending: VecDeque<(i64, i64)>,
    /// Producers whose aborted transaction is being read.
    ongoing: BTreeSet<i64>,
}

impl AbortedTracker {
    /// The tracker for a read starting at `from`: every aborted
    /// transaction whose marker lies at or past it.
    pub fn new(aborted: &[AbortedTxn], from: i64) -> Self {
        let mut pending: Vec<(i64, i64)> = aborted
            .iter()
            .filter(|a| a.last_offset >= from)
            .map(|a| (a.first_offset, a.producer_id))
            .collect();
        pending.sort_unstable();
        Self {
            pending: pending.into(),
            ongoing: BTreeSet::new(),
        }
    }

    /// The next batch read: whether it is data of an aborted transaction.
    pub fn is_aborted_data(&mut self, b: &BatchFacts) -> bool {
        while let Some(&(first, pid)) = self.pending.front() {
            if first > b.last_offset {
                break;
            }
            self.ongoing.insert(pid);
            self.pending.pop_front();
        }
        match b.marker {
            Some(false) => {
                self.ongoing.remove(&b.producer_id);
                false
            }
            Some(true) => false,
            None => b.is_transactional && self.ongoing.contains(&b.producer_id),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(base: i64, pid: i64) -> BatchFacts {
        BatchFacts {
            base_offset: base,
            last_offset: base,
            producer_id: pid,
            is_transactional: true,
            marker: None,
        }
    }

    fn marker(at: i64, pid: i64, commit: bool) -> BatchFacts {
        BatchFacts {
            marker: Some(commit),
            ..data(at, pid)
        }
    }

    #[test]
    fn data_between_an_aborted_transactions_start_and_its_marker_is_aborted() {
        // Producer 1 aborts [0, 3] (marker 3); producer 2 commits [1, 4];
        // producer 1 then commits [5, 6].
        let aborted = [AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 3,
            last_stable_offset: 1,
        }];
        let mut t = AbortedTracker::new(&aborted, 0);
        let plain = BatchFacts {
            is_transactional: false,
            producer_id: -1,
            ..data(2, -1)
        };
        let rows = [
            (data(0, 1), true),
            (data(1, 2), false),
            (plain, false),
            (marker(3, 1, false), false),
            (marker(4, 2, true), false),
            (data(5, 1), false),
            (marker(6, 1, true), false),
        ];
        for (b, want) in rows {
            assert_eq!(t.is_aborted_data(&b), want, "{b:?}");
        }
    }

    #[test]
    fn a_read_starting_past_a_marker_ignores_that_transaction() {
        let aborted = [AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 3,
            last_stable_offset: 4,
        }];
        let mut t = AbortedTracker::new(&aborted, 4);
        assert!(!t.is_aborted_data(&data(5, 1)));
        // A read from inside the transaction still sees it.
        let mut t = AbortedTracker::new(&aborted, 2);
        assert!(t.is_aborted_data(&data(2, 1)));
    }
}
