//! The committed seeds of the `sasl_exchange` fuzz target
//! (tests/fuzz/make_sasl_seeds.py) are whole exchanges: the good ones end
//! authenticated as alice, the bad ones fail. A seed that stopped reaching
//! the end (a format change) would leave the fuzzer starting short.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BytesMut;

use super::{AuthEnv, SaslAction, SaslAuthenticator};
use crate::config::sasl::{SaslMechanism, SaslSettings};
use crate::protocol::frame::take_frame;
use crate::sasl::scram::{credential, ScramCredential};

fn run(seed: &[u8]) -> Vec<SaslAction> {
    let creds = [
        credential(SaslMechanism::ScramSha256, "secret", b"fuzz-salt", 4096),
        credential(SaslMechanism::ScramSha512, "secret", b"fuzz-salt", 4096),
    ];
    let lookup = |user: &str, m: SaslMechanism| -> Option<ScramCredential> {
        match (user, m) {
            ("alice", SaslMechanism::ScramSha256) => Some(creds[0].clone()),
            ("alice", SaslMechanism::ScramSha512) => Some(creds[1].clone()),
            _ => None,
        }
    };
    let env = AuthEnv {
        scram: &lookup,
        server_nonce: "fuzzservernonce",
        now_ms: 0,
        jwks: None,
    };
    let mut auth = SaslAuthenticator::new(Arc::new(SaslSettings {
        listener: "SASL_PLAINTEXT".into(),
        mechanisms: SaslMechanism::ALL.to_vec(),
        plain_users: BTreeMap::from([("alice".to_string(), "secret".to_string())]),
        max_receive_size: 524_288,
        oauth: None,
        reauth_ms: BTreeMap::new(),
    }));
    let mut buf = BytesMut::from(seed);
    let mut actions = Vec::new();
    while let Some(frame) = take_frame(&mut buf, 524_288).expect("a seed's frames are whole") {
        actions.push(auth.on_frame(frame, &env));
    }
    assert!(buf.is_empty(), "bytes after the last frame");
    actions
}

macro_rules! seed {
    ($name:literal) => {
        include_bytes!(concat!("../../../tests/fuzz/seeds/sasl_exchange/", $name))
    };
}

#[test]
fn good_seeds_end_authenticated_as_alice() {
    for (name, seed) in [
        (
            "plain-v1-authenticate-v2",
            &seed!("plain-v1-authenticate-v2")[..],
        ),
        ("plain-v0-raw-token", seed!("plain-v0-raw-token")),
        (
            "scram-sha-256-authenticate-v2",
            seed!("scram-sha-256-authenticate-v2"),
        ),
        (
            "scram-sha-256-raw-tokens",
            seed!("scram-sha-256-raw-tokens"),
        ),
        (
            "scram-sha-512-authenticate-v2",
            seed!("scram-sha-512-authenticate-v2"),
        ),
        (
            "scram-sha-512-raw-tokens",
            seed!("scram-sha-512-raw-tokens"),
        ),
    ] {
        let actions = run(seed);
        match actions.last() {
            Some(SaslAction::Complete { principal, .. }) => {
                assert_eq!(principal, "User:alice", "{name}")
            }
            other => panic!("{name} ended with {other:?}"),
        }
    }
}

#[test]
fn bad_seeds_fail() {
    for (name, seed) in [
        ("plain-wrong-password", &seed!("plain-wrong-password")[..]),
        ("unknown-mechanism", seed!("unknown-mechanism")),
    ] {
        let actions = run(seed);
        assert!(
            matches!(actions.last(), Some(SaslAction::Fail { .. })),
            "{name} ended with {:?}",
            actions.last()
        );
    }
}
