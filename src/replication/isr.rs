//! `[pure]` Leader-side replica state of one partition: the high watermark
//! rule, ISR shrink and expand (Kafka's `Partition.maybeIncrementLeaderHW`,
//! `maybeShrinkIsr`, `maybeExpandIsr`).
//!
//! The high watermark is kept apart from the leader's log end offset even
//! with a single replica: every acks=all produce waits on the HW, and a
//! single node and a replicated partition run through the same rule (with
//! the ISR = the leader alone, the HW follows the leader's LEO).
//!
//! This state holds neither value: the leader's log owns its LEO and the
//! HW it stores (Kafka's `UnifiedLog`), and every event passes them in as
//! [`LeaderLog`]; what the rule decides comes back in [`IsrActions`].
//!
//! HW = min LEO over the leader and every remote replica that is in the ISR or
//! has caught up within `replica.lag.time.max.ms` (Kafka counts recently
//! caught-up replicas too, so an expanding ISR never stalls the HW); it never
//! moves backwards. While an ISR change is in flight to the controller
//! (KIP-497's `PendingExpandIsr` / `PendingShrinkIsr`), the HW counts the
//! *maximal* ISR (committed ∪ proposed: an expanding replica already
//! holds the HW back, a shrinking one still does), and no new change is
//! proposed until the controller answers.

use crate::protocol::ErrorCode;
use crate::replication::isr_change::{after_refusal, AfterRefusal};
use crate::types::mutation::{self, Mutation};
use crate::types::{BrokerId, Offset};
use std::collections::BTreeMap;

/// Kafka default of `replica.lag.time.max.ms` (30 s).
pub const DEFAULT_REPLICA_LAG_TIME_MAX_MS: i64 = 30_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    pub log_end_offset: Offset,
    /// Last time the follower was caught up (Kafka's `lastCaughtUpTimeMs`).
    pub last_caught_up_time_ms: i64,
    /// The leader's LEO and the time of the follower's previous fetch
    /// (Kafka's `lastFetchLeaderLogEndOffset`, `lastFetchTimeMs`).
    pub last_fetch_leader_log_end_offset: Offset,
    pub last_fetch_time_ms: i64,
    /// The log start offset the follower reported (-1 until it fetched).
    pub log_start_offset: Offset,
}

impl FollowerState {
    fn fresh(last_caught_up_time_ms: i64) -> Self {
        Self {
            log_end_offset: 0,
            last_caught_up_time_ms,
            last_fetch_leader_log_end_offset: 0,
            last_fetch_time_ms: 0,
            log_start_offset: -1,
        }
    }
}

/// What changed after an event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IsrActions {
    /// The new high watermark, when it advanced.
    pub high_watermark_advanced: Option<Offset>,
    /// A proposed ISR to send to the controller (AlterPartition), when it changed.
    pub propose_isr: Option<Vec<BrokerId>>,
}

/// The leader's log as of an event: its LEO and the HW it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderLog {
    pub log_end_offset: Offset,
    pub high_watermark: Offset,
}

#[derive(Debug, Clone)]
pub struct LeaderReplicaState {
    leader_id: BrokerId,
    isr: Vec<BrokerId>,
    /// The ISR proposed to the controller and not yet answered.
    pending_isr: Option<Vec<BrokerId>>,
    followers: BTreeMap<BrokerId, FollowerState>,
    replica_lag_time_max_ms: i64,
}

impl LeaderReplicaState {
    /// `replicas` includes the leader; followers start unknown (LEO 0).
    pub fn new(
        leader_id: BrokerId,
        replicas: &[BrokerId],
        isr: &[BrokerId],
        replica_lag_time_max_ms: i64,
        now_ms: i64,
    ) -> Self {
        let followers = replicas
            .iter()
            .filter(|r| **r != leader_id)
            .map(|r| (*r, FollowerState::fresh(now_ms)))
            .collect();
        let s = Self {
            leader_id,
            isr: isr.to_vec(),
            pending_isr: None,
            followers,
            replica_lag_time_max_ms,
        };
        s.check_invariants();
        s
    }

    /// The state a new leader starts from (Kafka's `Partition.makeLeader`,
    /// `Replica.resetReplicaState`): every follower's LEO unknown (0 here),
    /// caught up "now" when the ISR names it, never otherwise, so a
    /// follower outside the ISR holds back neither the HW nor, until it
    /// fetches, anything else.
    pub fn become_leader(
        leader_id: BrokerId,
        replicas: &[BrokerId],
        isr: &[BrokerId],
        replica_lag_time_max_ms: i64,
        now_ms: i64,
    ) -> Self {
        let mut s = Self::new(leader_id, replicas, isr, replica_lag_time_max_ms, now_ms);
        for (id, f) in s.followers.iter_mut() {
            if !isr.contains(id) {
                f.last_caught_up_time_ms = 0;
            }
        }
        s.check_invariants();
        s
    }

    /// Kafka's `Partition.lowWatermarkIfLeader`: the smallest log start
    /// offset of the leader (`leader_log_start`) and of every follower on a
    /// live broker, a follower that has not fetched yet counting -1 (Kafka's
    /// `UnifiedLog.UnknownOffset`). DeleteRecords completes once it reaches
    /// the requested offset.
    pub fn low_watermark(
        &self,
        leader_log_start: Offset,
        alive: impl Fn(BrokerId) -> bool,
    ) -> Offset {
        self.followers
            .iter()
            .filter(|(id, _)| alive(**id))
            .map(|(_, f)| f.log_start_offset)
            .fold(leader_log_start, Offset::min)
    }

    /// The committed ISR (what the controller last accepted).
    pub fn isr(&self) -> &[BrokerId] {
        &self.isr
    }

    /// The ISR change in flight, if any.
    pub fn pending_isr(&self) -> Option<&[BrokerId]> {
        self.pending_isr.as_deref()
    }

    /// Kafka's `PartitionState.maximalIsr`: the committed ISR plus any
    /// replica a pending change adds.
    pub fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut isr = self.isr.clone();
        for r in self.pending_isr.iter().flatten() {
            if !isr.contains(r) {
                isr.push(*r);
            }
        }
        isr.sort_unstable();
        isr
    }

    pub fn follower(&self, id: BrokerId) -> Option<&FollowerState> {
        self.followers.get(&id)
    }

    /// The replicas or ISR changed under the same leader epoch (Kafka's
    /// `makeLeader` with an unchanged epoch, `updateAssignmentAndIsr`):
    /// followers still assigned keep their LEO and caught-up times, new
    /// ones start unknown and not caught up, removed ones are dropped; the
    /// controller's ISR replaces any pending change.
    pub fn on_assignment_updated(
        &mut self,
        now_ms: i64,
        log: LeaderLog,
        replicas: &[BrokerId],
        isr: &[BrokerId],
    ) -> IsrActions {
        let leader = self.leader_id;
        self.followers.retain(|id, _| replicas.contains(id));
        for r in replicas.iter().filter(|r| **r != leader) {
            let caught_up = if isr.contains(r) { now_ms } else { 0 };
            self.followers
                .entry(*r)
                .or_insert_with(|| FollowerState::fresh(caught_up));
        }
        self.isr = isr.to_vec();
        self.pending_isr = None;
        let actions = IsrActions {
            high_watermark_advanced: self.maybe_increment_hw(now_ms, log),
            propose_isr: None,
        };
        self.check_invariants();
        actions
    }

    /// The pending change was refused or not sent: forget it (the next
    /// check may propose again).
    pub fn on_isr_change_failed(&mut self) {
        self.pending_isr = None;
        self.check_invariants();
    }

    /// The controller refused `proposed` with `error` (Kafka's
    /// `Partition.handleAlterPartitionError`). An answer to a change that
    /// is no longer the pending one is ignored (a LeaderAndIsr replaced
    /// the state meanwhile, as Kafka's callback ignores a response when
    /// `partitionState != proposedIsrState`). True when `proposed` is to
    /// be sent again.
    pub fn on_isr_change_refused(&mut self, proposed: &[BrokerId], error: ErrorCode) -> bool {
        if self.pending_isr.as_deref() != Some(proposed) {
            return false;
        }
        match after_refusal(error) {
            AfterRefusal::Reset => {
                self.on_isr_change_failed();
                false
            }
            AfterRefusal::AwaitLeaderAndIsr => false,
            AfterRefusal::Resend => true,
        }
    }

    /// Record `isr` as in flight; it is what the caller sends.
    fn propose(&mut self, isr: Vec<BrokerId>) -> Option<Vec<BrokerId>> {
        self.pending_isr = Some(isr.clone());
        Some(isr)
    }

    /// The leader appended; its LEO moved.
    pub fn on_leader_append(&mut self, now_ms: i64, log: LeaderLog) -> IsrActions {
        let actions = IsrActions {
            high_watermark_advanced: self.maybe_increment_hw(now_ms, log),
            propose_isr: None,
        };
        self.check_invariants();
        actions
    }

    /// A follower fetched at `fetch_offset` (its LEO) and reported its
    /// log start offset (Kafka's `Replica.updateFetchStateOrThrow`): it is
    /// caught up now when it reached the leader's LEO, and was caught up at
    /// its previous fetch when it reached the LEO the leader had then.
    /// `leader_epoch_start_offset` is where the current leader epoch
    /// starts in the log: a follower joins the ISR (`maybeExpandIsr`,
    /// `isFollowerInSync`) only at or past both it and the HW.
    #[allow(clippy::too_many_arguments)]
    pub fn on_follower_fetch(
        &mut self,
        now_ms: i64,
        log: LeaderLog,
        follower: BrokerId,
        fetch_offset: Offset,
        log_start_offset: Offset,
        leader_epoch_start_offset: Offset,
    ) -> IsrActions {
        let leo = log.log_end_offset;
        let Some(f) = self.followers.get_mut(&follower) else {
            return IsrActions::default();
        };
        if fetch_offset >= leo {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_log_end_offset {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(f.last_fetch_time_ms);
        }
        f.log_end_offset = fetch_offset;
        f.log_start_offset = log_start_offset;
        f.last_fetch_leader_log_end_offset = leo;
        f.last_fetch_time_ms = now_ms;
        let joins = self.pending_isr.is_none()
            && !self.isr.contains(&follower)
            && (mutation::active(Mutation::IsrJoinBehindHw)
                || (fetch_offset >= log.high_watermark
                    && fetch_offset >= leader_epoch_start_offset));
        let propose_isr = if joins {
            let mut isr = self.isr.clone();
            isr.push(follower);
            isr.sort_unstable();
            self.propose(isr)
        } else {
            None
        };
        let actions = IsrActions {
            high_watermark_advanced: self.maybe_increment_hw(now_ms, log),
            propose_isr,
        };
        self.check_invariants();
        actions
    }

    /// maybeShrinkIsr: followers not caught up for `replica.lag.time.max.ms`
    /// leave the ISR (the leader never removes itself). A follower at the
    /// leader's LEO stays however long it has been silent (Kafka's
    /// `Replica.isCaughtUp`: `leaderEndOffset == logEndOffset` or caught up
    /// within the lag), so an idle partition keeps its ISR.
    pub fn maybe_shrink_isr(&mut self, now_ms: i64, leader_log_end_offset: Offset) -> IsrActions {
        if self.pending_isr.is_some() {
            return IsrActions::default();
        }
        let lag = self.replica_lag_time_max_ms;
        let out: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|r| *r != self.leader_id)
            .filter(|r| {
                self.followers.get(r).is_some_and(|f| {
                    f.log_end_offset != leader_log_end_offset
                        && now_ms - f.last_caught_up_time_ms > lag
                })
            })
            .collect();
        if out.is_empty() {
            return IsrActions::default();
        }
        let isr: Vec<BrokerId> = self
            .isr
            .iter()
            .copied()
            .filter(|r| !out.contains(r))
            .collect();
        let actions = IsrActions {
            high_watermark_advanced: None,
            propose_isr: self.propose(isr),
        };
        self.check_invariants();
        actions
    }

    /// The controller accepted an ISR (AlterPartition response / LeaderAndIsr).
    pub fn on_isr_committed(
        &mut self,
        now_ms: i64,
        log: LeaderLog,
        isr: &[BrokerId],
    ) -> IsrActions {
        self.isr = isr.to_vec();
        self.pending_isr = None;
        let actions = IsrActions {
            high_watermark_advanced: self.maybe_increment_hw(now_ms, log),
            propose_isr: None,
        };
        self.check_invariants();
        actions
    }

    /// `Some(new HW)` when the rule moves it past `log.high_watermark`
    /// (it never moves backwards, nor past the leader's LEO).
    fn maybe_increment_hw(&self, now_ms: i64, log: LeaderLog) -> Option<Offset> {
        let lag = self.replica_lag_time_max_ms;
        let min_follower = self
            .followers
            .iter()
            .filter(|(id, f)| {
                self.isr.contains(id)
                    || self.pending_isr.as_ref().is_some_and(|p| p.contains(id))
                    || now_ms - f.last_caught_up_time_ms <= lag
            })
            .map(|(_, f)| f.log_end_offset)
            .min();
        let leo = log.log_end_offset;
        let candidate = if mutation::active(Mutation::HwPastLaggingIsr) {
            leo
        } else {
            min_follower.map_or(leo, |m| m.min(leo))
        };
        (candidate > log.high_watermark).then_some(candidate)
    }

    pub fn check_invariants(&self) {
        debug_assert!(self.isr.contains(&self.leader_id) || self.isr.is_empty());
        debug_assert!(self
            .pending_isr
            .as_ref()
            .is_none_or(|p| p.contains(&self.leader_id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LAG: i64 = DEFAULT_REPLICA_LAG_TIME_MAX_MS;

    #[test]
    fn the_low_watermark_is_the_least_log_start_of_live_replicas() {
        let now = 1_000_000;
        let log = LeaderLog {
            log_end_offset: 50,
            high_watermark: 50,
        };
        let mut s = LeaderReplicaState::become_leader(
            BrokerId(0),
            &ids(&[0, 1, 2]),
            &ids(&[0, 1, 2]),
            LAG,
            now,
        );
        let all = |_: BrokerId| true;
        // Nobody fetched: unknown (-1) holds it.
        assert_eq!(s.low_watermark(30, all), -1);
        s.on_follower_fetch(now, log, BrokerId(1), 50, 30, 0);
        assert_eq!(s.low_watermark(30, all), -1, "broker 2 not heard from");
        s.on_follower_fetch(now, log, BrokerId(2), 50, 10, 0);
        assert_eq!(s.low_watermark(30, all), 10);
        s.on_follower_fetch(now, log, BrokerId(2), 50, 30, 0);
        assert_eq!(s.low_watermark(30, all), 30);
        assert_eq!(
            s.low_watermark(20, all),
            20,
            "the leader's own start counts"
        );
        // A dead broker's replica does not hold it back.
        s.on_follower_fetch(now, log, BrokerId(2), 50, 5, 0);
        assert_eq!(s.low_watermark(30, |b| b != BrokerId(2)), 30);
    }

    #[test]
    fn a_new_leader_is_not_held_back_by_a_follower_outside_the_isr() {
        let now = 1_000_000;
        let log = LeaderLog {
            log_end_offset: 5,
            high_watermark: 0,
        };
        let mut s =
            LeaderReplicaState::become_leader(BrokerId(0), &ids(&[0, 1]), &ids(&[0]), LAG, now);
        assert_eq!(
            s.on_leader_append(now, log).high_watermark_advanced,
            Some(5)
        );
        // Named by the ISR, the follower (LEO unknown) holds the HW.
        let mut s =
            LeaderReplicaState::become_leader(BrokerId(0), &ids(&[0, 1]), &ids(&[0, 1]), LAG, now);
        assert_eq!(s.on_leader_append(now, log).high_watermark_advanced, None);
    }
    type Step = Box<dyn Fn(&mut Leader) -> IsrActions>;

    fn ids(v: &[i32]) -> Vec<BrokerId> {
        v.iter().copied().map(BrokerId).collect()
    }

    /// The replica state beside a log that stores what it decides (as the
    /// partition does with its `PartitionLog`).
    struct Leader {
        state: LeaderReplicaState,
        log: LeaderLog,
    }

    impl Leader {
        #[allow(clippy::too_many_arguments)]
        fn new(
            leader: i32,
            replicas: &[i32],
            isr: &[i32],
            high_watermark: Offset,
            log_end_offset: Offset,
            lag: i64,
            now_ms: i64,
        ) -> Self {
            Self {
                state: LeaderReplicaState::new(
                    BrokerId(leader),
                    &ids(replicas),
                    &ids(isr),
                    lag,
                    now_ms,
                ),
                log: LeaderLog {
                    log_end_offset,
                    high_watermark: high_watermark.min(log_end_offset),
                },
            }
        }
        fn stored(&mut self, a: IsrActions) -> IsrActions {
            if let Some(hw) = a.high_watermark_advanced {
                assert!(hw > self.log.high_watermark && hw <= self.log.log_end_offset);
                self.log.high_watermark = hw;
            }
            a
        }
        fn on_leader_append(&mut self, now_ms: i64, leo: Offset) -> IsrActions {
            self.log.log_end_offset = leo;
            let a = self.state.on_leader_append(now_ms, self.log);
            self.stored(a)
        }
        fn on_follower_fetch(&mut self, now_ms: i64, f: i32, offset: Offset) -> IsrActions {
            let a = self
                .state
                .on_follower_fetch(now_ms, self.log, BrokerId(f), offset, 0, 0);
            self.stored(a)
        }
        fn maybe_shrink_isr(&mut self, now_ms: i64) -> IsrActions {
            self.state.maybe_shrink_isr(now_ms, self.log.log_end_offset)
        }
        fn on_isr_committed(&mut self, now_ms: i64, isr: &[i32]) -> IsrActions {
            let a = self.state.on_isr_committed(now_ms, self.log, &ids(isr));
            self.stored(a)
        }
        fn high_watermark(&self) -> Offset {
            self.log.high_watermark
        }
    }

    #[test]
    fn single_replica_hw_follows_the_leader_leo() {
        let mut s = Leader::new(1, &[1], &[1], 0, 0, LAG, 0);
        assert_eq!(s.on_leader_append(1, 10).high_watermark_advanced, Some(10));
        assert_eq!(s.high_watermark(), 10);
        assert_eq!(s.on_leader_append(2, 10).high_watermark_advanced, None);
    }

    #[test]
    fn hw_is_the_minimum_leo_of_the_isr() {
        // (event, expected HW) — Partition.maybeIncrementLeaderHW.
        let mut s = Leader::new(1, &[1, 2, 3], &[1, 2, 3], 0, 0, LAG, 0);
        let rows: Vec<(&str, Step, Offset)> = vec![
            (
                "leader appends, followers behind: HW stays",
                Box::new(|s| s.on_leader_append(1, 100)),
                0,
            ),
            (
                "one follower catches up: min is the other",
                Box::new(|s| s.on_follower_fetch(2, 2, 100)),
                0,
            ),
            (
                "second follower partly: HW = its LEO",
                Box::new(|s| s.on_follower_fetch(3, 3, 60)),
                60,
            ),
            (
                "second follower caught up: HW = leader LEO",
                Box::new(|s| s.on_follower_fetch(4, 3, 100)),
                100,
            ),
            (
                "a stale fetch never moves HW back",
                Box::new(|s| s.on_follower_fetch(5, 2, 50)),
                100,
            ),
        ];
        for (case, ev, want) in rows {
            ev(&mut s);
            assert_eq!(s.high_watermark(), want, "{case}");
        }
    }

    #[test]
    fn lagging_follower_is_proposed_out_of_the_isr() {
        let mut s = Leader::new(1, &[1, 2, 3], &[1, 2, 3], 0, 0, LAG, 0);
        s.on_leader_append(0, 10);
        s.on_follower_fetch(1, 2, 10);
        assert_eq!(
            s.maybe_shrink_isr(LAG).propose_isr,
            None,
            "exactly at the limit stays"
        );
        let a = s.maybe_shrink_isr(LAG + 1);
        assert_eq!(
            a.propose_isr,
            Some(ids(&[1, 2])),
            "3 never caught up within the lag"
        );
        // After the controller commits the shrink, HW advances past 3's LEO.
        let a = s.on_isr_committed(LAG + 2, &[1, 2]);
        assert_eq!(a.high_watermark_advanced, Some(10));
    }

    #[test]
    fn follower_rejoins_when_it_reaches_the_hw() {
        let mut s = Leader::new(1, &[1, 2], &[1], 0, 0, LAG, 0);
        s.on_leader_append(0, 20);
        assert_eq!(
            s.high_watermark(),
            0,
            "2 was caught up at start: it still counts"
        );
        let a = s.on_follower_fetch(LAG + 1, 2, 5);
        assert_eq!(a.propose_isr, Some(ids(&[1, 2])), "LEO 5 ≥ HW 0 → expand");
    }

    #[test]
    fn unknown_follower_fetch_changes_nothing() {
        let mut s = Leader::new(1, &[1], &[1], 0, 0, LAG, 0);
        assert_eq!(s.on_follower_fetch(0, 9, 100), IsrActions::default());
    }

    #[test]
    fn a_follower_at_the_previous_fetchs_leo_was_caught_up_then() {
        // Replica.updateFetchStateOrThrow: fetch at t=10 while the leader
        // LEO is 20; the leader appends to 30; the next fetch at t=50
        // reaches 20 (the LEO of the previous fetch) → caught up at t=10.
        let mut s = Leader::new(1, &[1, 2], &[1, 2], 0, 20, LAG, 0);
        s.on_follower_fetch(10, 2, 15);
        s.on_leader_append(20, 30);
        s.on_follower_fetch(50, 2, 20);
        let f = *s.state.follower(BrokerId(2)).unwrap();
        assert_eq!(f.last_caught_up_time_ms, 10);
        assert_eq!(f.last_fetch_leader_log_end_offset, 30);
        assert_eq!(f.last_fetch_time_ms, 50);
        // Short of both LEOs: no credit.
        s.on_follower_fetch(60, 2, 25);
        assert_eq!(
            s.state
                .follower(BrokerId(2))
                .unwrap()
                .last_caught_up_time_ms,
            10
        );
        // Reaching the current LEO: caught up now.
        s.on_follower_fetch(70, 2, 30);
        assert_eq!(
            s.state
                .follower(BrokerId(2))
                .unwrap()
                .last_caught_up_time_ms,
            70
        );
    }

    #[test]
    fn while_a_change_is_pending_nothing_else_is_proposed() {
        let mut s = Leader::new(1, &[1, 2, 3], &[1], 0, 10, LAG, 0);
        let a = s.on_follower_fetch(1, 2, 10);
        assert_eq!(a.propose_isr, Some(ids(&[1, 2])));
        assert_eq!(s.state.pending_isr(), Some(&ids(&[1, 2])[..]));
        // 3 also qualifies, but one change is in flight.
        assert_eq!(s.on_follower_fetch(2, 3, 10).propose_isr, None);
        assert_eq!(s.maybe_shrink_isr(LAG * 10).propose_isr, None);
        // Refused: the next fetch proposes again.
        s.state.on_isr_change_failed();
        assert_eq!(s.state.pending_isr(), None);
        assert_eq!(
            s.on_follower_fetch(3, 3, 10).propose_isr,
            Some(ids(&[1, 3]))
        );
        s.on_isr_committed(4, &[1, 3]);
        assert_eq!(s.state.pending_isr(), None);
        assert_eq!(s.state.isr(), &ids(&[1, 3])[..]);
    }

    #[test]
    fn a_pending_expand_holds_the_hw_at_the_joining_replica() {
        // Leader LEO 10, follower 2 out of the ISR and long past the lag.
        let mut s = Leader::new(1, &[1, 2], &[1], 0, 10, LAG, 0);
        let now = LAG * 3;
        s.on_leader_append(now, 10);
        assert_eq!(s.high_watermark(), 10);
        s.on_leader_append(now, 20);
        assert_eq!(s.high_watermark(), 20);
        // 2 reaches the HW: expand proposed; while pending, 2 counts.
        let a = s.on_follower_fetch(now, 2, 20);
        assert_eq!(a.propose_isr, Some(ids(&[1, 2])));
        s.on_leader_append(now + 1, 30);
        assert_eq!(s.state.maximal_isr(), ids(&[1, 2]));
        assert_eq!(s.high_watermark(), 20, "2 is at 20: maximal ISR holds it");
    }

    #[test]
    fn a_silent_follower_at_the_leo_stays_in_the_isr() {
        let mut s = Leader::new(1, &[1, 2], &[1, 2], 0, 10, LAG, 0);
        s.on_follower_fetch(1, 2, 10);
        assert_eq!(
            s.maybe_shrink_isr(LAG * 5).propose_isr,
            None,
            "idle, at the LEO"
        );
        s.on_leader_append(LAG * 5, 11);
        assert_eq!(
            s.maybe_shrink_isr(LAG * 5 + 1).propose_isr,
            Some(ids(&[1])),
            "behind and not caught up within the lag"
        );
    }

    #[test]
    fn a_pending_shrink_still_counts_the_leaving_replica() {
        let mut s = Leader::new(1, &[1, 2], &[1, 2], 0, 10, LAG, 0);
        assert_eq!(s.maybe_shrink_isr(LAG + 1).propose_isr, Some(ids(&[1])));
        s.on_leader_append(LAG + 2, 20);
        assert_eq!(s.high_watermark(), 0, "2 still in the committed ISR");
        s.on_isr_committed(LAG + 3, &[1]);
        assert_eq!(s.high_watermark(), 20);
    }

    #[test]
    fn a_fenced_expansion_stays_pending_and_holds_the_hw() {
        // The controller wrote the expansion but its answer was lost; the
        // resend is fenced (a new leader epoch this leader has not heard
        // of). The joining replica may be in ZooKeeper's ISR: until a
        // LeaderAndIsr comes, the HW keeps counting it, or a record only
        // the old ISR holds would count as committed.
        let mut s = Leader::new(1, &[1, 2, 3], &[1, 3], 0, 10, LAG, 0);
        s.on_follower_fetch(1, 3, 10);
        let proposed = s.on_follower_fetch(2, 2, 10).propose_isr.unwrap();
        assert_eq!(proposed, ids(&[1, 2, 3]));
        let resend = s
            .state
            .on_isr_change_refused(&proposed, ErrorCode::FENCED_LEADER_EPOCH);
        assert!(!resend);
        assert_eq!(s.state.pending_isr(), Some(&proposed[..]));
        // 2 stops fetching (it follows the new leader); 3 keeps up.
        s.on_leader_append(LAG * 3, 20);
        s.on_follower_fetch(LAG * 3, 3, 20);
        assert_eq!(s.high_watermark(), 10, "2 is in the maximal ISR at 10");
        assert_eq!(
            s.maybe_shrink_isr(LAG * 4).propose_isr,
            None,
            "nothing while pending"
        );
        // A refusal of another change than the pending one changes nothing.
        assert!(!s
            .state
            .on_isr_change_refused(&ids(&[1]), ErrorCode::OPERATION_NOT_ATTEMPTED));
        assert_eq!(s.state.pending_isr(), Some(&proposed[..]));
        // The controller's LeaderAndIsr replaces it.
        let log = s.log;
        s.state
            .on_assignment_updated(LAG * 4, log, &ids(&[1, 2, 3]), &ids(&[1, 3]));
        assert_eq!(s.state.pending_isr(), None);
    }

    #[test]
    fn a_change_not_attempted_is_dropped_other_errors_resend_it() {
        let mut s = Leader::new(1, &[1, 2], &[1, 2], 0, 10, LAG, 0);
        let shrink = s.maybe_shrink_isr(LAG + 1).propose_isr.unwrap();
        assert!(s
            .state
            .on_isr_change_refused(&shrink, ErrorCode::REQUEST_TIMED_OUT));
        assert_eq!(
            s.state.pending_isr(),
            Some(&shrink[..]),
            "kept for the resend"
        );
        assert!(!s
            .state
            .on_isr_change_refused(&shrink, ErrorCode::OPERATION_NOT_ATTEMPTED));
        assert_eq!(s.state.pending_isr(), None);
        assert_eq!(s.maybe_shrink_isr(LAG + 2).propose_isr, Some(shrink));
    }

    #[test]
    fn expansion_waits_for_the_leader_epoch_start_offset() {
        let mut s = Leader::new(1, &[1, 2], &[1], 0, 10, LAG, 0);
        let log = s.log;
        let a = s.state.on_follower_fetch(1, log, BrokerId(2), 5, 0, 8);
        assert_eq!(a.propose_isr, None, "LEO 5 < epoch start 8");
        let a = s.state.on_follower_fetch(2, log, BrokerId(2), 8, 0, 8);
        assert_eq!(a.propose_isr, Some(ids(&[1, 2])));
    }

    #[test]
    fn an_assignment_update_keeps_follower_progress() {
        let mut s = Leader::new(1, &[1, 2, 3], &[1, 2, 3], 0, 10, LAG, 0);
        s.on_follower_fetch(5, 2, 10);
        s.on_follower_fetch(6, 3, 4);
        let log = s.log;
        let a = s
            .state
            .on_assignment_updated(LAG * 2, log, &ids(&[1, 2, 3, 4]), &ids(&[1, 2]));
        assert_eq!(
            a.high_watermark_advanced,
            Some(10),
            "ISR 1 and 2 both at 10; 3 lags past the lag time"
        );
        let f2 = *s.state.follower(BrokerId(2)).unwrap();
        assert_eq!((f2.log_end_offset, f2.last_caught_up_time_ms), (10, 5));
        assert_eq!(s.state.follower(BrokerId(3)).unwrap().log_end_offset, 4);
        let f4 = *s.state.follower(BrokerId(4)).unwrap();
        assert_eq!((f4.log_end_offset, f4.last_caught_up_time_ms), (0, 0));
        s.state
            .on_assignment_updated(8, log, &ids(&[1, 2]), &ids(&[1, 2]));
        assert!(s.state.follower(BrokerId(3)).is_none());
    }
}
