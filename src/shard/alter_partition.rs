//! `[drv]` ISR changes on their way to the controller (Kafka 3.9's
//! `AlterPartitionManager`): a partition leader's owner shard hands its
//! [`IsrChange`] to the control shard ([`propose`]), which sends it to the
//! active controller as AlterPartition and answers with what the
//! controller decided.

use crate::protocol::ErrorCode;
use crate::replication::isr_change::{IsrChange, IsrChangeAnswer};
use crate::shard::context::{ShardContext, ShardRequest, ShardResponse};
use crate::shard::control_shard::{ControlRequest, ControlResponse};

/// From an owner shard: ask the controller (through the control shard)
/// for `change`; the answer once the controller gave it.
pub async fn propose(ctx: &ShardContext, change: IsrChange) -> IsrChangeAnswer {
    let req = ShardRequest::Control(ControlRequest::AlterPartition(Box::new(change)));
    match ctx.call(ctx.control_peer(), req).await {
        Ok(ShardResponse::Control(ControlResponse::AlterPartition(answer))) => answer,
        other => {
            tracing::warn!(?other, "ISR change not answered by the control shard");
            IsrChangeAnswer::Failed(ErrorCode::UNKNOWN_SERVER_ERROR)
        }
    }
}

/// On the control shard: send `change` to the active controller.
pub async fn send_to_controller(_ctx: &ShardContext, _change: IsrChange) -> IsrChangeAnswer {
    // Filled in by the AlterPartition sender (this session's work).
    IsrChangeAnswer::Failed(ErrorCode::NOT_CONTROLLER)
}
