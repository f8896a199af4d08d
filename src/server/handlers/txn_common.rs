//! `[drv]` What the transaction APIs' handlers share: sending a call to
//! the coordinator of a transactional id and turning a missing
//! coordinator into Kafka's NOT_COORDINATOR (the client looks the
//! coordinator up again with FindCoordinator).

use std::rc::Rc;

use crate::protocol::ErrorCode;
use crate::shard::txn::txn_host::{TxnCall, TxnReply};
use crate::shard::ShardContext;
use crate::txn::coordinator::Answer;

/// The one error code of an AddPartitionsToTxn / AddOffsetsToTxn / EndTxn.
pub async fn ask_code(ctx: &Rc<ShardContext>, txn_id: &str, call: TxnCall) -> ErrorCode {
    match ctx.txn_driver().ask_txn(txn_id, call).await {
        TxnReply::Answer(Answer::Done(code)) => code,
        TxnReply::Answer(Answer::InitProducerId { error, .. }) => error,
        _ => ErrorCode::NOT_COORDINATOR,
    }
}
