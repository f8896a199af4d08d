//! `[drv]` Client quotas on the control shard (Kafka 3.9
//! `ZkAdminManager.alterClientQuotas / describeClientQuotas`,
//! `AdminZkClient.changeConfigs`, `ClientQuotaManager`): the quota configs
//! read from the metadata store (`/config/clients/…`, `/config/users/…`),
//! AlterClientQuotas written there with a `/config/changes` notification
//! (every ZooKeeper-mode broker reloads, `shard::control::config_changes`), and the
//! broker's one account of each quota entity's bytes: data shards send
//! the size of each request a quota applies to here and get back the
//! throttle time, so the rate a client gets is the configured one per
//! broker whatever shards its connections landed on. The rules are
//! `metadata::quotas` [pure].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::ControlShard;
use crate::metadata::quotas::{
    self, AlterEntry, Applied, DescribeAnswer, Match, QuotaConfigs, QuotaEntity, QuotaOp, Refusal,
};
use crate::protocol::ErrorCode;
use crate::zk::paths::{self, ConfigChangeZNode, ConfigZNode};
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, Op, StoreError};

impl ControlShard {
    /// The quota configs every publication carries.
    pub fn client_quotas(&self) -> Arc<QuotaConfigs> {
        self.client_quotas.borrow().clone()
    }

    /// Read every quota config from the store again; whether they changed.
    pub async fn reload_client_quotas(&self) -> bool {
        let loaded = load(self.admin.store()).await;
        let changed = *self.client_quotas.borrow().as_ref() != loaded;
        if changed {
            *self.client_quotas.borrow_mut() = Arc::new(loaded);
        }
        changed
    }

    pub fn describe_client_quotas(
        &self,
        components: &[(String, Match)],
        strict: bool,
    ) -> DescribeAnswer {
        quotas::describe(&self.client_quotas.borrow(), components, strict)
    }

    pub fn record_quota(
        &self,
        key: &str,
        applied: &Applied,
        bytes: f64,
        now_ms: i64,
        refund_if_throttled: bool,
    ) -> i64 {
        self.quota_sensors.borrow_mut().record_or_refund(
            key,
            applied,
            bytes,
            now_ms,
            refund_if_throttled,
        )
    }

    /// AlterClientQuotas: each entry checked, then (unless validate-only)
    /// its config znode written with a change notification. The caller
    /// reloads and republishes.
    pub async fn alter_client_quotas(
        &self,
        entries: Vec<AlterEntry>,
        validate_only: bool,
    ) -> Vec<Result<(), Refusal>> {
        let store = self.admin.store();
        let mut out = Vec::with_capacity(entries.len());
        for (entity, ops) in entries {
            let r = match quotas::validate_alter(&entity, &ops) {
                Err(e) => Err(e),
                Ok(_) if validate_only => Ok(()),
                Ok(e) => write_entity(store, &e, &ops).await,
            };
            out.push(r);
        }
        out
    }
}

/// Apply `ops` to the entity's stored config (values as Kafka stores
/// them: whole numbers for the byte rates) and announce the change.
async fn write_entity<S: MetadataStore>(
    store: &S,
    entity: &QuotaEntity,
    ops: &[QuotaOp],
) -> Result<(), Refusal> {
    let failed = |e: StoreError| (ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string());
    let Some(rel) = entity.zk_path() else {
        return Err((
            ErrorCode::INVALID_REQUEST,
            "Invalid empty client quota entity".into(),
        ));
    };
    let path = format!("{}/{rel}", paths::CONFIG);
    let (mut config, version) = match store.get(&path).await {
        Ok((data, stat)) => (
            ConfigZNode::decode(&data)
                .map(|z| z.config)
                .unwrap_or_default(),
            Some(stat.version),
        ),
        Err(StoreError::NoNode(_)) => (BTreeMap::new(), None),
        Err(e) => return Err(failed(e)),
    };
    for (key, value) in ops {
        match value {
            Some(v) if key == quotas::REQUEST_PERCENTAGE => {
                config.insert(key.clone(), v.to_string());
            }
            Some(v) => {
                config.insert(key.clone(), format!("{}", *v as i64));
            }
            None => {
                config.remove(key);
            }
        }
    }
    store_entity_config(store, rel, config, version)
        .await
        .map_err(failed)
}

/// Write one config entity (`/config/<rel>`, guarded by the `version`
/// read, created when `None`) and announce it with a version 2
/// `/config/changes` notification, as Kafka's
/// `AdminZkClient.changeEntityConfig` does.
pub async fn store_entity_config<S: MetadataStore>(
    store: &S,
    rel: String,
    config: BTreeMap<String, String>,
    version: Option<i32>,
) -> Result<(), StoreError> {
    let path = format!("{}/{rel}", paths::CONFIG);
    let data = ConfigZNode::new(config).encode();
    match version {
        Some(v) => {
            store.set(&path, &data, Some(v)).await?;
        }
        None => {
            create_recursive(store, &path, &data, CreateMode::Persistent).await?;
        }
    }
    let notify = ConfigChangeZNode {
        version: 2,
        entity_path: rel,
    };
    let op = Op::Create {
        path: paths::config_change_sequential_prefix(),
        data: notify.encode(),
        mode: CreateMode::PersistentSequential,
    };
    if let Err(e) = store.multi(vec![op.clone()]).await {
        if e.is_no_node() {
            create_recursive(store, paths::CONFIG_CHANGES, &[], CreateMode::Persistent).await?;
            store.multi(vec![op]).await?;
        } else {
            tracing::warn!(error = %e, "writing a config change notification");
        }
    }
    Ok(())
}

/// Every quota config in the store (`/config/users/<u>`,
/// `/config/users/<u>/clients/<c>`, `/config/clients/<c>`); unreadable or
/// malformed ones are skipped with a warning.
pub async fn load<S: MetadataStore>(store: &S) -> QuotaConfigs {
    let mut paths_found: Vec<String> = Vec::new();
    for (kind, nested) in [("clients", false), ("users", true)] {
        let base = format!("{}/{kind}", paths::CONFIG);
        for name in children(store, &base).await {
            paths_found.push(format!("{kind}/{name}"));
            if nested {
                for c in children(store, &format!("{base}/{name}/clients")).await {
                    paths_found.push(format!("{kind}/{name}/clients/{c}"));
                }
            }
        }
    }
    let mut out = QuotaConfigs::default();
    for rel in paths_found {
        let Some(entity) = QuotaEntity::from_zk_path(&rel) else {
            tracing::warn!(path = %rel, "ignoring a quota config the broker cannot name");
            continue;
        };
        let path = format!("{}/{rel}", paths::CONFIG);
        let config = match store.get(&path).await {
            Ok((data, _)) => match ConfigZNode::decode(&data) {
                Ok(z) => z.config,
                Err(e) => {
                    tracing::warn!(%path, error = %e.0, "malformed quota config");
                    continue;
                }
            },
            Err(_) => continue,
        };
        let values: BTreeMap<String, f64> = config
            .into_iter()
            .filter_map(|(k, v)| v.parse::<f64>().ok().map(|v| (k, v)))
            .collect();
        if !values.is_empty() {
            out.entities.insert(entity, values);
        }
    }
    out
}

async fn children<S: MetadataStore>(store: &S, path: &str) -> Vec<String> {
    match store.children(path).await {
        Ok(c) => c,
        Err(StoreError::NoNode(_)) => Vec::new(),
        Err(e) => {
            tracing::warn!(%path, error = %e, "listing quota configs");
            Vec::new()
        }
    }
}
