//! The TLS state of one listener, shared by every shard that accepts on it:
//! the current rustls server config for new connections, and KIP-226
//! reloads of its keystore and truststore (Kafka 3.9,
//! `clients/.../security/ssl/SslFactory.java`: `reconfigure`,
//! `createNewSslEngineFactory`, `CertificateEntries.ensureCompatible`;
//! `DefaultSslEngineFactory.shouldBeRebuilt`).
//!
//! Existing connections keep the `Arc<ServerConfig>` they were accepted
//! with; a reload only changes what the next accept gets. The state sits
//! behind a `std::sync::RwLock` rather than a copy per shard: it is read
//! once per accepted TLS connection (a clone of an `Arc`, uncontended) and
//! written only by a dynamic config update, and one copy means every shard
//! switches to the new certificate at the same moment with one validation.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;

use super::build;
use super::principal::{self, PrincipalMapper};
use super::selfcheck;
use super::settings::SslSettings;
use super::stores::{self, FileTimes, KeyMaterial};
use crate::config::ConfigError;

/// The subject DN and SANs of the keystore's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    dn: String,
    sans: BTreeSet<String>,
}

#[derive(Debug)]
struct State {
    settings: SslSettings,
    config: Arc<ServerConfig>,
    identity: Option<Identity>,
    has_truststore: bool,
    files: FileTimes,
    /// For the inter-broker listener's cross-handshake on reload.
    keystore: Option<KeyMaterial>,
    truststore: Option<Vec<rustls_pki_types::CertificateDer<'static>>>,
}

/// One SSL listener's TLS configuration, held as `Arc<ListenerTls>` by
/// every shard.
#[derive(Debug)]
pub struct ListenerTls {
    state: RwLock<State>,
    mapper: Arc<PrincipalMapper>,
    /// The inter-broker listener: a reload must handshake old ↔ new
    /// (`SslFactory.keystoreVerifiableUsingTruststore`).
    inter_broker: bool,
}

fn identity(keystore: Option<&KeyMaterial>) -> Result<Option<Identity>, String> {
    let Some(leaf) = keystore.and_then(|k| k.chain.first()) else {
        return Ok(None);
    };
    Ok(Some(Identity {
        dn: principal::rfc2253_subject(leaf)?,
        sans: principal::subject_alt_names(leaf)?.into_iter().collect(),
    }))
}

fn load(settings: SslSettings) -> Result<State, ConfigError> {
    let named = settings.clone();
    load_inner(settings).map_err(|e| named.name_error(e))
}

fn load_inner(settings: SslSettings) -> Result<State, ConfigError> {
    let files = stores::file_times(&settings);
    let keystore = stores::load_keystore(&settings)?;
    let truststore = stores::load_truststore(&settings)?;
    let config = build::server_config_from(&settings, keystore.as_ref(), truststore.as_deref())?;
    let identity = identity(keystore.as_ref()).map_err(|reason| ConfigError::InvalidValue {
        key: "ssl.keystore.location".into(),
        value: settings.keystore_location.clone().unwrap_or_default(),
        reason,
    })?;
    Ok(State {
        has_truststore: truststore.is_some(),
        settings,
        config,
        identity,
        files,
        keystore,
        truststore,
    })
}

impl ListenerTls {
    /// Load the stores of `settings` and build the server config.
    pub fn new(settings: SslSettings) -> Result<Self, ConfigError> {
        Self::with_role(settings, false)
    }

    /// As [`ListenerTls::new`]; `inter_broker` marks the listener brokers
    /// talk over, whose reloads must also handshake old ↔ new.
    pub fn with_role(settings: SslSettings, inter_broker: bool) -> Result<Self, ConfigError> {
        let mapper = Arc::new(
            PrincipalMapper::parse(&settings.principal_mapping_rules)
                .map_err(|e| settings.name_error(e))?,
        );
        Ok(Self {
            state: RwLock::new(load(settings)?),
            mapper,
            inter_broker,
        })
    }

    /// The server config for a new connection.
    pub fn server_config(&self) -> Arc<ServerConfig> {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .config
            .clone()
    }

    /// The settings in force.
    pub fn settings(&self) -> SslSettings {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .settings
            .clone()
    }

    /// `ssl.principal.mapping.rules` of this listener (not reconfigurable).
    pub fn principal_mapper(&self) -> Arc<PrincipalMapper> {
        self.mapper.clone()
    }

    /// Apply a dynamic update (KIP-226) with Kafka's validation; the old
    /// config stays in force on any error. Re-sending unchanged settings
    /// reloads the files only if their modification time changed.
    pub fn reload(&self, new: SslSettings) -> Result<(), String> {
        let fail = |reason: String| {
            format!("Validation of dynamic config update of SSLFactory failed: {reason}")
        };
        let (old_settings, old_files) = {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            (state.settings.clone(), state.files.clone())
        };
        let changed = old_settings.non_reconfigurable_changes(&new);
        if !changed.is_empty() {
            // DynamicBrokerConfig.validateConfigs.
            return Err(format!(
                "Cannot update these configs dynamically: {}",
                changed.join(",")
            ));
        }
        if new.listener != old_settings.listener {
            return Err(format!(
                "settings of listener {} given to listener {}",
                new.listener, old_settings.listener
            ));
        }
        // A listener serving TLS always has a keystore
        // (SslFactory.validateKeystoreCompatibility).
        if !new.has_keystore() {
            return Err(fail("Cannot remove the SSL keystore from an existing listener for which a keystore was configured.".into()));
        }
        // DefaultSslEngineFactory.shouldBeRebuilt.
        if new == old_settings && stores::file_times(&new) == old_files {
            return Ok(());
        }
        let next = load(new).map_err(|e| fail(e.to_string()))?;
        {
            let state = self.state.read().unwrap_or_else(PoisonError::into_inner);
            check_compatible(&state, &next).map_err(fail)?;
            if self.inter_broker {
                cross_check(&state, &next).map_err(fail)?;
            }
        }
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = next;
        Ok(())
    }
}

/// `SslFactory.createNewSslEngineFactory` / `validateKeystoreCompatibility`
/// / `CertificateEntries.ensureCompatible`.
fn check_compatible(old: &State, new: &State) -> Result<(), String> {
    match (&old.identity, &new.identity) {
        (None, Some(_)) => {
            return Err(
                "Cannot add SSL keystore to an existing listener for which no keystore was configured."
                    .into(),
            )
        }
        (Some(_), None) => {
            return Err("Cannot remove the SSL keystore from an existing listener for which a keystore was configured.".into())
        }
        (Some(o), Some(n)) => {
            // Principal.getName compared ignoring case.
            // The flags are the listener's static ones (equal in old and new:
            // a change is refused before this point).
            if !old.settings.allow_dn_changes && !o.dn.eq_ignore_ascii_case(&n.dn) {
                return Err(format!(
                    "Keystore DistinguishedName does not match:  existing={{DN={}}}, new={{DN={}}}",
                    o.dn, n.dn
                ));
            }
            if !old.settings.allow_san_changes && !n.sans.is_superset(&o.sans) {
                return Err(format!(
                    "Keystore SubjectAltNames do not match:  existing={{SAN={:?}}}, new={{SAN={:?}}}",
                    o.sans, n.sans
                ));
            }
        }
        (None, None) => {}
    }
    if !old.has_truststore && new.has_truststore {
        return Err(
            "Cannot add SSL truststore to an existing listener for which no truststore was configured."
                .into(),
        );
    }
    Ok(())
}

/// `SslEngineValidator.validate(old, new)`: the old server with a new
/// client, and the new server with an old client, both handshake.
fn cross_check(old: &State, new: &State) -> Result<(), String> {
    let client = |state: &State| -> Result<_, String> {
        let trust = match &state.truststore {
            Some(t) => t.clone(),
            None => stores::system_roots().map_err(|e| e.to_string())?,
        };
        build::client_config_from(&state.settings, state.keystore.as_ref(), &trust, false)
            .map_err(|e| e.to_string())
    };
    let host = "localhost";
    selfcheck::handshake(client(new)?, old.config.clone(), host)
        .map_err(|e| format!("the new client cannot handshake with the old server: {e}"))?;
    selfcheck::handshake(client(old)?, new.config.clone(), host)
        .map(|_| ())
        .map_err(|e| format!("the old client cannot handshake with the new server: {e}"))
}
