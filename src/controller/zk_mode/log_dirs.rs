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
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::ReplicaState;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::log_dir_event::LogDirEventZNode;
use crate::zk::paths;
use crate::zk::store::{MetadataStore, StoreError};

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// The notifications `names` (children of the notification path): the
    /// brokers they name are asked which replicas they still serve; the
    /// notifications are deleted.
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
            self.on_broker_log_dir_failure(&brokers).await;
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

    /// `onBrokerLogDirFailure`: every replica on `brokers` to Online again,
    /// i.e. a LeaderAndIsr to each, whose answers name the failed ones.
    async fn on_broker_log_dir_failure(&self, brokers: &BTreeSet<BrokerId>) {
        tracing::info!(?brokers, "handling a log directory failure");
        let replicas = self
            .with_ctx(|ctx| ctx.replicas_on(brokers))
            .unwrap_or_default();
        let mut batch = RequestBatch::new();
        self.replicas_to(&replicas, ReplicaState::Online, &mut batch)
            .await;
        self.send_batch(batch);
    }

    /// `processLeaderAndIsrResponseReceived`: KAFKA_STORAGE_ERROR marks a
    /// replica as in a failed dir, NONE as online again; the newly failed
    /// ones go offline (`onReplicasBecomeOffline`).
    pub(super) async fn on_leader_and_isr_answer(
        &self,
        broker: BrokerId,
        answers: Vec<(TopicPartition, ErrorCode)>,
    ) {
        if !self.election.borrow().is_controller() {
            return;
        }
        let newly = self
            .with_ctx(|ctx| {
                let offline = ctx.replicas_on_offline_dirs.entry(broker).or_default();
                let mut newly = Vec::new();
                for (tp, e) in answers {
                    if e == ErrorCode::KAFKA_STORAGE_ERROR {
                        if offline.insert(tp.clone()) {
                            newly.push((tp, broker));
                        }
                    } else if e == ErrorCode::NONE {
                        offline.remove(&tp);
                    }
                }
                if offline.is_empty() {
                    ctx.replicas_on_offline_dirs.remove(&broker);
                }
                newly
            })
            .unwrap_or_default();
        if !newly.is_empty() {
            tracing::info!(%broker, replicas = newly.len(), "replicas in a failed log dir marked offline");
            let event = ControllerEvent::ReplicasOffline {
                token: self.core_token(),
                replicas: newly,
                default_unclean: self.settings.borrow().unclean_leader_election,
            };
            self.run_core(event, |_| None::<()>).await;
        }
    }
}
