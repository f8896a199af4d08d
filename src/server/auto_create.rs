//! `[drv]` Topic auto-creation (`auto.create.topics.enable`), shared by the
//! Metadata handler (which asks for every unknown topic it may create) and
//! the Produce path (which makes sure one topic exists before appending).
//!
//! The control shard owns topic creation; both callers go through
//! [`request_auto_create`], so a topic is created the same way whichever
//! API asked for it.

use std::rc::Rc;

use crate::controller::image::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use crate::protocol::topic_name::is_valid_topic_name;
use crate::protocol::ErrorCode;
use crate::shard::ShardContext;

/// Ask the control shard to create `topics` with the broker defaults
/// (`num.partitions`, `default.replication.factor`); per topic, NONE once
/// created (or found created meanwhile) or why not. `None` if the control
/// shard could not be asked.
pub async fn request_auto_create(
    ctx: &Rc<ShardContext>,
    topics: Vec<String>,
) -> Option<Vec<(String, ErrorCode)>> {
    ctx.control_client().auto_create_topics(topics).await
}

/// For the Produce path (and FindCoordinator for the internal topics):
/// make sure `topic` exists, auto-creating it (`auto.create.topics.enable`)
/// as Metadata does; internal topics get their Kafka specs
/// (`offsets.topic.num.partitions`, ...). Returns NONE when the
/// topic is in this shard's snapshot afterwards (as Metadata serves it:
/// in ZooKeeper mode once the controller announced it); else
/// UNKNOWN_TOPIC_OR_PARTITION (auto-create off or impossible),
/// INVALID_TOPIC_EXCEPTION (bad name), or the creation error.
pub async fn ensure_topic_auto_created(ctx: &Rc<ShardContext>, topic: &str) -> ErrorCode {
    if ctx.snapshot().cluster_topic(topic).is_some() {
        return ErrorCode::NONE;
    }
    if !is_valid_topic_name(topic) {
        return ErrorCode::INVALID_TOPIC_EXCEPTION;
    }
    // Kafka creates its internal topics on demand whatever
    // auto.create.topics.enable says (FindCoordinator's path).
    let internal = topic == OFFSETS_TOPIC || topic == TRANSACTION_STATE_TOPIC;
    if !ctx.config.auto_create_topics_enable && !internal {
        return ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
    }
    match request_auto_create(ctx, vec![topic.to_owned()]).await {
        Some(results) => match results.first() {
            Some((_, code)) if *code != ErrorCode::NONE => *code,
            _ if ctx.snapshot().cluster_topic(topic).is_some() => ErrorCode::NONE,
            _ => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        },
        None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
    }
}
