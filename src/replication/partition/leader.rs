//! `[drv]` The leader side of replication for one partition (Kafka's
//! `Partition.fetchRecords` for followers, `updateFollowerFetchState`,
//! `lastOffsetForLeaderEpoch`, `maybeShrinkIsr`, the AlterPartition answer
//! `handleAlterPartitionError`): the pure rules are `replication::isr` and
//! `replication::leader_epoch`; this file runs them under the log's locks
//! and stores what they decide (the HW) in the log.

use super::{Partition, ReadAnswer};
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::view::PartitionRole;
use crate::replication::isr::LeaderLog;
use crate::replication::isr_change::{IsrChange, IsrChangeAnswer};
use crate::replication::leader_epoch::{
    check_current_leader_epoch, diverging_epoch, end_offset_for, EpochEndOffset,
};
use crate::types::{BrokerId, LeaderEpoch};

/// What a follower's fetch says about it besides the offset
/// (FetchRequest.json v12+: `ReplicaState`, `current_leader_epoch`,
/// `last_fetched_epoch`, `log_start_offset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerFetch {
    pub replica_id: BrokerId,
    /// -1 when not sent (no check).
    pub current_leader_epoch: i32,
    /// -1 when not sent (no diverging-epoch check).
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
}

/// What a follower's fetch changed on the leader.
#[derive(Debug, Default)]
pub struct FollowerFetchEffects {
    /// The HW moved: acks=all produces and consumer fetches may complete.
    pub high_watermark_advanced: bool,
    /// An ISR expansion to send to the controller.
    pub propose: Option<IsrChange>,
}

/// What the controller's answer to an ISR change did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct IsrAnswerEffect {
    /// The HW moved: acks=all produces and consumer fetches may complete.
    pub high_watermark_moved: bool,
    /// The same change is to be sent again.
    pub resend: bool,
    /// The controller refused the pending change, or it was not
    /// delivered (Kafka's `handleAlterPartitionError` marks
    /// `FailedIsrUpdatesPerSec`).
    pub failed: bool,
}

impl Partition {
    /// The leader's checks before serving a replica (Kafka's
    /// `localLogWithEpochOrThrow` with `fetchOnlyFromLeader`): the epoch
    /// first, then the role.
    fn check_leader(&self, current_leader_epoch: i32) -> ErrorCode {
        let epoch = check_current_leader_epoch(current_leader_epoch, self.leader_epoch.get().0);
        if epoch != ErrorCode::NONE {
            return epoch;
        }
        if self.role() != PartitionRole::Leader {
            return self.not_serving();
        }
        ErrorCode::NONE
    }

    /// A consumer's `current_leader_epoch` against ours (Kafka's
    /// `localLogWithEpochOrThrow`, checked before the role): older is
    /// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH, -1 passes.
    pub fn fences(&self, current_leader_epoch: i32) -> ErrorCode {
        check_current_leader_epoch(current_leader_epoch, self.leader_epoch.get().0)
    }

    /// Serve a follower's fetch (Kafka's `Partition.fetchRecords` with
    /// `isFromFollower`): up to the LEO; a diverging last fetched epoch
    /// answers `diverging_epoch` and no records (KIP-320); otherwise the
    /// follower's LEO and log start offset are recorded after the read and
    /// the HW rule runs (`updateFollowerFetchState`, `maybeIncrementLeaderHW`).
    pub async fn read_for_follower(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
        follower: &FollowerFetch,
        now_ms: i64,
    ) -> (ReadAnswer, FollowerFetchEffects) {
        let none = FollowerFetchEffects::default();
        let checked = self.check_leader(follower.current_leader_epoch);
        if checked != ErrorCode::NONE {
            return (ReadAnswer::error(checked), none);
        }
        // Kafka's `followerReplicaOrThrow`: only assigned replicas fetch.
        if follower.replica_id == self.me || !self.replicas.borrow().contains(&follower.replica_id)
        {
            return (ReadAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER), none);
        }
        let diverging = {
            let Ok(log) = self.log.read().await else {
                return (ReadAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER), none);
            };
            diverging_epoch(
                log.leader_epochs(),
                follower.last_fetched_epoch,
                offset,
                log.ends().log_end_offset,
            )
        };
        if let Some(d) = diverging {
            let ends = self.ends.get();
            let answer = ReadAnswer {
                error_code: ErrorCode::NONE,
                high_watermark: ends.high_watermark,
                last_stable_offset: self.last_stable_offset(ends.high_watermark),
                log_start_offset: ends.log_start_offset,
                records: Vec::new(),
                bytes: 0,
                snapshot: Some(self.snapshot()),
                diverging_epoch: Some(d),
                aborted_transactions: None,
            };
            return (answer, none);
        }
        let leo_at_read = self.ends.get().log_end_offset;
        let mut answer = self
            .read(offset, max_bytes, FetchIsolation::LogEnd, min_one_batch)
            .await;
        if answer.error_code != ErrorCode::NONE {
            return (answer, none);
        }
        let effects = self
            .on_follower_fetch(follower, offset, leo_at_read, now_ms)
            .await;
        if effects.high_watermark_advanced {
            let ends = self.ends.get();
            answer.high_watermark = ends.high_watermark;
            answer.last_stable_offset = ends.high_watermark;
            answer.snapshot = Some(self.snapshot());
        }
        (answer, effects)
    }

    /// Record a follower's fetch state and run the HW rule; a proposed
    /// expansion becomes an [`IsrChange`] under the current epoch.
    async fn on_follower_fetch(
        &self,
        follower: &FollowerFetch,
        fetch_offset: i64,
        leo_at_read: i64,
        now_ms: i64,
    ) -> FollowerFetchEffects {
        let Ok(mut log) = self.log.write().await else {
            return FollowerFetchEffects::default();
        };
        if self.role() != PartitionRole::Leader {
            return FollowerFetchEffects::default();
        }
        let epoch = self.leader_epoch.get();
        let epoch_start = log
            .leader_epochs()
            .iter()
            .find(|(e, _)| *e == epoch.0)
            .map_or(log.ends().log_end_offset, |(_, start)| *start);
        let ends = log.ends();
        let at = LeaderLog {
            log_end_offset: leo_at_read.min(ends.log_end_offset),
            high_watermark: ends.high_watermark,
        };
        let actions = self.replica.borrow_mut().on_follower_fetch(
            now_ms,
            at,
            follower.replica_id,
            fetch_offset,
            follower.log_start_offset,
            epoch_start,
        );
        if let Some(hw) = actions.high_watermark_advanced {
            log.set_high_watermark(hw);
        }
        // The follower's log start offset may have reached a DeleteRecords.
        self.wake_delete_waiters();
        FollowerFetchEffects {
            high_watermark_advanced: actions.high_watermark_advanced.is_some(),
            propose: actions.propose_isr.map(|isr| self.isr_change(epoch, isr)),
        }
    }

    fn isr_change(&self, leader_epoch: LeaderEpoch, new_isr: Vec<BrokerId>) -> IsrChange {
        IsrChange {
            tp: self.tp.clone(),
            topic_id: self.topic_id,
            leader_epoch,
            new_isr,
        }
    }

    /// OffsetForLeaderEpoch for one partition (Kafka's
    /// `Partition.lastOffsetForLeaderEpoch`): the epoch check, the role
    /// check unless `fetch_only_from_leader` is off (replica id -2,
    /// debugging), then the epoch cache lookup (`UnifiedLog.endOffsetForEpoch`:
    /// an undefined end offset answers undefined epoch and offset).
    pub async fn offset_for_leader_epoch(
        &self,
        current_leader_epoch: i32,
        leader_epoch: i32,
        fetch_only_from_leader: bool,
    ) -> (ErrorCode, EpochEndOffset) {
        let epoch = check_current_leader_epoch(current_leader_epoch, self.leader_epoch.get().0);
        if epoch != ErrorCode::NONE {
            return (epoch, EpochEndOffset::UNDEFINED);
        }
        if fetch_only_from_leader && self.role() != PartitionRole::Leader {
            return (self.not_serving(), EpochEndOffset::UNDEFINED);
        }
        let Ok(log) = self.log.read().await else {
            return (ErrorCode::NOT_LEADER_OR_FOLLOWER, EpochEndOffset::UNDEFINED);
        };
        // Kafka's `Partition.makeLeader` assigns the new epoch in the cache at
        // once (`maybeAssignEpochStartOffset` at the LEO); ours gets its entry
        // with the epoch's first append. Until then the current epoch starts
        // at the LEO: without it a consumer validating its position under
        // the current epoch (KIP-320) got UNDEFINED and took it for a log
        // truncation, resetting its position.
        let log_end_offset = log.ends().log_end_offset;
        let current = self.leader_epoch.get().0;
        let mut epochs = log.leader_epochs().to_vec();
        if self.role() == PartitionRole::Leader && epochs.last().is_none_or(|(e, _)| *e < current) {
            epochs.push((current, log_end_offset));
        }
        let found = end_offset_for(&epochs, leader_epoch, log_end_offset);
        if found.end_offset < 0 {
            return (ErrorCode::NONE, EpochEndOffset::UNDEFINED);
        }
        (ErrorCode::NONE, found)
    }

    /// The periodic ISR check (`replica.lag.time.max.ms / 2`, Kafka's
    /// `ReplicaManager.maybeShrinkIsr`): a shrink to propose, if any.
    pub fn maybe_shrink_isr(&self, now_ms: i64) -> Option<IsrChange> {
        if self.role() != PartitionRole::Leader {
            return None;
        }
        let proposed = self
            .replica
            .borrow_mut()
            .maybe_shrink_isr(now_ms, self.ends.get().log_end_offset)
            .propose_isr;
        proposed.map(|isr| self.isr_change(self.leader_epoch.get(), isr))
    }

    /// The controller's answer to `change` (Kafka's
    /// `Partition.sendAlterPartitionRequest` callback): a commit under our
    /// current epoch becomes the ISR (and may move the HW); a refusal goes
    /// by `handleAlterPartitionError`
    /// ([`crate::replication::isr_change::after_refusal`]); an answer to a
    /// change no longer pending, or committed under another leader epoch,
    /// is ignored.
    pub async fn on_isr_change_answer(
        &self,
        change: &IsrChange,
        answer: IsrChangeAnswer,
        now_ms: i64,
    ) -> IsrAnswerEffect {
        let Ok(mut log) = self.log.write().await else {
            return IsrAnswerEffect::default();
        };
        let current = self.leader_epoch.get();
        let mut replica = self.replica.borrow_mut();
        // A LeaderAndIsr with a new epoch already replaced the state.
        if change.leader_epoch != current || self.role() != PartitionRole::Leader {
            return IsrAnswerEffect::default();
        }
        if replica.pending_isr() != Some(&change.new_isr[..]) {
            tracing::debug!(tp = %self.tp, ?answer, "answer to an ISR change no longer pending");
            return IsrAnswerEffect::default();
        }
        match answer {
            IsrChangeAnswer::Committed { leader_epoch, isr } if leader_epoch == current => {
                let ends = log.ends();
                let at = LeaderLog {
                    log_end_offset: ends.log_end_offset,
                    high_watermark: ends.high_watermark,
                };
                tracing::info!(tp = %self.tp, ?isr, "ISR change committed");
                let actions = replica.on_isr_committed(now_ms, at, &isr);
                let Some(hw) = actions.high_watermark_advanced else {
                    return IsrAnswerEffect::default();
                };
                log.set_high_watermark(hw);
                IsrAnswerEffect {
                    high_watermark_moved: true,
                    resend: false,
                    failed: false,
                }
            }
            IsrChangeAnswer::Committed { leader_epoch, .. } => {
                // Kafka: "Ignoring new ISR … since we have a stale leader
                // epoch"; the change stays pending until LeaderAndIsr.
                tracing::info!(tp = %self.tp, ?leader_epoch, "ISR change committed under another leader epoch");
                IsrAnswerEffect::default()
            }
            IsrChangeAnswer::Failed(error) => {
                let resend = replica.on_isr_change_refused(&change.new_isr, error);
                tracing::info!(tp = %self.tp, ?error, resend, "ISR change not committed");
                IsrAnswerEffect {
                    high_watermark_moved: false,
                    resend,
                    failed: true,
                }
            }
        }
    }

    /// ISR size for the acks=all check before an append (Kafka's
    /// `appendRecordsToLeader`: the committed ISR against
    /// `min.insync.replicas`, topic over broker config).
    pub(super) fn enough_replicas_for_acks_all(&self) -> bool {
        let min_isr = self.config().min_insync_replicas.max(1) as usize;
        self.replica.borrow().isr().len() >= min_isr
    }
}
