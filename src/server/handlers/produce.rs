//! `[drv]` Produce (key 0), v0–v11 (v11 only adds TRANSACTION_ABORTABLE,
//! KIP-890). v3+ carries one record batch (magic
//! 2) per partition; v0–v2 (decoded with the Kafka 3.9 codec) carry
//! message sets of any magic, which Kafka checks nothing of at request
//! level: legacy messages are validated and up-converted to a v2 batch by
//! the partition (`replication::legacy_validator`, Kafka's `LogValidator`).
//! v0 answers without throttle time, v1 adds it, v2 the log append time.
//!
//! Partitions are grouped by owner shard and appended there (§2); the
//! response is assembled here. `acks`:
//! - 0: no response at all (Kafka sends none);
//! - 1: answer after the leader's append;
//! - -1 (all): a partition whose ISR is smaller than `min.insync.replicas`
//!   refuses the append with NOT_ENOUGH_REPLICAS (Kafka's
//!   `appendRecordsToLeader`); otherwise the request parks as a
//!   DelayedProduce until the HW — advanced as the ISR's followers fetch
//!   past the batch (`replication::isr`) — passes every appended batch,
//!   or answers REQUEST_TIMED_OUT for what it does not pass within
//!   `timeout_ms`. An ISR of the leader alone completes once the append
//!   is written out.
//!
//! Errors follow Kafka: INVALID_REQUIRED_ACKS for other acks values,
//! UNKNOWN_TOPIC_OR_PARTITION, MESSAGE_TOO_LARGE (`max.message.bytes`,
//! nothing appended), CORRUPT_MESSAGE / INVALID_RECORD, KAFKA_STORAGE_ERROR.

use std::rc::Rc;

use bytes::Bytes;
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, ProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::authz::Authz;
use super::quota_common::{quota_throttle_ms, throttled_response, QuotaId};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::io::local_sync::FifoTicket;
use crate::metadata::quotas::PRODUCER_BYTE_RATE;
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{
    decode_checked_39, encode_39, CheckedApi, Field, Schema, INT16, INT32,
};
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::legacy_validator;
use crate::replication::partition::{AppendOrigin, ProduceResult};
use crate::replication::replica_manager::ProduceAppend;
use crate::server::auto_create::ensure_topic_auto_created;
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::Produce, 0, 11);

/// The last version only the 3.9 codec has (Kafka 4 dropped v0–v2).
pub const LAST_OF_THE_39_CODEC: i16 = 2;

const FIRST_FLEXIBLE: i16 = 9;

/// ProduceRequest.json: transactional_id (v3+), acks, timeout_ms,
/// topic_data [name, partition_data [index, records]]. Every nested array
/// is checked before the crate pre-sizes it from the wire.
const SCHEMA: &[Field] = &[
    Field::Since(3, &Field::Str),
    INT16,
    INT32,
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, Field::Bytes])]),
];

/// The versions the current codec decodes (v3–v11).
pub const API: CheckedApi = CheckedApi {
    versions: ApiRange::new(ApiKey::Produce, LAST_OF_THE_39_CODEC + 1, 11),
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(
    ctx: Rc<ShardContext>,
    mut req: Request,
) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let turn = req.produce_turn.take();
        let request = decode_request(req.body.clone(), version)?;
        let acks = request.acks;
        let authz = Authz::new(&ctx, &req);
        let responses = produce(&ctx, &authz, &request, version, turn).await;
        let throttle_ms =
            quota_throttle_ms(&ctx, PRODUCER_BYTE_RATE, QuotaId::of(&req), req.body.len()).await;
        if acks == 0 {
            return Ok(match throttle_ms {
                0 => Response::NoResponse,
                t => Response::MuteOnly { throttle_ms: t },
            });
        }
        let throttle_time_ms = i32::try_from(throttle_ms).unwrap_or(i32::MAX);
        let body = if version <= LAST_OF_THE_39_CODEC {
            encode_39(&old_response(responses, throttle_time_ms), version)
        } else {
            let response = ProduceResponse::default()
                .with_responses(responses)
                .with_throttle_time_ms(throttle_time_ms);
            encode(&response, version)
        }
        .map_err(HandlerError::Encode)?;
        let parts = vec![OutPart::Bytes(body)];
        Ok(throttled_response(parts, throttle_ms, version >= 6).await)
    })
}

/// The request at `version`: v0–v2 with the Kafka 3.9 codec, carried
/// over into the current codec's type (the same fields, no transactional
/// id).
pub fn decode_request(body: Bytes, version: i16) -> Result<ProduceRequest, DecodeError> {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol_39::messages::produce_request::ProduceRequest as ProduceRequest39;
    if version > LAST_OF_THE_39_CODEC {
        return API.decode(body, version);
    }
    let old: ProduceRequest39 = decode_checked_39(body, SCHEMA, version, false)?;
    let topic_data = old
        .topic_data
        .into_iter()
        .map(|t| {
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(t.name.0.to_string())))
                .with_partition_data(
                    t.partition_data
                        .into_iter()
                        .map(|p| {
                            PartitionProduceData::default()
                                .with_index(p.index)
                                .with_records(p.records)
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(ProduceRequest::default()
        .with_acks(old.acks)
        .with_timeout_ms(old.timeout_ms)
        .with_topic_data(topic_data))
}

/// The answer of a v0–v2 request in the Kafka 3.9 codec's type: the
/// partition's error, base offset and (v2) log append time; v1+ adds the
/// throttle time.
fn old_response(
    responses: Vec<TopicProduceResponse>,
    throttle_time_ms: i32,
) -> kafka_protocol_39::messages::ProduceResponse {
    use kafka_protocol_39::messages::produce_response as old;
    use kafka_protocol_39::protocol::StrBytes;
    let responses = responses
        .into_iter()
        .map(|t| {
            old::TopicProduceResponse::default()
                .with_name(kafka_protocol_39::messages::TopicName(
                    StrBytes::from_string(t.name.0.to_string()),
                ))
                .with_partition_responses(
                    t.partition_responses
                        .into_iter()
                        .map(|p| {
                            old::PartitionProduceResponse::default()
                                .with_index(p.index)
                                .with_error_code(p.error_code)
                                .with_base_offset(p.base_offset)
                                .with_log_append_time_ms(p.log_append_time_ms)
                        })
                        .collect(),
                )
        })
        .collect();
    old::ProduceResponse::default()
        .with_responses(responses)
        .with_throttle_time_ms(throttle_time_ms)
}

/// One partition of the request, in request order.
struct Slot {
    topic: TopicName,
    partition: i32,
    result: ProduceResult,
    /// Its record bytes (`BytesInPerSec`).
    bytes: u64,
}

/// `turn`: the request's place in its connection's produce order. A
/// connection's requests run concurrently (only their responses are
/// ordered, `server::in_order`) where Kafka handles one at a time; a
/// request pipelined behind another may finish its waits (a topic's
/// auto-creation, a KIP-890 verification) first. Its appends must still
/// come after the earlier request's on every partition both name: an
/// idempotent producer's later batch first is OUT_OF_ORDER_SEQUENCE_NUMBER
/// for the earlier one. So each request hands its appends to the owners
/// (`Datapath::dispatch_produce`, which takes their places in the
/// partitions' append order) only in its turn, and lets the next one go
/// as soon as that is done: the appends and acks=all waits of pipelined
/// requests still overlap.
async fn produce(
    ctx: &Rc<ShardContext>,
    authz: &Authz<'_>,
    request: &ProduceRequest,
    version: i16,
    turn: Option<FifoTicket>,
) -> Vec<TopicProduceResponse> {
    let acks = request.acks;
    // `auto.create.topics.enable`: unknown topics are created (num.partitions)
    // before the append, as the issue asks for Produce as well as Metadata.
    // A topic Metadata knows but this broker does not host is not created
    // again (NOT_LEADER_OR_FOLLOWER below, Kafka's `getPartitionOrError`).
    for topic in &request.topic_data {
        let snapshot = ctx.snapshot();
        let name = topic.name.as_str();
        // Only for a producer that may write it and create it (Kafka's
        // Metadata auto-creation: CREATE on the cluster or the topic).
        let may_create = authz.topic(Operation::Write, name)
            && (authz.cluster(Operation::Create) || authz.topic(Operation::Create, name));
        if may_create
            && snapshot.hosted_topic(name).is_none()
            && snapshot.cluster_topic(name).is_none()
        {
            let _ = ensure_topic_auto_created(ctx, topic.name.as_str()).await;
        }
    }
    // Kafka's `handleProduceRequest`: transactional records need the
    // request's transactional id with WRITE on it; without either the
    // whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Then WRITE
    // on each topic (`filterByAuthorized`): a denied topic's partitions
    // are TOPIC_AUTHORIZATION_FAILED and nothing of them is appended.
    let refused_txn = has_transactional_records(request)
        && !request
            .transactional_id
            .as_ref()
            .is_some_and(|id| authz.transactional_id(Operation::Write, id.as_str()));
    let snapshot = ctx.snapshot();
    let mut slots: Vec<Slot> = Vec::new();
    let mut to_append: Vec<(usize, TopicPartition, Bytes)> = Vec::new();
    for topic in &request.topic_data {
        let name = topic.name.clone();
        let write_allowed = authz.topic(Operation::Write, name.as_str());
        for p in &topic.partition_data {
            let idx = slots.len();
            let error = if refused_txn {
                Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            } else if !write_allowed {
                Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
            } else if !matches!(acks, -1..=1) {
                // Kafka: acks must be -1, 0 or 1.
                Some(ErrorCode::INVALID_REQUIRED_ACKS)
            } else if !snapshot.hosts_partition(name.as_str(), p.index) {
                Some(snapshot.not_hosted_error(name.as_str(), p.index))
            } else {
                None
            };
            let result = match (error, &p.records) {
                (Some(e), _) => ProduceResult::error(e),
                (None, None) => ProduceResult::error(ErrorCode::CORRUPT_MESSAGE),
                // Kafka's `ProduceRequest.validateRecords`, v3+ only: magic
                // 2 batches ("are only allowed to contain record batches
                // with magic version 2"). Older versions may carry any.
                (None, Some(records))
                    if version > LAST_OF_THE_39_CODEC && legacy_validator::is_legacy(records) =>
                {
                    ProduceResult::error(ErrorCode::INVALID_RECORD)
                }
                (None, Some(records)) => {
                    let tp = TopicPartition::new(name.as_str(), p.index);
                    to_append.push((idx, tp, records.clone()));
                    ProduceResult::error(ErrorCode::NONE)
                }
            };
            slots.push(Slot {
                topic: name.clone(),
                partition: p.index,
                result,
                bytes: p.records.as_ref().map_or(0, |r| r.len() as u64),
            });
        }
    }
    let to_append = match request.transactional_id.as_ref() {
        Some(id) => verify_transactional(ctx, (id.as_str(), version), to_append, &mut slots).await,
        None => to_append
            .into_iter()
            .map(|(i, tp, b)| (i, tp, (b, None)))
            .collect(),
    };
    if !to_append.is_empty() {
        let (idx, parts): (Vec<usize>, Vec<(TopicPartition, ProduceAppend)>) =
            to_append.into_iter().map(|(i, tp, b)| (i, (tp, b))).unzip();
        let keys: Vec<TopicPartition> = parts.iter().map(|(tp, _)| tp.clone()).collect();
        if let Some(turn) = &turn {
            turn.turn().await;
        }
        let now_ms = ctx.clock.wall_ms();
        let dispatched = ctx
            .datapath()
            .dispatch_produce(parts, now_ms, acks, AppendOrigin::Client)
            .await;
        drop(turn);
        let results = dispatched.results().await;
        if acks == -1 {
            wait_for_replication(ctx, request.timeout_ms, &keys, &idx, &results, &mut slots).await;
        }
        for (i, r) in idx.into_iter().zip(results) {
            let keep_error = slots[i].result.error_code;
            slots[i].result = ProduceResult {
                error_code: if keep_error != ErrorCode::NONE {
                    keep_error
                } else {
                    r.error_code
                },
                ..r
            };
        }
    }
    count_slots(ctx, &slots);
    to_responses(slots)
}

/// `BrokerTopicMetrics` of the request's partitions (Kafka's
/// `appendToLocalLog`).
fn count_slots(ctx: &ShardContext, slots: &[Slot]) {
    for s in slots {
        let r = &s.result;
        ctx.stats.metrics.on_produce_result(
            s.topic.as_str(),
            s.bytes,
            r.error_code,
            (r.base_offset, r.last_offset),
            &r.validation,
        );
    }
}

/// KIP-890 (Kafka's `ReplicaManager.handleProduceAppend`): the
/// transactional batches are verified with the producer's coordinator
/// before they are appended; a partition that fails keeps its error and
/// is not appended. Transactional records of more than one producer
/// refuse the whole request with INVALID_PRODUCER_ID_MAPPING (Kafka's
/// `InvalidPidMappingException`).
async fn verify_transactional(
    ctx: &Rc<ShardContext>,
    (txn_id, version): (&str, i16),
    to_append: Vec<(usize, TopicPartition, Bytes)>,
    slots: &mut [Slot],
) -> Vec<(usize, TopicPartition, ProduceAppend)> {
    let mut producers: Vec<(i64, i16)> = Vec::new();
    let mut asked: Vec<(usize, TopicPartition, i32)> = Vec::new();
    for (i, tp, records) in &to_append {
        let Ok(b) = crate::protocol::record_batch::RecordBatch::new_unchecked_crc(records) else {
            continue;
        };
        if b.producer_id() >= 0 && b.is_transactional() {
            if !producers.contains(&(b.producer_id(), b.producer_epoch())) {
                producers.push((b.producer_id(), b.producer_epoch()));
            }
            asked.push((*i, tp.clone(), b.base_sequence()));
        }
    }
    let mut guards: Vec<(usize, Option<u64>)> = Vec::new();
    match producers.as_slice() {
        [] => {}
        [(producer_id, epoch)] => {
            let parts = asked
                .iter()
                .map(|(_, tp, seq)| (tp.clone(), *seq))
                .collect();
            let verified = ctx
                .txn_verifier()
                .verify_txn_appends(txn_id, *producer_id, *epoch, parts)
                .await;
            for ((i, _, _), r) in asked.iter().zip(verified) {
                match r {
                    Ok(guard) => guards.push((*i, guard)),
                    Err(code) => {
                        slots[*i].result = ProduceResult::error(produce_code(code, version));
                    }
                }
            }
        }
        _ => {
            for (i, _, _) in &to_append {
                slots[*i].result = ProduceResult::error(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
            }
            return Vec::new();
        }
    }
    to_append
        .into_iter()
        .filter(|(i, _, _)| slots[*i].result.error_code == ErrorCode::NONE)
        .map(|(i, tp, b)| {
            let guard = guards.iter().find(|(g, _)| *g == i).and_then(|(_, g)| *g);
            (i, tp, (b, guard))
        })
        .collect()
}

/// A verification's failure as Produce answers it (Kafka's
/// `postVerificationCallback` with `defaultError`): retriable coordinator
/// errors older clients would not retry become NOT_ENOUGH_REPLICAS (no
/// metadata refresh), TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE
/// below v11 (KIP-890: v11 clients know it, `genericErrorSupported`).
fn produce_code(code: ErrorCode, version: i16) -> ErrorCode {
    match code {
        ErrorCode::TRANSACTION_ABORTABLE if version < 11 => ErrorCode::INVALID_TXN_STATE,
        ErrorCode::CONCURRENT_TRANSACTIONS
        | ErrorCode::NETWORK_EXCEPTION
        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::COORDINATOR_NOT_AVAILABLE
        | ErrorCode::NOT_COORDINATOR => ErrorCode::NOT_ENOUGH_REPLICAS,
        other => other,
    }
}

/// Whether any partition's first batch is transactional (attributes bit 4;
/// Kafka's `ProduceRequest.hasTransactionalRecords` looks at each
/// partition's first batch too).
fn has_transactional_records(request: &ProduceRequest) -> bool {
    request.topic_data.iter().any(|t| {
        t.partition_data.iter().any(|p| {
            p.records.as_ref().is_some_and(|r| {
                crate::protocol::record_batch::RecordBatch::new_unchecked_crc(r)
                    .is_ok_and(|b| b.is_transactional())
            })
        })
    })
}

/// acks=all: park until the HW covers every appended batch (DelayedProduce).
async fn wait_for_replication(
    ctx: &Rc<ShardContext>,
    timeout_ms: i32,
    keys: &[TopicPartition],
    idx: &[usize],
    results: &[ProduceResult],
    slots: &mut [Slot],
) {
    let waited = ctx
        .datapath()
        .wait_replicated(i64::from(timeout_ms), keys, results)
        .await;
    for (code, i) in waited.into_iter().flatten().zip(idx) {
        if code != ErrorCode::NONE {
            slots[*i].result.error_code = code;
        }
    }
}

fn to_responses(slots: Vec<Slot>) -> Vec<TopicProduceResponse> {
    let mut out: Vec<TopicProduceResponse> = Vec::new();
    for s in slots {
        let p = PartitionProduceResponse::default()
            .with_index(s.partition)
            .with_error_code(s.result.error_code.0)
            .with_base_offset(if s.result.error_code == ErrorCode::NONE {
                s.result.base_offset
            } else {
                -1
            })
            .with_log_append_time_ms(s.result.log_append_time_ms)
            .with_log_start_offset(s.result.log_start_offset)
            // v8+ (KIP-467): the refused records and the message.
            .with_record_errors(
                s.result
                    .record_errors
                    .iter()
                    .map(|(i, m)| {
                        BatchIndexAndErrorMessage::default()
                            .with_batch_index(*i)
                            .with_batch_index_error_message(Some(m.clone().into()))
                    })
                    .collect(),
            )
            .with_error_message(s.result.error_message.clone().map(Into::into));
        match out.last_mut() {
            Some(t) if t.name == s.topic => t.partition_responses.push(p),
            _ => out.push(
                TopicProduceResponse::default()
                    .with_name(s.topic)
                    .with_partition_responses(vec![p]),
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::admin_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use bytes::Bytes;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::TransactionalId;

    #[test]
    fn the_schema_covers_every_version_of_the_request() {
        API.assert_schema_covers_every_version(|_| {
            ProduceRequest::default()
                .with_transactional_id(Some(TransactionalId(str_bytes("tx"))))
                .with_acks(-1)
                .with_timeout_ms(5)
                .with_topic_data(vec![
                    TopicProduceData::default()
                        .with_name(TopicName(str_bytes("t")))
                        .with_partition_data(vec![
                            PartitionProduceData::default()
                                .with_index(3)
                                .with_records(Some(Bytes::from_static(b"0123456789"))),
                            PartitionProduceData::default().with_index(4),
                        ]),
                    TopicProduceData::default().with_name(TopicName(str_bytes("u"))),
                ])
        });
    }

    /// One topic whose partition_data claims 2^31-1 entries: refused by the
    /// walk, before the crate would reserve ~100 GB for it.
    #[test]
    fn a_nested_array_longer_than_the_body_is_refused() {
        let mut body = vec![0xff, 0xff, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 1, b't'];
        body.extend_from_slice(&i32::MAX.to_be_bytes());
        let r = API
            .decode::<ProduceRequest>(Bytes::from(body), 3)
            .map_err(HandlerError::from);
        assert!(matches!(r, Err(HandlerError::Malformed(_))), "{r:?}");
    }

    /// v0–v2 (the Kafka 3.9 codec's) decode into the same request.
    #[test]
    fn old_versions_decode_through_the_3_9_codec() {
        use kafka_protocol_39::messages::produce_request as old;
        use kafka_protocol_39::protocol::StrBytes;
        let request = old::ProduceRequest::default()
            .with_acks(1)
            .with_timeout_ms(1500)
            .with_topic_data(vec![old::TopicProduceData::default()
                .with_name(kafka_protocol_39::messages::TopicName(
                    StrBytes::from_static_str("t"),
                ))
                .with_partition_data(vec![
                    old::PartitionProduceData::default()
                        .with_index(2)
                        .with_records(Some(Bytes::from_static(b"0123456789abcdefgh"))),
                    old::PartitionProduceData::default().with_index(3),
                ])]);
        for v in 0..=LAST_OF_THE_39_CODEC {
            let body = encode_39(&request, v).unwrap();
            let r = decode_request(body, v).unwrap();
            assert_eq!(
                (r.acks, r.timeout_ms, r.transactional_id.clone()),
                (1, 1500, None)
            );
            let p = &r.topic_data[0].partition_data;
            assert_eq!(r.topic_data[0].name.as_str(), "t");
            assert_eq!((p[0].index, p[1].index), (2, 3));
            assert_eq!(p[0].records.as_deref(), Some(&b"0123456789abcdefgh"[..]));
            // Null records: the 3.9 codec reads them back as empty ones,
            // which the append refuses the same way (CORRUPT_MESSAGE).
            assert!(p[1].records.as_deref().is_none_or(<[u8]>::is_empty));
        }
        let topics = vec![TopicProduceResponse::default()
            .with_name(TopicName(str_bytes("t")))
            .with_partition_responses(vec![PartitionProduceResponse::default()
                .with_index(2)
                .with_base_offset(7)
                .with_log_append_time_ms(99)])];
        let v0 = encode_39(&old_response(topics.clone(), 5), 0).unwrap();
        let v2 = encode_39(&old_response(topics, 5), 2).unwrap();
        // v0: topics[name, partitions[index, error, base_offset]]; v1 adds
        // throttle_time_ms, v2 log_append_time_ms.
        assert_eq!(v0.len(), 4 + 2 + 1 + 4 + 4 + 2 + 8);
        assert_eq!(v2.len(), v0.len() + 4 + 8);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_old_bodies_never_panic(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..128),
            v in 0..=LAST_OF_THE_39_CODEC,
        ) {
            let _ = decode_request(Bytes::from(body), v);
        }
    }

    schema_fuzz_test!(API, ProduceRequest);
}
