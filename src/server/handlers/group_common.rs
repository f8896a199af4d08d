//! `[drv]` What the group APIs' handlers share: sending a call to the
//! group's coordinator and turning a missing coordinator into Kafka's
//! error.

use std::rc::Rc;

use kafka_protocol::protocol::StrBytes;

pub use super::admin_common::str_bytes;
use crate::group::coordinator::Answer;
use crate::protocol::ErrorCode;
use crate::shard::group::group_host::{GroupCall, GroupReply};
use crate::shard::ShardContext;

/// Ask the coordinator of `group_id`; `Err(NOT_COORDINATOR)` when no shard
/// of this broker coordinates it (the client looks it up again with
/// FindCoordinator, as against Kafka).
pub async fn ask(
    ctx: &Rc<ShardContext>,
    group_id: &str,
    call: GroupCall,
) -> Result<Answer, ErrorCode> {
    match ctx.group_driver().ask_group(group_id, call).await {
        GroupReply::Answer(a) => Ok(a),
        GroupReply::List(..) | GroupReply::Done | GroupReply::NotCoordinator => {
            Err(ErrorCode::NOT_COORDINATOR)
        }
    }
}

/// [`ask`], once the request may do `op` on the group (Kafka's
/// `authHelper.authorize(..., GROUP, groupId)`), else
/// GROUP_AUTHORIZATION_FAILED without asking.
pub async fn ask_authorized(
    ctx: &Rc<ShardContext>,
    authz: &super::authz::Authz<'_>,
    op: crate::acl::Operation,
    group_id: &str,
    call: GroupCall,
) -> Result<Answer, ErrorCode> {
    if !authz.group(op, group_id) {
        return Err(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    ask(ctx, group_id, call).await
}

/// The `__consumer_offsets` partition of `group_id`: by the topic's
/// partition count when it exists, else the count it will be created with.
pub fn offsets_partition(ctx: &ShardContext, group_id: &str) -> i32 {
    let n = ctx
        .snapshot()
        .cluster_partition_count(crate::controller::image::OFFSETS_TOPIC)
        .unwrap_or(ctx.config.offsets_topic_num_partitions);
    crate::group::partition::coordinator_partition(group_id, n)
}

pub fn text(s: &StrBytes) -> String {
    s.as_str().to_owned()
}

pub fn opt_text(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(text)
}

/// A new member's id: Kafka's `clientId-UUID`, or `groupInstanceId-UUID`
/// for a static member (`GroupMetadata.generateMemberId`).
pub fn new_member_id(client_id: &str, group_instance_id: Option<&str>) -> String {
    let prefix = group_instance_id.unwrap_or(client_id);
    format!("{prefix}-{}", uuid::Uuid::new_v4())
}

/// Whether partition `p` of `topic` exists in this shard's snapshot as
/// Metadata sees it (Kafka's `metadataCache.contains`; it answers
/// UNKNOWN_TOPIC_OR_PARTITION for a commit to one that does not, before
/// the coordinator sees it).
pub fn partition_exists(ctx: &ShardContext, topic: &str, p: i32) -> bool {
    ctx.snapshot().cluster_has_partition(topic, p)
}
