//! `[drv]` SaslAuthenticate (key 36), v0–v2, on a connection that needs
//! no (more) authentication: Kafka's
//! `KafkaApis.handleSaslAuthenticateRequest` answers ILLEGAL_SASL_STATE
//! "SaslAuthenticate request received after successful authentication".
//! Before authentication on a SASL listener the request never gets here:
//! `server::sasl_conn` runs it through `sasl::authenticator`.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use kafka_protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

use super::{HandlerError, Request, Response};
use crate::protocol::decode::decode_body;
use crate::protocol::encode::encode;
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;

pub const VERSIONS: ApiRange = ApiRange::new(
    ApiKey::SaslAuthenticate,
    0,
    crate::sasl::authenticator::AUTHENTICATE_MAX_VERSION,
);

pub fn handle(_ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let mut body = req.body;
        let _request: SaslAuthenticateRequest = decode_body(&mut body, version)?;
        let response = SaslAuthenticateResponse::default()
            .with_error_code(ErrorCode::ILLEGAL_SASL_STATE.into())
            .with_error_message(Some(StrBytes::from_static_str(
                "SaslAuthenticate request received after successful authentication",
            )));
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}
