//! One SASL connection's frames before authentication, as
//! `server::sasl_conn` feeds them to `sasl::authenticator` (Kafka's
//! `SaslServerAuthenticator`): ApiVersions, SaslHandshake v0–1, then the
//! tokens in SaslAuthenticate v0–2 or as raw frames (handshake v0), for
//! PLAIN and SCRAM-SHA-256/512 with a stored credential. Never panics nor
//! exceeds the memory bound; once the machine says it is done (complete,
//! failed or closed), it answers every further frame with a close.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shardlog::config::sasl::{SaslMechanism, SaslSettings};
use shardlog::protocol::frame::take_frame;
use shardlog::sasl::authenticator::{AuthEnv, SaslAction, SaslAuthenticator};
use shardlog::sasl::scram::{credential, ScramCredential};
use shardlog_fuzz::check_bounded;

/// Kafka's default `sasl.server.max.receive.size`.
const MAX_RECEIVE: i32 = 524_288;

/// The server nonce the seeds' SCRAM proofs were computed with
/// (tests/fuzz/make_sasl_seeds.py).
const SERVER_NONCE: &str = "fuzzservernonce";

/// alice's credentials: computed once (PBKDF2 with 4096 iterations per
/// execution would make the target slow); a global because libFuzzer's
/// entry point takes only the input.
fn credentials() -> &'static [ScramCredential; 2] {
    static CREDS: OnceLock<[ScramCredential; 2]> = OnceLock::new();
    CREDS.get_or_init(|| {
        [
            credential(SaslMechanism::ScramSha256, "secret", b"fuzz-salt", 4096),
            credential(SaslMechanism::ScramSha512, "secret", b"fuzz-salt", 4096),
        ]
    })
}

fn settings() -> Arc<SaslSettings> {
    Arc::new(SaslSettings {
        listener: "SASL_PLAINTEXT".into(),
        mechanisms: vec![
            SaslMechanism::Plain,
            SaslMechanism::ScramSha256,
            SaslMechanism::ScramSha512,
        ],
        plain_users: BTreeMap::from([("alice".to_string(), "secret".to_string())]),
        max_receive_size: MAX_RECEIVE,
        oauth: None,
        reauth_ms: BTreeMap::new(),
    })
}

fuzz_target!(|data: &[u8]| {
    check_bounded(data.len(), || {
        let lookup = |user: &str, m: SaslMechanism| -> Option<ScramCredential> {
            if user != "alice" {
                return None;
            }
            match m {
                SaslMechanism::ScramSha256 => Some(credentials()[0].clone()),
                SaslMechanism::ScramSha512 => Some(credentials()[1].clone()),
                _ => None,
            }
        };
        let env = AuthEnv {
            scram: &lookup,
            server_nonce: SERVER_NONCE,
            now_ms: 0,
            jwks: None,
        };
        let mut auth = SaslAuthenticator::new(settings());
        let mut buf = BytesMut::from(data);
        while let Ok(Some(frame)) = take_frame(&mut buf, MAX_RECEIVE as usize) {
            let was_done = auth.is_done();
            let action = auth.on_frame(frame, &env);
            if was_done {
                assert!(
                    matches!(action, SaslAction::Close(_)),
                    "a frame after authentication ended was answered: {action:?}"
                );
            }
            if let SaslAction::Complete { principal, .. } = &action {
                assert_eq!(principal, "User:alice", "only alice has credentials");
            }
        }
    });
});
