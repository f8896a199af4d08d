//! `[drv]` Following the ACL change notifications on every
//! ZooKeeper-mode broker (Kafka 3.9 `AclAuthorizer.startZkChangeListeners`,
//! `ZkNodeChangeNotificationListener` over `/kafka-acl-changes` and
//! `/kafka-acl-extended-changes`): a children watch on each; every new
//! notification's pattern is read again from its znode
//! (`AclChangedNotificationHandler.processNotification`) and, when the
//! ACLs changed, republished so every data shard enforces them; the
//! notifications older than 15 minutes are deleted. The first pass
//! processes every notification present, as Kafka's listener does.

use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use crate::acl::{znode, ResourcePattern};
use crate::metadata::config_changes;
use crate::shard::router;
use crate::shard::ShardContext;
use crate::zk::store::{MetadataStore, StoreError};

/// Pause before watching again after the store failed.
const RETRY: Duration = Duration::from_secs(1);

/// Follow both notification paths until the broker stops.
pub async fn follow(ctx: Rc<ShardContext>) {
    futures_lite::future::zip(
        follow_one(ctx.clone(), znode::LITERAL_CHANGES),
        follow_one(ctx, znode::EXTENDED_CHANGES),
    )
    .await;
}

async fn follow_one(ctx: Rc<ShardContext>, root: &'static str) {
    let Some(control) = ctx.control() else {
        return;
    };
    let mut last: Option<u64> = None;
    while !ctx.stopping.is_fired() {
        let store = control.admin.store().clone();
        let watch = match store.children_watch(root).await {
            Ok((children, watch)) => {
                last = process(&ctx, &store, root, &children, last).await.or(last);
                watch
            }
            Err(StoreError::NoNode(_)) => match store.exists_watch(root).await {
                Ok((_, watch)) => watch,
                Err(e) => {
                    tracing::debug!(error = %e, %root, "watching for ACL changes");
                    glommio::timer::sleep(RETRY).await;
                    continue;
                }
            },
            Err(e) => {
                tracing::debug!(error = %e, %root, "listing ACL changes");
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
/// number processed.
async fn process<S: MetadataStore>(
    ctx: &ShardContext,
    store: &S,
    root: &str,
    children: &[String],
    last: Option<u64>,
) -> Option<u64> {
    let mut pending: Vec<(u64, &String)> = children
        .iter()
        .filter_map(|n| znode::change_sequence(n).map(|s| (s, n)))
        .filter(|(s, _)| last.is_none_or(|l| *s > l))
        .collect();
    pending.sort();
    let mut patterns: BTreeSet<ResourcePattern> = BTreeSet::new();
    let mut newest = None;
    let now_ms = ctx.clock.wall_ms();
    for (seq, name) in pending {
        let path = format!("{root}/{name}");
        match store.get(&path).await {
            Ok((data, stat)) => {
                match znode::decode_change(root, &data) {
                    Ok(p) => {
                        patterns.insert(p);
                    }
                    Err(e) => tracing::warn!(%path, error = %e, "ignoring a malformed ACL change"),
                }
                if config_changes::obsolete(stat.ctime, now_ms) {
                    match store.delete(&path, None).await {
                        Ok(()) | Err(StoreError::NoNode(_)) => {}
                        Err(e) => tracing::debug!(%path, error = %e, "purging an old ACL change"),
                    }
                }
            }
            Err(StoreError::NoNode(_)) => {}
            Err(e) => {
                tracing::warn!(%path, error = %e, "reading an ACL change");
                break;
            }
        }
        newest = Some(seq);
    }
    if !patterns.is_empty() {
        apply(ctx, &patterns).await;
    }
    newest
}

/// Re-read `patterns` and republish, in turn with the control shard's
/// other publications.
async fn apply(ctx: &ShardContext, patterns: &BTreeSet<ResourcePattern>) {
    let Some(control) = ctx.control() else {
        return;
    };
    let _turn = control.serial.acquire_permit(1).await;
    let mut changed = false;
    for p in patterns {
        match control.reload_acl_pattern(p).await {
            Ok(c) => changed |= c,
            Err(e) => tracing::warn!(pattern = %p, error = %e, "re-reading ACLs"),
        }
    }
    tracing::info!(patterns = patterns.len(), changed, "ACL changes applied");
    if changed {
        router::publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
}
