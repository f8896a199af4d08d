//! `[pure]` SASL/PLAIN (RFC 4616) as Kafka 3.9's
//! `clients/.../security/plain/internals/PlainSaslServer.java` and its
//! default `PlainServerCallbackHandler` serve it: the token
//! `authzid NUL authcid NUL passwd`, the password checked against the
//! JAAS option `user_<name>` in constant time, every rejection a
//! `SaslAuthenticationException` whose message reaches the client.

use std::collections::BTreeMap;

use super::scram::constant_time_eq;
use super::MechStep;

fn refuse(message: &str, log: String) -> MechStep {
    MechStep::Failed {
        client_message: Some(message.to_owned()),
        log,
    }
}

/// The one PLAIN token of an exchange, checked against `users`
/// (user → password).
pub fn on_token(token: &[u8], users: &BTreeMap<String, String>) -> MechStep {
    let Ok(text) = std::str::from_utf8(token) else {
        return refuse(
            "Authentication failed: Invalid SASL/PLAIN response",
            "PLAIN token is not UTF-8".into(),
        );
    };
    // PlainSaslServer.extractTokens: split on NUL keeping empty parts.
    let parts: Vec<&str> = text.split('\u{0}').collect();
    if parts.len() != 3 {
        return refuse(
            &format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                parts.len()
            ),
            "malformed PLAIN token".into(),
        );
    }
    let (authzid, username, password) = (parts[0], parts[1], parts[2]);
    if username.is_empty() {
        return refuse(
            "Authentication failed: username not specified",
            "PLAIN without a user name".into(),
        );
    }
    if password.is_empty() {
        return refuse(
            "Authentication failed: password not specified",
            format!("PLAIN without a password for user {username}"),
        );
    }
    // PlainServerCallbackHandler.authenticate: an unknown user compares
    // against nothing and fails like a wrong password.
    let known = users
        .get(username)
        .is_some_and(|expected| constant_time_eq(expected.as_bytes(), password.as_bytes()));
    if !known {
        return refuse(
            "Authentication failed: Invalid username or password",
            format!("invalid user name or password for user {username}"),
        );
    }
    if !authzid.is_empty() && authzid != username {
        return refuse(
            "Authentication failed: Client requested an authorization id that is different \
             from username",
            format!("authorization id {authzid:?} differs from user {username:?}"),
        );
    }
    MechStep::Complete {
        response: Vec::new(),
        authorization_id: username.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> BTreeMap<String, String> {
        [("alice".to_owned(), "alice-secret".to_owned())]
            .into_iter()
            .collect()
    }

    fn message(step: MechStep) -> String {
        match step {
            MechStep::Failed {
                client_message: Some(m),
                ..
            } => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_right_password_authenticates_and_every_wrong_token_says_why() {
        assert!(matches!(
            on_token(b"\0alice\0alice-secret", &users()),
            MechStep::Complete { authorization_id, response } if authorization_id == "alice" && response.is_empty()
        ));
        assert!(matches!(
            on_token(b"alice\0alice\0alice-secret", &users()),
            MechStep::Complete { .. }
        ));
        for (token, want) in [
            (&b"\0alice\0wrong"[..], "Invalid username or password"),
            (b"\0bob\0alice-secret", "Invalid username or password"),
            (b"\0\0x", "username not specified"),
            (b"\0alice\0", "password not specified"),
            (b"alice-secret", "expected 3 tokens, got 1"),
            (b"a\0b\0c\0d", "expected 3 tokens, got 4"),
            (
                b"bob\0alice\0alice-secret",
                "authorization id that is different",
            ),
        ] {
            let m = message(on_token(token, &users()));
            assert!(m.contains(want), "{token:?}: {m}");
        }
    }
}
