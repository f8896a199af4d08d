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
//!
//! After authentication a session may expire (KIP-368); the connection
//! (`connection::on_frame`) then runs the client's re-authentication
//! through [`reauth_frame`], one frame at a time between its requests.
//! A KIP-768 listener's JWKS is kept by [`jwks_fetch`].

pub mod jwks_fetch;

use std::rc::Rc;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use ring::rand::SecureRandom;

use super::dispatch::{frame_response, route, Routing};
use super::handlers::{Request, Response};
use super::out::OutPart;
use super::transport::{ConnRead, ConnWrite};
use crate::config::sasl::oauth::OAuthValidator;
use crate::config::sasl::{SaslMechanism, SaslSettings};
use crate::config::ServerConfig;
use crate::protocol::frame::take_frame;
use crate::sasl::authenticator::{AuthEnv, SaslAction, SaslAuthenticator};
use crate::shard::ShardContext;

const READ_CHUNK: usize = 16 * 1024;

/// A SASL listener as its connections see it: the settings and, for
/// KIP-768's validator, the JWKS kept fresh by [`jwks_fetch`].
#[derive(Debug)]
pub struct SaslListener {
    pub settings: Arc<SaslSettings>,
    pub jwks: Option<Arc<jwks_fetch::JwksStore>>,
}

impl SaslListener {
    /// Resolve `listener`'s SASL settings and load its JWKS (an error
    /// stops the start naming the key).
    pub fn start(config: &ServerConfig, listener: &str) -> anyhow::Result<SaslListener> {
        let settings = crate::config::sasl::for_listener(config, listener)?;
        let jwks = match &settings.oauth {
            Some(OAuthValidator::Jwks(opts)) => {
                Some(jwks_fetch::start(listener, opts).map_err(anyhow::Error::msg)?)
            }
            Some(OAuthValidator::Unsecured(_)) | None => None,
        };
        Ok(SaslListener {
            settings: Arc::new(settings),
            jwks,
        })
    }
}

/// A client that authenticated.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// `User:<authorization id>`.
    pub principal: String,
    pub mechanism: SaslMechanism,
    /// KIP-368: the session ends this long after now (`None`: never).
    pub session_lifetime_ms: Option<i64>,
}

/// Who is being authenticated, for log lines and ApiVersions.
pub struct SaslPeer<'a> {
    pub peer: &'a str,
    pub client_host: &'a Rc<str>,
    pub listener: &'a Rc<str>,
    /// The principal before authentication (`User:ANONYMOUS`).
    pub principal: &'a Rc<str>,
}

/// Run one frame of a re-authentication through `auth` (the driver's
/// part of [`SaslAuthenticator::on_frame`]: credentials, nonce, time, keys).
pub fn reauth_frame(
    ctx: &ShardContext,
    listener: &SaslListener,
    auth: &mut SaslAuthenticator,
    frame: Bytes,
) -> SaslAction {
    let Some(nonce) = server_nonce() else {
        return SaslAction::Close("no randomness for a SCRAM nonce".into());
    };
    let snapshot = ctx.snapshot();
    let lookup = |user: &str, m: SaslMechanism| snapshot.scram_credentials.get(user, m).cloned();
    let keys = listener.jwks.as_ref().map(|j| j.current());
    let env = AuthEnv {
        scram: &lookup,
        server_nonce: &nonce,
        now_ms: ctx.clock.wall_ms(),
        jwks: keys.as_deref(),
    };
    auth.on_frame(frame, &env)
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
    listener: Arc<SaslListener>,
    reader: &mut R,
    writer: &mut W,
) -> Option<(Authenticated, BytesMut)> {
    let idle_ms = ctx.config.connections_max_idle_ms;
    let exchange = async { Some(exchange(ctx, who, &listener, reader, writer).await) };
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
    listener: &SaslListener,
    reader: &mut R,
    writer: &mut W,
) -> Option<(Authenticated, BytesMut)> {
    let max = usize::try_from(listener.settings.max_receive_size).unwrap_or(0);
    let mut auth = SaslAuthenticator::new(listener.settings.clone());
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
        match reauth_frame(ctx, listener, &mut auth, frame) {
            SaslAction::ApiVersions { header, body } => {
                let parts = api_versions(ctx, who, header, body).await?;
                write(writer, ctx, parts).await?;
            }
            SaslAction::Respond(bytes) => write(writer, ctx, vec![OutPart::Bytes(bytes)]).await?,
            SaslAction::Complete {
                respond,
                principal,
                mechanism,
                session_lifetime_ms,
            } => {
                write(writer, ctx, vec![OutPart::Bytes(respond)]).await?;
                // `Selector`: `successful-authentication` once the channel
                // is ready (its first authentication, not a KIP-368 one).
                ctx.stats
                    .metrics
                    .socket(who.listener)
                    .on_authentication(true);
                tracing::debug!(peer = who.peer, listener = %who.listener, %principal, mechanism = mechanism.name(), ?session_lifetime_ms, "SASL authentication succeeded");
                let done = Authenticated {
                    principal,
                    mechanism,
                    session_lifetime_ms,
                };
                return Some((done, buf));
            }
            SaslAction::Fail { respond, reason } => {
                tracing::warn!(peer = who.peer, listener = %who.listener, %reason, "closing connection: SASL authentication failed");
                // `Selector`: `failed-authentication` (an
                // `AuthenticationException` from `SaslServerAuthenticator`).
                ctx.stats
                    .metrics
                    .socket(who.listener)
                    .on_authentication(false);
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

/// `KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS`: a connection
/// re-authenticates at most once a second.
const MIN_REAUTH_INTERVAL_NS: u64 = 1_000_000_000;

/// An authenticated connection's SASL session (KIP-368), as Kafka's
/// `clients/.../network/KafkaChannel.java` (`maybeBeginServerReauthentication`,
/// `serverAuthenticationSessionExpired`) and `core/.../network/SocketServer.scala`
/// (`Processor.processCompletedReceives`: "Disconnecting expired channel")
/// keep it.
#[derive(Debug)]
pub struct SaslSession {
    listener: Arc<SaslListener>,
    principal: String,
    mechanism: SaslMechanism,
    /// Monotonic end of the session (`None`: it never ends).
    expires_ns: Option<u64>,
    /// When the last re-authentication began (0: never).
    last_reauth_start_ns: u64,
    /// A re-authentication in progress.
    reauth: Option<SaslAuthenticator>,
    /// Re-authentications completed on this connection.
    reauthentications: u64,
}

/// What the connection does with a frame.
#[derive(Debug)]
pub enum SessionStep {
    /// A request to serve as usual.
    Serve,
    /// The frame belonged to a re-authentication: send this framed answer.
    Answer(Bytes),
    /// Re-authentication failed: send the answer (if any), then close.
    Fail(Option<Bytes>, String),
    /// Close without an answer (a bad request during re-authentication,
    /// or any request but SaslHandshake after the session expired).
    Close(String),
}

fn expiry(now_ns: u64, lifetime_ms: Option<i64>) -> Option<u64> {
    lifetime_ms
        .map(|ms| now_ns.saturating_add(u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)))
}

impl SaslSession {
    /// The session of a connection that just authenticated.
    pub fn new(listener: Arc<SaslListener>, done: &Authenticated, now_ns: u64) -> Self {
        Self {
            listener,
            principal: done.principal.clone(),
            mechanism: done.mechanism,
            expires_ns: expiry(now_ns, done.session_lifetime_ms),
            last_reauth_start_ns: 0,
            reauth: None,
            reauthentications: 0,
        }
    }

    /// The next frame of the connection (`api_key`: its raw API key).
    pub fn on_frame(
        &mut self,
        ctx: &ShardContext,
        who: &str,
        api_key: i16,
        frame: &Bytes,
    ) -> SessionStep {
        let now_ns = ctx.clock.mono_ns();
        if let Some(mut auth) = self.reauth.take() {
            let action = reauth_frame(ctx, &self.listener, &mut auth, frame.clone());
            return self.on_reauth_action(who, action, auth, now_ns);
        }
        let handshake = api_key == kafka_protocol::messages::ApiKey::SaslHandshake as i16;
        let may_begin = self.expires_ns.is_some()
            && (self.last_reauth_start_ns == 0
                || now_ns.saturating_sub(self.last_reauth_start_ns) >= MIN_REAUTH_INTERVAL_NS);
        if handshake && may_begin {
            self.last_reauth_start_ns = now_ns;
            tracing::debug!(peer = who, principal = %self.principal, "beginning SASL re-authentication");
            let mut auth = SaslAuthenticator::reauthenticate(
                self.listener.settings.clone(),
                self.mechanism,
                &self.principal,
            );
            let action = reauth_frame(ctx, &self.listener, &mut auth, frame.clone());
            return self.on_reauth_action(who, action, auth, now_ns);
        }
        match self.expires_ns {
            Some(end) if now_ns > end => SessionStep::Close(format!(
                "Disconnecting expired channel: the SASL session of {} ended and the client \
                 did not re-authenticate (connections.max.reauth.ms / token expiry, KIP-368)",
                self.principal
            )),
            // A SaslHandshake that starts no re-authentication goes to its
            // handler (ILLEGAL_SASL_STATE), as in KafkaApis.
            _ => SessionStep::Serve,
        }
    }

    fn on_reauth_action(
        &mut self,
        who: &str,
        action: SaslAction,
        auth: SaslAuthenticator,
        now_ns: u64,
    ) -> SessionStep {
        match action {
            SaslAction::Respond(bytes) => {
                self.reauth = Some(auth);
                SessionStep::Answer(bytes)
            }
            SaslAction::Complete {
                respond,
                session_lifetime_ms,
                ..
            } => {
                self.expires_ns = expiry(now_ns, session_lifetime_ms);
                self.reauthentications += 1;
                tracing::info!(peer = who, listener = %self.listener.settings.listener, principal = %self.principal, mechanism = self.mechanism.name(), ?session_lifetime_ms, reauthentications = self.reauthentications, "SASL re-authentication succeeded");
                SessionStep::Answer(respond)
            }
            SaslAction::Fail { respond, reason } => SessionStep::Fail(
                respond,
                format!(
                    "SASL re-authentication of {} failed: {reason}",
                    self.principal
                ),
            ),
            SaslAction::Close(reason) => SessionStep::Close(format!(
                "during SASL re-authentication of {}: {reason}",
                self.principal
            )),
            // No ApiVersions during re-authentication: the machine starts
            // past that state.
            SaslAction::ApiVersions { .. } => {
                SessionStep::Close("ApiVersions during SASL re-authentication".into())
            }
        }
    }
}
