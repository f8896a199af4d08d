//! `[pure]` Topic deletion (Kafka 3.9 `TopicDeletionManager`) as flows of
//! the controller core: a topic marked in `/admin/delete_topics` is
//! queued; its partitions go Offline then NonExistent and every broker is
//! told it is going (UpdateMetadata with leader -2); its live replicas are
//! stopped, then deleted (StopReplica with delete); a replica on a dead
//! broker (or whose deletion failed) makes the topic ineligible until the
//! broker returns; once every replica is deleted the topic's znodes, its
//! config and its marker are removed and the context forgets it. A topic
//! whose partitions are being reassigned waits for the move.

use std::collections::BTreeSet;

use super::super::{ControllerAction, ControllerCore};
use super::steps::{End, Next, Step, Steps};
use crate::controller::context::ControllerContext;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};

impl ControllerCore {
    /// `/admin/delete_topics` re-read (`processTopicDeletion`): markers of
    /// unknown topics are removed, the others queued (with
    /// `delete.topic.enable` false, their markers removed instead), then
    /// deletions resume. Ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_delete_topics_listed(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        marked: Vec<String>,
        enabled: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let (queued, mut drop): (Vec<String>, Vec<String>) = marked
            .into_iter()
            .partition(|t| ctx.topic_ids.contains_key(t));
        let mut steps = Vec::new();
        if enabled {
            ctx.topics_to_delete.extend(queued.iter().cloned());
            // A topic whose partitions are being reassigned waits for the
            // move ("topic reassignment in progress"); its completion
            // resumes the deletion.
            let moving: BTreeSet<String> = ctx
                .reassignments
                .keys()
                .map(|tp| tp.topic.to_string())
                .filter(|t| queued.contains(t))
                .collect();
            ctx.ineligible_for_deletion.extend(moving);
        } else {
            tracing::info!(topics = ?queued, "delete.topic.enable is false: deletion requests removed");
            drop.extend(queued);
        }
        if !drop.is_empty() {
            steps.push(Step::DropMarkers(drop));
        }
        if enabled {
            steps.push(Step::ResumeDeletions);
        }
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `resumeDeletions`; ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_resume_deletions(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
    ) -> Vec<ControllerAction> {
        let steps = Steps::new([Step::ResumeDeletions], End::Flow);
        self.start_steps(ctx, token, steps)
    }

    /// A broker's answer to a deleting StopReplica
    /// (`TopicDeletionStopReplicaResponseReceived`): the replicas deleted
    /// or, on an error, ineligible; then deletions resume. Ends with
    /// [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_deletion_answer(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        // Only replicas still in deletion: a reassignment's removed
        // replicas went on to NonExistent at once (Kafka does not wait for
        // their StopReplica either).
        let (ok, failed): (Vec<_>, Vec<_>) = errors
            .into_iter()
            .filter(|(tp, _)| ctx.replica_states.get(tp, broker) == ReplicaState::DeletionStarted)
            .map(|(tp, e)| ((tp, broker), e))
            .partition(|(_, e)| *e == ErrorCode::NONE);
        if ok.is_empty() && failed.is_empty() {
            return vec![ControllerAction::FlowDone { token }];
        }
        let ok: Vec<(TopicPartition, BrokerId)> = ok.into_iter().map(|(r, _)| r).collect();
        let failed: Vec<(TopicPartition, BrokerId)> = failed.into_iter().map(|(r, _)| r).collect();
        let mut steps = Vec::new();
        if !failed.is_empty() {
            let topics = topics_of(&failed);
            steps.push(Step::Replicas(failed, ReplicaState::DeletionIneligible));
            steps.push(Step::Ineligible(topics));
        }
        steps.extend([
            Step::Replicas(ok, ReplicaState::DeletionSuccessful),
            Step::Send,
            Step::ResumeDeletions,
        ]);
        self.start_steps(Some(ctx), token, Steps::new(steps, End::Flow))
    }

    /// `failReplicaDeletion` (replicas that died mid-deletion), as a
    /// sub-flow of `token`.
    pub(in crate::controller::core) fn fail_replica_deletion(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
    ) -> Vec<ControllerAction> {
        let started: Vec<(TopicPartition, BrokerId)> = replicas
            .iter()
            .filter(|(tp, r)| ctx.replica_states.get(tp, *r) == ReplicaState::DeletionStarted)
            .cloned()
            .collect();
        let steps = [
            Step::Replicas(started, ReplicaState::DeletionIneligible),
            Step::Send,
            Step::Ineligible(topics_of(&replicas)),
            Step::ResumeDeletions,
        ];
        self.sub_steps(ctx, token, Steps::new(steps, End::Flow))
    }

    /// `resumeDeletions` as a sub-flow of `token`.
    pub(in crate::controller::core) fn resume_deletions_of(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
    ) -> Vec<ControllerAction> {
        self.sub_steps(ctx, token, Steps::new([Step::ResumeDeletions], End::Flow))
    }
}

impl ControllerCore {
    /// A deletion step (a method, as the reassignment steps are, so the
    /// step interpreter needs no import from here).
    pub(super) fn deletion_step(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        step: Step,
    ) -> Next {
        match step {
            Step::DropMarkers(topics) => Next::Wait(vec![ControllerAction::RemoveDeleteMarkers {
                token,
                topics,
            }]),
            Step::ResumeDeletions => Next::Go(resume(ctx)),
            Step::CompleteDeletion(topic) => {
                let replicas = ctx
                    .replica_states
                    .replicas_in_state(&topic, ReplicaState::DeletionSuccessful);
                Next::Go(vec![
                    Step::Replicas(replicas, ReplicaState::NonExistent),
                    Step::RemoveTopicZnodes(topic),
                ])
            }
            Step::RemoveTopicZnodes(topic) => {
                Next::Wait(vec![ControllerAction::RemoveTopicZnodes { token, topic }])
            }
            Step::RetryDeletion(topics) => {
                let replicas: Vec<(TopicPartition, BrokerId)> = topics
                    .iter()
                    .flat_map(|t| {
                        ctx.replica_states
                            .replicas_in_state(t, ReplicaState::DeletionIneligible)
                    })
                    .collect();
                Next::Go(vec![
                    Step::Replicas(replicas, ReplicaState::Offline),
                    Step::Send,
                ])
            }
            Step::DeleteTopics(topics) => {
                let unseen: Vec<TopicPartition> = topics
                    .iter()
                    .flat_map(|t| ctx.partitions_of(t))
                    .filter(|tp| ctx.partition_states.get(tp) != PartitionState::NonExistent)
                    .collect();
                Next::Go(vec![
                    Step::Partitions(unseen.clone(), PartitionState::Offline),
                    Step::Partitions(unseen, PartitionState::NonExistent),
                    Step::TellTopics(topics.clone()),
                    Step::Send,
                    Step::StartReplicaDeletion(topics),
                ])
            }
            Step::StartReplicaDeletion(topics) => Next::Go(start_replica_deletion(ctx, topics)),
            _ => Next::Go(Vec::new()),
        }
    }
}

/// `resumeDeletions`: topics whose replicas are all deleted complete;
/// those with ineligible replicas and none in progress retry them; those
/// eligible (none in progress, not marked ineligible) start.
fn resume(ctx: &ControllerContext) -> Vec<Step> {
    let mut complete = Vec::new();
    let mut retry = Vec::new();
    let mut eligible = Vec::new();
    for t in &ctx.topics_to_delete {
        let rs = &ctx.replica_states;
        if rs.all_in_state(t, ReplicaState::DeletionSuccessful) {
            complete.push(Step::CompleteDeletion(t.clone()));
            continue;
        }
        let in_progress = rs.any_in_state(t, ReplicaState::DeletionStarted);
        if !in_progress && rs.any_in_state(t, ReplicaState::DeletionIneligible) {
            retry.push(t.clone());
        }
        if !in_progress && !ctx.ineligible_for_deletion.contains(t) {
            eligible.push(t.clone());
        }
    }
    let mut steps = complete;
    if !retry.is_empty() {
        steps.push(Step::RetryDeletion(retry));
    }
    if !eligible.is_empty() {
        steps.push(Step::DeleteTopics(eligible));
    }
    steps
}

/// `startReplicaDeletion`: replicas on dead brokers ineligible, the live
/// ones not yet deleted stopped (StopReplica without delete), then their
/// deletion started (with delete), one batch per step so the stop reaches
/// a broker before the delete; a dead replica makes its topic wait.
fn start_replica_deletion(ctx: &ControllerContext, topics: Vec<String>) -> Vec<Step> {
    let live = ctx.live_or_shutting_down();
    let mut dead = Vec::new();
    let mut retry = Vec::new();
    for t in &topics {
        for tp in ctx.partitions_of(t) {
            for &r in ctx.replicas(&tp) {
                if !live.contains(&r) {
                    dead.push((tp.clone(), r));
                } else if ctx.replica_states.get(&tp, r) != ReplicaState::DeletionSuccessful {
                    retry.push((tp.clone(), r));
                }
            }
        }
    }
    let waiting = topics_of(&dead);
    let mut steps = vec![
        Step::Replicas(dead, ReplicaState::DeletionIneligible),
        Step::Replicas(retry.clone(), ReplicaState::Offline),
        Step::Send,
        Step::Replicas(retry, ReplicaState::DeletionStarted),
        Step::Send,
    ];
    if !waiting.is_empty() {
        tracing::info!(topics = ?topics, "deletion waits for replicas on dead brokers");
        steps.push(Step::Ineligible(waiting));
    }
    steps
}

/// The topics of `replicas`, each once.
fn topics_of(replicas: &[(TopicPartition, BrokerId)]) -> Vec<String> {
    let set: BTreeSet<String> = replicas
        .iter()
        .map(|(tp, _)| tp.topic.to_string())
        .collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests;
