//! `[pure]` A JSON Web Key Set (RFC 7517) and JWS signature checks
//! (RFC 7515/7518) for KIP-768's validator: RSA keys (`kty` RSA, `n`/`e`)
//! for RS256/RS384/RS512 and P-256 keys (`kty` EC, `crv` P-256, `x`/`y`)
//! for ES256, verified with ring. A key is chosen as jose4j's
//! `VerificationJwkSelector` chooses it (Kafka's
//! `RefreshingHttpsJwksVerificationKeyResolver` / `JwksFileVerificationKeyResolver`):
//! the token's `kid` must match when it names one, the key type must fit
//! the algorithm, and a key's optional `use` / `alg` must agree.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature;
use serde_json::Value;

/// One verification key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    /// `alg`, when the key names one.
    pub alg: Option<String>,
    pub key: JwkKey,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwkKey {
    /// Big-endian modulus and exponent.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// The uncompressed P-256 point `04 || x || y`.
    P256 { point: Vec<u8> },
}

/// The keys of a JWKS document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JwkSet {
    pub keys: Vec<Jwk>,
}

fn b64(v: &Value, field: &str) -> Result<Vec<u8>, String> {
    let text = v
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("JWK without {field:?}"))?;
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|e| format!("JWK {field:?} is not base64url: {e}"))
}

impl JwkSet {
    /// Parse a JWKS document (`{"keys":[...]}`). Keys of other types,
    /// curves or uses are skipped (jose4j ignores what it cannot use); a
    /// malformed key of a supported type is an error.
    pub fn parse(text: &[u8]) -> Result<JwkSet, String> {
        let doc: Value =
            serde_json::from_slice(text).map_err(|e| format!("JWKS is not JSON: {e}"))?;
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("JWKS has no \"keys\" array")?;
        let mut out = Vec::new();
        for k in keys {
            if k.get("use")
                .and_then(Value::as_str)
                .is_some_and(|u| u != "sig")
            {
                continue;
            }
            let key = match (
                k.get("kty").and_then(Value::as_str),
                k.get("crv").and_then(Value::as_str),
            ) {
                (Some("RSA"), _) => JwkKey::Rsa {
                    n: b64(k, "n")?,
                    e: b64(k, "e")?,
                },
                (Some("EC"), Some("P-256")) => {
                    let (x, y) = (b64(k, "x")?, b64(k, "y")?);
                    if x.len() != 32 || y.len() != 32 {
                        return Err("P-256 JWK coordinates must be 32 bytes".into());
                    }
                    let mut point = vec![4u8];
                    point.extend(x);
                    point.extend(y);
                    JwkKey::P256 { point }
                }
                _ => continue,
            };
            out.push(Jwk {
                kid: k.get("kid").and_then(Value::as_str).map(str::to_owned),
                alg: k.get("alg").and_then(Value::as_str).map(str::to_owned),
                key,
            });
        }
        Ok(JwkSet { keys: out })
    }

    /// Verify `signature` over `signing_input` with the algorithm `alg`
    /// and a key fit for it (and for `kid`, when given). `Err` says why not.
    pub fn verify(
        &self,
        alg: &str,
        kid: Option<&str>,
        signing_input: &[u8],
        sig: &[u8],
    ) -> Result<(), String> {
        let rsa = match alg {
            "RS256" => Some(&signature::RSA_PKCS1_2048_8192_SHA256),
            "RS384" => Some(&signature::RSA_PKCS1_2048_8192_SHA384),
            "RS512" => Some(&signature::RSA_PKCS1_2048_8192_SHA512),
            "ES256" => None,
            other => return Err(format!("JWS algorithm {other:?} is not accepted")),
        };
        let fits = |k: &&Jwk| {
            kid.is_none_or(|kid| k.kid.as_deref() == Some(kid))
                && k.alg.as_deref().is_none_or(|a| a == alg)
                && matches!(
                    (&k.key, rsa.is_some()),
                    (JwkKey::Rsa { .. }, true) | (JwkKey::P256 { .. }, false)
                )
        };
        let candidates: Vec<&Jwk> = self.keys.iter().filter(fits).collect();
        if candidates.is_empty() {
            return Err(format!(
                "Unable to find a suitable verification key for JWS w/ header {{\"alg\":\"{alg}\"{}}}",
                kid.map(|k| format!(",\"kid\":\"{k}\"")).unwrap_or_default()
            ));
        }
        let ok = candidates.iter().any(|k| match (&k.key, rsa) {
            (JwkKey::Rsa { n, e }, Some(params)) => signature::RsaPublicKeyComponents { n, e }
                .verify(params, signing_input, sig)
                .is_ok(),
            (JwkKey::P256 { point }, None) => {
                signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(signing_input, sig)
                    .is_ok()
            }
            _ => false,
        });
        if ok {
            Ok(())
        } else {
            Err("JWS signature is invalid".into())
        }
    }
}
