//! `[io]` Keystores and truststores as `DefaultSslEngineFactory` loads
//! them (Kafka 3.9, `clients/.../security/ssl/DefaultSslEngineFactory.java`:
//! `createKeystore`, `createTruststore`, `FileBasedStore`, `PemStore`,
//! `PemParser`). Reads the files the settings name; everything else is
//! parsing. Errors name the key to fix.
//!
//! Formats: PKCS12 (p12-keystore), PEM (file or inline), and JKS only as
//! far as the JDK's own `JKS` type goes: since Java 9 a `JKS` keystore
//! instance also loads PKCS12 files (`keystore.type.compat`), so a PKCS12
//! file under the default type loads; a real JKS file (magic `FEEDFEED`)
//! is refused with the keytool command converting it. The `jks` crate
//! (0.3, one author, a few months old, its own SHA-1/XOR key protector
//! code) is not a maintained reader we can put private keys through.

use std::path::Path;
use std::time::SystemTime;

use base64ct::Encoding;
use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::pbe::PbeError;
use super::settings::{invalid_secret, Password, SslSettings, StoreType};
use crate::config::ConfigError;

/// A private key and its certificate chain, leaf first.
#[derive(Debug)]
pub struct KeyMaterial {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl KeyMaterial {
    /// A key and its chain; an EC key as Java writes it (no public key
    /// inside) gets the leaf's public key (see [`super::eckey`]).
    pub fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> Self {
        let key = super::eckey::with_public_key(key, chain.first().map(|c| c.as_ref()));
        Self { chain, key }
    }
}

impl Clone for KeyMaterial {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// The modification time of each store file the settings name (Kafka's
/// `FileBasedStore.lastModifiedMs`, used by `shouldBeRebuilt`).
pub type FileTimes = Vec<(String, Option<SystemTime>)>;

fn err(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// The modification times of `ssl.keystore.location` and
/// `ssl.truststore.location`, when set.
pub fn file_times(s: &SslSettings) -> FileTimes {
    [&s.keystore_location, &s.truststore_location]
        .into_iter()
        .flatten()
        .map(|path| {
            let time = std::fs::metadata(path).and_then(|m| m.modified()).ok();
            (path.clone(), time)
        })
        .collect()
}

fn read_file(key: &str, path: &str) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(Path::new(path)).map_err(|e| err(key, path, format!("cannot read the file: {e}")))
}

/// What a store file looks like, for a useful error when the type is wrong.
#[derive(Debug, PartialEq, Eq)]
enum Sniffed {
    Jks,
    Pem,
    Der,
    Other,
}

fn sniff(data: &[u8]) -> Sniffed {
    if data.starts_with(&[0xFE, 0xED, 0xFE, 0xED]) {
        Sniffed::Jks
    } else if data.windows(11).any(|w| w == b"-----BEGIN ") {
        Sniffed::Pem
    } else if data.first() == Some(&0x30) {
        Sniffed::Der
    } else {
        Sniffed::Other
    }
}

fn jks_refused(type_key: &str, location: &str) -> ConfigError {
    err(
        type_key,
        "JKS",
        format!(
            "{location} is a JKS keystore, which shardlog cannot read (no maintained Rust crate \
             reads JKS); convert it to PKCS12 (or PEM): keytool -importkeystore -srckeystore {location} \
             -srcstoretype JKS -destkeystore {location}.p12 -deststoretype PKCS12, then set \
             {type_key}=PKCS12 and the location to the new file"
        ),
    )
}

/// The keystore of `s`, if it has one.
pub fn load_keystore(s: &SslSettings) -> Result<Option<KeyMaterial>, ConfigError> {
    if let (Some(key), Some(chain)) = (&s.keystore_key, &s.keystore_certificate_chain) {
        return pem_keystore(
            key.value(),
            chain.value(),
            s.key_password.as_ref(),
            Source::inline("ssl.keystore.key"),
            Source::inline("ssl.keystore.certificate.chain"),
        )
        .map(Some);
    }
    let Some(location) = &s.keystore_location else {
        return Ok(None);
    };
    let data = read_file("ssl.keystore.location", location)?;
    let type_key = "ssl.keystore.type";
    match (s.keystore_type, sniff(&data)) {
        (StoreType::Pem, _) => {
            let text = String::from_utf8_lossy(&data);
            pem_keystore(
                &text,
                &text,
                s.key_password.as_ref(),
                Source::file("ssl.keystore.location", location),
                Source::file("ssl.keystore.location", location),
            )
            .map(Some)
        }
        (_, Sniffed::Jks) => Err(jks_refused(type_key, location)),
        (_, Sniffed::Pem) => Err(err(
            type_key,
            s.keystore_type.name(),
            format!("{location} is a PEM file: set {type_key}=PEM"),
        )),
        (StoreType::Pkcs12 | StoreType::Jks, _) => {
            let password = s.keystore_password.as_ref().map_or("", Password::value);
            if let Some(key_password) = &s.key_password {
                if key_password.value() != password {
                    // keytool and openssl write PKCS12 key entries under the
                    // store password; a different ssl.key.password would not
                    // open them in Kafka either (UnrecoverableKeyException).
                    return Err(invalid_secret(
                        "ssl.key.password",
                        "differs from ssl.keystore.password: shardlog reads PKCS12 key entries \
                         protected by the store password only",
                    ));
                }
            }
            pkcs12_keystore(&data, location, password).map(Some)
        }
    }
}

fn pkcs12_open(
    data: &[u8],
    location: &str,
    password: &str,
    password_key: &str,
    location_key: &str,
) -> Result<KeyStore, ConfigError> {
    KeyStore::from_pkcs12(data, password, Pkcs12ImportPolicy::Strict).map_err(|e| match e {
        p12_keystore::error::Error::MacError(_) => invalid_secret(
            password_key,
            &format!("wrong password for {location} (the PKCS12 integrity check failed)"),
        ),
        p12_keystore::error::Error::Pkcs5Error(_) | p12_keystore::error::Error::UnpadError => {
            invalid_secret(
                password_key,
                &format!("wrong password for {location} (an entry did not decrypt)"),
            )
        }
        other => err(
            location_key,
            location,
            format!("Failed to load SSL store {location} of type PKCS12: {other}"),
        ),
    })
}

fn pkcs12_keystore(
    data: &[u8],
    location: &str,
    password: &str,
) -> Result<KeyMaterial, ConfigError> {
    let store = pkcs12_open(
        data,
        location,
        password,
        "ssl.keystore.password",
        "ssl.keystore.location",
    )?;
    let chains: Vec<_> = store
        .entries()
        .filter_map(|(_, e)| match e {
            KeyStoreEntry::PrivateKeyChain(chain) => Some(chain),
            _ => None,
        })
        .collect();
    let chain = match chains.as_slice() {
        [one] => *one,
        [] => {
            return Err(err(
                "ssl.keystore.location",
                location,
                "the keystore holds no private key entry with its certificate",
            ))
        }
        more => {
            return Err(err(
                "ssl.keystore.location",
                location,
                format!(
                    "the keystore holds {} private key entries; shardlog serves one: keep one",
                    more.len()
                ),
            ))
        }
    };
    Ok(KeyMaterial::new(
        chain
            .certs()
            .iter()
            .map(|c| CertificateDer::from(c.as_der().to_vec()))
            .collect(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec())),
    ))
}

/// The truststore of `s`, if it has one.
pub fn load_truststore(
    s: &SslSettings,
) -> Result<Option<Vec<CertificateDer<'static>>>, ConfigError> {
    if let Some(certs) = &s.truststore_certificates {
        return pem_certificates(certs.value(), Source::inline("ssl.truststore.certificates"))
            .map(Some);
    }
    let Some(location) = &s.truststore_location else {
        return Ok(None);
    };
    let data = read_file("ssl.truststore.location", location)?;
    let type_key = "ssl.truststore.type";
    match (s.truststore_type, sniff(&data)) {
        (StoreType::Pem, _) => pem_certificates(
            &String::from_utf8_lossy(&data),
            Source::file("ssl.truststore.location", location),
        )
        .map(Some),
        (_, Sniffed::Jks) => Err(jks_refused(type_key, location)),
        (_, Sniffed::Pem) => Err(err(
            type_key,
            s.truststore_type.name(),
            format!("{location} is a PEM file: set {type_key}=PEM"),
        )),
        (StoreType::Pkcs12 | StoreType::Jks, _) => {
            // Java loads a truststore without a password (no integrity
            // check); p12-keystore always checks, with the empty password.
            let password = s.truststore_password.as_ref().map_or("", Password::value);
            let store = pkcs12_open(
                &data,
                location,
                password,
                "ssl.truststore.password",
                "ssl.truststore.location",
            )
            .map_err(|e| match (&s.truststore_password, e) {
                (None, ConfigError::InvalidValue { key, .. }) if key == "ssl.truststore.password" => {
                    err(
                        "ssl.truststore.password",
                        "",
                        format!(
                            "{location} cannot be read without its password (Java skips the \
                             integrity check; shardlog needs the password): set ssl.truststore.password"
                        ),
                    )
                }
                (_, e) => e,
            })?;
            let certs: Vec<_> = store
                .entries()
                .filter_map(|(_, e)| match e {
                    KeyStoreEntry::Certificate(c) => {
                        Some(CertificateDer::from(c.as_der().to_vec()))
                    }
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(err(
                    "ssl.truststore.location",
                    location,
                    "the truststore holds no trusted certificate entry (keytool -importcert \
                     writes them; a PKCS12 file from openssl has none)",
                ));
            }
            Ok(Some(certs))
        }
    }
}

/// The operating system's CA bundle, for a client without a truststore
/// (Kafka uses the JVM's `cacerts` there). `SSL_CERT_FILE` wins, as for
/// OpenSSL.
pub fn system_roots() -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let candidates = std::env::var("SSL_CERT_FILE").into_iter().chain(
        [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem",
        ]
        .map(str::to_owned),
    );
    for path in candidates {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(certs) =
                pem_certificates(&text, Source::file("ssl.truststore.location", &path))
            {
                return Ok(certs);
            }
        }
    }
    Err(err(
        "ssl.truststore.location",
        "",
        "no truststore is configured and no system CA bundle was found",
    ))
}

/// Where PEM text came from, for errors: the key and the value to show —
/// the file for a `*.location` key, `[hidden]` for an inline PEM value
/// (`ssl.keystore.key` is a password type in Kafka's `SslConfigs`).
#[derive(Clone, Copy)]
struct Source<'a> {
    key: &'a str,
    shown: &'a str,
}

impl<'a> Source<'a> {
    fn file(key: &'a str, location: &'a str) -> Self {
        Self {
            key,
            shown: location,
        }
    }
    fn inline(key: &'a str) -> Self {
        Self {
            key,
            shown: "[hidden]",
        }
    }
    fn err(self, reason: impl Into<String>) -> ConfigError {
        err(self.key, self.shown, reason)
    }
}

/// One PEM block: its label and decoded bytes.
struct Block {
    label: String,
    der: Vec<u8>,
}

/// Every `-----BEGIN X-----` … `-----END X-----` block of `text`: text
/// before and between blocks and `Name: value` header lines are skipped
/// (`PemParser`).
fn pem_blocks(text: &str, src: Source<'_>) -> Result<Vec<Block>, ConfigError> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("-----BEGIN ") {
        let after = &rest[at + "-----BEGIN ".len()..];
        let Some(end_label) = after.find("-----") else {
            break;
        };
        let label = after[..end_label].trim().to_owned();
        let body_start = &after[end_label + 5..];
        let end_marker = format!("-----END {label}-----");
        let Some(end) = body_start.find(&end_marker) else {
            return Err(src.err(format!("PEM block {label} has no END line")));
        };
        let body: String = body_start[..end]
            .lines()
            .filter(|line| !line.contains(':'))
            .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
            .collect();
        let der = base64ct::Base64::decode_vec(&body)
            .map_err(|e| src.err(format!("PEM block {label} is not base64: {e}")))?;
        blocks.push(Block { label, der });
        rest = &body_start[end + end_marker.len()..];
    }
    Ok(blocks)
}

/// The `CERTIFICATE` blocks of `text`, in order.
fn pem_certificates(
    text: &str,
    src: Source<'_>,
) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let certs: Vec<_> = pem_blocks(text, src)?
        .into_iter()
        .filter(|b| b.label == "CERTIFICATE")
        .map(|b| CertificateDer::from(b.der))
        .collect();
    if certs.is_empty() {
        return Err(
            src.err("At least one certificate expected, but none found (no CERTIFICATE PEM block)")
        );
    }
    Ok(certs)
}

/// A PEM keystore: exactly one PKCS#8 key (`PRIVATE KEY`, or `ENCRYPTED
/// PRIVATE KEY` decrypted with `ssl.key.password`) and a chain of
/// `CERTIFICATE` blocks, leaf first (`PemStore.createKeyStoreFromPem`).
fn pem_keystore(
    key_text: &str,
    chain_text: &str,
    key_password: Option<&Password>,
    key_src: Source<'_>,
    chain_src: Source<'_>,
) -> Result<KeyMaterial, ConfigError> {
    let keys: Vec<Block> = pem_blocks(key_text, key_src)?
        .into_iter()
        .filter(|b| b.label.ends_with("PRIVATE KEY"))
        .collect();
    let block = match keys.as_slice() {
        [one] => one,
        [] => return Err(key_src.err("Private key not provided (no PRIVATE KEY PEM block)")),
        more => {
            return Err(key_src.err(format!(
                "Expected one private key, but found {}",
                more.len()
            )))
        }
    };
    let der = match (block.label.as_str(), key_password) {
        ("PRIVATE KEY", None) => block.der.clone(),
        ("ENCRYPTED PRIVATE KEY", Some(password)) => {
            super::pbe::decrypt(&block.der, password.value()).map_err(|e| match e {
                PbeError::Unsupported(reason) => {
                    key_src.err(format!("{reason} (decrypted with ssl.key.password)"))
                }
                PbeError::Decrypt(reason) => invalid_secret(
                    "ssl.key.password",
                    &format!(
                        "the encrypted private key did not decrypt (wrong password?): {reason}"
                    ),
                ),
            })?
        }
        ("ENCRYPTED PRIVATE KEY", None) => {
            return Err(err(
                "ssl.key.password",
                "",
                "the PEM private key is encrypted: set ssl.key.password",
            ))
        }
        ("PRIVATE KEY", Some(_)) => {
            // PemStore.privateKey reads the key as EncryptedPrivateKeyInfo
            // whenever a key password is set.
            return Err(invalid_secret(
                "ssl.key.password",
                "is set, but the PEM private key is not encrypted (PRIVATE KEY): remove it",
            ));
        }
        (label, _) => {
            return Err(key_src.err(format!(
                "the key is {label}; Kafka reads PKCS#8 only (PRIVATE KEY or ENCRYPTED \
                     PRIVATE KEY): convert with openssl pkcs8 -topk8"
            )))
        }
    };
    // The key's algorithm is checked when the rustls config is built.
    pkcs8::PrivateKeyInfoRef::try_from(der.as_slice())
        .map_err(|e| key_src.err(format!("Private key could not be loaded: {e}")))?;
    Ok(KeyMaterial::new(
        pem_certificates(chain_text, chain_src)?,
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der)),
    ))
}
