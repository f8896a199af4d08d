//! `[pure]` AllocateProducerIds on the controller (Kafka 3.9
//! `KafkaController.processAllocateProducerIds`, KIP-730): the asking
//! broker must be registered with that broker epoch
//! (BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH); the block itself is
//! reserved in `/latest_producer_id_block` by the driver with the pure
//! `ProducerIdManager` (`ZkProducerIdManager.getNewProducerIdBlock`).

use super::{ControllerAction, ControllerCore};
use crate::controller::context::ControllerContext;
use crate::protocol::ErrorCode;
use crate::types::BrokerId;

/// The block reserved (first id, length), or why not.
pub type AllocateAnswer = Result<(i64, i32), ErrorCode>;

impl ControllerCore {
    /// The asker checked: its block reserved, or the refusal.
    pub(super) fn on_allocate_producer_ids(
        &mut self,
        ctx: Option<&mut ControllerContext>,
        token: u64,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Vec<ControllerAction> {
        let refuse = |code| {
            vec![ControllerAction::AnswerAllocateProducerIds {
                token,
                answer: Err(code),
            }]
        };
        let Some(ctx) = ctx else {
            return refuse(ErrorCode::NOT_CONTROLLER);
        };
        match ctx.broker(broker).map(|b| b.epoch) {
            None => {
                tracing::warn!(%broker, "AllocateProducerIds from a broker that is not registered");
                refuse(ErrorCode::BROKER_ID_NOT_REGISTERED)
            }
            Some(e) if e != broker_epoch => {
                tracing::warn!(%broker, broker_epoch, registered = e, "AllocateProducerIds with a stale broker epoch");
                refuse(ErrorCode::STALE_BROKER_EPOCH)
            }
            Some(_) => vec![ControllerAction::ReserveProducerIds { token, broker }],
        }
    }

    /// The block reserved (or not): the answer.
    pub(super) fn on_producer_ids_reserved(
        &mut self,
        token: u64,
        broker: BrokerId,
        block: Result<(i64, i32), String>,
    ) -> Vec<ControllerAction> {
        let answer = match block {
            Ok((first, size)) => {
                tracing::info!(%broker, first, size, "producer id block allocated");
                Ok((first, size))
            }
            Err(e) => {
                tracing::warn!(%broker, error = %e, "cannot allocate a producer id block");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        };
        vec![ControllerAction::AnswerAllocateProducerIds { token, answer }]
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::registered;
    use super::super::ControllerEvent;
    use super::*;

    fn ask(
        core: &mut ControllerCore,
        c: Option<&mut ControllerContext>,
        b: i32,
        e: i64,
    ) -> Vec<ControllerAction> {
        let event = ControllerEvent::AllocateProducerIds {
            token: 5,
            broker: BrokerId(b),
            broker_epoch: e,
        };
        core.on_event(c, 0, event)
    }

    fn refused(code: ErrorCode) -> Vec<ControllerAction> {
        vec![ControllerAction::AnswerAllocateProducerIds {
            token: 5,
            answer: Err(code),
        }]
    }

    #[test]
    fn only_a_broker_registered_with_that_epoch_gets_a_block() {
        let mut core = ControllerCore::new();
        let mut c = registered(&[1, 2]);
        assert_eq!(
            ask(&mut core, None, 1, 10),
            refused(ErrorCode::NOT_CONTROLLER)
        );
        assert_eq!(
            ask(&mut core, Some(&mut c), 3, 10),
            refused(ErrorCode::BROKER_ID_NOT_REGISTERED)
        );
        assert_eq!(
            ask(&mut core, Some(&mut c), 2, 9),
            refused(ErrorCode::STALE_BROKER_EPOCH)
        );
        assert_eq!(
            ask(&mut core, Some(&mut c), 2, 10),
            vec![ControllerAction::ReserveProducerIds {
                token: 5,
                broker: BrokerId(2)
            }]
        );
        let reserved = ControllerEvent::ProducerIdsReserved {
            token: 5,
            broker: BrokerId(2),
            block: Ok((2000, 1000)),
        };
        assert_eq!(
            core.on_event(Some(&mut c), 0, reserved),
            vec![ControllerAction::AnswerAllocateProducerIds {
                token: 5,
                answer: Ok((2000, 1000))
            }]
        );
        let failed = ControllerEvent::ProducerIdsReserved {
            token: 5,
            broker: BrokerId(2),
            block: Err("connection loss".into()),
        };
        assert_eq!(
            core.on_event(Some(&mut c), 0, failed),
            refused(ErrorCode::UNKNOWN_SERVER_ERROR)
        );
    }
}
