//! `[drv]` Producer-id blocks for other brokers (Kafka 3.9
//! `KafkaController.processAllocateProducerIds`, KIP-730): a Kafka 3.9
//! broker in ZooKeeper mode (IBP 3.0+) asks the controller with
//! AllocateProducerIds for the next block of `/latest_producer_id_block`
//! instead of writing it itself. The controller core checks that the
//! broker is registered with that epoch (BROKER_ID_NOT_REGISTERED,
//! STALE_BROKER_EPOCH); the driver reserves the block for it
//! (`ZkProducerIdManager.getNewProducerIdBlock`,
//! `controller::producer_id`).

use super::{Duties, Event, Reply, ZkBroker};
use crate::controller::core::{ControllerAction, ControllerEvent};
use crate::controller::producer_id::store::allocate_producer_id_block;
use crate::controller::producer_id::ProducerIdManager;
use crate::protocol::ErrorCode;
use crate::types::BrokerId;
use crate::zk::store::MetadataStore;

pub use crate::controller::core::AllocateAnswer;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// An AllocateProducerIds request, run in turn with every other event.
    pub async fn request_allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> AllocateAnswer {
        let reply = Reply::new();
        self.enqueue(Event::AllocateProducerIds {
            broker,
            broker_epoch,
            reply: reply.clone(),
        });
        reply.take().await
    }

    /// `processAllocateProducerIds`: the core checks the asker.
    pub(super) async fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> AllocateAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let event = ControllerEvent::AllocateProducerIds {
            token: self.core_token(),
            broker,
            broker_epoch,
        };
        self.run_core(event, |v| match v {
            ControllerAction::AnswerAllocateProducerIds { answer, .. } => Some(answer),
            _ => None,
        })
        .await
        .unwrap_or(Err(ErrorCode::NOT_CONTROLLER))
    }

    /// The next block of `/latest_producer_id_block` reserved for
    /// `broker` (first id, length).
    pub(super) async fn reserve_producer_ids(
        &self,
        broker: BrokerId,
    ) -> Result<(i64, i32), String> {
        let store = self.store();
        let mut manager = ProducerIdManager::new(broker);
        allocate_producer_id_block(&*store, &mut manager)
            .await
            .map(|block| {
                (
                    block.first_producer_id,
                    i32::try_from(block.size).unwrap_or(i32::MAX),
                )
            })
            .map_err(|e| e.to_string())
    }
}
