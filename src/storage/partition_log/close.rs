//! Clean shutdown of one log, alone or in a batch of closes (part of the
//! `[drv]` partition log).

use std::fs::File;

use super::{write_atomically, PartitionLog, CLEAN_SHUTDOWN_MARKER};
use crate::storage::checkpoint::{self, LEADER_EPOCH_CHECKPOINT};
use crate::storage::close_batch;
use crate::storage::segment;
use crate::storage::StorageError;

impl PartitionLog {
    /// Clean shutdown: flush, trim the active segment, write its indexes,
    /// the leader epoch checkpoint and the clean-shutdown marker, so the
    /// next open trusts the files without rescanning. The log dir's offset
    /// checkpoints are written by [`super::super::log_dir::LogDir`].
    pub async fn close(mut self) -> Result<(), StorageError> {
        // A rolled segment's close still writes acknowledged records.
        // A failed directory fsync poisons the log, handled just below.
        let _ = self.await_roll_sync().await;
        if self.poisoned.get() {
            if let Some(a) = self.active()?.appender.take() {
                a.abandon().await;
            }
            return Err(StorageError::Poisoned);
        }
        self.close_active().await?;
        self.write_leader_epochs()?;
        self.cache.borrow_mut().remove_partition(self.cache_id);
        write_atomically(&self.dir.join(CLEAN_SHUTDOWN_MARKER), "")?;
        File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    /// [`Self::close`] for a batch of closes (`close_batch`): the same
    /// writes, none of them fsynced, the leader epoch checkpoint under its
    /// temporary name; [`close_batch::commit`] makes them durable, renames
    /// and marks the log cleanly shut down.
    pub async fn close_deferred(mut self) -> Result<close_batch::DeferredClose, StorageError> {
        // Files created at open are synced by the batch's commit.
        let created = self.unsynced.take().unwrap_or_default();
        let _ = self.await_roll_sync().await;
        if self.poisoned.get() {
            if let Some(a) = self.active()?.appender.take() {
                a.abandon().await;
            }
            return Err(StorageError::Poisoned);
        }
        let several = self.segments.len() > 1;
        let mut closed = close_batch::DeferredClose::new(self.dir.clone());
        let seg = self.active()?;
        if let Some(a) = seg.appender.take() {
            match a.close_for_batch().await {
                Ok(size) => seg.set_closed(size),
                Err(e) => {
                    self.poison();
                    return Err(e);
                }
            }
        }
        // A log that never held a record (most of a new topic's) creates
        // no files at close but its marker: every new inode cost ~0.3 ms on
        // this host's ext4 (`find_inode_bit`), five per log at shutdown.
        for f in created {
            closed.wrote(f);
        }
        closed.wrote(seg.log_path());
        if seg.size() > 0 || several {
            seg.write_index_files()?;
            for suffix in [segment::INDEX_SUFFIX, segment::TIME_INDEX_SUFFIX] {
                closed.wrote(segment::path_of(&seg.dir, seg.base_offset, suffix));
            }
        } else {
            seg.remove_index_files()?;
        }
        let to = self.dir.join(LEADER_EPOCH_CHECKPOINT);
        // No epochs and no file: the next open reads none either way.
        if !self.leader_epochs.is_empty() || to.exists() {
            let tmp = close_batch::tmp_path(&to);
            std::fs::write(&tmp, checkpoint::encode_leader_epochs(&self.leader_epochs))?;
            closed.rename_on_commit(tmp, to);
        }
        self.cache.borrow_mut().remove_partition(self.cache_id);
        Ok(closed)
    }
}
