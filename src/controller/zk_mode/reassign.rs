//! `[drv]` Partition reassignment on the controller (KIP-455; Kafka 3.9
//! `KafkaController.onPartitionReassignment` and its helpers): AlterPartitionReassignments / ListPartitionReassignments from
//! admin clients, the legacy `/admin/reassign_partitions` znode, and the
//! resumption of moves found in `/brokers/topics/<t>` on failover and when
//! a target broker starts. What to do is decided by
//! `controller::reassignment` [pure]; this module writes the znodes and
//! drives the state machines.
//!
//! The steps, for RS = TRS ∪ OAR, AR = RS − OAR, RR = RS − TRS:
//! 1. `/brokers/topics/<t>` gets RS with AR and RR (`updateCurrentReassignment`;
//!    replicas a superseded move had added and no longer needs are stopped);
//! 2. until every TRS replica is in the ISR: the leader epoch is bumped and
//!    LeaderAndIsr (with RS, AR, RR) goes to every replica; AR replicas
//!    become NewReplica (they start following);
//! 3. once the ISR holds TRS (checked after each ISR change the controller
//!    writes): AR replicas go Online, the assignment becomes TRS, the
//!    leader moves to a TRS replica if it is not one (else the epoch is
//!    bumped), RR replicas go Offline (out of the ISR) and are deleted,
//!    `/brokers/topics/<t>` gets TRS with no AR/RR, the partition leaves
//!    `/admin/reassign_partitions`, and every broker gets UpdateMetadata.

use std::collections::{BTreeMap, BTreeSet};

use super::partitions::{ElectionFailures, ElectionKind};
use super::{Duties, Event, Reply, WriteError, ZkBroker};
use crate::controller::leader_election::LeaderIsr;
use crate::controller::reassignment::{self, Refusal, ReplicaAssignment};
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, TopicPartition};
use crate::zk::paths::{self, ReassignPartitionsZNode};
use crate::zk::store::{MetadataStore, Op, StoreError};

/// Per partition asked, NONE or why not; or NOT_CONTROLLER.
pub type ReassignAnswer = Result<BTreeMap<TopicPartition, Result<(), Refusal>>, ErrorCode>;

/// The moving partitions asked about; or NOT_CONTROLLER.
pub type ListAnswer = Result<BTreeMap<TopicPartition, ReplicaAssignment>, ErrorCode>;

/// A reassignment request: per partition the target replicas, `None` to
/// cancel.
pub type ReassignAsk = BTreeMap<TopicPartition, Option<Vec<BrokerId>>>;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// AlterPartitionReassignments, run in turn with every other event.
    pub async fn request_alter_reassignments(&self, asked: ReassignAsk) -> ReassignAnswer {
        let reply = Reply::new();
        self.enqueue(Event::AlterReassignments {
            asked,
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// ListPartitionReassignments (`None`: every moving partition).
    pub async fn request_list_reassignments(
        &self,
        asked: Option<BTreeSet<TopicPartition>>,
    ) -> ListAnswer {
        let reply = Reply::new();
        self.enqueue(Event::ListReassignments {
            asked,
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// `processListPartitionReassignments`.
    pub(super) fn list_reassignments(&self, asked: Option<BTreeSet<TopicPartition>>) -> ListAnswer {
        self.with_ctx(|ctx| reassignment::list_ongoing(ctx, asked.as_ref()))
            .ok_or(ErrorCode::NOT_CONTROLLER)
    }

    /// `processApiPartitionReassignment`: refused partitions answered, the
    /// others started (or cancelled); a partition asked here leaves the
    /// ZooKeeper reassignment (the latest request wins).
    pub(super) async fn alter_reassignments(&self, asked: ReassignAsk) -> ReassignAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let Some(plan) = self.with_ctx(|ctx| reassignment::plan(ctx, &asked, true)) else {
            return Err(ErrorCode::NOT_CONTROLLER);
        };
        let mut answers: BTreeMap<TopicPartition, Result<(), Refusal>> = plan
            .refused
            .into_iter()
            .map(|(tp, e)| (tp, Err(e)))
            .collect();
        self.maybe_remove_from_zk_reassignment(|tp, _| plan.start.contains_key(tp))
            .await;
        for (tp, a) in plan.start {
            let r = self.start_reassignment(&tp, a).await;
            answers.insert(tp, r);
        }
        Ok(answers)
    }

    /// `onPartitionReassignment` for one partition, its error mapped as
    /// `maybeTriggerPartitionReassignment` answers it.
    async fn start_reassignment(
        &self,
        tp: &TopicPartition,
        a: ReplicaAssignment,
    ) -> Result<(), Refusal> {
        tracing::info!(partition = %tp, replicas = ?a.replicas, adding = ?a.adding, removing = ?a.removing, "reassigning");
        match self.on_partition_reassignment(tp, a).await {
            Ok(()) => Ok(()),
            Err(e @ (WriteError::NotController | WriteError::Moved)) => {
                Err((ErrorCode::NOT_CONTROLLER, e.to_string()))
            }
            Err(e) => {
                tracing::error!(partition = %tp, error = %e, "reassigning");
                Err((ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()))
            }
        }
    }

    /// `onPartitionReassignment` (the module header's steps 1–3).
    pub(super) async fn on_partition_reassignment(
        &self,
        tp: &TopicPartition,
        a: ReplicaAssignment,
    ) -> Result<(), WriteError> {
        self.update_current_reassignment(tp, &a).await?;
        let isr = self
            .with_ctx(|ctx| {
                ctx.leadership
                    .get(tp)
                    .map(|l| l.leader_isr.isr.clone())
                    .unwrap_or_default()
            })
            .ok_or(WriteError::NotController)?;
        if !reassignment::is_complete(&a, &isr) {
            // A1: the leader epoch bumped, every replica told RS/AR/RR.
            self.bump_leader_epoch_and_send(tp).await?;
            // A2: AR replicas not yet started become NewReplica.
            let new: Vec<(TopicPartition, BrokerId)> = self
                .with_ctx(|ctx| {
                    a.adding
                        .iter()
                        .filter(|r| ctx.replica_states.get(tp, **r) == ReplicaState::NonExistent)
                        .map(|r| (tp.clone(), *r))
                        .collect()
                })
                .unwrap_or_default();
            let mut batch = RequestBatch::new();
            self.replicas_to(&new, ReplicaState::New, &mut batch).await;
            self.send_batch(batch);
            return Ok(());
        }
        // B1: AR replicas online.
        let adding: Vec<(TopicPartition, BrokerId)> =
            a.adding.iter().map(|r| (tp.clone(), *r)).collect();
        let mut batch = RequestBatch::new();
        self.replicas_to(&adding, ReplicaState::Online, &mut batch)
            .await;
        self.send_batch(batch);
        // B2: RS = TRS in memory.
        let target = a.target();
        self.with_ctx(|ctx| {
            reassignment::set_full_assignment(ctx, tp, ReplicaAssignment::settled(target.clone()))
        });
        // B3: the leader among TRS.
        self.move_leader_if_required(tp).await?;
        // B4, B5: RR replicas out of the ISR, stopped and deleted.
        self.stop_removed_replicas(tp, &a.removing).await;
        // B6: the final assignment in ZooKeeper.
        self.write_topic_assignment(&tp.topic).await?;
        // B7: out of the legacy znode.
        self.maybe_remove_from_zk_reassignment(|t, replicas| t == tp && replicas == target)
            .await;
        // B8: every broker learns the new replicas and ISR.
        let mut batch = RequestBatch::new();
        self.with_ctx(|ctx| batch.add_update_metadata(ctx.live_or_shutting_down(), [tp.clone()]));
        self.send_batch(batch);
        tracing::info!(partition = %tp, replicas = ?target, "reassignment completed");
        // resumeDeletionForTopics: a deletion that waited for the move.
        if self
            .with_ctx(|ctx| {
                let waiting = ctx.topics_to_delete.contains(&*tp.topic)
                    && !ctx.reassignments.keys().any(|t| t.topic == tp.topic);
                if waiting {
                    ctx.ineligible_for_deletion.remove(&*tp.topic);
                }
                waiting
            })
            .unwrap_or(false)
        {
            self.resume_deletions().await;
        }
        Ok(())
    }

    /// `updateCurrentReassignment`: the new full assignment in ZooKeeper
    /// and in memory; replicas of the previous one it no longer has are
    /// stopped.
    async fn update_current_reassignment(
        &self,
        tp: &TopicPartition,
        a: &ReplicaAssignment,
    ) -> Result<(), WriteError> {
        let current = self
            .with_ctx(|ctx| reassignment::full_assignment(ctx, tp))
            .ok_or(WriteError::NotController)?;
        if current == *a {
            return Ok(());
        }
        self.with_ctx(|ctx| reassignment::set_full_assignment(ctx, tp, a.clone()));
        if let Err(e) = self.write_topic_assignment(&tp.topic).await {
            self.with_ctx(|ctx| reassignment::set_full_assignment(ctx, tp, current));
            return Err(e);
        }
        let unneeded: Vec<BrokerId> = current
            .replicas
            .iter()
            .copied()
            .filter(|r| !a.replicas.contains(r))
            .collect();
        if !unneeded.is_empty() {
            self.stop_removed_replicas(tp, &unneeded).await;
        }
        Ok(())
    }

    /// `/brokers/topics/<topic>` from the context (`setTopicAssignment`,
    /// behind the controller-epoch check).
    async fn write_topic_assignment(&self, topic: &str) -> Result<(), WriteError> {
        let Some(z) = self
            .with_ctx(|ctx| reassignment::topic_znode(ctx, topic))
            .ok_or(WriteError::NotController)?
        else {
            return Ok(());
        };
        self.write_as_controller(vec![Op::Set {
            path: paths::topic(topic),
            data: z.encode(),
            expected_version: None,
        }])
        .await
        .map(|_| ())
    }

    /// `updateLeaderEpochAndSendRequest`: the same leader and ISR in the
    /// next leader epoch, written behind the partition epoch (re-read and
    /// tried once more when it moved), then LeaderAndIsr to every replica
    /// of the full assignment.
    async fn bump_leader_epoch_and_send(&self, tp: &TopicPartition) -> Result<(), WriteError> {
        for attempt in 0..2 {
            let Some(Some(cur)) = self.with_ctx(|ctx| ctx.leadership.get(tp).cloned()) else {
                // No state znode yet (a partition still New): nothing to bump.
                return Ok(());
            };
            let next = LeaderIsr {
                leader_epoch: LeaderEpoch(cur.leader_isr.leader_epoch.0.saturating_add(1)),
                ..cur.leader_isr.clone()
            };
            let written = self.write_leaderships(&[(tp.clone(), next.clone())]).await;
            match written.into_iter().next() {
                Some(Ok(version)) => {
                    let mut batch = RequestBatch::new();
                    self.with_ctx(|ctx| {
                        let written = LeaderIsr {
                            partition_epoch: version,
                            ..next
                        };
                        ctx.put_leadership(tp.clone(), written);
                        let replicas = ctx.replicas(tp).to_vec();
                        batch.add_leader_and_isr(ctx, replicas, tp, false);
                    });
                    self.send_batch(batch);
                    return Ok(());
                }
                Some(Err(WriteError::Store(StoreError::BadVersion(_)))) if attempt == 0 => {
                    self.reload_leaderships(std::slice::from_ref(tp)).await;
                }
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
        Ok(())
    }

    /// `moveReassignedPartitionLeaderIfRequired` (the assignment is TRS
    /// now): a leader outside it, or offline, is replaced by the first TRS
    /// replica live and in the ISR; a live leader inside it gets the next
    /// epoch so every replica learns the new replica set.
    async fn move_leader_if_required(&self, tp: &TopicPartition) -> Result<(), WriteError> {
        let Some((keep, has_leadership)) = self.with_ctx(|ctx| {
            let leader = ctx.leadership.get(tp).map(|l| l.leader_isr.leader);
            let keep =
                leader.is_some_and(|l| ctx.replicas(tp).contains(&l) && ctx.live().contains(&l));
            (keep, leader.is_some())
        }) else {
            return Err(WriteError::NotController);
        };
        if !has_leadership {
            return Ok(());
        }
        if keep {
            return self.bump_leader_epoch_and_send(tp).await;
        }
        let mut batch = RequestBatch::new();
        let mut failed = ElectionFailures::new();
        let elected = self
            .elect_leaders(
                std::slice::from_ref(tp),
                ElectionKind::Reassign,
                &mut batch,
                &mut failed,
            )
            .await;
        self.send_batch(batch);
        if elected.is_empty() {
            tracing::warn!(partition = %tp, why = ?failed.get(tp), "no target replica could lead the reassigned partition");
        }
        Ok(())
    }

    /// `stopRemovedReplicasOfReassignedPartition`: Offline (out of the
    /// ISR), deletion started (StopReplica with delete), deleted,
    /// non-existent; each step's requests sent before the next.
    async fn stop_removed_replicas(&self, tp: &TopicPartition, removed: &[BrokerId]) {
        if removed.is_empty() {
            return;
        }
        let replicas: Vec<(TopicPartition, BrokerId)> =
            removed.iter().map(|r| (tp.clone(), *r)).collect();
        for target in [
            ReplicaState::Offline,
            ReplicaState::DeletionStarted,
            ReplicaState::DeletionSuccessful,
            ReplicaState::NonExistent,
        ] {
            let mut batch = RequestBatch::new();
            self.replicas_to(&replicas, target, &mut batch).await;
            self.send_batch(batch);
        }
    }

    /// After an ISR change the controller wrote: complete the partition's
    /// reassignment if its ISR now holds every target replica (Kafka 3.9
    /// `processAlterPartition`'s check, after the answer went back).
    pub(super) async fn on_reassignment_isr_change(&self, tp: TopicPartition) {
        let Some(Some(a)) = self.with_ctx(|ctx| {
            let a = reassignment::full_assignment(ctx, &tp);
            let isr = ctx.leadership.get(&tp).map(|l| l.leader_isr.isr.clone())?;
            (a.is_being_reassigned() && reassignment::is_complete(&a, &isr)).then_some(a)
        }) else {
            return;
        };
        tracing::info!(partition = %tp, target = ?a.target(), "target replicas caught up with the leader");
        if let Err(e) = self.on_partition_reassignment(&tp, a).await {
            tracing::warn!(partition = %tp, error = %e, "completing a reassignment");
        }
    }

    /// `maybeResumeReassignments`: every moving partition `resume` picks
    /// goes through `onPartitionReassignment` again.
    pub(super) async fn resume_reassignments(
        &self,
        resume: impl Fn(&TopicPartition, &ReplicaAssignment) -> bool,
    ) {
        let moving: Vec<(TopicPartition, ReplicaAssignment)> = self
            .with_ctx(|ctx| {
                ctx.reassignments
                    .keys()
                    .map(|tp| (tp.clone(), reassignment::full_assignment(ctx, tp)))
                    .filter(|(tp, a)| resume(tp, a))
                    .collect()
            })
            .unwrap_or_default();
        for (tp, a) in moving {
            tracing::info!(partition = %tp, target = ?a.target(), "resuming a reassignment");
            if let Err(e) = self.on_partition_reassignment(&tp, a).await {
                tracing::warn!(partition = %tp, error = %e, "resuming a reassignment");
            }
        }
    }

    /// `initializePartitionReassignments` on failover: the ZooKeeper
    /// requests first, then the API-started moves found in the topic znodes.
    pub(super) async fn initialize_reassignments(&self) {
        let from_zk = self.on_reassign_partitions_znode().await;
        self.resume_reassignments(|tp, _| !from_zk.contains(tp))
            .await;
    }

    /// `processZkPartitionReassignment`: `/admin/reassign_partitions`
    /// exists; each partition it names is reassigned (no validation, as
    /// Kafka), the refused ones are taken out of it. The partitions started.
    pub(super) async fn on_reassign_partitions_znode(&self) -> BTreeSet<TopicPartition> {
        let Some(asked) = self.read_zk_reassignment().await else {
            return BTreeSet::new();
        };
        let asked: ReassignAsk = asked
            .into_iter()
            .map(|(tp, replicas)| (tp, Some(replicas)))
            .collect();
        let Some(plan) = self.with_ctx(|ctx| reassignment::plan(ctx, &asked, false)) else {
            return BTreeSet::new();
        };
        let mut failed: BTreeSet<TopicPartition> = plan.refused.keys().cloned().collect();
        let mut started = BTreeSet::new();
        for (tp, a) in plan.start {
            match self.start_reassignment(&tp, a).await {
                Ok(()) => {
                    started.insert(tp);
                }
                Err(_) => {
                    failed.insert(tp);
                }
            }
        }
        if !failed.is_empty() {
            tracing::warn!(partitions = ?failed, "reassignments through ZooKeeper refused");
            self.maybe_remove_from_zk_reassignment(|tp, _| failed.contains(tp))
                .await;
        }
        started
    }

    /// The partitions `/admin/reassign_partitions` names with their target
    /// replicas; `None` when it does not exist (or cannot be read).
    async fn read_zk_reassignment(&self) -> Option<Vec<(TopicPartition, Vec<BrokerId>)>> {
        let path = paths::REASSIGN_PARTITIONS;
        match self.store().get(path).await {
            Ok((data, _)) => match ReassignPartitionsZNode::decode(&data) {
                Ok(z) => Some(
                    z.partitions
                        .into_iter()
                        .map(|p| {
                            (
                                TopicPartition::new(p.topic.as_str(), p.partition),
                                p.replicas,
                            )
                        })
                        .collect(),
                ),
                Err(e) => {
                    tracing::warn!(%path, error = %e.0, "malformed partition reassignment");
                    None
                }
            },
            Err(StoreError::NoNode(_)) => None,
            Err(e) => {
                tracing::warn!(%path, error = %e, "reading the partition reassignment");
                None
            }
        }
    }

    /// `maybeRemoveFromZkReassignment`: the partitions `remove` picks leave
    /// `/admin/reassign_partitions`; the znode is deleted when none is left.
    async fn maybe_remove_from_zk_reassignment(
        &self,
        remove: impl Fn(&TopicPartition, &[BrokerId]) -> bool,
    ) {
        let Some(current) = self.read_zk_reassignment().await else {
            return;
        };
        let before = current.len();
        let kept: Vec<(TopicPartition, Vec<BrokerId>)> = current
            .into_iter()
            .filter(|(tp, r)| !remove(tp, r))
            .collect();
        if kept.len() == before {
            return;
        }
        let path = paths::REASSIGN_PARTITIONS.to_string();
        let op = if kept.is_empty() {
            tracing::info!("no more partitions to reassign; deleting {path}");
            Op::Delete {
                path,
                expected_version: None,
            }
        } else {
            let z = ReassignPartitionsZNode {
                version: 1,
                partitions: kept
                    .into_iter()
                    .map(|(tp, replicas)| crate::zk::paths::ReassignPartition {
                        topic: tp.topic.to_string(),
                        partition: tp.partition,
                        replicas,
                    })
                    .collect(),
            };
            Op::Set {
                path,
                data: z.encode(),
                expected_version: None,
            }
        };
        if let Err(e) = self.write_as_controller(vec![op]).await {
            tracing::warn!(error = %e, "updating the partition reassignment znode");
        }
    }
}
