//! `[drv]` Partition reassignment's I/O on the controller (KIP-455; the
//! steps are the controller core's, `controller::core`, after Kafka 3.9
//! `KafkaController.onPartitionReassignment`): AlterPartitionReassignments
//! and ListPartitionReassignments from admin clients, the legacy
//! `/admin/reassign_partitions` znode read and rewritten, the topic znodes
//! written, and the moves resumed on failover.

use std::collections::{BTreeMap, BTreeSet};

use super::{Duties, Event, Reply, ZkBroker};
use crate::controller::core::{ControllerAction, ControllerEvent, ResumeWhich, ZkRemoval};
use crate::controller::reassignment::{self, ReplicaAssignment};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths::{self, ReassignPartitionsZNode, TopicZNode};
use crate::zk::store::{MetadataStore, Op, StoreError};

pub use crate::controller::core::{ReassignAnswer, ReassignAsk};

/// The moving partitions asked about; or NOT_CONTROLLER.
pub type ListAnswer = Result<BTreeMap<TopicPartition, ReplicaAssignment>, ErrorCode>;

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

    /// `processApiPartitionReassignment`, decided by the core.
    pub(super) async fn alter_reassignments(&self, asked: ReassignAsk) -> ReassignAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let event = ControllerEvent::AlterReassignments {
            token: self.core_token(),
            asked,
        };
        self.run_core(event, |v| match v {
            ControllerAction::AnswerAlterReassignments { answer, .. } => Some(answer),
            _ => None,
        })
        .await
        .unwrap_or(Err(ErrorCode::NOT_CONTROLLER))
    }

    /// After an ISR change the controller wrote: the core completes the
    /// partition's move if its ISR holds every target replica.
    pub(super) async fn on_reassignment_isr_change(&self, tp: TopicPartition) {
        let event = ControllerEvent::ReassignmentIsrChange {
            token: self.core_token(),
            tp,
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// `initializePartitionReassignments` on failover: the ZooKeeper
    /// requests first, then the API-started moves found in the topic znodes.
    pub(super) async fn initialize_reassignments(&self) {
        let from_zk = self.on_reassign_partitions_znode().await;
        let event = ControllerEvent::ResumeReassignments {
            token: self.core_token(),
            which: ResumeWhich::AllBut(from_zk),
        };
        self.run_core(event, |_| None::<()>).await;
    }

    /// `processZkPartitionReassignment`: `/admin/reassign_partitions`
    /// exists; the core reassigns each partition it names. The partitions
    /// started.
    pub(super) async fn on_reassign_partitions_znode(&self) -> BTreeSet<TopicPartition> {
        let Some(asked) = self.read_zk_reassignment().await else {
            return BTreeSet::new();
        };
        let event = ControllerEvent::ZkReassignment {
            token: self.core_token(),
            asked,
        };
        self.run_core(event, |v| match v {
            ControllerAction::ZkReassigned { started, .. } => Some(started),
            _ => None,
        })
        .await
        .unwrap_or_default()
    }

    /// `/brokers/topics/<topic>` set (`setTopicAssignment`, behind the
    /// controller-epoch check).
    pub(super) async fn write_topic_assignment(
        &self,
        topic: &str,
        znode: &TopicZNode,
    ) -> Result<(), super::WriteError> {
        self.write_as_controller(vec![Op::Set {
            path: paths::topic(topic),
            data: znode.encode(),
            expected_version: None,
        }])
        .await
        .map(|_| ())
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
    pub(super) async fn maybe_remove_from_zk_reassignment(&self, remove: &ZkRemoval) {
        let Some(current) = self.read_zk_reassignment().await else {
            return;
        };
        let before = current.len();
        let kept: Vec<(TopicPartition, Vec<BrokerId>)> = current
            .into_iter()
            .filter(|(tp, r)| !remove.removes(tp, r))
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
