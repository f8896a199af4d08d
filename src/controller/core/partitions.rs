//! `[pure]` The partition state machine's changes in the controller core
//! (Kafka 3.9 `ZkPartitionStateMachine.handleStateChanges`): partitions
//! moved to a target state; New → Online gets a first leader and ISR
//! (`initializeLeaderAndIsrForPartitions`: the state znodes created behind
//! the controller-epoch check, the live replicas told with `isNew`),
//! Offline/Online → Online an election (`core::elect`). Illegal changes
//! are logged and skipped.

use super::{ControllerAction, ControllerCore, ElectionKind};
use crate::controller::context::ControllerContext;
use crate::controller::leader_election::{LeaderIsr, LeaderRecoveryState};
use crate::controller::state_machine::PartitionState;
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch, TopicPartition};

#[cfg(test)]
mod tests;

/// Why a state znode could not be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateFailure {
    /// Already there (a creation interrupted by a failover): the
    /// partition stays New.
    Exists,
    Other(String),
}

/// A change to Online under way: first leaders being created, then the
/// election of the others.
#[derive(Debug)]
pub(super) struct PartitionsJob {
    kind: ElectionKind,
    default_unclean: bool,
    /// New partitions' first leaderships, with the live replicas to tell.
    creating: Vec<(TopicPartition, LeaderIsr, Vec<BrokerId>)>,
    to_elect: Vec<TopicPartition>,
    online: Vec<TopicPartition>,
}

impl ControllerCore {
    /// `handleStateChanges(parts, target)`; Online ones get a leader (by
    /// `kind` when elected). Ends with [`ControllerAction::PartitionsDone`]
    /// naming those now Online.
    pub(super) fn on_partitions_to(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        parts: Vec<TopicPartition>,
        target: PartitionState,
        kind: ElectionKind,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            let done = ControllerAction::PartitionsDone {
                job,
                online: Vec::new(),
            };
            return self.sub_job_done(None, job, done);
        };
        let mut to_init = Vec::new();
        let mut to_elect = Vec::new();
        for tp in parts {
            let from = ctx.partition_states.get(&tp);
            if !target.can_follow(from) {
                tracing::warn!(partition = %tp, ?from, to = ?target, "illegal partition state change refused");
                continue;
            }
            match target {
                PartitionState::Online if from == PartitionState::New => to_init.push(tp),
                PartitionState::Online => to_elect.push(tp),
                _ => {
                    let _ = ctx.partition_states.transition(&tp, target);
                }
            }
        }
        let creating = first_leaders(ctx, &to_init);
        let states: Vec<(TopicPartition, LeaderIsr)> = creating
            .iter()
            .map(|(tp, l, _)| (tp.clone(), l.clone()))
            .collect();
        self.partitions.insert(
            job,
            PartitionsJob {
                kind,
                default_unclean,
                creating,
                to_elect,
                online: Vec::new(),
            },
        );
        if states.is_empty() {
            return self.elect_the_rest(Some(ctx), job);
        }
        vec![ControllerAction::CreateStates { token: job, states }]
    }

    /// The first leaderships created (or not): those created are taken
    /// and their live replicas told; then the election of the others.
    pub(super) fn on_states_created(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        job: u64,
        results: Vec<Result<(), CreateFailure>>,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.partitions.get_mut(&job) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let mut results = results.into_iter();
        for (tp, leader_isr, live_replicas) in std::mem::take(&mut j.creating) {
            match results.next() {
                Some(Ok(())) => {
                    if let Some(ctx) = ctx.as_deref_mut() {
                        ctx.put_leadership(tp.clone(), leader_isr);
                        actions.push(ControllerAction::LeaderAndIsr {
                            recipients: live_replicas,
                            partition: tp.clone(),
                            is_new: true,
                        });
                    }
                    j.online.push(tp);
                }
                Some(Err(CreateFailure::Exists)) => {
                    tracing::warn!(partition = %tp, "state znode already exists; partition stays New")
                }
                Some(Err(CreateFailure::Other(e))) => {
                    tracing::warn!(partition = %tp, error = %e, "initialising the partition's leader")
                }
                None => tracing::warn!(partition = %tp, "no creation result"),
            }
        }
        actions.extend(self.elect_the_rest(ctx, job));
        actions
    }

    /// The partitions to elect, as an election of this job's own.
    fn elect_the_rest(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.partitions.get_mut(&job) else {
            return Vec::new();
        };
        let parts = std::mem::take(&mut j.to_elect);
        let (kind, default_unclean) = (j.kind, j.default_unclean);
        if parts.is_empty() {
            return self.finish_partitions(ctx, job, Vec::new());
        }
        let election = self.token();
        self.parents
            .insert(election, super::flows::Parent::Partitions(job));
        self.on_elect(ctx, election, parts, kind, default_unclean)
    }

    /// Every partition that got a leader goes Online.
    pub(super) fn finish_partitions(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        job: u64,
        elected: Vec<TopicPartition>,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.partitions.remove(&job) else {
            return Vec::new();
        };
        let mut online = j.online;
        online.extend(elected);
        if let Some(ctx) = ctx.as_deref_mut() {
            for tp in &online {
                let _ = ctx.partition_states.transition(tp, PartitionState::Online);
            }
        }
        self.sub_job_done(ctx, job, ControllerAction::PartitionsDone { job, online })
    }
}

/// `initializeLeaderAndIsrForPartitions`: leader = the first live replica
/// in assignment order, ISR = the live replicas, leader epoch 0, partition
/// epoch 0 (a created znode's version); with the replicas to tell.
fn first_leaders(
    ctx: &ControllerContext,
    parts: &[TopicPartition],
) -> Vec<(TopicPartition, LeaderIsr, Vec<BrokerId>)> {
    let mut plans = Vec::new();
    for tp in parts {
        let live = ctx.live_for(tp);
        let live_replicas: Vec<BrokerId> = ctx
            .replicas(tp)
            .iter()
            .copied()
            .filter(|r| live.contains(r))
            .collect();
        let Some(&leader) = live_replicas.first() else {
            tracing::warn!(partition = %tp, replicas = ?ctx.replicas(tp), "no replica of a new partition is online; it stays New");
            continue;
        };
        let leader_isr = LeaderIsr {
            leader,
            leader_epoch: LeaderEpoch(0),
            isr: live_replicas.clone(),
            leader_recovery_state: LeaderRecoveryState::Recovered,
            partition_epoch: PartitionEpoch(0),
        };
        plans.push((tp.clone(), leader_isr, live_replicas));
    }
    plans
}
