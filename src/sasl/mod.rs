//! `[pure]` SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners
//! (Kafka 3.9's `SaslServerAuthenticator`, KIP-152): the per-connection
//! state machine that reads the requests allowed before authentication
//! ([`authenticator`]), and the mechanisms it runs: PLAIN ([`plain`]) and
//! SCRAM-SHA-256 / SCRAM-SHA-512 ([`scram`]), OAUTHBEARER ([`oauthbearer`]),
//! and the client side of PLAIN and SCRAM ([`client`]) and of OAUTHBEARER
//! ([`oauth_login`]: the broker's token and its refresh). Bytes in, bytes and an
//! outcome out; the connection code (`server::sasl_conn`) only moves them
//! and supplies randomness and the stored SCRAM credentials.
//!
//! The listener's settings (enabled mechanisms, PLAIN users, size limit)
//! are `config::sasl::SaslSettings`.

pub mod authenticator;
pub mod client;
pub mod oauth_login;
pub mod oauthbearer;
pub mod plain;
pub mod scram;

/// What a mechanism answers to one client token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MechStep {
    /// Send this challenge; the exchange goes on.
    Challenge(Vec<u8>),
    /// Authenticated as `authorization_id`; `response` is the last token
    /// to send (empty for PLAIN).
    Complete {
        response: Vec<u8>,
        authorization_id: String,
    },
    /// Refused. `client_message` is a `SaslAuthenticationException`'s
    /// message, sent to the client; `None` gets Kafka's generic text (so
    /// a client cannot learn whether a user exists). `log` is for the
    /// broker's warning (never a password).
    Failed {
        client_message: Option<String>,
        log: String,
    },
}
