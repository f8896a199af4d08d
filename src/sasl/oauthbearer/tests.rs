//! `[pure]` Unit tests of `sasl::oauthbearer`: the client's first message,
//! both validators' claim rules and the error-challenge exchange. Keys
//! are P-256 pairs made by ring at test time (RSA keys are made with
//! openssl by the integration test).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

use super::jwks::JwkSet;
use super::jwt::{validate_secured, validate_unsecured};
use super::*;
use crate::config::sasl::jaas::parse_single;
use crate::config::sasl::oauth::{
    jwks_options, lookup, JwksOptions, JwksUrl, UnsecuredOptions, OAUTHBEARER_LOGIN_MODULE,
};

const NOW_MS: i64 = 1_800_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

fn unsecured_token(claims: &Value) -> String {
    format!("{}.{}.", b64(&json!({"alg": "none"})), b64(claims))
}

fn unsecured_opts() -> UnsecuredOptions {
    UnsecuredOptions {
        principal_claim: "sub".into(),
        scope_claim: "scope".into(),
        required_scope: Vec::new(),
        clock_skew_ms: 0,
    }
}

struct Signer {
    pair: EcdsaKeyPair,
    kid: &'static str,
}

impl Signer {
    fn new(kid: &'static str) -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Signer { pair, kid }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": self.kid, "use": "sig",
               "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
               "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
    }

    fn sign(&self, header: &Value, claims: &Value) -> String {
        let input = format!("{}.{}", b64(header), b64(claims));
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    fn token(&self, claims: &Value) -> String {
        self.sign(&json!({"alg": "ES256", "kid": self.kid}), claims)
    }
}

fn secured_opts() -> JwksOptions {
    JwksOptions {
        url: JwksUrl::File("/unused".into()),
        ssl_options: Vec::new(),
        refresh_ms: 3_600_000,
        retry_backoff_ms: 100,
        retry_backoff_max_ms: 10_000,
        clock_skew_s: 30,
        expected_audience: vec!["kafka".into()],
        expected_issuer: Some("https://idp".into()),
        scope_claim: "scope".into(),
        sub_claim: "sub".into(),
    }
}

fn good_claims() -> Value {
    json!({"sub": "alice", "iat": NOW_S - 10, "exp": NOW_S + 600,
           "aud": ["kafka", "other"], "iss": "https://idp", "scope": "read write"})
}

#[test]
fn the_client_first_message_parses_as_kafka_reads_it() {
    let m = parse_client_initial_response(b"n,,\x01auth=Bearer abc.def.\x01\x01").unwrap();
    assert_eq!(m.token, "abc.def.");
    assert_eq!(m.authorization_id, "");
    let m =
        parse_client_initial_response(b"n,a=alice,\x01auth=bearer  x.y.z\x01traceId=42\x01\x01")
            .unwrap();
    assert_eq!(m.authorization_id, "alice");
    assert_eq!(m.token, "x.y.z");
    assert_eq!(m.extensions, vec![("traceId".into(), "42".into())]);
    for bad in [
        &b"y,,\x01auth=Bearer t\x01\x01"[..],
        b"n,,\x01\x01",
        b"n,,\x01auth=Bearer t\x01",
        b"n,,\x01auth=Basic t\x01\x01",
        b"n,,\x01auth=Bearer t!\x01\x01",
        b"n,,\x01ke-y=v\x01auth=Bearer t\x01\x01",
        b"",
    ] {
        assert!(parse_client_initial_response(bad).is_err(), "{bad:?}");
    }
    assert!(parse_client_initial_response(b"n,,\x01\x01")
        .unwrap_err()
        .contains("'auth' not specified"));
}

#[test]
fn the_unsecured_validator_checks_the_principal_times_and_scope() {
    let opts = unsecured_opts();
    let ok = unsecured_token(&json!({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60}));
    let v = validate_unsecured(&ok, &opts, NOW_MS).unwrap();
    assert_eq!(v.principal, "alice");
    assert_eq!(v.expiry_ms, (NOW_S + 60) * 1000);

    let expired = unsecured_token(&json!({"sub": "alice", "exp": NOW_S - 1}));
    assert!(validate_unsecured(&expired, &opts, NOW_MS)
        .unwrap_err()
        .reason
        .contains("Expiration Time"));
    // The allowable clock skew lets it through.
    let skewed = UnsecuredOptions {
        clock_skew_ms: 5000,
        ..unsecured_opts()
    };
    assert!(validate_unsecured(&expired, &skewed, NOW_MS).is_ok());
    let no_exp = unsecured_token(&json!({"sub": "alice"}));
    assert!(validate_unsecured(&no_exp, &opts, NOW_MS).is_err());
    let no_sub = unsecured_token(&json!({"user": "alice", "exp": NOW_S + 60}));
    assert!(validate_unsecured(&no_sub, &opts, NOW_MS)
        .unwrap_err()
        .reason
        .contains("Required claim missing: sub"));
    let other_claim = UnsecuredOptions {
        principal_claim: "user".into(),
        ..unsecured_opts()
    };
    assert_eq!(
        validate_unsecured(&no_sub, &other_claim, NOW_MS)
            .unwrap()
            .principal,
        "alice"
    );
    let future_iat = unsecured_token(&json!({"sub": "a", "iat": NOW_S + 30, "exp": NOW_S + 60}));
    assert!(validate_unsecured(&future_iat, &opts, NOW_MS).is_err());
    // A signed token or another algorithm is not an unsecured JWS.
    let signed = Signer::new("k").token(&good_claims());
    assert!(validate_unsecured(&signed, &opts, NOW_MS).is_err());
}

#[test]
fn a_missing_required_scope_answers_insufficient_scope() {
    let opts = UnsecuredOptions {
        required_scope: vec!["read".into(), "admin".into()],
        ..unsecured_opts()
    };
    let t = unsecured_token(&json!({"sub": "a", "exp": NOW_S + 60, "scope": "read write"}));
    let r = validate_unsecured(&t, &opts, NOW_MS).unwrap_err();
    assert_eq!(r.status, "insufficient_scope");
    assert_eq!(r.scope.as_deref(), Some("read admin"));
    assert_eq!(
        json_error(r.status, r.scope.as_deref()),
        "{\"status\":\"insufficient_scope\", \"scope\":\"read admin\"}"
    );
    let t = unsecured_token(&json!({"sub": "a", "exp": NOW_S + 60, "scope": ["admin", "read"]}));
    assert!(validate_unsecured(&t, &opts, NOW_MS).is_ok());
}

#[test]
fn the_secured_validator_verifies_signature_kid_times_audience_and_issuer() {
    let signer = Signer::new("key-1");
    let keys = JwkSet::parse(json!({"keys": [signer.jwk()]}).to_string().as_bytes()).unwrap();
    let opts = secured_opts();
    let v = validate_secured(&signer.token(&good_claims()), &opts, &keys, NOW_MS).unwrap();
    assert_eq!(v.principal, "alice");
    assert_eq!(v.scope, vec!["read write"], "a scope string is kept whole");

    let refused = |token: &str, want: &str| {
        let r = validate_secured(token, &opts, &keys, NOW_MS).unwrap_err();
        assert_eq!(r.status, "invalid_token");
        assert!(r.reason.contains(want), "{want}: {}", r.reason);
    };
    // Another key, same kid: the signature does not verify.
    let impostor = Signer::new("key-1");
    refused(&impostor.token(&good_claims()), "signature is invalid");
    // A tampered payload.
    let good = signer.token(&good_claims());
    let mut pieces: Vec<&str> = good.split('.').collect();
    let forged = b64(&json!({"sub": "root", "iat": NOW_S, "exp": NOW_S + 600}));
    pieces[1] = &forged;
    refused(&pieces.join("."), "signature is invalid");
    // A kid the JWKS does not have.
    refused(
        &Signer::new("key-2").token(&good_claims()),
        "Unable to find a suitable verification key",
    );
    let mut c = good_claims();
    c["exp"] = json!(NOW_S - 31);
    refused(&signer.token(&c), "no longer valid");
    c["exp"] = json!(NOW_S - 29); // within the 30 s clock skew
    assert!(validate_secured(&signer.token(&c), &opts, &keys, NOW_MS).is_ok());
    let mut c = good_claims();
    c.as_object_mut().unwrap().remove("iat");
    refused(&signer.token(&c), "Issued At");
    let mut c = good_claims();
    c["aud"] = json!("somebody-else");
    refused(&signer.token(&c), "Audience");
    c.as_object_mut().unwrap().remove("aud");
    refused(&signer.token(&c), "Audience");
    let mut c = good_claims();
    c["iss"] = json!("https://evil");
    refused(&signer.token(&c), "Issuer");
    let mut c = good_claims();
    c.as_object_mut().unwrap().remove("sub");
    refused(&signer.token(&c), "sub value must be non-null");
    let mut c = good_claims();
    c["nbf"] = json!(NOW_S + 600);
    refused(&signer.token(&c), "not yet valid");
}

#[test]
fn alg_none_and_unknown_algorithms_are_refused_by_the_secured_validator() {
    let signer = Signer::new("key-1");
    let keys = JwkSet::parse(json!({"keys": [signer.jwk()]}).to_string().as_bytes()).unwrap();
    let none = unsecured_token(&good_claims());
    let r = validate_secured(&none, &secured_opts(), &keys, NOW_MS).unwrap_err();
    assert!(r.reason.contains("'none'"), "{}", r.reason);
    let hs = signer.sign(&json!({"alg": "HS256", "kid": "key-1"}), &good_claims());
    assert!(validate_secured(&hs, &secured_opts(), &keys, NOW_MS)
        .unwrap_err()
        .reason
        .contains("not accepted"));
    // An ES256 token against an RSA-only set finds no key.
    let rsa_only = JwkSet::parse(
        br#"{"keys":[{"kty":"RSA","kid":"key-1","n":"AQAB","e":"AQAB"},{"kty":"oct","k":"x"}]}"#,
    )
    .unwrap();
    assert_eq!(rsa_only.keys.len(), 1);
    assert!(validate_secured(
        &signer.token(&good_claims()),
        &secured_opts(),
        &rsa_only,
        NOW_MS
    )
    .is_err());
}

#[test]
fn a_refused_token_is_answered_with_the_json_error_then_fails_on_the_clients_ctrl_a() {
    let validator = OAuthValidator::Unsecured(unsecured_opts());
    let mut server = OAuthServer::new();
    let expired = unsecured_token(&json!({"sub": "alice", "exp": NOW_S - 10}));
    let first = format!("n,,\u{1}auth=Bearer {expired}\u{1}\u{1}");
    let challenge = server.on_token(first.as_bytes(), &validator, None, NOW_MS);
    assert_eq!(
        challenge,
        MechStep::Challenge(b"{\"status\":\"invalid_token\"}".to_vec())
    );
    match server.on_token(&[1], &validator, None, NOW_MS) {
        MechStep::Failed {
            client_message: Some(m),
            log,
        } => {
            assert_eq!(m, "{\"status\":\"invalid_token\"}");
            assert!(log.contains("Expiration Time"), "{log}");
        }
        other => panic!("{other:?}"),
    }

    let mut server = OAuthServer::new();
    let good = unsecured_token(&json!({"sub": "alice", "exp": NOW_S + 10}));
    let first = format!("n,a=bob,\u{1}auth=Bearer {good}\u{1}\u{1}");
    assert!(matches!(
        server.on_token(first.as_bytes(), &validator, None, NOW_MS),
        MechStep::Failed { client_message: Some(m), .. } if m.contains("different from the token's principal")
    ));
    let first = format!("n,a=alice,\u{1}auth=Bearer {good}\u{1}\u{1}");
    assert_eq!(
        server.on_token(first.as_bytes(), &validator, None, NOW_MS),
        MechStep::Complete {
            response: Vec::new(),
            authorization_id: "alice".into()
        }
    );
    assert_eq!(server.credential_expiry_ms(), Some((NOW_S + 10) * 1000));

    // A malformed first message gets Kafka's generic text (None).
    let mut server = OAuthServer::new();
    assert!(matches!(
        server.on_token(b"garbage", &validator, None, NOW_MS),
        MechStep::Failed {
            client_message: None,
            ..
        }
    ));
    // The secured validator with no keys loaded refuses (never fails open).
    let jwks = OAuthValidator::Jwks(secured_opts());
    let signed = Signer::new("k").token(&good_claims());
    let first = format!("n,,\u{1}auth=Bearer {signed}\u{1}\u{1}");
    assert!(matches!(
        OAuthServer::new().on_token(first.as_bytes(), &jwks, None, NOW_MS),
        MechStep::Challenge(_)
    ));
}

/// KIP-768's validator options of listener `l` as `ConfigurationUtils`
/// reads them from the broker's keys: a `file:` JWKS plus `keys`.
fn secured_from_keys(keys: &[(&str, &str)]) -> JwksOptions {
    let mut all: std::collections::BTreeMap<String, String> = keys
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    all.insert(
        "sasl.oauthbearer.jwks.endpoint.url".into(),
        "file:/unused".into(),
    );
    let entry = parse_single(&format!("{OAUTHBEARER_LOGIN_MODULE} required;")).unwrap();
    jwks_options(&|k| lookup(&all, "l", k), &entry).unwrap()
}

/// `sasl.oauthbearer.clock.skew.seconds` (`ValidatorAccessTokenValidator`:
/// jose4j's `setAllowedClockSkewInSeconds`): a token expired 10 s ago, or
/// valid only 10 s from now (nbf), is accepted with 30 s of skew and
/// refused with 0; the listener's value overrides the broker-wide one.
#[test]
fn the_clock_skew_key_widens_the_exp_and_nbf_checks() {
    let signer = Signer::new("key-1");
    let keys = JwkSet::parse(json!({"keys": [signer.jwk()]}).to_string().as_bytes()).unwrap();
    let expired = json!({"sub": "alice", "iat": NOW_S - 600, "exp": NOW_S - 10});
    let early = json!({"sub": "alice", "iat": NOW_S, "nbf": NOW_S + 10, "exp": NOW_S + 600});
    let lenient = secured_from_keys(&[("sasl.oauthbearer.clock.skew.seconds", "30")]);
    let strict = secured_from_keys(&[("sasl.oauthbearer.clock.skew.seconds", "0")]);
    let listener_strict = secured_from_keys(&[
        ("sasl.oauthbearer.clock.skew.seconds", "30"),
        ("listener.name.l.sasl.oauthbearer.clock.skew.seconds", "0"),
    ]);
    for claims in [&expired, &early] {
        let token = signer.token(claims);
        let v = validate_secured(&token, &lenient, &keys, NOW_MS).unwrap();
        assert_eq!(v.principal, "alice");
        for opts in [&strict, &listener_strict] {
            let r = validate_secured(&token, opts, &keys, NOW_MS).unwrap_err();
            assert_eq!(r.status, "invalid_token");
            assert!(
                r.reason.contains("no longer valid") || r.reason.contains("not yet valid"),
                "{}",
                r.reason
            );
        }
    }
    // 30 s is the whole allowance: 31 s late is refused even so.
    let later = json!({"sub": "alice", "iat": NOW_S - 600, "exp": NOW_S - 31});
    let r = validate_secured(&signer.token(&later), &lenient, &keys, NOW_MS).unwrap_err();
    assert!(r.reason.contains("30 seconds of leeway"), "{}", r.reason);
}

/// `sasl.oauthbearer.scope.claim.name` (`ValidatorAccessTokenValidator`,
/// `ClaimValidationUtils.validateScopes`): the scope is read from the
/// claim it names, the default `scope` claim then ignored, and an empty
/// value in the named claim refuses the token.
#[test]
fn the_scope_claim_name_key_picks_the_claim_the_scope_is_read_from() {
    let signer = Signer::new("key-1");
    let keys = JwkSet::parse(json!({"keys": [signer.jwk()]}).to_string().as_bytes()).unwrap();
    let claims = |scp: Value| {
        json!({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 600,
               "scp": scp, "scope": "from-the-default-claim"})
    };
    let named = secured_from_keys(&[("sasl.oauthbearer.scope.claim.name", "scp")]);
    let default = secured_from_keys(&[]);
    let token = signer.token(&claims(json!(["kafka.read", "kafka.write"])));
    let v = validate_secured(&token, &named, &keys, NOW_MS).unwrap();
    assert_eq!(v.scope, vec!["kafka.read", "kafka.write"]);
    let v = validate_secured(&token, &default, &keys, NOW_MS).unwrap();
    assert_eq!(v.scope, vec!["from-the-default-claim"]);
    // An empty value in the named claim; the default name never reads it.
    let token = signer.token(&claims(json!(["kafka.read", " "])));
    let r = validate_secured(&token, &named, &keys, NOW_MS).unwrap_err();
    assert_eq!(r.status, "invalid_token");
    assert!(
        r.reason.contains("scp value must not contain empty values"),
        "{}",
        r.reason
    );
    assert!(validate_secured(&token, &default, &keys, NOW_MS).is_ok());
    // The mechanism-prefixed listener key names it too.
    let prefixed = secured_from_keys(&[(
        "listener.name.l.oauthbearer.sasl.oauthbearer.scope.claim.name",
        "scp",
    )]);
    assert!(validate_secured(&token, &prefixed, &keys, NOW_MS).is_err());
}
