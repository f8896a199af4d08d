//! `[pure]` Flows written as a queue of steps: topic deletion (`deletion`),
//! partition reassignment (`reassign`) and some notifications (`watches`). A step either acts at once on
//! the context, expands into the steps it stands for (computed from the
//! context as it is when its turn comes, as Kafka computes each stage of
//! `TopicDeletionManager.onTopicDeletion` or
//! `KafkaController.onPartitionReassignment` after the previous one), or
//! waits: for a state change of the core run as a sub-job, for the
//! driver to send the batch or do a znode write, or for another flow of
//! steps (one partition's reassignment, run as a sub-flow).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::super::{ControllerAction, ControllerCore, ElectionKind, WriteFailure};
use super::Flow;
use crate::controller::context::{ControllerContext, Leadership};
use crate::controller::reassignment::{self, Refusal, ReplicaAssignment};
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, PartitionEpoch, TopicPartition};

/// One step of a flow.
#[derive(Debug, Clone)]
pub(in crate::controller::core) enum Step {
    /// The replica state machine, as a sub-job.
    Replicas(Vec<(TopicPartition, BrokerId)>, ReplicaState),
    /// The partition state machine (no election: Offline, NonExistent),
    /// as a sub-job.
    Partitions(Vec<TopicPartition>, PartitionState),
    /// Send the batch and wait for it.
    Send,
    /// UpdateMetadata for every partition of these topics (as the
    /// context has them then) to the registered brokers.
    TellTopics(Vec<String>),
    /// UpdateMetadata for these partitions (if any) to the registered
    /// brokers.
    Tell(Vec<TopicPartition>),
    /// These state znodes re-read into the context.
    Reread(Vec<TopicPartition>),
    // ----- topic deletion (`deletion`) -----
    /// Remove these topics' `/admin/delete_topics` markers.
    DropMarkers(Vec<String>),
    /// `resumeDeletions`.
    ResumeDeletions,
    /// `completeDeleteTopic`: its deleted replicas NonExistent, then its
    /// znodes removed.
    CompleteDeletion(String),
    RemoveTopicZnodes(String),
    /// `retryDeletionForIneligibleReplicas`.
    RetryDeletion(Vec<String>),
    /// `onTopicDeletion`.
    DeleteTopics(Vec<String>),
    /// `startReplicaDeletion`.
    StartReplicaDeletion(Vec<String>),
    /// Topics marked ineligible for deletion.
    Ineligible(Vec<String>),
    // ----- partition reassignment (`reassign`) -----
    /// `onPartitionReassignment` of one partition, as a sub-flow whose
    /// result the flow keeps.
    Reassign(TopicPartition, ReplicaAssignment),
    /// `updateCurrentReassignment`.
    UpdateCurrent(TopicPartition, ReplicaAssignment),
    /// `/brokers/topics/<t>` written from the context; on failure the
    /// partition's assignment goes back to `revert` and the flow fails.
    WriteAssignment {
        topic: String,
        revert: Option<(TopicPartition, ReplicaAssignment)>,
    },
    /// Phase A or B of `onPartitionReassignment`, by the ISR.
    Proceed(TopicPartition, ReplicaAssignment),
    /// `updateLeaderEpochAndSendRequest`, at its attempt.
    BumpEpoch(TopicPartition, u8),
    /// The adding replicas not yet started become NewReplica.
    StartAdding(TopicPartition, Vec<BrokerId>),
    SetAssignment(TopicPartition, ReplicaAssignment),
    /// `moveReassignedPartitionLeaderIfRequired`.
    MoveLeader(TopicPartition),
    /// `stopRemovedReplicasOfReassignedPartition`.
    StopRemoved(TopicPartition, Vec<BrokerId>),
    /// `maybeRemoveFromZkReassignment`.
    DropFromZk(ZkRemoval),
    /// The move is over: a deletion that waited for it resumes.
    Completed(TopicPartition, Vec<BrokerId>),
    /// The ZooKeeper request's refused and failed partitions leave it.
    DropFailedFromZk,
}

/// Which partitions leave `/admin/reassign_partitions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkRemoval {
    Partitions(BTreeSet<TopicPartition>),
    /// A partition whose listed target is these replicas (the move done).
    Completed(TopicPartition, Vec<BrokerId>),
}

impl ZkRemoval {
    pub fn removes(&self, tp: &TopicPartition, replicas: &[BrokerId]) -> bool {
        match self {
            Self::Partitions(set) => set.contains(tp),
            Self::Completed(done, target) => tp == done && replicas == target.as_slice(),
        }
    }
}

/// How a flow of steps ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::controller::core) enum End {
    /// [`ControllerAction::FlowDone`].
    Flow,
    /// [`ControllerAction::Reassigned`] with the outcome.
    Reassigned,
    /// [`ControllerAction::AnswerAlterReassignments`].
    AnswerAlter,
    /// [`ControllerAction::ZkReassigned`].
    Zk,
}

/// A flow of steps under way.
#[derive(Debug)]
pub(in crate::controller::core) struct Steps {
    pub(super) steps: VecDeque<Step>,
    pub(super) end: End,
    /// The partition a sub-flow is reassigning, and each one's outcome.
    pub(super) moving: Option<TopicPartition>,
    pub(super) results: BTreeMap<TopicPartition, Result<(), Refusal>>,
    /// What a step waits for, when it is not a sub-job or a send.
    pub(super) waiting: Waiting,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Waiting {
    Nothing,
    /// A leader epoch bump's write (partition, state, attempt).
    Bump(
        TopicPartition,
        crate::controller::leader_election::LeaderIsr,
        u8,
    ),
    /// The bump's partition re-read, then the next attempt.
    Reload(TopicPartition),
    /// State znodes re-read ([`Step::Reread`]).
    Reread,
    /// An assignment write, with what to put back if it failed.
    Assignment(Option<(TopicPartition, ReplicaAssignment)>),
}

impl Steps {
    pub(super) fn new(steps: impl IntoIterator<Item = Step>, end: End) -> Self {
        Self {
            steps: steps.into_iter().collect(),
            end,
            moving: None,
            results: BTreeMap::new(),
            waiting: Waiting::Nothing,
        }
    }
}

impl ControllerCore {
    /// Start flow `token` with `steps`.
    pub(in crate::controller::core) fn start_steps(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        steps: Steps,
    ) -> Vec<ControllerAction> {
        self.flows.insert(token, Flow::Steps(steps));
        self.run_steps(ctx, token)
    }

    /// A sub-flow of `token` running `steps`.
    pub(in crate::controller::core) fn sub_steps(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        steps: Steps,
    ) -> Vec<ControllerAction> {
        let sub = self.sub_for(token);
        self.start_steps(Some(ctx), sub, steps)
    }

    /// Flow `token` resumed: a sub-job or sub-flow ended with `verdict`,
    /// or the driver did what it asked.
    pub(in crate::controller::core) fn resume_steps(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        verdict: Option<&ControllerAction>,
    ) -> Vec<ControllerAction> {
        let Some(Flow::Steps(s)) = self.flows.get_mut(&token) else {
            return Vec::new();
        };
        match verdict {
            Some(ControllerAction::Reassigned { result, .. }) => {
                if let Some(tp) = s.moving.take() {
                    if let Err((code, msg)) = result {
                        tracing::warn!(partition = %tp, error = %code, %msg, "reassigning");
                    }
                    s.results.insert(tp, result.clone());
                }
            }
            Some(ControllerAction::Elected {
                elected, failed, ..
            }) if elected.is_empty() => {
                for (tp, why) in failed {
                    tracing::warn!(partition = %tp, ?why, "no target replica could lead the reassigned partition");
                }
            }
            _ => {}
        }
        self.run_steps(ctx, token)
    }

    /// The steps of flow `token` until one waits, or its end.
    pub(in crate::controller::core) fn run_steps(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return self.end_steps(None, token, Some(not_controller()));
        };
        let mut actions = Vec::new();
        loop {
            let Some(Flow::Steps(s)) = self.flows.get_mut(&token) else {
                return actions;
            };
            let Some(step) = s.steps.pop_front() else {
                actions.extend(self.end_steps(Some(ctx), token, None));
                return actions;
            };
            match self.step(ctx, token, step) {
                Next::Go(more) => {
                    if let Some(Flow::Steps(s)) = self.flows.get_mut(&token) {
                        for st in more.into_iter().rev() {
                            s.steps.push_front(st);
                        }
                    }
                }
                Next::Act(more) => actions.extend(more),
                Next::Wait(more) => {
                    actions.extend(more);
                    return actions;
                }
                Next::Fail(why) => {
                    actions.extend(self.end_steps(Some(ctx), token, Some(why)));
                    return actions;
                }
            }
        }
    }

    /// One step.
    fn step(&mut self, ctx: &mut ControllerContext, token: u64, step: Step) -> Next {
        match step {
            Step::Replicas(replicas, target) => {
                let sub = self.sub_for(token);
                Next::Wait(self.on_replicas_to(Some(ctx), sub, replicas, target))
            }
            Step::Partitions(parts, target) => {
                let sub = self.sub_for(token);
                let kind = ElectionKind::Offline;
                Next::Wait(self.on_partitions_to(Some(ctx), sub, parts, target, kind, false))
            }
            Step::Send => Next::Wait(vec![ControllerAction::SendBatch { token }]),
            Step::TellTopics(topics) => {
                let parts = topics.iter().flat_map(|t| ctx.partitions_of(t)).collect();
                Next::Act(vec![tell(ctx, parts)])
            }
            Step::Tell(parts) if parts.is_empty() => Next::Go(Vec::new()),
            Step::Tell(parts) => Next::Act(vec![tell(ctx, parts)]),
            Step::Reread(parts) if parts.is_empty() => Next::Go(Vec::new()),
            Step::Reread(parts) => {
                self.wait_for(token, Waiting::Reread);
                Next::Wait(vec![ControllerAction::ReloadLeaderships {
                    job: token,
                    parts,
                }])
            }
            Step::Ineligible(topics) => {
                ctx.ineligible_for_deletion.extend(topics);
                Next::Go(Vec::new())
            }
            Step::Reassign(tp, a) => {
                tracing::info!(partition = %tp, replicas = ?a.replicas, adding = ?a.adding, removing = ?a.removing, "reassigning");
                if let Some(Flow::Steps(s)) = self.flows.get_mut(&token) {
                    s.moving = Some(tp.clone());
                }
                let sub = Steps::new([Step::UpdateCurrent(tp, a)], End::Reassigned);
                Next::Wait(self.sub_steps(ctx, token, sub))
            }
            Step::BumpEpoch(tp, attempt) => self.bump_epoch(ctx, token, tp, attempt),
            Step::WriteAssignment { topic, revert } => {
                let Some(znode) = reassignment::topic_znode(ctx, &topic) else {
                    return Next::Go(Vec::new());
                };
                self.wait_for(token, Waiting::Assignment(revert));
                Next::Wait(vec![ControllerAction::WriteTopicAssignment {
                    token,
                    topic,
                    znode,
                }])
            }
            Step::DropFromZk(remove) => {
                Next::Wait(vec![ControllerAction::RemoveFromZkReassignment {
                    token,
                    remove,
                }])
            }
            Step::MoveLeader(tp) => self.move_leader(ctx, token, tp),
            deletion @ (Step::DropMarkers(_)
            | Step::ResumeDeletions
            | Step::CompleteDeletion(_)
            | Step::RemoveTopicZnodes(_)
            | Step::RetryDeletion(_)
            | Step::DeleteTopics(_)
            | Step::StartReplicaDeletion(_)) => self.deletion_step(ctx, token, deletion),
            other => self.reassign_step(ctx, token, other),
        }
    }

    /// `updateLeaderEpochAndSendRequest`: the same leader and ISR in the
    /// next leader epoch, written behind the partition epoch.
    fn bump_epoch(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        tp: TopicPartition,
        attempt: u8,
    ) -> Next {
        let Some(cur) = ctx.leadership.get(&tp) else {
            // No state znode yet (a partition still New): nothing to bump.
            return Next::Go(Vec::new());
        };
        let next = crate::controller::leader_election::LeaderIsr {
            leader_epoch: crate::types::LeaderEpoch(
                cur.leader_isr.leader_epoch.0.saturating_add(1),
            ),
            ..cur.leader_isr.clone()
        };
        self.wait_for(token, Waiting::Bump(tp.clone(), next.clone(), attempt));
        Next::Wait(vec![ControllerAction::WriteLeaderships {
            token,
            writes: vec![(tp, next)],
        }])
    }

    /// `moveReassignedPartitionLeaderIfRequired` (the assignment is the
    /// target now): a leader outside it, or offline, is replaced by the
    /// first target replica live and in the ISR; a live leader inside it
    /// gets the next epoch so every replica learns the new replica set.
    fn move_leader(&mut self, ctx: &mut ControllerContext, token: u64, tp: TopicPartition) -> Next {
        let Some(leader) = ctx.leadership.get(&tp).map(|l| l.leader_isr.leader) else {
            return Next::Go(Vec::new());
        };
        if ctx.replicas(&tp).contains(&leader) && ctx.live().contains(&leader) {
            return Next::Go(vec![Step::BumpEpoch(tp, 0)]);
        }
        self.push_front(token, [Step::Send]);
        let sub = self.sub_for(token);
        let default_unclean = false;
        Next::Wait(self.on_elect(
            Some(ctx),
            sub,
            vec![tp],
            ElectionKind::Reassign,
            default_unclean,
        ))
    }

    /// A bump's write done: taken and told, re-read and tried again, or
    /// the flow failed.
    pub(in crate::controller::core) fn on_steps_written(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        token: u64,
        results: Vec<Result<PartitionEpoch, WriteFailure>>,
    ) -> Vec<ControllerAction> {
        let Waiting::Bump(tp, next, attempt) = self.take_waiting(token) else {
            return Vec::new();
        };
        match results.into_iter().next() {
            Some(Ok(version)) => {
                let mut actions = Vec::new();
                if let Some(ctx) = ctx.as_deref_mut() {
                    let written = crate::controller::leader_election::LeaderIsr {
                        partition_epoch: version,
                        ..next
                    };
                    ctx.put_leadership(tp.clone(), written);
                    actions.push(ControllerAction::LeaderAndIsr {
                        recipients: ctx.replicas(&tp).to_vec(),
                        partition: tp,
                        is_new: false,
                    });
                    self.push_front(token, [Step::Send]);
                }
                actions.extend(self.run_steps(ctx, token));
                actions
            }
            Some(Err(WriteFailure::BadVersion(_))) if attempt == 0 => {
                self.wait_for(token, Waiting::Reload(tp.clone()));
                vec![ControllerAction::ReloadLeaderships {
                    job: token,
                    parts: vec![tp],
                }]
            }
            Some(Err(e)) => self.end_steps(ctx, token, Some(refusal(e))),
            None => self.run_steps(ctx, token),
        }
    }

    /// The bump's partition re-read (the next attempt), or the znodes of
    /// a [`Step::Reread`].
    pub(in crate::controller::core) fn on_steps_reloaded(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        token: u64,
        states: Vec<(TopicPartition, Leadership)>,
    ) -> Vec<ControllerAction> {
        let retry = match self.take_waiting(token) {
            Waiting::Reload(tp) => Some(tp),
            Waiting::Reread => None,
            _ => return Vec::new(),
        };
        if let Some(ctx) = ctx.as_deref_mut() {
            ctx.leadership.extend(states);
        }
        if let Some(tp) = retry {
            self.push_front(token, [Step::BumpEpoch(tp, 1)]);
        }
        self.run_steps(ctx, token)
    }

    /// An assignment write done: on failure the assignment goes back and
    /// the flow fails.
    pub(in crate::controller::core) fn on_assignment_written(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        token: u64,
        result: Result<(), WriteFailure>,
    ) -> Vec<ControllerAction> {
        let Waiting::Assignment(revert) = self.take_waiting(token) else {
            return Vec::new();
        };
        match result {
            Ok(()) => self.run_steps(ctx, token),
            Err(e) => {
                if let (Some(ctx), Some((tp, a))) = (ctx.as_deref_mut(), revert) {
                    reassignment::set_full_assignment(ctx, &tp, a);
                }
                self.end_steps(ctx, token, Some(refusal(e)))
            }
        }
    }

    /// A topic's znodes removed (or not): the context forgets it.
    pub(in crate::controller::core) fn on_topic_znodes_removed(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        token: u64,
        topic: String,
        removed: bool,
    ) -> Vec<ControllerAction> {
        if removed {
            tracing::info!(%topic, "topic deleted");
            if let Some(ctx) = ctx.as_deref_mut() {
                ctx.remove_topic(&topic);
            }
        }
        self.run_steps(ctx, token)
    }

    pub(in crate::controller::core) fn push_front<const N: usize>(
        &mut self,
        token: u64,
        steps: [Step; N],
    ) {
        if let Some(Flow::Steps(s)) = self.flows.get_mut(&token) {
            for st in steps.into_iter().rev() {
                s.steps.push_front(st);
            }
        }
    }

    fn wait_for(&mut self, token: u64, waiting: Waiting) {
        if let Some(Flow::Steps(s)) = self.flows.get_mut(&token) {
            s.waiting = waiting;
        }
    }

    fn take_waiting(&mut self, token: u64) -> Waiting {
        match self.flows.get_mut(&token) {
            Some(Flow::Steps(s)) => std::mem::replace(&mut s.waiting, Waiting::Nothing),
            _ => Waiting::Nothing,
        }
    }

    /// Flow `token` is over (`failed`: why it stopped early): its verdict
    /// to whoever waits for it.
    fn end_steps(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        failed: Option<Refusal>,
    ) -> Vec<ControllerAction> {
        let Some(Flow::Steps(s)) = self.flows.remove(&token) else {
            return Vec::new();
        };
        let verdict = match s.end {
            End::Flow => ControllerAction::FlowDone { token },
            End::Reassigned => ControllerAction::Reassigned {
                token,
                result: failed.map_or(Ok(()), Err),
            },
            End::AnswerAlter => ControllerAction::AnswerAlterReassignments {
                token,
                answer: if ctx.is_some() {
                    Ok(s.results)
                } else {
                    Err(ErrorCode::NOT_CONTROLLER)
                },
            },
            End::Zk => ControllerAction::ZkReassigned {
                token,
                started: s
                    .results
                    .into_iter()
                    .filter(|(_, r)| r.is_ok())
                    .map(|(tp, _)| tp)
                    .collect(),
            },
        };
        self.sub_job_done(ctx, token, verdict)
    }
}

/// What a step gave: more steps to run first, actions and go on, actions
/// and wait, or the flow's failure.
pub(super) enum Next {
    Go(Vec<Step>),
    Act(Vec<ControllerAction>),
    Wait(Vec<ControllerAction>),
    Fail(Refusal),
}

fn tell(ctx: &ControllerContext, partitions: Vec<TopicPartition>) -> ControllerAction {
    ControllerAction::UpdateMetadata {
        brokers: ctx.live_or_shutting_down().into_iter().collect(),
        partitions,
    }
}

/// A write's failure as a reassignment answers it
/// (`maybeTriggerPartitionReassignment`).
fn refusal(e: WriteFailure) -> Refusal {
    match e {
        WriteFailure::NotController(m) => (ErrorCode::NOT_CONTROLLER, m),
        WriteFailure::BadVersion(m) | WriteFailure::Other(m) => {
            (ErrorCode::UNKNOWN_SERVER_ERROR, m)
        }
    }
}

fn not_controller() -> Refusal {
    (
        ErrorCode::NOT_CONTROLLER,
        "this broker is no longer the controller".into(),
    )
}
