//! What the core's unit tests share: topic `t`'s partitions, registered
//! brokers, leaderships, replicas Online.

use super::*;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::types::{ControllerEpoch, LeaderEpoch};
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
