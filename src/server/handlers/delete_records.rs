//! `[drv]` DeleteRecords (key 21), v0–v2: advance the log start offset of
//! partitions to an offset (-1: the high watermark), as
//! `kafka-delete-records.sh` and `Admin.deleteRecords` ask (Kafka's
//! `KafkaApis.handleDeleteRecordsRequest` → `ReplicaManager.deleteRecords`).
//!
//! Partitions Metadata does not know answer UNKNOWN_TOPIC_OR_PARTITION and
//! internal topics INVALID_TOPIC_EXCEPTION (`deleteRecordsOnLocalLog`),
//! here; the rest go to their owner shards, whose leader deletes at once
//! and waits up to `timeout_ms` for every live replica's log start offset
//! to follow (the answer's `low_watermark`; REQUEST_TIMED_OUT otherwise).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::delete_records_request::DeleteRecordsRequest;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsResponse, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DeleteRecords, 0, 2);

/// DeleteRecordsRequest.json: topics [name, partitions [partition_index,
/// offset]], timeout_ms.
const SCHEMA: &[Field] = &[
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT64])]),
    INT32,
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 2,
    schema: Schema::Fixed(SCHEMA),
};

/// The error decided before the owners see a partition, if any.
fn refused(ctx: &ShardContext, topic: &str, partition: i32) -> Option<ErrorCode> {
    let snapshot = ctx.snapshot();
    match snapshot.cluster_topic(topic) {
        Some(t) if t.partitions.iter().any(|p| p.partition == partition) => {
            t.is_internal.then_some(ErrorCode::INVALID_TOPIC_EXCEPTION)
        }
        _ => Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
    }
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: DeleteRecordsRequest = API.decode(req.body, version)?;
        // Per partition: (topic index, partition, slot in `asks` or error).
        let mut layout: Vec<(usize, i32, Result<usize, ErrorCode>)> = Vec::new();
        let mut asks = Vec::new();
        for (ti, t) in request.topics.iter().enumerate() {
            // Kafka's handleDeleteRecordsRequest: DELETE on the topic.
            let allowed = authz.topic(Operation::Delete, t.name.0.as_str());
            for p in &t.partitions {
                let error = if allowed {
                    refused(&ctx, t.name.0.as_str(), p.partition_index)
                } else {
                    Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
                };
                let slot = match error {
                    Some(e) => Err(e),
                    None => {
                        asks.push((
                            TopicPartition::new(t.name.0.as_str(), p.partition_index),
                            p.offset,
                        ));
                        Ok(asks.len() - 1)
                    }
                };
                layout.push((ti, p.partition_index, slot));
            }
        }
        let answers = if asks.is_empty() {
            Vec::new()
        } else {
            ctx.datapath()
                .delete_records_on_owners(asks, request.timeout_ms)
                .await
        };
        let mut response = DeleteRecordsResponse::default();
        response.topics = request
            .topics
            .iter()
            .map(|t| {
                let mut r = DeleteRecordsTopicResult::default();
                r.name = t.name.clone();
                r
            })
            .collect();
        for (ti, partition, slot) in layout {
            let (error, low_watermark) = match slot {
                Ok(i) => answers
                    .get(i)
                    .copied()
                    .unwrap_or((ErrorCode::NOT_LEADER_OR_FOLLOWER, -1)),
                Err(e) => (e, -1),
            };
            let mut p = DeleteRecordsPartitionResult::default();
            p.partition_index = partition;
            p.low_watermark = low_watermark;
            p.error_code = error.0;
            if let Some(t) = response.topics.get_mut(ti) {
                t.partitions.push(p);
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            DeleteRecordsRequest::default()
                .with_topics(vec![DeleteRecordsTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![
                        DeleteRecordsPartition::default()
                            .with_partition_index(0)
                            .with_offset(5),
                        DeleteRecordsPartition::default()
                            .with_partition_index(1)
                            .with_offset(-1),
                    ])])
                .with_timeout_ms(3000)
        });
    }

    schema_fuzz_test!(API, DeleteRecordsRequest);
}
