//! `[pure]` The `ssl.*` keys of one listener, resolved: a listener-prefixed
//! `listener.name.<listener lower-case>.ssl.x` wins over `ssl.x`, which wins
//! over Kafka's default (`SslConfigs.java`, `BrokerSecurityConfigs.java`).
//! Values are checked here; the stores they name are read by
//! [`super::stores`].

use std::collections::BTreeMap;
use std::fmt;

use crate::config::{ConfigError, SecurityProtocol, ServerConfig};

/// A PASSWORD-type value (Kafka's `types.Password`): shown as `[hidden]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The clear text.
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Kafka's Password.toString().
        f.write_str("[hidden]")
    }
}

/// `ssl.keystore.type` / `ssl.truststore.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    /// Kafka's default; read only to refuse it with the keytool command.
    Jks,
    Pkcs12,
    Pem,
}

impl StoreType {
    /// Kafka's spelling.
    pub fn name(self) -> &'static str {
        match self {
            StoreType::Jks => "JKS",
            StoreType::Pkcs12 => "PKCS12",
            StoreType::Pem => "PEM",
        }
    }

    fn parse(key: &str, text: &str) -> Result<Self, ConfigError> {
        // `KeyStore.getInstance` takes JKS and PKCS12 in any case; PEM is
        // compared with `PEM_TYPE.equals(type)` (DefaultSslEngineFactory).
        match text.trim() {
            "PEM" => Ok(StoreType::Pem),
            t if t.eq_ignore_ascii_case("JKS") => Ok(StoreType::Jks),
            t if t.eq_ignore_ascii_case("PKCS12") => Ok(StoreType::Pkcs12),
            _ => Err(invalid(key, text, "expected JKS, PKCS12 or PEM")),
        }
    }
}

/// `ssl.client.auth` (`SslClientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

impl ClientAuth {
    fn parse(key: &str, text: &str) -> Result<Self, ConfigError> {
        // SslClientAuth.forConfig upper-cases; an unknown value falls back
        // to NONE with a warning in Kafka. Security never fails open here:
        // an unknown value stops the start.
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            _ => Err(invalid(key, text, "expected required, requested or none")),
        }
    }

    /// Kafka's spelling.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }
}

/// The SSL configuration of one listener (or of the broker's outbound
/// connections on it), every key resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslSettings {
    /// The listener name, upper-case (`ListenerName.normalised`).
    pub listener: String,
    /// `ssl.keystore.type` (default JKS).
    pub keystore_type: StoreType,
    /// `ssl.keystore.location`.
    pub keystore_location: Option<String>,
    /// `ssl.keystore.password`.
    pub keystore_password: Option<Password>,
    /// `ssl.key.password`.
    pub key_password: Option<Password>,
    /// `ssl.keystore.key` (PEM only, inline).
    pub keystore_key: Option<Password>,
    /// `ssl.keystore.certificate.chain` (PEM only, inline).
    pub keystore_certificate_chain: Option<Password>,
    /// `ssl.truststore.type` (default JKS).
    pub truststore_type: StoreType,
    /// `ssl.truststore.location`.
    pub truststore_location: Option<String>,
    /// `ssl.truststore.password`.
    pub truststore_password: Option<Password>,
    /// `ssl.truststore.certificates` (PEM only, inline).
    pub truststore_certificates: Option<Password>,
    /// `ssl.client.auth` (default none; see [`SslSettings::resolve`] for
    /// SASL_SSL listeners).
    pub client_auth: ClientAuth,
    /// `ssl.protocol` (default TLSv1.3).
    pub protocol: String,
    /// `ssl.enabled.protocols` (default TLSv1.2,TLSv1.3).
    pub enabled_protocols: Vec<String>,
    /// `ssl.cipher.suites` (default empty = the engine's defaults).
    pub cipher_suites: Vec<String>,
    /// `ssl.endpoint.identification.algorithm` (default https; empty =
    /// no host name check on the broker's client side).
    pub endpoint_identification_algorithm: String,
    /// `ssl.principal.mapping.rules` (default DEFAULT).
    pub principal_mapping_rules: String,
    /// `ssl.allow.dn.changes` (default false).
    pub allow_dn_changes: bool,
    /// `ssl.allow.san.changes` (default false).
    pub allow_san_changes: bool,
    /// Each key that was set, as written: `ssl.x` → `ssl.x` or
    /// `listener.name.<l>.ssl.x` (for errors naming the key to fix).
    pub written: BTreeMap<String, String>,
}

fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// A PASSWORD-type key's error: the value is never printed.
pub(crate) fn invalid_secret(key: &str, reason: &str) -> ConfigError {
    invalid(key, "[hidden]", reason)
}

/// Kafka's LIST type: comma-separated, each item trimmed, empty items
/// dropped.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn boolean(key: &str, text: &str) -> Result<bool, ConfigError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, text, "expected true or false")),
    }
}

impl SslSettings {
    /// The settings of `listener` from `server.properties`
    /// ([`ServerConfig::ssl_keys`]); its protocol (for the SASL_SSL rule of
    /// `ssl.client.auth`) from `listener.security.protocol.map`.
    pub fn for_listener(config: &ServerConfig, listener: &str) -> Result<SslSettings, ConfigError> {
        let lookup = |key: &str| config.ssl_keys.get(key).cloned();
        let sasl_ssl = config.listener_protocol(listener) == SecurityProtocol::SaslSsl;
        Self::resolve_with_protocol(listener, sasl_ssl, &lookup)
    }

    /// As [`SslSettings::for_listener`], with the listener's security
    /// protocol (`SSL`, `SASL_SSL`, ...) given.
    pub fn for_listener_protocol(
        config: &ServerConfig,
        listener: &str,
        protocol: &str,
    ) -> Result<SslSettings, ConfigError> {
        let lookup = |key: &str| config.ssl_keys.get(key).cloned();
        Self::resolve_with_protocol(listener, protocol.eq_ignore_ascii_case("SASL_SSL"), &lookup)
    }

    /// Resolve the settings of `listener` from `lookup`, which answers a
    /// full key name (`listener.name.external.ssl.keystore.location`,
    /// `ssl.keystore.location`, `listener.security.protocol.map`) with its
    /// value, so a caller can overlay dynamic keys on the static ones.
    pub fn resolve(
        listener: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SslSettings, ConfigError> {
        let upper = listener.to_ascii_uppercase();
        let sasl_ssl = match lookup("listener.security.protocol.map") {
            Some(map) => list(&map).iter().any(|entry| {
                entry.split_once(':').is_some_and(|(name, protocol)| {
                    name.trim().eq_ignore_ascii_case(&upper)
                        && protocol.trim().eq_ignore_ascii_case("SASL_SSL")
                })
            }),
            None => upper == "SASL_SSL",
        };
        Self::resolve_with_protocol(listener, sasl_ssl, lookup)
    }

    /// [`SslSettings::resolve`] with the listener's protocol known:
    /// `sasl_ssl` is true for a SASL_SSL listener.
    pub fn resolve_with_protocol(
        listener: &str,
        sasl_ssl: bool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SslSettings, ConfigError> {
        let prefix = format!("listener.name.{}.", listener.to_ascii_lowercase());
        // (the key name as written, its value)
        let get = |key: &str| -> Option<(String, String)> {
            let prefixed = format!("{prefix}{key}");
            match lookup(&prefixed) {
                Some(v) => Some((prefixed, v)),
                None => lookup(key).map(|v| (key.to_owned(), v)),
            }
        };
        // Kafka's null: an absent key. An empty PASSWORD/STRING value with
        // no default is null too for the location and password keys.
        let opt = |key: &str| get(key).filter(|(_, v)| !v.trim().is_empty());
        let string = |key: &str| opt(key).map(|(_, v)| v.trim().to_owned());
        let secret = |key: &str| opt(key).map(|(_, v)| Password::new(v));
        let store_type = |key: &str| match opt(key) {
            Some((name, v)) => StoreType::parse(&name, &v),
            None => Ok(StoreType::Jks),
        };
        // ChannelBuilders / SaslChannelBuilder: on SASL_SSL only the
        // listener-prefixed ssl.client.auth counts; the broker-wide one is
        // for SSL listeners (BrokerSecurityConfigs.SSL_CLIENT_AUTH_CONFIG).
        let client_auth = if sasl_ssl {
            lookup(&format!("{prefix}ssl.client.auth"))
                .map(|v| (format!("{prefix}ssl.client.auth"), v))
        } else {
            get("ssl.client.auth")
        };
        let client_auth = match client_auth {
            Some((name, v)) => ClientAuth::parse(&name, &v)?,
            None => ClientAuth::None,
        };
        let protocol = get("ssl.protocol")
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| "TLSv1.3".into());
        let enabled_protocols = get("ssl.enabled.protocols")
            .map(|(_, v)| list(&v))
            .unwrap_or_else(|| vec!["TLSv1.2".into(), "TLSv1.3".into()]);
        let flag = |key: &str| match get(key) {
            Some((name, v)) => boolean(&name, &v),
            None => Ok(false),
        };
        let settings = SslSettings {
            listener: listener.to_ascii_uppercase(),
            keystore_type: store_type("ssl.keystore.type")?,
            keystore_location: string("ssl.keystore.location"),
            keystore_password: secret("ssl.keystore.password"),
            key_password: secret("ssl.key.password"),
            keystore_key: secret("ssl.keystore.key"),
            keystore_certificate_chain: secret("ssl.keystore.certificate.chain"),
            truststore_type: store_type("ssl.truststore.type")?,
            truststore_location: string("ssl.truststore.location"),
            truststore_password: secret("ssl.truststore.password"),
            truststore_certificates: secret("ssl.truststore.certificates"),
            client_auth,
            protocol,
            enabled_protocols,
            cipher_suites: get("ssl.cipher.suites")
                .map(|(_, v)| list(&v))
                .unwrap_or_default(),
            endpoint_identification_algorithm: get("ssl.endpoint.identification.algorithm")
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_else(|| "https".into()),
            principal_mapping_rules: get("ssl.principal.mapping.rules")
                .map(|(_, v)| v.trim().to_owned())
                .unwrap_or_else(|| "DEFAULT".into()),
            allow_dn_changes: flag("ssl.allow.dn.changes")?,
            allow_san_changes: flag("ssl.allow.san.changes")?,
            written: crate::config::ssl::SUPPORTED
                .iter()
                .filter_map(|key| get(key).map(|(name, _)| ((*key).to_owned(), name)))
                .collect(),
        };
        settings
            .check_combinations()
            .map_err(|e| settings.name_error(e))?;
        Ok(settings)
    }

    /// `key` (`ssl.x`) as the configuration spells it: listener-prefixed
    /// when that is where the value came from.
    pub fn written_key(&self, key: &str) -> String {
        self.written
            .get(key)
            .cloned()
            .unwrap_or_else(|| key.to_owned())
    }

    /// An error about one of this listener's keys, naming the key as
    /// written and the listener.
    pub fn name_error(&self, e: ConfigError) -> ConfigError {
        match e {
            ConfigError::InvalidValue { key, value, reason } => ConfigError::InvalidValue {
                key: self.written_key(&key),
                value,
                reason: if reason.contains(&format!("listener {}", self.listener)) {
                    reason
                } else {
                    format!("listener {}: {reason}", self.listener)
                },
            },
            other => other,
        }
    }

    /// Does the listener have a keystore (file or inline PEM)?
    pub fn has_keystore(&self) -> bool {
        self.keystore_location.is_some() || self.keystore_key.is_some()
    }

    /// Does the listener have a truststore (file or inline PEM)?
    pub fn has_truststore(&self) -> bool {
        self.truststore_location.is_some() || self.truststore_certificates.is_some()
    }

    /// The combinations `DefaultSslEngineFactory.createKeystore` and
    /// `createTruststore` refuse, with Kafka's messages.
    fn check_combinations(&self) -> Result<(), ConfigError> {
        let pem_key = self.keystore_type == StoreType::Pem;
        if self.keystore_key.is_some() {
            if !pem_key {
                return Err(invalid_secret(
                    "ssl.keystore.key",
                    &format!(
                        "SSL private key can be specified only for PEM, but key store type is {}",
                        self.keystore_type.name()
                    ),
                ));
            }
            if self.keystore_certificate_chain.is_none() {
                return Err(invalid_secret(
                    "ssl.keystore.certificate.chain",
                    "SSL private key is specified, but certificate chain is not specified",
                ));
            }
            if let Some(location) = &self.keystore_location {
                return Err(invalid(
                    "ssl.keystore.location",
                    location,
                    "both SSL key store location and separate private key are specified",
                ));
            }
        } else if self.keystore_certificate_chain.is_some() {
            return Err(invalid_secret(
                "ssl.keystore.key",
                "SSL certificate chain is specified, but private key is not specified",
            ));
        }
        if pem_key && self.keystore_password.is_some() && self.has_keystore() {
            return Err(invalid_secret(
                "ssl.keystore.password",
                "SSL key store password cannot be specified with PEM format, only key password may be specified",
            ));
        }
        if !pem_key {
            match (&self.keystore_location, &self.keystore_password) {
                (None, Some(_)) => {
                    return Err(invalid_secret(
                        "ssl.keystore.password",
                        "SSL key store is not specified, but key store password is specified",
                    ))
                }
                (Some(location), None) => {
                    return Err(invalid(
                        "ssl.keystore.password",
                        "",
                        &format!(
                            "SSL key store {location} is specified, but key store password is not specified"
                        ),
                    ))
                }
                _ => {}
            }
        }
        let pem_trust = self.truststore_type == StoreType::Pem;
        if self.truststore_certificates.is_some() {
            if !pem_trust {
                return Err(invalid_secret(
                    "ssl.truststore.certificates",
                    &format!(
                        "SSL trust store certs can be specified only for PEM, but trust store type is {}",
                        self.truststore_type.name()
                    ),
                ));
            }
            if let Some(location) = &self.truststore_location {
                return Err(invalid(
                    "ssl.truststore.location",
                    location,
                    "both SSL trust store location and separate trust certificates are specified",
                ));
            }
        }
        if pem_trust && self.truststore_password.is_some() && self.has_truststore() {
            return Err(invalid_secret(
                "ssl.truststore.password",
                "SSL trust store password cannot be specified for PEM format",
            ));
        }
        if self.truststore_location.is_none()
            && self.truststore_certificates.is_none()
            && self.truststore_password.is_some()
        {
            return Err(invalid_secret(
                "ssl.truststore.password",
                "SSL trust store is not specified, but trust store password is specified",
            ));
        }
        Ok(())
    }

    /// The keys whose values differ between `self` and `other` and that a
    /// dynamic update may not change (everything outside
    /// [`crate::config::dynamic::security::RECONFIGURABLE_SSL`]).
    pub fn non_reconfigurable_changes(&self, other: &SslSettings) -> Vec<&'static str> {
        let mut changed = Vec::new();
        let mut check = |key: &'static str, same: bool| {
            if !same {
                changed.push(key);
            }
        };
        check("ssl.client.auth", self.client_auth == other.client_auth);
        check("ssl.protocol", self.protocol == other.protocol);
        check(
            "ssl.enabled.protocols",
            self.enabled_protocols == other.enabled_protocols,
        );
        check(
            "ssl.cipher.suites",
            self.cipher_suites == other.cipher_suites,
        );
        check(
            "ssl.endpoint.identification.algorithm",
            self.endpoint_identification_algorithm == other.endpoint_identification_algorithm,
        );
        check(
            "ssl.principal.mapping.rules",
            self.principal_mapping_rules == other.principal_mapping_rules,
        );
        // Not in RECONFIGURABLE_CONFIGS: SslFactory reads them from the
        // listener's static config when it validates a new keystore.
        check(
            "ssl.allow.dn.changes",
            self.allow_dn_changes == other.allow_dn_changes,
        );
        check(
            "ssl.allow.san.changes",
            self.allow_san_changes == other.allow_san_changes,
        );
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn resolve(listener: &str, pairs: &[(&str, &str)]) -> Result<SslSettings, ConfigError> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        SslSettings::resolve(listener, &|k: &str| map.get(k).cloned())
    }

    #[test]
    fn kafka_defaults_apply_when_nothing_is_set() {
        let s = resolve("SSL", &[]).unwrap();
        assert_eq!(s.keystore_type, StoreType::Jks);
        assert_eq!(s.truststore_type, StoreType::Jks);
        assert_eq!(s.client_auth, ClientAuth::None);
        assert_eq!(s.protocol, "TLSv1.3");
        assert_eq!(s.enabled_protocols, ["TLSv1.2", "TLSv1.3"]);
        assert!(s.cipher_suites.is_empty());
        assert_eq!(s.endpoint_identification_algorithm, "https");
        assert_eq!(s.principal_mapping_rules, "DEFAULT");
        assert!(!s.has_keystore() && !s.has_truststore());
    }

    #[test]
    fn the_listener_prefix_wins_over_the_plain_key() {
        let s = resolve(
            "EXTERNAL",
            &[
                ("ssl.keystore.type", "PKCS12"),
                ("listener.name.external.ssl.keystore.type", "PEM"),
                ("listener.name.internal.ssl.keystore.type", "PKCS12"),
                ("ssl.cipher.suites", " TLS_AES_128_GCM_SHA256 , "),
                ("ssl.endpoint.identification.algorithm", ""),
            ],
        )
        .unwrap();
        assert_eq!(s.keystore_type, StoreType::Pem);
        assert_eq!(s.cipher_suites, ["TLS_AES_128_GCM_SHA256"]);
        assert_eq!(s.endpoint_identification_algorithm, "");
        assert_eq!(s.listener, "EXTERNAL");
    }

    #[test]
    fn client_auth_on_sasl_ssl_needs_the_listener_prefix() {
        let plain = [("ssl.client.auth", "required")];
        assert_eq!(
            resolve("SSL", &plain).unwrap().client_auth,
            ClientAuth::Required
        );
        assert_eq!(
            resolve("SASL_SSL", &plain).unwrap().client_auth,
            ClientAuth::None
        );
        let mapped = [
            ("ssl.client.auth", "required"),
            ("listener.security.protocol.map", "EXT:SASL_SSL,INT:SSL"),
        ];
        assert_eq!(
            resolve("EXT", &mapped).unwrap().client_auth,
            ClientAuth::None
        );
        assert_eq!(
            resolve("INT", &mapped).unwrap().client_auth,
            ClientAuth::Required
        );
        let prefixed = [("listener.name.sasl_ssl.ssl.client.auth", "requested")];
        assert_eq!(
            resolve("SASL_SSL", &prefixed).unwrap().client_auth,
            ClientAuth::Requested
        );
        let err = resolve("SSL", &[("ssl.client.auth", "sometimes")]).unwrap_err();
        assert!(err.to_string().contains("ssl.client.auth"), "{err}");
    }

    #[test]
    fn kafkas_store_combinations_are_refused_naming_the_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[
                    ("ssl.keystore.location", "/k.p12"),
                    ("ssl.keystore.type", "PKCS12"),
                ],
                "ssl.keystore.password",
            ),
            (&[("ssl.keystore.password", "x")], "ssl.keystore.password"),
            (
                &[
                    ("ssl.keystore.key", "k"),
                    ("ssl.keystore.certificate.chain", "c"),
                ],
                "ssl.keystore.key",
            ),
            (
                &[("ssl.keystore.type", "PEM"), ("ssl.keystore.key", "k")],
                "ssl.keystore.certificate.chain",
            ),
            (
                &[
                    ("ssl.keystore.type", "PEM"),
                    ("ssl.keystore.certificate.chain", "c"),
                ],
                "ssl.keystore.key",
            ),
            (
                &[
                    ("ssl.keystore.type", "PEM"),
                    ("ssl.keystore.location", "/k.pem"),
                    ("ssl.keystore.password", "x"),
                ],
                "ssl.keystore.password",
            ),
            (
                &[
                    ("ssl.truststore.type", "PEM"),
                    ("ssl.truststore.location", "/t.pem"),
                    ("ssl.truststore.password", "x"),
                ],
                "ssl.truststore.password",
            ),
            (
                &[("ssl.truststore.certificates", "c")],
                "ssl.truststore.certificates",
            ),
            (
                &[("ssl.truststore.password", "x")],
                "ssl.truststore.password",
            ),
            (&[("ssl.keystore.type", "pem")], "ssl.keystore.type"),
            (
                &[("listener.name.ssl.ssl.allow.dn.changes", "maybe")],
                "listener.name.ssl.ssl.allow.dn.changes",
            ),
        ];
        for (pairs, key) in cases {
            let err = resolve("SSL", pairs).unwrap_err();
            match &err {
                ConfigError::InvalidValue { key: k, .. } => assert_eq!(k, key, "{pairs:?}: {err}"),
                other => panic!("{other}"),
            }
        }
        // A truststore password is optional for PKCS12.
        assert!(resolve(
            "SSL",
            &[
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", "/t.p12")
            ]
        )
        .is_ok());
    }

    #[test]
    fn passwords_never_show_in_debug_output() {
        let s = resolve(
            "SSL",
            &[
                ("ssl.keystore.location", "/k"),
                ("ssl.keystore.password", "s3cret"),
            ],
        )
        .unwrap();
        assert!(!format!("{s:?}").contains("s3cret"));
    }
}
