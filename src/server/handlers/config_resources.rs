//! `[drv]` What the config handlers share (DescribeConfigs, AlterConfigs,
//! IncrementalAlterConfigs): Kafka's `ConfigResource.Type` codes, which
//! resources an alter may change, and the per-resource bookkeeping of the
//! two alter APIs (duplicates, local refusals, the control shard's answers
//! merged back in request order).
//!
//! A BROKER resource (empty name: the cluster-wide default, else this
//! broker's id) goes to the control shard's `shard::control::broker_configs`.
//!
//! It imports no handler, so the three handlers import it and not each
//! other.

use std::collections::HashSet;
use std::rc::Rc;

use super::admin_common::{call_control_each, failure};
use crate::controller::admin_requests::{
    AdminFailure, AdminRequest, AdminResponse, BrokerConfigCall, BrokerConfigChange,
};
use crate::protocol::ErrorCode;
use crate::shard::ShardContext;

/// Kafka's `ConfigResource.Type` codes.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// `ConfigResource.Type.BROKER_LOGGER`.
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// Kafka's `ConfigHelper` / `handleAlterConfigsRequest` authorization of
/// one config resource: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the
/// topic, or on the cluster for a broker (logger). Denied: the failure
/// the resource answers (TOPIC_ / CLUSTER_AUTHORIZATION_FAILED).
pub fn config_access_denied(
    authz: &super::authz::Authz<'_>,
    op: crate::acl::Operation,
    resource_type: i8,
    name: &str,
) -> Option<AdminFailure> {
    // The messages are `Errors`' defaults.
    let (allowed, code, message) = match resource_type {
        RESOURCE_TOPIC => (
            authz.topic(op, name),
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            "Topic authorization failed.",
        ),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER => (
            authz.cluster(op),
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ),
        _ => (true, ErrorCode::NONE, ""),
    };
    (!allowed).then(|| failure(code, message))
}

/// What an alter's resource targets: a topic (the control shard's topic
/// admin) or a broker entity (`shard::control::broker_configs`).
pub enum Target<T> {
    Topic(T),
    Broker(BrokerConfigChange),
}

/// Topic and broker resources proceed, with the change `build` makes of
/// them; other types fail here.
pub fn classify<T>(
    resource_type: i8,
    topic: impl FnOnce() -> Result<T, AdminFailure>,
    broker: impl FnOnce() -> Result<BrokerConfigChange, AdminFailure>,
) -> Result<Target<T>, AdminFailure> {
    match resource_type {
        RESOURCE_TOPIC => topic().map(Target::Topic),
        RESOURCE_BROKER => broker().map(Target::Broker),
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

/// Carry out the pending resources: broker ones one by one on the control
/// shard, topic ones together in the request `topic_request` makes of
/// them; merged into `outcomes`: per resource, the failure or None.
pub async fn alter_results<T>(
    ctx: &Rc<ShardContext>,
    outcomes: Vec<ResourceOutcome>,
    pending: Vec<(String, Target<T>)>,
    validate_only: bool,
    topic_request: impl FnOnce(Vec<(String, T)>) -> AdminRequest,
) -> Vec<Option<AdminFailure>> {
    let mut topics = Vec::new();
    // Per pending resource: a broker's answer, or None for a topic's.
    let mut order: Vec<Option<Option<AdminFailure>>> = Vec::with_capacity(pending.len());
    for (name, target) in pending {
        match target {
            Target::Topic(t) => {
                topics.push((name, t));
                order.push(None);
            }
            Target::Broker(change) => {
                order.push(Some(alter_broker(ctx, &name, change, validate_only).await));
            }
        }
    }
    let answers = if topics.is_empty() {
        Vec::new()
    } else {
        let n = topics.len();
        call_control_each(ctx, topic_request(topics), n, |r| match r {
            AdminResponse::AlteredConfigs(r) => Some(r),
            _ => None,
        })
        .await
    };
    let mut answers = answers.into_iter();
    let mut order = order.into_iter();
    outcomes
        .into_iter()
        .map(|o| match o {
            ResourceOutcome::Done(f) => Some(f),
            ResourceOutcome::Pending => match order.next() {
                Some(Some(broker)) => broker,
                Some(None) => match answers.next() {
                    Some(Ok(())) => None,
                    Some(Err(f)) => Some(f),
                    None => Some(failure(ErrorCode::UNKNOWN_SERVER_ERROR, "")),
                },
                None => Some(failure(ErrorCode::UNKNOWN_SERVER_ERROR, "")),
            },
        })
        .collect()
}

/// One BROKER resource: an empty name is the cluster-wide default, else
/// it must be this broker's id (Kafka's `ZkAdminManager.getBrokerId`; the
/// admin client sends a broker's resource to that broker).
async fn alter_broker(
    ctx: &Rc<ShardContext>,
    name: &str,
    change: BrokerConfigChange,
    validate_only: bool,
) -> Option<AdminFailure> {
    let me = ctx.config.broker_id;
    let broker = if name.is_empty() {
        None
    } else {
        match name.trim().parse::<i32>() {
            Ok(id) if id == me => Some(id),
            Ok(_) => {
                return Some(failure(
                    ErrorCode::INVALID_REQUEST,
                    &format!("Unexpected broker id, expected {me}, but received {name}"),
                ))
            }
            Err(_) => {
                return Some(failure(
                    ErrorCode::INVALID_REQUEST,
                    &format!("Broker id must be an integer, but it is: {name}"),
                ))
            }
        }
    };
    let call = BrokerConfigCall {
        broker,
        change,
        validate_only,
    };
    match ctx.control_client().broker_configs(call).await {
        Ok(Ok(())) => None,
        Ok(Err(f)) => Some(f),
        Err(e) => Some(failure(ErrorCode::UNKNOWN_SERVER_ERROR, &e.to_string())),
    }
}
