//! What the core's unit tests share: topic `t`'s partitions, registered
//! brokers, leaderships, replicas Online.

use super::*;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::types::{ControllerEpoch, LeaderEpoch, PartitionEpoch};
use crate::zk::paths::BrokerIdZNode;

pub fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().map(|&b| BrokerId(b)).collect()
}

/// Partition `p` of topic `t`.
pub fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

/// A controller at controller epoch 3 with brokers `live` registered
/// (broker epoch 10) and nothing else.
pub fn registered(live: &[i32]) -> ControllerContext {
    ControllerContext {
        epoch: 3,
        live_brokers: live
            .iter()
            .map(|&id| LiveBroker {
                id: BrokerId(id),
                epoch: 10,
                registration: BrokerIdZNode::plaintext("127.0.0.1", 9090 + id, 1),
            })
            .collect(),
        ..Default::default()
    }
}

/// `leader` at leader epoch `epoch` with `isr`, recovered, at partition
/// epoch `version`, written by controller epoch 2.
pub fn leadership(leader: i32, epoch: i32, isr: &[i32], version: i32) -> Leadership {
    Leadership {
        leader_isr: LeaderIsr {
            leader: BrokerId(leader),
            leader_epoch: LeaderEpoch(epoch),
            isr: ids(isr),
            leader_recovery_state: LeaderRecoveryState::Recovered,
            partition_epoch: PartitionEpoch(version),
        },
        controller_epoch: ControllerEpoch(2),
    }
}

/// Brokers `live` registered; topic `t` (id 7) with partitions `parts`
/// (partition, replicas), each Online, led by its first replica with
/// every replica in the ISR (leader epoch 4, partition epoch 6), every
/// replica Online.
pub fn topic_t(live: &[i32], parts: &[(i32, &[i32])]) -> ControllerContext {
    let mut c = registered(live);
    c.topic_ids.insert("t".into(), uuid::Uuid::from_u128(7));
    for (p, replicas) in parts {
        assign_online(&mut c, &tp(*p), replicas);
        partition_in(&mut c, &tp(*p), PartitionState::Online);
        c.leadership
            .insert(tp(*p), leadership(replicas[0], 4, replicas, 6));
    }
    c
}

/// `tp` assigned `replicas`, every one of them Online.
pub fn assign_online(ctx: &mut ControllerContext, tp: &TopicPartition, replicas: &[i32]) {
    ctx.assignments.insert(tp.clone(), ids(replicas));
    for r in ids(replicas) {
        let _ = ctx.replica_states.transition(tp, r, ReplicaState::New);
        let _ = ctx.replica_states.transition(tp, r, ReplicaState::Online);
    }
}

/// `tp` New, then `to` (Online or Offline) unless that is New.
pub fn partition_in(ctx: &mut ControllerContext, tp: &TopicPartition, to: PartitionState) {
    let _ = ctx.partition_states.transition(tp, PartitionState::New);
    if to != PartitionState::New {
        let _ = ctx.partition_states.transition(tp, to);
    }
}

/// Runs `event` and answers every write with success (versions from 20),
/// every unclean read with `false` and every send or removal as done, until the flow ends; returns
/// every action, the answered ones included.
pub fn run_flow(
    core: &mut ControllerCore,
    c: &mut ControllerContext,
    event: ControllerEvent,
) -> Vec<ControllerAction> {
    let mut all = Vec::new();
    let mut pending = core.on_event(Some(c), 0, event);
    let mut version = 20;
    while !pending.is_empty() {
        let mut next = Vec::new();
        for a in pending {
            let answer = match &a {
                ControllerAction::WriteLeaderships { token, writes } => {
                    let results = writes
                        .iter()
                        .map(|_| {
                            version += 1;
                            Ok(PartitionEpoch(version))
                        })
                        .collect();
                    Some(ControllerEvent::LeadershipsWritten {
                        token: *token,
                        results,
                    })
                }
                ControllerAction::ReadUncleanSettings { job, topics } => {
                    Some(ControllerEvent::UncleanRead {
                        job: *job,
                        settings: topics.iter().map(|t| (t.clone(), false)).collect(),
                    })
                }
                ControllerAction::CreateStates { token, states } => {
                    Some(ControllerEvent::StatesCreated {
                        token: *token,
                        results: states.iter().map(|_| Ok(())).collect(),
                    })
                }
                ControllerAction::RemoveDeleteMarkers { token, .. }
                | ControllerAction::RemoveFromZkReassignment { token, .. }
                | ControllerAction::SendBatch { token } => {
                    Some(ControllerEvent::Performed { token: *token })
                }
                ControllerAction::RemoveTopicZnodes { token, topic } => {
                    Some(ControllerEvent::TopicZnodesRemoved {
                        token: *token,
                        topic: topic.clone(),
                        removed: true,
                    })
                }
                ControllerAction::WriteTopicAssignment { token, .. } => {
                    Some(ControllerEvent::TopicAssignmentWritten {
                        token: *token,
                        result: Ok(()),
                    })
                }
                _ => None,
            };
            all.push(a);
            if let Some(e) = answer {
                next.extend(core.on_event(Some(c), 0, e));
            }
        }
        pending = next;
    }
    all
}
