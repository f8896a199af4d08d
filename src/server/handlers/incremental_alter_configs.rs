//! `[drv]` IncrementalAlterConfigs (key 44), v0–v1 (every version the codec
//! knows; KIP-339): SET / DELETE / APPEND / SUBTRACT on topic and broker
//! configs.
//!
//! Topic resources go to the control shard (validation failures are
//! INVALID_CONFIG with Kafka's message); the answer follows publication of
//! the new overrides to every data shard. Broker resources (this broker's
//! id, or an empty name for the cluster-wide `<default>`) change
//! `/config/brokers/…` (`config::dynamic` says which keys are dynamic; a
//! static key is INVALID_REQUEST "Cannot update these configs
//! dynamically", as Kafka's ZkAdminManager.incrementalAlterConfigs answers).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::incremental_alter_configs_request::IncrementalAlterConfigsRequest;
use kafka_protocol::messages::incremental_alter_configs_response::{
    AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::{failure, str_bytes};
use super::authz::Authz;
use super::config_resources::config_access_denied;
use super::config_resources::{alter_results, classify, sort_resources};
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::controller::admin_requests::{AdminRequest, BrokerConfigChange};
use crate::controller::topic_admin::{AlterConfigOp, AlterConfigOpType};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::IncrementalAlterConfigs, 0, 1);

const FIRST_FLEXIBLE: i16 = 1;

/// IncrementalAlterConfigsRequest.json: resources [type, name, configs
/// [name, op, value]], validate_only.
const SCHEMA: &[Field] = &[
    Field::Structs(&[
        INT8,
        Field::Str,
        Field::Structs(&[Field::Str, INT8, Field::Str]),
    ]),
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
        let request: IncrementalAlterConfigsRequest = API.decode(req.body, version)?;
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
                    || ops(r),
                    || ops(r).map(BrokerConfigChange::Incremental),
                )
            },
        );
        let validate_only = request.validate_only;
        let results = alter_results(&ctx, outcomes, pending, validate_only, |topics| {
            AdminRequest::IncrementalAlterTopicConfigs {
                topics,
                validate_only,
            }
        })
        .await;
        let mut response = IncrementalAlterConfigsResponse::default();
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

fn ops(
    r: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
) -> Result<Vec<AlterConfigOp>, crate::controller::admin_requests::AdminFailure> {
    r.configs
        .iter()
        .map(|c| {
            let op = AlterConfigOpType::from_i8(c.config_operation).ok_or_else(|| {
                failure(
                    ErrorCode::INVALID_REQUEST,
                    &format!("Unknown alter config operation {}", c.config_operation),
                )
            })?;
            Ok(AlterConfigOp {
                name: c.name.to_string(),
                op,
                value: c.value.as_ref().map(|v| v.to_string()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            IncrementalAlterConfigsRequest::default()
                .with_resources(vec![AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(str_bytes("t"))
                    .with_configs(vec![
                        AlterableConfig::default()
                            .with_name(str_bytes("retention.ms"))
                            .with_config_operation(0)
                            .with_value(Some(str_bytes("5"))),
                        AlterableConfig::default()
                            .with_name(str_bytes("x"))
                            .with_config_operation(1),
                    ])])
                .with_validate_only(true)
        });
    }

    schema_fuzz_test!(API, IncrementalAlterConfigsRequest);
}
