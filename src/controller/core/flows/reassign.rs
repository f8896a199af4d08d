//! `[pure]` Partition reassignment (KIP-455; Kafka 3.9
//! `KafkaController.onPartitionReassignment` and its helpers) as flows of
//! the controller core: AlterPartitionReassignments, the legacy
//! `/admin/reassign_partitions` znode, the completion check after an ISR
//! change, and the moves resumed on failover and when a target broker
//! starts. What a request comes to is decided by `controller::reassignment`.
//!
//! The steps, for RS = TRS ∪ OAR, AR = RS − OAR, RR = RS − TRS:
//! 1. `/brokers/topics/<t>` gets RS with AR and RR (`updateCurrentReassignment`;
//!    replicas a superseded move had added and no longer needs are stopped);
//! 2. until every TRS replica is in the ISR: the leader epoch is bumped and
//!    LeaderAndIsr (with RS, AR, RR) goes to every replica; AR replicas
//!    become NewReplica (they start following);
//! 3. once the ISR holds TRS (checked after each ISR change the controller
//!    writes): AR replicas go Online, the assignment becomes TRS, the
//!    leader moves to a TRS replica if it is not one (else the epoch is
//!    bumped), RR replicas go Offline (out of the ISR) and are deleted,
//!    `/brokers/topics/<t>` gets TRS with no AR/RR, the partition leaves
//!    `/admin/reassign_partitions`, and every broker gets UpdateMetadata.

use std::collections::{BTreeMap, BTreeSet};

use super::super::{ControllerAction, ControllerCore};
use super::steps::{End, Next, Step, Steps, ZkRemoval};
use crate::controller::context::ControllerContext;
use crate::controller::reassignment::{self, Refusal, ReplicaAssignment};
use crate::controller::state_machine::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};

/// Per partition asked, NONE or why not; or NOT_CONTROLLER.
pub type ReassignAnswer = Result<BTreeMap<TopicPartition, Result<(), Refusal>>, ErrorCode>;

/// A reassignment request: per partition the target replicas, `None` to
/// cancel.
pub type ReassignAsk = BTreeMap<TopicPartition, Option<Vec<BrokerId>>>;

/// Which moves resume (`maybeResumeReassignments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeWhich {
    /// Those with a target replica among these (brokers that started).
    TargetOn(BTreeSet<BrokerId>),
    /// Every one but these (on failover, after the ZooKeeper requests).
    AllBut(BTreeSet<TopicPartition>),
}

impl ControllerCore {
    /// `processApiPartitionReassignment`: refused partitions answered, the
    /// others started (or cancelled) one after the other; a partition
    /// asked here leaves the ZooKeeper reassignment (the latest request
    /// wins). Ends with [`ControllerAction::AnswerAlterReassignments`].
    pub(in crate::controller::core) fn on_alter_reassignments(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        asked: ReassignAsk,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            let answer = Err(ErrorCode::NOT_CONTROLLER);
            return vec![ControllerAction::AnswerAlterReassignments { token, answer }];
        };
        let plan = reassignment::plan(ctx, &asked, true);
        let starting: BTreeSet<TopicPartition> = plan.start.keys().cloned().collect();
        let mut steps = vec![Step::DropFromZk(ZkRemoval::Partitions(starting))];
        steps.extend(plan.start.into_iter().map(|(tp, a)| Step::Reassign(tp, a)));
        let s = with_refused(steps, End::AnswerAlter, plan.refused);
        self.start_steps(Some(ctx), token, s)
    }

    /// `processZkPartitionReassignment`: each partition
    /// `/admin/reassign_partitions` names (as read) is reassigned, without
    /// validation as Kafka does; the refused and failed ones are taken out
    /// of it. Ends with [`ControllerAction::ZkReassigned`].
    pub(in crate::controller::core) fn on_zk_reassignment(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        asked: Vec<(TopicPartition, Vec<BrokerId>)>,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            let started = BTreeSet::new();
            return vec![ControllerAction::ZkReassigned { token, started }];
        };
        let asked: ReassignAsk = asked.into_iter().map(|(tp, r)| (tp, Some(r))).collect();
        let plan = reassignment::plan(ctx, &asked, false);
        let mut steps: Vec<Step> = plan
            .start
            .into_iter()
            .map(|(tp, a)| Step::Reassign(tp, a))
            .collect();
        steps.push(Step::DropFailedFromZk);
        let s = with_refused(steps, End::Zk, plan.refused);
        self.start_steps(Some(ctx), token, s)
    }

    /// After an ISR change the controller wrote: the partition's move
    /// completes if its ISR now holds every target replica (Kafka 3.9
    /// `processAlterPartition`'s check, after the answer went back). Ends
    /// with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_reassignment_isr_change(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        tp: TopicPartition,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let a = reassignment::full_assignment(ctx, &tp);
        let complete = ctx
            .leadership
            .get(&tp)
            .is_some_and(|l| reassignment::is_complete(&a, &l.leader_isr.isr));
        let mut steps = Vec::new();
        if a.is_being_reassigned() && complete {
            tracing::info!(partition = %tp, target = ?a.target(), "target replicas caught up with the leader");
            steps.push(Step::Reassign(tp, a));
        }
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `maybeResumeReassignments`: the moves `which` picks go through
    /// `onPartitionReassignment` again. Ends with
    /// [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_resume_reassignments(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        which: ResumeWhich,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let steps = resume_steps(ctx, &which);
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `maybeResumeReassignments` as a sub-flow of `token`.
    pub(in crate::controller::core) fn resume_reassignments_of(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        which: ResumeWhich,
    ) -> Vec<ControllerAction> {
        let steps = resume_steps(ctx, &which);
        self.sub_steps(ctx, token, Steps::new(steps, End::Flow))
    }

    /// A reassignment step (those that need only the context).
    pub(super) fn reassign_step(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        step: Step,
    ) -> Next {
        match step {
            Step::UpdateCurrent(tp, a) => Next::Go(update_current(ctx, tp, a)),
            Step::Proceed(tp, a) => Next::Go(proceed(ctx, tp, a)),
            Step::StartAdding(tp, adding) => {
                let new: Vec<(TopicPartition, BrokerId)> = adding
                    .iter()
                    .filter(|r| ctx.replica_states.get(&tp, **r) == ReplicaState::NonExistent)
                    .map(|r| (tp.clone(), *r))
                    .collect();
                Next::Go(vec![Step::Replicas(new, ReplicaState::New), Step::Send])
            }
            Step::SetAssignment(tp, a) => {
                reassignment::set_full_assignment(ctx, &tp, a);
                Next::Go(Vec::new())
            }
            Step::StopRemoved(tp, removed) => Next::Go(stop_removed(&tp, &removed)),
            Step::Completed(tp, target) => {
                tracing::info!(partition = %tp, replicas = ?target, "reassignment completed");
                // resumeDeletionForTopics: a deletion that waited for the move.
                let waiting = ctx.topics_to_delete.contains(&*tp.topic)
                    && !ctx.reassignments.keys().any(|t| t.topic == tp.topic);
                if !waiting {
                    return Next::Go(Vec::new());
                }
                ctx.ineligible_for_deletion.remove(&*tp.topic);
                Next::Go(vec![Step::ResumeDeletions])
            }
            Step::DropFailedFromZk => {
                let failed: BTreeSet<TopicPartition> = match self.flows.get(&token) {
                    Some(super::Flow::Steps(s)) => s
                        .results
                        .iter()
                        .filter(|(_, r)| r.is_err())
                        .map(|(tp, _)| tp.clone())
                        .collect(),
                    _ => BTreeSet::new(),
                };
                if failed.is_empty() {
                    return Next::Go(Vec::new());
                }
                tracing::warn!(partitions = ?failed, "reassignments through ZooKeeper refused");
                Next::Go(vec![Step::DropFromZk(ZkRemoval::Partitions(failed))])
            }
            other => {
                tracing::error!(step = ?other, "controller step out of place");
                Next::Fail((ErrorCode::UNKNOWN_SERVER_ERROR, "step out of place".into()))
            }
        }
    }
}

/// A request's steps, its refused partitions already answered.
fn with_refused(steps: Vec<Step>, end: End, refused: BTreeMap<TopicPartition, Refusal>) -> Steps {
    let mut s = Steps::new(steps, end);
    s.results = refused.into_iter().map(|(tp, e)| (tp, Err(e))).collect();
    s
}

/// The moves `which` picks, each as a [`Step::Reassign`].
fn resume_steps(ctx: &ControllerContext, which: &ResumeWhich) -> Vec<Step> {
    ctx.reassignments
        .keys()
        .map(|tp| (tp.clone(), reassignment::full_assignment(ctx, tp)))
        .filter(|(tp, a)| match which {
            ResumeWhich::TargetOn(brokers) => a.target().iter().any(|r| brokers.contains(r)),
            ResumeWhich::AllBut(started) => !started.contains(tp),
        })
        .map(|(tp, a)| {
            tracing::info!(partition = %tp, target = ?a.target(), "resuming a reassignment");
            Step::Reassign(tp, a)
        })
        .collect()
}

/// `updateCurrentReassignment`: the new full assignment in memory and in
/// ZooKeeper (put back if the write fails); replicas of the previous one
/// it no longer has are stopped. Then the phase the ISR calls for.
fn update_current(
    ctx: &mut ControllerContext,
    tp: TopicPartition,
    a: ReplicaAssignment,
) -> Vec<Step> {
    let current = reassignment::full_assignment(ctx, &tp);
    let mut steps = Vec::new();
    if current != a {
        reassignment::set_full_assignment(ctx, &tp, a.clone());
        let unneeded: Vec<BrokerId> = current
            .replicas
            .iter()
            .copied()
            .filter(|r| !a.replicas.contains(r))
            .collect();
        steps.push(Step::WriteAssignment {
            topic: tp.topic.to_string(),
            revert: Some((tp.clone(), current)),
        });
        if !unneeded.is_empty() {
            steps.push(Step::StopRemoved(tp.clone(), unneeded));
        }
    }
    steps.push(Step::Proceed(tp, a));
    steps
}

/// Phase A (the ISR lacks a target replica: epoch bumped, AR started) or
/// phase B (the move completes), by the ISR as it is now.
fn proceed(ctx: &ControllerContext, tp: TopicPartition, a: ReplicaAssignment) -> Vec<Step> {
    let isr = ctx
        .leadership
        .get(&tp)
        .map(|l| l.leader_isr.isr.clone())
        .unwrap_or_default();
    if !reassignment::is_complete(&a, &isr) {
        // A1: the leader epoch bumped, every replica told RS/AR/RR;
        // A2: AR replicas not yet started become NewReplica.
        return vec![
            Step::BumpEpoch(tp.clone(), 0),
            Step::StartAdding(tp, a.adding),
        ];
    }
    let target = a.target();
    let adding: Vec<(TopicPartition, BrokerId)> =
        a.adding.iter().map(|r| (tp.clone(), *r)).collect();
    vec![
        // B1: AR replicas online.
        Step::Replicas(adding, ReplicaState::Online),
        Step::Send,
        // B2: RS = TRS in memory.
        Step::SetAssignment(tp.clone(), ReplicaAssignment::settled(target.clone())),
        // B3: the leader among TRS.
        Step::MoveLeader(tp.clone()),
        // B4, B5: RR replicas out of the ISR, stopped and deleted.
        Step::StopRemoved(tp.clone(), a.removing),
        // B6: the final assignment in ZooKeeper.
        Step::WriteAssignment {
            topic: tp.topic.to_string(),
            revert: None,
        },
        // B7: out of the legacy znode.
        Step::DropFromZk(ZkRemoval::Completed(tp.clone(), target.clone())),
        // B8: every broker learns the new replicas and ISR.
        Step::Tell(vec![tp.clone()]),
        Step::Send,
        Step::Completed(tp, target),
    ]
}

/// `stopRemovedReplicasOfReassignedPartition`: Offline (out of the ISR),
/// deletion started (StopReplica with delete), deleted, non-existent;
/// each step's requests sent before the next.
fn stop_removed(tp: &TopicPartition, removed: &[BrokerId]) -> Vec<Step> {
    if removed.is_empty() {
        return Vec::new();
    }
    let replicas: Vec<(TopicPartition, BrokerId)> =
        removed.iter().map(|r| (tp.clone(), *r)).collect();
    [
        ReplicaState::Offline,
        ReplicaState::DeletionStarted,
        ReplicaState::DeletionSuccessful,
        ReplicaState::NonExistent,
    ]
    .into_iter()
    .flat_map(|target| [Step::Replicas(replicas.clone(), target), Step::Send])
    .collect()
}

#[cfg(test)]
mod tests;
