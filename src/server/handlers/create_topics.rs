//! `[drv]` CreateTopics (key 19), v0–v7 (Kafka 3.9's range). The current
//! codec starts at v2; v0 and v1 are older shapes of it
//! (CreateTopicsRequest.json / CreateTopicsResponse.json): v1's request is
//! v2's, v0's lacks the trailing `validate_only`; v1's answer is v2's
//! without the leading throttle time, v0's also without `error_message`.
//!
//! Forwarded to the control shard, which writes the topics to the metadata
//! store and publishes the new snapshot to every data shard before it
//! answers (Kafka's CreateTopics waits for metadata propagation). From v5
//! the answer carries partitions, replication factor and the resolved
//! configs (KIP-525); from v7 the topic id (KIP-516).

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::create_topics_request::CreateTopicsRequest;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult, CreateTopicsResponse,
};
use kafka_protocol::messages::{ApiKey, TopicName};

use super::admin_common::{call_control_into, failure, str_bytes};
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::config::topic::{validate_one, BrokerTopicDefaults, TopicConfig};
use crate::controller::admin_requests::{AdminRequest, AdminResponse, AdminResult};
use crate::controller::topic_admin::{NewTopic, TopicInfo};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT16, INT32};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::CreateTopics, 0, 7);

/// The versions the current codec has (v2–v7).
const CODEC_VERSIONS: ApiRange = ApiRange::new(ApiKey::CreateTopics, 2, 7);

const FIRST_FLEXIBLE: i16 = 5;

/// CreateTopicsRequest.json: topics [name, num_partitions,
/// replication_factor, assignments [partition, broker_ids], configs [name,
/// value]], timeout_ms, validate_only (v1+).
const SCHEMA: &[Field] = &[
    Field::Structs(&[
        Field::Str,
        INT32,
        INT16,
        Field::Structs(&[INT32, Field::FixedArray(4)]),
        Field::Structs(&[Field::Str, Field::Str]),
    ]),
    INT32,
    Field::Since(1, &BOOL),
];

/// What the shared admin preamble needs to decode this API.
pub const API: CheckedApi = CheckedApi {
    versions: CODEC_VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        let defaults = ctx.config.topic_defaults(&ctx.snapshot().broker_configs);
        let (mut results, mut to_create) = prepare(&request);
        // Kafka's handleCreateTopicsRequest: CREATE on the cluster, else
        // CREATE on each topic (denied: TOPIC_AUTHORIZATION_FAILED).
        let create_any = authz.cluster(Operation::Create);
        to_create.retain(|(i, t)| {
            let allowed = create_any || authz.topic(Operation::Create, &t.name);
            if !allowed {
                results[*i] = Some(Err(failure(
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    "Authorization failed.",
                )));
            }
            allowed
        });
        if !to_create.is_empty() {
            let slots: Vec<usize> = to_create.iter().map(|(i, _)| *i).collect();
            let topics = to_create.into_iter().map(|(_, t)| t).collect();
            let req = AdminRequest::CreateTopics {
                topics,
                validate_only: request.validate_only,
            };
            call_control_into(&ctx, req, slots, &mut results, |r| match r {
                AdminResponse::CreatedTopics(created) => Some(created),
                _ => None,
            })
            .await;
            if ctx.config.zookeeper_connect.is_some() && !request.validate_only {
                await_leaders(&ctx, &mut results, request.timeout_ms).await;
            }
        }
        let mut response = CreateTopicsResponse::default();
        response.topics = request
            .topics
            .iter()
            .zip(results)
            .map(|(t, r)| {
                let mut result = topic_result(&t.name.0, r, version, &defaults);
                // Without DESCRIBE_CONFIGS on the topic its configs are
                // not shown (`topic_config_error_code`, v5+).
                if !authz.topic(Operation::DescribeConfigs, t.name.0.as_str()) {
                    result.topic_config_error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;
                    result.configs = None;
                    result.num_partitions = -1;
                    result.replication_factor = -1;
                }
                result
            })
            .collect();
        let body = encode_response(&response, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// The request at any version: v0 with `validate_only` false appended,
/// v0 and v1 decoded as v2 (the same fields).
pub fn decode_request(body: Bytes, version: i16) -> Result<CreateTopicsRequest, DecodeError> {
    match version {
        0 => {
            let mut with_flag = BytesMut::from(&body[..]);
            with_flag.put_u8(0);
            API.decode(with_flag.freeze(), CODEC_VERSIONS.min)
        }
        1 => API.decode(body, CODEC_VERSIONS.min),
        v => API.decode(body, v),
    }
}

/// The answer at any version (see the module comment for v0 and v1).
fn encode_response(response: &CreateTopicsResponse, version: i16) -> Result<Bytes, HandlerError> {
    match version {
        0 => {
            // topics [name, error_code]
            let mut out = BytesMut::new();
            let count = i32::try_from(response.topics.len())
                .map_err(|_| HandlerError::Encode("too many topics".into()))?;
            out.put_i32(count);
            for t in &response.topics {
                let name = t.name.0.as_bytes();
                let len = i16::try_from(name.len())
                    .map_err(|_| HandlerError::Encode("topic name too long".into()))?;
                out.put_i16(len);
                out.put_slice(name);
                out.put_i16(t.error_code);
            }
            Ok(out.freeze())
        }
        1 => {
            let body = encode(response, CODEC_VERSIONS.min).map_err(HandlerError::Encode)?;
            // v2 leads with throttle_time_ms, which v1 lacks.
            Ok(body.slice(4..))
        }
        v => encode(response, v).map_err(HandlerError::Encode),
    }
}

/// ZooKeeper mode: the topics are written, the controller elects their
/// leaders; answer once this broker's metadata shows a leader for every
/// partition of every created topic, or after `timeout_ms` with
/// REQUEST_TIMED_OUT for the topics still without (Kafka 3.9
/// `ZkAdminManager.createTopics` + `DelayedCreatePartitions`; a timeout of
/// 0 or less answers at once).
async fn await_leaders(
    ctx: &ShardContext,
    results: &mut [Option<AdminResult<TopicInfo>>],
    timeout_ms: i32,
) {
    let created: Vec<(String, usize)> = results
        .iter()
        .flatten()
        .filter_map(|r| r.as_ref().ok())
        .map(|info| (info.name.clone(), info.partitions.len()))
        .collect();
    if created.is_empty() || timeout_ms <= 0 {
        return;
    }
    let led = |s: &crate::metadata::Snapshot, name: &str, n: usize| {
        s.cluster_topic(name).is_some_and(|t| {
            t.partitions.len() >= n && t.partitions.iter().all(|p| p.leader.0 >= 0)
        })
    };
    let timeout = std::time::Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    let all = ctx
        .wait_for_snapshot(timeout, |s| created.iter().all(|(t, n)| led(s, t, *n)))
        .await;
    if all {
        return;
    }
    let now = ctx.snapshot();
    for slot in results.iter_mut() {
        let late = matches!(slot, Some(Ok(info)) if !led(&now, &info.name, info.partitions.len()));
        if late {
            *slot = Some(Err(failure(
                ErrorCode::REQUEST_TIMED_OUT,
                "Timed out waiting for the topic's partitions to get leaders.",
            )));
        }
    }
}

/// Results decided here (duplicates, null config values) and the topics
/// to send to the control shard, with their slot in the response.
#[allow(clippy::type_complexity)]
fn prepare(
    request: &CreateTopicsRequest,
) -> (Vec<Option<AdminResult<TopicInfo>>>, Vec<(usize, NewTopic)>) {
    let mut results = vec![None; request.topics.len()];
    let mut to_create = Vec::new();
    let mut listed: HashMap<&str, usize> = HashMap::new();
    for t in &request.topics {
        *listed.entry(t.name.0.as_str()).or_default() += 1;
    }
    for (i, t) in request.topics.iter().enumerate() {
        let name = t.name.0.as_str();
        // Kafka: a topic listed twice fails as INVALID_REQUEST, every time.
        if listed.get(name).copied().unwrap_or(0) > 1 {
            let message = format!("Create topics request from client contains multiple entries for the following topics: {name}");
            results[i] = Some(Err(failure(ErrorCode::INVALID_REQUEST, &message)));
            continue;
        }
        let mut configs = BTreeMap::new();
        let mut null_key = None;
        for c in &t.configs {
            match &c.value {
                Some(v) => {
                    configs.insert(c.name.to_string(), v.to_string());
                }
                None => null_key = Some(c.name.to_string()),
            }
        }
        if let Some(key) = null_key {
            let message = format!("Null value not supported for topic configs: {key}");
            results[i] = Some(Err(failure(ErrorCode::INVALID_CONFIG, &message)));
            continue;
        }
        let replica_assignment = t
            .assignments
            .iter()
            .map(|a| {
                (
                    a.partition_index,
                    a.broker_ids
                        .iter()
                        .map(|b| crate::types::BrokerId(b.0))
                        .collect(),
                )
            })
            .collect();
        to_create.push((
            i,
            NewTopic {
                name: name.to_owned(),
                num_partitions: t.num_partitions,
                replication_factor: t.replication_factor,
                replica_assignment,
                configs,
            },
        ));
    }
    (results, to_create)
}

fn topic_result(
    name: &str,
    outcome: Option<AdminResult<TopicInfo>>,
    version: i16,
    defaults: &BrokerTopicDefaults,
) -> CreatableTopicResult {
    let mut r = CreatableTopicResult::default();
    r.name = TopicName(str_bytes(name));
    // Kafka sends null on success (the codec's default is "").
    r.error_message = None;
    let info = match outcome {
        Some(Ok(info)) => info,
        Some(Err(e)) => {
            r.error_code = e.code.0;
            r.error_message = Some(str_bytes(e.message));
            // Kafka leaves configs null on error (v5+).
            r.configs = None;
            return r;
        }
        None => {
            r.error_code = ErrorCode::UNKNOWN_SERVER_ERROR.0;
            r.configs = None;
            return r;
        }
    };
    r.topic_id = info.topic_id;
    if version >= FIRST_FLEXIBLE {
        r.num_partitions = info.partitions.len() as i32;
        r.replication_factor = info
            .partitions
            .first()
            .map_or(-1, |p| p.replicas.len() as i16);
        r.configs = Some(resolved_configs(&info.configs, defaults));
    }
    r
}

/// Every topic config with its effective value and source (KIP-525).
fn resolved_configs(
    overrides: &BTreeMap<String, String>,
    defaults: &BrokerTopicDefaults,
) -> Vec<CreatableTopicConfigs> {
    let usable: BTreeMap<String, String> = overrides
        .iter()
        .filter(|(k, v)| validate_one(k, v).is_ok())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let config = TopicConfig::resolve(&usable, defaults)
        .unwrap_or_else(|_| TopicConfig::from_broker_defaults(defaults));
    config
        .describe(&usable, defaults, None)
        .into_iter()
        .map(|e| {
            let mut c = CreatableTopicConfigs::default();
            c.name = str_bytes(e.name);
            c.value = e.value.map(str_bytes);
            c.read_only = e.read_only;
            c.config_source = e.source as i8;
            c.is_sensitive = e.is_sensitive;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::create_topics_request::{
        CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
    };
    use kafka_protocol::messages::BrokerId;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            CreateTopicsRequest::default()
                .with_topics(vec![CreatableTopic::default()
                    .with_name(TopicName(str_bytes("t")))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_assignments(vec![CreatableReplicaAssignment::default()
                        .with_partition_index(0)
                        .with_broker_ids(vec![BrokerId(1), BrokerId(2)])])
                    .with_configs(vec![
                        CreatableTopicConfig::default()
                            .with_name(str_bytes("retention.ms"))
                            .with_value(Some(str_bytes("1"))),
                        CreatableTopicConfig::default().with_name(str_bytes("x")),
                    ])])
                .with_timeout_ms(5)
                .with_validate_only(true)
        });
    }

    schema_fuzz_test!(API, CreateTopicsRequest);
}
