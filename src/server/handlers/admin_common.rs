//! `[drv]` What the topic admin handlers share: the call to the control
//! shard, failures decided by the handler itself, and the `StrBytes`
//! helper their responses use.
//!
//! The request schema walk that checks every nested array count before
//! the crate decodes a body is `protocol::schema`.

use std::rc::Rc;

use kafka_protocol::protocol::StrBytes;

use crate::controller::admin_requests::{AdminFailure, AdminRequest, AdminResponse, AdminResult};
use crate::protocol::ErrorCode;
use crate::shard::ShardContext;

/// Ask the control shard to run `req`. A control shard that cannot be
/// reached answers NOT_CONTROLLER (41), which clients retry.
pub async fn call_control(
    ctx: &Rc<ShardContext>,
    req: AdminRequest,
) -> Result<AdminResponse, ErrorCode> {
    ctx.control_client().run_admin(req).await.map_err(|e| {
        tracing::warn!(error = %e, "control shard unavailable");
        ErrorCode::NOT_CONTROLLER
    })
}

/// Ask the control shard to run `req`, whose answer holds one result per
/// item (`n` items), taken out of the response by `pick`. An answer of
/// another kind fails every item with UNKNOWN_SERVER_ERROR; an unreachable
/// control shard fails each with NOT_CONTROLLER (see [`call_control`]).
pub async fn call_control_each<T: Clone>(
    ctx: &Rc<ShardContext>,
    req: AdminRequest,
    n: usize,
    pick: impl FnOnce(AdminResponse) -> Option<Vec<AdminResult<T>>>,
) -> Vec<AdminResult<T>> {
    match call_control(ctx, req).await.map(pick) {
        Ok(Some(results)) => results,
        Ok(None) => vec![Err(failure(ErrorCode::UNKNOWN_SERVER_ERROR, "")); n],
        Err(code) => vec![Err(failure(code, "")); n],
    }
}

/// Send `req` (built from the items at `slots`) to the control shard and
/// put each answer in `results` at its slot, in order; a missing or failed
/// call answers every slot with the error.
pub async fn call_control_into<T: Clone>(
    ctx: &Rc<ShardContext>,
    req: AdminRequest,
    slots: Vec<usize>,
    results: &mut [Option<AdminResult<T>>],
    pick: impl FnOnce(AdminResponse) -> Option<Vec<AdminResult<T>>>,
) {
    let answers = call_control_each(ctx, req, slots.len(), pick).await;
    for (slot, answer) in slots.into_iter().zip(answers) {
        results[slot] = Some(answer);
    }
}

/// A failure decided by the handler itself.
pub fn failure(code: ErrorCode, message: &str) -> AdminFailure {
    AdminFailure {
        code,
        message: message.to_owned(),
    }
}

pub fn str_bytes(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}
