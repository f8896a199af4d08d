//! `[drv]` The controller's side of controlled shutdown (Kafka 3.9
//! `KafkaController.doControlledShutdown`).

use super::partitions::ElectionKind;
use super::{Duties, ZkBroker};
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::{PartitionState, ReplicaState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::store::MetadataStore;

/// Why a ControlledShutdown was refused (its Kafka error code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownRefusal {
    /// NOT_CONTROLLER (41).
    NotController,
    /// STALE_BROKER_EPOCH (77): the request is from an older registration.
    StaleBrokerEpoch,
    /// BROKER_NOT_AVAILABLE (8): the broker is not registered.
    BrokerNotAvailable,
}

impl ShutdownRefusal {
    pub fn code(self) -> ErrorCode {
        match self {
            Self::NotController => ErrorCode::NOT_CONTROLLER,
            Self::StaleBrokerEpoch => ErrorCode::STALE_BROKER_EPOCH,
            Self::BrokerNotAvailable => ErrorCode::BROKER_NOT_AVAILABLE,
        }
    }
}

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `doControlledShutdown`: the broker is marked shutting down; every
    /// replicated partition it leads gets a leader elected with the
    /// controlled-shutdown strategy (the broker leaves the ISR), it stops
    /// following the others (StopReplica without delete, then out of their
    /// ISRs). The answer is the replicated partitions it still leads (none
    /// when every leader could move); it retries until that is empty.
    pub(super) async fn controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<Vec<TopicPartition>, ShutdownRefusal> {
        if !self.election.borrow().is_controller() {
            return Err(ShutdownRefusal::NotController);
        }
        let Some(plan) = self.with_ctx(|ctx| {
            let cached = ctx.broker(broker).map(|b| b.epoch);
            match cached {
                None => return Err(ShutdownRefusal::BrokerNotAvailable),
                // -1: a request that names no epoch (v0/v1).
                Some(e) if broker_epoch != -1 && broker_epoch < e => {
                    return Err(ShutdownRefusal::StaleBrokerEpoch)
                }
                Some(_) => {}
            }
            ctx.shutting_down.insert(broker);
            let mut led = Vec::new();
            let mut followed = Vec::new();
            for (tp, replicas) in &ctx.assignments {
                if !replicas.contains(&broker)
                    || replicas.len() < 2
                    || ctx.topics_to_delete.contains(&*tp.topic)
                {
                    continue;
                }
                match ctx.leadership.get(tp) {
                    Some(l) if l.leader_isr.leader == broker => led.push(tp.clone()),
                    Some(_) => followed.push(tp.clone()),
                    None => {}
                }
            }
            Ok((led, followed))
        }) else {
            return Err(ShutdownRefusal::NotController);
        };
        let (led, followed) = plan?;
        tracing::info!(%broker, leaders = led.len(), followers = followed.len(), "controlled shutdown");
        let mut batch = RequestBatch::new();
        self.partitions_to(
            &led,
            PartitionState::Online,
            ElectionKind::ControlledShutdown,
            &mut batch,
        )
        .await;
        self.send_batch(batch);
        let mut batch = RequestBatch::new();
        for tp in &followed {
            batch.add_stop_replica([broker], tp, false);
        }
        self.send_batch(batch);
        let replicas: Vec<(TopicPartition, BrokerId)> =
            followed.into_iter().map(|tp| (tp, broker)).collect();
        let mut batch = RequestBatch::new();
        self.replicas_to(&replicas, ReplicaState::Offline, &mut batch)
            .await;
        self.send_batch(batch);
        Ok(self
            .with_ctx(|ctx| {
                ctx.partitions_led_by(broker)
                    .into_iter()
                    .filter(|tp| ctx.replicas(tp).len() > 1)
                    .collect()
            })
            .unwrap_or_default())
    }
}
