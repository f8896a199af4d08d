//! `[pure]` Watch lists: for each key (a partition, in practice) the delayed
//! operations to re-check when that key changes (Kafka's `WatcherList` /
//! `Watchers` inside `DelayedOperationPurgatory`).
//!
//! An operation watching several keys sits in several lists. When it
//! completes through one key (or expires) its entries in the other lists go
//! stale. We purge them two ways, both as Kafka does:
//! - lazily: a list being checked drops the stale handles it meets;
//! - periodically: once the number of stale entries reaches
//!   `purge_interval_requests` (Kafka's `producer.purgatory.purge.interval.requests`
//!   / `fetch.purgatory.purge.interval.requests`, default 1000), the owner
//!   sweeps every list ([`WatchList::purge`]).
//!
//! Eager removal would need a back-pointer per (op, key) and a search per
//! completion; with ops touching a handful of partitions and checks running
//! on every HW move, lazy removal amortises to O(1) per entry.
//!
//! Lists are ordered by insertion, so checks visit ops first-come first-served.

use std::collections::HashMap;
use std::hash::Hash;

use crate::purgatory::timing_wheel::TimerHandle;

/// Kafka's default for `*.purgatory.purge.interval.requests`.
pub const DEFAULT_PURGE_INTERVAL_REQUESTS: usize = 1000;

#[derive(Debug)]
pub struct WatchList<K> {
    lists: HashMap<K, Vec<TimerHandle>>,
    /// Total entries across all lists (live + stale).
    entries: usize,
}

impl<K: Hash + Eq + Clone> Default for WatchList<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Clone> WatchList<K> {
    pub fn new() -> Self {
        Self {
            lists: HashMap::new(),
            entries: 0,
        }
    }

    /// Adds `handle` to `key`'s list. Returns true if `key` had no list
    /// before (the caller may need to start watching it remotely).
    pub fn watch(&mut self, key: &K, handle: TimerHandle) -> bool {
        self.entries += 1;
        match self.lists.get_mut(key) {
            Some(list) => {
                list.push(handle);
                false
            }
            None => {
                self.lists.insert(key.clone(), vec![handle]);
                true
            }
        }
    }

    /// Takes `key`'s list out for checking; the caller gives back what stays
    /// watched with [`restore`](Self::restore). Taking avoids borrowing the
    /// lists while the caller mutates the ops they point to.
    pub fn take(&mut self, key: &K) -> Vec<TimerHandle> {
        match self.lists.remove(key) {
            Some(list) => {
                self.entries -= list.len();
                list
            }
            None => Vec::new(),
        }
    }

    /// Puts back the still-watching handles of `key` (in their order, ahead
    /// of any added meanwhile). Returns true if `key` is no longer watched.
    pub fn restore(&mut self, key: &K, mut kept: Vec<TimerHandle>) -> bool {
        if let Some(added) = self.lists.remove(key) {
            self.entries -= added.len();
            kept.extend(added);
        }
        if kept.is_empty() {
            return true;
        }
        self.entries += kept.len();
        self.lists.insert(key.clone(), kept);
        false
    }

    /// Drops every handle for which `is_live` is false and every list left
    /// empty; returns the keys no longer watched (sorted by the caller if
    /// order matters).
    pub fn purge(&mut self, mut is_live: impl FnMut(TimerHandle) -> bool) -> Vec<K> {
        let mut unwatched = Vec::new();
        let mut entries = 0;
        self.lists.retain(|key, list| {
            list.retain(|h| is_live(*h));
            entries += list.len();
            if list.is_empty() {
                unwatched.push(key.clone());
                false
            } else {
                true
            }
        });
        self.entries = entries;
        unwatched
    }

    /// Entries across all lists, live or stale.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Number of keys with a list.
    pub fn keys(&self) -> usize {
        self.lists.len()
    }

    pub fn is_watched(&self, key: &K) -> bool {
        self.lists.contains_key(key)
    }

    pub fn watchers(&self, key: &K) -> &[TimerHandle] {
        self.lists.get(key).map_or(&[], |l| l.as_slice())
    }

    pub fn check_invariants(&self) {
        let total: usize = self.lists.values().map(Vec::len).sum();
        assert_eq!(total, self.entries, "entry count drifted");
        assert!(
            self.lists.values().all(|l| !l.is_empty()),
            "empty list kept"
        );
    }
}
