//! `[drv]` The replica state machine's changes (Kafka 3.9
//! `ZkReplicaStateMachine.doHandleStateChanges`): new replicas told they
//! follow, online replicas (re)told their partitions, offline ones stopped
//! and taken out of every ISR (`removeReplicasFromIsr`).

use std::collections::BTreeMap;

use super::{Duties, ZkBroker};
use crate::controller::context::Leadership;
use crate::controller::leader_election::LeaderIsr;
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::ReplicaState;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, TopicPartition};
use crate::zk::store::MetadataStore;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    // ----- the replica state machine -----

    /// `ReplicaStateMachine.handleStateChanges` for `replicas` → `target`.
    pub(super) async fn replicas_to(
        &self,
        replicas: &[(TopicPartition, BrokerId)],
        target: ReplicaState,
        batch: &mut RequestBatch,
    ) {
        let valid: Vec<(TopicPartition, BrokerId)> = self
            .with_ctx(|ctx| {
                replicas
                    .iter()
                    .filter(|(tp, r)| {
                        let from = ctx.replica_states.get(tp, *r);
                        let ok = target.can_follow(from);
                        if !ok {
                            tracing::warn!(partition = %tp, replica = %r, ?from, to = ?target, "illegal replica state change refused");
                        }
                        ok
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        match target {
            ReplicaState::New => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        if let Some(l) = ctx.leadership.get(tp) {
                            if l.leader_isr.leader == *r {
                                tracing::warn!(partition = %tp, replica = %r, "the leader cannot become a new replica");
                                continue;
                            }
                            batch.add_leader_and_isr(ctx, [*r], tp, true);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::Online => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let from = ctx.replica_states.get(tp, *r);
                        if from == ReplicaState::New {
                            let replicas = ctx.assignments.entry(tp.clone()).or_default();
                            if !replicas.contains(r) {
                                replicas.push(*r);
                            }
                        } else if ctx.leadership.contains_key(tp) {
                            batch.add_leader_and_isr(ctx, [*r], tp, false);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::Offline => self.replicas_offline(&valid, batch).await,
            ReplicaState::DeletionStarted => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
                for (tp, r) in &valid {
                    batch.add_stop_replica([*r], tp, true);
                }
            }
            ReplicaState::NonExistent => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        if let Some(replicas) = ctx.assignments.get_mut(tp) {
                            replicas.retain(|x| x != r);
                        }
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
            ReplicaState::DeletionSuccessful | ReplicaState::DeletionIneligible => {
                self.with_ctx(|ctx| {
                    for (tp, r) in &valid {
                        let _ = ctx.replica_states.transition(tp, *r, target);
                    }
                });
            }
        }
    }

    /// OfflineReplica: each replica stops (StopReplica without delete)
    /// and leaves the ISRs it is in; the remaining replicas are told.
    async fn replicas_offline(
        &self,
        valid: &[(TopicPartition, BrokerId)],
        batch: &mut RequestBatch,
    ) {
        let target = ReplicaState::Offline;
        for (tp, r) in valid {
            batch.add_stop_replica([*r], tp, false);
        }
        // Grouped by replica: each is taken out of the ISRs it is in.
        let mut by_replica: BTreeMap<BrokerId, Vec<TopicPartition>> = BTreeMap::new();
        for (tp, r) in valid {
            by_replica.entry(*r).or_default().push(tp.clone());
        }
        for (r, parts) in by_replica {
            let (with, without): (Vec<_>, Vec<_>) = self
                .with_ctx(|ctx| {
                    parts
                        .iter()
                        .cloned()
                        .partition::<Vec<_>, _>(|tp| ctx.leadership.contains_key(tp))
                })
                .unwrap_or_default();
            let (changed, unchanged) = self.remove_from_isr(r, &with).await;
            self.with_ctx(|ctx| {
                for tp in &unchanged {
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
                        batch.add_leader_and_isr(ctx, recipients, tp, false);
                    }
                    let _ = ctx.replica_states.transition(tp, r, target);
                }
                for tp in &without {
                    batch.add_update_metadata(ctx.live_or_shutting_down(), [tp.clone()]);
                    let _ = ctx.replica_states.transition(tp, r, target);
                }
            });
        }
    }

    /// `removeReplicasFromIsr`: `replica` out of each partition's ISR (the
    /// last ISR member stays, Kafka never writes an empty ISR); a removed
    /// leader leaves the partition leaderless (-1); the leader epoch moves.
    /// Returns the partitions written, and those already without the
    /// replica. Kafka tells the other replicas of both; an unchanged one
    /// was already announced at its current leader epoch (by the election
    /// that removed the replica, in the same event), and a second copy is
    /// only refused by the brokers (STALE_CONTROLLER_EPOCH for an equal
    /// epoch), so only the written ones are sent.
    async fn remove_from_isr(
        &self,
        replica: BrokerId,
        parts: &[TopicPartition],
    ) -> (Vec<TopicPartition>, Vec<TopicPartition>) {
        let Some((unchanged, plans)) = self.with_ctx(|ctx| {
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
        }) else {
            return (Vec::new(), Vec::new());
        };
        let outcomes = self.write_leaderships(&plans).await;
        let mut done = Vec::new();
        for ((tp, mut new), outcome) in plans.into_iter().zip(outcomes) {
            match outcome {
                Ok(version) => {
                    new.partition_epoch = version;
                    self.with_ctx(|ctx| {
                        ctx.leadership.insert(
                            tp.clone(),
                            Leadership {
                                leader_isr: new,
                                controller_epoch: ControllerEpoch(ctx.epoch),
                            },
                        )
                    });
                    done.push(tp);
                }
                Err(e) => {
                    tracing::warn!(partition = %tp, %replica, error = %e, "removing a replica from the ISR")
                }
            }
        }
        (done, unchanged)
    }
}
