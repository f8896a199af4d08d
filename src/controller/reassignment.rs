//! `[pure]` Partition reassignment's bookkeeping (KIP-455; Kafka 3.9
//! `ReplicaAssignment` in `ControllerContext.scala` and the checks of
//! `KafkaController.processApiPartitionReassignment`,
//! `validateReplicas`, `maybeBuildReassignment`, `isReassignmentComplete`
//! and `processListPartitionReassignments`; RS / OAR / RAR as in KIP-455).
//!
//! While a partition moves, its assignment is the full set RS = TRS ∪ OAR
//! (target first, then the origin replicas not in the target), with
//! AR = RS − OAR (adding) and RR = RS − TRS (removing); all three are in
//! `/brokers/topics/<t>` (`partitions`, `adding_replicas`,
//! `removing_replicas`), so a new controller resumes where the old one
//! stopped. The reassignment completes when every target replica is in
//! the ISR. Nothing here does I/O; the driver is `zk_mode::reassign`.

use std::collections::{BTreeMap, BTreeSet};

use super::context::{ControllerContext, Moving};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths::TopicZNode;

/// A partition's full replica assignment (Kafka's `ReplicaAssignment`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplicaAssignment {
    /// RS: every replica, in assignment order.
    pub replicas: Vec<BrokerId>,
    /// AR: replicas being added.
    pub adding: Vec<BrokerId>,
    /// RR: replicas being removed.
    pub removing: Vec<BrokerId>,
}

impl ReplicaAssignment {
    /// An assignment that is not moving.
    pub fn settled(replicas: Vec<BrokerId>) -> Self {
        Self {
            replicas,
            adding: Vec::new(),
            removing: Vec::new(),
        }
    }

    pub fn is_being_reassigned(&self) -> bool {
        !self.adding.is_empty() || !self.removing.is_empty()
    }

    /// OAR: the replicas before the move (`replicas -- adding`).
    pub fn origin(&self) -> Vec<BrokerId> {
        without(&self.replicas, &self.adding)
    }

    /// TRS: the replicas after the move (`replicas -- removing`).
    pub fn target(&self) -> Vec<BrokerId> {
        without(&self.replicas, &self.removing)
    }

    /// `reassignTo`: RS = (target ++ origin).distinct, AR = RS − origin,
    /// RR = RS − target. Reassigning to the origin is a cancellation: the
    /// result is settled on the origin.
    pub fn reassign_to(&self, target: &[BrokerId]) -> Self {
        let origin = self.origin();
        let mut full: Vec<BrokerId> = Vec::with_capacity(target.len() + origin.len());
        for r in target.iter().chain(origin.iter()) {
            if !full.contains(r) {
                full.push(*r);
            }
        }
        Self {
            adding: without(&full, &origin),
            removing: without(&full, target),
            replicas: full,
        }
    }
}

fn without(from: &[BrokerId], minus: &[BrokerId]) -> Vec<BrokerId> {
    from.iter()
        .copied()
        .filter(|r| !minus.contains(r))
        .collect()
}

/// The partition's full assignment, moving replicas included (Kafka's
/// `partitionFullReplicaAssignment`).
pub fn full_assignment(ctx: &ControllerContext, tp: &TopicPartition) -> ReplicaAssignment {
    let moving = ctx.reassignments.get(tp).cloned().unwrap_or_default();
    ReplicaAssignment {
        replicas: ctx.replicas(tp).to_vec(),
        adding: moving.adding,
        removing: moving.removing,
    }
}

/// `updatePartitionFullReplicaAssignment`.
pub fn set_full_assignment(ctx: &mut ControllerContext, tp: &TopicPartition, a: ReplicaAssignment) {
    if a.is_being_reassigned() {
        ctx.reassignments.insert(
            tp.clone(),
            Moving {
                adding: a.adding,
                removing: a.removing,
            },
        );
    } else {
        ctx.reassignments.remove(tp);
    }
    ctx.assignments.insert(tp.clone(), a.replicas);
}

/// Why a partition of a reassignment request was refused: Kafka's error
/// code and message.
pub type Refusal = (ErrorCode, String);

/// `validateReplicas`: a target list must be non-empty, without
/// duplicates or negative ids, and every replica it adds must be on a live
/// broker (INVALID_REPLICA_ASSIGNMENT otherwise).
pub fn validate_target(
    current: &ReplicaAssignment,
    target: &[BrokerId],
    live: &BTreeSet<BrokerId>,
) -> Result<(), Refusal> {
    let invalid = |m: String| Err((ErrorCode::INVALID_REPLICA_ASSIGNMENT, m));
    let distinct: BTreeSet<BrokerId> = target.iter().copied().collect();
    if target.is_empty() {
        return invalid("Empty replica list specified in partition reassignment.".into());
    }
    if distinct.len() != target.len() {
        return invalid(format!(
            "Duplicate replica ids in partition reassignment replica list: {}",
            list(target)
        ));
    }
    if target.iter().any(|r| r.0 < 0) {
        return invalid(format!(
            "Invalid broker id in replica list: {}",
            list(target)
        ));
    }
    let adding = current.reassign_to(target).adding;
    if !adding.iter().all(|r| live.contains(r)) {
        return invalid(format!(
            "Replica assignment has brokers that are not alive. Replica list: {}, live broker list: {}",
            list(&adding),
            list(&live.iter().copied().collect::<Vec<_>>())
        ));
    }
    Ok(())
}

fn list(v: &[BrokerId]) -> String {
    let ids: Vec<String> = v.iter().map(|b| b.0.to_string()).collect();
    format!("[{}]", ids.join(", "))
}

/// What a reassignment request (API or `/admin/reassign_partitions`)
/// comes to: the partitions to (re)start with their new full assignment,
/// and the ones answered at once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub start: BTreeMap<TopicPartition, ReplicaAssignment>,
    pub refused: BTreeMap<TopicPartition, Refusal>,
}

/// `processApiPartitionReassignment` up to `onPartitionReassignment`:
/// per partition, `Some(target)` reassigns, `None` cancels (back to the
/// origin replicas). `validate` is false for the ZooKeeper path, which
/// Kafka does not validate. Unknown partitions and topics being deleted
/// are UNKNOWN_TOPIC_OR_PARTITION; cancelling a partition that is not
/// moving is NO_REASSIGNMENT_IN_PROGRESS.
pub fn plan(
    ctx: &ControllerContext,
    asked: &BTreeMap<TopicPartition, Option<Vec<BrokerId>>>,
    validate: bool,
) -> Plan {
    let live = ctx.live();
    let mut out = Plan::default();
    for (tp, target) in asked {
        let current = full_assignment(ctx, tp);
        if validate {
            if let Some(t) = target {
                if let Err(e) = validate_target(&current, t, &live) {
                    out.refused.insert(tp.clone(), e);
                    continue;
                }
            }
        }
        // maybeBuildReassignment
        let next = match target {
            Some(t) => current.reassign_to(t),
            None if current.is_being_reassigned() => current.reassign_to(&current.origin()),
            None => {
                out.refused.insert(
                    tp.clone(),
                    (
                        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                        "No reassignment in progress".into(),
                    ),
                );
                continue;
            }
        };
        // maybeTriggerPartitionReassignment
        if ctx.topics_to_delete.contains(&*tp.topic) || current.replicas.is_empty() {
            out.refused.insert(
                tp.clone(),
                (
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    "The partition does not exist.".into(),
                ),
            );
            continue;
        }
        out.start.insert(tp.clone(), next);
    }
    out
}

/// `isReassignmentComplete`: not moving, or every target replica in `isr`.
pub fn is_complete(assignment: &ReplicaAssignment, isr: &[BrokerId]) -> bool {
    !assignment.is_being_reassigned() || assignment.target().iter().all(|r| isr.contains(r))
}

/// `processListPartitionReassignments`: the moving partitions among
/// `asked` (every moving partition when `None`).
pub fn list_ongoing(
    ctx: &ControllerContext,
    asked: Option<&BTreeSet<TopicPartition>>,
) -> BTreeMap<TopicPartition, ReplicaAssignment> {
    let wanted: Vec<TopicPartition> = match asked {
        Some(a) => a.iter().cloned().collect(),
        None => ctx.reassignments.keys().cloned().collect(),
    };
    wanted
        .into_iter()
        .filter_map(|tp| {
            let a = full_assignment(ctx, &tp);
            a.is_being_reassigned().then_some((tp, a))
        })
        .collect()
}

/// `/brokers/topics/<topic>` as the context holds it now: every
/// partition's full replica set, and the adding / removing replicas of the
/// moving ones (Kafka's `setTopicAssignment`). `None` for an unknown topic.
pub fn topic_znode(ctx: &ControllerContext, topic: &str) -> Option<TopicZNode> {
    let id = *ctx.topic_ids.get(topic)?;
    let mut z = TopicZNode::new(id, BTreeMap::new());
    if id.is_nil() {
        z.topic_id = None;
    }
    for tp in ctx.partitions_of(topic) {
        let a = full_assignment(ctx, &tp);
        if !a.adding.is_empty() {
            z.adding_replicas.insert(tp.partition, a.adding.clone());
        }
        if !a.removing.is_empty() {
            z.removing_replicas.insert(tp.partition, a.removing.clone());
        }
        z.partitions.insert(tp.partition, a.replicas);
    }
    Some(z)
}

#[cfg(test)]
mod tests;
