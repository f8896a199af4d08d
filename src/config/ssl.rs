//! `[pure]` The SSL keys of `server.properties`: which `ssl.*` keys shardlog
//! implements, which Kafka keys it does not (they stop the start), and how
//! a listener prefix `listener.name.<listener lower-case>.` is taken apart.
//!
//! Key names and defaults: Kafka 3.9's
//! `clients/src/main/java/org/apache/kafka/common/config/SslConfigs.java` and
//! `clients/.../config/internals/BrokerSecurityConfigs.java`. The values are
//! resolved per listener by `tls::SslSettings`.

use std::collections::BTreeMap;

use super::ConfigError;

/// `ssl.*` keys shardlog applies (`SslConfigs` plus the broker's
/// `ssl.client.auth`, `ssl.principal.mapping.rules` and KIP-226's
/// `ssl.allow.dn.changes` / `ssl.allow.san.changes`).
pub const SUPPORTED: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
    "ssl.principal.mapping.rules",
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
    // Accepted only with the JVM's default value (checked below).
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
];

/// Kafka keys that plug Java machinery into the TLS engine; shardlog has no
/// such machinery (rustls with the ring provider is the engine), so a value
/// for any of them stops the start rather than being ignored.
pub const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "ssl.engine.factory.class",
        "a Java SslEngineFactory cannot be loaded; shardlog's TLS engine is rustls",
    ),
    (
        "ssl.provider",
        "Java security providers do not apply; shardlog uses rustls with the ring provider",
    ),
    (
        "security.providers",
        "Java security providers do not apply; shardlog uses rustls with the ring provider",
    ),
    (
        "ssl.secure.random.implementation",
        "the random source is ring's (the operating system's), not a Java SecureRandom",
    ),
];

/// The key managers' and trust managers' algorithm Kafka uses by default
/// (`KeyManagerFactory.getDefaultAlgorithm()` = SunX509,
/// `TrustManagerFactory.getDefaultAlgorithm()` = PKIX): the only values
/// whose behaviour shardlog reproduces.
pub const DEFAULT_ALGORITHMS: &[(&str, &str)] = &[
    ("ssl.keymanager.algorithm", "SunX509"),
    ("ssl.trustmanager.algorithm", "PKIX"),
];

/// Is `key` one the SSL code owns: `ssl.*`, `listener.name.<l>.ssl.*`, or
/// `security.providers`?
pub fn is_ssl_key(key: &str) -> bool {
    key == "security.providers" || split_listener(key).1.starts_with("ssl.")
}

/// `listener.name.<l>.<rest>` → `(Some(l), rest)`; any other key →
/// `(None, key)`.
pub fn split_listener(key: &str) -> (Option<&str>, &str) {
    match key
        .strip_prefix("listener.name.")
        .and_then(|rest| rest.split_once('.'))
    {
        Some((listener, rest)) if !listener.is_empty() => (Some(listener), rest),
        _ => (None, key),
    }
}

/// Every SSL key must be one shardlog applies; a Kafka key it does not
/// implement, or an unknown `ssl.*` key, stops the start naming it.
pub fn check_keys(keys: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (key, value) in keys {
        let (_, base) = split_listener(key);
        let invalid = |reason: String| ConfigError::InvalidValue {
            key: key.clone(),
            value: value.clone(),
            reason,
        };
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(k, _)| *k == base) {
            return Err(invalid(format!("not supported by shardlog: {why}")));
        }
        if !SUPPORTED.contains(&base) {
            return Err(invalid(
                "unknown SSL config key (Kafka 3.9's SslConfigs has no such key)".into(),
            ));
        }
        if let Some((_, default)) = DEFAULT_ALGORITHMS.iter().find(|(k, _)| *k == base) {
            // Java's algorithm names are case-insensitive
            // (`KeyManagerFactory.getInstance`).
            if !value.trim().is_empty() && !value.trim().eq_ignore_ascii_case(default) {
                return Err(invalid(format!(
                    "only the JVM default {default} is supported (rustls verifies with webpki)"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn ssl_keys_are_recognised_with_and_without_a_listener_prefix() {
        assert!(is_ssl_key("ssl.keystore.location"));
        assert!(is_ssl_key("listener.name.external.ssl.keystore.location"));
        assert!(is_ssl_key("security.providers"));
        assert!(!is_ssl_key(
            "listener.name.external.sasl.enabled.mechanisms"
        ));
        assert!(!is_ssl_key("listener.security.protocol.map"));
        assert!(!is_ssl_key("sasl.enabled.mechanisms"));
        assert_eq!(
            split_listener("listener.name.internal.ssl.client.auth"),
            (Some("internal"), "ssl.client.auth")
        );
        assert_eq!(split_listener("ssl.client.auth"), (None, "ssl.client.auth"));
    }

    #[test]
    fn unsupported_and_unknown_keys_are_refused_by_name() {
        assert!(check_keys(&keys(&[
            ("ssl.keystore.location", "/x"),
            ("listener.name.ssl.ssl.client.auth", "required"),
            ("ssl.keymanager.algorithm", "SunX509"),
            ("ssl.trustmanager.algorithm", "pkix"),
        ]))
        .is_ok());
        for (key, value) in [
            ("ssl.engine.factory.class", "com.example.F"),
            ("listener.name.x.ssl.provider", "BC"),
            ("security.providers", "com.example.P"),
            ("ssl.secure.random.implementation", "SHA1PRNG"),
            ("ssl.keymanager.algorithm", "NewSunX509"),
            ("ssl.trustmanager.algorithm", "SunX509"),
            ("ssl.keystore.flavour", "x"),
        ] {
            let err = check_keys(&keys(&[(key, value)])).unwrap_err();
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn the_server_properties_parser_keeps_ssl_keys_and_refuses_unknown_ones() {
        let loaded = crate::config::ServerConfig::from_properties(
            "ssl.keystore.type=PEM\nlistener.name.external.ssl.keystore.location=/k.pem\n",
            &[],
        )
        .unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        assert_eq!(
            loaded
                .config
                .ssl_keys
                .get("listener.name.external.ssl.keystore.location"),
            Some(&"/k.pem".to_owned())
        );
        let err = crate::config::ServerConfig::from_properties("ssl.provider=SunJSSE\n", &[])
            .unwrap_err();
        assert!(err.to_string().contains("ssl.provider"), "{err}");
    }
}
