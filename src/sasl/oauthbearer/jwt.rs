//! `[pure]` The claim rules of Kafka 3.9's two OAUTHBEARER validators.
//!
//! Unsecured (`internals/unsecured/OAuthBearerUnsecuredJws.java`,
//! `OAuthBearerUnsecuredValidatorCallbackHandler.java`,
//! `OAuthBearerValidationUtils.java`): three dot-separated base64url parts,
//! the last empty, header `alg` = `none`; the principal claim must be a
//! string; `iat` (optional) not after now + skew; `exp` required and after
//! now − skew; `exp` after `iat`; every required scope present, else
//! `insufficient_scope` naming the required scope.
//!
//! Secured (`internals/secured/ValidatorAccessTokenValidator.java` over
//! jose4j's `JwtConsumer`): `alg` none refused; the signature verified
//! with a key of the JWKS; `exp` and `iat` required; `exp` after now −
//! skew, `nbf` (optional) not after now + skew; `aud` must contain one of
//! `sasl.oauthbearer.expected.audience` and `iss` equal
//! `sasl.oauthbearer.expected.issuer` when set; the sub claim a non-blank
//! string; the scope claim a string (taken whole, as Kafka does) or a
//! list of strings. Every failure answers `invalid_token`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{Map, Value};

use super::jwks::JwkSet;
use crate::config::sasl::oauth::{JwksOptions, UnsecuredOptions};

/// A validated token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    pub principal: String,
    /// `exp` in epoch milliseconds (the credential's end, KIP-368).
    pub expiry_ms: i64,
    pub scope: Vec<String>,
}

/// Why a token was refused: the OAuth error `status` (`invalid_token` or
/// `insufficient_scope`), the scope to name, and the reason for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: &'static str,
    pub scope: Option<String>,
    pub reason: String,
}

fn invalid(reason: impl Into<String>) -> Refusal {
    Refusal {
        status: "invalid_token",
        scope: None,
        reason: reason.into(),
    }
}

/// A compact JWS split and decoded.
struct Parts {
    header: Map<String, Value>,
    claims: Map<String, Value>,
    signing_input: Vec<u8>,
    signature: Vec<u8>,
}

fn json_part(text: &str, what: &str) -> Result<Map<String, Value>, Refusal> {
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|e| invalid(format!("the JWT {what} is not base64url: {e}")))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(invalid(format!("the JWT {what} is not a JSON object"))),
    }
}

fn split(token: &str) -> Result<Parts, Refusal> {
    let pieces: Vec<&str> = token.split('.').collect();
    if pieces.len() != 3 {
        return Err(invalid(
            "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded \
             values",
        ));
    }
    let signature = URL_SAFE_NO_PAD
        .decode(pieces[2])
        .map_err(|e| invalid(format!("the JWS signature is not base64url: {e}")))?;
    Ok(Parts {
        header: json_part(pieces[0], "header")?,
        claims: json_part(pieces[1], "claims")?,
        signing_input: format!("{}.{}", pieces[0], pieces[1]).into_bytes(),
        signature,
    })
}

/// A NumericDate claim in epoch milliseconds (`exp`, `iat`, `nbf`: seconds,
/// possibly fractional).
fn time_ms(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, Refusal> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .map(|s| Some((s * 1000.0).round() as i64))
            .ok_or_else(|| invalid(format!("the '{name}' claim is not a number"))),
        Some(_) => Err(invalid(format!(
            "The '{name}' claim was not of type Number"
        ))),
    }
}

/// The scope claim: a space-separated string (unsecured) or list.
fn scope_of(claims: &Map<String, Value>, name: &str, split_string: bool) -> Vec<String> {
    match claims.get(name) {
        Some(Value::String(s)) if split_string => s
            .split(' ')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Kafka's default validator (`OAuthBearerUnsecuredValidatorCallbackHandler`).
pub fn validate_unsecured(
    token: &str,
    opts: &UnsecuredOptions,
    now_ms: i64,
) -> Result<ValidToken, Refusal> {
    let parts = split(token)?;
    if !parts.signature.is_empty() || !token.ends_with('.') {
        return Err(invalid(
            "Unsecured JWS must not contain a digital signature",
        ));
    }
    match parts.header.get("alg").and_then(Value::as_str) {
        None => return Err(invalid("JWS header must have an Algorithm value")),
        Some("none") => {}
        Some(_) => return Err(invalid("Unsecured JWS must have 'none' for an algorithm")),
    }
    let claims = &parts.claims;
    let principal = match claims.get(&opts.principal_claim) {
        None | Some(Value::Null) => {
            return Err(invalid(format!(
                "Required claim missing: {}",
                opts.principal_claim
            )))
        }
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(invalid(format!(
                "The value of the '{}' claim was not of type String",
                opts.principal_claim
            )))
        }
    };
    let skew = opts.clock_skew_ms;
    let iat = time_ms(claims, "iat")?;
    if let Some(iat) = iat {
        if now_ms + skew < iat {
            return Err(invalid(format!(
                "The Issued At value ({iat} ms) was after the indicated time ({now_ms} ms) plus \
                 allowable clock skew ({skew} ms)"
            )));
        }
    }
    let Some(exp) = time_ms(claims, "exp")? else {
        return Err(invalid("No expiration time in JWT"));
    };
    if now_ms - skew >= exp {
        return Err(invalid(format!(
            "The indicated time ({now_ms} ms) minus allowable clock skew ({skew} ms) was on or \
             after the Expiration Time value ({exp} ms)"
        )));
    }
    if let Some(iat) = iat {
        if exp <= iat {
            return Err(invalid(format!(
                "The Expiration Time time ({exp} ms) was not after the Issued At time ({iat} ms)"
            )));
        }
    }
    let scope = scope_of(claims, &opts.scope_claim, true);
    if let Some(missing) = opts.required_scope.iter().find(|r| !scope.contains(r)) {
        return Err(Refusal {
            status: "insufficient_scope",
            scope: Some(opts.required_scope.join(" ")),
            reason: format!(
                "The provided scope ({scope:?}) was missing a required scope ({missing})"
            ),
        });
    }
    Ok(ValidToken {
        principal,
        expiry_ms: exp,
        scope,
    })
}

/// KIP-768's validator (`ValidatorAccessTokenValidator`) against `keys`.
pub fn validate_secured(
    token: &str,
    opts: &JwksOptions,
    keys: &JwkSet,
    now_ms: i64,
) -> Result<ValidToken, Refusal> {
    let parts = split(token)?;
    let alg = parts
        .header
        .get("alg")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("JWS header must have an Algorithm value"))?;
    if alg == "none" {
        return Err(invalid(
            "'none' is not a permitted algorithm (AlgorithmConstraints DISALLOW_NONE)",
        ));
    }
    let kid = parts.header.get("kid").and_then(Value::as_str);
    keys.verify(alg, kid, &parts.signing_input, &parts.signature)
        .map_err(|e| invalid(format!("Could not validate the access token: {e}")))?;
    let claims = &parts.claims;
    let skew = opts.clock_skew_s.saturating_mul(1000);
    let Some(exp) = time_ms(claims, "exp")? else {
        return Err(invalid("No Expiration Time (exp) claim present."));
    };
    if time_ms(claims, "iat")?.is_none() {
        return Err(invalid("No Issued At (iat) claim present."));
    }
    if now_ms - skew >= exp {
        return Err(invalid(format!(
            "The JWT is no longer valid - the evaluation time {now_ms} ms is on or after the \
             Expiration Time (exp={exp} ms) claim value (even when providing {} seconds of \
             leeway to account for clock skew)",
            opts.clock_skew_s
        )));
    }
    if let Some(nbf) = time_ms(claims, "nbf")? {
        if now_ms + skew < nbf {
            return Err(invalid(format!(
                "The JWT is not yet valid as the evaluation time {now_ms} ms is before the Not \
                 Before (nbf={nbf} ms) claim time"
            )));
        }
    }
    if !opts.expected_audience.is_empty() {
        let aud: Vec<&str> = match claims.get("aud") {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => return Err(invalid("No Audience (aud) claim present.")),
        };
        if !aud
            .iter()
            .any(|a| opts.expected_audience.iter().any(|e| e == a))
        {
            return Err(invalid(format!(
                "Audience (aud) claim {aud:?} doesn't contain an acceptable identifier. Expected \
                 one of {:?} as an aud value.",
                opts.expected_audience
            )));
        }
    }
    if let Some(expected) = &opts.expected_issuer {
        match claims.get("iss").and_then(Value::as_str) {
            Some(iss) if iss == expected => {}
            Some(iss) => {
                return Err(invalid(format!(
                    "Issuer (iss) claim value ({iss}) doesn't match expected value of {expected}"
                )))
            }
            None => return Err(invalid("No Issuer (iss) claim present.")),
        }
    }
    let principal = match claims.get(&opts.sub_claim) {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
        Some(Value::String(_)) => {
            return Err(invalid(format!(
                "{} value must not be empty",
                opts.sub_claim
            )))
        }
        Some(_) => {
            return Err(invalid(format!(
                "The value of the '{}' claim is not a string",
                opts.sub_claim
            )))
        }
        None => {
            return Err(invalid(format!(
                "{} value must be non-null",
                opts.sub_claim
            )))
        }
    };
    let scope = scope_of(claims, &opts.scope_claim, false);
    if scope.iter().any(|s| s.trim().is_empty()) {
        return Err(invalid(format!(
            "{} value must not contain empty values",
            opts.scope_claim
        )));
    }
    Ok(ValidToken {
        principal,
        expiry_ms: exp,
        scope,
    })
}
