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

    /// Visits `key`'s list in order, keeping the handles for which `keep`
    /// returns true (drop completed and stale ones). Returns `None` if `key`
    /// was not watched, `Some(true)` if its list is now empty and removed.
    pub fn retain(&mut self, key: &K, keep: impl FnMut(&TimerHandle) -> bool) -> Option<bool> {
        let list = self.lists.get_mut(key)?;
        let before = list.len();
        list.retain(keep);
        self.entries -= before - list.len();
        if list.is_empty() {
            self.lists.remove(key);
            return Some(true);
        }
        Some(false)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u64) -> TimerHandle {
        TimerHandle(i)
    }

    #[test]
    fn watch_reports_first_watcher_and_retain_reports_emptied_key() {
        let mut w: WatchList<&str> = WatchList::new();
        assert!(w.watch(&"a", h(1)));
        assert!(!w.watch(&"a", h(2)));
        assert!(w.watch(&"b", h(1)));
        assert_eq!(w.entries(), 3);
        assert_eq!(w.retain(&"zzz", |_| true), None);
        let mut seen = Vec::new();
        assert_eq!(
            w.retain(&"a", |x| {
                seen.push(*x);
                *x == h(2)
            }),
            Some(false)
        );
        assert_eq!(seen, vec![h(1), h(2)], "visited in watch order");
        assert_eq!(w.watchers(&"a"), &[h(2)]);
        assert_eq!(w.retain(&"a", |_| false), Some(true));
        assert!(!w.is_watched(&"a"));
        assert_eq!(w.entries(), 1);
        w.check_invariants();
    }

    #[test]
    fn purge_drops_dead_handles_and_empty_keys() {
        let mut w: WatchList<u32> = WatchList::new();
        for k in 0..4u32 {
            w.watch(&k, h(k as u64));
            w.watch(&k, h(100));
        }
        let mut gone = w.purge(|x| x.0 == 1 || x.0 == 3);
        gone.sort();
        assert_eq!(gone, vec![0, 2]);
        assert_eq!(w.entries(), 2);
        assert_eq!(w.keys(), 2);
        w.check_invariants();
    }
}
