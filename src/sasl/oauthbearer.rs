//! `[pure]` SASL/OAUTHBEARER (RFC 7628) as Kafka 3.9's
//! `clients/.../security/oauthbearer/internals/OAuthBearerSaslServer.java`
//! serves it:
//! - the client's first message `n,[a=<authzid>],\x01auth=Bearer <token>\x01[key=value\x01]*\x01`
//!   is read as `OAuthBearerClientInitialResponse` reads it (a message that
//!   does not match is a plain `SaslException`: the client gets Kafka's
//!   generic text);
//! - the token goes to the listener's validator ([`jwt`]): Kafka's
//!   unsecured default or KIP-768's JWKS validator ([`jwks`]);
//! - a refused token is answered with the JSON error as a challenge
//!   (`{"status":"invalid_token"}`, or `insufficient_scope` with
//!   `"scope"`); the client answers `\x01` and the exchange then fails
//!   with that JSON as the `SaslAuthenticationException` message;
//! - a non-empty authzid must equal the token's principal; extensions are
//!   accepted as both of Kafka's validators accept them (every one valid).
//!
//! Success: an empty response, the authorization id = the token's
//! principal, and the credential's end (`exp`) for the session lifetime
//! (KIP-368).

pub mod jwks;
pub mod jwt;

use jwks::JwkSet;
use jwt::{Refusal, ValidToken};

use super::MechStep;
use crate::config::sasl::oauth::OAuthValidator;

/// `OAuthBearerSaslClient.BYTE_CONTROL_A`, RFC 7628's separator.
const SEP: char = '\u{1}';

/// The parts of a client's first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    pub authorization_id: String,
    pub token: String,
    pub extensions: Vec<(String, String)>,
}

fn is_saslname(s: &str) -> bool {
    // SASLNAME = ([\x01-\x7F] except '=' and ',' | "=2C" | "=3D")+
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' if b.get(i + 1..i + 3) == Some(b"2C") || b.get(i + 1..i + 3) == Some(b"3D") => {
                i += 3;
            }
            b'=' | b',' | 0 | 0x80..=0xff => return false,
            _ => i += 1,
        }
    }
    !b.is_empty()
}

/// `OAuthBearerClientInitialResponse(byte[])`, with its messages.
pub fn parse_client_initial_response(bytes: &[u8]) -> Result<ClientInitialResponse, String> {
    const BAD: &str = "Invalid OAUTHBEARER client first message";
    let text = std::str::from_utf8(bytes).map_err(|_| BAD.to_owned())?;
    let rest = text.strip_prefix("n,").ok_or(BAD)?;
    let (authzid, rest) = rest.split_once(',').ok_or(BAD)?;
    let authorization_id = match authzid.strip_prefix("a=") {
        Some(name) if is_saslname(name) => name.to_owned(),
        None if authzid.is_empty() => String::new(),
        _ => return Err(BAD.into()),
    };
    // SEP, then key=value SEP pairs, then a final SEP.
    let body = rest
        .strip_prefix(SEP)
        .and_then(|r| r.strip_suffix(SEP))
        .ok_or(BAD)?;
    let mut auth = None;
    let mut extensions = Vec::new();
    if !body.is_empty() {
        let pairs = body.strip_suffix(SEP).ok_or(BAD)?;
        for pair in pairs.split(SEP) {
            let (k, v) = pair.split_once('=').ok_or(BAD)?;
            let key_ok = !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphabetic());
            let value_ok = !v.is_empty()
                && v.bytes().all(|c| {
                    (0x21..=0x7e).contains(&c) || matches!(c, b' ' | b'\t' | b'\r' | b'\n')
                });
            if !key_ok || !value_ok {
                return Err(BAD.into());
            }
            if k == "auth" {
                auth = Some(v);
            } else {
                extensions.push((k.to_owned(), v.to_owned()));
            }
        }
    }
    let auth = auth.ok_or_else(|| format!("{BAD}: 'auth' not specified"))?;
    // AUTH_PATTERN = (?<scheme>[\w]+)[ ]+(?<token>[-_\.a-zA-Z0-9]+)
    let (scheme, token) = auth
        .split_once(' ')
        .map(|(s, t)| (s, t.trim_start_matches(' ')))
        .ok_or_else(|| format!("{BAD}: invalid 'auth' format"))?;
    let scheme_ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_');
    let token_ok = !token.is_empty()
        && token
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !scheme_ok || !token_ok {
        return Err(format!("{BAD}: invalid 'auth' format"));
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "Invalid scheme in OAUTHBEARER client first message: {scheme}"
        ));
    }
    Ok(ClientInitialResponse {
        authorization_id,
        token: token.to_owned(),
        extensions,
    })
}

/// `OAuthBearerSaslServer.jsonErrorResponse`.
pub fn json_error(status: &str, scope: Option<&str>) -> String {
    let mut out = format!("{{\"status\":\"{status}\"");
    if let Some(scope) = scope {
        out.push_str(&format!(", \"scope\":\"{scope}\""));
    }
    out.push('}');
    out
}

/// One OAUTHBEARER exchange.
#[derive(Debug, Default)]
pub struct OAuthServer {
    /// The JSON error sent as a challenge, awaiting the client's `\x01`,
    /// and the refusal's reason for the broker's log.
    error_sent: Option<(String, String)>,
    /// The validated token's `exp` (epoch ms), once complete.
    expiry_ms: Option<i64>,
}

impl OAuthServer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The credential's end (epoch ms) after a successful exchange.
    pub fn credential_expiry_ms(&self) -> Option<i64> {
        self.expiry_ms
    }

    /// The client's next token (`OAuthBearerSaslServer.evaluateResponse`).
    /// `keys` is the JWKS of a secured validator (`None`: not loaded).
    pub fn on_token(
        &mut self,
        token: &[u8],
        validator: &OAuthValidator,
        keys: Option<&JwkSet>,
        now_ms: i64,
    ) -> MechStep {
        if token == [0x01] {
            if let Some((json, reason)) = self.error_sent.take() {
                return MechStep::Failed {
                    client_message: Some(json.clone()),
                    log: format!("token refused ({json}): {reason}"),
                };
            }
        }
        self.error_sent = None;
        let first = match parse_client_initial_response(token) {
            Ok(f) => f,
            Err(e) => {
                return MechStep::Failed {
                    client_message: None,
                    log: e,
                }
            }
        };
        let checked: Result<ValidToken, Refusal> = match validator {
            OAuthValidator::Unsecured(opts) => jwt::validate_unsecured(&first.token, opts, now_ms),
            OAuthValidator::Jwks(opts) => match keys {
                Some(keys) => jwt::validate_secured(&first.token, opts, keys, now_ms),
                None => Err(Refusal {
                    status: "invalid_token",
                    scope: None,
                    reason: "no JWKS loaded yet".into(),
                }),
            },
        };
        let valid = match checked {
            Ok(v) => v,
            Err(r) => {
                let json = json_error(r.status, r.scope.as_deref());
                self.error_sent = Some((json.clone(), r.reason));
                return MechStep::Challenge(json.into_bytes());
            }
        };
        if !first.authorization_id.is_empty() && first.authorization_id != valid.principal {
            return MechStep::Failed {
                client_message: Some(format!(
                    "Authentication failed: Client requested an authorization id ({}) that is \
                     different from the token's principal name ({})",
                    first.authorization_id, valid.principal
                )),
                log: "authorization id differs from the token's principal".into(),
            };
        }
        self.expiry_ms = Some(valid.expiry_ms);
        MechStep::Complete {
            response: Vec::new(),
            authorization_id: valid.principal,
        }
    }
}

#[cfg(test)]
mod tests;
