//! `[io]` The embedded [`MetadataStore`]: ZooKeeper's znode semantics in
//! process, for a single broker without `zookeeper.connect`.
//!
//! The persistent tree lives in one JSON file,
//! `<log.dir>/__embedded_metadata/znodes.json`, rewritten whole after every
//! mutation (temp file + fsync + rename + directory fsync), so a crash leaves
//! either the old or the new tree. This is the control plane: a few hundred
//! KiB per topic change is fine, and std::fs on the control shard is fine.
//! Ephemeral nodes belong to the current session and live only in memory:
//! they vanish on [`EmbeddedStore::close_session`] and on restart, as they
//! would when a ZooKeeper session expires.
//!
//! Every mutation is applied to a copy of the tree and swapped in only after
//! the copy is durable, which also gives `multi` its all-or-nothing rule.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::store::{
    parent_of, validate_path, CreateMode, MetadataStore, Op, OpResult, Stat, StoreError,
};

/// Directory under the first log dir that holds the embedded tree.
pub const EMBEDDED_DIR: &str = "__embedded_metadata";
const TREE_FILE: &str = "znodes.json";
const TREE_TEMP_FILE: &str = "znodes.json.tmp";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Node {
    #[serde(with = "data_repr")]
    data: Vec<u8>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    cversion: i32,
    /// Session id for ephemeral nodes, 0 for persistent ones. Never on disk.
    #[serde(skip)]
    ephemeral_owner: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Tree {
    /// Last transaction id handed out.
    zxid: i64,
    /// Last session id handed out (a restart opens a new session).
    last_session_id: i64,
    nodes: BTreeMap<String, Node>,
}

/// Znode data is shown as text when it is UTF-8 (Kafka's JSON always is),
/// so an operator can read the file; raw bytes otherwise.
mod data_repr {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(data) {
            Ok(text) => Repr::Text(text.to_string()).serialize(s),
            Err(_) => Repr::Bytes(data.to_vec()).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(text) => text.into_bytes(),
            Repr::Bytes(bytes) => bytes,
        })
    }
}

impl Tree {
    fn empty() -> Self {
        let root = Node {
            data: Vec::new(),
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            version: 0,
            cversion: 0,
            ephemeral_owner: 0,
        };
        Self {
            zxid: 0,
            last_session_id: 0,
            nodes: BTreeMap::from([("/".to_string(), root)]),
        }
    }

    /// Direct children names of `path`, sorted.
    fn children(&self, path: &str) -> Vec<String> {
        let prefix = if path == "/" {
            "/".to_string()
        } else {
            format!("{path}/")
        };
        self.nodes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .filter_map(|(k, _)| {
                let name = &k[prefix.len()..];
                (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
            })
            .collect()
    }

    fn has_children(&self, path: &str) -> bool {
        !self.children(path).is_empty()
    }

    fn stat(&self, path: &str) -> Option<Stat> {
        let node = self.nodes.get(path)?;
        Some(Stat {
            czxid: node.czxid,
            mzxid: node.mzxid,
            pzxid: node.pzxid,
            version: node.version,
            cversion: node.cversion,
            ephemeral_owner: node.ephemeral_owner,
            data_length: node.data.len() as i32,
            num_children: self.children(path).len() as i32,
        })
    }

    fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        session: i64,
    ) -> Result<String, StoreError> {
        validate_path(if mode.is_sequential() {
            path.trim_end_matches('/')
        } else {
            path
        })?;
        if path == "/" {
            return Err(StoreError::NodeExists(path.to_string()));
        }
        let parent_path =
            parent_of(path).ok_or_else(|| StoreError::InvalidPath(path.to_string()))?;
        let parent = self
            .nodes
            .get(parent_path)
            .ok_or_else(|| StoreError::NoParent(path.to_string()))?;
        if parent.ephemeral_owner != 0 {
            return Err(StoreError::NoChildrenForEphemerals(path.to_string()));
        }
        let created = if mode.is_sequential() {
            // ZooKeeper: the suffix is the parent's cversion, 10 digits.
            format!("{path}{:010}", parent.cversion)
        } else {
            path.to_string()
        };
        validate_path(&created)?;
        if self.nodes.contains_key(&created) {
            return Err(StoreError::NodeExists(created));
        }
        self.zxid += 1;
        let zxid = self.zxid;
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.cversion += 1;
            parent.pzxid = zxid;
        }
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let node = Node {
            data: data.to_vec(),
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            cversion: 0,
            ephemeral_owner: owner,
        };
        self.nodes.insert(created.clone(), node);
        Ok(created)
    }

    fn check_version(path: &str, node: &Node, expected: Option<i32>) -> Result<(), StoreError> {
        match expected {
            Some(v) if v != node.version => Err(StoreError::BadVersion(path.to_string())),
            _ => Ok(()),
        }
    }

    fn set(&mut self, path: &str, data: &[u8], expected: Option<i32>) -> Result<Stat, StoreError> {
        validate_path(path)?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        Self::check_version(path, node, expected)?;
        self.zxid += 1;
        let zxid = self.zxid;
        if let Some(node) = self.nodes.get_mut(path) {
            node.data = data.to_vec();
            node.version += 1;
            node.mzxid = zxid;
        }
        self.stat(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))
    }

    fn delete(&mut self, path: &str, expected: Option<i32>) -> Result<(), StoreError> {
        validate_path(path)?;
        if path == "/" {
            return Err(StoreError::InvalidPath(path.to_string()));
        }
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        Self::check_version(path, node, expected)?;
        if self.has_children(path) {
            return Err(StoreError::NotEmpty(path.to_string()));
        }
        self.nodes.remove(path);
        self.zxid += 1;
        let zxid = self.zxid;
        if let Some(parent) = parent_of(path).and_then(|p| self.nodes.get_mut(p)) {
            parent.cversion += 1;
            parent.pzxid = zxid;
        }
        Ok(())
    }

    fn check(&self, path: &str, version: i32) -> Result<(), StoreError> {
        validate_path(path)?;
        let node = self
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        Self::check_version(path, node, Some(version))
    }

    fn apply(&mut self, op: &Op, session: i64) -> Result<OpResult, StoreError> {
        match op {
            Op::Check { path, version } => self.check(path, *version).map(|()| OpResult::Check),
            Op::Create { path, data, mode } => self
                .create(path, data, *mode, session)
                .map(OpResult::Create),
            Op::Set {
                path,
                data,
                expected_version,
            } => self.set(path, data, *expected_version).map(OpResult::Set),
            Op::Delete {
                path,
                expected_version,
            } => self
                .delete(path, *expected_version)
                .map(|()| OpResult::Delete),
        }
    }

    /// Removes every ephemeral node of `session` (session close/expiry).
    fn drop_session(&mut self, session: i64) {
        let owned: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.ephemeral_owner == session)
            .map(|(k, _)| k.clone())
            .collect();
        for path in owned {
            // Ephemeral nodes have no children, so delete cannot fail here.
            let _ = self.delete(&path, None);
        }
    }

    /// The tree as written to disk: persistent nodes only.
    fn persistent_view(&self) -> Tree {
        Tree {
            zxid: self.zxid,
            last_session_id: self.last_session_id,
            nodes: self
                .nodes
                .iter()
                .filter(|(_, n)| n.ephemeral_owner == 0)
                .map(|(k, n)| (k.clone(), n.clone()))
                .collect(),
        }
    }
}

struct Inner {
    tree: Tree,
    /// None for an in-memory store (tests, tools).
    dir: Option<PathBuf>,
    session_id: i64,
}

impl Inner {
    /// Runs `f` on a copy of the tree; persists and installs the copy only
    /// if `f` succeeded and the copy is durable.
    fn mutate<T>(
        &mut self,
        f: impl FnOnce(&mut Tree, i64) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut next = self.tree.clone();
        let out = f(&mut next, self.session_id)?;
        if let Some(dir) = &self.dir {
            write_tree(dir, &next.persistent_view())?;
        }
        self.tree = next;
        Ok(out)
    }
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

fn write_tree(dir: &Path, tree: &Tree) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(tree).map_err(|e| StoreError::Io(e.to_string()))?;
    let tmp = dir.join(TREE_TEMP_FILE);
    let dst = dir.join(TREE_FILE);
    let mut file = fs::File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
    file.write_all(&bytes)
        .map_err(|e| io_err("write", &tmp, e))?;
    file.sync_all().map_err(|e| io_err("fsync", &tmp, e))?;
    drop(file);
    fs::rename(&tmp, &dst).map_err(|e| io_err("rename", &tmp, e))?;
    // The rename is durable only once the directory entry is.
    let dir_handle = fs::File::open(dir).map_err(|e| io_err("open", dir, e))?;
    dir_handle.sync_all().map_err(|e| io_err("fsync", dir, e))
}

fn read_tree(dir: &Path) -> Result<Option<Tree>, StoreError> {
    let path = dir.join(TREE_FILE);
    match fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Io(format!("corrupt {}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", &path, e)),
    }
}

/// In-process ZooKeeper stand-in. Cheap to clone (shared state); use from
/// one executor only.
#[derive(Clone)]
pub struct EmbeddedStore {
    inner: Rc<RefCell<Inner>>,
}

impl EmbeddedStore {
    /// Opens (or creates) the tree under `<log_dir>/__embedded_metadata/`
    /// and starts a new session: ephemeral nodes of earlier runs are gone.
    pub fn open(log_dir: &Path) -> Result<Self, StoreError> {
        let dir = log_dir.join(EMBEDDED_DIR);
        fs::create_dir_all(&dir).map_err(|e| io_err("create dir", &dir, e))?;
        let mut tree = read_tree(&dir)?.unwrap_or_else(Tree::empty);
        if !tree.nodes.contains_key("/") {
            return Err(StoreError::Io(format!(
                "corrupt {}: no root node",
                dir.display()
            )));
        }
        tree.last_session_id += 1;
        let session_id = tree.last_session_id;
        write_tree(&dir, &tree.persistent_view())?;
        Ok(Self::from_inner(tree, Some(dir), session_id))
    }

    /// A store that keeps nothing on disk (tests, tools).
    pub fn in_memory() -> Self {
        let mut tree = Tree::empty();
        tree.last_session_id = 1;
        Self::from_inner(tree, None, 1)
    }

    fn from_inner(tree: Tree, dir: Option<PathBuf>, session_id: i64) -> Self {
        Self {
            inner: Rc::new(RefCell::new(Inner {
                tree,
                dir,
                session_id,
            })),
        }
    }

    /// The current session id (the `ephemeral_owner` of its nodes).
    pub fn session_id(&self) -> i64 {
        self.inner.borrow().session_id
    }

    /// Ends the session (its ephemeral nodes are deleted) and starts a new
    /// one, like a ZooKeeper session expiry followed by a reconnect.
    pub fn close_session(&self) -> Result<(), StoreError> {
        let mut inner = self.inner.borrow_mut();
        let old = inner.session_id;
        let new = inner.mutate(|tree, _| {
            tree.drop_session(old);
            tree.last_session_id += 1;
            Ok(tree.last_session_id)
        })?;
        inner.session_id = new;
        Ok(())
    }

    /// The directory holding the tree, if persistent.
    pub fn dir(&self) -> Option<PathBuf> {
        self.inner.borrow().dir.clone()
    }
}

impl MetadataStore for EmbeddedStore {
    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, StoreError> {
        self.inner
            .borrow_mut()
            .mutate(|tree, session| tree.create(path, data, mode, session))
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), StoreError> {
        validate_path(path)?;
        let inner = self.inner.borrow();
        let node = inner
            .tree
            .nodes
            .get(path)
            .ok_or_else(|| StoreError::NoNode(path.to_string()))?;
        let stat = inner.tree.stat(path).unwrap_or_default();
        Ok((node.data.clone(), stat))
    }

    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, StoreError> {
        self.inner
            .borrow_mut()
            .mutate(|tree, _| tree.set(path, data, expected_version))
    }

    async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), StoreError> {
        self.inner
            .borrow_mut()
            .mutate(|tree, _| tree.delete(path, expected_version))
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, StoreError> {
        validate_path(path)?;
        Ok(self.inner.borrow().tree.stat(path))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        validate_path(path)?;
        let inner = self.inner.borrow();
        if !inner.tree.nodes.contains_key(path) {
            return Err(StoreError::NoNode(path.to_string()));
        }
        Ok(inner.tree.children(path))
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        self.inner
            .borrow_mut()
            .mutate(|tree, session| ops.iter().map(|op| tree.apply(op, session)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::store::{create_recursive, delete_recursive};
    use futures_lite::future::block_on;

    const P: CreateMode = CreateMode::Persistent;

    #[test]
    fn znode_semantics_table() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            s.create("/a", b"x", P).await.unwrap();
            s.create("/a/b", b"", P).await.unwrap();
            type Case = (&'static str, Op, StoreError);
            let cases: Vec<Case> = vec![
                (
                    "create existing",
                    Op::Create {
                        path: "/a".into(),
                        data: vec![],
                        mode: P,
                    },
                    StoreError::NodeExists("/a".into()),
                ),
                (
                    "create without parent",
                    Op::Create {
                        path: "/x/y".into(),
                        data: vec![],
                        mode: P,
                    },
                    StoreError::NoParent("/x/y".into()),
                ),
                (
                    "set wrong version",
                    Op::Set {
                        path: "/a".into(),
                        data: vec![],
                        expected_version: Some(3),
                    },
                    StoreError::BadVersion("/a".into()),
                ),
                (
                    "set missing",
                    Op::Set {
                        path: "/nope".into(),
                        data: vec![],
                        expected_version: None,
                    },
                    StoreError::NoNode("/nope".into()),
                ),
                (
                    "delete non-empty",
                    Op::Delete {
                        path: "/a".into(),
                        expected_version: None,
                    },
                    StoreError::NotEmpty("/a".into()),
                ),
                (
                    "delete wrong version",
                    Op::Delete {
                        path: "/a/b".into(),
                        expected_version: Some(1),
                    },
                    StoreError::BadVersion("/a/b".into()),
                ),
                (
                    "check wrong version",
                    Op::Check {
                        path: "/a".into(),
                        version: 1,
                    },
                    StoreError::BadVersion("/a".into()),
                ),
                (
                    "check missing",
                    Op::Check {
                        path: "/zz".into(),
                        version: 0,
                    },
                    StoreError::NoNode("/zz".into()),
                ),
                (
                    "invalid path",
                    Op::Create {
                        path: "a".into(),
                        data: vec![],
                        mode: P,
                    },
                    StoreError::InvalidPath("a".into()),
                ),
            ];
            for (name, op, want) in cases {
                assert_eq!(s.multi(vec![op]).await, Err(want), "{name}");
            }
        });
    }

    #[test]
    fn versions_start_at_zero_and_bump_on_set() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            s.create("/a", b"1", P).await.unwrap();
            assert_eq!(s.get("/a").await.unwrap().1.version, 0);
            let stat = s.set("/a", b"2", Some(0)).await.unwrap();
            assert_eq!(stat.version, 1);
            assert_eq!(s.set("/a", b"3", None).await.unwrap().version, 2);
            let (data, stat) = s.get("/a").await.unwrap();
            assert_eq!(
                (data.as_slice(), stat.version, stat.data_length),
                (&b"3"[..], 2, 1)
            );
            s.delete("/a", Some(2)).await.unwrap();
            assert_eq!(s.exists("/a").await.unwrap(), None);
        });
    }

    #[test]
    fn sequential_nodes_get_ten_digit_suffix_from_parent_cversion() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            s.create("/c", b"", P).await.unwrap();
            let seq = CreateMode::PersistentSequential;
            assert_eq!(
                s.create("/c/n_", b"", seq).await.unwrap(),
                "/c/n_0000000000"
            );
            s.create("/c/plain", b"", P).await.unwrap();
            assert_eq!(
                s.create("/c/n_", b"", seq).await.unwrap(),
                "/c/n_0000000002"
            );
            s.delete("/c/n_0000000000", None).await.unwrap();
            assert_eq!(
                s.create("/c/n_", b"", seq).await.unwrap(),
                "/c/n_0000000004"
            );
            assert_eq!(
                s.children("/c").await.unwrap(),
                vec!["n_0000000002", "n_0000000004", "plain"]
            );
        });
    }

    #[test]
    fn children_are_sorted_direct_children_only() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            create_recursive(&s, "/t/b/deep", b"", P).await.unwrap();
            s.create("/t/a", b"", P).await.unwrap();
            s.create("/t-x", b"", P).await.unwrap();
            assert_eq!(s.children("/t").await.unwrap(), vec!["a", "b"]);
            assert_eq!(s.children("/").await.unwrap(), vec!["t", "t-x"]);
            assert_eq!(s.exists("/t").await.unwrap().unwrap().num_children, 2);
            assert_eq!(
                s.children("/none").await,
                Err(StoreError::NoNode("/none".into()))
            );
        });
    }

    #[test]
    fn multi_is_all_or_nothing() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            s.create("/a", b"v0", P).await.unwrap();
            let ops = vec![
                Op::Create {
                    path: "/b".into(),
                    data: vec![],
                    mode: P,
                },
                Op::Set {
                    path: "/a".into(),
                    data: b"v1".to_vec(),
                    expected_version: Some(0),
                },
                Op::Check {
                    path: "/a".into(),
                    version: 0,
                }, // fails: version is now 1
            ];
            assert_eq!(s.multi(ops).await, Err(StoreError::BadVersion("/a".into())));
            assert_eq!(s.exists("/b").await.unwrap(), None);
            assert_eq!(
                s.get("/a").await.unwrap(),
                (b"v0".to_vec(), s.get("/a").await.unwrap().1)
            );
            assert_eq!(s.get("/a").await.unwrap().1.version, 0);
            let ok = s
                .multi(vec![
                    Op::Check {
                        path: "/a".into(),
                        version: 0,
                    },
                    Op::Create {
                        path: "/b".into(),
                        data: vec![],
                        mode: P,
                    },
                    Op::Delete {
                        path: "/b".into(),
                        expected_version: Some(0),
                    },
                ])
                .await
                .unwrap();
            assert_eq!(
                ok,
                vec![
                    OpResult::Check,
                    OpResult::Create("/b".into()),
                    OpResult::Delete
                ]
            );
        });
    }

    #[test]
    fn ephemeral_nodes_cannot_have_children_and_vanish_with_session() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            s.create("/e", b"", CreateMode::Ephemeral).await.unwrap();
            let owner = s.exists("/e").await.unwrap().unwrap().ephemeral_owner;
            assert_eq!(owner, s.session_id());
            assert_eq!(
                s.create("/e/c", b"", P).await,
                Err(StoreError::NoChildrenForEphemerals("/e/c".into()))
            );
            s.create("/p", b"", P).await.unwrap();
            s.close_session().unwrap();
            assert_eq!(s.exists("/e").await.unwrap(), None);
            assert!(s.exists("/p").await.unwrap().is_some());
            assert_ne!(s.session_id(), owner);
        });
    }

    #[test]
    fn tree_persists_across_reopen_without_ephemerals() {
        let dir = tempfile::tempdir().unwrap();
        block_on(async {
            let s = EmbeddedStore::open(dir.path()).unwrap();
            create_recursive(&s, "/brokers/topics/t", b"{\"v\":1}", P)
                .await
                .unwrap();
            s.set("/brokers/topics/t", b"{\"v\":2}", Some(0))
                .await
                .unwrap();
            s.create("/brokers/ids", b"", P).await.unwrap();
            s.create("/brokers/ids/1", b"me", CreateMode::Ephemeral)
                .await
                .unwrap();
            s.create("/bin", &[0xff, 0x00], P).await.unwrap();
            let first_session = s.session_id();
            drop(s);
            let s = EmbeddedStore::open(dir.path()).unwrap();
            assert!(s.session_id() > first_session);
            let (data, stat) = s.get("/brokers/topics/t").await.unwrap();
            assert_eq!((data.as_slice(), stat.version), (&b"{\"v\":2}"[..], 1));
            assert_eq!(s.get("/bin").await.unwrap().0, vec![0xff, 0x00]);
            assert_eq!(s.exists("/brokers/ids/1").await.unwrap(), None);
            assert!(s.children("/brokers/ids").await.unwrap().is_empty());
        });
    }

    #[test]
    fn failed_mutations_do_not_touch_disk_state() {
        let dir = tempfile::tempdir().unwrap();
        block_on(async {
            let s = EmbeddedStore::open(dir.path()).unwrap();
            s.create("/a", b"", P).await.unwrap();
            let before = fs::read(dir.path().join(EMBEDDED_DIR).join(TREE_FILE)).unwrap();
            assert!(s.create("/a", b"", P).await.is_err());
            let after = fs::read(dir.path().join(EMBEDDED_DIR).join(TREE_FILE)).unwrap();
            assert_eq!(before, after);
        });
    }

    #[test]
    fn corrupt_tree_file_is_an_io_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join(EMBEDDED_DIR)).unwrap();
        fs::write(dir.path().join(EMBEDDED_DIR).join(TREE_FILE), b"{not json").unwrap();
        assert!(matches!(
            EmbeddedStore::open(dir.path()),
            Err(StoreError::Io(_))
        ));
    }

    #[test]
    fn delete_recursive_removes_subtree() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            create_recursive(&s, "/t/p/0/state", b"", P).await.unwrap();
            create_recursive(&s, "/t/p/1/state", b"", P).await.unwrap();
            s.create("/keep", b"", P).await.unwrap();
            delete_recursive(&s, "/t").await.unwrap();
            assert_eq!(s.children("/").await.unwrap(), vec!["keep"]);
            delete_recursive(&s, "/t").await.unwrap();
        });
    }

    #[test]
    fn create_recursive_reports_existing_target() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            assert_eq!(
                create_recursive(&s, "/x/y/z", b"d", P).await.unwrap(),
                "/x/y/z"
            );
            assert_eq!(
                create_recursive(&s, "/x/y/z", b"d", P).await,
                Err(StoreError::NodeExists("/x/y/z".into()))
            );
            assert_eq!(s.get("/x/y").await.unwrap().0, Vec::<u8>::new());
        });
    }

    /// A model of persistent znodes: path → (data, version).
    type Model = BTreeMap<String, (Vec<u8>, i32)>;

    #[derive(Debug, Clone)]
    enum ModelOp {
        Create(usize, u8),
        Set(usize, u8, Option<i32>),
        Delete(usize, Option<i32>),
    }

    const UNIVERSE: &[&str] = &["/a", "/a/b", "/a/b/c", "/a/d", "/e"];

    fn model_op() -> impl proptest::strategy::Strategy<Value = ModelOp> {
        use proptest::prelude::*;
        let idx = 0..UNIVERSE.len();
        let ver = proptest::option::of(0i32..3);
        prop_oneof![
            (idx.clone(), any::<u8>()).prop_map(|(i, d)| ModelOp::Create(i, d)),
            (idx.clone(), any::<u8>(), ver.clone()).prop_map(|(i, d, v)| ModelOp::Set(i, d, v)),
            (idx, ver).prop_map(|(i, v)| ModelOp::Delete(i, v)),
        ]
    }

    /// The model's answer: Ok or the ZooKeeper error for `op`.
    fn model_apply(model: &mut Model, op: &ModelOp) -> Result<(), StoreError> {
        let path = |i: usize| UNIVERSE[i].to_string();
        let parent_exists =
            |m: &Model, p: &str| parent_of(p).is_some_and(|pp| pp == "/" || m.contains_key(pp));
        let version_ok = |m: &Model, p: &str, v: Option<i32>| {
            v.is_none_or(|v| m.get(p).is_some_and(|n| n.1 == v))
        };
        match op {
            ModelOp::Create(i, d) => {
                let p = path(*i);
                if model.contains_key(&p) {
                    return Err(StoreError::NodeExists(p));
                }
                if !parent_exists(model, &p) {
                    return Err(StoreError::NoParent(p));
                }
                model.insert(p, (vec![*d], 0));
            }
            ModelOp::Set(i, d, v) => {
                let p = path(*i);
                if !model.contains_key(&p) {
                    return Err(StoreError::NoNode(p));
                }
                if !version_ok(model, &p, *v) {
                    return Err(StoreError::BadVersion(p));
                }
                let node = model.get_mut(&p).expect("checked above");
                *node = (vec![*d], node.1 + 1);
            }
            ModelOp::Delete(i, v) => {
                let p = path(*i);
                if !model.contains_key(&p) {
                    return Err(StoreError::NoNode(p));
                }
                if !version_ok(model, &p, *v) {
                    return Err(StoreError::BadVersion(p));
                }
                if model.keys().any(|k| parent_of(k) == Some(p.as_str())) {
                    return Err(StoreError::NotEmpty(p));
                }
                model.remove(&p);
            }
        }
        Ok(())
    }

    async fn store_apply(s: &EmbeddedStore, op: &ModelOp) -> Result<(), StoreError> {
        match op {
            ModelOp::Create(i, d) => s.create(UNIVERSE[*i], &[*d], P).await.map(|_| ()),
            ModelOp::Set(i, d, v) => s.set(UNIVERSE[*i], &[*d], *v).await.map(|_| ()),
            ModelOp::Delete(i, v) => s.delete(UNIVERSE[*i], *v).await,
        }
    }

    async fn snapshot(s: &EmbeddedStore) -> Model {
        let mut out = Model::new();
        for p in UNIVERSE {
            if let Ok((data, stat)) = s.get(p).await {
                out.insert(p.to_string(), (data, stat.version));
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        #[test]
        fn store_matches_znode_model_and_survives_reopen(
            ops in proptest::collection::vec(model_op(), 1..25),
        ) {
            let dir = tempfile::tempdir().unwrap();
            block_on(async {
                let s = EmbeddedStore::open(dir.path()).unwrap();
                let mut model = Model::new();
                for op in &ops {
                    let want = model_apply(&mut model, op);
                    assert_eq!(store_apply(&s, op).await, want, "{op:?}");
                }
                assert_eq!(snapshot(&s).await, model);
                drop(s);
                let reopened = EmbeddedStore::open(dir.path()).unwrap();
                assert_eq!(snapshot(&reopened).await, model);
            });
        }
    }
}
