//! `[drv]` What the config handlers share (DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs): Kafka's `ConfigResource.Type` codes, which
//! resources an alter may change, and the per-resource bookkeeping of the
//! two alter APIs (duplicates, local refusals, the control shard's answers
//! merged back in request order).
//!
//! It imports no handler, so the three handlers import it and not each
//! other.

use std::collections::HashSet;
use std::rc::Rc;

use super::admin_common::{call_control_each, failure};
use crate::controller::requests::{AdminFailure, AdminRequest, AdminResponse};
use crate::protocol::ErrorCode;
use crate::shard::ShardContext;

/// Kafka's `ConfigResource.Type` codes.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// Topic resources proceed; broker and other resources fail here.
pub fn classify(resource_type: i8) -> Result<(), AdminFailure> {
    match resource_type {
        RESOURCE_TOPIC => Ok(()),
        RESOURCE_BROKER => Err(failure(
            ErrorCode::INVALID_REQUEST,
            "Cannot update these configs dynamically: shardlog broker configs are static (server.properties)",
        )),
        other => Err(failure(
            ErrorCode::INVALID_REQUEST,
            &format!("Unsupported resource type {other}"),
        )),
    }
}

/// One AlterConfigs / IncrementalAlterConfigs resource: decided here, or
/// sent to the control shard (in order).
pub enum ResourceOutcome {
    Done(AdminFailure),
    Pending,
}

/// Sort AlterConfigs / IncrementalAlterConfigs resources: a repeated
/// (type, name) fails with INVALID_REQUEST as Kafka answers it, a resource
/// `check` refuses fails with its failure; the rest are pending, and their
/// names with what `check` built are returned in order for the control
/// shard.
pub fn sort_resources<R, C>(
    resources: &[R],
    key: impl Fn(&R) -> (i8, String),
    check: impl Fn(&R) -> Result<C, AdminFailure>,
) -> (Vec<ResourceOutcome>, Vec<(String, C)>) {
    let mut outcomes = Vec::with_capacity(resources.len());
    let mut pending = Vec::new();
    let mut seen = HashSet::new();
    for r in resources {
        let (resource_type, name) = key(r);
        let outcome = if !seen.insert((resource_type, name.clone())) {
            ResourceOutcome::Done(failure(
                ErrorCode::INVALID_REQUEST,
                "Duplicate resource in request.",
            ))
        } else {
            match check(r) {
                Ok(built) => {
                    pending.push((name, built));
                    ResourceOutcome::Pending
                }
                Err(f) => ResourceOutcome::Done(f),
            }
        };
        outcomes.push(outcome);
    }
    (outcomes, pending)
}

/// Send the pending topic resources of `req` to the control shard and
/// merge its answers into `outcomes`: per resource, the failure or None.
pub async fn alter_results(
    ctx: &Rc<ShardContext>,
    req: AdminRequest,
    outcomes: Vec<ResourceOutcome>,
) -> Vec<Option<AdminFailure>> {
    let pending = outcomes
        .iter()
        .filter(|o| matches!(o, ResourceOutcome::Pending))
        .count();
    let answers = if pending == 0 {
        Vec::new()
    } else {
        call_control_each(ctx, req, pending, |r| match r {
            AdminResponse::AlteredConfigs(r) => Some(r),
            _ => None,
        })
        .await
    };
    let mut answers = answers.into_iter();
    outcomes
        .into_iter()
        .map(|o| match o {
            ResourceOutcome::Done(f) => Some(f),
            ResourceOutcome::Pending => match answers.next() {
                Some(Ok(())) => None,
                Some(Err(f)) => Some(f),
                None => Some(failure(ErrorCode::UNKNOWN_SERVER_ERROR, "")),
            },
        })
        .collect()
}
