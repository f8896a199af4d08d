//! The partition's side of a log-dir move (KIP-113; the decisions are
//! `replication::log_dir_move`, the copy loop `replication::alter_log_dirs`):
//! one round of the copy from the current log into the future log, and the
//! swap (Kafka's `Partition.maybeReplaceCurrentWithFutureReplica`), which
//! runs under the log's write lock so no append or read sees the log
//! change under it.

use std::fs::File;
use std::path::Path;

use super::txn::segment_of;
use super::Partition;
use crate::replication::log_dir_move::{next_step, CopyStep, ReplicaView};
use crate::storage::partition_log::{PartitionLog, ValidatedRecords};
use crate::storage::producer_snapshot;
use crate::storage::txn_index::TxnIndex;
use crate::storage::StorageError;

/// Bytes one round of the copy reads (Kafka's `replica.fetch.max.bytes`
/// default, which bounds a `ReplicaAlterLogDirsThread` fetch).
pub const COPY_ROUND_BYTES: u64 = 1024 * 1024;

/// Where a swap renames things.
pub struct SwapPlan<'a> {
    /// The current log's dir and the name its folder gets (`-delete`).
    pub current_log_dir: &'a Path,
    pub delete_folder: &'a str,
    /// The future log's dir, its `LogDirs` index and its folder (`-future`).
    pub future_log_dir: &'a Path,
    pub future_index: usize,
    pub future_folder: &'a str,
}

/// What one round of the copy found to do, read from the current log.
enum Round {
    Truncate(i64),
    StartOver(i64),
    Append(bytes::Bytes),
    CaughtUp,
}

fn lock_closed() -> StorageError {
    StorageError::Poisoned
}

/// The current log as the copy compares it: its log start is the base
/// of the batch holding it (the future log can only start at a batch).
fn current_view(log: &PartitionLog) -> Result<(i64, i64), StorageError> {
    let lso = log.log_start_offset();
    let first = log.batch_base_at(lso)?.unwrap_or(lso).min(lso);
    Ok((first, log.log_end_offset()))
}

fn decide(current: &PartitionLog, future: &PartitionLog) -> Result<Round, StorageError> {
    let (first, leo) = current_view(current)?;
    let cur = ReplicaView {
        log_start_offset: first,
        log_end_offset: leo,
        epochs: current.leader_epochs(),
    };
    let fut = ReplicaView {
        log_start_offset: future.log_start_offset(),
        log_end_offset: future.log_end_offset(),
        epochs: future.leader_epochs(),
    };
    Ok(match next_step(&cur, &fut) {
        CopyStep::TruncateTo(o) => Round::Truncate(o),
        CopyStep::StartOver(o) => Round::StartOver(o),
        CopyStep::Swap => Round::CaughtUp,
        CopyStep::Copy(from) => match current.read_batches(from, COPY_ROUND_BYTES)? {
            Some(bytes) => Round::Append(bytes),
            None => Round::CaughtUp,
        },
    })
}

/// Apply one decided round to the future log; true when caught up.
async fn apply(future: &mut PartitionLog, round: Round, now_ms: i64) -> Result<bool, StorageError> {
    match round {
        Round::Truncate(o) => future.truncate_to(o).await?,
        Round::StartOver(o) => future.truncate_fully_and_start_at_offset(o).await?,
        Round::Append(bytes) => {
            if let Some(records) = ValidatedRecords::from_leader(bytes)? {
                future.append_as_follower(records, now_ms).await?;
            }
        }
        Round::CaughtUp => return Ok(true),
    }
    Ok(false)
}

fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

impl Partition {
    /// One round of the copy (Kafka's `ReplicaAlterLogDirsThread` fetching
    /// from the local log): read under the read lock, append to `future`
    /// after letting go of it. True when the future log has caught up.
    pub async fn copy_round(
        &self,
        future: &mut PartitionLog,
        now_ms: i64,
    ) -> Result<bool, StorageError> {
        let round = {
            let current = self.log.read().await.map_err(|_| lock_closed())?;
            decide(&current, future)?
        };
        apply(future, round, now_ms).await
    }

    /// The current log's size in bytes (Kafka's `UnifiedLog.size`).
    pub async fn log_size(&self) -> Result<u64, StorageError> {
        Ok(self
            .log
            .read()
            .await
            .map_err(|_| lock_closed())?
            .size_bytes())
    }

    /// The current log's end offset and high watermark, without its lock.
    pub fn current_ends(&self) -> (i64, i64) {
        let e = self.ends.get();
        (e.log_end_offset, e.high_watermark)
    }

    /// Swap the caught-up `future` log in for the current one, under the
    /// write lock: copy what arrived since, close the future log cleanly
    /// with the current log's epochs, start offset and a producer snapshot,
    /// rename the current folder to `-delete` and the future folder into
    /// place (module doc of `log_dir_move`: that order is what a restart
    /// completes), reopen it and publish through the same cells. Returns
    /// the replaced log (its folder now `-delete`) for the caller to drop
    /// and delete.
    pub async fn replace_current_with_future(
        &self,
        mut future: PartitionLog,
        plan: SwapPlan<'_>,
        now_ms: i64,
    ) -> Result<PartitionLog, StorageError> {
        let mut current = self.log.write().await.map_err(|_| lock_closed())?;
        loop {
            let round = decide(&current, &future)?;
            if apply(&mut future, round, now_ms).await? {
                break;
            }
        }
        future.maybe_increment_log_start_offset(current.log_start_offset())?;
        future.copy_leader_epochs_from(&current)?;
        let (lso, hw, leo) = (
            current.log_start_offset(),
            current.high_watermark(),
            current.log_end_offset(),
        );
        let config = current.config().clone();
        let storage = current.storage().clone();
        future.close().await?;
        let future_dir = plan.future_log_dir.join(plan.future_folder);
        if leo > 0 {
            producer_snapshot::write_snapshot(&future_dir, leo, &self.encoded_producer_state())?;
        }
        let current_dir = current.dir().to_path_buf();
        let delete_dir = plan.current_log_dir.join(plan.delete_folder);
        std::fs::rename(&current_dir, &delete_dir)?;
        sync_dir(plan.current_log_dir)?;
        let name = self.tp.dir_name();
        let topic_id = Some(self.topic_id).filter(|id| !id.is_nil());
        let placed = async {
            std::fs::rename(&future_dir, plan.future_log_dir.join(&name))?;
            sync_dir(plan.future_log_dir)?;
            PartitionLog::open_folder(
                plan.future_log_dir,
                Some(&name),
                &self.tp,
                topic_id,
                config,
                storage,
            )
            .await
        }
        .await;
        let mut placed = match placed {
            Ok(log) => log,
            Err(e) => {
                // The current log stays; the future folder (if renamed)
                // is a duplicate the next move or start replaces.
                let _ = std::fs::rename(&delete_dir, &current_dir);
                return Err(e);
            }
        };
        placed.maybe_increment_log_start_offset(lso)?;
        placed.set_high_watermark(hw);
        placed.adopt_published_cells(&current);
        let mut index = TxnIndex::load(placed.dir(), &placed.segment_base_offsets())?;
        let bases = placed.segment_base_offsets();
        for entry in self.txn_index.borrow().index().all() {
            index.add(segment_of(&bases, entry.last_offset), entry)?;
        }
        *self.txn_index.borrow_mut() = index;
        std::mem::swap(&mut *current, &mut placed);
        self.log_dir.set(plan.future_index);
        Ok(placed)
    }
}
