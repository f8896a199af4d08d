//! `[drv]` DescribeConfigs (key 32), v0–v4 (Kafka 3.9's range), answered
//! by this broker: topic overrides from the snapshot or the
//! metadata store, broker keys from this process's `server.properties`.
//!
//! - TOPIC (2): every topic config with value, source and synonyms
//!   (KIP-226); unknown topic → UNKNOWN_TOPIC_OR_PARTITION, bad name →
//!   INVALID_TOPIC_EXCEPTION. Any broker answers for any topic of the
//!   cluster view, hosted here or not (Kafka 3.9's
//!   `ConfigHelper.describeConfigs`: `metadataCache.contains(topic)`, then
//!   the overrides from the `ConfigRepository`, which in ZooKeeper mode
//!   reads `/config/topics/<t>`, here through the control shard; embedded
//!   mode's snapshot carries every topic's overrides).
//! - BROKER (4): with this broker's id, every key with its effective
//!   value and source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
//!   STATIC_BROKER_CONFIG, DEFAULT_CONFIG; the dynamic ones alterable);
//!   with an empty name, the cluster-wide dynamic defaults only (Kafka's
//!   `ConfigHelper`); another broker's id is INVALID_REQUEST.
//! - anything else: INVALID_REQUEST.

use std::collections::BTreeMap;
use std::rc::Rc;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResponse, DescribeConfigsResult,
    DescribeConfigsSynonym,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::config_resources::config_access_denied;
use super::config_resources::{RESOURCE_BROKER, RESOURCE_TOPIC};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::config::topic::{validate_one, ConfigEntry, TopicConfig};
use crate::protocol::decode::DecodeError;
use crate::protocol::encode::encode;
use crate::protocol::schema::{encode_39, CheckedApi, Field, Schema, BOOL, INT8};
use crate::protocol::topic_name::is_valid_topic_name;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeConfigs, 0, 4);

/// The versions the current codec has (v1–v4); v0 (no `include_synonyms`
/// in the request, `is_default` instead of `config_source` and synonyms
/// in the answer) goes through the Kafka 3.9 codec.
const CODEC_VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeConfigs, 1, 4);

const FIRST_FLEXIBLE: i16 = 4;

/// DescribeConfigsRequest.json: resources [type, name, keys (nullable)],
/// include_synonyms (v1+), include_documentation (v3+).
const SCHEMA: &[Field] = &[
    Field::Structs(&[INT8, Field::Str, Field::StrArray]),
    Field::Since(1, &BOOL),
    Field::Since(3, &BOOL),
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
        let mut response = DescribeConfigsResponse::default();
        // Kafka's `ConfigHelper.handleDescribeConfigsRequest` answers the
        // authorized resources first, then the refused ones (each in
        // request order).
        let mut refused = Vec::new();
        for r in &request.resources {
            // Kafka's ConfigHelper: DESCRIBE_CONFIGS on the topic, or on
            // the cluster for a broker (logger) resource.
            if let Some(denied) = config_access_denied(
                &authz,
                Operation::DescribeConfigs,
                r.resource_type,
                r.resource_name.as_str(),
            ) {
                let mut result = DescribeConfigsResult::default();
                result.resource_type = r.resource_type;
                result.resource_name = r.resource_name.clone();
                result.error_code = denied.code.0;
                result.error_message = Some(str_bytes(denied.message));
                refused.push(result);
                continue;
            }
            let result = describe(&ctx, r, request.include_synonyms, version).await;
            response.results.push(result);
        }
        response.results.append(&mut refused);
        let body = if version == 0 {
            encode_v0(&response)
        } else {
            encode(&response, version)
        }
        .map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// The request at any version: v0 is v1 without the trailing
/// `include_synonyms` (false).
pub fn decode_request(body: Bytes, version: i16) -> Result<DescribeConfigsRequest, DecodeError> {
    if version > 0 {
        return API.decode(body, version);
    }
    let mut with_flag = BytesMut::from(&body[..]);
    with_flag.put_u8(0);
    API.decode(with_flag.freeze(), CODEC_VERSIONS.min)
}

/// The v0 answer with the Kafka 3.9 codec: no source, no synonyms, and
/// `is_default` false whatever the source, as Kafka 3.9 answers it
/// (`ConfigHelper` never sets the v0-only field; tests/differential_kafka.rs
/// compares).
fn encode_v0(response: &DescribeConfigsResponse) -> Result<Bytes, String> {
    use kafka_protocol_39::messages::describe_configs_response as old;
    use kafka_protocol_39::protocol::StrBytes as OldStr;
    let text = |s: &kafka_protocol::protocol::StrBytes| OldStr::from_string(s.to_string());
    let results = response
        .results
        .iter()
        .map(|r| {
            old::DescribeConfigsResult::default()
                .with_error_code(r.error_code)
                .with_error_message(r.error_message.as_ref().map(text))
                .with_resource_type(r.resource_type)
                .with_resource_name(text(&r.resource_name))
                .with_configs(
                    r.configs
                        .iter()
                        .map(|c| {
                            old::DescribeConfigsResourceResult::default()
                                .with_name(text(&c.name))
                                .with_value(c.value.as_ref().map(text))
                                .with_read_only(c.read_only)
                                .with_is_sensitive(c.is_sensitive)
                        })
                        .collect(),
                )
        })
        .collect();
    let v0 = old::DescribeConfigsResponse::default()
        .with_throttle_time_ms(response.throttle_time_ms)
        .with_results(results);
    encode_39(&v0, 0)
}

async fn describe(
    ctx: &ShardContext,
    resource: &DescribeConfigsResource,
    include_synonyms: bool,
    version: i16,
) -> DescribeConfigsResult {
    let mut result = DescribeConfigsResult::default();
    result.resource_type = resource.resource_type;
    result.resource_name = resource.resource_name.clone();
    let keys: Option<Vec<String>> = resource
        .configuration_keys
        .as_ref()
        .map(|ks| ks.iter().map(|k| k.to_string()).collect());
    let entries = match resource.resource_type {
        RESOURCE_TOPIC => topic_entries(ctx, &resource.resource_name, keys.as_deref()).await,
        RESOURCE_BROKER => broker_entries(ctx, &resource.resource_name, keys.as_deref()),
        other => Err((
            ErrorCode::INVALID_REQUEST,
            format!("Unsupported resource type {other}"),
        )),
    };
    match entries {
        Ok(entries) => {
            result.configs = entries
                .into_iter()
                .map(|e| config_result(e, include_synonyms, version))
                .collect();
        }
        Err((code, message)) => {
            result.error_code = code.0;
            result.error_message = Some(str_bytes(message));
        }
    }
    result
}

type Described = Result<Vec<ConfigEntry>, (ErrorCode, String)>;

async fn topic_entries(ctx: &ShardContext, name: &str, keys: Option<&[String]>) -> Described {
    if !is_valid_topic_name(name) {
        return Err((
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("Topic name \"{name}\" is illegal"),
        ));
    }
    let snapshot = ctx.snapshot();
    // The cluster view: a broker with no replica of the topic answers too.
    let Some(topic) = snapshot.cluster_topic(name) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("Topic '{name}' does not exist."),
        ));
    };
    // ZooKeeper mode: UpdateMetadata carries no configs, and the hosted
    // view's are only for hosted topics, so read the store as Kafka's
    // `ZkConfigRepository` does; embedded mode's topics carry theirs.
    let stored = if snapshot.hosted_by_leader_and_isr {
        let Some(stored) = ctx
            .control_client()
            .stored_topic_configs(name.to_owned())
            .await
        else {
            return Err((
                ErrorCode::UNKNOWN_SERVER_ERROR,
                format!("The configs of topic '{name}' could not be read."),
            ));
        };
        stored
    } else {
        topic.configs.clone()
    };
    let defaults = ctx.config.topic_defaults(&snapshot.broker_configs);
    // Stored overrides a newer Kafka may have written and we cannot parse
    // show as defaults (controller::topic_configs::describe_configs does the same).
    let usable: BTreeMap<String, String> = stored
        .into_iter()
        .filter(|(k, v)| validate_one(k, v).is_ok())
        .collect();
    let config = TopicConfig::resolve(&usable, &defaults)
        .unwrap_or_else(|_| TopicConfig::from_broker_defaults(&defaults));
    Ok(config.describe(&usable, &defaults, keys))
}

fn broker_entries(ctx: &ShardContext, name: &str, keys: Option<&[String]>) -> Described {
    let me = ctx.config.broker_id.to_string();
    let dynamic = ctx.snapshot().broker_configs.clone();
    if name.is_empty() {
        return Ok(crate::config::dynamic::describe_default(&dynamic, keys));
    }
    if name != me {
        // Kafka (ConfigHelper): a broker resource for another broker.
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!("Unexpected broker id, expected {me} or empty string, but received {name}"),
        ));
    }
    Ok(ctx.config.describe_broker(&dynamic, keys))
}

fn config_result(
    e: ConfigEntry,
    include_synonyms: bool,
    version: i16,
) -> DescribeConfigsResourceResult {
    let mut c = DescribeConfigsResourceResult::default();
    c.name = str_bytes(e.name);
    c.value = e.value.map(str_bytes);
    c.read_only = e.read_only;
    c.config_source = e.source as i8;
    c.is_sensitive = e.is_sensitive;
    if include_synonyms {
        c.synonyms = e
            .synonyms
            .into_iter()
            .map(|s| {
                let mut out = DescribeConfigsSynonym::default();
                out.name = str_bytes(s.name);
                out.value = s.value.map(str_bytes);
                out.source = s.source as i8;
                out
            })
            .collect();
    }
    if version >= 3 {
        c.config_type = e.config_type as i8;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|v| {
            DescribeConfigsRequest::default()
                .with_resources(vec![
                    DescribeConfigsResource::default()
                        .with_resource_type(RESOURCE_TOPIC)
                        .with_resource_name(str_bytes("t"))
                        .with_configuration_keys(Some(vec![str_bytes("a"), str_bytes("bc")])),
                    DescribeConfigsResource::default()
                        .with_resource_type(RESOURCE_BROKER)
                        .with_configuration_keys(None),
                ])
                .with_include_synonyms(true)
                .with_include_documentation(v >= 3)
        });
    }

    schema_fuzz_test!(API, DescribeConfigsRequest);
}
