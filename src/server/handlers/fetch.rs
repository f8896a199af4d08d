//! `[drv]` Fetch (key 1), v0–v17: topic names (≤ v12) and topic ids (v13+),
//! incremental fetch sessions (KIP-227), `max_bytes` / partition
//! `max_bytes`, at least one whole batch (KIP-74), isolation levels
//! (read_committed reads up to the LSO, the first offset of the oldest
//! open transaction below the HW, and gets the aborted transactions in
//! that range, KIP-98), and long polls through the purgatory
//! (`min_bytes` / `max_wait_ms`, Kafka's DelayedFetch).
//!
//! A fetch with a replica id ≥ 0 (v15+: `replica_state.replica_id`) is a
//! follower's (Kafka's `FetchParams.isFromFollower`): it reads up to the
//! LEO, its epochs are checked (`current_leader_epoch`, and the KIP-320
//! `last_fetched_epoch` → `diverging_epoch`), and the leader records its
//! fetch offset as its LEO (`replication::partition::leader`). v17 adds
//! only the tagged `ReplicaDirectoryId` (KIP-853; ignored here). The
//! leader-side replication quota applies to it (`throttle_leader`).
//!
//! Record bytes are never copied: owners return cached `Bytes` or segment
//! file regions; the response is header chunks interleaved with those
//! regions (`protocol::fetch_response`), written with sendmsg/sendfile.
//!
//! v0–v3 (decoded with the Kafka 3.9 codec) can read only magic 0 (v0–v1)
//! or magic ≤ 1 (v2–v3): their records are down-converted while the
//! answer is written (`protocol::legacy::lazy`, Kafka's
//! `KafkaApis.maybeConvertFetchedData` with `LazyDownConversionRecords`),
//! or refused with UNSUPPORTED_VERSION where `message.downconversion.enable`
//! (topic) / `log.message.downconversion.enable` (broker) is false, for
//! consumers (followers are never refused). Before v10 a zstd topic
//! (`compression.type=zstd`) answers UNSUPPORTED_COMPRESSION_TYPE.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::ApiKey;

use super::authz::Authz;
use super::quota_common::{fetch_throttle_ms, throttled_response, QuotaId};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::decode::DecodeError;
use crate::protocol::fetch_response::{
    encode_fetch_body, FetchPartitionOut, FetchTop, FetchTopicOut,
};
use crate::protocol::schema::{
    decode_checked_39, CheckedApi, Field, Schema, INT32, INT64, INT8, UUID,
};
use crate::protocol::{ApiRange, ErrorCode};
use crate::purgatory::delayed_fetch::{
    DelayedFetch, FetchCompletion, FetchIsolation, FetchPartitionSpec,
};
use crate::purgatory::view::LogOffsetMetadata;
use crate::replication::partition::{FollowerFetch, ReadAnswer};
use crate::replication::quota::{self, Side};
use crate::shard::data_shard::ReadSpec;
use crate::shard::fetch_session::{PartitionFetch, SentState, SessionDecision};
use crate::shard::ShardContext;
use crate::types::{BrokerId, TopicPartition};
use bytes::Bytes;

mod down_convert;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::Fetch, 0, 17);

/// The last version only the 3.9 codec has (Kafka 4 dropped v0–v3).
pub const LAST_OF_THE_39_CODEC: i16 = 3;

const FIRST_FLEXIBLE: i16 = 12;
const FIRST_TOPIC_IDS: i16 = 13;

/// FetchRequest.json (v4–v17; v17's ReplicaDirectoryId is a tagged field), up to the topics: replica_id (until v14;
/// v15+ sends it in the tagged replica_state), max_wait_ms, min_bytes,
/// max_bytes, isolation_level, session_id and session_epoch (v7+).
macro_rules! fetch_schema {
    ($($head:expr),*; $topic:expr) => {
        &[
            $($head,)*
            INT32,
            INT32,
            INT32,
            INT8,
            Field::Since(7, &INT32),
            Field::Since(7, &INT32),
            // topics [topic | topic_id, partitions [partition,
            // current_leader_epoch (v9+), fetch_offset, last_fetched_epoch
            // (v12+), log_start_offset (v5+), partition_max_bytes]]
            Field::Structs(&[
                $topic,
                Field::Structs(&[
                    INT32,
                    Field::Since(9, &INT32),
                    INT64,
                    Field::Since(12, &INT32),
                    Field::Since(5, &INT64),
                    INT32,
                ]),
            ]),
            // forgotten_topics_data (v7+) [topic | topic_id, partitions]
            Field::Since(7, &Field::Structs(&[$topic, Field::FixedArray(4)])),
            // rack_id (v11+)
            Field::Since(11, &Field::Str),
        ]
    };
}

const SCHEMA_BY_NAME: &[Field] = fetch_schema!(INT32; Field::Str);
const SCHEMA_BY_ID: &[Field] = fetch_schema!(INT32; UUID);
const SCHEMA_NO_REPLICA_ID: &[Field] = fetch_schema!(; UUID);

fn schema_for(version: i16) -> &'static [Field] {
    if version < FIRST_TOPIC_IDS {
        SCHEMA_BY_NAME
    } else if version < 15 {
        SCHEMA_BY_ID
    } else {
        SCHEMA_NO_REPLICA_ID
    }
}

/// FetchRequest.json v0–v3: replica_id, max_wait_ms, min_bytes,
/// max_bytes (v3+), topics [topic, partitions [partition, fetch_offset,
/// partition_max_bytes]].
const SCHEMA_OLD: &[Field] = &[
    INT32,
    INT32,
    INT32,
    Field::Since(3, &INT32),
    Field::Structs(&[Field::Str, Field::Structs(&[INT32, INT64, INT32])]),
];

/// The versions the current codec decodes (v4–v17).
pub const API: CheckedApi = CheckedApi {
    versions: ApiRange::new(ApiKey::Fetch, LAST_OF_THE_39_CODEC + 1, 17),
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::PerVersion(schema_for),
};

/// One partition the response answers, in order.
struct Wanted {
    topic: String,
    topic_id: [u8; 16],
    tp: Option<TopicPartition>,
    partition: i32,
    fetch: PartitionFetch,
    /// v12+ (-1 otherwise); for a partition an incremental fetch leaves
    /// out, the one the session keeps.
    last_fetched_epoch: i32,
    /// v5+ (-1 otherwise): the follower's log start offset.
    log_start_offset: i64,
    /// Set when the partition cannot be read (unknown topic / id).
    error: Option<i16>,
    /// The error is a refusal of `KafkaApis.maybeConvertFetchedData`
    /// (`FetchResponse.partitionResponse` after `recordsOrFail`): null
    /// records where every other answer has empty ones.
    null_records: bool,
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request = decode_request(req.body.clone(), version)?;
        let authz = Authz::new(&ctx, &req);
        let (parts, throttle_ms) = fetch(&ctx, &authz, &request, version, QuotaId::of(&req)).await;
        Ok(throttled_response(parts, throttle_ms, version >= 8).await)
    })
}

/// The request at `version`: v0–v3 with the Kafka 3.9 codec, carried over
/// into the current codec's type (read_uncommitted, no session, no
/// epochs; `max_bytes` Int32.MAX before v3).
pub fn decode_request(body: Bytes, version: i16) -> Result<FetchRequest, DecodeError> {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{BrokerId as WireBrokerId, TopicName};
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol_39::messages::fetch_request::FetchRequest as FetchRequest39;
    if version > LAST_OF_THE_39_CODEC {
        return API.decode(body, version);
    }
    let old: FetchRequest39 = decode_checked_39(body, SCHEMA_OLD, version, false)?;
    let topics = old
        .topics
        .into_iter()
        .map(|t| {
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(t.topic.0.to_string())))
                .with_partitions(
                    t.partitions
                        .into_iter()
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p.partition)
                                .with_fetch_offset(p.fetch_offset)
                                .with_partition_max_bytes(p.partition_max_bytes)
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(FetchRequest::default()
        .with_replica_id(WireBrokerId(old.replica_id.0))
        .with_max_wait_ms(old.max_wait_ms)
        .with_min_bytes(old.min_bytes)
        .with_max_bytes(old.max_bytes)
        .with_isolation_level(0)
        .with_topics(topics))
}

/// The response's parts and the throttle time (ms) the client's
/// `consumer_byte_rate` costs it (0 for followers and unquoted clients).
async fn fetch(
    ctx: &Rc<ShardContext>,
    authz: &Authz<'_>,
    request: &FetchRequest,
    version: i16,
    quota_id: QuotaId<'_>,
) -> (Vec<crate::server::out::OutPart>, u64) {
    let replica_id = if version >= 15 {
        request.replica_state.replica_id.0
    } else {
        request.replica_id.0
    };
    if replica_id >= 0 {
        crate::server::request_metrics::mark_follower_fetch(ctx);
    }
    let isolation = if replica_id >= 0 {
        FetchIsolation::LogEnd
    } else if request.isolation_level == 1 {
        FetchIsolation::TxnCommitted
    } else {
        FetchIsolation::HighWatermark
    };
    let (wanted, forgotten) = resolve(ctx, request, version);
    let (session_epoch, session_id) = if version >= 7 {
        (request.session_epoch, request.session_id)
    } else {
        (-1, 0)
    };
    let session_parts: Vec<(TopicPartition, PartitionFetch)> = wanted
        .iter()
        .filter_map(|w| w.tp.clone().map(|tp| (tp, w.fetch)))
        .collect();
    // Connections live on data shards only; a shard without one has no
    // sessions to offer (answered as Kafka answers a broker-side failure).
    let Some(data) = ctx.data() else {
        let top = FetchTop {
            error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
            ..FetchTop::default()
        };
        return (encode_fetch_body(version, top, Vec::new()), 0);
    };
    let decision = data.fetch_sessions.borrow_mut().on_fetch(
        session_id,
        session_epoch,
        &session_parts,
        &forgotten,
    );
    let (response_session, incremental, mut wanted) = match decision {
        SessionDecision::Error { error_code } => {
            let top = FetchTop {
                error_code,
                ..FetchTop::default()
            };
            return (encode_fetch_body(version, top, Vec::new()), 0);
        }
        SessionDecision::Full { session_id } => (session_id, false, wanted),
        SessionDecision::Incremental { session_id } => {
            let mut all = session_wanted(ctx, session_id);
            // Unknown ids in the request still answer with their error.
            all.extend(wanted.into_iter().filter(|w| w.error.is_some()));
            (session_id, true, all)
        }
    };
    let follower = (replica_id >= 0).then_some(BrokerId(replica_id));
    authorize(authz, follower.is_some(), &mut wanted);
    let max_bytes = usize::try_from(request.max_bytes).unwrap_or(0);
    let mut reads = read_all(ctx, &wanted, isolation, max_bytes, follower).await;
    let total: usize = reads.iter().flatten().map(|r| r.bytes).sum();
    let any_error = reads
        .iter()
        .flatten()
        .any(|r| r.error_code != ErrorCode::NONE || r.diverging_epoch.is_some())
        || wanted.iter().any(|w| w.error.is_some());
    if total < request.min_bytes.max(0) as usize && request.max_wait_ms > 0 && !any_error {
        long_poll(ctx, request, isolation, &wanted, &reads).await;
        reads = read_all(ctx, &wanted, isolation, max_bytes, follower).await;
    }
    if let Some(replica) = follower {
        throttle_leader(ctx, &wanted, &mut reads, replica, request.max_wait_ms).await;
    }
    if version < down_convert::FIRST_ZSTD_FETCH {
        down_convert::convert_reads(ctx, &mut wanted, &mut reads, version, follower.is_some());
    }
    count_reads(ctx, &wanted, &reads, follower);
    // consumer_byte_rate (Kafka's `handleFetchRequest`): the bytes this
    // answer would carry are measured; over the quota the answer carries
    // no data, only the throttle time (`getThrottledResponse`: the
    // session's id when incremental, none when full), and they are not
    // counted.
    if follower.is_none() {
        let bytes: usize = reads.iter().flatten().map(|r| r.bytes).sum();
        let throttle_ms = fetch_throttle_ms(ctx, quota_id, bytes).await;
        if throttle_ms > 0 {
            let top = FetchTop {
                throttle_time_ms: i32::try_from(throttle_ms).unwrap_or(i32::MAX),
                error_code: 0,
                session_id: if incremental { response_session } else { 0 },
            };
            return (encode_fetch_body(version, top, Vec::new()), throttle_ms);
        }
    }
    let topics = build_topics(ctx, response_session, incremental, &mut wanted, reads);
    let top = FetchTop {
        throttle_time_ms: 0,
        error_code: 0,
        session_id: response_session,
    };
    (encode_fetch_body(version, top, topics), 0)
}

/// Kafka's `handleFetchRequest` over the fetch context's partitions: a
/// follower needs CLUSTER_ACTION on the cluster, else every partition is
/// TOPIC_AUTHORIZATION_FAILED; a consumer needs READ on each topic (an
/// unknown topic id is reported first). A denied partition is not read.
fn authorize(authz: &Authz<'_>, follower: bool, wanted: &mut [Wanted]) {
    if !authz.enabled() {
        return;
    }
    let cluster_action = follower && authz.cluster(Operation::ClusterAction);
    let mut last: Option<(String, bool)> = None;
    for w in wanted.iter_mut() {
        if w.error == Some(ErrorCode::UNKNOWN_TOPIC_ID.0) {
            continue;
        }
        let allowed = if follower {
            cluster_action
        } else {
            match &last {
                Some((topic, allowed)) if *topic == w.topic => *allowed,
                _ => {
                    let allowed = authz.topic(Operation::Read, &w.topic);
                    last = Some((w.topic.clone(), allowed));
                    allowed
                }
            }
        };
        if !allowed {
            w.error = Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED.0);
        }
    }
}

/// The leader-side replication quota (`leader.replication.throttled.rate`,
/// `replication::quota`): over the bound, a partition this broker
/// throttles as leader gets no records for a follower outside its ISR
/// (Kafka's `ReplicaManager.shouldLeaderThrottle`); under it, the bytes
/// sent for such partitions are counted (`sizeOfThrottledPartitions`). A
/// follower left with nothing waits `max_wait_ms` for its answer, as a
/// delayed fetch that throttled bytes do not complete would.
async fn throttle_leader(
    ctx: &ShardContext,
    wanted: &[Wanted],
    reads: &mut [Option<ReadAnswer>],
    replica: BrokerId,
    max_wait_ms: i32,
) {
    let Some(data) = ctx.data() else {
        return;
    };
    let quotas = data.replicas.replication_quotas();
    if !quotas.is_bounded(Side::Leader) {
        return;
    }
    let snapshot = ctx.snapshot();
    let me = ctx.config.broker_id;
    let now = ctx.clock.wall_ms();
    let exceeded = quotas.is_exceeded(Side::Leader, now);
    let (mut sent, mut dropped) = (0usize, false);
    for (w, r) in wanted.iter().zip(reads.iter_mut()) {
        let (Some(tp), Some(r)) = (&w.tp, r) else {
            continue;
        };
        let Some(topic) = snapshot.hosted_topics.get(&*tp.topic) else {
            continue;
        };
        let in_sync = topic
            .partitions
            .iter()
            .find(|p| p.partition == tp.partition)
            .is_some_and(|p| p.isr.contains(&replica));
        if in_sync
            || !quota::is_throttled(
                &topic.configs,
                quota::LEADER_THROTTLED_REPLICAS,
                tp.partition,
                me,
            )
        {
            continue;
        }
        if !exceeded {
            sent += r.bytes;
        } else if r.bytes > 0 {
            r.records.clear();
            r.bytes = 0;
            dropped = true;
        }
    }
    quotas.record(Side::Leader, sent, now);
    let left: usize = reads.iter().flatten().map(|r| r.bytes).sum();
    if dropped && left == 0 && max_wait_ms > 0 {
        glommio::timer::sleep(std::time::Duration::from_millis(max_wait_ms as u64)).await;
    }
}

/// The request's partitions, with names resolved (v13+ sends topic ids).
fn resolve(
    ctx: &ShardContext,
    request: &FetchRequest,
    version: i16,
) -> (Vec<Wanted>, Vec<TopicPartition>) {
    let snapshot = ctx.snapshot();
    let by_id = version >= FIRST_TOPIC_IDS;
    let mut wanted = Vec::new();
    for topic in &request.topics {
        let (state, served) = if by_id {
            (
                snapshot.hosted_topic_by_id(topic.topic_id),
                snapshot.cluster_topic_by_id(topic.topic_id),
            )
        } else {
            let name = topic.topic.as_str();
            (snapshot.hosted_topic(name), snapshot.cluster_topic(name))
        };
        for p in &topic.partitions {
            let fetch = PartitionFetch {
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
                last_fetched_epoch: if version >= 12 {
                    p.last_fetched_epoch
                } else {
                    -1
                },
                log_start_offset: if version >= 5 { p.log_start_offset } else { -1 },
            };
            let (name, id, tp, error) = match (state, served) {
                (Some(t), _) if t.partitions.iter().any(|s| s.partition == p.partition) => (
                    t.name.to_string(),
                    *t.topic_id.as_bytes(),
                    Some(TopicPartition::new(t.name.clone(), p.partition)),
                    None,
                ),
                // Not hosted here: NOT_LEADER_OR_FOLLOWER when Metadata
                // knows the partition (Kafka's `getPartitionOrError`).
                (Some(t), _) | (None, Some(t)) => (
                    t.name.to_string(),
                    *t.topic_id.as_bytes(),
                    None,
                    Some(snapshot.not_hosted_error(&t.name, p.partition).0),
                ),
                (None, None) if by_id => (
                    String::new(),
                    *topic.topic_id.as_bytes(),
                    None,
                    Some(ErrorCode::UNKNOWN_TOPIC_ID.0),
                ),
                (None, None) => (
                    topic.topic.to_string(),
                    [0; 16],
                    None,
                    Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0),
                ),
            };
            wanted.push(Wanted {
                topic: name,
                topic_id: id,
                tp,
                partition: p.partition,
                fetch,
                last_fetched_epoch: fetch.last_fetched_epoch,
                log_start_offset: fetch.log_start_offset,
                error,
                null_records: false,
            });
        }
    }
    let mut forgotten = Vec::new();
    if version >= 7 {
        for f in &request.forgotten_topics_data {
            // Kafka resolves forgotten ids through `metadataCache` (the
            // cluster view): a session may forget a topic this broker no
            // longer hosts.
            let name = if by_id {
                snapshot
                    .cluster_topic_by_id(f.topic_id)
                    .or_else(|| snapshot.hosted_topic_by_id(f.topic_id))
                    .map(|t| t.name.clone())
            } else {
                Some(std::sync::Arc::from(f.topic.as_str()))
            };
            if let Some(name) = name {
                forgotten.extend(
                    f.partitions
                        .iter()
                        .map(|p| TopicPartition::new(name.clone(), *p)),
                );
            }
        }
    }
    (wanted, forgotten)
}

fn session_wanted(ctx: &ShardContext, session_id: i32) -> Vec<Wanted> {
    let snapshot = ctx.snapshot();
    let Some(data) = ctx.data() else {
        return Vec::new();
    };
    data.fetch_sessions
        .borrow()
        .session_partitions(session_id)
        .into_iter()
        .map(|(tp, fetch)| {
            let state = snapshot
                .hosted_topic(&tp.topic)
                .or_else(|| snapshot.cluster_topic(&tp.topic));
            Wanted {
                topic: tp.topic.to_string(),
                topic_id: state.map(|t| *t.topic_id.as_bytes()).unwrap_or([0; 16]),
                partition: tp.partition,
                error: if snapshot.hosts_partition(&tp.topic, tp.partition) {
                    None
                } else {
                    Some(snapshot.not_hosted_error(&tp.topic, tp.partition).0)
                },
                tp: Some(tp),
                fetch,
                // As the session last had them (Kafka's CachedPartition):
                // a follower on an incremental session still gets its
                // diverging-epoch check and log start offset tracked.
                last_fetched_epoch: fetch.last_fetched_epoch,
                log_start_offset: fetch.log_start_offset,
                null_records: false,
            }
        })
        .collect()
}

async fn read_all(
    ctx: &Rc<ShardContext>,
    wanted: &[Wanted],
    isolation: FetchIsolation,
    max_bytes: usize,
    follower: Option<BrokerId>,
) -> Vec<Option<ReadAnswer>> {
    let mut specs = Vec::new();
    let mut index = Vec::with_capacity(wanted.len());
    for w in wanted {
        match (&w.tp, w.error) {
            (Some(tp), None) => {
                index.push(Some(specs.len()));
                specs.push(ReadSpec {
                    tp: tp.clone(),
                    offset: w.fetch.fetch_offset,
                    partition_max_bytes: usize::try_from(w.fetch.partition_max_bytes).unwrap_or(0),
                    current_leader_epoch: w.fetch.current_leader_epoch,
                    follower: follower.map(|replica_id| FollowerFetch {
                        replica_id,
                        current_leader_epoch: w.fetch.current_leader_epoch,
                        last_fetched_epoch: w.last_fetched_epoch,
                        log_start_offset: w.log_start_offset,
                    }),
                });
            }
            _ => index.push(None),
        }
    }
    let mut answers: Vec<Option<ReadAnswer>> = ctx
        .datapath()
        .read_on_owners(specs, isolation, max_bytes)
        .await
        .into_iter()
        .map(Some)
        .collect();
    index
        .into_iter()
        .map(|i| i.and_then(|i| answers.get_mut(i).and_then(Option::take)))
        .collect()
}

/// Park the fetch until `min_bytes` are readable or `max_wait_ms` passes.
async fn long_poll(
    ctx: &Rc<ShardContext>,
    request: &FetchRequest,
    isolation: FetchIsolation,
    wanted: &[Wanted],
    reads: &[Option<ReadAnswer>],
) {
    let mut specs = Vec::new();
    let mut seen = Vec::new();
    for (w, r) in wanted.iter().zip(reads) {
        let (Some(tp), Some(r)) = (&w.tp, r) else {
            continue;
        };
        let Some(s) = r.snapshot else { continue };
        seen.push((tp.clone(), s));
        // The read stopped at the watermark: its logical byte position
        // minus what was read is where this fetch stands.
        let at = isolation.watermark(&s);
        let position = at.relative_position - r.bytes as i64;
        specs.push(FetchPartitionSpec {
            tp: tp.clone(),
            fetch_offset: LogOffsetMetadata::new(
                w.fetch.fetch_offset,
                at.segment_base_offset,
                position,
            ),
            partition_max_bytes: w.fetch.partition_max_bytes,
            current_leader_epoch: (w.fetch.current_leader_epoch >= 0)
                .then_some(crate::types::LeaderEpoch(w.fetch.current_leader_epoch)),
        });
    }
    if specs.is_empty() {
        return;
    }
    let keys: Vec<TopicPartition> = specs.iter().map(|s| s.tp.clone()).collect();
    let op = DelayedFetch::new(
        i64::from(request.max_wait_ms),
        request.min_bytes,
        request.max_bytes,
        isolation,
        specs,
    );
    let outcome = ctx.datapath().park(op, &keys, seen).await;
    // `DelayedFetch.onExpiration`: a follower's fetch (read to the log
    // end) or a consumer's.
    if outcome.is_some_and(|o| o.reason == FetchCompletion::Expired) {
        ctx.stats
            .metrics
            .on_fetch_expired(isolation == FetchIsolation::LogEnd);
    }
}

/// `BrokerTopicMetrics` of a fetch's partitions (Kafka's `fetchMessages`:
/// every partition read counts once, followers' included). A follower's
/// bytes of a partition it is being reassigned to also count as
/// `ReassignmentBytesOutPerSec` (`BrokerTopicStats.updateBytesOut` with
/// `ReplicaManager.isAddingReplica`).
fn count_reads(
    ctx: &ShardContext,
    wanted: &[Wanted],
    reads: &[Option<ReadAnswer>],
    follower: Option<BrokerId>,
) {
    let snapshot = ctx.snapshot();
    for (w, r) in wanted.iter().zip(reads) {
        let (bytes, code) = match (w.error, r) {
            (Some(code), _) => (0, ErrorCode(code)),
            (None, Some(r)) => (r.bytes as u64, r.error_code),
            (None, None) => (0, ErrorCode::NOT_LEADER_OR_FOLLOWER),
        };
        ctx.stats
            .metrics
            .on_fetch_result(&w.topic, bytes, follower.is_some(), code);
        if let Some(replica) = follower {
            if code == ErrorCode::NONE && snapshot.is_adding_replica(&w.topic, w.partition, replica)
            {
                ctx.stats
                    .metrics
                    .on_broker(|b| b.reassignment_bytes_out += bytes);
            }
        }
    }
}

fn build_topics(
    ctx: &ShardContext,
    session_id: i32,
    incremental: bool,
    wanted: &mut [Wanted],
    reads: Vec<Option<ReadAnswer>>,
) -> Vec<FetchTopicOut> {
    let mut topics: Vec<FetchTopicOut> = Vec::new();
    let Some(data) = ctx.data() else {
        return Vec::new();
    };
    let mut sessions = data.fetch_sessions.borrow_mut();
    for (w, r) in wanted.iter_mut().zip(reads) {
        let out = match (w.error, r) {
            (Some(code), _) => FetchPartitionOut {
                null_records: w.null_records,
                ..FetchPartitionOut::error(w.partition, code)
            },
            (None, None) => {
                FetchPartitionOut::error(w.partition, ErrorCode::NOT_LEADER_OR_FOLLOWER.0)
            }
            (None, Some(r)) => FetchPartitionOut {
                partition_index: w.partition,
                error_code: r.error_code.0,
                high_watermark: r.high_watermark,
                last_stable_offset: r.last_stable_offset,
                log_start_offset: r.log_start_offset,
                records: r.records,
                diverging_epoch: r.diverging_epoch.map(|d| (d.leader_epoch, d.end_offset)),
                aborted_transactions: r.aborted_transactions,
                null_records: false,
            },
        };
        if session_id != 0 {
            if let Some(tp) = &w.tp {
                let sent = SentState {
                    high_watermark: out.high_watermark,
                    last_stable_offset: out.last_stable_offset,
                    log_start_offset: out.log_start_offset,
                };
                let has_records = !out.records.is_empty() || out.diverging_epoch.is_some();
                let respond =
                    sessions.must_respond(session_id, tp, sent, has_records, out.error_code);
                if incremental && !respond {
                    continue;
                }
            }
        }
        match topics.last_mut() {
            Some(t) if t.topic == w.topic && t.topic_id == w.topic_id => t.partitions.push(out),
            _ => topics.push(FetchTopicOut {
                topic: w.topic.clone(),
                topic_id: w.topic_id,
                partitions: vec![out],
            }),
        }
    }
    topics
}

#[cfg(test)]
mod tests {
    use super::super::admin_common::str_bytes;
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use bytes::Bytes;
    use kafka_protocol::messages::fetch_request::{
        FetchPartition, FetchTopic, ForgottenTopic, ReplicaState,
    };
    use kafka_protocol::messages::{BrokerId, TopicName};
    use uuid::Uuid;

    fn request(v: i16) -> FetchRequest {
        let id = Uuid::from_bytes([7; 16]);
        let partition = {
            let p = FetchPartition::default()
                .with_partition(1)
                .with_fetch_offset(100)
                .with_partition_max_bytes(1 << 20);
            let p = if v >= 9 {
                p.with_current_leader_epoch(3)
            } else {
                p
            };
            let p = if v >= 12 {
                p.with_last_fetched_epoch(2)
            } else {
                p
            };
            if v >= 5 {
                p.with_log_start_offset(10)
            } else {
                p
            }
        };
        let topic = |name: &str| {
            let t =
                FetchTopic::default().with_partitions(vec![partition.clone(), partition.clone()]);
            if v >= FIRST_TOPIC_IDS {
                t.with_topic_id(id)
            } else {
                t.with_topic(TopicName(str_bytes(name)))
            }
        };
        let mut r = FetchRequest::default()
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(1 << 24)
            .with_isolation_level(1)
            .with_topics(vec![topic("t"), topic("u")]);
        if v < 15 {
            r = r.with_replica_id(BrokerId(-1));
        } else {
            r = r.with_replica_state(ReplicaState::default().with_replica_id(BrokerId(-1)));
        }
        if v >= 7 {
            let forgotten = ForgottenTopic::default().with_partitions(vec![0, 1, 2]);
            let forgotten = if v >= FIRST_TOPIC_IDS {
                forgotten.with_topic_id(id)
            } else {
                forgotten.with_topic(TopicName(str_bytes("f")))
            };
            r = r
                .with_session_id(9)
                .with_session_epoch(1)
                .with_forgotten_topics_data(vec![forgotten]);
        }
        if v >= 11 {
            r = r.with_rack_id(str_bytes("rack-a"));
        }
        if v >= FIRST_FLEXIBLE {
            r = r.with_cluster_id(Some(str_bytes("cluster")));
        }
        r
    }

    #[test]
    fn the_schema_covers_every_version_of_the_request() {
        API.assert_schema_covers_every_version(request);
    }

    /// A v7 request whose forgotten_topics_data claims 2^31-1 entries.
    #[test]
    fn a_nested_array_longer_than_the_body_is_refused() {
        let mut body = Vec::new();
        for field in [-1i32, 500, 1, 1 << 20] {
            body.extend_from_slice(&field.to_be_bytes());
        }
        body.push(0); // isolation_level
        body.extend_from_slice(&0i32.to_be_bytes()); // session_id
        body.extend_from_slice(&0i32.to_be_bytes()); // session_epoch
        body.extend_from_slice(&0i32.to_be_bytes()); // no topics
        body.extend_from_slice(&i32::MAX.to_be_bytes()); // forgotten topics
        let r = API
            .decode::<FetchRequest>(Bytes::from(body), 7)
            .map_err(HandlerError::from);
        assert!(matches!(r, Err(HandlerError::Malformed(_))), "{r:?}");
    }

    /// v0–v3 (the Kafka 3.9 codec's) decode into the same request.
    #[test]
    fn old_versions_decode_through_the_3_9_codec() {
        use crate::protocol::schema::encode_39;
        use kafka_protocol_39::messages::fetch_request as old;
        use kafka_protocol_39::protocol::StrBytes;
        let request = old::FetchRequest::default()
            .with_replica_id(kafka_protocol_39::messages::BrokerId(-1))
            .with_max_wait_ms(100)
            .with_min_bytes(1)
            .with_max_bytes(5000)
            .with_topics(vec![old::FetchTopic::default()
                .with_topic(kafka_protocol_39::messages::TopicName(
                    StrBytes::from_static_str("t"),
                ))
                .with_partitions(vec![old::FetchPartition::default()
                    .with_partition(2)
                    .with_fetch_offset(42)
                    .with_partition_max_bytes(1 << 20)])]);
        for v in 0..=LAST_OF_THE_39_CODEC {
            let r = decode_request(encode_39(&request, v).unwrap(), v).unwrap();
            assert_eq!((r.replica_id.0, r.max_wait_ms, r.min_bytes), (-1, 100, 1));
            assert_eq!(r.max_bytes, if v >= 3 { 5000 } else { i32::MAX }, "v{v}");
            assert_eq!(r.isolation_level, 0);
            let p = &r.topics[0].partitions[0];
            assert_eq!(r.topics[0].topic.as_str(), "t");
            assert_eq!(
                (p.partition, p.fetch_offset, p.partition_max_bytes),
                (2, 42, 1 << 20)
            );
        }
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

    schema_fuzz_test!(API, FetchRequest);
}
