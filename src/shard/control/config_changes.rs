//! `[drv]` Following `/config/changes` on every ZooKeeper-mode broker
//! (Kafka 3.9 `ZkConfigManager` / `ZkNodeChangeNotificationListener`, run
//! on the control shard): a children watch on `/config/changes`; each new
//! notification naming a topic has that topic's overrides read again from
//! `/config/topics/<t>` and the snapshot republished, so the owner shards
//! apply the new config to its open logs (retention, segment size, cleanup
//! policy, min.insync.replicas, … without a restart or a reopen, as
//! Kafka's `LogManager.updateTopicConfig`); client quotas
//! (`clients/…`, `users/…`) and this broker's dynamic configs
//! (`brokers/<id>`, `brokers/<default>`) are read again the same way;
//! notifications older
//! than 15 minutes are deleted. Which notifications are new, what they name
//! and when they expire is `metadata::config_changes`.
//!
//! The first pass processes every notification present: the configs read
//! at start-up may already be older than them.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use crate::metadata::config_changes::{self, ConfigEntity};
use crate::shard::router;
use crate::shard::ShardContext;
use crate::zk::paths;
use crate::zk::store::{MetadataStore, StoreError};

/// Pause before watching again after the store failed (a lost connection
/// heals on the session's own retry; an expired session is renewed by the
/// ZooKeeper-mode broker).
const RETRY: Duration = Duration::from_secs(1);

/// Follow the notifications until the broker stops.
pub async fn follow(ctx: Rc<ShardContext>) {
    let Some(control) = ctx.control() else {
        return;
    };
    let mut last: Option<u64> = None;
    while !ctx.stopping.is_fired() {
        let store = control.admin.store().clone();
        let watch = match store.children_watch(paths::CONFIG_CHANGES).await {
            Ok((children, watch)) => {
                last = process(&ctx, &store, &children, last).await.or(last);
                watch
            }
            Err(StoreError::NoNode(_)) => match store.exists_watch(paths::CONFIG_CHANGES).await {
                Ok((_, watch)) => watch,
                Err(e) => {
                    tracing::debug!(error = %e, "watching for /config/changes");
                    glommio::timer::sleep(RETRY).await;
                    continue;
                }
            },
            Err(e) => {
                tracing::debug!(error = %e, "listing /config/changes");
                glommio::timer::sleep(RETRY).await;
                continue;
            }
        };
        futures_lite::future::or(
            async {
                watch.await;
            },
            ctx.stopping.wait(),
        )
        .await;
    }
}

/// The new notifications among `children` applied; the last sequence
/// number processed (`None` when there was none).
async fn process<S: MetadataStore>(
    ctx: &ShardContext,
    store: &S,
    children: &[String],
    last: Option<u64>,
) -> Option<u64> {
    let mut topics: BTreeSet<String> = BTreeSet::new();
    let mut quotas_changed = false;
    let mut users_changed = false;
    let mut brokers_changed = false;
    let me = ctx.config.broker_id.to_string();
    let mut newest = None;
    let now_ms = ctx.clock.wall_ms();
    for (seq, name) in config_changes::pending(children, last) {
        let path = format!("{}/{name}", paths::CONFIG_CHANGES);
        match store.get(&path).await {
            Ok((data, stat)) => {
                match config_changes::entity_of(&data) {
                    Ok(ConfigEntity::Topic(t)) => {
                        topics.insert(t);
                    }
                    Ok(ConfigEntity::Other { entity_type, .. })
                        if entity_type == "clients" || entity_type == "users" =>
                    {
                        quotas_changed = true;
                        // Kafka's UserConfigHandler: the user's SCRAM
                        // credentials too (not for `users/<u>/clients/…`).
                        users_changed |= entity_type == "users";
                    }
                    Ok(ConfigEntity::Other { entity_type, name }) if entity_type == "brokers" => {
                        // Kafka's BrokerConfigHandler: the default entity
                        // and this broker's own.
                        brokers_changed |=
                            name == crate::config::dynamic::DEFAULT_ENTITY || name == me;
                    }
                    Ok(ConfigEntity::Other { entity_type, name }) => {
                        tracing::info!(%entity_type, %name, "config change for an entity this broker does not reload yet");
                    }
                    Err(e) => {
                        tracing::warn!(%path, error = %e, "ignoring a malformed config change")
                    }
                }
                if config_changes::obsolete(stat.ctime, now_ms) {
                    purge(store, &path).await;
                }
            }
            Err(StoreError::NoNode(_)) => {}
            Err(e) => {
                // Stop here: this one and the rest come again on the next pass.
                tracing::warn!(%path, error = %e, "reading a config change");
                break;
            }
        }
        newest = Some(seq);
    }
    if !topics.is_empty() {
        apply(ctx, &topics).await;
    }
    if quotas_changed {
        reload_quotas(ctx).await;
    }
    if users_changed {
        reload_scram_credentials(ctx).await;
    }
    if brokers_changed {
        reload_broker_configs(ctx).await;
    }
    newest
}

/// Re-read `topics`' overrides and republish, in turn with the control
/// shard's other publications.
async fn apply(ctx: &ShardContext, topics: &BTreeSet<String>) {
    let Some(control) = ctx.control() else {
        return;
    };
    let _turn = control.serial.acquire_permit(1).await;
    let republish = control.reload_topic_configs(topics, &ctx.snapshot()).await;
    tracing::info!(topics = ?topics, changed = republish.is_some(), "topic configs reloaded from /config/changes");
    if let Some(base) = republish {
        router::publish(ctx, base).await;
    }
}

/// Client quotas changed (`clients/…`, `users/…`): read them all again and
/// republish, in turn with the control shard's other publications.
async fn reload_quotas(ctx: &ShardContext) {
    let Some(control) = ctx.control() else {
        return;
    };
    let _turn = control.serial.acquire_permit(1).await;
    if control.reload_client_quotas().await {
        tracing::info!("client quotas reloaded from /config/changes");
        router::publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
}

/// A user's config changed (`users/…`): read the SCRAM credentials
/// again and republish, so new logins on every shard see them.
async fn reload_scram_credentials(ctx: &ShardContext) {
    let Some(control) = ctx.control() else {
        return;
    };
    let _turn = control.serial.acquire_permit(1).await;
    if control.reload_scram_credentials().await {
        tracing::info!("SCRAM credentials reloaded from /config/changes");
        router::publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
}

/// This broker's dynamic configs changed (`brokers/<id>`,
/// `brokers/<default>`): read them again and republish.
async fn reload_broker_configs(ctx: &ShardContext) {
    let Some(control) = ctx.control() else {
        return;
    };
    let _turn = control.serial.acquire_permit(1).await;
    if control.reload_broker_configs(&ctx.config).await {
        tracing::info!("dynamic broker configs reloaded from /config/changes");
        router::publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
}

async fn purge<S: MetadataStore>(store: &S, path: &str) {
    match store.delete(path, None).await {
        Ok(()) | Err(StoreError::NoNode(_)) => {}
        Err(e) => tracing::debug!(%path, error = %e, "purging an old config change"),
    }
}
