//! `[pure]` Which partitions a leader election asked of the controller
//! should run, and which the auto leader rebalance picks (Kafka 3.9
//! `KafkaController.processReplicaLeaderElection` and
//! `checkAndTriggerAutoLeaderRebalance`).
//!
//! Both work on the controller's context as plain maps, so the rules are
//! tested here without ZooKeeper; the driver (`zk_mode::preferred`) runs
//! the elections these pick and writes their state znodes.

use std::collections::{BTreeMap, BTreeSet};

use super::context::ControllerContext;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};

/// ElectLeaders' `election_type` (KIP-460): 0 PREFERRED, 1 UNCLEAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    Preferred,
    Unclean,
}

impl ElectionType {
    /// The wire value's type; `None` for a value Kafka does not define
    /// (answered INVALID_REQUEST).
    pub fn from_wire(v: i8) -> Option<Self> {
        match v {
            0 => Some(Self::Preferred),
            1 => Some(Self::Unclean),
            _ => None,
        }
    }
}

/// A partition's outcome: its new leader once elected, else Kafka's error
/// and message.
pub type ElectionResult = Result<BrokerId, (ErrorCode, String)>;

/// The partitions of an election request split into those to elect and
/// those already answered (`processReplicaLeaderElection` before
/// `onReplicaElection`):
/// - not in the context: UNKNOWN_TOPIC_OR_PARTITION;
/// - of a topic queued for deletion: INVALID_TOPIC_EXCEPTION;
/// - PREFERRED where the first AR replica already leads, UNCLEAN where the
///   leader is live: ELECTION_NOT_NEEDED.
pub fn plan_election(
    ctx: &ControllerContext,
    asked: &BTreeSet<TopicPartition>,
    kind: ElectionType,
) -> (
    Vec<TopicPartition>,
    BTreeMap<TopicPartition, ElectionResult>,
) {
    let live = ctx.live();
    let mut elect = Vec::new();
    let mut answered = BTreeMap::new();
    for tp in asked {
        let Some(replicas) = ctx.assignments.get(tp) else {
            answered.insert(
                tp.clone(),
                Err((
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    "The partition does not exist.".to_owned(),
                )),
            );
            continue;
        };
        if ctx.topics_to_delete.contains(&*tp.topic) {
            answered.insert(
                tp.clone(),
                Err((
                    ErrorCode::INVALID_TOPIC_EXCEPTION,
                    "The topic is being deleted".to_owned(),
                )),
            );
            continue;
        }
        let leader = ctx.leadership.get(tp).map(|l| l.leader_isr.leader);
        let needed = match kind {
            ElectionType::Preferred => replicas.first().copied() != leader,
            ElectionType::Unclean => leader.is_none_or(|l| !live.contains(&l)),
        };
        if needed {
            elect.push(tp.clone());
        } else {
            answered.insert(
                tp.clone(),
                Err((
                    ErrorCode::ELECTION_NOT_NEEDED,
                    "Leader election not needed".to_owned(),
                )),
            );
        }
    }
    (elect, answered)
}

/// The partitions the auto leader rebalance moves back to their preferred
/// replica (`checkAndTriggerAutoLeaderRebalance`): per preferred broker
/// (first AR replica; topics queued for deletion left out), the share of
/// its partitions led by another broker; where that share exceeds
/// `imbalance_percent` / 100, each such partition whose preferred replica
/// is live (and not shutting down) and in the ISR.
pub fn imbalanced_partitions(
    ctx: &ControllerContext,
    imbalance_percent: u32,
) -> Vec<TopicPartition> {
    let live = ctx.live();
    let mut by_preferred: BTreeMap<BrokerId, Vec<&TopicPartition>> = BTreeMap::new();
    for (tp, replicas) in &ctx.assignments {
        if ctx.topics_to_delete.contains(&*tp.topic) {
            continue;
        }
        if let Some(first) = replicas.first() {
            by_preferred.entry(*first).or_default().push(tp);
        }
    }
    let mut out = Vec::new();
    for (preferred, parts) in by_preferred {
        let not_led: Vec<&TopicPartition> = parts
            .iter()
            .copied()
            .filter(|tp| {
                ctx.leadership
                    .get(*tp)
                    .is_some_and(|l| l.leader_isr.leader != preferred)
            })
            .collect();
        // Kafka compares doubles: ratio > percentage / 100.
        let ratio = not_led.len() as f64 / parts.len() as f64;
        if ratio <= f64::from(imbalance_percent) / 100.0 {
            continue;
        }
        out.extend(
            not_led
                .into_iter()
                .filter(|tp| {
                    live.contains(&preferred)
                        && ctx
                            .leadership
                            .get(*tp)
                            .is_some_and(|l| l.leader_isr.isr.contains(&preferred))
                })
                .cloned(),
        );
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests;
