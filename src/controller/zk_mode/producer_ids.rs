//! `[drv]` Producer-id blocks for other brokers (Kafka 3.9
//! `KafkaController.processAllocateProducerIds`, KIP-730): a Kafka 3.9
//! broker in ZooKeeper mode (IBP 3.0+) asks the controller with
//! AllocateProducerIds for the next block of `/latest_producer_id_block`
//! instead of writing it itself. The controller checks that the broker is
//! registered with that epoch (BROKER_ID_NOT_REGISTERED,
//! STALE_BROKER_EPOCH) and reserves the block for it
//! (`ZkProducerIdManager.getNewProducerIdBlock`,
//! `controller::producer_id`).

use super::{Duties, Event, Reply, ZkBroker};
use crate::controller::producer_id::store::allocate_producer_id_block;
use crate::controller::producer_id::ProducerIdManager;
use crate::protocol::ErrorCode;
use crate::types::BrokerId;
use crate::zk::store::MetadataStore;

/// The block reserved (first id, length), or why not.
pub type AllocateAnswer = Result<(i64, i32), ErrorCode>;

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

    pub(super) async fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> AllocateAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ErrorCode::NOT_CONTROLLER);
        }
        let registered = self
            .with_ctx(|ctx| ctx.broker(broker).map(|b| b.epoch))
            .ok_or(ErrorCode::NOT_CONTROLLER)?;
        match registered {
            None => {
                tracing::warn!(%broker, "AllocateProducerIds from a broker that is not registered");
                return Err(ErrorCode::BROKER_ID_NOT_REGISTERED);
            }
            Some(e) if e != broker_epoch => {
                tracing::warn!(%broker, broker_epoch, registered = e, "AllocateProducerIds with a stale broker epoch");
                return Err(ErrorCode::STALE_BROKER_EPOCH);
            }
            Some(_) => {}
        }
        let store = self.store();
        let mut manager = ProducerIdManager::new(broker);
        match allocate_producer_id_block(&*store, &mut manager).await {
            Ok(block) => {
                tracing::info!(%broker, first = block.first_producer_id, size = block.size, "producer id block allocated");
                Ok((
                    block.first_producer_id,
                    i32::try_from(block.size).unwrap_or(i32::MAX),
                ))
            }
            Err(e) => {
                tracing::warn!(%broker, error = %e, "cannot allocate a producer id block");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        }
    }
}
