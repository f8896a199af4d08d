//! `[pure]` One connection's SASL server state machine, as Kafka 3.9's
//! `clients/.../security/authenticator/SaslServerAuthenticator.java` runs
//! it (SECURITY.md §3.1): before authentication only ApiVersions (once)
//! and SaslHandshake v0–1 are served; after a good handshake, the tokens
//! travel in SaslAuthenticate v0–2 requests (handshake v1) or as raw
//! size-prefixed frames (handshake v0). An unsupported mechanism answers
//! UNSUPPORTED_SASL_MECHANISM with the enabled list, a failed exchange
//! SASL_AUTHENTICATION_FAILED; both then close (after
//! `connection.failed.authentication.delay.ms`, the driver's part). Any
//! other request before authentication closes at once.
//!
//! Re-authentication (KIP-368): on an authenticated connection whose
//! session expires, the client's SaslHandshake starts a new machine
//! ([`SaslAuthenticator::reauthenticate`], Kafka's REAUTH_PROCESS_HANDSHAKE):
//! no ApiVersions, the same mechanism (else REAUTH_BAD_MECHANISM: the next
//! token fails with Kafka's message) and the same principal ("Cannot
//! change principals during re-authentication ..."). A completed exchange
//! carries the session lifetime `SaslServerAuthenticator.ReauthInfo
//! .calcCompletionTimesAndReturnSessionLifetimeMs` computes.
//!
//! Input: the frames the client sent (size prefix removed); output:
//! [`SaslAction`]s with the framed responses. ApiVersions is answered by
//! the broker's own handler (the driver), so its answer is the one every
//! connection gets.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use kafka_protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use kafka_protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use kafka_protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::StrBytes;

use super::oauthbearer::jwks::JwkSet;
use super::oauthbearer::OAuthServer;
use super::scram::{ScramCredential, ScramServer};
use super::{plain, MechStep};
use crate::config::sasl::{SaslMechanism, SaslSettings};
use crate::protocol::decode::decode_body;
use crate::protocol::encode::encode;
use crate::protocol::frame::size_prefix;
use crate::protocol::header::{
    decode_request_header, response_head, response_header_version, RequestHeader,
};
use crate::protocol::ErrorCode;

/// SaslHandshake versions served (Kafka 3.9: 0–1).
pub const HANDSHAKE_MAX_VERSION: i16 = 1;
/// SaslAuthenticate versions served (Kafka 3.9: 0–2).
pub const AUTHENTICATE_MAX_VERSION: i16 = 2;

/// What the driver does next.
#[derive(Debug)]
pub enum SaslAction {
    /// Answer this ApiVersions request as any connection does, then read on.
    ApiVersions { header: RequestHeader, body: Bytes },
    /// Send this framed response, then read on.
    Respond(Bytes),
    /// Send this framed response; the connection is authenticated as
    /// `principal` (`User:<authorization id>`) and serves every API.
    Complete {
        respond: Bytes,
        principal: String,
        mechanism: SaslMechanism,
        /// KIP-368: the session ends this many ms after completion
        /// (`None`: no limit, neither `connections.max.reauth.ms` nor a
        /// credential that expires).
        session_lifetime_ms: Option<i64>,
    },
    /// Authentication failed: after the failure delay send `respond` (if
    /// any), then close. `reason` is for the broker's warning.
    Fail {
        respond: Option<Bytes>,
        reason: String,
    },
    /// Close at once without an answer (Kafka's `IllegalSaslStateException`
    /// and malformed requests).
    Close(String),
}

/// What the driver supplies per frame: the stored SCRAM credentials and
/// fresh randomness.
pub struct AuthEnv<'a> {
    /// The stored credential of (user, mechanism).
    pub scram: &'a dyn Fn(&str, SaslMechanism) -> Option<ScramCredential>,
    /// A fresh server nonce for SCRAM (printable, no `,`).
    pub server_nonce: &'a str,
    /// Wall-clock time (epoch ms) for token expiry and session lifetimes.
    pub now_ms: i64,
    /// The JWKS of the listener's KIP-768 validator (`None`: not loaded).
    pub jwks: Option<&'a JwkSet>,
}

#[derive(Debug)]
enum MechServer {
    Plain,
    Scram(ScramServer),
    OAuth(OAuthServer),
}

#[derive(Debug)]
enum AuthState {
    /// Kafka's INITIAL_REQUEST / HANDSHAKE_OR_VERSIONS_REQUEST.
    HandshakeOrVersions,
    /// HANDSHAKE_REQUEST: ApiVersions was answered.
    Handshake,
    /// AUTHENTICATE.
    Authenticate {
        mechanism: SaslMechanism,
        handshake_version: i16,
        server: MechServer,
    },
    /// REAUTH_BAD_MECHANISM: the next token fails with this message.
    BadMechanism(String),
    /// COMPLETE or FAILED: nothing more is read through this machine.
    Done,
}

/// What a re-authentication must keep (`ReauthInfo`).
#[derive(Debug, Clone)]
struct Previous {
    mechanism: SaslMechanism,
    principal: String,
}

/// One connection's authentication.
#[derive(Debug)]
pub struct SaslAuthenticator {
    settings: Arc<SaslSettings>,
    state: AuthState,
    /// Set when this machine re-authenticates a connection.
    previous: Option<Previous>,
}

/// A response frame: size prefix, response header, body.
fn framed(correlation_id: i32, api_key: ApiKey, version: i16, body: &Bytes) -> Bytes {
    let head = response_head(
        correlation_id,
        response_header_version(api_key, version),
        body.len(),
    );
    let mut out = BytesMut::with_capacity(head.len() + body.len());
    out.extend_from_slice(&head);
    out.extend_from_slice(body);
    out.freeze()
}

/// A raw token frame (handshake v0).
fn raw_frame(token: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + token.len());
    out.extend_from_slice(&size_prefix(token.len()));
    out.extend_from_slice(token);
    out.freeze()
}

impl SaslAuthenticator {
    pub fn new(settings: Arc<SaslSettings>) -> Self {
        Self {
            settings,
            state: AuthState::HandshakeOrVersions,
            previous: None,
        }
    }

    /// A re-authentication of a connection authenticated as `principal`
    /// with `mechanism`; its first frame is the client's SaslHandshake
    /// (`KafkaChannel.maybeBeginServerReauthentication`).
    pub fn reauthenticate(
        settings: Arc<SaslSettings>,
        mechanism: SaslMechanism,
        principal: &str,
    ) -> Self {
        Self {
            settings,
            state: AuthState::Handshake,
            previous: Some(Previous {
                mechanism,
                principal: principal.to_owned(),
            }),
        }
    }

    /// "authentication" or "re-authentication", for messages.
    fn what(&self) -> &'static str {
        if self.previous.is_some() {
            "re-authentication"
        } else {
            "authentication"
        }
    }

    /// The session lifetime at completion (`ReauthInfo
    /// .calcCompletionTimesAndReturnSessionLifetimeMs`): the mechanism's
    /// `connections.max.reauth.ms` when > 0, the credential's remaining
    /// life, or the smaller of both, floored at 0.
    fn session_lifetime_ms(
        &self,
        mechanism: SaslMechanism,
        server: &MechServer,
        now_ms: i64,
    ) -> Option<i64> {
        let max_reauth = self
            .settings
            .reauth_ms
            .get(&mechanism)
            .copied()
            .filter(|ms| *ms > 0);
        let credential = match server {
            MechServer::OAuth(o) => o.credential_expiry_ms().map(|exp| exp - now_ms),
            MechServer::Plain | MechServer::Scram(_) => None,
        };
        let ms = match (credential, max_reauth) {
            (None, None) => return None,
            (None, Some(m)) => m,
            (Some(c), None) => c,
            (Some(c), Some(m)) => c.min(m),
        };
        Some(ms.max(0))
    }

    /// Whether authentication succeeded or failed (no more frames).
    pub fn is_done(&self) -> bool {
        matches!(self.state, AuthState::Done)
    }

    /// The next frame the client sent.
    pub fn on_frame(&mut self, frame: Bytes, env: &AuthEnv<'_>) -> SaslAction {
        let state = std::mem::replace(&mut self.state, AuthState::Done);
        match state {
            AuthState::Done => SaslAction::Close("request after authentication ended".into()),
            AuthState::Authenticate {
                mechanism,
                handshake_version: 0,
                server,
            } => self.on_raw_token(mechanism, server, &frame, env),
            state => {
                let mut body = frame;
                let header = match decode_request_header(&mut body) {
                    Ok(h) => h,
                    Err(e) => {
                        return SaslAction::Close(format!(
                            "invalid request before authentication: {e}"
                        ))
                    }
                };
                self.on_request(state, header, body, env)
            }
        }
    }

    fn on_request(
        &mut self,
        state: AuthState,
        header: RequestHeader,
        body: Bytes,
        env: &AuthEnv<'_>,
    ) -> SaslAction {
        match state {
            AuthState::HandshakeOrVersions if header.api_key == ApiKey::ApiVersions => {
                self.state = AuthState::Handshake;
                SaslAction::ApiVersions { header, body }
            }
            AuthState::HandshakeOrVersions | AuthState::Handshake
                if header.api_key == ApiKey::SaslHandshake =>
            {
                self.on_handshake(&header, body)
            }
            AuthState::Authenticate {
                mechanism,
                handshake_version,
                server,
            } if header.api_key == ApiKey::SaslAuthenticate => {
                self.on_authenticate(mechanism, handshake_version, server, &header, body, env)
            }
            AuthState::BadMechanism(message) if header.api_key == ApiKey::SaslAuthenticate => {
                self.on_bad_mechanism(message, &header)
            }
            _ => SaslAction::Close(format!(
                "Unexpected Kafka request of type {:?} v{} during SASL authentication \
                 (ILLEGAL_SASL_STATE)",
                header.api_key, header.api_version
            )),
        }
    }

    fn on_handshake(&mut self, header: &RequestHeader, mut body: Bytes) -> SaslAction {
        let version = header.api_version;
        if !(0..=HANDSHAKE_MAX_VERSION).contains(&version) {
            return SaslAction::Close(format!("unsupported SaslHandshake version {version}"));
        }
        let request: SaslHandshakeRequest = match decode_body(&mut body, version) {
            Ok(r) => r,
            Err(e) => return SaslAction::Close(format!("invalid SaslHandshake request: {e}")),
        };
        let enabled: Vec<StrBytes> = self
            .settings
            .mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect();
        let asked = request.mechanism.to_string();
        let chosen =
            SaslMechanism::from_name(&asked).filter(|m| self.settings.mechanisms.contains(m));
        let error = if chosen.is_some() {
            ErrorCode::NONE
        } else {
            ErrorCode::UNSUPPORTED_SASL_MECHANISM
        };
        let response = SaslHandshakeResponse::default()
            .with_error_code(error.into())
            .with_mechanisms(enabled);
        let bytes = match encode(&response, version) {
            Ok(b) => framed(header.correlation_id, ApiKey::SaslHandshake, version, &b),
            Err(e) => {
                return SaslAction::Close(format!("cannot encode SaslHandshake response: {e}"))
            }
        };
        match chosen {
            Some(mechanism)
                if self
                    .previous
                    .as_ref()
                    .is_some_and(|p| p.mechanism != mechanism) =>
            {
                let old = self.previous.as_ref().map_or("", |p| p.mechanism.name());
                self.state = AuthState::BadMechanism(format!(
                    "SASL mechanism '{}' requested by client is not supported for \
                     re-authentication of mechanism '{old}'",
                    mechanism.name()
                ));
                SaslAction::Respond(bytes)
            }
            Some(mechanism) => {
                let server = match mechanism {
                    SaslMechanism::Plain => MechServer::Plain,
                    SaslMechanism::OAuthBearer => MechServer::OAuth(OAuthServer::new()),
                    m => MechServer::Scram(ScramServer::new(m)),
                };
                self.state = AuthState::Authenticate {
                    mechanism,
                    handshake_version: version,
                    server,
                };
                SaslAction::Respond(bytes)
            }
            None => SaslAction::Fail {
                respond: Some(bytes),
                reason: format!(
                    "Unsupported SASL mechanism {asked:?} (UNSUPPORTED_SASL_MECHANISM; enabled: {})",
                    self.mechanism_names()
                ),
            },
        }
    }

    fn mechanism_names(&self) -> String {
        self.settings
            .mechanisms
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn step(
        &self,
        mechanism: SaslMechanism,
        server: &mut MechServer,
        token: &[u8],
        env: &AuthEnv<'_>,
    ) -> MechStep {
        match server {
            MechServer::Plain => plain::on_token(token, &self.settings.plain_users),
            MechServer::Scram(s) => {
                let lookup = |user: &str| (env.scram)(user, mechanism);
                s.on_token(token, &lookup, env.server_nonce)
            }
            MechServer::OAuth(o) => match &self.settings.oauth {
                Some(validator) => o.on_token(token, validator, env.jwks, env.now_ms),
                None => MechStep::Failed {
                    client_message: None,
                    log: "OAUTHBEARER has no validator on this listener".into(),
                },
            },
        }
    }

    /// A completed exchange's principal, or the refusal of a
    /// re-authentication that changed it (`ReauthInfo.ensurePrincipalUnchanged`).
    fn principal_of(&self, authorization_id: &str) -> Result<String, String> {
        let principal = format!("User:{authorization_id}");
        match &self.previous {
            Some(p) if p.principal != principal => {
                let dotted = |s: &str| s.replacen(':', ".", 1);
                Err(format!(
                    "Cannot change principals during re-authentication from {}: {}",
                    dotted(&p.principal),
                    dotted(&principal)
                ))
            }
            _ => Ok(principal),
        }
    }

    /// REAUTH_BAD_MECHANISM: the SaslAuthenticate after a handshake that
    /// asked for another mechanism fails with the held message.
    fn on_bad_mechanism(&mut self, message: String, header: &RequestHeader) -> SaslAction {
        let version = header.api_version;
        let response = SaslAuthenticateResponse::default()
            .with_error_code(ErrorCode::SASL_AUTHENTICATION_FAILED.into())
            .with_error_message(Some(StrBytes::from_string(message.clone())));
        match encode(&response, version) {
            Ok(b) => SaslAction::Fail {
                respond: Some(framed(
                    header.correlation_id,
                    ApiKey::SaslAuthenticate,
                    version,
                    &b,
                )),
                reason: message,
            },
            Err(e) => SaslAction::Close(format!("cannot encode SaslAuthenticate response: {e}")),
        }
    }

    /// Handshake v0: the token is the whole frame, the answer a raw frame;
    /// a failure has no answer, only the close.
    fn on_raw_token(
        &mut self,
        mechanism: SaslMechanism,
        mut server: MechServer,
        token: &[u8],
        env: &AuthEnv<'_>,
    ) -> SaslAction {
        match self.step(mechanism, &mut server, token, env) {
            MechStep::Challenge(c) => {
                self.state = AuthState::Authenticate {
                    mechanism,
                    handshake_version: 0,
                    server,
                };
                SaslAction::Respond(raw_frame(&c))
            }
            MechStep::Complete {
                response,
                authorization_id,
            } => match self.principal_of(&authorization_id) {
                Ok(principal) => SaslAction::Complete {
                    respond: raw_frame(&response),
                    principal,
                    mechanism,
                    session_lifetime_ms: self.session_lifetime_ms(mechanism, &server, env.now_ms),
                },
                Err(reason) => SaslAction::Fail {
                    respond: None,
                    reason,
                },
            },
            MechStep::Failed { log, .. } => SaslAction::Fail {
                respond: None,
                reason: format!("{} authentication failed: {log}", mechanism.name()),
            },
        }
    }

    fn on_authenticate(
        &mut self,
        mechanism: SaslMechanism,
        handshake_version: i16,
        mut server: MechServer,
        header: &RequestHeader,
        mut body: Bytes,
        env: &AuthEnv<'_>,
    ) -> SaslAction {
        let version = header.api_version;
        if !(0..=AUTHENTICATE_MAX_VERSION).contains(&version) {
            return SaslAction::Close(format!("unsupported SaslAuthenticate version {version}"));
        }
        let request: SaslAuthenticateRequest = match decode_body(&mut body, version) {
            Ok(r) => r,
            Err(e) => return SaslAction::Close(format!("invalid SaslAuthenticate request: {e}")),
        };
        let mut step = self.step(mechanism, &mut server, &request.auth_bytes, env);
        let mut lifetime = None;
        if let MechStep::Complete {
            authorization_id, ..
        } = &step
        {
            match self.principal_of(authorization_id) {
                Ok(_) => lifetime = self.session_lifetime_ms(mechanism, &server, env.now_ms),
                Err(message) => {
                    step = MechStep::Failed {
                        client_message: Some(message.clone()),
                        log: message,
                    }
                }
            }
        }
        let respond = |error: ErrorCode, message: Option<String>, token: Vec<u8>| {
            let response = SaslAuthenticateResponse::default()
                .with_error_code(error.into())
                .with_error_message(message.map(StrBytes::from_string))
                .with_auth_bytes(Bytes::from(token))
                .with_session_lifetime_ms(lifetime.unwrap_or(0));
            encode(&response, version)
                .map(|b| framed(header.correlation_id, ApiKey::SaslAuthenticate, version, &b))
        };
        let action = match step {
            MechStep::Challenge(c) => respond(ErrorCode::NONE, None, c).map(|b| {
                self.state = AuthState::Authenticate {
                    mechanism,
                    handshake_version,
                    server,
                };
                SaslAction::Respond(b)
            }),
            MechStep::Complete {
                response,
                authorization_id,
            } => respond(ErrorCode::NONE, None, response).map(|b| SaslAction::Complete {
                respond: b,
                principal: format!("User:{authorization_id}"),
                mechanism,
                session_lifetime_ms: lifetime,
            }),
            MechStep::Failed {
                client_message,
                log,
            } => {
                // SaslServerAuthenticator.handleSaslToken: a plain
                // SaslException gets the generic text.
                let what = self.what();
                let message = client_message.unwrap_or_else(|| {
                    format!(
                        "Authentication failed during {what} due to invalid credentials with \
                         SASL mechanism {}",
                        mechanism.name()
                    )
                });
                respond(
                    ErrorCode::SASL_AUTHENTICATION_FAILED,
                    Some(message),
                    Vec::new(),
                )
                .map(|b| SaslAction::Fail {
                    respond: Some(b),
                    reason: format!("{} authentication failed: {log}", mechanism.name()),
                })
            }
        };
        action.unwrap_or_else(|e| {
            SaslAction::Close(format!("cannot encode SaslAuthenticate response: {e}"))
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod seed_tests;
