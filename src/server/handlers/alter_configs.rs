//! `[drv]` AlterConfigs (key 33), v0–v2 (every version the codec knows):
//! the legacy API that replaces a resource's whole override set (what
//! kafka-python's `alter_configs` sends).
//!
//! Topic resources go to the control shard (INVALID_CONFIG with Kafka's
//! message when a value fails validation); a broker resource (this
//! broker's id, or empty for `<default>`) replaces that entity's dynamic
//! config (`shard::control::broker_configs`); a static key there is INVALID_REQUEST,
//! as Kafka answers a change to a config it cannot update dynamically
//! (ZkAdminManager.alterConfigs maps the ConfigException to
//! InvalidRequestException).

use std::collections::BTreeMap;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::alter_configs_request::AlterConfigsRequest;
use kafka_protocol::messages::alter_configs_response::{
    AlterConfigsResourceResponse, AlterConfigsResponse,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::{failure, str_bytes};
use super::authz::Authz;
use super::config_resources::config_access_denied;
use super::config_resources::{alter_results, classify, sort_resources};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::admin_requests::{AdminFailure, AdminRequest, BrokerConfigChange};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterConfigs, 0, 2);

const FIRST_FLEXIBLE: i16 = 2;

/// AlterConfigsRequest.json: resources [type, name, configs [name,
/// value]], validate_only.
const SCHEMA: &[Field] = &[
    Field::Structs(&[INT8, Field::Str, Field::Structs(&[Field::Str, Field::Str])]),
    BOOL,
];

/// What the shared admin preamble needs to decode this API.
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: FIRST_FLEXIBLE,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: AlterConfigsRequest = API.decode(req.body, version)?;
        let (outcomes, pending) = sort_resources(
            &request.resources,
            |r| (r.resource_type, r.resource_name.to_string()),
            |r| {
                // Kafka: ALTER_CONFIGS on the topic, or on the cluster for
                // a broker (logger) resource.
                if let Some(denied) = config_access_denied(
                    &authz,
                    Operation::AlterConfigs,
                    r.resource_type,
                    r.resource_name.as_str(),
                ) {
                    return Err(denied);
                }
                classify(
                    r.resource_type,
                    || configs(r),
                    || configs(r).map(BrokerConfigChange::Replace),
                )
            },
        );
        let validate_only = request.validate_only;
        let results = alter_results(&ctx, outcomes, pending, validate_only, |topics| {
            AdminRequest::AlterTopicConfigs {
                topics,
                validate_only,
            }
        })
        .await;
        let mut response = AlterConfigsResponse::default();
        response.responses = request
            .resources
            .iter()
            .zip(results)
            .map(|(r, e)| {
                let mut out = AlterConfigsResourceResponse::default();
                out.resource_type = r.resource_type;
                out.resource_name = r.resource_name.clone();
                if let Some(e) = e {
                    out.error_code = e.code.0;
                    out.error_message = Some(str_bytes(e.message));
                }
                out
            })
            .collect();
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

fn configs(
    r: &kafka_protocol::messages::alter_configs_request::AlterConfigsResource,
) -> Result<BTreeMap<String, String>, AdminFailure> {
    let mut out = BTreeMap::new();
    for c in &r.configs {
        let Some(value) = &c.value else {
            // Kafka: null values are not supported in AlterConfigs.
            return Err(failure(
                ErrorCode::INVALID_REQUEST,
                &format!("Null value not supported for : {}", c.name),
            ));
        };
        out.insert(c.name.to_string(), value.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            AlterConfigsRequest::default()
                .with_resources(vec![AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(str_bytes("t"))
                    .with_configs(vec![
                        AlterableConfig::default()
                            .with_name(str_bytes("retention.ms"))
                            .with_value(Some(str_bytes("5"))),
                        AlterableConfig::default().with_name(str_bytes("x")),
                    ])])
                .with_validate_only(true)
        });
    }

    schema_fuzz_test!(API, AlterConfigsRequest);
}
