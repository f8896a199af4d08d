//! `[drv]` The TLS of this broker's SSL listeners as the dynamic broker
//! configs reach it (KIP-226; Kafka 3.9 `DynamicBrokerConfig.scala`
//! `processListenerReconfigurable`, `clients/.../security/ssl/SslFactory.java`
//! `validateReconfiguration` / `reconfigure`): the
//! [`ListenerSslReconfigurable`] the control shard calls
//! (`control_shard::broker_configs`), over each listener's shared
//! `tls::ListenerTls`.
//!
//! A listener's new settings are its keys from the dynamic layers (per
//! broker over cluster default) over `server.properties`' SSL keys,
//! resolved by `tls::SslSettings` (listener prefix over unprefixed).
//! Validation runs the update on a copy of the listener built from its
//! settings in force, so nothing changes until `reconfigure`;
//! `ListenerTls::reload` keeps the old stores on any error, and
//! connections already open keep theirs.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::dynamic::security::ListenerSslReconfigurable;
use crate::config::{SecurityProtocol, ServerConfig};
use crate::tls::{ListenerTls, SslSettings};

/// One SSL listener's TLS and what its settings resolve with.
struct Entry {
    name: String,
    tls: Arc<ListenerTls>,
    sasl_ssl: bool,
    inter_broker: bool,
}

/// The broker's SSL listeners, by lower-case name (Kafka's
/// `ListenerName.configPrefix` lower-cases it).
pub struct SslListeners {
    statics: BTreeMap<String, String>,
    listeners: BTreeMap<String, Entry>,
}

impl SslListeners {
    /// No listener yet; `config`'s static SSL keys under every update.
    pub fn new(config: &ServerConfig) -> Self {
        SslListeners {
            statics: config.ssl_keys.clone(),
            listeners: BTreeMap::new(),
        }
    }

    /// Add listener `name` (as in `listeners`) with its TLS; its protocol
    /// and role come from `config`.
    pub fn add(&mut self, config: &ServerConfig, name: &str, tls: Arc<ListenerTls>) {
        let entry = Entry {
            name: name.to_owned(),
            tls,
            sasl_ssl: config.listener_protocol(name) == SecurityProtocol::SaslSsl,
            inter_broker: config.inter_broker_listener().eq_ignore_ascii_case(name),
        };
        self.listeners.insert(name.to_ascii_lowercase(), entry);
    }

    /// The listener's entry and its settings with `dynamic` over the
    /// static keys.
    fn resolve(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(&Entry, SslSettings), String> {
        let entry = self
            .listeners
            .get(&listener.to_ascii_lowercase())
            .ok_or_else(|| format!("Listener {listener} of this broker does not use SSL"))?;
        let lookup = |key: &str| dynamic(key).or_else(|| self.statics.get(key).cloned());
        let settings = SslSettings::resolve_with_protocol(&entry.name, entry.sasl_ssl, &lookup)
            .map_err(|e| e.to_string())?;
        Ok((entry, settings))
    }
}

impl ListenerSslReconfigurable for SslListeners {
    fn validate(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let (entry, settings) = self.resolve(listener, dynamic)?;
        let probe = ListenerTls::with_role(entry.tls.settings(), entry.inter_broker)
            .map_err(|e| format!("the listener's stores in force no longer load: {e}"))?;
        probe.reload(settings)
    }

    fn reconfigure(
        &self,
        listener: &str,
        dynamic: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(), String> {
        let (entry, settings) = self.resolve(listener, dynamic)?;
        entry.tls.reload(settings)
    }
}

#[cfg(test)]
mod tests;
