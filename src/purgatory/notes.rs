//! `[pure]` Cross-shard "partition advanced" notes (ARCHITECTURE.md §5).
//!
//! A delayed operation lives on its connection's shard, but the partitions it
//! waits on may be owned by other shards. The owner therefore tells every
//! shard that watches a partition when its LEO/HW/LSO (or role/ISR) moves.
//!
//! - [`RemoteWatchRegistry`] (on the owner): which remote shards watch which
//!   partitions, with counts, fed by the watchers' `Watch`/`Unwatch` messages
//!   (the purgatory's `WatchChange`s). On a shard's first watch of a
//!   partition the owner should record the current snapshot at once, so an op
//!   parked before any note arrived still gets one.
//! - [`AdvanceCoalescer`] (on the owner): records (shard, tp) → latest
//!   snapshot; many advances between flushes collapse into one note per
//!   partition, and a flush yields one message per destination shard. The
//!   mesh transport that carries the messages is not here.
//! - [`apply_notes`] (on the watcher): folds a message into the local
//!   `PartitionView` and says which partitions to `check_and_complete`.

use std::collections::{BTreeMap, HashMap};

use indexmap::IndexMap;

use crate::purgatory::view::{PartitionSnapshot, PartitionView};
use crate::types::{ShardId, TopicPartition};

/// One partition's latest state: `{tp, leo, hw, lso}` plus the role and ISR
/// facts a DelayedProduce needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionAdvanced {
    pub tp: TopicPartition,
    pub snapshot: PartitionSnapshot,
}

/// One flush's worth of notes for one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdvanceNotes {
    pub to: ShardId,
    pub notes: Vec<PartitionAdvanced>,
}

/// Which remote shards watch which of this shard's partitions.
#[derive(Debug, Default)]
pub struct RemoteWatchRegistry {
    watchers: HashMap<TopicPartition, BTreeMap<ShardId, u32>>,
}

impl RemoteWatchRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a watch of `tp` by `shard`; true if it is that shard's first.
    pub fn on_watch(&mut self, shard: ShardId, tp: &TopicPartition) -> bool {
        let count = self
            .watchers
            .entry(tp.clone())
            .or_default()
            .entry(shard)
            .or_insert(0);
        *count += 1;
        *count == 1
    }

    /// Drops one watch of `tp` by `shard`; true if that was its last. An
    /// unwatch without a watch (a duplicate message) is ignored.
    pub fn on_unwatch(&mut self, shard: ShardId, tp: &TopicPartition) -> bool {
        let Some(by_shard) = self.watchers.get_mut(tp) else {
            return false;
        };
        let Some(count) = by_shard.get_mut(&shard) else {
            return false;
        };
        *count -= 1;
        if *count > 0 {
            return false;
        }
        by_shard.remove(&shard);
        if by_shard.is_empty() {
            self.watchers.remove(tp);
        }
        true
    }

    /// Shards watching `tp`, in shard order.
    pub fn watchers(&self, tp: &TopicPartition) -> impl Iterator<Item = ShardId> + '_ {
        self.watchers
            .get(tp)
            .into_iter()
            .flat_map(|m| m.keys().copied())
    }

    pub fn is_watched(&self, tp: &TopicPartition) -> bool {
        self.watchers.contains_key(tp)
    }
}

/// Latest snapshot per (destination shard, partition) awaiting a flush.
#[derive(Debug, Default)]
pub struct AdvanceCoalescer {
    pending: BTreeMap<ShardId, IndexMap<TopicPartition, PartitionSnapshot>>,
}

impl AdvanceCoalescer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the latest state of `tp` for `shard` (newest wins; the first
    /// time a partition is recorded fixes its position in the message).
    pub fn record(&mut self, shard: ShardId, tp: &TopicPartition, snapshot: PartitionSnapshot) {
        let notes = self.pending.entry(shard).or_default();
        match notes.get_mut(tp) {
            Some(s) => *s = snapshot,
            None => {
                notes.insert(tp.clone(), snapshot);
            }
        }
    }

    /// The owner's partition moved: note it for every shard watching it.
    /// Returns how many shards were noted.
    pub fn on_partition_advanced(
        &mut self,
        registry: &RemoteWatchRegistry,
        tp: &TopicPartition,
        snapshot: PartitionSnapshot,
    ) -> usize {
        let mut n = 0;
        for shard in registry.watchers(tp) {
            self.record(shard, tp, snapshot);
            n += 1;
        }
        n
    }

    /// One message per destination shard (in shard order), clearing the
    /// pending notes.
    pub fn drain(&mut self) -> Vec<AdvanceNotes> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(to, notes)| AdvanceNotes {
                to,
                notes: notes
                    .into_iter()
                    .map(|(tp, snapshot)| PartitionAdvanced { tp, snapshot })
                    .collect(),
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Folds received notes into the watcher's view; returns the partitions to
/// re-check (`check_and_complete`), in message order.
pub fn apply_notes(view: &mut PartitionView, notes: AdvanceNotes) -> Vec<TopicPartition> {
    let mut changed = Vec::with_capacity(notes.notes.len());
    for PartitionAdvanced { tp, snapshot } in notes.notes {
        view.update(tp.clone(), snapshot);
        changed.push(tp);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn registry_counts_watches_per_shard() {
        let mut r = RemoteWatchRegistry::new();
        assert!(r.on_watch(ShardId(2), &tp(0)));
        assert!(!r.on_watch(ShardId(2), &tp(0)));
        assert!(r.on_watch(ShardId(1), &tp(0)));
        assert_eq!(
            r.watchers(&tp(0)).collect::<Vec<_>>(),
            vec![ShardId(1), ShardId(2)]
        );
        assert!(!r.on_unwatch(ShardId(2), &tp(0)));
        assert!(r.on_unwatch(ShardId(2), &tp(0)));
        assert!(
            !r.on_unwatch(ShardId(2), &tp(0)),
            "duplicate unwatch ignored"
        );
        assert!(r.on_unwatch(ShardId(1), &tp(0)));
        assert!(!r.is_watched(&tp(0)));
    }

    #[test]
    fn coalescer_sends_one_message_per_shard_with_latest_watermarks() {
        let mut r = RemoteWatchRegistry::new();
        r.on_watch(ShardId(3), &tp(0));
        r.on_watch(ShardId(1), &tp(0));
        r.on_watch(ShardId(1), &tp(1));
        let mut c = AdvanceCoalescer::new();
        for hw in 1..=5 {
            assert_eq!(
                c.on_partition_advanced(&r, &tp(0), PartitionSnapshot::leader_at(hw, hw * 100)),
                2
            );
        }
        c.on_partition_advanced(&r, &tp(1), PartitionSnapshot::leader_at(7, 700));
        assert_eq!(
            c.on_partition_advanced(&r, &tp(9), PartitionSnapshot::leader_at(7, 700)),
            0
        );
        let msgs = c.drain();
        assert!(c.is_empty());
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].to, ShardId(1));
        assert_eq!(
            msgs[0].notes,
            vec![
                PartitionAdvanced {
                    tp: tp(0),
                    snapshot: PartitionSnapshot::leader_at(5, 500)
                },
                PartitionAdvanced {
                    tp: tp(1),
                    snapshot: PartitionSnapshot::leader_at(7, 700)
                },
            ]
        );
        assert_eq!(msgs[1].to, ShardId(3));
        assert_eq!(msgs[1].notes.len(), 1);
        assert_eq!(msgs[1].notes[0].snapshot.high_watermark.offset, 5);

        let mut view = PartitionView::new();
        let changed = apply_notes(&mut view, msgs[0].clone());
        assert_eq!(changed, vec![tp(0), tp(1)]);
        assert_eq!(view.get(&tp(1)).map(|s| s.log_end_offset.offset), Some(7));
    }
}
