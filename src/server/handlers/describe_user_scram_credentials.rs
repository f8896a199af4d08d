//! `[drv]` DescribeUserScramCredentials (key 50), v0 (KIP-554): the SCRAM
//! mechanisms and iterations stored for each user, read from
//! `/config/users/<u>` by the control shard as Kafka 3.9's
//! `ZkAdminManager.describeUserScramCredentials` reads ZooKeeper (never the
//! salts or keys). A null or empty user list describes every user with a
//! credential; a named user without one is RESOURCE_NOT_FOUND.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResponse, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::scram_credentials::{ScramCall, ScramReply};
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeUserScramCredentials, 0, 0);

/// DescribeUserScramCredentialsRequest.json: users [name] (nullable).
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(&[Field::Structs(&[Field::Str])]),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: DescribeUserScramCredentialsRequest = API.decode(req.body.clone(), version)?;
        // KafkaApis.handleDescribeUserScramCredentialsRequest: DESCRIBE on
        // the cluster, else the whole request fails.
        if !Authz::new(&ctx, &req).cluster(Operation::Describe) {
            // DescribeUserScramCredentialsRequest.getErrorResponse (Kafka
            // 3.9): the error also in one result per named user, its name
            // left empty; no error message (null, as Kafka 3.9 answers).
            let denied = || {
                DescribeUserScramCredentialsResult::default()
                    .with_error_code(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0)
                    .with_error_message(None)
            };
            let response = DescribeUserScramCredentialsResponse::default()
                .with_error_code(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0)
                .with_error_message(None)
                .with_results(request.users.iter().flatten().map(|_| denied()).collect());
            let body = encode(&response, version).map_err(HandlerError::Encode)?;
            return Ok(Response::Body(vec![OutPart::Bytes(body)]));
        }
        let users = request
            .users
            .filter(|u| !u.is_empty())
            .map(|u| u.iter().map(|n| n.name.to_string()).collect());
        let response = match ctx
            .control_client()
            .scram_credentials(ScramCall::Describe(users))
            .await
        {
            Ok(ScramReply::Described(results)) => DescribeUserScramCredentialsResponse::default()
                .with_results(
                    results
                        .into_iter()
                        .map(|(user, code, message, infos)| {
                            DescribeUserScramCredentialsResult::default()
                                .with_user(str_bytes(user))
                                .with_error_code(code.0)
                                .with_error_message(message.map(str_bytes))
                                .with_credential_infos(
                                    infos
                                        .into_iter()
                                        .map(|(m, i)| {
                                            CredentialInfo::default()
                                                .with_mechanism(m)
                                                .with_iterations(i)
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                ),
            _ => DescribeUserScramCredentialsResponse::default()
                .with_error_code(ErrorCode::UNKNOWN_SERVER_ERROR.0),
        };
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                UserName::default().with_name(str_bytes("alice")),
            ]))
        });
    }

    schema_fuzz_test!(API, DescribeUserScramCredentialsRequest);
}
