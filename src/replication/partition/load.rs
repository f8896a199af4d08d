//! `[drv]` Rebuilding a partition's producer state at open and after a
//! truncation: the newest usable snapshot, then the batch headers logged
//! after it (Kafka's `loadProducerState`); markers replayed there also
//! rebuild the aborted-transaction index entries a crash may have lost.

use super::txn;
use crate::replication::producer_state::{LoggedBatch, ProducerStateManager, TxnMarker};
use crate::storage::partition_log::PartitionLog;
use crate::storage::txn_index::TxnIndex;
use crate::storage::{producer_snapshot, StorageError};

/// How a partition's producer state was rebuilt at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStateLoad {
    /// The snapshot loaded, if any.
    pub snapshot_offset: Option<i64>,
    /// Batches replayed from the log after it.
    pub batches_replayed: u64,
}

/// Rebuild producer state for an opened log: the newest snapshot at or
/// below the log end offset that decodes (stray ones past it are deleted,
/// damaged ones skipped), then every batch header from its offset on.
/// Aborted transactions whose marker is replayed go into `txn_index`
/// (unless already there). The LSO then stands where the log's HW puts it.
pub fn load_producer_state(
    log: &PartitionLog,
    txn_index: &mut TxnIndex,
) -> Result<(ProducerStateManager, ProducerStateLoad), StorageError> {
    let leo = log.log_end_offset();
    let loaded =
        producer_snapshot::load_newest(log.dir(), leo, ProducerStateManager::decode_snapshot)?;
    let snapshot_offset = loaded.as_ref().map(|(o, _)| *o);
    let (from, mut state) = loaded.unwrap_or((log.log_start_offset(), ProducerStateManager::new()));
    let mut aborts = Vec::new();
    let batches_replayed = if from < leo {
        log.scan_batches_from(from, |h| {
            let done = state.on_replay(&LoggedBatch {
                base_offset: h.base_offset,
                last_offset_delta: h.last_offset_delta,
                max_timestamp: h.max_timestamp,
                producer_id: h.producer_id,
                producer_epoch: h.producer_epoch,
                base_sequence: h.base_sequence,
                is_control: h.is_control,
                is_transactional: h.is_transactional,
                marker: h.marker.map(|(commit, coordinator_epoch)| TxnMarker {
                    commit,
                    coordinator_epoch,
                }),
            });
            if let Some(entry) = done.and_then(|d| txn::aborted_entry(&state, &d)) {
                aborts.push(entry);
            }
        })?
    } else {
        0
    };
    let segments = log.segment_base_offsets();
    for entry in aborts {
        txn_index.add(txn::segment_of(&segments, entry.last_offset), entry)?;
    }
    state.on_high_watermark(log.high_watermark());
    Ok((
        state,
        ProducerStateLoad {
            snapshot_offset,
            batches_replayed,
        },
    ))
}
