//! `[pure]` Dynamic listener SSL keys (KIP-226; Kafka 3.9
//! `core/src/main/scala/kafka/server/DynamicBrokerConfig.scala`,
//! `clients/.../config/SslConfigs.java` `RECONFIGURABLE_CONFIGS`,
//! `clients/.../security/ssl/SslFactory.java`): which security keys a
//! BROKER resource may carry and at which level, which of them are
//! passwords (stored encoded by `config::password_encoder`), which
//! listeners a change touches, and the seam to the TLS core that checks
//! and applies a listener's new keystore/truststore.
//!
//! - A reconfigurable SSL key is dynamic only with its listener's prefix
//!   (`listener.name.<l>.ssl.keystore.location`); unprefixed it is refused
//!   ("These security configs can be dynamically updated only per-listener
//!   using the listener prefix").
//! - Listener-prefixed keys are per broker: refused at `<default>`
//!   ("Cannot update these configs at default cluster level, broker id
//!   must be specified").
//! - Listener-prefixed keys shardlog cannot change on a running listener
//!   (`ssl.client.auth`, protocols, ciphers, SASL keys, …) are refused as
//!   static ("Cannot update these configs dynamically").
//! - Password keys (`DynamicBrokerConfig.isPasswordConfig`: the name ends
//!   with one of Kafka's dynamic PASSWORD-type keys) are encoded before
//!   they are stored, need `password.encoder.secret` ("Password encoder
//!   secret not configured") and a broker id ("Password config can be
//!   defined only at broker level").

use std::collections::{BTreeMap, BTreeSet};

use crate::config::password_encoder::PasswordEncoder;

/// `SslConfigs.RECONFIGURABLE_CONFIGS`: what a running SSL listener
/// takes (`SslFactory.reconfigurableConfigs`).
pub const RECONFIGURABLE_SSL: [&str; 10] = [
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
];

/// `DynamicBrokerConfig.DynamicPasswordConfigs`: the PASSWORD-type keys
/// among Kafka's dynamic configs; a key is a password if its name ends
/// with one of them (`isPasswordConfig`), listener prefix or not.
pub const PASSWORD_CONFIGS: [&str; 7] = [
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "sasl.jaas.config",
];

/// Kafka's `DynamicBrokerConfig.isPasswordConfig`.
pub fn is_password_config(name: &str) -> bool {
    PASSWORD_CONFIGS.iter().any(|p| name.ends_with(p))
}

/// `ListenerConfigRegex` (`listener\.name\.[^.]*\.(.*)`): the listener
/// name (lower case, as `ListenerName.configPrefix` writes it) and the
/// base key.
pub fn listener_key(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, base) = rest.split_once('.')?;
    (!base.is_empty()).then_some((listener, base))
}

/// Whether `name` is a listener-prefixed key shardlog reconfigures.
pub fn is_listener_ssl_key(name: &str) -> bool {
    listener_key(name).is_some_and(|(_, base)| RECONFIGURABLE_SSL.contains(&base))
}

/// Scala's `Set(a, b)` of the names, as Kafka's messages print them.
fn scala_set(names: &BTreeSet<&str>) -> String {
    let names: Vec<&str> = names.iter().copied().collect();
    format!("Set({})", names.join(", "))
}

/// The listener-prefixed keys of `config` shardlog cannot change on a
/// running listener (refused with "Cannot update these configs
/// dynamically" together with the static keys).
pub fn fixed_listener_keys(config: &BTreeMap<String, String>) -> BTreeSet<&str> {
    config
        .keys()
        .map(String::as_str)
        .filter(|k| listener_key(k).is_some() && !is_listener_ssl_key(k))
        .collect()
}

/// Kafka's `DynamicBrokerConfig.validateConfigs` for the security keys
/// of one entity's new config (`per_broker`: `/config/brokers/<id>`, else
/// `<default>`), after the static keys were refused; the message of the
/// ConfigException.
pub fn check_security_keys(
    config: &BTreeMap<String, String>,
    per_broker: bool,
) -> Result<(), String> {
    let unprefixed: BTreeSet<&str> = RECONFIGURABLE_SSL
        .iter()
        .copied()
        .filter(|k| config.contains_key(*k))
        .collect();
    if !unprefixed.is_empty() {
        return Err(format!(
            "These security configs can be dynamically updated only per-listener using the listener prefix: {}",
            scala_set(&unprefixed)
        ));
    }
    if !per_broker {
        let prefixed: BTreeSet<&str> = config
            .keys()
            .map(String::as_str)
            .filter(|k| listener_key(k).is_some())
            .collect();
        if !prefixed.is_empty() {
            return Err(format!(
                "Cannot update these configs at default cluster level, broker id must be specified: {}",
                scala_set(&prefixed)
            ));
        }
    }
    Ok(())
}

/// Kafka's `toPersistentProps`: every password value of `config`
/// encoded (`random` gives salt and IV bytes). Errors are Kafka's.
pub fn encode_passwords(
    config: &BTreeMap<String, String>,
    per_broker: bool,
    encoder: Option<&PasswordEncoder>,
    random: &mut dyn FnMut(&mut [u8]),
) -> Result<BTreeMap<String, String>, String> {
    let mut out = config.clone();
    for (name, value) in config {
        if !is_password_config(name) {
            continue;
        }
        if !per_broker {
            return Err("Password config can be defined only at broker level".into());
        }
        let encoder = encoder.ok_or("Password encoder secret not configured")?;
        out.insert(name.clone(), encoder.encode(value, random)?);
    }
    Ok(out)
}

/// Kafka's `fromPersistentProps` for stored values: passwords decoded;
/// one that does not decode (another secret, a corrupt value, or no
/// secret configured) is dropped and named with the reason, as Kafka logs
/// "Dynamic password config … could not be decoded, ignoring". At
/// `<default>` (`per_broker` false) listener-prefixed keys are dropped
/// too ("Per-broker configs defined at default cluster level will be
/// ignored").
pub fn decode_stored(
    stored: BTreeMap<String, String>,
    per_broker: bool,
    encoder: Option<&PasswordEncoder>,
) -> (BTreeMap<String, String>, Vec<(String, String)>) {
    let mut out = BTreeMap::new();
    let mut dropped = Vec::new();
    for (name, value) in stored {
        if !per_broker && listener_key(&name).is_some() {
            dropped.push((
                name,
                "Per-broker configs defined at default cluster level will be ignored".into(),
            ));
            continue;
        }
        if !is_password_config(&name) {
            out.insert(name, value);
            continue;
        }
        match encoder.map(|e| e.decode(&value)) {
            Some(Ok(plain)) => {
                out.insert(name, plain);
            }
            Some(Err(e)) => dropped.push((name, e)),
            None => dropped.push((name, "Password encoder secret not configured".into())),
        }
    }
    (out, dropped)
}

/// Kafka's `maybeReEncodePasswords` (`password.encoder.old.secret`): the
/// stored per-broker config with every password the old secret decodes
/// encoded again with the current one; `None` when there is no password
/// to re-encode. Values the old secret does not decode are kept (they may
/// already be under the new secret).
pub fn reencode(
    stored: &BTreeMap<String, String>,
    old: &PasswordEncoder,
    current: &PasswordEncoder,
    random: &mut dyn FnMut(&mut [u8]),
) -> Result<Option<BTreeMap<String, String>>, String> {
    if !stored.keys().any(|k| is_password_config(k)) {
        return Ok(None);
    }
    let mut out = stored.clone();
    for (name, value) in stored {
        if !is_password_config(name) {
            continue;
        }
        if let Ok(plain) = old.decode(value) {
            out.insert(name.clone(), current.encode(&plain, random)?);
        }
    }
    Ok(Some(out))
}

/// The listeners whose reconfigurable SSL keys differ between two
/// per-broker configs (`DynamicBrokerConfig.processListenerReconfigurable`
/// reconfigures a listener only then).
pub fn changed_listeners(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let ssl = |m: &BTreeMap<String, String>| -> BTreeMap<(String, String), String> {
        m.iter()
            .filter_map(|(k, v)| {
                let (l, base) = listener_key(k)?;
                RECONFIGURABLE_SSL
                    .contains(&base)
                    .then(|| ((l.to_owned(), base.to_owned()), v.clone()))
            })
            .collect()
    };
    let (old, new) = (ssl(old), ssl(new));
    old.keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .map(|(l, _)| l.clone())
        .collect()
}

/// The listeners `config` names reconfigurable SSL keys for.
pub fn listeners_named(config: &BTreeMap<String, String>) -> BTreeSet<String> {
    config
        .keys()
        .filter(|k| is_listener_ssl_key(k))
        .filter_map(|k| listener_key(k).map(|(l, _)| l.to_owned()))
        .collect()
}

/// The dynamic layers' value of a key for a listener's settings
/// (per broker over cluster default; the static file is the seam's
/// fallback): what `SslSettings::resolve`'s lookup asks first.
pub fn dynamic_lookup<'a>(
    per_broker: &'a BTreeMap<String, String>,
    cluster_default: &'a BTreeMap<String, String>,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |key| {
        per_broker
            .get(key)
            .or_else(|| cluster_default.get(key))
            .cloned()
    }
}

/// The seam to the TLS core: a running SSL listener's KIP-226
/// reconfiguration (`SslFactory.validateReconfiguration` /
/// `reconfigure`). `dynamic` answers a key (listener-prefixed or not)
/// from the dynamic layers; the implementation falls back to the static
/// `server.properties` for keys it does not answer (precedence per
/// broker > cluster default > static), resolves the listener's settings
/// and checks them (a keystore cannot be added or removed, the subject
/// DN and SANs must stay unless `ssl.allow.dn.changes` /
/// `ssl.allow.san.changes`, …). On error the listener keeps its stores.
pub trait ListenerSslReconfigurable {
    /// Check `listener`'s new settings without applying them.
    fn validate(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String>;
    /// Apply them to new connections (open ones keep theirs).
    fn reconfigure(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String>;
}

/// A broker without SSL listeners: every listener-prefixed SSL key names
/// a listener that has no TLS to reconfigure.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSslListeners;

impl ListenerSslReconfigurable for NoSslListeners {
    fn validate(&self, listener: &str, _: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        Err(format!(
            "Listener {listener} of this broker does not use SSL"
        ))
    }
    fn reconfigure(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        self.validate(listener, dynamic)
    }
}

#[cfg(test)]
mod tests;
