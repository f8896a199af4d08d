//! `[drv]` Group commit of a durable partition
//! (`shardlog.flush.every.append`): appends buffer under the log lock, then
//! wait for one fdatasync that covers them all.

use std::rc::Rc;

use super::Partition;
use crate::io::local_sync::Trigger;
use crate::protocol::ErrorCode;

impl Partition {
    /// Group commit for `shardlog.flush.every.append`: return once every
    /// offset below `end` is fdatasynced. The first waiter to find no sync
    /// running becomes the leader: it takes the log lock, writes out and
    /// fdatasyncs everything appended so far, advances the HW to that log
    /// end and wakes the others; appends that arrived meanwhile are covered
    /// by the next round. A failed flush poisons the log (storage never
    /// retries an fsync) and fails every waiter with its error code.
    pub(super) async fn sync_through(&self, end: i64, now_ms: i64) -> Result<(), ErrorCode> {
        let sync = &self.durable_sync;
        loop {
            if sync.failed.get() {
                return Err(ErrorCode::KAFKA_STORAGE_ERROR);
            }
            if sync.synced_end.get() >= end {
                return Ok(());
            }
            if sync.syncing.get() {
                let round = sync.round.borrow().clone();
                round.wait().await;
                continue;
            }
            sync.syncing.set(true);
            sync.counts.add(0, 1);
            let synced = self.lead_one_sync(now_ms).await;
            match synced {
                Some(leo) => sync.synced_end.set(sync.synced_end.get().max(leo)),
                None => sync.failed.set(true),
            }
            sync.syncing.set(false);
            let done =
                std::mem::replace(&mut *sync.round.borrow_mut(), Rc::new(Trigger::default()));
            done.fire();
        }
    }

    /// One group-commit round: write out under the log lock, fdatasync
    /// without it (appends keep buffering), then record the sync and move
    /// the HW to the synced log end. `None` if it failed (log poisoned).
    async fn lead_one_sync(&self, now_ms: i64) -> Option<i64> {
        let (pending, position) = {
            let Ok(mut log) = self.log.write().await else {
                return None;
            };
            match log.write_out().await {
                Ok(p) => (p, log.ends().log_end_position),
                Err(e) => {
                    tracing::error!(tp = %self.tp, error = %e, "write-out failed");
                    return None;
                }
            }
        };
        let synced = pending.sync().await;
        let Ok(mut log) = self.log.write().await else {
            return None;
        };
        log.on_synced(&pending, synced.is_ok());
        if let Err(e) = synced {
            tracing::error!(tp = %self.tp, error = %e, "fdatasync failed; log poisoned");
            return None;
        }
        let leo = pending.log_end_offset;
        self.advance_high_watermark(&mut log, now_ms, leo, position);
        Some(leo)
    }
}
