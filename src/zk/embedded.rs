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
use super::watch::{oneshot, Fire, SessionEvent, SessionWatch, Watch, WatchEvent, WatchKind};
use crate::io::clock::{Clock, SystemClock};

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
    /// Creation time, ms since the epoch (0 in trees written before it
    /// was kept).
    #[serde(default)]
    ctime: i64,
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
            ctime: 0,
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
            ctime: node.ctime,
            version: node.version,
            cversion: node.cversion,
            ephemeral_owner: node.ephemeral_owner,
            data_length: node.data.len() as i32,
            num_children: self.children(path).len() as i32,
        })
    }

    /// Creates `path`; `now_ms` (wall clock) is its `ctime`.
    fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        session: i64,
        now_ms: i64,
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
            ctime: now_ms,
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

    fn apply(&mut self, op: &Op, session: i64, now_ms: i64) -> Result<OpResult, StoreError> {
        match op {
            Op::Check { path, version } => self.check(path, *version).map(|()| OpResult::Check),
            Op::Create { path, data, mode } => self
                .create(path, data, *mode, session, now_ms)
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
    /// Wall-clock time for the `ctime` of created nodes.
    clock: Rc<dyn Clock>,
    watches: Vec<Armed>,
    /// Per session, who waits for its next state change.
    session_waiters: Vec<(i64, Fire<SessionEvent>)>,
}

/// What a watch was set by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WatchOn {
    /// `get_watch` / `exists_watch`: the node's existence and data.
    Node,
    /// `children_watch`: its child list (and its own delete).
    Children,
}

/// A watch not fired yet, with the node's stat when it was set: after each
/// mutation the stat now says whether (and why) it fires.
struct Armed {
    session: i64,
    path: String,
    on: WatchOn,
    seen: Option<Stat>,
    fire: Fire<WatchEvent>,
}

impl Armed {
    fn fired_by(&self, now: Option<Stat>) -> Option<WatchKind> {
        match (self.on, self.seen, now) {
            (_, Some(_), None) => Some(WatchKind::Deleted),
            (WatchOn::Node, None, Some(_)) => Some(WatchKind::Created),
            // Deleted and created again between two looks: the delete came first.
            (_, Some(a), Some(b)) if a.czxid != b.czxid => Some(WatchKind::Deleted),
            (WatchOn::Node, Some(a), Some(b)) if a.mzxid != b.mzxid => Some(WatchKind::DataChanged),
            (WatchOn::Children, Some(a), Some(b)) if a.cversion != b.cversion => {
                Some(WatchKind::ChildrenChanged)
            }
            _ => None,
        }
    }
}

impl Inner {
    /// Runs `f` on a copy of the tree; persists and installs the copy only
    /// if `f` succeeded and the copy is durable.
    fn mutate<T>(
        &mut self,
        session: i64,
        f: impl FnOnce(&mut Tree, i64) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut next = self.tree.clone();
        let out = f(&mut next, session)?;
        if let Some(dir) = &self.dir {
            write_tree(dir, &next.persistent_view())?;
        }
        self.tree = next;
        self.fire_watches();
        Ok(out)
    }

    /// Removes and returns the watches `session` set.
    fn take_watches_of(&mut self, session: i64) -> Vec<Armed> {
        let (mine, others): (Vec<Armed>, Vec<Armed>) = std::mem::take(&mut self.watches)
            .into_iter()
            .partition(|w| w.session == session);
        self.watches = others;
        mine
    }

    fn arm(&mut self, session: i64, path: &str, on: WatchOn) -> Watch {
        let (fire, fired) = oneshot();
        self.watches.push(Armed {
            session,
            path: path.to_string(),
            on,
            seen: self.tree.stat(path),
            fire,
        });
        Box::pin(fired)
    }

    /// Fires (and drops) every watch the last mutation triggered.
    fn fire_watches(&mut self) {
        let tree = &self.tree;
        self.watches
            .retain(|w| match w.fired_by(tree.stat(&w.path)) {
                Some(kind) => {
                    w.fire.fire(WatchEvent {
                        kind,
                        path: w.path.clone(),
                    });
                    false
                }
                None => true,
            });
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
    /// This handle's session (see [`EmbeddedStore::new_session`]).
    session: Rc<std::cell::Cell<i64>>,
    /// Whether this handle is cut from the server (see
    /// [`EmbeddedStore::cut_from_server`]).
    link: Rc<Link>,
}

/// A handle's connection to the tree, shared by its clones.
#[derive(Default)]
struct Link {
    cut: std::cell::Cell<bool>,
    /// Operations waiting for the connection to come back.
    blocked: RefCell<Vec<Fire<()>>>,
    /// The session's watches, taken off the tree when the server expired
    /// it: they fire `SessionClosed` once the client learns it.
    held: RefCell<Vec<Armed>>,
}

impl EmbeddedStore {
    /// Opens (or creates) the tree under `<log_dir>/__embedded_metadata/`
    /// and starts a new session: ephemeral nodes of earlier runs are gone.
    /// `clock` dates the nodes created (`ctime`).
    pub fn open(log_dir: &Path, clock: Rc<dyn Clock>) -> Result<Self, StoreError> {
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
        Ok(Self::from_inner(tree, Some(dir), session_id, clock))
    }

    /// A store that keeps nothing on disk (tests, tools), its nodes dated
    /// by the system clock.
    pub fn in_memory() -> Self {
        let mut tree = Tree::empty();
        tree.last_session_id = 1;
        Self::from_inner(tree, None, 1, Rc::new(SystemClock::new()))
    }

    fn from_inner(tree: Tree, dir: Option<PathBuf>, session_id: i64, clock: Rc<dyn Clock>) -> Self {
        Self {
            inner: Rc::new(RefCell::new(Inner {
                tree,
                dir,
                clock,
                watches: Vec::new(),
                session_waiters: Vec::new(),
            })),
            session: Rc::new(std::cell::Cell::new(session_id)),
            link: Rc::default(),
        }
    }

    /// The current session id (the `ephemeral_owner` of its nodes).
    pub fn session_id(&self) -> i64 {
        self.session.get()
    }

    /// Another client of the same tree with its own session, as a second
    /// broker would connect to one ZooKeeper (election tests run several
    /// "brokers" over one in-process tree).
    pub fn new_session(&self) -> Result<Self, StoreError> {
        let id = self
            .inner
            .borrow_mut()
            .mutate(self.session.get(), |tree, _| {
                tree.last_session_id += 1;
                Ok(tree.last_session_id)
            })?;
        Ok(Self {
            inner: self.inner.clone(),
            session: Rc::new(std::cell::Cell::new(id)),
            link: Rc::default(),
        })
    }

    /// A network partition between this client and the server (the
    /// simulator's fault): the server expires the session at once (its
    /// ephemeral nodes go; other sessions' watches fire), while the client
    /// does not know: its operations wait for the connection, as a
    /// ZooKeeper client's requests queue while it is disconnected, and its
    /// watches and session waiters stay silent. [`EmbeddedStore::close_session`]
    /// is the reconnection: the client learns the session expired.
    pub fn cut_from_server(&self) -> Result<(), StoreError> {
        if self.link.cut.replace(true) {
            return Ok(());
        }
        let mut inner = self.inner.borrow_mut();
        let old = self.session.get();
        let mine = inner.take_watches_of(old);
        self.link.held.borrow_mut().extend(mine);
        inner.mutate(old, |tree, _| {
            tree.drop_session(old);
            Ok(())
        })
    }

    /// Whether this handle is cut from the server.
    pub fn is_cut(&self) -> bool {
        self.link.cut.get()
    }

    /// Ok while connected; while cut, waits for the reconnection and
    /// fails with the expiry the client then learns.
    async fn connected(&self) -> Result<(), StoreError> {
        if !self.link.cut.get() {
            return Ok(());
        }
        let (fire, fired) = oneshot();
        self.link.blocked.borrow_mut().push(fire);
        fired.await;
        Err(StoreError::SessionExpired)
    }

    /// Ends the session (its ephemeral nodes are deleted) and starts a new
    /// one, like a ZooKeeper session expiry followed by a reconnect.
    /// The session's watches end unfired (`SessionClosed`) and session
    /// waiters see `Expired`. After [`EmbeddedStore::cut_from_server`] it
    /// is the reconnection: the operations waiting fail with
    /// `SessionExpired`, as they would on a reconnected ZooKeeper client.
    pub fn close_session(&self) -> Result<(), StoreError> {
        let mut inner = self.inner.borrow_mut();
        let old = self.session.get();
        let mut mine = inner.take_watches_of(old);
        let was_cut = self.link.cut.replace(false);
        mine.append(&mut self.link.held.borrow_mut());
        for w in mine {
            w.fire.fire(WatchEvent {
                kind: WatchKind::SessionClosed,
                path: w.path,
            });
        }
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut inner.session_waiters)
            .into_iter()
            .partition(|(s, _)| *s == old);
        inner.session_waiters = others;
        for (_, waiter) in mine {
            waiter.fire(SessionEvent::Expired);
        }
        let new = inner.mutate(old, |tree, _| {
            tree.drop_session(old);
            tree.last_session_id += 1;
            Ok(tree.last_session_id)
        })?;
        self.session.set(new);
        drop(inner);
        if was_cut {
            for op in self.link.blocked.take() {
                op.fire(());
            }
        }
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
        self.connected().await?;
        let mut inner = self.inner.borrow_mut();
        let now_ms = inner.clock.wall_ms();
        inner.mutate(self.session.get(), |tree, session| {
            tree.create(path, data, mode, session, now_ms)
        })
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), StoreError> {
        self.connected().await?;
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
        self.connected().await?;
        self.inner
            .borrow_mut()
            .mutate(self.session.get(), |tree, _| {
                tree.set(path, data, expected_version)
            })
    }

    async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), StoreError> {
        self.connected().await?;
        self.inner
            .borrow_mut()
            .mutate(self.session.get(), |tree, _| {
                tree.delete(path, expected_version)
            })
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, StoreError> {
        self.connected().await?;
        validate_path(path)?;
        Ok(self.inner.borrow().tree.stat(path))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        self.connected().await?;
        validate_path(path)?;
        let inner = self.inner.borrow();
        if !inner.tree.nodes.contains_key(path) {
            return Err(StoreError::NoNode(path.to_string()));
        }
        Ok(inner.tree.children(path))
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        self.connected().await?;
        let mut inner = self.inner.borrow_mut();
        let now_ms = inner.clock.wall_ms();
        inner.mutate(self.session.get(), |tree, session| {
            ops.iter()
                .map(|op| tree.apply(op, session, now_ms))
                .collect()
        })
    }

    async fn get_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), StoreError> {
        let (data, stat) = self.get(path).await?;
        Ok((
            data,
            stat,
            self.inner
                .borrow_mut()
                .arm(self.session.get(), path, WatchOn::Node),
        ))
    }

    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), StoreError> {
        let stat = self.exists(path).await?;
        Ok((
            stat,
            self.inner
                .borrow_mut()
                .arm(self.session.get(), path, WatchOn::Node),
        ))
    }

    async fn children_watch(&self, path: &str) -> Result<(Vec<String>, Watch), StoreError> {
        let kids = self.children(path).await?;
        Ok((
            kids,
            self.inner
                .borrow_mut()
                .arm(self.session.get(), path, WatchOn::Children),
        ))
    }

    fn current_session(&self) -> i64 {
        self.session_id()
    }

    /// In process the session never drops; it ends only by
    /// [`EmbeddedStore::close_session`].
    fn session_event(&self) -> SessionWatch {
        let (fire, fired) = oneshot();
        self.inner
            .borrow_mut()
            .session_waiters
            .push((self.session.get(), fire));
        Box::pin(fired)
    }
}

#[cfg(test)]
mod tests;
