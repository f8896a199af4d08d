//! `[drv]` Dynamic broker configs on the control shard (Kafka 3.9
//! `ZkAdminManager.alterConfigs / incrementalAlterConfigs` for BROKER
//! resources, `AdminZkClient.changeBrokerConfig`, `BrokerConfigHandler`):
//! `/config/brokers/<id>` and `/config/brokers/<default>` read from the
//! metadata store into every publication, and AlterConfigs /
//! IncrementalAlterConfigs written there with a `/config/changes`
//! notification (`shard::control::config_changes` reloads on every ZooKeeper-mode
//! broker). What may be stored and how the layers resolve is
//! `config::dynamic` [pure].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::client_quotas::store_entity_config;
use super::ControlShard;
use crate::config::dynamic::{self, DynamicBrokerConfigs, DEFAULT_ENTITY};
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

    /// Read this broker's (`me`) and the default entity again; whether
    /// they changed.
    pub async fn reload_broker_configs(&self, me: i32) -> bool {
        let store = self.admin.store();
        let loaded = DynamicBrokerConfigs {
            cluster_default: read_entity(store, DEFAULT_ENTITY).await.0,
            per_broker: read_entity(store, &me.to_string()).await.0,
        };
        let changed = *self.broker_configs.borrow().as_ref() != loaded;
        if changed {
            tracing::info!(default = ?loaded.cluster_default, broker = ?loaded.per_broker, "dynamic broker configs loaded");
            *self.broker_configs.borrow_mut() = Arc::new(loaded);
        }
        changed
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
        let entity = call
            .broker
            .map_or_else(|| DEFAULT_ENTITY.to_owned(), |b| b.to_string());
        let (current, version) = read_entity(store, &entity).await;
        let version = version.map_err(|e| failure(ErrorCode::UNKNOWN_SERVER_ERROR, e))?;
        let updated = match call.change {
            BrokerConfigChange::Replace(config) => config,
            BrokerConfigChange::Incremental(ops) => {
                apply_alter_ops(current, &ops, |k, o| current_list(base, k, o))
                    .map_err(AdminFailure::from)?
            }
        };
        // Kafka: "Invalid config value for resource ConfigResource(type=BROKER, name='1'): …"
        let name = call.broker.map_or_else(String::new, |b| b.to_string());
        dynamic::validate(base, &updated).map_err(|e| {
            failure(
                ErrorCode::INVALID_REQUEST,
                format!("Invalid config value for resource ConfigResource(type=BROKER, name='{name}'): {e}"),
            )
        })?;
        if call.validate_only {
            return Ok(());
        }
        store_entity_config(store, format!("{BROKERS}/{entity}"), updated, version)
            .await
            .map_err(|e| failure(ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()))
    }
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
