//! `[drv]` The controller's side of ISR changes in ZooKeeper mode (Kafka 3.9
//! `KafkaController.processAlterPartition` and `processIsrChangeNotification`):
//! a partition leader's AlterPartition is decided by the controller core
//! ([`crate::controller::core`]: judged per partition, the accepted states
//! written conditioned on the partition epoch, the context updated, the
//! leader answered, every broker told); this performs the core's actions.
//! Brokers below IBP 2.7 announce ISR changes they wrote themselves under
//! `/isr_change_notification`; the controller re-reads those partitions,
//! sends UpdateMetadata for them and deletes the notifications.

use super::{Duties, ZkBroker};
pub use crate::controller::core::{AlterAnswer, AlterAsk, AlterItem};
use crate::controller::core::{ControllerAction, ControllerEvent};
use crate::controller::request_batch::RequestBatch;
use crate::protocol::ErrorCode;
use crate::types::TopicPartition;
use crate::zk::paths;
use crate::zk::store::{MetadataStore, StoreError};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `tryProcessAlterPartition`, decided by the controller core
    /// (`controller::core`), its actions performed by
    /// [`ZkBroker::drive_core`].
    pub(super) async fn alter_partition(&self, ask: AlterAsk) -> AlterAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let event = ControllerEvent::AlterPartition {
            token: self.core_token(),
            ask,
        };
        self.run_core(event, |v| match v {
            ControllerAction::AnswerAlterPartition { answer, .. } => Some(answer),
            _ => None,
        })
        .await
        .unwrap_or(Err(ErrorCode::NOT_CONTROLLER))
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
