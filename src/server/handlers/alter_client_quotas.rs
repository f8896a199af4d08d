//! `[drv]` AlterClientQuotas (key 49), v0–v1 (KIP-546): set or remove
//! `producer_byte_rate`, `consumer_byte_rate` and `request_percentage` of a
//! user, a client id, or both (a null name is the default entity), as
//! `kafka-configs --alter --entity-type clients|users` and
//! `Admin.alterClientQuotas` ask (Kafka 3.9 `ZkAdminManager.alterClientQuotas`):
//! stored under `/config/users/…` / `/config/clients/…` with a
//! `/config/changes` notification, so every broker applies them; each
//! entry answers NONE or INVALID_REQUEST with Kafka's message.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::alter_client_quotas_request::AlterClientQuotasRequest;
use kafka_protocol::messages::alter_client_quotas_response::{
    AlterClientQuotasResponse, EntityData, EntryData,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::metadata::quotas::{AlterEntry, Refusal};
use crate::metadata::quotas::{QuotaCall, QuotaReply};
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, BOOL, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterClientQuotas, 0, 1);

/// AlterClientQuotasRequest.json: entries [entity [entity_type,
/// entity_name (nullable)], ops [key, value float64, remove]],
/// validate_only.
const SCHEMA: &[Field] = &[
    Field::Structs(&[
        Field::Structs(&[Field::Str, Field::Str]),
        Field::Structs(&[Field::Str, INT64, BOOL]),
    ]),
    BOOL,
];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 1,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request: AlterClientQuotasRequest = API.decode(req.body, version)?;
        let entries: Vec<AlterEntry> = request
            .entries
            .iter()
            .map(|e| {
                let entity = e
                    .entity
                    .iter()
                    .map(|c| {
                        (
                            c.entity_type.to_string(),
                            c.entity_name.as_ref().map(|n| n.to_string()),
                        )
                    })
                    .collect();
                let ops = e
                    .ops
                    .iter()
                    .map(|o| (o.key.to_string(), (!o.remove).then_some(o.value)))
                    .collect();
                (entity, ops)
            })
            .collect();
        let n = entries.len();
        // Kafka's handleAlterClientQuotasRequest: ALTER_CONFIGS on the
        // cluster, else every entry CLUSTER_AUTHORIZATION_FAILED.
        let results: Vec<Result<(), Refusal>> = if !authz.cluster(Operation::AlterConfigs) {
            vec![
                Err((
                    ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
                    "Cluster authorization failed.".into()
                ));
                n
            ]
        } else {
            match ctx
                .control_client()
                .client_quotas(QuotaCall::Alter {
                    entries,
                    validate_only: request.validate_only,
                })
                .await
            {
                Ok(QuotaReply::Altered(r)) if r.len() == n => r,
                _ => vec![Err((ErrorCode::UNKNOWN_SERVER_ERROR, String::new())); n],
            }
        };
        let response = AlterClientQuotasResponse::default().with_entries(
            request
                .entries
                .iter()
                .zip(results)
                .map(|(e, r)| {
                    let (code, message) = match r {
                        Ok(()) => (ErrorCode::NONE, None),
                        Err((c, m)) => (c, Some(str_bytes(m))),
                    };
                    EntryData::default()
                        .with_error_code(code.0)
                        .with_error_message(message)
                        .with_entity(
                            e.entity
                                .iter()
                                .map(|c| {
                                    EntityData::default()
                                        .with_entity_type(c.entity_type.clone())
                                        .with_entity_name(c.entity_name.clone())
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::alter_client_quotas_request::{
        EntityData as ReqEntity, EntryData as ReqEntry, OpData,
    };

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            AlterClientQuotasRequest::default()
                .with_entries(vec![ReqEntry::default()
                    .with_entity(vec![
                        ReqEntity::default()
                            .with_entity_type(str_bytes("client-id"))
                            .with_entity_name(Some(str_bytes("app"))),
                        ReqEntity::default().with_entity_type(str_bytes("user")),
                    ])
                    .with_ops(vec![OpData::default()
                        .with_key(str_bytes("producer_byte_rate"))
                        .with_value(5e6)
                        .with_remove(false)])])
                .with_validate_only(true)
        });
    }

    schema_fuzz_test!(API, AlterClientQuotasRequest);
}
