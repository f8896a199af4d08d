//! `[pure]` The replica state machine's changes in the controller core
//! (Kafka 3.9 `ZkReplicaStateMachine.doHandleStateChanges`): new replicas
//! told they follow, online replicas (re)told their partitions, offline
//! ones stopped and taken out of every ISR (`removeReplicasFromIsr`, one
//! replica at a time, each write conditioned on the partition epoch),
//! deletion states recorded.

use std::collections::{BTreeMap, VecDeque};

use super::{ControllerAction, ControllerCore, WriteFailure};
use crate::controller::context::ControllerContext;
use crate::controller::leader_election::LeaderIsr;
use crate::controller::state_machine::ReplicaState;
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch, TopicPartition};

#[cfg(test)]
mod tests;

/// An OfflineReplica change under way: the replicas still to take out of
/// their ISRs, and the one whose writes are out.
#[derive(Debug, Default)]
pub(super) struct OfflineJob {
    queue: VecDeque<(BrokerId, Vec<TopicPartition>)>,
    current: Option<Removal>,
}

/// One replica's `removeReplicasFromIsr`: the partitions it leaves (being
/// written), those whose ISR already lacks it, and those with no state
/// znode at all.
#[derive(Debug)]
struct Removal {
    replica: BrokerId,
    plans: Vec<(TopicPartition, LeaderIsr)>,
    unchanged: Vec<TopicPartition>,
    without: Vec<TopicPartition>,
}

impl ControllerCore {
    /// `ReplicaStateMachine.handleStateChanges` for `replicas` → `target`.
    pub(super) fn on_replicas_to(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
        target: ReplicaState,
    ) -> Vec<ControllerAction> {
        let done = ControllerAction::ReplicasDone { job };
        let Some(ctx) = ctx else {
            return self.sub_job_done(None, job, done);
        };
        let valid: Vec<(TopicPartition, BrokerId)> = replicas
            .into_iter()
            .filter(|(tp, r)| {
                let from = ctx.replica_states.get(tp, *r);
                let ok = target.can_follow(from);
                if !ok {
                    tracing::warn!(partition = %tp, replica = %r, ?from, to = ?target, "illegal replica state change refused");
                }
                ok
            })
            .collect();
        let mut actions = Vec::new();
        match target {
            ReplicaState::New => {
                for (tp, r) in &valid {
                    if let Some(l) = ctx.leadership.get(tp) {
                        if l.leader_isr.leader == *r {
                            tracing::warn!(partition = %tp, replica = %r, "the leader cannot become a new replica");
                            continue;
                        }
                        actions.push(leader_and_isr(vec![*r], tp, true));
                    }
                    let _ = ctx.replica_states.transition(tp, *r, target);
                }
            }
            ReplicaState::Online => {
                for (tp, r) in &valid {
                    let from = ctx.replica_states.get(tp, *r);
                    if from == ReplicaState::New {
                        let replicas = ctx.assignments.entry(tp.clone()).or_default();
                        if !replicas.contains(r) {
                            replicas.push(*r);
                        }
                    } else if ctx.leadership.contains_key(tp) {
                        actions.push(leader_and_isr(vec![*r], tp, false));
                    }
                    let _ = ctx.replica_states.transition(tp, *r, target);
                }
            }
            ReplicaState::Offline => return self.begin_offline(ctx, job, valid),
            ReplicaState::DeletionStarted => {
                for (tp, r) in &valid {
                    let _ = ctx.replica_states.transition(tp, *r, target);
                }
                for (tp, r) in &valid {
                    actions.push(stop_replica(*r, tp, true));
                }
            }
            ReplicaState::NonExistent => {
                for (tp, r) in &valid {
                    if let Some(replicas) = ctx.assignments.get_mut(tp) {
                        replicas.retain(|x| x != r);
                    }
                    let _ = ctx.replica_states.transition(tp, *r, target);
                }
            }
            ReplicaState::DeletionSuccessful | ReplicaState::DeletionIneligible => {
                for (tp, r) in &valid {
                    let _ = ctx.replica_states.transition(tp, *r, target);
                }
            }
        }
        actions.extend(self.sub_job_done(Some(ctx), job, done));
        actions
    }

    /// OfflineReplica: each replica stops (StopReplica without delete),
    /// then leaves the ISRs it is in, replica by replica.
    fn begin_offline(
        &mut self,
        ctx: &mut ControllerContext,
        job: u64,
        valid: Vec<(TopicPartition, BrokerId)>,
    ) -> Vec<ControllerAction> {
        let mut actions: Vec<ControllerAction> = valid
            .iter()
            .map(|(tp, r)| stop_replica(*r, tp, false))
            .collect();
        let mut by_replica: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        for (tp, r) in valid {
            by_replica.entry(r).or_default().push(tp);
        }
        self.offline.insert(
            job,
            OfflineJob {
                queue: by_replica.into_iter().collect(),
                current: None,
            },
        );
        actions.extend(self.next_removal(ctx, job));
        actions
    }

    /// The next replica's removal: written, or (nothing to write) taken at
    /// once; the job ends when no replica is left.
    fn next_removal(&mut self, ctx: &mut ControllerContext, job: u64) -> Vec<ControllerAction> {
        let mut actions = Vec::new();
        loop {
            let Some(j) = self.offline.get_mut(&job) else {
                return actions;
            };
            let Some((replica, parts)) = j.queue.pop_front() else {
                self.offline.remove(&job);
                let done = ControllerAction::ReplicasDone { job };
                actions.extend(self.sub_job_done(Some(ctx), job, done));
                return actions;
            };
            let (with, without): (Vec<_>, Vec<_>) = parts
                .into_iter()
                .partition(|tp| ctx.leadership.contains_key(tp));
            let (unchanged, plans) = isr_removals(ctx, replica, &with);
            let removal = Removal {
                replica,
                plans,
                unchanged,
                without,
            };
            if removal.plans.is_empty() {
                actions.extend(take_removal(ctx, removal, Vec::new()));
                continue;
            }
            actions.push(ControllerAction::WriteLeaderships {
                token: job,
                writes: removal.plans.clone(),
            });
            j.current = Some(removal);
            return actions;
        }
    }

    /// A replica's ISR removals written (or not): taken, the remaining
    /// replicas told, then the next replica.
    pub(super) fn on_removal_written(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        results: Vec<Result<PartitionEpoch, WriteFailure>>,
    ) -> Vec<ControllerAction> {
        let Some(removal) = self.offline.get_mut(&job).and_then(|j| j.current.take()) else {
            return Vec::new();
        };
        let Some(ctx) = ctx else {
            self.offline.remove(&job);
            return self.sub_job_done(None, job, ControllerAction::ReplicasDone { job });
        };
        let mut actions = take_removal(ctx, removal, results);
        actions.extend(self.next_removal(ctx, job));
        actions
    }
}

/// `removeReplicasFromIsr`'s plans: `replica` out of each partition's ISR
/// (the last ISR member stays, Kafka never writes an empty ISR); a removed
/// leader leaves the partition leaderless (-1); the leader epoch moves.
/// Returns the partitions already without the replica, and the plans.
fn isr_removals(
    ctx: &ControllerContext,
    replica: BrokerId,
    parts: &[TopicPartition],
) -> (Vec<TopicPartition>, Vec<(TopicPartition, LeaderIsr)>) {
    let mut unchanged = Vec::new();
    let mut plans = Vec::new();
    for tp in parts {
        let Some(l) = ctx.leadership.get(tp) else {
            continue;
        };
        let cur = &l.leader_isr;
        if !cur.isr.contains(&replica) && cur.leader != replica {
            unchanged.push(tp.clone());
            continue;
        }
        let isr = if cur.isr.len() == 1 {
            cur.isr.clone()
        } else {
            cur.isr.iter().copied().filter(|x| *x != replica).collect()
        };
        let new = LeaderIsr {
            leader: if cur.leader == replica {
                BrokerId::NONE
            } else {
                cur.leader
            },
            leader_epoch: LeaderEpoch(cur.leader_epoch.0 + 1),
            isr,
            leader_recovery_state: cur.leader_recovery_state,
            partition_epoch: cur.partition_epoch,
        };
        plans.push((tp.clone(), new));
    }
    (unchanged, plans)
}

/// The written removals taken, the replica Offline everywhere. Kafka
/// tells the other replicas of the partitions written and of those
/// already without the replica; an unchanged one was already announced at
/// its current leader epoch (by the election that removed the replica, in
/// the same event), and a second copy is only refused by the brokers
/// (STALE_CONTROLLER_EPOCH for an equal epoch), so only the written ones
/// are sent. Partitions without a state znode get UpdateMetadata.
fn take_removal(
    ctx: &mut ControllerContext,
    removal: Removal,
    results: Vec<Result<PartitionEpoch, WriteFailure>>,
) -> Vec<ControllerAction> {
    let target = ReplicaState::Offline;
    let r = removal.replica;
    let mut changed = Vec::new();
    for ((tp, mut new), outcome) in removal.plans.into_iter().zip(results) {
        match outcome {
            Ok(version) => {
                new.partition_epoch = version;
                ctx.put_leadership(tp.clone(), new);
                changed.push(tp);
            }
            Err(e) => {
                tracing::warn!(partition = %tp, replica = %r, error = ?e, "removing a replica from the ISR")
            }
        }
    }
    let mut actions = Vec::new();
    for tp in &removal.unchanged {
        let _ = ctx.replica_states.transition(tp, r, target);
    }
    for tp in &changed {
        if !ctx.topics_to_delete.contains(&*tp.topic) {
            let recipients: Vec<BrokerId> = ctx
                .replicas(tp)
                .iter()
                .copied()
                .filter(|x| *x != r)
                .collect();
            actions.push(leader_and_isr(recipients, tp, false));
        }
        let _ = ctx.replica_states.transition(tp, r, target);
    }
    for tp in &removal.without {
        actions.push(ControllerAction::UpdateMetadata {
            brokers: ctx.live_or_shutting_down().into_iter().collect(),
            partitions: vec![tp.clone()],
        });
        let _ = ctx.replica_states.transition(tp, r, target);
    }
    actions
}

fn leader_and_isr(
    recipients: Vec<BrokerId>,
    tp: &TopicPartition,
    is_new: bool,
) -> ControllerAction {
    ControllerAction::LeaderAndIsr {
        recipients,
        partition: tp.clone(),
        is_new,
    }
}

fn stop_replica(replica: BrokerId, tp: &TopicPartition, delete: bool) -> ControllerAction {
    ControllerAction::StopReplica {
        replica,
        partition: tp.clone(),
        delete,
    }
}
