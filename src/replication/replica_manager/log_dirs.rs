//! `[drv]` A shard's partitions and the broker's log dirs: where a new
//! partition log goes, and the partitions of a failed dir taken offline
//! (Kafka's `LogManager.nextLogDirs`, `ReplicaManager.handleLogDirFailure`).

use super::ReplicaManager;
use crate::types::TopicPartition;

impl ReplicaManager {
    /// Take the partitions of log dirs gone offline since the last call
    /// offline (Kafka's `ReplicaManager.handleLogDirFailure`: their
    /// fetchers stop, every request on them answers KAFKA_STORAGE_ERROR).
    /// Returns them: their delayed operations complete now, as Kafka's
    /// `completeDelayedFetchOrProduceRequests` does.
    pub fn apply_offline_dirs(&self) -> Vec<TopicPartition> {
        let changes = self.log_dirs.changes();
        if self.offline_seen.replace(changes) == changes {
            return Vec::new();
        }
        let gone: Vec<TopicPartition> = self
            .partitions
            .borrow()
            .values()
            .filter(|p| !p.is_offline() && !self.log_dirs.is_online(p.log_dir()))
            .map(|p| {
                p.mark_offline();
                p.tp.clone()
            })
            .collect();
        self.fetchers.on_removed(&gone);
        self.log_dirs.set_applied(self.offline_slot, changes);
        gone
    }

    /// Where each of `tps` (new to this shard) is opened, counted in
    /// its dir: the dir already holding its folder, else the online dir
    /// holding the fewest logs of the broker (`LogDirs::place_new`).
    /// `None`: its dir is offline, or every dir is.
    pub(super) fn place(&self, tps: &[TopicPartition]) -> Vec<Option<usize>> {
        let several = self.log_dirs.all().len() > 1;
        tps.iter()
            .map(|tp| {
                // One dir: no folder to look for.
                let held = if several {
                    self.log_dirs.holding(tp)
                } else {
                    Some(0)
                };
                match held {
                    Some(d) if self.log_dirs.is_online(d) => {
                        self.log_dirs.count_log(d);
                        Some(d)
                    }
                    Some(_) => None,
                    None => self.log_dirs.place_new(),
                }
            })
            .collect()
    }
}
