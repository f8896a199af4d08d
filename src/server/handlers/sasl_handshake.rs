//! `[drv]` SaslHandshake (key 17), v0–v1, on a connection that needs no
//! (more) authentication: Kafka's `KafkaApis.handleSaslHandshakeRequest`
//! answers ILLEGAL_SASL_STATE. Before authentication on a SASL listener the
//! request never gets here: `server::sasl_conn` runs it through
//! `sasl::authenticator`; nor does one that starts a re-authentication
//! (KIP-368: a session that expires, the previous one begun ≥ 1 s before,
//! `server::sasl_conn::SaslSession`).

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use kafka_protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use kafka_protocol::messages::ApiKey;

use super::{HandlerError, Request, Response};
use crate::protocol::decode::decode_body;
use crate::protocol::encode::encode;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(
    ApiKey::SaslHandshake,
    0,
    crate::sasl::authenticator::HANDSHAKE_MAX_VERSION,
);

pub fn handle(_ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let mut body = req.body;
        let _request: SaslHandshakeRequest = decode_body(&mut body, version)?;
        let response =
            SaslHandshakeResponse::default().with_error_code(ErrorCode::ILLEGAL_SASL_STATE.into());
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
