//! `[io]` The load generator's SASL login (`--security-protocol
//! SASL_PLAINTEXT|SASL_SSL`, `--sasl-mechanism`, `--sasl-username`,
//! `--sasl-password`, librdkafka's `sasl.mechanism`, `sasl.username`,
//! `sasl.password`): right after the transport connects (TLS handshake
//! included), SaslHandshake v1 names the mechanism and SaslAuthenticate v2
//! carries the tokens (KIP-152), as Kafka's `SaslClientAuthenticator` sends
//! them; Kafka's `SaslServerAuthenticator` takes SaslHandshake first or
//! after ApiVersions. The tokens are `sasl::client`'s (PLAIN,
//! SCRAM-SHA-256/512); OAUTHBEARER is not spoken.

use std::io::Write;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Request, StrBytes};

use super::frame::{correlation_id, decode_response, encode_frame, read_frame};
use super::sasl_login::SaslLogin;
use super::tls::{Security, Stream};
use crate::config::sasl::SaslMechanism;
use crate::io::broker_stream::scram_nonce;
use crate::sasl::client::{plain_token, ScramClient};

/// Connects to `addr` with `security`'s transport and, for SASL_*, logs in
/// before the stream is handed out.
pub fn connect(security: &Security, addr: &str, timeout: Duration) -> Result<Stream> {
    let mut stream = security.connect(addr, timeout)?;
    if let Some(login) = security.sasl() {
        stream.set_read_timeout(Some(timeout))?;
        authenticate(&mut Exchange::new(&mut stream), login)
            .with_context(|| format!("SASL login ({login:?}) with {addr}"))?;
    }
    Ok(stream)
}

/// The login's requests, one at a time, on the bare stream.
struct Exchange<'a> {
    stream: &'a mut Stream,
    buf: BytesMut,
    correlation_id: i32,
    client_id: StrBytes,
}

impl<'a> Exchange<'a> {
    fn new(stream: &'a mut Stream) -> Self {
        Self {
            stream,
            buf: BytesMut::with_capacity(512),
            correlation_id: 0,
            client_id: StrBytes::from_static_str("shardlog-loadgen"),
        }
    }

    fn call<R: Request>(&mut self, req: &R, version: i16) -> Result<R::Response> {
        self.correlation_id += 1;
        encode_frame(
            &mut self.buf,
            req,
            version,
            self.correlation_id,
            &self.client_id,
        )?;
        self.stream.write_all(&self.buf)?;
        let frame = read_frame(self.stream)?;
        if correlation_id(&frame) != Some(self.correlation_id) {
            bail!("response has the wrong correlation id");
        }
        decode_response::<R>(frame, version)
    }
}

/// Logs in; an error names the broker's refusal (its `error_message`).
fn authenticate(conn: &mut Exchange<'_>, login: &SaslLogin) -> Result<()> {
    let mechanism = login.mechanism.name();
    let req = SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
    let resp = conn.call(&req, 1).context("SaslHandshake")?;
    if resp.error_code != 0 {
        let offered: Vec<&str> = resp.mechanisms.iter().map(|m| m.as_str()).collect();
        bail!(
            "SaslHandshake {mechanism}: error {} (the broker offers {offered:?})",
            resp.error_code
        );
    }
    match login.mechanism {
        SaslMechanism::Plain => {
            round(conn, plain_token(&login.username, &login.password))?;
        }
        m @ (SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512) => {
            let mut scram = ScramClient::new(m, &login.username, &login.password, &scram_nonce()?);
            let server_first = round(conn, scram.first())?;
            let client_final = scram
                .on_server_first(&server_first)
                .map_err(|e| anyhow!(e))?;
            let server_final = round(conn, client_final)?;
            scram
                .on_server_final(&server_final)
                .map_err(|e| anyhow!(e))?;
        }
        SaslMechanism::OAuthBearer => bail!("OAUTHBEARER is not spoken by the load generator"),
    }
    Ok(())
}

/// One SaslAuthenticate v2 round: sends `token`, returns the broker's.
fn round(conn: &mut Exchange<'_>, token: Vec<u8>) -> Result<Vec<u8>> {
    let req = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
    let resp = conn.call(&req, 2).context("SaslAuthenticate")?;
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
