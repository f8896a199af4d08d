//! `[pure]` Partition leader election: Kafka's four strategies as functions
//! of the assignment (AR), the ISR and the live brokers (Kafka 3.9 `core/src/main/scala/kafka/controller/Election.scala`
//! and `PartitionLeaderElectionAlgorithms` in `PartitionStateMachine.scala`).
//! Kafka 3.9 decides where older descriptions of Kafka differ: a preferred
//! election does not simply make the preferred replica leader, 3.9 requires
//! it to be live and in the ISR; each strategy also writes the new ISR, and
//! an unclean election sets the RECOVERING state (KIP-704).
//!
//! The rule all four share: the **AR order**, not the ISR order, decides.
//! The first replica of the assignment that passes the strategy's test
//! leads; the ISR only says who may.
//!
//! - Offline (new or offline partitions, ElectLeaders UNCLEAN): first AR
//!   replica that is live and in the ISR; failing that, when unclean
//!   election is allowed, the first live AR replica.
//! - Reassign: the same clean rule over the reassignment's target replicas.
//! - Preferred: the first AR replica (the preferred replica), only if it
//!   is live and in the ISR.
//! - Controlled shutdown: first AR replica that is live, in the ISR and not
//!   on a shutting-down broker.
//!
//! "Live", as Kafka means it here: Kafka's `ControllerContext.isReplicaOnline`
//! (used by offline, reassign and preferred) is `isLiveBroker`, which is
//! registered **and not shutting down**; controlled shutdown asks
//! `liveOrShuttingDownBrokerIds` and then excludes the shutting-down brokers
//! itself, so every strategy ends up electing only brokers that are live and
//! not shutting down. [`elect`] therefore takes the registered brokers and
//! the shutting-down ones and subtracts the second from the first. Kafka also
//! treats a replica whose log dir is offline as not online; the caller folds
//! that into `live` for the partition at hand.

use std::collections::BTreeSet;

use crate::protocol::ErrorCode;
use crate::types::mutation::{self, Mutation};
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch};

/// Kafka's LeaderRecoveryState (KIP-704): 0 RECOVERED, 1 RECOVERING.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeaderRecoveryState {
    #[default]
    Recovered,
    /// Set by an unclean election; the leader clears it once it has
    /// recovered (AlterPartition).
    Recovering,
}

impl LeaderRecoveryState {
    /// The wire / znode value.
    pub fn value(self) -> i8 {
        match self {
            Self::Recovered => 0,
            Self::Recovering => 1,
        }
    }

    /// `None` for any value Kafka does not define.
    pub fn from_value(v: i8) -> Option<Self> {
        match v {
            0 => Some(Self::Recovered),
            1 => Some(Self::Recovering),
            _ => None,
        }
    }
}

/// A partition's leader, epoch, ISR (Kafka's LeaderAndIsr as stored in the state znode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderIsr {
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    pub leader_recovery_state: LeaderRecoveryState,
    /// The state znode's zkVersion in ZooKeeper mode.
    pub partition_epoch: PartitionEpoch,
}

/// Kafka's `offlinePartitionLeaderElection`: the first AR replica that is
/// live and in the ISR; else, if `unclean_enabled`, the first live AR
/// replica. The flag is true when the leader comes from outside the ISR.
pub fn offline_partition_leader(
    assignment: &[BrokerId],
    isr: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    unclean_enabled: bool,
) -> Option<(BrokerId, bool /* unclean */)> {
    let in_isr = |r: &BrokerId| isr.contains(r) || mutation::active(Mutation::ElectionOutsideIsr);
    let clean = assignment.iter().find(|r| live.contains(r) && in_isr(r));
    match clean {
        Some(&leader) => Some((leader, false)),
        None if unclean_enabled => assignment
            .iter()
            .find(|r| live.contains(r))
            .map(|&leader| (leader, true)),
        None => None,
    }
}

/// Kafka's `reassignPartitionLeaderElection`: the first replica of the
/// reassignment's target list that is live and in the current ISR.
pub fn reassign_partition_leader(
    reassignment: &[BrokerId],
    isr: &[BrokerId],
    live: &BTreeSet<BrokerId>,
) -> Option<BrokerId> {
    reassignment
        .iter()
        .copied()
        .find(|r| live.contains(r) && isr.contains(r))
}

/// Kafka's `preferredReplicaPartitionLeaderElection`: the first AR replica,
/// only if it is live and in the ISR; no other replica is tried.
pub fn preferred_replica_leader(
    assignment: &[BrokerId],
    isr: &[BrokerId],
    live: &BTreeSet<BrokerId>,
) -> Option<BrokerId> {
    assignment
        .first()
        .copied()
        .filter(|r| live.contains(r) && isr.contains(r))
}

/// Kafka's `controlledShutdownPartitionLeaderElection`: the first AR
/// replica that is live, in the ISR and not shutting down.
pub fn controlled_shutdown_leader(
    assignment: &[BrokerId],
    isr: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    shutting_down: &BTreeSet<BrokerId>,
) -> Option<BrokerId> {
    assignment
        .iter()
        .copied()
        .find(|r| live.contains(r) && isr.contains(r) && !shutting_down.contains(r))
}

/// Kafka's `PartitionLeaderElectionStrategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `allow_unclean`: Kafka ORs the strategy's flag (ElectLeaders UNCLEAN
    /// from an admin client) with the topic's
    /// `unclean.leader.election.enable`; the caller passes the result.
    Offline {
        allow_unclean: bool,
    },
    Reassign,
    Preferred,
    ControlledShutdown,
}

/// Why no leader was elected, with the code Kafka 3.9 answers ElectLeaders
/// with (`KafkaController.processReplicaLeaderElection`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElectionError {
    /// No replica passes the strategy's test (offline with no live ISR
    /// replica and unclean off, reassign, controlled shutdown). Kafka's
    /// `StateChangeFailedException` for a non-preferred election.
    #[error("Failed to elect leader under strategy {strategy:?}: no eligible replica is live and in the ISR")]
    EligibleLeadersNotAvailable { strategy: Strategy },
    /// The preferred replica is not live or not in the ISR (`preferred` is
    /// `BrokerId::NONE` when the assignment is empty).
    #[error("Failed to elect the preferred replica {preferred}: it is not live or not in the ISR")]
    PreferredLeaderNotAvailable { preferred: BrokerId },
    /// The preferred replica already leads.
    #[error("Leader election not needed: preferred replica {leader} is already the leader")]
    ElectionNotNeeded { leader: BrokerId },
}

impl ElectionError {
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::EligibleLeadersNotAvailable { .. } => ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
            Self::PreferredLeaderNotAvailable { .. } => ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
            Self::ElectionNotNeeded { .. } => ErrorCode::ELECTION_NOT_NEEDED,
        }
    }
}

/// The new leader and ISR for `current` under `strategy` (Kafka 3.9
/// `Election.leaderForOffline / leaderForReassign / leaderForPreferredReplica
/// / leaderForControlledShutdown`).
///
/// - `assignment`: the partition's AR; for [`Strategy::Reassign`], the
///   reassignment's target replicas (Kafka's `newReplicas`).
/// - `live`: registered brokers (with or without the shutting-down ones:
///   those are subtracted here, see the module header).
///
/// The result has leader_epoch + 1 and the ISR Kafka computes for the
/// strategy: offline clean = current ISR ∩ online, ISR order kept, recovery
/// state kept (`newLeaderAndIsr`); offline unclean = `[leader]` and
/// `Recovering` (`newRecoveringLeaderAndIsr`; Kafka does so from IBP 3.2,
/// always true at IBP 3.9); controlled shutdown = current ISR minus the
/// shutting-down brokers (dead ones are not removed, as in Kafka); reassign
/// and preferred = ISR unchanged (`newLeader`). partition_epoch is unchanged:
/// the caller's conditional write of the state znode bumps it.
///
/// Preferred answers [`ElectionError::ElectionNotNeeded`] when the preferred
/// replica already leads: Kafka checks that before electing, in
/// `processReplicaLeaderElection`, and its auto-rebalance only picks
/// imbalanced partitions, so no Kafka path re-elects a preferred leader.
/// The ElectLeaders UNCLEAN check ("the current leader is live") is not made
/// here, because the offline strategy also serves elections that must run
/// regardless; the caller makes it.
pub fn elect(
    strategy: Strategy,
    current: &LeaderIsr,
    assignment: &[BrokerId],
    live: &BTreeSet<BrokerId>,
    shutting_down: &BTreeSet<BrokerId>,
) -> Result<LeaderIsr, ElectionError> {
    let online: BTreeSet<BrokerId> = live.difference(shutting_down).copied().collect();
    let not_available = ElectionError::EligibleLeadersNotAvailable { strategy };
    let elected = match strategy {
        Strategy::Offline { allow_unclean } => {
            let (leader, unclean) =
                offline_partition_leader(assignment, &current.isr, &online, allow_unclean)
                    .ok_or(not_available)?;
            if unclean {
                next(
                    current,
                    leader,
                    vec![leader],
                    LeaderRecoveryState::Recovering,
                )
            } else {
                let mut isr: Vec<BrokerId> = current
                    .isr
                    .iter()
                    .copied()
                    .filter(|r| online.contains(r))
                    .collect();
                if mutation::active(Mutation::ElectionOutsideIsr) && !isr.contains(&leader) {
                    isr.push(leader);
                }
                next(current, leader, isr, current.leader_recovery_state)
            }
        }
        Strategy::Reassign => {
            let leader = reassign_partition_leader(assignment, &current.isr, &online)
                .ok_or(not_available)?;
            next(
                current,
                leader,
                current.isr.clone(),
                current.leader_recovery_state,
            )
        }
        Strategy::Preferred => {
            let preferred = assignment.first().copied().unwrap_or(BrokerId::NONE);
            if preferred != BrokerId::NONE && preferred == current.leader {
                return Err(ElectionError::ElectionNotNeeded { leader: preferred });
            }
            let leader = preferred_replica_leader(assignment, &current.isr, &online)
                .ok_or(ElectionError::PreferredLeaderNotAvailable { preferred })?;
            next(
                current,
                leader,
                current.isr.clone(),
                current.leader_recovery_state,
            )
        }
        Strategy::ControlledShutdown => {
            let leader = controlled_shutdown_leader(assignment, &current.isr, live, shutting_down)
                .ok_or(not_available)?;
            let isr = current
                .isr
                .iter()
                .copied()
                .filter(|r| !shutting_down.contains(r))
                .collect();
            next(current, leader, isr, current.leader_recovery_state)
        }
    };
    debug_assert!(
        elected.isr.contains(&elected.leader),
        "elected leader {} outside its ISR {:?}",
        elected.leader,
        elected.isr
    );
    Ok(elected)
}

/// Kafka's `LeaderAndIsr.newLeaderAndIsr`: a new leader in the next epoch.
fn next(
    current: &LeaderIsr,
    leader: BrokerId,
    isr: Vec<BrokerId>,
    leader_recovery_state: LeaderRecoveryState,
) -> LeaderIsr {
    LeaderIsr {
        leader,
        // Saturating: an epoch read from a corrupt znode must not panic us.
        leader_epoch: LeaderEpoch(current.leader_epoch.0.saturating_add(1)),
        isr,
        leader_recovery_state,
        partition_epoch: current.partition_epoch,
    }
}

#[cfg(test)]
mod tests;
