//! `[drv]` AlterUserScramCredentials (key 51), v0 (KIP-554): SCRAM
//! credentials created, replaced or deleted in `/config/users/<u>` with a
//! `/config/changes` notification, as Kafka 3.9's
//! `ZkAdminManager.alterUserScramCredentials` writes them (the client
//! sends the salted password; the broker stores
//! `salt=…,stored_key=…,server_key=…,iterations=…`), so every broker —
//! shardlog or Kafka — picks them up. `kafka-configs --entity-type users
//! --alter --add-config 'SCRAM-SHA-256=[password=…]'` sends it. In
//! ZooKeeper mode only the active controller alters (NOT_CONTROLLER for
//! every user elsewhere; the client retries on the controller).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::alter_user_scram_credentials_request::AlterUserScramCredentialsRequest;
use kafka_protocol::messages::alter_user_scram_credentials_response::{
    AlterUserScramCredentialsResponse, AlterUserScramCredentialsResult,
};
use kafka_protocol::messages::ApiKey;

use super::admin_common::str_bytes;
use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT8};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::control::control_shard::scram_credentials::{
    ScramAlteration, ScramCall, ScramReply,
};
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterUserScramCredentials, 0, 0);

/// AlterUserScramCredentialsRequest.json: deletions [name, mechanism],
/// upsertions [name, mechanism, iterations, salt, salted_password].
pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(&[
        Field::Structs(&[Field::Str, INT8]),
        Field::Structs(&[Field::Str, INT8, INT32, Field::Bytes, Field::Bytes]),
    ]),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let request: AlterUserScramCredentialsRequest = API.decode(req.body.clone(), version)?;
        let mut alterations: Vec<ScramAlteration> = request
            .deletions
            .iter()
            .map(|d| ScramAlteration {
                user: d.name.to_string(),
                mechanism: d.mechanism,
                upsert: None,
            })
            .collect();
        alterations.extend(request.upsertions.iter().map(|u| ScramAlteration {
            user: u.name.to_string(),
            mechanism: u.mechanism,
            upsert: Some((u.iterations, u.salt.to_vec(), u.salted_password.to_vec())),
        }));
        let users: Vec<String> = alterations.iter().map(|a| a.user.clone()).collect();
        // KafkaApis.handleAlterUserScramCredentialsRequest: ALTER on the
        // cluster, else every user's result is CLUSTER_AUTHORIZATION_FAILED.
        let results = if !Authz::new(&ctx, &req).cluster(Operation::Alter) {
            each_user(users, ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        } else {
            match ctx
                .control_client()
                .scram_credentials(ScramCall::Alter(alterations))
                .await
            {
                Ok(ScramReply::Altered(results)) => results,
                _ => each_user(users, ErrorCode::UNKNOWN_SERVER_ERROR),
            }
        };
        let response = AlterUserScramCredentialsResponse::default().with_results(
            results
                .into_iter()
                .map(|(user, code, message)| {
                    AlterUserScramCredentialsResult::default()
                        .with_user(str_bytes(user))
                        .with_error_code(code.0)
                        .with_error_message(message.map(str_bytes))
                })
                .collect(),
        );
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

/// One result per distinct user, all with `code`, in name order, as
/// `AlterUserScramCredentialsRequest.getErrorResponse` answers (a set of
/// the deleted and upserted names, sorted).
fn each_user(users: Vec<String>, code: ErrorCode) -> Vec<(String, ErrorCode, Option<String>)> {
    let seen: std::collections::BTreeSet<String> = users.into_iter().collect();
    seen.into_iter().map(|u| (u, code, None)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;
    use kafka_protocol::messages::alter_user_scram_credentials_request::{
        ScramCredentialDeletion, ScramCredentialUpsertion,
    };

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            AlterUserScramCredentialsRequest::default()
                .with_deletions(vec![ScramCredentialDeletion::default()
                    .with_name(str_bytes("bob"))
                    .with_mechanism(1)])
                .with_upsertions(vec![ScramCredentialUpsertion::default()
                    .with_name(str_bytes("alice"))
                    .with_mechanism(2)
                    .with_iterations(4096)
                    .with_salt(bytes::Bytes::from_static(b"salt"))
                    .with_salted_password(bytes::Bytes::from_static(b"pw"))])
        });
    }

    #[test]
    fn a_refusal_lists_each_user_once_in_name_order() {
        let users = ["zz", "bob", "alice", "bob"].map(String::from).to_vec();
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        let got: Vec<String> = each_user(users, code)
            .into_iter()
            .map(|(u, c, m)| {
                assert_eq!((c, m), (code, None));
                u
            })
            .collect();
        assert_eq!(got, ["alice", "bob", "zz"]);
    }

    schema_fuzz_test!(API, AlterUserScramCredentialsRequest);
}
