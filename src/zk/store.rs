//! The `MetadataStore` seam: ZooKeeper's data model (znodes with versions,
//! ephemeral and sequential nodes, atomic `multi`) as Kafka uses it, so the
//! embedded store and a real ZooKeeper client are interchangeable.
//!
//! Used generically (`S: MetadataStore`), never as `dyn`: the futures stay on
//! the control shard's executor, so they need not be `Send`.

pub use super::watch::{SessionEvent, SessionWatch, Watch, WatchEvent, WatchKind};

/// How a znode is created (ZooKeeper `CreateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    Persistent,
    /// Owned by the session; removed when the session closes or expires.
    Ephemeral,
    /// The name gets a 10-digit, zero-padded suffix from the parent's
    /// child-change counter (`cversion`).
    PersistentSequential,
    EphemeralSequential,
}

impl CreateMode {
    pub fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }
    pub fn is_sequential(self) -> bool {
        matches!(self, Self::PersistentSequential | Self::EphemeralSequential)
    }
}

/// The part of ZooKeeper's `Stat` Kafka reads. Times are left out: the
/// embedded store reads no clock, and Kafka does not use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Transaction id that created the node.
    pub czxid: i64,
    /// Transaction id of the last data change.
    pub mzxid: i64,
    /// Transaction id of the last child change.
    pub pzxid: i64,
    /// Creation time, ms since the epoch (ZooKeeper's `ctime`).
    pub ctime: i64,
    /// Data version: 0 at creation, +1 on each `set`.
    pub version: i32,
    /// Child version: +1 on each child create or delete.
    pub cversion: i32,
    /// Session id of the owner for ephemeral nodes, else 0.
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
}

/// One step of an atomic [`MetadataStore::multi`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Fails with `BadVersion` unless the node's version equals `version`
    /// (ZooKeeper `Op.check`); `NoNode` if absent.
    Check { path: String, version: i32 },
    Create {
        path: String,
        data: Vec<u8>,
        mode: CreateMode,
    },
    Set {
        path: String,
        data: Vec<u8>,
        expected_version: Option<i32>,
    },
    Delete {
        path: String,
        expected_version: Option<i32>,
    },
}

/// Result of each step of a successful `multi`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    Check,
    /// The created path (with the sequence suffix for sequential nodes).
    Create(String),
    Set(Stat),
    Delete,
}

/// ZooKeeper's error codes for the operations above (`KeeperException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("NoNode for {0}")]
    NoNode(String),
    /// ZooKeeper reports a missing parent on create as NONODE; we keep it
    /// apart so callers can tell "create the parents" from "node gone".
    #[error("NoNode for parent of {0}")]
    NoParent(String),
    #[error("NodeExists for {0}")]
    NodeExists(String),
    #[error("BadVersion for {0}")]
    BadVersion(String),
    #[error("Directory not empty for {0}")]
    NotEmpty(String),
    #[error("NoChildrenForEphemerals for {0}")]
    NoChildrenForEphemerals(String),
    #[error("invalid path {0:?}")]
    InvalidPath(String),
    #[error("session expired")]
    SessionExpired,
    /// The store itself failed (disk, connection): not the caller's fault.
    #[error("metadata store I/O error: {0}")]
    Io(String),
}

impl StoreError {
    /// True for ZooKeeper's NONODE in either flavour.
    pub fn is_no_node(&self) -> bool {
        matches!(self, Self::NoNode(_) | Self::NoParent(_))
    }
}

/// ZooKeeper's client API as Kafka's `KafkaZkClient` uses it.
///
/// Async fns in a trait without `Send` bounds on purpose: every
/// implementation runs on one executor (see module doc).
#[allow(async_fn_in_trait)]
pub trait MetadataStore {
    /// Creates `path`; the parent must exist. Returns the created path
    /// (differs from `path` for sequential nodes).
    async fn create(&self, path: &str, data: &[u8], mode: CreateMode)
        -> Result<String, StoreError>;
    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), StoreError>;
    /// `expected_version: None` = any version (ZooKeeper's -1).
    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, StoreError>;
    /// Fails with `NotEmpty` if the node has children.
    async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), StoreError>;
    async fn exists(&self, path: &str) -> Result<Option<Stat>, StoreError>;
    /// Child names (not paths), sorted.
    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError>;
    /// All ops or none; the error is the first failing op's.
    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError>;

    /// `get`, and a one-shot watch firing on the node's next data change
    /// or delete (ZooKeeper `getData(path, watch=true)`).
    async fn get_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), StoreError>;
    /// `exists`, and a one-shot watch firing on the node's create, delete
    /// or data change (ZooKeeper `exists(path, watch=true)`): set on an
    /// absent node too.
    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), StoreError>;
    /// `children`, and a one-shot watch firing on a child create or delete
    /// or the node's own delete (ZooKeeper `getChildren(path, watch=true)`).
    async fn children_watch(&self, path: &str) -> Result<(Vec<String>, Watch), StoreError>;
    /// The current session's id (the `ephemeral_owner` of its nodes).
    fn current_session(&self) -> i64;
    /// Resolves on the next session state change after this call.
    fn session_event(&self) -> SessionWatch;
}

/// Kafka's `createRecursive`: creates `path` with `data` and any missing
/// persistent ancestors (with empty data). `NodeExists` for `path` itself is
/// returned to the caller; existing ancestors are fine.
pub async fn create_recursive<S: MetadataStore>(
    store: &S,
    path: &str,
    data: &[u8],
    mode: CreateMode,
) -> Result<String, StoreError> {
    match store.create(path, data, mode).await {
        Err(StoreError::NoParent(_)) | Err(StoreError::NoNode(_)) => {}
        other => return other,
    }
    let parent = parent_of(path).ok_or_else(|| StoreError::InvalidPath(path.to_string()))?;
    let mut missing = Vec::new();
    let mut cursor = parent;
    while cursor != "/" && store.exists(cursor).await?.is_none() {
        missing.push(cursor);
        cursor = parent_of(cursor).unwrap_or("/");
    }
    for ancestor in missing.into_iter().rev() {
        match store.create(ancestor, &[], CreateMode::Persistent).await {
            Ok(_) | Err(StoreError::NodeExists(_)) => {}
            Err(e) => return Err(e),
        }
    }
    store.create(path, data, mode).await
}

/// Deletes `path` and everything below it, children first (Kafka's
/// `deleteRecursive`). A node that is already gone is not an error.
pub async fn delete_recursive<S: MetadataStore>(store: &S, path: &str) -> Result<(), StoreError> {
    // Iterative post-order walk: recursion in async fns needs boxing.
    let mut stack = vec![(path.to_string(), false)];
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            match store.delete(&node, None).await {
                Ok(()) | Err(StoreError::NoNode(_)) => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        stack.push((node.clone(), true));
        match store.children(&node).await {
            Ok(kids) => stack.extend(kids.into_iter().map(|k| (join(&node, &k), false))),
            Err(StoreError::NoNode(_)) => {
                stack.pop();
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `/a/b` → `/a`; `/a` → `/`; `/` → None.
pub fn parent_of(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    let idx = path.rfind('/')?;
    Some(if idx == 0 { "/" } else { &path[..idx] })
}

/// Joins a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    if parent == "/" {
        format!("/{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// ZooKeeper's path rules: absolute, no trailing or double slash, no `.` or
/// `..` components, no NUL.
pub fn validate_path(path: &str) -> Result<(), StoreError> {
    let bad = || StoreError::InvalidPath(path.to_string());
    if path == "/" {
        return Ok(());
    }
    let rest = path.strip_prefix('/').ok_or_else(bad)?;
    for component in rest.split('/') {
        if component.is_empty() || component == "." || component == ".." || component.contains('\0')
        {
            return Err(bad());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_and_join_are_inverse() {
        for (path, parent, name) in [
            ("/a", "/", "a"),
            ("/a/b", "/a", "b"),
            ("/a/b/c", "/a/b", "c"),
        ] {
            assert_eq!(parent_of(path), Some(parent));
            assert_eq!(join(parent, name), path);
        }
        assert_eq!(parent_of("/"), None);
    }

    #[test]
    fn validate_path_follows_zookeeper_rules() {
        for ok in ["/", "/a", "/brokers/topics/x.y-z_1"] {
            assert!(validate_path(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a", "/a/", "//a", "/a//b", "/a/./b", "/..", "/a\0"] {
            assert!(validate_path(bad).is_err(), "{bad:?}");
        }
    }
}
