//! `[pure]` The ZooKeeper-mode controller's verdict on one partition of an
//! AlterPartition request (Kafka 3.9 `KafkaController.tryProcessAlterPartition`,
//! in the order Kafka checks):
//! - the partition has no leadership in the context → UNKNOWN_TOPIC_OR_PARTITION;
//! - a partition or leader epoch above the context's → NOT_CONTROLLER (the
//!   leader heard from a newer controller; it should look for it);
//! - a leader epoch below → FENCED_LEADER_EPOCH;
//! - already the state asked for (partition epoch at most the current one)
//!   → answered with the current state, nothing written (idempotent retries);
//! - another partition epoch → INVALID_UPDATE_VERSION;
//! - RECOVERING with more than one ISR member, or RECOVERED → RECOVERING →
//!   INVALID_REQUEST;
//! - an ISR member that is not a live broker (shutting-down brokers are not
//!   live) → INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED before v2… Kafka
//!   answers it for v0–1; shardlog serves v2–3);
//! - else the new state is written, conditioned on the current partition
//!   epoch (the state znode's zkVersion).

use std::collections::BTreeSet;

use super::leader_election::{LeaderIsr, LeaderRecoveryState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch};

/// What a partition leader asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The asking broker (the leader).
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    pub leader_recovery_state: LeaderRecoveryState,
    pub partition_epoch: PartitionEpoch,
}

/// The controller's answer for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Refused(ErrorCode),
    /// Already in force: answer it, write nothing.
    Unchanged(LeaderIsr),
    /// Write this state (its partition epoch is the one to condition on).
    Write(LeaderIsr),
}

/// Judge `p` against the partition's `current` leadership, with the live
/// brokers (shutting-down ones left out).
pub fn judge(current: Option<&LeaderIsr>, live: &BTreeSet<BrokerId>, p: &Proposal) -> Verdict {
    let Some(cur) = current else {
        return Verdict::Refused(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if p.partition_epoch > cur.partition_epoch || p.leader_epoch > cur.leader_epoch {
        return Verdict::Refused(ErrorCode::NOT_CONTROLLER);
    }
    if p.leader_epoch < cur.leader_epoch {
        return Verdict::Refused(ErrorCode::FENCED_LEADER_EPOCH);
    }
    // LeaderAndIsr.equalsAllowStalePartitionEpoch.
    if p.leader == cur.leader
        && p.isr == cur.isr
        && p.leader_recovery_state == cur.leader_recovery_state
        && p.partition_epoch <= cur.partition_epoch
    {
        return Verdict::Unchanged(cur.clone());
    }
    if p.partition_epoch != cur.partition_epoch {
        return Verdict::Refused(ErrorCode::INVALID_UPDATE_VERSION);
    }
    if p.leader_recovery_state == LeaderRecoveryState::Recovering
        && (p.isr.len() > 1 || cur.leader_recovery_state == LeaderRecoveryState::Recovered)
    {
        return Verdict::Refused(ErrorCode::INVALID_REQUEST);
    }
    if p.isr.iter().any(|r| !live.contains(r)) {
        return Verdict::Refused(ErrorCode::INELIGIBLE_REPLICA);
    }
    Verdict::Write(LeaderIsr {
        leader: p.leader,
        leader_epoch: p.leader_epoch,
        isr: p.isr.clone(),
        leader_recovery_state: p.leader_recovery_state,
        partition_epoch: cur.partition_epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> LeaderIsr {
        LeaderIsr {
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(5),
            isr: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            leader_recovery_state: LeaderRecoveryState::Recovered,
            partition_epoch: PartitionEpoch(9),
        }
    }

    fn shrink_to_1_2() -> Proposal {
        Proposal {
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(5),
            isr: vec![BrokerId(1), BrokerId(2)],
            leader_recovery_state: LeaderRecoveryState::Recovered,
            partition_epoch: PartitionEpoch(9),
        }
    }

    fn live(ids: &[i32]) -> BTreeSet<BrokerId> {
        ids.iter().map(|i| BrokerId(*i)).collect()
    }

    #[test]
    fn kafkas_checks_in_kafkas_order() {
        let cur = current();
        let all = live(&[1, 2, 3]);
        let refused = |p: Proposal, live: &BTreeSet<BrokerId>| match judge(Some(&cur), live, &p) {
            Verdict::Refused(e) => e,
            other => panic!("{p:?} → {other:?}"),
        };
        assert_eq!(
            judge(None, &all, &shrink_to_1_2()),
            Verdict::Refused(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        );
        let newer_epoch = Proposal {
            leader_epoch: LeaderEpoch(6),
            ..shrink_to_1_2()
        };
        assert_eq!(refused(newer_epoch, &all), ErrorCode::NOT_CONTROLLER);
        let newer_version = Proposal {
            partition_epoch: PartitionEpoch(10),
            ..shrink_to_1_2()
        };
        assert_eq!(refused(newer_version, &all), ErrorCode::NOT_CONTROLLER);
        let fenced = Proposal {
            leader_epoch: LeaderEpoch(4),
            ..shrink_to_1_2()
        };
        assert_eq!(refused(fenced, &all), ErrorCode::FENCED_LEADER_EPOCH);
        let stale_version = Proposal {
            partition_epoch: PartitionEpoch(8),
            ..shrink_to_1_2()
        };
        assert_eq!(
            refused(stale_version, &all),
            ErrorCode::INVALID_UPDATE_VERSION
        );
        let recovering_many = Proposal {
            leader_recovery_state: LeaderRecoveryState::Recovering,
            ..shrink_to_1_2()
        };
        assert_eq!(refused(recovering_many, &all), ErrorCode::INVALID_REQUEST);
        let back_to_recovering = Proposal {
            isr: vec![BrokerId(1)],
            leader_recovery_state: LeaderRecoveryState::Recovering,
            ..shrink_to_1_2()
        };
        assert_eq!(
            refused(back_to_recovering, &all),
            ErrorCode::INVALID_REQUEST
        );
        let expand_to_dead = Proposal {
            isr: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            leader_recovery_state: LeaderRecoveryState::Recovered,
            ..shrink_to_1_2()
        };
        // Same ISR as now: answered unchanged even though 3 is not live.
        assert_eq!(
            judge(Some(&cur), &live(&[1, 2]), &expand_to_dead),
            Verdict::Unchanged(cur.clone())
        );
        let cur_small = LeaderIsr {
            isr: vec![BrokerId(1)],
            ..cur.clone()
        };
        match judge(Some(&cur_small), &live(&[1, 2]), &expand_to_dead) {
            Verdict::Refused(e) => assert_eq!(e, ErrorCode::INELIGIBLE_REPLICA),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_valid_change_is_written_on_the_current_partition_epoch() {
        let cur = current();
        match judge(Some(&cur), &live(&[1, 2, 3]), &shrink_to_1_2()) {
            Verdict::Write(l) => {
                assert_eq!(l.isr, vec![BrokerId(1), BrokerId(2)]);
                assert_eq!(l.leader_epoch, LeaderEpoch(5));
                assert_eq!(l.partition_epoch, PartitionEpoch(9));
            }
            other => panic!("{other:?}"),
        }
        // A recovering leader may clear RECOVERING once alone in the ISR.
        let recovering = LeaderIsr {
            isr: vec![BrokerId(1)],
            leader_recovery_state: LeaderRecoveryState::Recovering,
            ..cur.clone()
        };
        let recovered = Proposal {
            isr: vec![BrokerId(1), BrokerId(2)],
            ..shrink_to_1_2()
        };
        assert!(matches!(
            judge(Some(&recovering), &live(&[1, 2]), &recovered),
            Verdict::Write(_)
        ));
        // A retry of a change already written (stale partition epoch) is
        // answered with the current state.
        let written = LeaderIsr {
            isr: vec![BrokerId(1), BrokerId(2)],
            partition_epoch: PartitionEpoch(10),
            ..cur
        };
        assert!(matches!(
            judge(Some(&written), &live(&[1, 2, 3]), &shrink_to_1_2()),
            Verdict::Unchanged(_)
        ));
    }
}
