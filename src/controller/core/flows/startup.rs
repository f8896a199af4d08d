//! `[pure]` A new controller's start and new partitions, as flows of the
//! controller core.
//!
//! - Failover (Kafka 3.9 `onControllerFailover` once the context is
//!   loaded): both state machines initialised from the context
//!   (`PartitionStateMachine.startup` / `ReplicaStateMachine.startup`),
//!   every broker told everything (UpdateMetadata, then LeaderAndIsr for
//!   each live replica), replicas on dead brokers Offline (out of the
//!   ISRs, also of partitions whose leader lives) before New and Offline
//!   partitions elect, deletions resumed.
//! - New partitions (`onNewPartitionCreation`): New, their replicas New,
//!   then Online with their first leaders, the replicas Online.

use std::collections::BTreeSet;

use super::super::{ControllerAction, ControllerCore, ElectionKind};
use super::Flow;
use crate::controller::context::ControllerContext;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::types::{BrokerId, TopicPartition};

/// What a failover or a partition creation waits for next.
#[derive(Debug)]
pub(in crate::controller::core) enum StartAt {
    /// Failover: everyone told everything; next the live replicas.
    FailoverOnline,
    FailoverOnlineDone,
    /// Next the replicas on dead brokers go Offline.
    FailoverOffline,
    FailoverOfflineDone,
    /// Next New and Offline partitions elect.
    FailoverTrigger,
    FailoverTriggerDone,
    /// Next the deletions resume.
    FailoverResume,
    Finished,
    /// New partitions New: next their replicas.
    NewReplicas,
    /// Those sent: next Online.
    NewSent,
    NewOnline,
    NewOnlineReplicas,
    NewDone,
}

impl ControllerCore {
    /// `onControllerFailover`'s state-machine start-up; ends with
    /// [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_failover(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        init_state_machines(ctx);
        self.flows.insert(
            token,
            Flow::Start {
                default_unclean,
                parts: Vec::new(),
                at: StartAt::FailoverOnline,
            },
        );
        vec![
            ControllerAction::UpdateMetadataAll {
                brokers: ctx.live_or_shutting_down().into_iter().collect(),
            },
            ControllerAction::SendBatch { token },
        ]
    }

    /// `onNewPartitionCreation`; ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_new_partitions(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        parts: Vec<TopicPartition>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        if parts.is_empty() || ctx.is_none() {
            return vec![ControllerAction::FlowDone { token }];
        }
        self.flows.insert(
            token,
            Flow::Start {
                default_unclean,
                parts: parts.clone(),
                at: StartAt::NewReplicas,
            },
        );
        let sub = self.sub_for(token);
        self.on_partitions_to(
            ctx,
            sub,
            parts,
            PartitionState::New,
            ElectionKind::Offline,
            default_unclean,
        )
    }

    /// A step of a failover or a partition creation ended: the next.
    pub(in crate::controller::core) fn resume_start(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
    ) -> Vec<ControllerAction> {
        let Some(Flow::Start {
            default_unclean,
            parts,
            at,
        }) = self.flows.remove(&token)
        else {
            return Vec::new();
        };
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let next = |core: &mut Self, at| {
            core.flows.insert(
                token,
                Flow::Start {
                    default_unclean,
                    parts: parts.clone(),
                    at,
                },
            );
        };
        let send = vec![ControllerAction::SendBatch { token }];
        match at {
            StartAt::FailoverOnline => {
                let registered = ctx.live_or_shutting_down();
                let online = every_replica(ctx, |_, r| registered.contains(&r));
                next(self, StartAt::FailoverOnlineDone);
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, online, ReplicaState::Online)
            }
            StartAt::FailoverOnlineDone => {
                next(self, StartAt::FailoverOffline);
                send
            }
            StartAt::FailoverOffline => {
                // Kafka's ReplicaStateMachine.startup: every replica on a
                // dead broker goes OfflineReplica, which takes it out of
                // the ISRs before the partition state machine elects.
                // Replicas of topics being deleted keep their state.
                let registered = ctx.live_or_shutting_down();
                let deleting = ctx.topics_to_delete.clone();
                let offline = every_replica(ctx, |tp, r| {
                    !deleting.contains(&*tp.topic) && !registered.contains(&r)
                });
                next(self, StartAt::FailoverOfflineDone);
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, offline, ReplicaState::Offline)
            }
            StartAt::FailoverOfflineDone => {
                next(self, StartAt::FailoverTrigger);
                send
            }
            StartAt::FailoverTrigger => {
                next(self, StartAt::FailoverTriggerDone);
                self.trigger_online(ctx, token, default_unclean)
            }
            StartAt::FailoverTriggerDone => {
                next(self, StartAt::FailoverResume);
                send
            }
            StartAt::FailoverResume => {
                next(self, StartAt::Finished);
                self.resume_deletions_of(ctx, token)
            }
            StartAt::Finished => vec![ControllerAction::FlowDone { token }],
            StartAt::NewReplicas => {
                let replicas = ctx.replicas_of(&parts);
                next(self, StartAt::NewSent);
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, replicas, ReplicaState::New)
            }
            StartAt::NewSent => {
                next(self, StartAt::NewOnline);
                send
            }
            StartAt::NewOnline => {
                next(self, StartAt::NewOnlineReplicas);
                let sub = self.sub_for(token);
                self.on_partitions_to(
                    Some(ctx),
                    sub,
                    parts.clone(),
                    PartitionState::Online,
                    ElectionKind::Offline,
                    default_unclean,
                )
            }
            StartAt::NewOnlineReplicas => {
                let replicas = ctx.replicas_of(&parts);
                next(self, StartAt::NewDone);
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, replicas, ReplicaState::Online)
            }
            StartAt::NewDone => {
                next(self, StartAt::Finished);
                send
            }
        }
    }
}

/// Every (partition, replica) of the assignment `keep` takes, in the
/// assignment's order.
fn every_replica(
    ctx: &ControllerContext,
    keep: impl Fn(&TopicPartition, BrokerId) -> bool,
) -> Vec<(TopicPartition, BrokerId)> {
    ctx.assignments
        .iter()
        .flat_map(|(tp, rs)| rs.iter().map(move |r| (tp.clone(), *r)))
        .filter(|(tp, r)| keep(tp, *r))
        .collect()
}

/// Both state machines from the context (`PartitionStateMachine.startup`,
/// `ReplicaStateMachine.startup`): a partition with a live leader Online,
/// with a dead one Offline, without a state znode New; a replica Online
/// on a registered broker, else Offline, or DeletionIneligible when its
/// topic is being deleted. Topics being deleted with a replica on a dead
/// broker are ineligible for deletion.
fn init_state_machines(ctx: &mut ControllerContext) {
    let live = ctx.live();
    let registered = ctx.live_or_shutting_down();
    let deleting = ctx.topics_to_delete.clone();
    let parts: Vec<TopicPartition> = ctx.assignments.keys().cloned().collect();
    for tp in &parts {
        let state = match ctx.leadership.get(tp) {
            Some(l) if live.contains(&l.leader_isr.leader) => PartitionState::Online,
            Some(_) => PartitionState::Offline,
            None => PartitionState::New,
        };
        // From NonExistent only New is legal: go through it.
        let _ = ctx.partition_states.transition(tp, PartitionState::New);
        if state != PartitionState::New {
            let _ = ctx.partition_states.transition(tp, state);
        }
        for r in ctx.replicas(tp).to_vec() {
            let _ = ctx.replica_states.transition(tp, r, ReplicaState::New);
            let to = if registered.contains(&r) {
                ReplicaState::Online
            } else if deleting.contains(&*tp.topic) {
                ReplicaState::DeletionIneligible
            } else {
                ReplicaState::Offline
            };
            if to != ReplicaState::DeletionIneligible {
                let _ = ctx.replica_states.transition(tp, r, to);
            } else {
                let _ = ctx.replica_states.transition(tp, r, ReplicaState::Offline);
                let _ = ctx.replica_states.transition(tp, r, to);
            }
        }
    }
    let ineligible: BTreeSet<String> = deleting
        .iter()
        .filter(|t| {
            ctx.partitions_of(t)
                .iter()
                .any(|tp| ctx.replicas(tp).iter().any(|r| !registered.contains(r)))
        })
        .cloned()
        .collect();
    ctx.ineligible_for_deletion = ineligible;
}
