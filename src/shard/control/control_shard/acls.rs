//! `[drv]` ACLs on the control shard, as Kafka 3.9's `AclAuthorizer` keeps
//! them (`core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`,
//! `KafkaZkClient.{conditionalSetAclsForResource,createAclsForResourceIfNotExists,
//! deleteResource,createAclChangeNotification}`): every ACL znode loaded at
//! start into the cache every publication carries (so each data shard
//! decides from its own read-only copy), CreateAcls / DeleteAcls written
//! to the store as read-modify-writes guarded by the znode version (10
//! tries), each change followed by a notification every broker follows
//! (`shard::control::acl_changes`), and one pattern re-read when a
//! notification names it. The znode layout and the rules are `acl`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::ControlShard;
use crate::acl::authorizer::AclCache;
use crate::acl::filter::{self, BindingFilter};
use crate::acl::{znode, AccessControlEntry, AclBinding, ResourcePattern, ResourceType};
use crate::protocol::ErrorCode;
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};

/// `AclAuthorizer.updateResourceAcls`: tries before giving up.
const MAX_UPDATE_TRIES: usize = 10;
/// Pause between tries (Kafka: a random 100–150 ms backoff).
const UPDATE_BACKOFF: Duration = Duration::from_millis(100);

/// CreateAcls / DeleteAcls, to the control shard.
#[derive(Debug)]
pub enum AclCall {
    /// Valid bindings, in request order.
    Create(Vec<AclBinding>),
    Delete(Vec<BindingFilter>),
}

/// The bindings one DeleteAcls filter removed, each with its error.
pub type Removed = Vec<(AclBinding, Option<(ErrorCode, String)>)>;

/// Per binding (Create) or per filter, the removed bindings (Delete).
#[derive(Debug, PartialEq)]
pub enum AclReply {
    Created(Vec<Result<(), (ErrorCode, String)>>),
    Deleted(Vec<Removed>),
}

impl ControlShard {
    /// The ACLs every publication carries.
    pub fn acls(&self) -> Arc<AclCache> {
        self.acls.borrow().clone()
    }

    /// `AclAuthorizer.configure` + `loadCache`: the ACL paths created and
    /// every stored pattern read. A pattern that cannot be read is left
    /// out with a warning (Kafka logs and skips it as well).
    pub async fn load_acls(&self) -> Result<(), StoreError> {
        let store = self.admin.store();
        for path in znode::paths_created_at_start() {
            match create_recursive(store, &path, &[], CreateMode::Persistent).await {
                Ok(_) | Err(StoreError::NodeExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let mut all: BTreeMap<ResourcePattern, BTreeSet<AccessControlEntry>> = BTreeMap::new();
        for pattern_type in [
            crate::acl::PatternType::Literal,
            crate::acl::PatternType::Prefixed,
        ] {
            let Some(root) = znode::root(pattern_type) else {
                continue;
            };
            for type_dir in store.children(root).await? {
                let resource_type = ResourceType::parse(&type_dir);
                if resource_type == ResourceType::Unknown {
                    tracing::warn!(%root, %type_dir, "ignoring an unknown ACL resource type");
                    continue;
                }
                let dir = znode::type_path(root, resource_type);
                for name in store.children(&dir).await? {
                    let pattern = ResourcePattern {
                        resource_type,
                        name,
                        pattern_type,
                    };
                    if let Some(entries) = read_pattern(store, &pattern).await? {
                        if !entries.is_empty() {
                            all.insert(pattern, entries);
                        }
                    }
                }
            }
        }
        tracing::info!(patterns = all.len(), "ACLs loaded");
        *self.acls.borrow_mut() = Arc::new(AclCache::new(all));
        Ok(())
    }

    /// A notification named `pattern`: its znode read again
    /// (`AclAuthorizer.AclChangedNotificationHandler`); whether the cache
    /// changed.
    pub async fn reload_acl_pattern(&self, pattern: &ResourcePattern) -> Result<bool, StoreError> {
        let entries = read_pattern(self.admin.store(), pattern)
            .await?
            .unwrap_or_default();
        Ok(self.cache_set(pattern.clone(), entries))
    }

    fn cache_set(&self, pattern: ResourcePattern, entries: BTreeSet<AccessControlEntry>) -> bool {
        let mut cache = self.acls.borrow().as_ref().clone();
        if cache.set(pattern, entries) {
            *self.acls.borrow_mut() = Arc::new(cache);
            true
        } else {
            false
        }
    }

    /// `AclAuthorizer.createAcls`: the bindings grouped by pattern, each
    /// pattern's set extended in the store (a notification when it
    /// changed). The caller republishes.
    pub async fn create_acls(
        &self,
        bindings: &[AclBinding],
    ) -> Vec<Result<(), (ErrorCode, String)>> {
        let mut by_pattern: BTreeMap<ResourcePattern, Vec<usize>> = BTreeMap::new();
        for (i, b) in bindings.iter().enumerate() {
            by_pattern.entry(b.pattern.clone()).or_default().push(i);
        }
        let mut results = vec![Ok(()); bindings.len()];
        for (pattern, indexes) in by_pattern {
            let added: BTreeSet<AccessControlEntry> =
                indexes.iter().map(|i| bindings[*i].entry.clone()).collect();
            let outcome = self
                .update_pattern(&pattern, |current| current.union(&added).cloned().collect())
                .await;
            if let Err(e) = outcome {
                tracing::warn!(%pattern, error = %e, "creating ACLs");
                for i in indexes {
                    results[i] = Err((store_error_code(&e), format!("Failed to create ACL: {e}")));
                }
            }
        }
        results
    }

    /// `AclAuthorizer.deleteAcls`: every cached pattern (and each filter's
    /// exact pattern) some filter matches, its matching entries removed in
    /// the store. Per filter, the removed bindings. The caller republishes.
    pub async fn delete_acls(&self, filters: &[BindingFilter]) -> Vec<Removed> {
        let mut out = vec![Vec::new(); filters.len()];
        let patterns = filter::patterns_to_visit(&self.acls.borrow(), filters);
        for pattern in patterns {
            let mut removed = Vec::new();
            let outcome = self
                .update_pattern(&pattern, |current| {
                    let r = filter::removal(&pattern, current, filters);
                    removed = r.removed;
                    r.remaining
                })
                .await;
            let error = outcome
                .err()
                .map(|e| (store_error_code(&e), format!("Failed to delete ACL: {e}")));
            if let Some((_, message)) = &error {
                tracing::warn!(%pattern, %message, "deleting ACLs");
            }
            for (i, entry) in removed {
                let binding = AclBinding {
                    pattern: pattern.clone(),
                    entry,
                };
                out[i].push((binding, error.clone()));
            }
        }
        out
    }

    /// `AclAuthorizer.updateResourceAcls`: read, change with `f`, write
    /// back conditional on the version read (create when absent, delete
    /// when empty), retried on a concurrent change; then the change
    /// notification and the cache.
    async fn update_pattern(
        &self,
        pattern: &ResourcePattern,
        mut f: impl FnMut(&BTreeSet<AccessControlEntry>) -> BTreeSet<AccessControlEntry>,
    ) -> Result<(), StoreError> {
        let store = self.admin.store();
        let path = znode::resource_path(pattern)
            .ok_or_else(|| StoreError::InvalidPath(pattern.to_string()))?;
        let mut last = None;
        for _ in 0..MAX_UPDATE_TRIES {
            let (current, version) = match store.get(&path).await {
                Ok((data, stat)) => match znode::decode_acls(&data) {
                    Ok(entries) => (entries, Some(stat.version)),
                    Err(reason) => return Err(StoreError::Io(format!("{path}: {reason}"))),
                },
                Err(e) if e.is_no_node() => (BTreeSet::new(), None),
                Err(e) => return Err(e),
            };
            let wanted = f(&current);
            if wanted == current {
                self.cache_set(pattern.clone(), current);
                return Ok(());
            }
            let written = match (wanted.is_empty(), version) {
                (true, Some(v)) => store.delete(&path, Some(v)).await,
                (true, None) => Ok(()),
                (false, Some(v)) => store
                    .set(&path, &znode::encode_acls(&wanted), Some(v))
                    .await
                    .map(|_| ()),
                (false, None) => create_recursive(
                    store,
                    &path,
                    &znode::encode_acls(&wanted),
                    CreateMode::Persistent,
                )
                .await
                .map(|_| ()),
            };
            match written {
                Ok(()) => {
                    self.cache_set(pattern.clone(), wanted);
                    notify(store, pattern).await?;
                    return Ok(());
                }
                Err(
                    e @ (StoreError::BadVersion(_)
                    | StoreError::NoNode(_)
                    | StoreError::NodeExists(_)),
                ) => {
                    last = Some(e);
                    glommio::timer::sleep(UPDATE_BACKOFF).await;
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| StoreError::Io(format!("{path}: too many concurrent updates"))))
    }
}

/// One pattern's stored entries; `None` when its znode is absent. An
/// unreadable znode is logged and read as no entries.
async fn read_pattern<S: MetadataStore>(
    store: &S,
    pattern: &ResourcePattern,
) -> Result<Option<BTreeSet<AccessControlEntry>>, StoreError> {
    let Some(path) = znode::resource_path(pattern) else {
        return Ok(None);
    };
    match store.get(&path).await {
        Ok((data, _)) => match znode::decode_acls(&data) {
            Ok(entries) => Ok(Some(entries)),
            Err(reason) => {
                tracing::warn!(%path, %reason, "ignoring an unreadable ACL znode");
                Ok(Some(BTreeSet::new()))
            }
        },
        Err(e) if e.is_no_node() => Ok(None),
        Err(e) => Err(e),
    }
}

/// `KafkaZkClient.createAclChangeNotification`.
async fn notify<S: MetadataStore>(store: &S, pattern: &ResourcePattern) -> Result<(), StoreError> {
    let dir = znode::changes_root(pattern.pattern_type);
    let path = format!("{dir}/{}", znode::CHANGE_PREFIX);
    create_recursive(
        store,
        &path,
        &znode::encode_change(pattern),
        CreateMode::PersistentSequential,
    )
    .await
    .map(|_| ())
}

/// The Kafka error a failed store operation answers with.
fn store_error_code(e: &StoreError) -> ErrorCode {
    match e {
        StoreError::InvalidPath(_) => ErrorCode::INVALID_REQUEST,
        _ => ErrorCode::UNKNOWN_SERVER_ERROR,
    }
}
