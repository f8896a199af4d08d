//! `[pure]` Leader elections in the controller core (Kafka 3.9
//! `ZkPartitionStateMachine.electLeaderForPartitions` with
//! `doElectLeaderForPartitions`): each partition's new leadership is
//! chosen by the election strategy on its current one, written to its
//! state znode conditioned on its partition epoch, and its replicas told.
//! A partition whose znode moved (BadVersion) is re-read and tried once
//! more. For the offline election a topic's
//! `unclean.leader.election.enable` is read first, only for topics with a
//! partition whose ISR has no online member (only those can need it).

use std::collections::BTreeMap;

use super::{ControllerAction, ControllerCore, WriteFailure};
use crate::controller::context::{ControllerContext, Leadership};
use crate::controller::leader_election::{self, LeaderIsr, Strategy};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, PartitionEpoch, TopicPartition};

#[cfg(test)]
mod tests;

/// Which election an Offline/Online → Online change runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionKind {
    /// `OfflinePartitionLeaderElectionStrategy`; unclean per topic config.
    Offline,
    ControlledShutdown,
    /// `PreferredReplicaPartitionLeaderElectionStrategy` (ElectLeaders
    /// PREFERRED, `/admin/preferred_replica_election`, auto rebalance).
    Preferred,
    /// ElectLeaders UNCLEAN: the offline strategy with unclean allowed
    /// whatever the topic says (Kafka ORs the request's flag in).
    Unclean,
    /// `ReassignPartitionLeaderElectionStrategy`: the first target replica
    /// live and in the ISR (the assignment is the target by then).
    Reassign,
}

/// Partitions an election could not give a leader, with Kafka's error
/// and message for ElectLeaders.
pub type ElectionFailures = BTreeMap<TopicPartition, (ErrorCode, String)>;

/// How many times a partition is written: once, and once more after its
/// znode was found moved and re-read.
const ATTEMPTS: u8 = 2;

/// An election under way.
#[derive(Debug)]
pub(super) struct ElectionJob {
    kind: ElectionKind,
    default_unclean: bool,
    /// `unclean.leader.election.enable` per topic, as read.
    unclean: BTreeMap<String, bool>,
    pending: Vec<TopicPartition>,
    attempt: u8,
    /// The leaderships being written.
    plans: Vec<(TopicPartition, LeaderIsr)>,
    elected: Vec<TopicPartition>,
    failed: ElectionFailures,
}

impl ControllerCore {
    pub(super) fn on_elect(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        parts: Vec<TopicPartition>,
        kind: ElectionKind,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        self.elections.insert(
            job,
            ElectionJob {
                kind,
                default_unclean,
                unclean: BTreeMap::new(),
                pending: parts,
                attempt: 0,
                plans: Vec::new(),
                elected: Vec::new(),
                failed: ElectionFailures::new(),
            },
        );
        self.election_round(ctx, job)
    }

    /// The topics' unclean settings read: plan and write.
    pub(super) fn on_unclean_read(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
        settings: BTreeMap<String, bool>,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.elections.get_mut(&job) else {
            return Vec::new();
        };
        j.unclean.extend(settings);
        self.plan_and_write(ctx, job)
    }

    /// The moved znodes re-read: the context takes them, and the next
    /// attempt runs.
    pub(super) fn on_leaderships_reloaded(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        job: u64,
        states: Vec<(TopicPartition, Leadership)>,
    ) -> Vec<ControllerAction> {
        if !self.elections.contains_key(&job) {
            return Vec::new();
        }
        if let Some(ctx) = ctx.as_deref_mut() {
            ctx.leadership.extend(states);
        }
        self.election_round(ctx, job)
    }

    /// One attempt: read what the offline election needs, else plan.
    fn election_round(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.elections.get(&job) else {
            return Vec::new();
        };
        if ctx.is_none() || j.pending.is_empty() || j.attempt >= ATTEMPTS {
            return self.finish_election(ctx, job);
        }
        let Some(ctx) = ctx else {
            return Vec::new();
        };
        if j.kind == ElectionKind::Offline {
            let mut topics: Vec<String> = j
                .pending
                .iter()
                .filter(|tp| {
                    ctx.leadership.get(*tp).is_some_and(|l| {
                        !l.leader_isr
                            .isr
                            .iter()
                            .any(|r| ctx.is_replica_online(*r, tp))
                    })
                })
                .map(|tp| tp.topic.to_string())
                .filter(|t| !j.unclean.contains_key(t))
                .collect();
            topics.sort();
            topics.dedup();
            if !topics.is_empty() {
                return vec![ControllerAction::ReadUncleanSettings { job, topics }];
            }
        }
        self.plan_and_write(Some(ctx), job)
    }

    fn plan_and_write(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return self.finish_election(None, job);
        };
        let Some(j) = self.elections.get_mut(&job) else {
            return Vec::new();
        };
        let plans = plan_elections(
            ctx,
            &j.pending,
            j.kind,
            &j.unclean,
            j.default_unclean,
            &mut j.failed,
        );
        // Kafka's UncleanLeaderElectionsPerSec: a leader from outside the
        // ISR it had.
        let unclean = plans
            .iter()
            .filter(|(tp, new)| {
                ctx.leadership
                    .get(tp)
                    .is_some_and(|old| !old.leader_isr.isr.contains(&new.leader))
            })
            .count() as u64;
        if plans.is_empty() {
            j.pending.clear();
            return self.finish_election(Some(ctx), job);
        }
        j.plans = plans.clone();
        let mut actions = Vec::new();
        if unclean > 0 {
            actions.push(ControllerAction::UncleanElections(unclean));
        }
        actions.push(ControllerAction::WriteLeaderships {
            token: job,
            writes: plans,
        });
        actions
    }

    /// The planned leaderships written (or not): the written ones are
    /// taken and their replicas told; the moved ones re-read and retried.
    pub(super) fn on_election_written(
        &mut self,
        mut ctx: Option<&mut ControllerContext>,
        job: u64,
        results: Vec<Result<PartitionEpoch, WriteFailure>>,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.elections.get_mut(&job) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let mut retry = Vec::new();
        let mut results = results.into_iter();
        for (tp, new) in std::mem::take(&mut j.plans) {
            match results.next() {
                Some(Ok(version)) => {
                    if let Some(ctx) = ctx.as_deref_mut() {
                        let recipients = take_elected(ctx, j.kind, &tp, new, version);
                        actions.push(ControllerAction::LeaderAndIsr {
                            recipients,
                            partition: tp.clone(),
                            is_new: false,
                        });
                    }
                    j.elected.push(tp);
                }
                Some(Err(WriteFailure::BadVersion(_))) if j.attempt == 0 => retry.push(tp),
                failure => {
                    let (code, message) = match failure {
                        Some(Err(WriteFailure::NotController(m))) => (ErrorCode::NOT_CONTROLLER, m),
                        Some(Err(WriteFailure::BadVersion(m) | WriteFailure::Other(m))) => {
                            (ErrorCode::UNKNOWN_SERVER_ERROR, m)
                        }
                        _ => (ErrorCode::UNKNOWN_SERVER_ERROR, "no write result".into()),
                    };
                    tracing::warn!(partition = %tp, error = %message, "writing the elected leader");
                    j.failed.insert(tp, (code, message));
                }
            }
        }
        j.attempt += 1;
        j.pending = retry.clone();
        if retry.is_empty() {
            actions.extend(self.finish_election(ctx, job));
        } else {
            actions.push(ControllerAction::ReloadLeaderships { job, parts: retry });
        }
        actions
    }

    /// The election is over: its verdict, or (an election of a
    /// partition state change) that change goes on.
    fn finish_election(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        job: u64,
    ) -> Vec<ControllerAction> {
        let Some(j) = self.elections.remove(&job) else {
            return Vec::new();
        };
        if let Some(super::flows::Parent::Partitions(parent)) = self.parents.get(&job).copied() {
            self.parents.remove(&job);
            return self.finish_partitions(ctx, parent, j.elected);
        }
        let verdict = ControllerAction::Elected {
            job,
            elected: j.elected,
            failed: j.failed,
        };
        self.sub_job_done(ctx, job, verdict)
    }
}

/// The context takes `tp`'s new leadership (written at `version`); the
/// replicas to tell: the live ones, and for controlled shutdown the
/// shutting-down one too (it becomes a follower).
fn take_elected(
    ctx: &mut ControllerContext,
    kind: ElectionKind,
    tp: &TopicPartition,
    mut leader_isr: LeaderIsr,
    version: PartitionEpoch,
) -> Vec<BrokerId> {
    leader_isr.partition_epoch = version;
    ctx.put_leadership(tp.clone(), leader_isr);
    let registered = ctx.live_or_shutting_down();
    let live = ctx.live();
    ctx.replicas(tp)
        .iter()
        .copied()
        .filter(|r| match kind {
            ElectionKind::ControlledShutdown => registered.contains(r),
            _ => live.contains(r),
        })
        .collect()
}

/// The new leadership of each of `pending` under `kind` (unclean per
/// topic from `unclean_by_topic`, else `default_unclean`); partitions
/// without one go to `failed` with why.
fn plan_elections(
    ctx: &ControllerContext,
    pending: &[TopicPartition],
    kind: ElectionKind,
    unclean_by_topic: &BTreeMap<String, bool>,
    default_unclean: bool,
    failed: &mut ElectionFailures,
) -> Vec<(TopicPartition, LeaderIsr)> {
    let mut plans = Vec::new();
    for tp in pending {
        // Kafka's `isReplicaOnline`: a replica in a failed log dir is out.
        let live = ctx.live_for(tp);
        let Some(current) = ctx.leadership.get(tp) else {
            tracing::warn!(partition = %tp, "no leadership to elect from");
            failed.insert(
                tp.clone(),
                (
                    ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
                    format!("Partition {tp} has no leadership to elect from"),
                ),
            );
            continue;
        };
        let strategy = match kind {
            ElectionKind::Offline => Strategy::Offline {
                allow_unclean: unclean_by_topic
                    .get(&*tp.topic)
                    .copied()
                    .unwrap_or(default_unclean),
            },
            ElectionKind::ControlledShutdown => Strategy::ControlledShutdown,
            ElectionKind::Preferred => Strategy::Preferred,
            ElectionKind::Unclean => Strategy::Offline {
                allow_unclean: true,
            },
            ElectionKind::Reassign => Strategy::Reassign,
        };
        match leader_election::elect(
            strategy,
            &current.leader_isr,
            ctx.replicas(tp),
            &live,
            &ctx.shutting_down,
        ) {
            Ok(new) => plans.push((tp.clone(), new)),
            Err(e) => {
                tracing::warn!(partition = %tp, reason = %e, "no leader elected");
                failed.insert(tp.clone(), (e.code(), e.to_string()));
            }
        }
    }
    plans
}
