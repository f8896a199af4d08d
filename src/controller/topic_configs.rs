//! Topic configuration in the store: DescribeConfigs, AlterConfigs and
//! IncrementalAlterConfigs (KIP-339) over `/config/topics/<t>`, with the
//! `/config/changes` notification Kafka's ZooKeeper-mode brokers watch
//! (`AdminZkClient.changeTopicConfig`).

use std::collections::{BTreeMap, BTreeSet};

use super::admin_error::{unknown_topic, AdminError};
use super::brokers::create_top_level_paths;
use super::topic_admin::{create_op, read_topic_overrides, AlterConfigOp, AlterConfigOpType};
use crate::config::topic::{
    topic_config_type, validate_one, BrokerTopicDefaults, ConfigEntry, ConfigType, ConfigValue,
    TopicConfig,
};
use crate::zk::paths::{self, ConfigChangeZNode, ConfigZNode};
use crate::zk::store::{CreateMode, MetadataStore, Op};

/// DescribeConfigs for a topic. Stored overrides that fail validation (a
/// newer Kafka may have written keys we do not know) are shown as defaults.
pub async fn describe_configs<S: MetadataStore>(
    store: &S,
    name: &str,
    defaults: &BrokerTopicDefaults,
    keys: Option<&[String]>,
) -> Result<Vec<ConfigEntry>, AdminError> {
    if store.exists(&paths::topic(name)).await?.is_none() {
        return Err(unknown_topic(name));
    }
    let (overrides, _) = read_topic_overrides(store, name).await?;
    let usable: BTreeMap<String, String> = overrides
        .into_iter()
        .filter(|(k, v)| validate_one(k, v).is_ok())
        .collect();
    let config = TopicConfig::resolve(&usable, defaults)
        .unwrap_or_else(|_| TopicConfig::from_broker_defaults(defaults));
    Ok(config.describe(&usable, defaults, keys))
}

/// The effective value of a list-typed topic key before an
/// APPEND/SUBTRACT; `None` for a key that is not a list.
fn current_list(
    key: &str,
    overrides: &BTreeMap<String, String>,
    defaults: &BrokerTopicDefaults,
) -> Option<Vec<String>> {
    if topic_config_type(key) != Some(ConfigType::List) {
        return None;
    }
    let from_override = overrides
        .get(key)
        .and_then(|raw| match validate_one(key, raw) {
            Ok(ConfigValue::List(items)) => Some(items),
            _ => None,
        });
    Some(from_override.unwrap_or_else(|| {
        match TopicConfig::from_broker_defaults(defaults).value_of(key) {
            Some(ConfigValue::List(items)) => items,
            _ => Vec::new(),
        }
    }))
}

/// Applies `ops` to `overrides` (Kafka's `prepareIncrementalConfigs`, for
/// topic and broker entities alike). `current_list` gives a list-typed
/// key's effective items (from the overrides, else the default) and
/// `None` for other keys, which APPEND / SUBTRACT refuse.
pub fn apply_alter_ops(
    mut overrides: BTreeMap<String, String>,
    ops: &[AlterConfigOp],
    current_list: impl Fn(&str, &BTreeMap<String, String>) -> Option<Vec<String>>,
) -> Result<BTreeMap<String, String>, AdminError> {
    let mut seen = BTreeSet::new();
    for op in ops {
        if !seen.insert(op.name.as_str()) {
            return Err(AdminError::InvalidRequest(
                "Error due to duplicate config keys".into(),
            ));
        }
        let value = match (&op.value, op.op) {
            (_, AlterConfigOpType::Delete) => {
                overrides.remove(&op.name);
                continue;
            }
            (Some(v), _) => v.clone(),
            (None, _) => {
                return Err(AdminError::InvalidRequest(format!(
                    "Null value not supported for : {}",
                    op.name
                )))
            }
        };
        if op.op == AlterConfigOpType::Set {
            overrides.insert(op.name.clone(), value);
            continue;
        }
        // APPEND / SUBTRACT: list-typed keys only.
        let Some(mut items) = current_list(&op.name, &overrides) else {
            let verb = if op.op == AlterConfigOpType::Append {
                "append"
            } else {
                "subtract"
            };
            return Err(AdminError::InvalidConfig(format!(
                "Config value {verb} is not allowed for config key: {}",
                op.name
            )));
        };
        let given = value.split(',').map(str::trim).filter(|s| !s.is_empty());
        if op.op == AlterConfigOpType::Append {
            for item in given {
                if !items.iter().any(|i| i == item) {
                    items.push(item.to_string());
                }
            }
        } else {
            let remove: Vec<&str> = given.collect();
            items.retain(|i| !remove.contains(&i.as_str()));
        }
        overrides.insert(op.name.clone(), items.join(","));
    }
    Ok(overrides)
}

/// IncrementalAlterConfigs for a topic (KIP-339). Returns the new overrides.
pub async fn incremental_alter_configs<S: MetadataStore>(
    store: &S,
    name: &str,
    ops: &[AlterConfigOp],
    defaults: &BrokerTopicDefaults,
    validate_only: bool,
) -> Result<BTreeMap<String, String>, AdminError> {
    if store.exists(&paths::topic(name)).await?.is_none() {
        return Err(unknown_topic(name));
    }
    let (overrides, version) = read_topic_overrides(store, name).await?;
    let updated = apply_alter_ops(overrides, ops, |k, o| current_list(k, o, defaults))?;
    TopicConfig::resolve(&updated, defaults)?;
    if validate_only {
        return Ok(updated);
    }
    write_topic_overrides(store, name, &updated, version).await?;
    Ok(updated)
}

/// AlterConfigs (the legacy, replace-everything API kafka-python uses):
/// the topic's overrides become exactly `configs`.
pub async fn alter_configs<S: MetadataStore>(
    store: &S,
    name: &str,
    configs: &BTreeMap<String, String>,
    defaults: &BrokerTopicDefaults,
    validate_only: bool,
) -> Result<(), AdminError> {
    if store.exists(&paths::topic(name)).await?.is_none() {
        return Err(unknown_topic(name));
    }
    TopicConfig::resolve(configs, defaults)?;
    if validate_only {
        return Ok(());
    }
    let (_, version) = read_topic_overrides(store, name).await?;
    write_topic_overrides(store, name, configs, version).await
}

/// Writes the overrides (guarded by the config znode's `version`) and a
/// `/config/changes` notification in one `multi`, as Kafka's
/// `AdminZkClient.changeTopicConfig` does, so ZooKeeper-mode brokers reload.
async fn write_topic_overrides<S: MetadataStore>(
    store: &S,
    name: &str,
    overrides: &BTreeMap<String, String>,
    version: Option<i32>,
) -> Result<(), AdminError> {
    let data = ConfigZNode::new(overrides.clone()).encode();
    let config_op = match version {
        Some(v) => Op::Set {
            path: paths::topic_config(name),
            data,
            expected_version: Some(v),
        },
        None => create_op(paths::topic_config(name), data),
    };
    let notify = Op::Create {
        path: paths::config_change_sequential_prefix(),
        data: ConfigChangeZNode::topic(name).encode(),
        mode: CreateMode::PersistentSequential,
    };
    create_top_level_paths(store).await?;
    store.multi(vec![config_op, notify]).await?;
    Ok(())
}
