//! `[drv]` Dynamic broker configs on the control shard (Kafka 3.9
//! `ZkAdminManager.alterConfigs / incrementalAlterConfigs` for BROKER
//! resources, `AdminZkClient.changeBrokerConfig`, `BrokerConfigHandler`):
//! `/config/brokers/<id>` and `/config/brokers/<default>` read from the
//! metadata store into every publication, and AlterConfigs /
//! IncrementalAlterConfigs written there with a `/config/changes`
//! notification (`shard::control::config_changes` reloads on every ZooKeeper-mode
//! broker). What may be stored and how the layers resolve is
//! `config::dynamic` [pure].
//!
//! Listener SSL keys (KIP-226, `config::dynamic::security`): a change is
//! checked by the listener's TLS (`ListenerSslReconfigurable::validate`,
//! Kafka's `SslFactory.validateReconfiguration` from
//! `DynamicBrokerConfig.processReconfiguration`) before it is stored, its
//! passwords encoded with `password.encoder.secret`
//! (`DynamicBrokerConfig.toPersistentProps`); every load of this broker's
//! entity (at start, after an alter, on a `/config/changes` notification
//! written by anyone) decodes them (`fromPersistentProps`) and
//! reconfigures each listener whose keys changed. A listener that refuses
//! keeps its stores and the refusal is logged, as Kafka's
//! `DynamicBrokerConfig.updateCurrentConfig` logs it.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use rand::RngCore;

use super::client_quotas::store_entity_config;
use super::ControlShard;
use crate::config::dynamic::security::{self, ListenerSslReconfigurable};
use crate::config::dynamic::{self, DynamicBrokerConfigs, DEFAULT_ENTITY};
use crate::config::password_encoder::{self, PasswordEncoder};
use crate::config::ServerConfig;
use crate::controller::admin_requests::{AdminFailure, BrokerConfigCall, BrokerConfigChange};
use crate::controller::topic_configs::apply_alter_ops;
use crate::protocol::ErrorCode;
use crate::zk::paths::{self, ConfigZNode};
use crate::zk::store::{MetadataStore, StoreError};

/// Kafka's `ConfigType.Broker` entity folder.
const BROKERS: &str = "brokers";

impl ControlShard {
    /// The dynamic broker configs every publication carries.
    pub fn broker_configs(&self) -> Arc<DynamicBrokerConfigs> {
        self.broker_configs.borrow().clone()
    }

    /// The TLS of this broker's SSL listeners, which dynamic keystore and
    /// truststore changes reconfigure (until set: none).
    pub fn set_ssl_listeners(&self, listeners: Rc<dyn ListenerSslReconfigurable>) {
        *self.ssl_listeners.borrow_mut() = listeners;
    }

    /// Read this broker's (`base.broker_id`) and the default entity
    /// again, passwords decoded; whether they changed. The listeners whose
    /// SSL keys changed are reconfigured.
    pub async fn reload_broker_configs(&self, base: &ServerConfig) -> bool {
        let store = self.admin.store();
        let encoder = current_encoder(base);
        let (cluster_default, bad_default) = security::decode_stored(
            read_entity(store, DEFAULT_ENTITY).await.0,
            false,
            encoder.as_ref(),
        );
        let (per_broker, bad_broker) = security::decode_stored(
            read_entity(store, &base.broker_id.to_string()).await.0,
            true,
            encoder.as_ref(),
        );
        for (key, why) in bad_default.iter().chain(&bad_broker) {
            // Kafka: "Dynamic password config … could not be decoded, ignoring."
            tracing::error!(%key, reason = %why, "dynamic broker config ignored");
        }
        let loaded = DynamicBrokerConfigs {
            cluster_default,
            per_broker,
        };
        let before = self.broker_configs();
        let changed = *before != loaded;
        if changed {
            // Values as DescribeConfigs shows them: passwords hidden.
            let shown = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
                m.iter()
                    .map(|(k, v)| {
                        let v = if security::is_password_config(k) {
                            "[hidden]"
                        } else {
                            v
                        };
                        (k.clone(), v.to_owned())
                    })
                    .collect()
            };
            tracing::info!(default = ?shown(&loaded.cluster_default), broker = ?shown(&loaded.per_broker), "dynamic broker configs loaded");
            self.reconfigure_listeners(&before.per_broker, &loaded);
            *self.broker_configs.borrow_mut() = Arc::new(loaded);
        }
        changed
    }

    /// Kafka's `processListenerReconfigurable` after a load: each listener
    /// whose SSL keys differ from `before` takes its new settings.
    fn reconfigure_listeners(&self, before: &BTreeMap<String, String>, now: &DynamicBrokerConfigs) {
        let listeners = self.ssl_listeners.borrow().clone();
        let lookup = security::dynamic_lookup(&now.per_broker, &now.cluster_default);
        for listener in security::changed_listeners(before, &now.per_broker) {
            match listeners.reconfigure(&listener, &lookup) {
                Ok(()) => {
                    tracing::info!(%listener, "listener SSL keystore/truststore reconfigured")
                }
                Err(e) => {
                    tracing::error!(%listener, error = %e, "listener SSL reconfiguration refused; the listener keeps its stores")
                }
            }
        }
    }

    /// Kafka's `DynamicBrokerConfig.maybeReEncodePasswords` at start: with
    /// `password.encoder.old.secret`, this broker's stored passwords the
    /// old secret decodes are written back encoded with the current one.
    pub async fn reencode_passwords(&self, base: &ServerConfig) {
        let (Some(old), Some(current)) = (
            base.password_encoder_old_secret
                .as_ref()
                .and_then(|s| password_encoder::from_config(base, s).ok()),
            current_encoder(base),
        ) else {
            return;
        };
        let store = self.admin.store();
        let entity = base.broker_id.to_string();
        let (stored, version) = read_entity(store, &entity).await;
        let Ok(version) = version else {
            return;
        };
        match security::reencode(&stored, &old, &current, &mut random) {
            Ok(Some(again)) if again != stored => {
                let written =
                    store_entity_config(store, format!("{BROKERS}/{entity}"), again, version).await;
                match written {
                    Ok(()) => tracing::info!("dynamic password configs re-encoded with the current password.encoder.secret"),
                    Err(e) => tracing::warn!(error = %e, "re-encoding dynamic password configs"),
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "re-encoding dynamic password configs"),
        }
    }

    /// One BROKER resource's AlterConfigs / IncrementalAlterConfigs:
    /// the entity's new config checked against `base` (this broker's
    /// `server.properties`), then (unless validate-only) written with a
    /// change notification. The caller reloads and republishes.
    pub async fn alter_broker_configs(
        &self,
        base: &ServerConfig,
        call: BrokerConfigCall,
    ) -> Result<(), AdminFailure> {
        let store = self.admin.store();
        let per_broker = call.broker.is_some();
        let entity = call
            .broker
            .map_or_else(|| DEFAULT_ENTITY.to_owned(), |b| b.to_string());
        let (stored, version) = read_entity(store, &entity).await;
        let version = version.map_err(|e| failure(ErrorCode::UNKNOWN_SERVER_ERROR, e))?;
        let encoder = current_encoder(base);
        let updated = match call.change {
            BrokerConfigChange::Replace(config) => config,
            BrokerConfigChange::Incremental(ops) => {
                // ZkAdminManager.incrementalAlterConfigs: the stored
                // config as `fromPersistentProps` reads it, then the ops.
                let (current, _) = security::decode_stored(stored, per_broker, encoder.as_ref());
                apply_alter_ops(current, &ops, |k, o| current_list(base, k, o))
                    .map_err(AdminFailure::from)?
            }
        };
        // ZkAdminManager.alterConfigs / incrementalAlterConfigs
        // (handleValidateAlterConfigsError) wrap the ConfigException in an
        // InvalidRequestException (INVALID_REQUEST):
        // "Invalid config value for resource ConfigResource(type=BROKER, name='1'): …"
        let name = call.broker.map_or_else(String::new, |b| b.to_string());
        let invalid = |e: &str| {
            failure(
                ErrorCode::INVALID_REQUEST,
                format!("Invalid config value for resource ConfigResource(type=BROKER, name='{name}'): {e}"),
            )
        };
        dynamic::validate(base, &updated, per_broker).map_err(|e| invalid(&e))?;
        if per_broker {
            self.validate_listeners(&updated, call.validate_only)
                .map_err(|e| invalid(&e))?;
        }
        if call.validate_only {
            return Ok(());
        }
        let persistent =
            security::encode_passwords(&updated, per_broker, encoder.as_ref(), &mut random)
                .map_err(|e| invalid(&e))?;
        store_entity_config(store, format!("{BROKERS}/{entity}"), persistent, version)
            .await
            .map_err(|e| failure(ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()))
    }

    /// This broker's listeners check the SSL keys of its new config
    /// (`DynamicBrokerConfig.processReconfiguration` with validateOnly):
    /// the ones whose keys changed validate them; a refusal is Kafka's
    /// "Invalid dynamic configuration" (the reason is logged, as Kafka
    /// logs the cause). Listeners named with unchanged keys reload their
    /// files unless `validate_only` (`reloadUpdatedFilesWithoutConfigChange`:
    /// a keystore replaced in place at the same location).
    fn validate_listeners(
        &self,
        updated: &BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), String> {
        let listeners = self.ssl_listeners.borrow().clone();
        let now = self.broker_configs();
        let lookup = security::dynamic_lookup(updated, &now.cluster_default);
        let changed = security::changed_listeners(&now.per_broker, updated);
        for listener in &changed {
            if let Err(e) = listeners.validate(listener, &lookup) {
                tracing::info!(%listener, error = %e, "dynamic listener SSL config refused");
                return Err("Invalid dynamic configuration".into());
            }
        }
        if !validate_only {
            for listener in security::listeners_named(updated).difference(&changed) {
                if let Err(e) = listeners.reconfigure(listener, &lookup) {
                    tracing::info!(%listener, error = %e, "reloading the listener's SSL files refused");
                    return Err("Invalid dynamic configuration".into());
                }
            }
        }
        Ok(())
    }
}

/// The encoder `password.encoder.secret` configures, if set (its settings
/// were checked at start).
fn current_encoder(base: &ServerConfig) -> Option<PasswordEncoder> {
    let secret = base.password_encoder_secret.as_ref()?;
    password_encoder::from_config(base, secret)
        .map_err(|e| tracing::warn!(error = %e, "password.encoder settings"))
        .ok()
}

/// Salt and IV bytes for the encoder, from the operating system.
fn random(buf: &mut [u8]) {
    rand::rngs::OsRng.fill_bytes(buf);
}

fn failure(code: ErrorCode, message: impl Into<String>) -> AdminFailure {
    AdminFailure {
        code,
        message: message.into(),
    }
}

/// A list-typed broker key's items (`log.cleanup.policy`): the stored
/// value, else this broker's static one; `None` for other keys.
fn current_list(
    base: &ServerConfig,
    key: &str,
    stored: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    let kv = base.key_values().into_iter().find(|kv| kv.name == key)?;
    if kv.config_type != crate::config::topic::ConfigType::List {
        return None;
    }
    let raw = stored.get(key).cloned().or(kv.value).unwrap_or_default();
    Some(
        raw.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// `/config/brokers/<entity>`'s config and znode version (`Ok(None)`:
/// no znode). An unreadable or malformed entity reads as empty with a
/// warning; the version then carries the store's error.
async fn read_entity<S: MetadataStore>(
    store: &S,
    entity: &str,
) -> (BTreeMap<String, String>, Result<Option<i32>, String>) {
    let path = paths::config_entity(BROKERS, entity);
    match store.get(&path).await {
        Ok((data, stat)) => match ConfigZNode::decode(&data) {
            Ok(z) => (z.config, Ok(Some(stat.version))),
            Err(e) => {
                tracing::warn!(%path, error = %e.0, "malformed broker config");
                (BTreeMap::new(), Ok(Some(stat.version)))
            }
        },
        Err(StoreError::NoNode(_)) => (BTreeMap::new(), Ok(None)),
        Err(e) => {
            tracing::warn!(%path, error = %e, "reading a broker config");
            (BTreeMap::new(), Err(e.to_string()))
        }
    }
}
