//! `[drv]` Group commit of a leader's appends: an append is acknowledged
//! (and counted in the HW) only once its bytes are in the kernel.
//!
//! Apache Kafka's `UnifiedLog.append` writes into the page cache before it
//! answers, so an acknowledged record survives the death of the broker
//! process (only a machine crash needs `log.flush.*` or replication).
//! shardlog's appends copy into a DMA write buffer first; the buffer is
//! written with O_DIRECT when it fills, so without this step an
//! acknowledged record could sit in process memory for seconds and a
//! `kill -9` would lose it. So every leader append waits for one write-out
//! (the partial tail page included) that covers it; the waiters of a
//! partition share it (one write per partition per round, whatever the
//! number of requests), and with `shardlog.flush.every.append` the round
//! also fdatasyncs (single-node durability across a machine crash).

use std::rc::Rc;

use super::Partition;
use crate::io::local_sync::Trigger;
use crate::protocol::ErrorCode;
use crate::purgatory::view::PartitionRole;

impl Partition {
    /// Return once every offset below `end` is written out (and, with
    /// `shardlog.flush.every.append`, fdatasynced). The first waiter to
    /// find no round running becomes the leader: it takes the log lock,
    /// writes out everything appended so far (fdatasync outside the lock
    /// when durable), advances the HW to that log end and wakes the
    /// others; appends that arrived meanwhile are covered by the next
    /// round. A failed write or sync poisons the log (storage never
    /// retries an fsync) and fails every waiter with its error code.
    pub(super) async fn commit_through(&self, end: i64, now_ms: i64) -> Result<(), ErrorCode> {
        let commit = &self.group_commit;
        loop {
            if commit.failed.get() {
                return Err(ErrorCode::KAFKA_STORAGE_ERROR);
            }
            if commit.committed_end.get() >= end {
                return Ok(());
            }
            if commit.running.get() {
                let round = commit.round.borrow().clone();
                round.wait().await;
                continue;
            }
            commit.running.set(true);
            if self.durable {
                commit.counts.add(0, 1);
            }
            let committed = self.lead_one_round(now_ms).await;
            match committed {
                Some(leo) => commit
                    .committed_end
                    .set(commit.committed_end.get().max(leo)),
                None => commit.failed.set(true),
            }
            commit.running.set(false);
            let done =
                std::mem::replace(&mut *commit.round.borrow_mut(), Rc::new(Trigger::default()));
            done.fire();
        }
    }

    /// The log was truncated to `log_end_offset` (a follower's KIP-101
    /// truncation): offsets past it will be appended again and must be
    /// written out again before they are acknowledged.
    pub(super) fn on_log_truncated(&self, log_end_offset: i64) {
        let committed = &self.group_commit.committed_end;
        committed.set(committed.get().min(log_end_offset));
    }

    /// One round: write out under the log lock, fdatasync without it when
    /// durable (appends keep buffering), then move the HW to the written
    /// log end. `None` if it failed (log poisoned).
    async fn lead_one_round(&self, now_ms: i64) -> Option<i64> {
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
        let synced = if self.durable {
            Some(pending.sync().await)
        } else {
            None
        };
        let Ok(mut log) = self.log.write().await else {
            return None;
        };
        if let Some(synced) = synced {
            log.on_synced(&pending, synced.is_ok());
            if let Err(e) = synced {
                tracing::error!(tp = %self.tp, error = %e, "fdatasync failed; log poisoned");
                return None;
            }
        }
        let leo = pending.log_end_offset;
        // Leadership may have moved (and the log been truncated) while the
        // round ran: only a leader's HW follows its own writes.
        if self.role() == PartitionRole::Leader && leo <= log.ends().log_end_offset {
            self.advance_high_watermark(&mut log, now_ms, leo, position);
        }
        Some(leo)
    }
}
