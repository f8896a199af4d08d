//! `[drv]` The controller's side of controlled shutdown (Kafka 3.9
//! `KafkaController.doControlledShutdown`), decided by the controller
//! core (`controller::core`, its `flows`): this performs its steps.

use super::{Duties, ShutdownAnswer, ZkBroker};
pub use crate::controller::core::ShutdownRefusal;
use crate::controller::core::{ControllerAction, ControllerEvent};
use crate::types::BrokerId;
use crate::zk::store::MetadataStore;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `doControlledShutdown`: the answer is the replicated partitions the
    /// broker still leads (none when every leader could move); it retries
    /// until that is empty.
    pub(super) async fn controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> ShutdownAnswer {
        if !self.election.borrow().is_controller() {
            return Err(ShutdownRefusal::NotController);
        }
        let event = ControllerEvent::ControlledShutdown {
            token: self.core_token(),
            broker,
            broker_epoch,
        };
        self.run_core(event, |v| match v {
            ControllerAction::AnswerControlledShutdown { answer, .. } => Some(answer),
            _ => None,
        })
        .await
        .unwrap_or(Err(ShutdownRefusal::NotController))
    }
}
