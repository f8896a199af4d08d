//! `[drv]` DeleteRecords on a partition's leader (Kafka's
//! `Partition.deleteRecordsOnLeader`) and the wait for its low watermark
//! (Kafka's `DelayedDeleteRecords`): the leader advances its log start
//! offset at once; the request completes when every replica on a live
//! broker reported a log start offset at least as far (followers take the
//! leader's through their fetches), or expires with REQUEST_TIMED_OUT.
//!
//! The wait is woken by what can move the low watermark or end it: a
//! follower's fetch (its log start offset) and a leadership change.

use std::rc::Rc;
use std::time::Duration;

use super::Partition;
use crate::io::local_sync::Trigger;
use crate::protocol::ErrorCode;
use crate::purgatory::view::PartitionRole;
use crate::types::BrokerId;

/// Kafka's `DeleteRecordsRequest.HIGH_WATERMARK`: delete up to the HW.
pub const HIGH_WATERMARK: i64 = -1;

/// What the leader did: the offset it deleted before (the request's, or
/// the HW for -1) and the low watermark right after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedOnLeader {
    pub requested: i64,
    pub low_watermark: i64,
}

impl Partition {
    /// Advance the log start offset to `offset` (Kafka's
    /// `deleteRecordsOnLeader`): only the leader (NOT_LEADER_OR_FOLLOWER),
    /// only with `cleanup.policy` delete (POLICY_VIOLATION), an offset
    /// within [0, HW] (OFFSET_OUT_OF_RANGE; -1 is the HW).
    pub async fn delete_records_on_leader(
        &self,
        offset: i64,
        alive: &dyn Fn(BrokerId) -> bool,
    ) -> Result<DeletedOnLeader, ErrorCode> {
        if self.role() != PartitionRole::Leader {
            return Err(self.not_serving());
        }
        if !self.config().is_delete() {
            return Err(ErrorCode::POLICY_VIOLATION);
        }
        let requested = {
            let Ok(mut log) = self.log.write().await else {
                return Err(ErrorCode::KAFKA_STORAGE_ERROR);
            };
            if self.role() != PartitionRole::Leader {
                return Err(self.not_serving());
            }
            let requested = if offset == HIGH_WATERMARK {
                log.ends().high_watermark
            } else {
                offset
            };
            if requested < 0 {
                return Err(ErrorCode::OFFSET_OUT_OF_RANGE);
            }
            log.delete_records_before(requested)
                .map_err(|e| ErrorCode(e.kafka_error_code()))?;
            requested
        };
        tracing::info!(tp = %self.tp, offset = requested, "records deleted before offset");
        Ok(DeletedOnLeader {
            requested,
            low_watermark: self.low_watermark(alive),
        })
    }

    /// The low watermark while leading (`lowWatermarkIfLeader`).
    pub fn low_watermark(&self, alive: &dyn Fn(BrokerId) -> bool) -> i64 {
        self.replica
            .borrow()
            .low_watermark(self.ends.get().log_start_offset, alive)
    }

    /// Wait until the low watermark reaches `required` (NONE and the low
    /// watermark), the partition stops being led here
    /// (NOT_LEADER_OR_FOLLOWER), or `timeout` passes (REQUEST_TIMED_OUT,
    /// low watermark -1, as Kafka's expired `DelayedDeleteRecords`).
    /// `alive` is asked afresh at every check. The deadline is the
    /// runtime's timer: nothing here reads a clock.
    pub async fn await_low_watermark(
        &self,
        required: i64,
        timeout: Duration,
        alive: &dyn Fn(BrokerId) -> bool,
    ) -> (ErrorCode, i64) {
        let waited = glommio::timer::timeout(timeout, async {
            loop {
                if let Some(done) = self.low_watermark_check(required, alive) {
                    return Ok(done);
                }
                // Woken by a follower's fetch, a leadership change or an
                // offline log dir: check again.
                let woken = self.delete_waiters.borrow().clone();
                woken.wait().await;
            }
        })
        .await;
        // Past the deadline: one last check, then REQUEST_TIMED_OUT.
        waited.unwrap_or_else(|_| {
            self.low_watermark_check(required, alive)
                .unwrap_or((ErrorCode::REQUEST_TIMED_OUT, -1))
        })
    }

    /// How a DeleteRecords wait ends now, if it does: no longer leading,
    /// or the low watermark at `required`.
    fn low_watermark_check(
        &self,
        required: i64,
        alive: &dyn Fn(BrokerId) -> bool,
    ) -> Option<(ErrorCode, i64)> {
        if self.role() != PartitionRole::Leader {
            return Some((self.not_serving(), -1));
        }
        let low = self.low_watermark(alive);
        (low >= required).then_some((ErrorCode::NONE, low))
    }

    /// Wake every DeleteRecords wait to check again (the next waits
    /// take a fresh trigger).
    pub(super) fn wake_delete_waiters(&self) {
        let fired = std::mem::replace(
            &mut *self.delete_waiters.borrow_mut(),
            Rc::new(Trigger::default()),
        );
        fired.fire();
    }
}
