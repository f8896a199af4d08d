//! `[drv]` The controller's side of ISR changes in ZooKeeper mode (Kafka 3.9
//! `KafkaController.processAlterPartition` and `processIsrChangeNotification`):
//! a partition leader's AlterPartition is judged per partition
//! ([`crate::controller::alter_partition::judge`]), the accepted states are
//! written to their state znodes conditioned on the partition epoch, the
//! context takes the new states, the leader gets them back (with the new
//! partition epochs) and every broker an UpdateMetadata for them.
//! Brokers below IBP 2.7 announce ISR changes they wrote themselves under
//! `/isr_change_notification`; the controller re-reads those partitions,
//! sends UpdateMetadata for them and deletes the notifications.

use uuid::Uuid;

use super::{Duties, Event, Tagged, WriteError, ZkBroker};
use crate::controller::alter_partition::{judge, Proposal, Verdict};
use crate::controller::context::Leadership;
use crate::controller::leader_election::LeaderIsr;
use crate::controller::request_batch::RequestBatch;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch, TopicPartition};
use crate::zk::paths;
use crate::zk::store::{MetadataStore, StoreError};

/// One partition of an AlterPartition (v2+ names topics by id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterItem {
    pub topic_id: Uuid,
    pub partition: i32,
    pub proposal: Proposal,
}

/// An AlterPartition as the controller reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterAsk {
    pub broker: BrokerId,
    pub broker_epoch: i64,
    pub items: Vec<AlterItem>,
}

/// Per partition (in the request's order) the state now in force or why
/// not; or a request-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH).
pub type AlterAnswer = Result<Vec<(Uuid, i32, Result<LeaderIsr, ErrorCode>)>, ErrorCode>;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `tryProcessAlterPartition`.
    pub(super) async fn alter_partition(&self, ask: AlterAsk) -> AlterAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let judged = self.with_ctx(|ctx| {
            // Kafka: an unknown broker or another epoch is STALE_BROKER_EPOCH.
            if ctx.broker(ask.broker).map(|b| b.epoch) != Some(ask.broker_epoch) {
                return Err(ErrorCode::STALE_BROKER_EPOCH);
            }
            let live = ctx.live();
            Ok(ask
                .items
                .iter()
                .map(|item| {
                    let name = ctx
                        .topic_ids
                        .iter()
                        .find(|(_, id)| **id == item.topic_id)
                        .map(|(n, _)| n.clone());
                    let verdict = match &name {
                        None => Verdict::Refused(ErrorCode::UNKNOWN_TOPIC_ID),
                        Some(n) => {
                            let tp = TopicPartition::new(n.as_str(), item.partition);
                            judge(
                                ctx.leadership.get(&tp).map(|l| &l.leader_isr),
                                &live,
                                &item.proposal,
                            )
                        }
                    };
                    (item, name, verdict)
                })
                .collect::<Vec<_>>())
        });
        let judged = match judged {
            None => return Err(ErrorCode::NOT_CONTROLLER),
            Some(Err(e)) => return Err(e),
            Some(Ok(j)) => j,
        };
        let writes: Vec<(TopicPartition, LeaderIsr)> = judged
            .iter()
            .filter_map(|(item, name, v)| match (name, v) {
                (Some(n), Verdict::Write(l)) => {
                    Some((TopicPartition::new(n.as_str(), item.partition), l.clone()))
                }
                _ => None,
            })
            .collect();
        let mut outcome = self.write_isr_changes(writes).await;
        let answers = judged
            .into_iter()
            .map(|(item, name, v)| {
                let r = match v {
                    Verdict::Refused(e) => Err(e),
                    Verdict::Unchanged(l) => Ok(l),
                    Verdict::Write(_) => {
                        let tp = TopicPartition::new(name.unwrap_or_default(), item.partition);
                        outcome
                            .remove(&tp)
                            .unwrap_or(Err(ErrorCode::UNKNOWN_SERVER_ERROR))
                    }
                };
                (item.topic_id, item.partition, r)
            })
            .collect();
        Ok(answers)
    }

    /// Write the accepted states; per partition the state now in force or
    /// why the write failed. The context takes the written ones and every
    /// broker hears of them.
    async fn write_isr_changes(
        &self,
        writes: Vec<(TopicPartition, LeaderIsr)>,
    ) -> std::collections::HashMap<TopicPartition, Result<LeaderIsr, ErrorCode>> {
        let written = self.write_leaderships(&writes).await;
        let mut outcome: std::collections::HashMap<TopicPartition, Result<LeaderIsr, ErrorCode>> =
            Default::default();
        let mut changed = Vec::new();
        let controller_epoch = self.with_ctx(|ctx| ctx.epoch).unwrap_or(-1);
        for ((tp, l), r) in writes.into_iter().zip(written) {
            let answer = match r {
                Ok(epoch) => {
                    let l = LeaderIsr {
                        partition_epoch: epoch,
                        ..l
                    };
                    self.with_ctx(|ctx| {
                        ctx.leadership.insert(
                            tp.clone(),
                            Leadership {
                                leader_isr: l.clone(),
                                controller_epoch: ControllerEpoch(controller_epoch),
                            },
                        )
                    });
                    changed.push(tp.clone());
                    tracing::info!(%tp, isr = ?l.isr, partition_epoch = %l.partition_epoch.0, "ISR changed");
                    Ok(l)
                }
                Err(WriteError::Store(StoreError::BadVersion(_))) => {
                    Err(ErrorCode::INVALID_UPDATE_VERSION)
                }
                Err(WriteError::NotController | WriteError::Moved) => {
                    Err(ErrorCode::NOT_CONTROLLER)
                }
                Err(e) => {
                    tracing::warn!(%tp, error = %e, "writing an ISR change");
                    Err(ErrorCode::UNKNOWN_SERVER_ERROR)
                }
            };
            outcome.insert(tp, answer);
        }
        // Moving partitions are checked for completion after the answer
        // went back (`processAlterPartition`): queued, not done here.
        let moving: Vec<TopicPartition> = self
            .with_ctx(|ctx| {
                changed
                    .iter()
                    .filter(|tp| ctx.reassignments.contains_key(*tp))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for tp in moving {
            let _ = self.tx.try_send(Tagged {
                session: self.session.get(),
                term: self.term.get(),
                event: Event::ReassignmentIsrChange(tp),
            });
        }
        self.announce_isr_changes(changed);
        outcome
    }

    /// UpdateMetadata with `parts` to every registered broker
    /// (`sendUpdateMetadataRequest(liveOrShuttingDownBrokerIds, partitions)`).
    fn announce_isr_changes(&self, parts: Vec<TopicPartition>) {
        if parts.is_empty() {
            return;
        }
        let Some(brokers) = self.with_ctx(|ctx| ctx.live_or_shutting_down()) else {
            return;
        };
        let mut batch = RequestBatch::new();
        batch.add_update_metadata(brokers, parts);
        self.send_batch(batch);
    }

    /// `processIsrChangeNotification`: re-read the partitions each
    /// notification names, announce them, delete the notifications.
    pub(super) async fn on_isr_change_notifications(&self, names: Vec<String>) {
        let store = self.store();
        let mut parts: Vec<TopicPartition> = Vec::new();
        for name in &names {
            let path = format!("{}/{name}", paths::ISR_CHANGE_NOTIFICATION);
            match store.get(&path).await {
                Ok((data, _)) => match paths::IsrChangeNotificationZNode::decode(&data) {
                    Ok(z) => parts.extend(
                        z.partitions
                            .into_iter()
                            .map(|p| TopicPartition::new(p.topic.as_str(), p.partition)),
                    ),
                    Err(e) => {
                        tracing::warn!(%path, error = %e.0, "malformed ISR change notification")
                    }
                },
                Err(StoreError::NoNode(_)) => {}
                Err(e) => tracing::warn!(%path, error = %e, "reading an ISR change notification"),
            }
        }
        parts.sort();
        parts.dedup();
        let known: Vec<TopicPartition> = self
            .with_ctx(|ctx| {
                parts
                    .into_iter()
                    .filter(|tp| ctx.assignments.contains_key(tp))
                    .collect()
            })
            .unwrap_or_default();
        self.reload_leaderships(&known).await;
        self.announce_isr_changes(known);
        for name in names {
            let path = format!("{}/{name}", paths::ISR_CHANGE_NOTIFICATION);
            if let Err(e) = store.delete(&path, None).await {
                if !matches!(e, StoreError::NoNode(_)) {
                    tracing::warn!(%path, error = %e, "deleting an ISR change notification");
                }
            }
        }
    }
}
