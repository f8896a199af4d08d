//! rustls server and client configurations from [`SslSettings`], as
//! Kafka's `DefaultSslEngineFactory.createSslEngine` configures a JSSE
//! engine: `ssl.enabled.protocols`, `ssl.cipher.suites`, `ssl.client.auth`
//! (need / want / none) on the server side, the truststore and
//! `ssl.endpoint.identification.algorithm` on the client side.
//!
//! The crypto provider is always ring, named explicitly
//! (`rustls::crypto::ring::default_provider()`), never the process default.
//! Both sides set `enable_secret_extraction` so the connection layer can
//! hand an established session to kernel TLS. No ALPN (Kafka sets none).
//! Loading the stores reads files ([`super::stores`]); the rest is pure.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, CipherSuite, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls::{ClientConfig, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use super::settings::{ClientAuth, SslSettings};
use super::stores::{self, KeyMaterial};
use crate::config::ConfigError;

fn err(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// Java/IANA cipher suite names (`ssl.cipher.suites`) and the rustls suite
/// each one is. These are every suite the ring provider implements; any
/// other Java name (CBC, DHE, RSA key exchange, ...) is refused.
pub const CIPHER_SUITES: &[(&str, CipherSuite)] = &[
    (
        "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The ring provider restricted to `ssl.cipher.suites` (all of ring's
/// suites when empty, the JVM-defaults case).
pub fn provider(s: &SslSettings) -> Result<CryptoProvider, ConfigError> {
    // Deprecated in rustls 0.23.4x only because ring has no post-quantum
    // key exchange; ring is the project's provider (Cargo.toml says why).
    #[allow(
        deprecated,
        reason = "ring is the chosen provider; it lacks ML-KEM only"
    )]
    let mut provider = rustls::crypto::ring::default_provider();
    if s.cipher_suites.is_empty() {
        return Ok(provider);
    }
    let mut wanted = Vec::new();
    for name in &s.cipher_suites {
        let Some((_, suite)) = CIPHER_SUITES.iter().find(|(n, _)| n == name) else {
            let supported: Vec<&str> = CIPHER_SUITES.iter().map(|(n, _)| *n).collect();
            return Err(err(
                "ssl.cipher.suites",
                name,
                format!(
                    "cipher suite not supported by shardlog's TLS engine; supported: {}",
                    supported.join(",")
                ),
            ));
        };
        wanted.push(*suite);
    }
    // Java orders by its own preference, not the list's; rustls' order is
    // kept likewise (the server picks by its preference).
    provider
        .cipher_suites
        .retain(|s| wanted.contains(&s.suite()));
    Ok(provider)
}

/// `ssl.protocol` and `ssl.enabled.protocols` → the rustls versions.
pub fn protocol_versions(
    s: &SslSettings,
) -> Result<Vec<&'static SupportedProtocolVersion>, ConfigError> {
    // SSLContext.getInstance(ssl.protocol): the context names JSSE has
    // that still allow TLS 1.2/1.3 (JDK 11+ disables TLSv1/TLSv1.1/SSLv3).
    if !["TLS", "TLSv1.2", "TLSv1.3"]
        .iter()
        .any(|p| p.eq_ignore_ascii_case(&s.protocol))
    {
        return Err(err(
            "ssl.protocol",
            &s.protocol,
            "supported: TLSv1.3, TLSv1.2, TLS (TLSv1, TLSv1.1 and SSL are insecure and not implemented)",
        ));
    }
    let names = if s.enabled_protocols.is_empty() {
        vec!["TLSv1.2".to_owned(), "TLSv1.3".to_owned()]
    } else {
        s.enabled_protocols.clone()
    };
    let mut versions = Vec::new();
    for name in &names {
        let version = match name.as_str() {
            "TLSv1.2" => &rustls::version::TLS12,
            "TLSv1.3" => &rustls::version::TLS13,
            other => {
                return Err(err(
                    "ssl.enabled.protocols",
                    other,
                    "supported: TLSv1.2, TLSv1.3 (TLSv1, TLSv1.1 and SSLv3 are insecure and not implemented)",
                ))
            }
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    Ok(versions)
}

fn roots(certs: &[CertificateDer<'static>], key: &str) -> Result<RootCertStore, ConfigError> {
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots.add(cert.clone()).map_err(|e| {
            err(
                key,
                "",
                format!("a certificate cannot be a trust anchor: {e}"),
            )
        })?;
    }
    Ok(roots)
}

fn truststore_key(s: &SslSettings) -> &'static str {
    if s.truststore_certificates.is_some() {
        "ssl.truststore.certificates"
    } else {
        "ssl.truststore.location"
    }
}

fn keystore_key(s: &SslSettings) -> &'static str {
    if s.keystore_key.is_some() {
        "ssl.keystore.key"
    } else {
        "ssl.keystore.location"
    }
}

/// The server side of `s`, the stores read from disk.
pub fn server_config(s: &SslSettings) -> Result<Arc<ServerConfig>, ConfigError> {
    let build = || {
        let keystore = stores::load_keystore(s)?;
        let truststore = stores::load_truststore(s)?;
        server_config_from(s, keystore.as_ref(), truststore.as_deref())
    };
    build().map_err(|e| s.name_error(e))
}

/// The server side of `s` with its stores already loaded.
pub fn server_config_from(
    s: &SslSettings,
    keystore: Option<&KeyMaterial>,
    truststore: Option<&[CertificateDer<'static>]>,
) -> Result<Arc<ServerConfig>, ConfigError> {
    let Some(keystore) = keystore else {
        // DefaultSslEngineFactory: "No keystore → allowed only for clients".
        return Err(err(
            "ssl.keystore.location",
            "",
            format!("listener {} serves TLS and needs a keystore", s.listener),
        ));
    };
    let provider = Arc::new(provider(s)?);
    let versions = protocol_versions(s)?;
    let verifier = client_verifier(s, truststore, &provider)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| {
            err(
                "ssl.cipher.suites",
                &s.cipher_suites.join(","),
                e.to_string(),
            )
        })?
        .with_client_cert_verifier(verifier)
        .with_single_cert(keystore.chain.clone(), keystore.key.clone_key())
        .map_err(|e| {
            err(
                keystore_key(s),
                "",
                format!("the key or certificate is not usable: {e}"),
            )
        })?;
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}

fn client_verifier(
    s: &SslSettings,
    truststore: Option<&[CertificateDer<'static>]>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, ConfigError> {
    if s.client_auth == ClientAuth::None {
        return Ok(WebPkiClientVerifier::no_client_auth());
    }
    let Some(certs) = truststore else {
        // Kafka would trust the JVM's cacerts for client certificates;
        // a public CA bundle is no basis for authenticating clients.
        return Err(err(
            "ssl.truststore.location",
            "",
            format!(
                "ssl.client.auth={} on listener {} needs a truststore with the CA of the client certificates",
                s.client_auth.name(),
                s.listener
            ),
        ));
    };
    let roots = roots(certs, truststore_key(s))?;
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    let builder = match s.client_auth {
        ClientAuth::Requested => builder.allow_unauthenticated(),
        _ => builder,
    };
    builder.build().map_err(|e| {
        err(
            truststore_key(s),
            "",
            format!("cannot verify client certificates: {e}"),
        )
    })
}

/// The broker's client side for `s` (outbound connections on this
/// listener), the stores read from disk. The caller passes the advertised
/// host of the peer as the `ServerName`.
pub fn client_config(s: &SslSettings) -> Result<Arc<ClientConfig>, ConfigError> {
    client_config_inner(s).map_err(|e| s.name_error(e))
}

fn client_config_inner(s: &SslSettings) -> Result<Arc<ClientConfig>, ConfigError> {
    let keystore = stores::load_keystore(s)?;
    let truststore = match stores::load_truststore(s)? {
        Some(certs) => certs,
        None => stores::system_roots()?,
    };
    let verify_name = match s.endpoint_identification_algorithm.as_str() {
        "" => false,
        a if a.eq_ignore_ascii_case("https") => true,
        other => {
            return Err(err(
                "ssl.endpoint.identification.algorithm",
                other,
                "supported: https, or empty to disable host name verification",
            ))
        }
    };
    client_config_from(s, keystore.as_ref(), &truststore, verify_name)
}

/// The client side of `s` with its stores loaded; `verify_name` false
/// checks the chain but not the host name.
pub fn client_config_from(
    s: &SslSettings,
    keystore: Option<&KeyMaterial>,
    truststore: &[CertificateDer<'static>],
    verify_name: bool,
) -> Result<Arc<ClientConfig>, ConfigError> {
    let provider = Arc::new(provider(s)?);
    let versions = protocol_versions(s)?;
    let roots = roots(truststore, truststore_key(s))?;
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| {
            err(
                truststore_key(s),
                "",
                format!("cannot verify server certificates: {e}"),
            )
        })?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| {
            err(
                "ssl.cipher.suites",
                &s.cipher_suites.join(","),
                e.to_string(),
            )
        })?;
    let builder = if verify_name {
        builder.with_webpki_verifier(webpki)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(ChainOnlyVerifier(webpki)))
    };
    let mut config = match keystore {
        Some(k) => builder
            .with_client_auth_cert(k.chain.clone(), k.key.clone_key())
            .map_err(|e| {
                err(
                    keystore_key(s),
                    "",
                    format!("the key or certificate is not usable: {e}"),
                )
            })?,
        None => builder.with_no_client_auth(),
    };
    config.enable_secret_extraction = true;
    Ok(Arc::new(config))
}

/// `ssl.endpoint.identification.algorithm=` (empty): the server's chain
/// is verified as usual, only a certificate not valid for the host name is
/// accepted (JSSE with no endpoint identification). webpki checks the name
/// last, after the chain, validity and usage, so this error means the rest
/// passed.
#[derive(Debug)]
struct ChainOnlyVerifier(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
