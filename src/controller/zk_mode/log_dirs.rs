//! `[drv]` Failed log dirs, on the controller (Kafka 3.9 `KafkaController`:
//! `processLogDirEventNotification` → `onBrokerLogDirFailure`, and
//! `processLeaderAndIsrResponseReceived` → `onReplicasBecomeOffline`): a
//! broker whose log dir failed writes `/log_dir_event_notification/
//! log_dir_event_<seq>`; the controller sends it LeaderAndIsr for all its
//! replicas, and the partitions it answers KAFKA_STORAGE_ERROR for are in a
//! failed dir: those replicas go offline (new leaders elsewhere, out of the
//! ISRs) until the broker starts again.

use std::collections::BTreeSet;

use super::{Duties, ZkBroker};
use crate::controller::core::ControllerEvent;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::log_dir_event::LogDirEventZNode;
use crate::zk::paths;
use crate::zk::store::{MetadataStore, StoreError};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// The notifications `names` (children of the notification path): the
    /// core asks the brokers they name which replicas they still serve
    /// (`onBrokerLogDirFailure`); the notifications are deleted.
    pub(super) async fn on_log_dir_events(&self, names: Vec<String>) {
        let store = self.store();
        let mut brokers = BTreeSet::new();
        for name in &names {
            let path = format!("{}/{name}", paths::LOG_DIR_EVENT_NOTIFICATION);
            match store.get(&path).await {
                Ok((data, _)) => match LogDirEventZNode::decode(&data) {
                    Ok(z) => {
                        brokers.insert(BrokerId(z.broker));
                    }
                    Err(e) => tracing::warn!(%path, error = %e.0, "malformed log dir event"),
                },
                Err(StoreError::NoNode(_)) => {}
                Err(e) => tracing::warn!(%path, error = %e, "reading a log dir event"),
            }
        }
        if !brokers.is_empty() {
            let event = ControllerEvent::LogDirFailure {
                token: self.core_token(),
                brokers,
            };
            self.run_core(event, |_| None::<()>).await;
        }
        for name in names {
            let path = format!("{}/{name}", paths::LOG_DIR_EVENT_NOTIFICATION);
            if let Err(e) = store.delete(&path, None).await {
                if !matches!(e, StoreError::NoNode(_)) {
                    tracing::warn!(%path, error = %e, "deleting a log dir event");
                }
            }
        }
    }

    /// `processLeaderAndIsrResponseReceived`, decided by the core: the
    /// replicas answered KAFKA_STORAGE_ERROR are in a failed dir and go
    /// offline (`onReplicasBecomeOffline`).
    pub(super) async fn on_leader_and_isr_answer(
        &self,
        broker: BrokerId,
        answers: Vec<(TopicPartition, ErrorCode)>,
    ) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let event = ControllerEvent::LeaderAndIsrAnswer {
            token: self.core_token(),
            broker,
            answers,
            default_unclean: self.settings.borrow().unclean_leader_election,
        };
        self.run_core(event, |_| None::<()>).await;
    }
}
