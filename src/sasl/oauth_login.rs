//! `[pure]` The client side of OAUTHBEARER as a broker speaks it on its
//! own connections (SECURITY.md §3.6, §3.9): the unsecured token of
//! `OAuthBearerUnsecuredLoginCallbackHandler`, a retrieved token read as
//! `LoginAccessTokenValidator` reads it, the client_credentials request of
//! `HttpAccessTokenRetriever`, the initial response of
//! `OAuthBearerClientInitialResponse.toBytes`, and the refresh time of
//! `ExpiringCredentialRefreshingLogin.refreshMs`. The clock and the
//! randomness are the caller's.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{Map, Value};

use crate::config::sasl::oauth_login::{Claim, RefreshConfig, UnsecuredLogin};

/// A token the broker logs in with.
#[derive(Clone, PartialEq, Eq)]
pub struct LoginToken {
    /// The compact JWS.
    pub value: String,
    /// The principal (the sub / principal claim).
    pub principal: String,
    /// `exp` in epoch ms.
    pub expires_ms: i64,
    /// `iat` in epoch ms, when the token has one.
    pub issued_ms: Option<i64>,
}

/// Never the token itself in a log line.
impl std::fmt::Debug for LoginToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginToken")
            .field("principal", &self.principal)
            .field("expires_ms", &self.expires_ms)
            .finish_non_exhaustive()
    }
}

#[allow(clippy::cast_precision_loss, reason = "epoch ms fit an f64 exactly")]
fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// `OAuthBearerUnsecuredLoginCallbackHandler.handleTokenCallback`: header
/// `{"alg":"none"}`, claims `exp` (now + lifetime), `iat` (now, seconds
/// with a fraction) and the configured ones; no signature.
pub fn unsecured_token(login: &UnsecuredLogin, now_ms: i64) -> LoginToken {
    let mut claims = Map::new();
    claims.insert(
        "exp".into(),
        number(seconds(now_ms) + seconds(login.lifetime_s.saturating_mul(1000))),
    );
    claims.insert("iat".into(), number(seconds(now_ms)));
    let mut principal = String::new();
    for (name, claim) in &login.claims {
        let value = match claim {
            Claim::Text(t) => {
                if *name == login.principal_claim {
                    principal = t.trim().to_owned();
                }
                Value::String(t.clone())
            }
            Claim::Number(x) => number(*x),
            Claim::List(items) => Value::Array(items.iter().cloned().map(Value::String).collect()),
        };
        claims.insert(name.clone(), value);
    }
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let body = URL_SAFE_NO_PAD.encode(Value::Object(claims).to_string());
    LoginToken {
        value: format!("{header}.{body}."),
        principal,
        expires_ms: now_ms.saturating_add(login.lifetime_s.saturating_mul(1000)),
        issued_ms: Some(now_ms),
    }
}

/// `LoginAccessTokenValidator.validate`: a three-part JWT whose payload
/// has a numeric `exp`, a non-blank subject claim `sub_claim`, and, when
/// present, a numeric `iat` (the signature is the server's to check).
pub fn read_token(token: &str, sub_claim: &str) -> Result<LoginToken, String> {
    let token = token.trim();
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return Err(format!(
            "Malformed JWT provided; expected three sections (header, payload, and signature), \
             found {}",
            parts.iter().filter(|p| !p.is_empty()).count()
        ));
    }
    let payload = URL_SAFE_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .map_err(|e| format!("the token's payload is not base64url: {e}"))?;
    let claims: Map<String, Value> = serde_json::from_slice(&payload)
        .map_err(|e| format!("the token's payload is not a JSON object: {e}"))?;
    #[allow(clippy::cast_possible_truncation, reason = "Number.longValue")]
    let ms = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_f64)
            .map(|s| (s as i64) * 1000)
    };
    let expires_ms = ms("exp").ok_or("the token has no numeric exp claim")?;
    if expires_ms < 0 {
        return Err("the token's exp claim is negative".into());
    }
    let principal = claims
        .get(sub_claim)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("the token has no {sub_claim} claim"))?
        .to_owned();
    Ok(LoginToken {
        value: token.to_owned(),
        principal,
        expires_ms,
        issued_ms: ms("iat"),
    })
}

/// `java.net.URLEncoder.encode(s, UTF-8)`.
pub fn form_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `HttpAccessTokenRetriever.formatAuthorizationHeader` (no URL encoding,
/// Kafka 3.9's default) and `formatRequestBody`.
pub fn client_credentials(client_id: &str, secret: &str, scope: Option<&str>) -> (String, String) {
    let header = format!(
        "Basic {}",
        STANDARD.encode(format!("{}:{}", client_id.trim(), secret.trim()))
    );
    let mut body = "grant_type=client_credentials".to_owned();
    if let Some(scope) = scope.map(str::trim).filter(|s| !s.is_empty()) {
        body.push_str("&scope=");
        body.push_str(&form_encode(scope));
    }
    (header, body)
}

/// `HttpAccessTokenRetriever.parseAccessToken`: the `access_token` member.
pub fn access_token(body: &[u8]) -> Result<String, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("the token endpoint's answer is not JSON: {e}"))?;
    v.get("access_token")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| "The token endpoint response did not contain an access_token value".into())
}

/// `OAuthBearerClientInitialResponse.toBytes` without an authorization id.
pub fn initial_response(token: &str, extensions: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("n,,\u{1}auth=Bearer {token}");
    for (k, v) in extensions {
        out.push_str(&format!("\u{1}{k}={v}"));
    }
    out.push_str("\u{1}\u{1}");
    out.into_bytes()
}

/// `ExpiringCredentialRefreshingLogin.refreshMs`: when to fetch the next
/// token, `unit` a random number in [0, 1) for the jitter.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "Kafka's (long) casts of a double"
)]
pub fn refresh_at(now_ms: i64, token: &LoginToken, cfg: &RefreshConfig, unit: f64) -> i64 {
    let expire = token.expires_ms;
    if now_ms > expire {
        // DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS.
        return now_ms + 10_000;
    }
    let pct = cfg.window_factor + cfg.window_jitter * unit;
    if now_ms + 1000 * (cfg.min_period_s + cfg.buffer_s) > expire {
        return now_ms + ((expire - now_ms) as f64 * pct) as i64;
    }
    let start = token.issued_ms.unwrap_or(now_ms);
    let proposed = start + ((expire - start) as f64 * pct) as i64;
    let buffer_begins = expire - cfg.buffer_s * 1000;
    if proposed > buffer_begins {
        return buffer_begins;
    }
    proposed.max(now_ms + 1000 * cfg.min_period_s)
}

/// `SaslClientAuthenticator`: re-authenticate at a random 85–95 % of the
/// session lifetime the server announced (`unit` in [0, 1)).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "a share of a lifetime in ms"
)]
pub fn reauth_after_ms(session_lifetime_ms: i64, unit: f64) -> i64 {
    (session_lifetime_ms as f64 * (0.85 + 0.1 * unit)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(lifetime_s: i64) -> UnsecuredLogin {
        UnsecuredLogin {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            lifetime_s,
            claims: vec![
                ("sub".into(), Claim::Text("broker".into())),
                ("scope".into(), Claim::List(vec!["a".into()])),
            ],
        }
    }

    #[test]
    fn an_unsecured_token_is_kafkas_unsigned_jws() {
        let t = unsecured_token(&login(60), 1_700_000_000_500);
        assert_eq!(t.principal, "broker");
        assert_eq!(t.expires_ms, 1_700_000_060_500);
        let parts: Vec<&str> = t.value.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2], "");
        assert_eq!(
            URL_SAFE_NO_PAD.decode(parts[0]).unwrap(),
            br#"{"alg":"none"}"#
        );
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["sub"], "broker");
        assert_eq!(claims["scope"], serde_json::json!(["a"]));
        assert_eq!(claims["iat"].as_f64(), Some(1_700_000_000.5));
        assert_eq!(claims["exp"].as_f64(), Some(1_700_000_060.5));
        // The server's unsecured validator reads it back.
        let sep = initial_response(&t.value, &[("traceId".into(), "x".into())]);
        let text = String::from_utf8(sep).unwrap();
        assert!(text.starts_with("n,,\u{1}auth=Bearer "), "{text}");
        assert!(text.ends_with("\u{1}traceId=x\u{1}\u{1}"), "{text}");
    }

    #[test]
    fn the_brokers_own_server_accepts_the_unsecured_login() {
        use crate::config::sasl::oauth::UnsecuredOptions;
        use crate::sasl::oauthbearer::{jwt::validate_unsecured, parse_client_initial_response};
        let now = 1_700_000_000_123;
        let t = unsecured_token(&login(60), now);
        let first = initial_response(&t.value, &[("traceId".into(), "x".into())]);
        let parsed = parse_client_initial_response(&first).unwrap();
        assert_eq!(
            parsed.extensions,
            vec![("traceId".to_owned(), "x".to_owned())]
        );
        let opts = UnsecuredOptions {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: vec!["a".into()],
            clock_skew_ms: 0,
        };
        let valid = validate_unsecured(&parsed.token, &opts, now + 1000).unwrap();
        assert_eq!(valid.principal, "broker");
        assert_eq!(valid.expiry_ms, t.expires_ms);
    }

    #[test]
    fn a_retrieved_token_needs_exp_and_sub() {
        let enc = |v: &str| URL_SAFE_NO_PAD.encode(v);
        let tok = |claims: &str| format!("{}.{}.sig", enc(r#"{"alg":"RS256"}"#), enc(claims));
        let t = read_token(&tok(r#"{"sub":"b","exp":2000,"iat":1000}"#), "sub").unwrap();
        assert_eq!((t.expires_ms, t.issued_ms), (2_000_000, Some(1_000_000)));
        assert_eq!(t.principal, "b");
        assert!(read_token(&tok(r#"{"sub":"b"}"#), "sub").is_err());
        assert!(read_token(&tok(r#"{"uid":"b","exp":1}"#), "sub").is_err());
        assert!(read_token(&tok(r#"{"uid":"b","exp":1}"#), "uid").is_ok());
        assert!(read_token("a.b", "sub").is_err());
        assert!(!format!("{t:?}").contains("sig"));
    }

    #[test]
    fn the_token_request_is_kafkas() {
        let (h, b) = client_credentials("broker", "s e", Some("kafka write"));
        assert_eq!(h, format!("Basic {}", STANDARD.encode("broker:s e")));
        assert_eq!(b, "grant_type=client_credentials&scope=kafka+write");
        assert_eq!(
            client_credentials("a", "b", None).1,
            "grant_type=client_credentials"
        );
        assert_eq!(form_encode("a/b~é"), "a%2Fb%7E%C3%A9");
        assert_eq!(
            access_token(br#"{"access_token":"t.u.v","expires_in":1}"#).unwrap(),
            "t.u.v"
        );
        assert!(access_token(br#"{"error":"x"}"#).is_err());
    }

    #[test]
    fn refresh_times_follow_expiring_credential_refreshing_login() {
        let cfg = RefreshConfig::default();
        let hour = LoginToken {
            value: String::new(),
            principal: "b".into(),
            expires_ms: 3_600_000,
            issued_ms: Some(0),
        };
        // 80 % of the hour (no jitter), inside both buffers.
        assert_eq!(refresh_at(0, &hour, &cfg, 0.0), 2_880_000);
        // The end buffer (300 s) caps a late proposal.
        let late = RefreshConfig {
            window_factor: 1.0,
            ..cfg
        };
        assert_eq!(refresh_at(0, &hour, &late, 0.0), 3_300_000);
        // Too short a token for the buffers: a share of what is left.
        let short = LoginToken {
            expires_ms: 10_000,
            ..hour.clone()
        };
        assert_eq!(refresh_at(0, &short, &cfg, 0.0), 8_000);
        // Expired: retry in 10 s.
        assert_eq!(refresh_at(20_000, &short, &cfg, 0.5), 30_000);
        assert_eq!(reauth_after_ms(1000, 0.0), 850);
        assert_eq!(reauth_after_ms(1000, 0.999), 949);
    }
}
