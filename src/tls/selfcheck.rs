//! The inter-broker listener's self-check (Kafka 3.9,
//! `clients/.../security/ssl/SslFactory.java`, `SslEngineValidator`): a
//! client built from the listener's settings must complete a TLS handshake
//! with a server built from the same settings, else the start fails — in
//! practice the truststore must trust the broker's own certificate. The
//! handshake runs in memory: rustls connections exchange byte buffers, no
//! socket. As in Kafka's validator, the host name is not verified
//! (`createClientSslEngine("", 0, "")`); the chain is.

use std::sync::Arc;

use rustls::{CipherSuite, ClientConfig, ClientConnection, ProtocolVersion};
use rustls::{ServerConfig, ServerConnection};
use rustls_pki_types::{CertificateDer, ServerName};

use super::build;
use super::settings::SslSettings;
use super::stores;
use crate::config::ConfigError;

/// Check that `s`'s client side can handshake with its server side;
/// `host` is the name the client asks for (the advertised host).
pub fn self_check(s: &SslSettings, host: &str) -> Result<(), ConfigError> {
    check(s, host).map_err(|e| s.name_error(e))
}

fn check(s: &SslSettings, host: &str) -> Result<(), ConfigError> {
    let keystore = stores::load_keystore(s)?;
    let truststore = stores::load_truststore(s)?;
    let server = build::server_config_from(s, keystore.as_ref(), truststore.as_deref())?;
    let trust = match truststore {
        Some(certs) => certs,
        None => stores::system_roots()?,
    };
    let client = build::client_config_from(s, keystore.as_ref(), &trust, false)?;
    handshake(client, server, host)
        .map(|_| ())
        .map_err(|reason| ConfigError::InvalidValue {
            key: if s.truststore_certificates.is_some() {
                "ssl.truststore.certificates".into()
            } else {
                "ssl.truststore.location".into()
            },
            value: s.truststore_location.clone().unwrap_or_default(),
            reason: format!(
            "listener {}: a client built from its SSL settings cannot complete a TLS handshake \
             with its server (the truststore must trust the broker's own certificate): {reason}",
            s.listener
        ),
        })
}

/// What a finished in-memory handshake agreed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    pub version: Option<ProtocolVersion>,
    pub suite: Option<CipherSuite>,
    /// The leaf certificate the server presented.
    pub server_certificate: Option<CertificateDer<'static>>,
    /// The leaf certificate the client presented (and the server verified).
    pub client_certificate: Option<CertificateDer<'static>>,
}

/// Drive a client and a server connection against each other through
/// in-memory buffers until both finish the handshake (or one fails).
pub fn handshake(
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    host: &str,
) -> Result<Negotiated, String> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host:?} is not a valid server name: {e}"))?;
    let mut c = ClientConnection::new(client, name).map_err(|e| format!("client: {e}"))?;
    let mut s = ServerConnection::new(server).map_err(|e| format!("server: {e}"))?;
    // A TLS 1.2 or 1.3 handshake needs at most a few flights; the bound
    // stops a stuck exchange.
    for _ in 0..16 {
        if !c.is_handshaking() && !s.is_handshaking() && !c.wants_write() && !s.wants_write() {
            let leaf =
                |certs: Option<&[CertificateDer<'static>]>| certs.and_then(|c| c.first()).cloned();
            return Ok(Negotiated {
                version: c.protocol_version(),
                suite: c.negotiated_cipher_suite().map(|s| s.suite()),
                server_certificate: leaf(c.peer_certificates()),
                client_certificate: leaf(s.peer_certificates()),
            });
        }
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf)
                .map_err(|e| format!("client write: {e}"))?;
        }
        let mut rest = buf.as_slice();
        loop {
            if !rest.is_empty() {
                s.read_tls(&mut rest)
                    .map_err(|e| format!("server read: {e}"))?;
            }
            s.process_new_packets()
                .map_err(|e| format!("server: {e}"))?;
            if rest.is_empty() {
                break;
            }
        }
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf)
                .map_err(|e| format!("server write: {e}"))?;
        }
        let mut rest = buf.as_slice();
        loop {
            if !rest.is_empty() {
                c.read_tls(&mut rest)
                    .map_err(|e| format!("client read: {e}"))?;
            }
            c.process_new_packets()
                .map_err(|e| format!("client: {e}"))?;
            if rest.is_empty() {
                break;
            }
        }
    }
    Err("the handshake did not finish".into())
}
