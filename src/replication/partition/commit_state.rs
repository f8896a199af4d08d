//! `[drv]` The state a partition's group commit keeps (`group_commit`
//! runs it): the shard's counters and one partition's round.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::io::local_sync::Trigger;

/// A shard's group-commit counters: (durable appends acknowledged,
/// fdatasync rounds); their ratio is the batching factor. Shared by the
/// shard's partitions, read at shutdown.
#[derive(Debug, Clone, Default)]
pub struct DurableCounts(Rc<Cell<(u64, u64)>>);

impl DurableCounts {
    pub fn get(&self) -> (u64, u64) {
        self.0.get()
    }

    pub(super) fn add(&self, appends: u64, syncs: u64) {
        let (a, s) = self.0.get();
        self.0.set((a + appends, s + syncs));
    }
}

/// Group-commit state of a leader's appends: appends buffer under the log
/// lock and then wait for one write-out (and, when durable, one
/// fdatasync) that covers them all, instead of holding the lock through
/// a write each (see `group_commit`).
#[derive(Default)]
pub(super) struct GroupCommit {
    /// Every offset below this is in the kernel (written out; fdatasynced
    /// too when durable).
    pub(super) committed_end: Cell<i64>,
    /// A round's leader is writing out now.
    pub(super) running: Cell<bool>,
    /// The last round failed: the log is poisoned (no retry of an fsync).
    pub(super) failed: Cell<bool>,
    /// Fired when the current round ends; replaced for the next one.
    pub(super) round: RefCell<Rc<Trigger>>,
    pub(super) counts: DurableCounts,
}
