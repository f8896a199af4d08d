//! `[pure]` The SASL server state machine driven with real request bytes.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use kafka_protocol::protocol::{Decodable, Encodable};

use super::*;
use crate::config::sasl::oauth::{OAuthValidator, UnsecuredOptions};
use crate::sasl::scram;

fn settings(mechanisms: Vec<SaslMechanism>) -> Arc<SaslSettings> {
    Arc::new(SaslSettings {
        listener: "SASL_PLAINTEXT".into(),
        mechanisms,
        plain_users: [("alice".to_owned(), "alice-secret".to_owned())]
            .into_iter()
            .collect::<BTreeMap<_, _>>(),
        max_receive_size: 524_288,
        oauth: Some(OAuthValidator::Unsecured(UnsecuredOptions {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: Vec::new(),
            clock_skew_ms: 0,
        })),
        reauth_ms: [
            (SaslMechanism::Plain, 60_000),
            (SaslMechanism::OAuthBearer, 60_000),
        ]
        .into_iter()
        .collect(),
    })
}

fn request<T: Encodable>(key: ApiKey, version: i16, body: &T) -> Bytes {
    let mut h = kafka_protocol::messages::RequestHeader::default();
    h.request_api_key = key as i16;
    h.request_api_version = version;
    h.correlation_id = 7;
    h.client_id = Some(StrBytes::from_static_str("test"));
    h.request_api_version = version;
    let mut buf = BytesMut::new();
    // Header version as the codec assigns it for (key, version).
    let hv = key.request_header_version(version);
    h.encode(&mut buf, hv).unwrap();
    body.encode(&mut buf, version).unwrap();
    buf.freeze()
}

fn handshake(mechanism: &'static str, version: i16) -> Bytes {
    request(
        ApiKey::SaslHandshake,
        version,
        &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)),
    )
}

fn authenticate(token: &[u8], version: i16) -> Bytes {
    request(
        ApiKey::SaslAuthenticate,
        version,
        &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token)),
    )
}

/// The body of a framed response (size prefix and header v0/v1 removed).
fn body_of(frame: &Bytes, header_len: usize) -> Bytes {
    frame.slice(4 + header_len..)
}

fn no_scram(_: &str, _: SaslMechanism) -> Option<scram::ScramCredential> {
    None
}

fn env<'a>(
    scram: &'a dyn Fn(&str, SaslMechanism) -> Option<scram::ScramCredential>,
) -> AuthEnv<'a> {
    AuthEnv {
        scram,
        server_nonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        now_ms: NOW_MS,
        jwks: None,
    }
}

const NOW_MS: i64 = 1_800_000_000_000;

#[test]
fn plain_over_sasl_authenticate_after_api_versions_authenticates_the_user() {
    let mut a = SaslAuthenticator::new(settings(vec![
        SaslMechanism::ScramSha512,
        SaslMechanism::Plain,
    ]));
    let e = env(&no_scram);
    let versions = request(
        ApiKey::ApiVersions,
        0,
        &kafka_protocol::messages::ApiVersionsRequest::default(),
    );
    assert!(matches!(
        a.on_frame(versions, &e),
        SaslAction::ApiVersions { .. }
    ));
    let SaslAction::Respond(r) = a.on_frame(handshake("PLAIN", 1), &e) else {
        panic!("handshake refused")
    };
    let resp = SaslHandshakeResponse::decode(&mut body_of(&r, 4), 1).unwrap();
    assert_eq!(resp.error_code, 0);
    let names: Vec<String> = resp.mechanisms.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["SCRAM-SHA-512", "PLAIN"]);
    match a.on_frame(authenticate(b"\0alice\0alice-secret", 2), &e) {
        SaslAction::Complete {
            respond, principal, ..
        } => {
            assert_eq!(principal, "User:alice");
            // v2 is flexible: response header v1 (correlation id + tags).
            let resp = SaslAuthenticateResponse::decode(&mut body_of(&respond, 5), 2).unwrap();
            assert_eq!((resp.error_code, resp.auth_bytes.len()), (0, 0));
        }
        other => panic!("{other:?}"),
    }
    assert!(a.is_done());
}

#[test]
fn a_wrong_password_fails_with_sasl_authentication_failed_and_its_message() {
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    let e = env(&no_scram);
    assert!(matches!(
        a.on_frame(handshake("PLAIN", 1), &e),
        SaslAction::Respond(_)
    ));
    match a.on_frame(authenticate(b"\0alice\0nope", 1), &e) {
        SaslAction::Fail {
            respond: Some(r),
            reason,
        } => {
            assert!(!reason.contains("nope"), "{reason}");
            let resp = SaslAuthenticateResponse::decode(&mut body_of(&r, 4), 1).unwrap();
            assert_eq!(resp.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.0);
            assert_eq!(
                resp.error_message.as_deref(),
                Some("Authentication failed: Invalid username or password")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unsupported_mechanism_gets_the_enabled_list_and_fails() {
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::ScramSha256]));
    match a.on_frame(handshake("GSSAPI", 1), &env(&no_scram)) {
        SaslAction::Fail {
            respond: Some(r), ..
        } => {
            let resp = SaslHandshakeResponse::decode(&mut body_of(&r, 4), 1).unwrap();
            assert_eq!(resp.error_code, ErrorCode::UNSUPPORTED_SASL_MECHANISM.0);
            assert_eq!(resp.mechanisms.len(), 1);
            assert_eq!(resp.mechanisms[0].to_string(), "SCRAM-SHA-256");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_before_authentication_close_the_connection() {
    let e = env(&no_scram);
    let metadata = request(
        ApiKey::Metadata,
        1,
        &kafka_protocol::messages::MetadataRequest::default(),
    );
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    assert!(matches!(
        a.on_frame(metadata.clone(), &e),
        SaslAction::Close(_)
    ));
    // A second ApiVersions.
    let versions = request(
        ApiKey::ApiVersions,
        0,
        &kafka_protocol::messages::ApiVersionsRequest::default(),
    );
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    assert!(matches!(
        a.on_frame(versions.clone(), &e),
        SaslAction::ApiVersions { .. }
    ));
    assert!(matches!(a.on_frame(versions, &e), SaslAction::Close(_)));
    // After the handshake, anything but SaslAuthenticate.
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    assert!(matches!(
        a.on_frame(handshake("PLAIN", 1), &e),
        SaslAction::Respond(_)
    ));
    assert!(matches!(a.on_frame(metadata, &e), SaslAction::Close(_)));
    // Garbage.
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    assert!(matches!(
        a.on_frame(Bytes::from_static(b"\x01"), &e),
        SaslAction::Close(_)
    ));
}

#[test]
fn handshake_v0_carries_raw_tokens() {
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    let e = env(&no_scram);
    assert!(matches!(
        a.on_frame(handshake("PLAIN", 0), &e),
        SaslAction::Respond(_)
    ));
    match a.on_frame(Bytes::from_static(b"\0alice\0alice-secret"), &e) {
        SaslAction::Complete {
            respond, principal, ..
        } => {
            assert_eq!(principal, "User:alice");
            assert_eq!(&respond[..], &[0, 0, 0, 0]);
        }
        other => panic!("{other:?}"),
    }
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    assert!(matches!(
        a.on_frame(handshake("PLAIN", 0), &e),
        SaslAction::Respond(_)
    ));
    assert!(matches!(
        a.on_frame(Bytes::from_static(b"\0alice\0x"), &e),
        SaslAction::Fail { respond: None, .. }
    ));
}

#[test]
fn scram_sha_256_runs_the_rfc_7677_exchange_through_sasl_authenticate() {
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let cred = scram::credential(SaslMechanism::ScramSha256, "pencil", &salt, 4096);
    let lookup = move |u: &str, m: SaslMechanism| {
        (u == "user" && m == SaslMechanism::ScramSha256).then(|| cred.clone())
    };
    let e = env(&lookup);
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::ScramSha256]));
    assert!(matches!(
        a.on_frame(handshake("SCRAM-SHA-256", 1), &e),
        SaslAction::Respond(_)
    ));
    let SaslAction::Respond(r) =
        a.on_frame(authenticate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", 1), &e)
    else {
        panic!("first message refused")
    };
    let resp = SaslAuthenticateResponse::decode(&mut body_of(&r, 4), 1).unwrap();
    assert!(resp
        .auth_bytes
        .starts_with(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s="));
    let last = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    match a.on_frame(authenticate(last, 1), &e) {
        SaslAction::Complete {
            respond, principal, ..
        } => {
            assert_eq!(principal, "User:user");
            let resp = SaslAuthenticateResponse::decode(&mut body_of(&respond, 4), 1).unwrap();
            assert_eq!(
                &resp.auth_bytes[..],
                b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
            );
        }
        other => panic!("{other:?}"),
    }
}

proptest::proptest! {
    #[test]
    fn arbitrary_frames_never_panic(frames in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..64), 1..5)) {
        let mut a = SaslAuthenticator::new(settings(SaslMechanism::ALL.to_vec()));
        let e = env(&no_scram);
        for f in frames {
            let _ = a.on_frame(Bytes::from(f), &e);
        }
    }
}

fn unsecured_first_message(sub: &str, exp_s: i64) -> Vec<u8> {
    let enc = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let token = format!(
        "{}.{}.",
        enc(serde_json::json!({"alg": "none"})),
        enc(serde_json::json!({"sub": sub, "exp": exp_s}))
    );
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

fn lifetime_of(action: &SaslAction) -> Option<i64> {
    match action {
        SaslAction::Complete {
            session_lifetime_ms,
            ..
        } => *session_lifetime_ms,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_session_lifetime_is_the_smaller_of_max_reauth_and_the_tokens_life() {
    let e = env(&no_scram);
    // A token living 30 s < connections.max.reauth.ms (60 s).
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::OAuthBearer]));
    assert!(matches!(
        a.on_frame(handshake("OAUTHBEARER", 1), &e),
        SaslAction::Respond(_)
    ));
    let done = a.on_frame(
        authenticate(&unsecured_first_message("alice", NOW_MS / 1000 + 30), 1),
        &e,
    );
    assert_eq!(lifetime_of(&done), Some(30_000));
    let SaslAction::Complete {
        respond, principal, ..
    } = done
    else {
        unreachable!()
    };
    assert_eq!(principal, "User:alice");
    let resp = SaslAuthenticateResponse::decode(&mut body_of(&respond, 4), 1).unwrap();
    assert_eq!(resp.session_lifetime_ms, 30_000);
    // A token living an hour: connections.max.reauth.ms wins.
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::OAuthBearer]));
    a.on_frame(handshake("OAUTHBEARER", 1), &e);
    let done = a.on_frame(
        authenticate(&unsecured_first_message("alice", NOW_MS / 1000 + 3600), 1),
        &e,
    );
    assert_eq!(lifetime_of(&done), Some(60_000));
    // SCRAM without connections.max.reauth.ms: no session limit.
    let mut a = SaslAuthenticator::new(settings(vec![SaslMechanism::Plain]));
    let mut s = (*a.settings).clone();
    s.reauth_ms.clear();
    a.settings = Arc::new(s);
    a.on_frame(handshake("PLAIN", 1), &e);
    let done = a.on_frame(authenticate(b"\0alice\0alice-secret", 1), &e);
    assert_eq!(lifetime_of(&done), None);
}

#[test]
fn reauthentication_keeps_the_mechanism_and_the_principal() {
    let e = env(&no_scram);
    let s = settings(vec![SaslMechanism::Plain, SaslMechanism::OAuthBearer]);
    // Same principal: a new lifetime, no ApiVersions needed.
    let mut a =
        SaslAuthenticator::reauthenticate(s.clone(), SaslMechanism::OAuthBearer, "User:alice");
    assert!(matches!(
        a.on_frame(handshake("OAUTHBEARER", 1), &e),
        SaslAction::Respond(_)
    ));
    let done = a.on_frame(
        authenticate(&unsecured_first_message("alice", NOW_MS / 1000 + 3600), 2),
        &e,
    );
    assert_eq!(lifetime_of(&done), Some(60_000));
    // Another principal is refused with Kafka's message.
    let mut a =
        SaslAuthenticator::reauthenticate(s.clone(), SaslMechanism::OAuthBearer, "User:alice");
    a.on_frame(handshake("OAUTHBEARER", 1), &e);
    match a.on_frame(
        authenticate(&unsecured_first_message("mallory", NOW_MS / 1000 + 3600), 1),
        &e,
    ) {
        SaslAction::Fail {
            respond: Some(r), ..
        } => {
            let resp = SaslAuthenticateResponse::decode(&mut body_of(&r, 4), 1).unwrap();
            assert_eq!(resp.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.0);
            assert_eq!(
                resp.error_message.unwrap().to_string(),
                "Cannot change principals during re-authentication from User.alice: User.mallory"
            );
        }
        other => panic!("{other:?}"),
    }
    // Another mechanism: the handshake is answered, the token refused.
    let mut a =
        SaslAuthenticator::reauthenticate(s.clone(), SaslMechanism::OAuthBearer, "User:alice");
    assert!(matches!(
        a.on_frame(handshake("PLAIN", 1), &e),
        SaslAction::Respond(_)
    ));
    match a.on_frame(authenticate(b"\0alice\0alice-secret", 1), &e) {
        SaslAction::Fail { reason, .. } => assert!(
            reason.contains("not supported for re-authentication of mechanism 'OAUTHBEARER'"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    // No ApiVersions during re-authentication.
    let mut a = SaslAuthenticator::reauthenticate(s, SaslMechanism::Plain, "User:alice");
    let versions = request(
        ApiKey::ApiVersions,
        0,
        &kafka_protocol::messages::ApiVersionsRequest::default(),
    );
    assert!(matches!(a.on_frame(versions, &e), SaslAction::Close(_)));
}
