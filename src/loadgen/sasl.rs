//! `[io]` The load generator's SASL login (`--security-protocol
//! SASL_PLAINTEXT|SASL_SSL`, `--sasl-mechanism`, `--sasl-username`,
//! `--sasl-password`, librdkafka's `sasl.mechanism`, `sasl.username`,
//! `sasl.password`): after ApiVersions, SaslHandshake v1 names the
//! mechanism and SaslAuthenticate v2 carries the tokens (KIP-152), as
//! Kafka's `SaslClientAuthenticator` sends them. The tokens are
//! `sasl::client`'s (PLAIN, SCRAM-SHA-256/512); OAUTHBEARER is not spoken.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;

use super::client::Connection;
use crate::config::sasl::SaslMechanism;
use crate::sasl::client::{plain_token, ScramClient};

/// Who the load generator logs in as.
#[derive(Clone)]
pub struct SaslLogin {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    /// The password is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} as {:?}", self.mechanism.name(), self.username)
    }
}

impl SaslLogin {
    /// `--sasl-mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; librdkafka's
    /// default is GSSAPI, which the load generator does not speak, so the
    /// flag is required) with the user name and password.
    pub fn new(
        mechanism: Option<&str>,
        username: Option<&str>,
        password: Option<&str>,
    ) -> Result<Self> {
        let name = mechanism.ok_or_else(|| {
            anyhow!("SASL needs --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
        })?;
        let mechanism = match SaslMechanism::from_name(&name.to_ascii_uppercase()) {
            Some(SaslMechanism::OAuthBearer) | None => bail!(
                "--sasl-mechanism {name:?}: the load generator speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"
            ),
            Some(m) => m,
        };
        let (Some(username), Some(password)) = (username, password) else {
            bail!("SASL needs --sasl-username and --sasl-password");
        };
        Ok(Self {
            mechanism,
            username: username.to_owned(),
            password: password.to_owned(),
        })
    }
}

/// Logs in on `conn` (ApiVersions already done). An error names the
/// broker's refusal (its `error_message`).
pub fn authenticate(conn: &mut Connection, login: &SaslLogin, timeout: Duration) -> Result<()> {
    let mechanism = login.mechanism.name();
    let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    let resp = conn.call_sync(&req, 1, timeout).context("SaslHandshake")?;
    if resp.error_code != 0 {
        let offered: Vec<&str> = resp.mechanisms.iter().map(|m| m.as_str()).collect();
        bail!(
            "SaslHandshake {mechanism}: error {} (the broker offers {offered:?})",
            resp.error_code
        );
    }
    match login.mechanism {
        SaslMechanism::Plain => {
            round(conn, plain_token(&login.username, &login.password), timeout)?;
        }
        m @ (SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512) => {
            let mut scram = ScramClient::new(m, &login.username, &login.password, &nonce()?);
            let server_first = round(conn, scram.first(), timeout)?;
            let client_final = scram
                .on_server_first(&server_first)
                .map_err(|e| anyhow!(e))?;
            let server_final = round(conn, client_final, timeout)?;
            scram
                .on_server_final(&server_final)
                .map_err(|e| anyhow!(e))?;
        }
        SaslMechanism::OAuthBearer => bail!("OAUTHBEARER is not spoken by the load generator"),
    }
    Ok(())
}

/// One SaslAuthenticate v2 round: sends `token`, returns the broker's.
fn round(conn: &mut Connection, token: Vec<u8>, timeout: Duration) -> Result<Vec<u8>> {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let resp = conn
        .call_sync(&req, 2, timeout)
        .context("SaslAuthenticate")?;
    if resp.error_code != 0 {
        let message = resp
            .error_message
            .as_ref()
            .map(|m| m.as_str())
            .unwrap_or("");
        bail!(
            "SASL authentication failed: error {} {message}",
            resp.error_code
        );
    }
    Ok(resp.auth_bytes.to_vec())
}

/// A SCRAM client nonce: 26 printable characters from the system's
/// randomness (no `,`, as RFC 5802 requires).
fn nonce() -> Result<String> {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut bytes = [0u8; 26];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| anyhow!("no randomness for the SCRAM nonce"))?;
    Ok(bytes
        .iter()
        .map(|b| DIGITS[usize::from(*b) % 36] as char)
        .collect())
}
