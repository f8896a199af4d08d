//! `[pure]` Brokers joining and leaving (Kafka 3.9
//! `KafkaController.processBrokerChange`, `onBrokerStartup`,
//! `onBrokerFailure` → `onReplicasBecomeOffline`) as a flow of the
//! controller core.
//!
//! The registered brokers re-read from `/brokers/ids` are compared with the
//! context's: new ones start, gone ones fail, and a broker registered again
//! with a newer epoch (bounced) fails then starts. Kafka's
//! `processBrokerChange` takes a bounced broker out of the live set for its
//! `onBrokerFailure` (the partitions it led go offline and elect) and back
//! for its `onBrokerStartup` (offline partitions elect again, now with
//! it): a partition whose ISR is that broker alone is led by it again,
//! instead of keeping a leader of -1 that nothing re-elects.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::super::{ControllerAction, ControllerCore, ElectionKind};
use super::Flow;
use crate::controller::brokers::LiveBroker;
use crate::controller::context::ControllerContext;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::types::{BrokerId, TopicPartition};

/// A broker change under way: the steps left and where the current one is.
#[derive(Debug)]
pub(in crate::controller::core) struct BrokersFlow {
    default_unclean: bool,
    steps: VecDeque<Step>,
    at: At,
}

#[derive(Debug)]
enum Step {
    Startup(BTreeSet<BrokerId>),
    Failure(BTreeSet<BrokerId>),
    /// `onReplicasBecomeOffline` for these replicas (a log dir failed).
    ReplicasOffline(Vec<(TopicPartition, BrokerId)>),
    /// The registered brokers as read (a bounced broker back in).
    RestoreLive(Vec<LiveBroker>),
}

/// What the current step waits for: a sub-job, a duty, or a send (the
/// core stops at each send, so what the batch holds is built from the
/// context as it is then, not as later steps leave it).
#[derive(Debug)]
enum At {
    Nothing,
    /// Startup: the others told of the new brokers; next the new ones.
    StartupTellNew {
        new: BTreeSet<BrokerId>,
    },
    /// Startup: the new ones told; next their replicas go Online.
    StartupOnline {
        new: BTreeSet<BrokerId>,
    },
    /// Startup: the new brokers' replicas (`on_new`) going Online.
    StartupReplicas(Startup),
    /// Startup: those sent; next New and Offline partitions elect.
    StartupTrigger(Startup),
    /// Startup: New and Offline partitions electing.
    StartupPartitions(Startup),
    /// Startup: those sent; next the moves waiting for them resume.
    StartupResume(Startup),
    /// Startup: the moves waiting for these brokers resuming.
    StartupReassignments(Startup),
    /// Startup: deletions resuming.
    StartupDeletions,
    /// Failure: partitions led by a dead replica going Offline.
    FailureOffline(Offline),
    /// Failure: New and Offline partitions electing.
    FailureElecting(Offline),
    /// Failure: the elections sent; next the dead replicas go Offline.
    FailureStop(Offline),
    /// Failure: the dead replicas going Offline.
    FailureReplicas(Offline),
    /// Failure: those sent; next the deletions of dead replicas fail.
    FailureSent(Offline),
    /// Failure: the deletions of dead replicas failing.
    FailureDeletion(Offline),
    /// Failure: the last UpdateMetadata sent.
    FailureDone,
}

/// A startup's brokers and their replicas.
#[derive(Debug)]
struct Startup {
    new: BTreeSet<BrokerId>,
    on_new: Vec<(TopicPartition, BrokerId)>,
}

/// `onReplicasBecomeOffline`'s replicas, split by whether their topic is
/// being deleted, and whether any partition got a leader.
#[derive(Debug)]
struct Offline {
    for_deletion: Vec<(TopicPartition, BrokerId)>,
    not_for_deletion: Vec<(TopicPartition, BrokerId)>,
    elected_any: bool,
}

impl ControllerCore {
    /// `onReplicasBecomeOffline` alone (replicas in a failed log dir);
    /// ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_replicas_offline(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        self.flows.insert(
            token,
            Flow::Brokers(BrokersFlow {
                default_unclean,
                steps: VecDeque::from([Step::ReplicasOffline(replicas)]),
                at: At::Nothing,
            }),
        );
        self.next_broker_step(ctx, token)
    }

    /// `processBrokerChange` with the registered brokers `live` (as read
    /// from `/brokers/ids`); ends with [`ControllerAction::FlowDone`].
    pub(in crate::controller::core) fn on_broker_change(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        live: Vec<LiveBroker>,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            return vec![ControllerAction::FlowDone { token }];
        };
        let before: BTreeMap<BrokerId, i64> =
            ctx.live_brokers.iter().map(|b| (b.id, b.epoch)).collect();
        let now: BTreeMap<BrokerId, i64> = live.iter().map(|b| (b.id, b.epoch)).collect();
        let new: BTreeSet<BrokerId> = now
            .keys()
            .filter(|b| !before.contains_key(b))
            .copied()
            .collect();
        let dead: BTreeSet<BrokerId> = before
            .keys()
            .filter(|b| !now.contains_key(b))
            .copied()
            .collect();
        let bounced: BTreeSet<BrokerId> = now
            .iter()
            .filter(|(b, e)| before.get(b).is_some_and(|old| *e > old))
            .map(|(b, _)| *b)
            .collect();
        let read = live.clone();
        ctx.live_brokers = live.clone();
        ctx.live_brokers.retain(|b| !bounced.contains(&b.id));
        tracing::info!(new = ?new, dead = ?dead, bounced = ?bounced, "brokers changed");
        let mut steps = VecDeque::new();
        if !new.is_empty() {
            steps.push_back(Step::Startup(new));
        }
        if !bounced.is_empty() {
            steps.push_back(Step::Failure(bounced.clone()));
            steps.push_back(Step::RestoreLive(live));
            steps.push_back(Step::Startup(bounced));
        }
        if !dead.is_empty() {
            steps.push_back(Step::Failure(dead));
        }
        self.flows.insert(
            token,
            Flow::Brokers(BrokersFlow {
                default_unclean,
                steps,
                at: At::Nothing,
            }),
        );
        let mut actions = vec![ControllerAction::BrokersChanged { live: read }];
        actions.extend(self.next_broker_step(Some(ctx), token));
        actions
    }

    /// The next step of a broker change, or its end.
    fn next_broker_step(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
    ) -> Vec<ControllerAction> {
        let Some(ctx) = ctx else {
            self.flows.remove(&token);
            return vec![ControllerAction::FlowDone { token }];
        };
        let mut actions = Vec::new();
        loop {
            let Some(Flow::Brokers(f)) = self.flows.get_mut(&token) else {
                return actions;
            };
            match f.steps.pop_front() {
                None => {
                    self.flows.remove(&token);
                    actions.push(ControllerAction::FlowDone { token });
                    return actions;
                }
                Some(Step::RestoreLive(live)) => ctx.live_brokers = live,
                Some(Step::Startup(new)) => {
                    actions.extend(self.broker_startup(ctx, token, new));
                    return actions;
                }
                Some(Step::Failure(dead)) => {
                    for b in &dead {
                        ctx.shutting_down.remove(b);
                        ctx.replicas_on_offline_dirs.remove(b);
                    }
                    let replicas = ctx.replicas_on(&dead);
                    actions.extend(self.replicas_offline(ctx, token, replicas));
                    return actions;
                }
                Some(Step::ReplicasOffline(replicas)) => {
                    actions.extend(self.replicas_offline(ctx, token, replicas));
                    return actions;
                }
            }
        }
    }

    /// `onBrokerStartup`: the others learn of the new brokers, the new ones
    /// learn everything; then their replicas go Online.
    fn broker_startup(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        new: BTreeSet<BrokerId>,
    ) -> Vec<ControllerAction> {
        // A restarted broker's log dirs are back (Kafka clears
        // `replicasOnOfflineDirs` for it).
        ctx.replicas_on_offline_dirs.retain(|b, _| !new.contains(b));
        let existing: Vec<BrokerId> = ctx
            .live_or_shutting_down()
            .into_iter()
            .filter(|b| !new.contains(b))
            .collect();
        self.send_then(token, At::StartupTellNew { new }, {
            vec![ControllerAction::UpdateMetadataAll { brokers: existing }]
        })
    }

    /// `onReplicasBecomeOffline`: partitions led by one of `replicas` go
    /// Offline, then New and Offline ones elect (and the replicas go
    /// Offline, deletions waiting on them fail).
    fn replicas_offline(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        replicas: Vec<(TopicPartition, BrokerId)>,
    ) -> Vec<ControllerAction> {
        let (for_deletion, not_for_deletion): (Vec<_>, Vec<_>) = replicas
            .into_iter()
            .partition(|(tp, _)| ctx.topics_to_delete.contains(&*tp.topic));
        let offline_leaders = ctx.partitions_with_offline_leader();
        self.set_at(
            token,
            At::FailureOffline(Offline {
                for_deletion,
                not_for_deletion,
                elected_any: false,
            }),
        );
        let sub = self.sub_for(token);
        let default_unclean = self.flow_unclean(token);
        self.on_partitions_to(
            Some(ctx),
            sub,
            offline_leaders,
            PartitionState::Offline,
            ElectionKind::Offline,
            default_unclean,
        )
    }

    /// A sub-job or a driver duty of a broker change ended (`online`: the
    /// partitions a partition state change put Online).
    pub(in crate::controller::core) fn resume_brokers(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        online: &[TopicPartition],
    ) -> Vec<ControllerAction> {
        let at = match self.flows.get_mut(&token) {
            Some(Flow::Brokers(f)) => std::mem::replace(&mut f.at, At::Nothing),
            _ => return Vec::new(),
        };
        let Some(ctx) = ctx else {
            return self.next_broker_step(None, token);
        };
        let default_unclean = self.flow_unclean(token);
        match at {
            At::Nothing => self.next_broker_step(Some(ctx), token),
            At::StartupTellNew { new } => {
                let tell = vec![ControllerAction::UpdateMetadataAll {
                    brokers: new.iter().copied().collect(),
                }];
                self.send_then(token, At::StartupOnline { new }, tell)
            }
            At::StartupOnline { new } => {
                let on_new = ctx.replicas_on(&new);
                let replicas = on_new.clone();
                self.set_at(token, At::StartupReplicas(Startup { new, on_new }));
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, replicas, ReplicaState::Online)
            }
            At::StartupReplicas(st) => self.send_then(token, At::StartupTrigger(st), Vec::new()),
            At::StartupTrigger(st) => {
                self.set_at(token, At::StartupPartitions(st));
                self.trigger_online(ctx, token, default_unclean)
            }
            At::StartupPartitions(st) => self.send_then(token, At::StartupResume(st), Vec::new()),
            At::StartupResume(st) => {
                // Moves waiting for one of these brokers go on.
                let which = super::ResumeWhich::TargetOn(st.new.clone());
                self.set_at(token, At::StartupReassignments(st));
                self.resume_reassignments_of(ctx, token, which)
            }
            At::StartupReassignments(st) => {
                let resumed: BTreeSet<String> = st
                    .on_new
                    .iter()
                    .map(|(tp, _)| tp.topic.to_string())
                    .filter(|t| ctx.topics_to_delete.contains(t))
                    .collect();
                if resumed.is_empty() {
                    return self.next_broker_step(Some(ctx), token);
                }
                for t in &resumed {
                    ctx.ineligible_for_deletion.remove(t);
                }
                self.set_at(token, At::StartupDeletions);
                self.resume_deletions_of(ctx, token)
            }
            At::StartupDeletions | At::FailureDone => self.next_broker_step(Some(ctx), token),
            At::FailureOffline(o) => {
                self.set_at(token, At::FailureElecting(o));
                self.trigger_online(ctx, token, default_unclean)
            }
            At::FailureElecting(mut o) => {
                o.elected_any = !online.is_empty();
                self.send_then(token, At::FailureStop(o), Vec::new())
            }
            At::FailureStop(o) => {
                let replicas = o.not_for_deletion.clone();
                self.set_at(token, At::FailureReplicas(o));
                let sub = self.sub_for(token);
                self.on_replicas_to(Some(ctx), sub, replicas, ReplicaState::Offline)
            }
            At::FailureReplicas(o) => self.send_then(token, At::FailureSent(o), Vec::new()),
            At::FailureSent(o) => {
                if o.for_deletion.is_empty() {
                    return self.after_failure(ctx, token, &o);
                }
                let replicas = o.for_deletion.clone();
                self.set_at(token, At::FailureDeletion(o));
                self.fail_replica_deletion(ctx, token, replicas)
            }
            At::FailureDeletion(o) => self.after_failure(ctx, token, &o),
        }
    }

    /// UpdateMetadata when nothing else told the brokers, then the next
    /// step.
    fn after_failure(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        o: &Offline,
    ) -> Vec<ControllerAction> {
        if o.not_for_deletion.is_empty() && !o.elected_any {
            let tell = vec![ControllerAction::UpdateMetadataAll {
                brokers: ctx.live_or_shutting_down().into_iter().collect(),
            }];
            return self.send_then(token, At::FailureDone, tell);
        }
        self.next_broker_step(Some(ctx), token)
    }

    /// `triggerOnlinePartitionStateChange`: every New or Offline partition
    /// (topics being deleted left out) to Online with the offline election.
    pub(in crate::controller::core) fn trigger_online(
        &mut self,
        ctx: &mut ControllerContext,
        token: u64,
        default_unclean: bool,
    ) -> Vec<ControllerAction> {
        let mut parts = ctx.partition_states.in_state(PartitionState::New);
        parts.extend(ctx.partition_states.in_state(PartitionState::Offline));
        parts.retain(|tp| !ctx.topics_to_delete.contains(&*tp.topic));
        parts.sort();
        let sub = self.sub_for(token);
        self.on_partitions_to(
            Some(ctx),
            sub,
            parts,
            PartitionState::Online,
            ElectionKind::Offline,
            default_unclean,
        )
    }

    /// `actions`, then the batch sent; the flow goes on at `at` once the
    /// driver says it was ([`ControllerEvent::Performed`]).
    ///
    /// [`ControllerEvent::Performed`]: super::super::ControllerEvent::Performed
    fn send_then(
        &mut self,
        token: u64,
        at: At,
        mut actions: Vec<ControllerAction>,
    ) -> Vec<ControllerAction> {
        self.set_at(token, at);
        actions.push(ControllerAction::SendBatch { token });
        actions
    }

    fn set_at(&mut self, token: u64, at: At) {
        if let Some(Flow::Brokers(f)) = self.flows.get_mut(&token) {
            f.at = at;
        }
    }

    fn flow_unclean(&self, token: u64) -> bool {
        matches!(self.flows.get(&token), Some(Flow::Brokers(f)) if f.default_unclean)
    }
}
