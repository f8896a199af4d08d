//! `[drv]` DescribeClientQuotas (key 48), v0–v1 (KIP-546): the stored
//! client quotas matching a filter, as `kafka-configs --describe
//! --entity-type clients|users` and `Admin.describeClientQuotas` ask (Kafka
//! 3.9 `ZkAdminManager.describeClientQuotas`). Match types: 0 exact name,
//! 1 the default entity, 2 any name; `strict` leaves out entities with
//! other entity types. A filter Kafka refuses is INVALID_REQUEST for the
//! whole request, with no entries.

use std::collections::BTreeMap;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_client_quotas_request::DescribeClientQuotasRequest;
use kafka_protocol::messages::describe_client_quotas_response::{
    DescribeClientQuotasResponse, EntityData, EntryData, ValueData,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::quotas::{DescribeAnswer, QuotaCall, QuotaReply};
use crate::metadata::quotas::{Match, QuotaEntity, CLIENT_ID, USER};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeClientQuotas, 0, 1);

/// DescribeClientQuotasRequest.json: components [entity_type, match_type,
/// match (nullable)], strict.
const SCHEMA: &[Field] = &[Field::Structs(&[Field::Str, INT8, Field::Str]), BOOL];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 1,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: DescribeClientQuotasRequest = API.decode(req.body, version)?;
        let mut components = Vec::with_capacity(request.components.len());
        let mut refused = None;
        for c in &request.components {
            let m = match (c.match_type, &c._match) {
                (0, Some(name)) => Match::Exact(name.to_string()),
                (1, _) => Match::Default,
                (2, _) => Match::Any,
                (t, _) => {
                    refused = Some((
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "Unexpected match type {t} or missing match for {}",
                            c.entity_type.as_str()
                        ),
                    ));
                    break;
                }
            };
            components.push((c.entity_type.to_string(), m));
        }
        // Kafka's handleDescribeClientQuotasRequest: DESCRIBE_CONFIGS on
        // the cluster first; `getErrorResponse` of the error's own
        // exception, whose generic message `ApiError.fromThrowable` drops
        // (null).
        if !authz.cluster(Operation::DescribeConfigs) {
            refused = Some((ErrorCode::CLUSTER_AUTHORIZATION_FAILED, String::new()));
        }
        let answer: DescribeAnswer = match refused {
            Some(r) => Err(r),
            None => match ctx
                .control_client()
                .client_quotas(QuotaCall::Describe {
                    components,
                    strict: request.strict,
                })
                .await
            {
                Ok(QuotaReply::Described(a)) => a,
                _ => Err((ErrorCode::UNKNOWN_SERVER_ERROR, String::new())),
            },
        };
        let body = encode_response(&answer, version)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

fn entity_data(e: &QuotaEntity) -> Vec<EntityData> {
    let mut out = Vec::new();
    for (t, side) in [(USER, &e.user), (CLIENT_ID, &e.client_id)] {
        if let Some(name) = side {
            out.push(
                EntityData::default()
                    .with_entity_type(str_bytes(t))
                    .with_entity_name(name.clone().map(str_bytes)),
            );
        }
    }
    out
}

fn encode_response(answer: &DescribeAnswer, version: i16) -> Result<bytes::Bytes, HandlerError> {
    let response = match answer {
        Err((code, message)) => DescribeClientQuotasResponse::default()
            .with_error_code(code.0)
            .with_error_message((!message.is_empty()).then(|| str_bytes(message.clone())))
            .with_entries(None),
        Ok(entries) => DescribeClientQuotasResponse::default().with_entries(Some(
            entries
                .iter()
                .map(|(e, values): &(QuotaEntity, BTreeMap<String, f64>)| {
                    EntryData::default()
                        .with_entity(entity_data(e))
                        .with_values(
                            values
                                .iter()
                                .map(|(k, v)| {
                                    ValueData::default()
                                        .with_key(str_bytes(k.clone()))
                                        .with_value(*v)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )),
    };
    encode(&response, version).map_err(HandlerError::Encode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    use kafka_protocol::protocol::Decodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            DescribeClientQuotasRequest::default()
                .with_components(vec![
                    ComponentData::default()
                        .with_entity_type(str_bytes("client-id"))
                        .with_match_type(0)
                        .with_match(Some(str_bytes("app"))),
                    ComponentData::default()
                        .with_entity_type(str_bytes("user"))
                        .with_match_type(2),
                ])
                .with_strict(true)
        });
    }

    #[test]
    fn entries_carry_entities_with_null_default_names_and_values() {
        let e = QuotaEntity {
            user: Some(None),
            client_id: Some(Some("app".into())),
        };
        let answer: DescribeAnswer = Ok(vec![(
            e,
            BTreeMap::from([("producer_byte_rate".into(), 5e6)]),
        )]);
        for v in 0..=1 {
            let mut body = encode_response(&answer, v).unwrap();
            let r = DescribeClientQuotasResponse::decode(&mut body, v).unwrap();
            let entry = &r.entries.as_ref().unwrap()[0];
            assert_eq!(entry.entity[0].entity_type.as_str(), "user");
            assert!(entry.entity[0].entity_name.is_none());
            assert_eq!(
                entry.entity[1].entity_name.as_ref().unwrap().as_str(),
                "app"
            );
            assert_eq!(entry.values[0].value, 5e6);
        }
        let mut body = encode_response(&Err((ErrorCode::INVALID_REQUEST, "x".into())), 1).unwrap();
        let r = DescribeClientQuotasResponse::decode(&mut body, 1).unwrap();
        assert_eq!(r.error_code, ErrorCode::INVALID_REQUEST.0);
        assert!(r.entries.is_none());
    }

    schema_fuzz_test!(API, DescribeClientQuotasRequest);
}
