//! `[io]` The broker's SASL login on its own connection to another
//! broker's SASL listener, as Kafka 3.9's `SaslClientAuthenticator` does
//! it (SECURITY.md §3.1, §8.1): ApiVersions v0, SaslHandshake v1 with
//! `sasl.mechanism.inter.broker.protocol`, then the mechanism's tokens in
//! SaslAuthenticate v1 requests. The tokens are `sasl::client`'s and, for
//! OAUTHBEARER, `sasl::oauth_login`'s with the listener's current token.
//! A re-authentication (KIP-368, when the other broker announced a
//! `session_lifetime_ms`) skips ApiVersions as `SaslClientAuthenticator`
//! does (`REAUTH_PROCESS_ORIG_APIVERSIONS_RESPONSE`).

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use kafka_protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use kafka_protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use kafka_protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use kafka_protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use ring::rand::SecureRandom;

use super::oauth_token::TokenStore;
use crate::config::sasl::{SaslClientSettings, SaslMechanism};
use crate::sasl::client::{plain_token, ScramClient};
use crate::sasl::oauth_login::initial_response;

/// The largest answer read during the login.
const MAX_RESPONSE: usize = 1 << 20;

fn refused(m: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, m.into())
}

fn invalid(m: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.into())
}

async fn call<S, Req>(
    s: &mut S,
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    req: &Req,
) -> io::Result<Bytes>
where
    S: AsyncRead + AsyncWrite + Unpin,
    Req: Encodable,
{
    let mut header = RequestHeader::default();
    header.request_api_key = key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str("shardlog-broker"));
    let mut body = BytesMut::new();
    header
        .encode(&mut body, key.request_header_version(version))
        .map_err(|e| invalid(e.to_string()))?;
    req.encode(&mut body, version)
        .map_err(|e| invalid(e.to_string()))?;
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&crate::protocol::frame::size_prefix(body.len()));
    frame.extend_from_slice(&body);
    s.write_all(&frame).await?;
    s.flush().await?;
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await?;
    let n =
        usize::try_from(i32::from_be_bytes(len)).map_err(|_| invalid("negative response size"))?;
    if n > MAX_RESPONSE {
        return Err(invalid(format!("a {n}-byte answer during the SASL login")));
    }
    let mut resp = vec![0u8; n];
    s.read_exact(&mut resp).await?;
    let mut resp = Bytes::from(resp);
    // Response header: the correlation id, then (v1) tagged fields.
    if resp.len() < 4 || resp.get_i32() != correlation_id {
        return Err(invalid(
            "an answer to another request during the SASL login",
        ));
    }
    if key.response_header_version(version) >= 1 {
        if resp.first().copied() != Some(0) {
            return Err(invalid("tagged fields in a SASL login answer"));
        }
        resp.advance(1);
    }
    Ok(resp)
}

async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    correlation_id: i32,
    token: Vec<u8>,
) -> io::Result<SaslAuthenticateResponse> {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let mut body = call(s, ApiKey::SaslAuthenticate, 1, correlation_id, &req).await?;
    let resp =
        SaslAuthenticateResponse::decode(&mut body, 1).map_err(|e| invalid(e.to_string()))?;
    if resp.error_code != 0 {
        return Err(refused(format!(
            "SASL authentication failed (error {}): {}",
            resp.error_code,
            resp.error_message.as_deref().unwrap_or("")
        )));
    }
    Ok(resp)
}

/// A fresh SCRAM client nonce (printable, no `,`; RFC 5802), from the
/// system's randomness. The load generator's login uses it too.
pub fn nonce() -> io::Result<String> {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut bytes = [0u8; 26];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| io::Error::other("no randomness for the SCRAM nonce"))?;
    Ok(bytes
        .iter()
        .map(|b| DIGITS[usize::from(*b) % 36] as char)
        .collect())
}

/// Log in on `s` with `login` (`token`: the listener's OAUTHBEARER
/// token); `reauth` skips ApiVersions. The session lifetime the other
/// broker announced (0: none); an error names its refusal.
pub async fn login<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    login: &SaslClientSettings,
    token: Option<&TokenStore>,
    reauth: bool,
) -> io::Result<i64> {
    if !reauth {
        call(s, ApiKey::ApiVersions, 0, 1, &ApiVersionsRequest::default()).await?;
    }
    let req = SaslHandshakeRequest::default()
        .with_mechanism(StrBytes::from_static_str(login.mechanism.name()));
    let mut body = call(s, ApiKey::SaslHandshake, 1, 2, &req).await?;
    let resp = SaslHandshakeResponse::decode(&mut body, 1).map_err(|e| invalid(e.to_string()))?;
    if resp.error_code != 0 {
        let enabled: Vec<String> = resp.mechanisms.iter().map(ToString::to_string).collect();
        return Err(refused(format!(
            "SASL mechanism {} refused (error {}); the broker enables {enabled:?}",
            login.mechanism.name(),
            resp.error_code
        )));
    }
    let last = match login.mechanism {
        SaslMechanism::Plain => {
            authenticate(s, 3, plain_token(&login.username, &login.password)).await?
        }
        SaslMechanism::OAuthBearer => {
            let store = token.ok_or_else(|| refused("no OAUTHBEARER token for this listener"))?;
            let current = store.current();
            let resp =
                authenticate(s, 3, initial_response(&current.value, &store.extensions)).await?;
            if !resp.auth_bytes.is_empty() {
                // RFC 7628: the server's error challenge is answered with
                // a single %x01, and the server then fails the exchange.
                let why = String::from_utf8_lossy(&resp.auth_bytes).into_owned();
                return match authenticate(s, 4, vec![1]).await {
                    Err(e) => Err(e),
                    Ok(_) => Err(refused(format!("the broker refused the token: {why}"))),
                };
            }
            resp
        }
        m => {
            let mut client = ScramClient::new(m, &login.username, &login.password, &nonce()?);
            let first = authenticate(s, 3, client.first()).await?;
            let fin = client.on_server_first(&first.auth_bytes).map_err(refused)?;
            let last = authenticate(s, 4, fin).await?;
            client.on_server_final(&last.auth_bytes).map_err(refused)?;
            last
        }
    };
    Ok(last.session_lifetime_ms)
}
