//! `[drv]` Topic deletion (Kafka 3.9 `TopicDeletionManager`): a topic
//! marked in `/admin/delete_topics` is announced gone (leader -2), its live
//! replicas stopped then deleted; a replica on a dead broker makes the
//! topic ineligible until the broker returns; when every replica is
//! deleted the topic's znodes, config and marker go.

use std::collections::BTreeSet;

use super::partitions::ElectionKind;
use super::{Duties, ZkBroker};
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::controller::topic_admin;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths;
use crate::zk::store::{MetadataStore, Op};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    // ----- topic deletion (TopicDeletionManager) -----

    /// `/admin/delete_topics` children re-read: markers of unknown topics
    /// are removed, the others queued (or, with `delete.topic.enable`
    /// false, their markers removed).
    pub(super) async fn on_delete_topics_listed(&self, marked: Vec<String>) {
        let enabled = self.settings.borrow().delete_topic_enable;
        let Some((unknown, queued)) = self.with_ctx(|ctx| {
            let (known, unknown): (Vec<String>, Vec<String>) = marked
                .into_iter()
                .partition(|t| ctx.topic_ids.contains_key(t));
            (unknown, known)
        }) else {
            return;
        };
        let mut drop: Vec<String> = unknown;
        if enabled {
            self.with_ctx(|ctx| {
                ctx.topics_to_delete.extend(queued.iter().cloned());
                // processTopicDeletion: a topic whose partitions are being
                // reassigned waits for the move ("topic reassignment in
                // progress"); its completion resumes the deletion.
                let moving: BTreeSet<String> = ctx
                    .reassignments
                    .keys()
                    .map(|tp| tp.topic.to_string())
                    .filter(|t| queued.contains(t))
                    .collect();
                ctx.ineligible_for_deletion.extend(moving);
            });
        } else {
            tracing::info!(topics = ?queued, "delete.topic.enable is false: deletion requests removed");
            drop.extend(queued);
        }
        if !drop.is_empty() {
            let ops = drop
                .iter()
                .map(|t| Op::Delete {
                    path: paths::delete_topic_marker(t),
                    expected_version: None,
                })
                .collect();
            if let Err(e) = self.write_as_controller(ops).await {
                tracing::warn!(error = %e, "removing deletion markers");
            }
        }
        if enabled {
            self.resume_deletions().await;
        }
    }

    /// `resumeDeletions`.
    pub(super) async fn resume_deletions(&self) {
        let Some((complete, retry, eligible)) = self.with_ctx(|ctx| {
            let mut complete = Vec::new();
            let mut retry = Vec::new();
            let mut eligible = Vec::new();
            for t in ctx.topics_to_delete.clone() {
                let rs = &ctx.replica_states;
                if rs.all_in_state(&t, ReplicaState::DeletionSuccessful) {
                    complete.push(t.clone());
                    continue;
                }
                let in_progress = rs.any_in_state(&t, ReplicaState::DeletionStarted);
                if !in_progress && rs.any_in_state(&t, ReplicaState::DeletionIneligible) {
                    retry.push(t.clone());
                }
                if !in_progress && !ctx.ineligible_for_deletion.contains(&t) {
                    eligible.push(t);
                }
            }
            (complete, retry, eligible)
        }) else {
            return;
        };
        for t in complete {
            self.complete_delete_topic(&t).await;
        }
        if !retry.is_empty() {
            let replicas: Vec<(TopicPartition, BrokerId)> = self
                .with_ctx(|ctx| {
                    retry
                        .iter()
                        .flat_map(|t| {
                            ctx.replica_states
                                .replicas_in_state(t, ReplicaState::DeletionIneligible)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let mut batch = RequestBatch::new();
            self.replicas_to(&replicas, ReplicaState::Offline, &mut batch)
                .await;
            self.send_batch(batch);
        }
        if !eligible.is_empty() {
            self.on_topic_deletion(&eligible).await;
        }
    }

    /// `onTopicDeletion` + `startReplicaDeletion`: partitions Offline then
    /// NonExistent, every broker told the topic is going (leader -2), live
    /// replicas stopped then deleted; a dead replica makes the topic wait.
    async fn on_topic_deletion(&self, topics: &[String]) {
        let unseen: Vec<TopicPartition> = self
            .with_ctx(|ctx| {
                topics
                    .iter()
                    .flat_map(|t| ctx.partitions_of(t))
                    .filter(|tp| ctx.partition_states.get(tp) != PartitionState::NonExistent)
                    .collect()
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &unseen,
            PartitionState::Offline,
            ElectionKind::Offline,
            &mut batch,
        )
        .await;
        self.partitions_to(
            &unseen,
            PartitionState::NonExistent,
            ElectionKind::Offline,
            &mut batch,
        )
        .await;
        self.with_ctx(|ctx| {
            let parts: Vec<TopicPartition> =
                topics.iter().flat_map(|t| ctx.partitions_of(t)).collect();
            batch.add_update_metadata(ctx.live_or_shutting_down(), parts);
        });
        self.send_batch(batch);
        let Some((dead, retry)) = self.with_ctx(|ctx| {
            let live = ctx.live_or_shutting_down();
            let mut dead = Vec::new();
            let mut retry = Vec::new();
            for t in topics {
                for tp in ctx.partitions_of(t) {
                    for &r in ctx.replicas(&tp) {
                        if !live.contains(&r) {
                            dead.push((tp.clone(), r));
                        } else if ctx.replica_states.get(&tp, r) != ReplicaState::DeletionSuccessful
                        {
                            retry.push((tp.clone(), r));
                        }
                    }
                }
            }
            (dead, retry)
        }) else {
            return;
        };
        // One batch per step, as Kafka's state machines send: the stop
        // (delete=false) reaches a broker before the delete.
        let mut batch = RequestBatch::new();
        self.replicas_to(&dead, ReplicaState::DeletionIneligible, &mut batch)
            .await;
        self.replicas_to(&retry, ReplicaState::Offline, &mut batch)
            .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        self.replicas_to(&retry, ReplicaState::DeletionStarted, &mut batch)
            .await;
        self.send_batch(batch);
        if !dead.is_empty() {
            self.with_ctx(|ctx| {
                for (tp, _) in &dead {
                    ctx.ineligible_for_deletion.insert(tp.topic.to_string());
                }
            });
            tracing::info!(topics = ?topics, "deletion waits for replicas on dead brokers");
        }
    }

    /// A broker's answer to a deleting StopReplica
    /// (`TopicDeletionStopReplicaResponseReceived`).
    pub(super) async fn on_deletion_answer(
        &self,
        broker: BrokerId,
        errors: Vec<(TopicPartition, ErrorCode)>,
    ) {
        // Only replicas still in deletion: a reassignment's removed
        // replicas went on to NonExistent at once (Kafka does not wait for
        // their StopReplica either).
        let errors: Vec<(TopicPartition, ErrorCode)> = self
            .with_ctx(|ctx| {
                errors
                    .into_iter()
                    .filter(|(tp, _)| {
                        ctx.replica_states.get(tp, broker) == ReplicaState::DeletionStarted
                    })
                    .collect()
            })
            .unwrap_or_default();
        if errors.is_empty() {
            return;
        }
        let (ok, failed): (Vec<_>, Vec<_>) =
            errors.into_iter().partition(|(_, e)| *e == ErrorCode::NONE);
        let ok: Vec<(TopicPartition, BrokerId)> =
            ok.into_iter().map(|(tp, _)| (tp, broker)).collect();
        let failed: Vec<(TopicPartition, BrokerId)> =
            failed.into_iter().map(|(tp, _)| (tp, broker)).collect();
        let mut batch = RequestBatch::new();
        if !failed.is_empty() {
            self.replicas_to(&failed, ReplicaState::DeletionIneligible, &mut batch)
                .await;
            self.with_ctx(|ctx| {
                for (tp, _) in &failed {
                    ctx.ineligible_for_deletion.insert(tp.topic.to_string());
                }
            });
        }
        self.replicas_to(&ok, ReplicaState::DeletionSuccessful, &mut batch)
            .await;
        self.send_batch(batch);
        self.resume_deletions().await;
    }

    /// `failReplicaDeletion`: replicas that died mid-deletion.
    pub(super) async fn fail_replica_deletion(&self, replicas: &[(TopicPartition, BrokerId)]) {
        let started: Vec<(TopicPartition, BrokerId)> = self
            .with_ctx(|ctx| {
                replicas
                    .iter()
                    .filter(|(tp, r)| {
                        ctx.replica_states.get(tp, *r) == ReplicaState::DeletionStarted
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&started, ReplicaState::DeletionIneligible, &mut batch)
            .await;
        self.send_batch(batch);
        self.with_ctx(|ctx| {
            for (tp, _) in replicas {
                ctx.ineligible_for_deletion.insert(tp.topic.to_string());
            }
        });
        self.resume_deletions().await;
    }

    /// `completeDeleteTopic`: replicas NonExistent, the topic's znodes, its
    /// config and its marker removed (conditioned on the controller epoch),
    /// the topic forgotten.
    async fn complete_delete_topic(&self, topic: &str) {
        let replicas = self
            .with_ctx(|ctx| {
                ctx.replica_states
                    .replicas_in_state(topic, ReplicaState::DeletionSuccessful)
            })
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&replicas, ReplicaState::NonExistent, &mut batch)
            .await;
        let store = self.store();
        let mut ops = match topic_admin::subtree_delete_ops(&*store, &paths::topic(topic)).await {
            Ok(ops) => ops,
            Err(e) => {
                tracing::warn!(%topic, error = %e, "listing the topic's znodes for deletion");
                return;
            }
        };
        if let Ok(Some(_)) = store.exists(&paths::topic_config(topic)).await {
            ops.push(Op::Delete {
                path: paths::topic_config(topic),
                expected_version: None,
            });
        }
        ops.push(Op::Delete {
            path: paths::delete_topic_marker(topic),
            expected_version: None,
        });
        match self.write_as_controller(ops).await {
            Ok(_) => {
                tracing::info!(%topic, "topic deleted");
                self.with_ctx(|ctx| ctx.remove_topic(topic));
            }
            Err(e) => tracing::warn!(%topic, error = %e, "removing the deleted topic's znodes"),
        }
    }
}
