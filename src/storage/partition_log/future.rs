//! What a log-dir move (KIP-113, `replication::log_dir_move`) needs of a
//! log (part of the `[drv]` partition log): the current log's whole
//! batches as Kafka's `ReplicaAlterLogDirsThread` fetches them from it,
//! and, at the swap, the future log taking over the current one's leader
//! epochs and the cells the partition reads its offsets from.

use std::rc::Rc;

use bytes::Bytes;

use super::PartitionLog;
use crate::storage::StorageError;

impl PartitionLog {
    /// Whole batches from the one holding `offset` (or the first after it)
    /// up to about `max_bytes`, at least one batch, from one segment; `None`
    /// at the log end. Reads the file and the DMA buffers' unwritten tail.
    pub fn read_batches(&self, offset: i64, max_bytes: u64) -> Result<Option<Bytes>, StorageError> {
        let below = self.segments.range(..=offset).next_back();
        let above = self.segments.range(offset.saturating_add(1)..);
        for (_, seg) in below.into_iter().chain(above) {
            let Some(first) = seg.find_batch(offset)? else {
                continue;
            };
            let (start, size) = (first.position, seg.size());
            let mut end = start + first.len;
            while end < size {
                let h = seg.header_at(end)?;
                if end - start + h.len > max_bytes {
                    break;
                }
                end += h.len;
            }
            let len = usize::try_from(end - start).map_err(|_| {
                StorageError::Io(std::io::Error::other("batch range past the address space"))
            })?;
            let mut out = vec![0u8; len];
            seg.read_exact_at(start, &mut out)?;
            return Ok(Some(Bytes::from(out)));
        }
        Ok(None)
    }

    /// Base offset of the batch holding `offset` (or the first after it).
    pub fn batch_base_at(&self, offset: i64) -> Result<Option<i64>, StorageError> {
        let below = self.segments.range(..=offset).next_back();
        let above = self.segments.range(offset.saturating_add(1)..);
        for (_, seg) in below.into_iter().chain(above) {
            if let Some(b) = seg.find_batch(offset)? {
                return Ok(Some(b.base_offset));
            }
        }
        Ok(None)
    }

    /// Take `current`'s leader epoch cache (the future replica's
    /// `leader-epoch-checkpoint` must match the log it replaces, epochs
    /// recorded without a batch too).
    pub fn copy_leader_epochs_from(&mut self, current: &PartitionLog) -> Result<(), StorageError> {
        self.leader_epochs = current.leader_epochs.clone();
        self.write_leader_epochs()
    }

    /// Publish into `current`'s offset cells from now on (the partition and
    /// the purgatory hold views of them), replacing it.
    pub fn adopt_published_cells(&mut self, current: &PartitionLog) {
        self.ends = Rc::clone(&current.ends);
        self.recovery_point = Rc::clone(&current.recovery_point);
        self.recovery_point.set(self.log_end_offset());
        self.publish_ends();
    }
}
