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

    /// `processIsrChangeNotification`: the partitions each notification
    /// names go to the core (re-read and announced), then the
    /// notifications are deleted.
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
        let event = ControllerEvent::IsrChangeNotified {
            token: self.core_token(),
            parts,
        };
        self.run_core(event, |_| None::<()>).await;
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
