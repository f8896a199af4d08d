//! `[drv]` The SASL part of a connection on a SASL_PLAINTEXT or SASL_SSL
//! listener (after the TLS handshake on SASL_SSL): frames are read one at
//! a time, each at most `sasl.server.max.receive.size`, and fed to the
//! pure `sasl::authenticator::SaslAuthenticator`; its answers are written
//! back. ApiVersions goes to the broker's own handler. On success the
//! connection goes on with the authenticated principal (`connection::run`);
//! on failure the answer is held for `connection.failed.authentication.delay.ms`
//! and the connection closed (Kafka's `SocketServer` delayed close), with a
//! warning naming the peer and the reason (never a password). The whole
//! exchange is bounded by `connections.max.idle.ms`.

use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use ring::rand::SecureRandom;

use super::dispatch::{frame_response, route, Routing};
use super::handlers::{Request, Response};
use super::out::OutPart;
use super::transport::{ConnRead, ConnWrite};
use crate::config::sasl::{SaslMechanism, SaslSettings};
use crate::protocol::frame::take_frame;
use crate::sasl::authenticator::{AuthEnv, SaslAction, SaslAuthenticator};
use crate::shard::ShardContext;

const READ_CHUNK: usize = 16 * 1024;

/// Who is being authenticated, for log lines and ApiVersions.
pub struct SaslPeer<'a> {
    pub peer: &'a str,
    pub client_host: &'a Rc<str>,
    pub listener: &'a Rc<str>,
    /// The principal before authentication (`User:ANONYMOUS`).
    pub principal: &'a Rc<str>,
}

/// A fresh SCRAM server nonce: 26 base-36 characters from the operating
/// system's random source (Kafka: a 130-bit SecureRandom number in base 36).
fn server_nonce() -> Option<String> {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut bytes = [0u8; 26];
    ring::rand::SystemRandom::new().fill(&mut bytes).ok()?;
    Some(
        bytes
            .iter()
            .map(|b| DIGITS[usize::from(*b) % 36] as char)
            .collect(),
    )
}

/// Authenticate the client; `Some((principal, buffered bytes))` to go on
/// serving, `None` when the connection must close (the reason is logged).
pub async fn authenticate<R: ConnRead, W: ConnWrite>(
    ctx: &Rc<ShardContext>,
    who: &SaslPeer<'_>,
    settings: Arc<SaslSettings>,
    reader: &mut R,
    writer: &mut W,
) -> Option<(String, BytesMut)> {
    let idle_ms = ctx.config.connections_max_idle_ms;
    let exchange = async { Some(exchange(ctx, who, settings, reader, writer).await) };
    let limit = async {
        match u64::try_from(idle_ms) {
            Ok(ms) => glommio::timer::sleep(std::time::Duration::from_millis(ms)).await,
            Err(_) => std::future::pending::<()>().await,
        }
        tracing::warn!(peer = who.peer, listener = %who.listener, "closing connection: SASL authentication not completed within connections.max.idle.ms ({idle_ms} ms)");
        None
    };
    let stop = async {
        ctx.stopping.wait().await;
        None
    };
    futures_lite::future::or(exchange, futures_lite::future::or(limit, stop))
        .await
        .flatten()
}

async fn exchange<R: ConnRead, W: ConnWrite>(
    ctx: &Rc<ShardContext>,
    who: &SaslPeer<'_>,
    settings: Arc<SaslSettings>,
    reader: &mut R,
    writer: &mut W,
) -> Option<(String, BytesMut)> {
    let max = usize::try_from(settings.max_receive_size).unwrap_or(0);
    let mut auth = SaslAuthenticator::new(settings);
    let mut buf = BytesMut::new();
    loop {
        let frame = match take_frame(&mut buf, max) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                match reader.fill(&mut buf, READ_CHUNK).await {
                    Ok(n) if n > 0 => {}
                    Ok(_) => return None, // the client left
                    Err(e) => {
                        tracing::debug!(peer = who.peer, error = %e, "read failed during SASL authentication");
                        return None;
                    }
                }
                continue;
            }
            Err(e) => {
                // SaslServerAuthenticator: "Failing SASL authentication due
                // to invalid receive size" (no response).
                tracing::warn!(peer = who.peer, listener = %who.listener, error = %e, "closing connection: invalid receive size before SASL authentication (sasl.server.max.receive.size)");
                return None;
            }
        };
        let nonce = server_nonce()?;
        let snapshot = ctx.snapshot();
        let lookup =
            |user: &str, m: SaslMechanism| snapshot.scram_credentials.get(user, m).cloned();
        let env = AuthEnv {
            scram: &lookup,
            server_nonce: &nonce,
        };
        match auth.on_frame(frame, &env) {
            SaslAction::ApiVersions { header, body } => {
                let parts = api_versions(ctx, who, header, body).await?;
                write(writer, ctx, parts).await?;
            }
            SaslAction::Respond(bytes) => write(writer, ctx, vec![OutPart::Bytes(bytes)]).await?,
            SaslAction::Complete {
                respond,
                principal,
                mechanism,
            } => {
                write(writer, ctx, vec![OutPart::Bytes(respond)]).await?;
                tracing::debug!(peer = who.peer, listener = %who.listener, %principal, mechanism = mechanism.name(), "SASL authentication succeeded");
                return Some((principal, buf));
            }
            SaslAction::Fail { respond, reason } => {
                tracing::warn!(peer = who.peer, listener = %who.listener, %reason, "closing connection: SASL authentication failed");
                let delay = u64::try_from(ctx.config.connection_failed_authentication_delay_ms)
                    .unwrap_or(0);
                if delay > 0 {
                    glommio::timer::sleep(std::time::Duration::from_millis(delay)).await;
                }
                if let Some(bytes) = respond {
                    let _ = write(writer, ctx, vec![OutPart::Bytes(bytes)]).await;
                }
                return None;
            }
            SaslAction::Close(reason) => {
                tracing::warn!(peer = who.peer, listener = %who.listener, %reason, "closing connection before SASL authentication");
                return None;
            }
        }
    }
}

async fn write<W: ConnWrite>(
    writer: &mut W,
    ctx: &ShardContext,
    parts: Vec<OutPart>,
) -> Option<()> {
    match writer.write_parts(parts, &ctx.stats.zerocopy).await {
        Ok(()) => Some(()),
        Err(e) => {
            tracing::debug!(error = %e, "write failed during SASL authentication");
            None
        }
    }
}

/// ApiVersions before authentication: the broker's own answer.
async fn api_versions(
    ctx: &Rc<ShardContext>,
    who: &SaslPeer<'_>,
    header: crate::protocol::header::RequestHeader,
    body: Bytes,
) -> Option<Vec<OutPart>> {
    let Routing::Run(handler) = route(&header) else {
        return None;
    };
    let request = Request {
        header: header.clone(),
        body,
        client_host: who.client_host.clone(),
        principal: who.principal.clone(),
        listener: who.listener.clone(),
        produce_turn: None,
        decisions: Rc::default(),
    };
    match handler(ctx.clone(), request).await {
        Ok(Response::Body(parts)) => Some(frame_response(&header, parts)),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(peer = who.peer, error = %e, "closing connection: bad ApiVersions before SASL authentication");
            None
        }
    }
}
