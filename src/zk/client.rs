//! `[io]` [`ZkStore`]: the [`MetadataStore`] over a real ZooKeeper
//! ensemble (`zookeeper.connect`), on the control shard's glommio executor.
//!
//! Built on the `zookeeper-client` crate. How it is wired into glommio:
//! - The crate spawns one task per session (its connection and request
//!   loop) with `asyncs::spawn`, which asks spawns-core's *thread-local*
//!   spawner. [`WithGlommio`] wraps every crate future that may spawn
//!   (only `connect` does, in the parts we use) and enters
//!   [`GlommioSpawner`] around each poll, which hands the task to
//!   `glommio::spawn_local` and detaches it: the session task runs on the
//!   same executor thread as its caller.
//! - Its sockets and timers are async-net / async-io, driven by async-io's
//!   own reactor thread; that thread wakes our tasks through glommio's
//!   cross-thread wakers. Nothing blocks the executor.
//!
//! Errors follow the embedded store (the reference): ZooKeeper's NONODE on
//! a create is [`StoreError::NoParent`], every error names the path of the
//! failing operation, and anything that is not a ZooKeeper answer about the
//! node (connection loss, a closed client) is [`StoreError::Io`].
//!
//! Session life (ZooKeeper's): `Disconnected` is transient, the crate
//! reconnects to any ensemble member with the same session, and ephemeral
//! nodes and watches survive. `Expired` (or `Closed`) is terminal: every
//! later call fails; the owner builds a new store ([`ZkStore::reconnect`])
//! and re-creates its ephemeral nodes and watches (Kafka's
//! `ZooKeeperClient.reinitialize`).

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use zookeeper_client as zk;

use super::store::{validate_path, CreateMode, MetadataStore, Op, OpResult, Stat, StoreError};
use super::watch::{SessionEvent, SessionWatch, Watch, WatchEvent, WatchKind};
use crate::io::clock::Clock;
use crate::metrics::control::{ZkClientStats, ZkSessionState};

/// Settings of one ZooKeeper session (Kafka's `zookeeper.*` keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkOptions {
    /// `zookeeper.connect`: `host:port[,host:port...][/chroot]`.
    pub connect: String,
    /// `zookeeper.session.timeout.ms` (Kafka default 18000).
    pub session_timeout_ms: u64,
    /// `zookeeper.connection.timeout.ms`: how long [`ZkStore::connect`]
    /// waits for a session (Kafka: defaults to the session timeout).
    pub connection_timeout_ms: u64,
    /// `zookeeper.max.in.flight.requests` (Kafka default 10): requests of
    /// this session outstanding at once; more wait for a slot (Kafka's
    /// `ZooKeeperClient` semaphore).
    pub max_in_flight: u64,
}

/// Kafka's `zookeeper.max.in.flight.requests` default.
pub const DEFAULT_MAX_IN_FLIGHT: u64 = 10;

/// `zookeeper.connect` split as Kafka does (`KafkaServer.initZkClient`):
/// everything from the first `/` is the chroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    pub hosts: String,
    /// None for no chroot (also for a bare `/`).
    pub chroot: Option<String>,
}

impl ConnectString {
    pub fn parse(connect: &str) -> Result<Self, StoreError> {
        let bad =
            |why: &str| StoreError::Io(format!("invalid zookeeper.connect {connect:?}: {why}"));
        let (hosts, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], Some(&connect[i..])),
            None => (connect, None),
        };
        let hosts = hosts.trim();
        if hosts.is_empty() || hosts.split(',').any(|h| h.trim().is_empty()) {
            return Err(bad("no host:port"));
        }
        let chroot = match chroot {
            None | Some("/") => None,
            Some(path) => {
                validate_path(path).map_err(|_| bad("chroot is not a valid znode path"))?;
                Some(path.to_string())
            }
        };
        Ok(Self {
            hosts: hosts.to_string(),
            chroot,
        })
    }
}

/// A ZooKeeper session. Clones share the session; it is closed when the
/// last clone is dropped (or by [`ZkStore::close`]). Use from the glommio
/// executor that connected it.
#[derive(Clone)]
pub struct ZkStore {
    client: zk::Client,
    options: ZkOptions,
    in_flight: std::rc::Rc<glommio::sync::Semaphore>,
    /// Where request latencies and session events go (`/metrics`), with
    /// the clock that times them; kept by [`ZkStore::reconnect`].
    metrics: Option<(Rc<ZkClientStats>, Rc<dyn Clock>)>,
}

/// A request's slot; its latency is recorded when it is given back
/// (Kafka's `ZooKeeperClient` times send to answer, after the in-flight
/// semaphore).
struct Slot<'a> {
    _permit: glommio::sync::Permit<'a>,
    timing: Option<(&'a ZkClientStats, &'a dyn Clock, u64)>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some((stats, clock, started_ns)) = self.timing {
            let us = clock.mono_ns().saturating_sub(started_ns) / 1_000;
            stats.on_request(clock.mono_ms(), us);
        }
    }
}

impl ZkStore {
    /// Opens a session on `connect` (see [`ZkOptions`]). With a chroot the
    /// chroot path is created first if missing, as Kafka does before it
    /// connects below it. Fails after `connection_timeout_ms` with an error
    /// naming the address. Must run inside a glommio executor.
    pub async fn connect(
        connect: &str,
        session_timeout_ms: u64,
        connection_timeout_ms: u64,
    ) -> Result<Self, StoreError> {
        Self::connect_with(ZkOptions {
            connect: connect.to_string(),
            session_timeout_ms,
            connection_timeout_ms,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        })
        .await
    }

    pub async fn connect_with(options: ZkOptions) -> Result<Self, StoreError> {
        let parsed = ConnectString::parse(&options.connect)?;
        let timeout = Duration::from_millis(options.connection_timeout_ms);
        let connector = zk::Client::connector()
            .with_session_timeout(Duration::from_millis(options.session_timeout_ms));
        let hosts = parsed.hosts.clone();
        let attempt = async move { Some(connector.connect(&hosts).await) };
        let deadline = async {
            glommio::timer::sleep(timeout).await;
            None
        };
        let client = match futures_lite::future::or(WithGlommio(Box::pin(attempt)), deadline).await
        {
            Some(Ok(client)) => client,
            Some(Err(e)) => {
                return Err(StoreError::Io(format!(
                    "cannot connect to ZooKeeper at {}: {e}",
                    options.connect
                )))
            }
            None => {
                // Kafka: ZooKeeperClientTimeoutException after
                // zookeeper.connection.timeout.ms.
                return Err(StoreError::Io(format!(
                    "timed out after {} ms connecting to ZooKeeper at {} \
                     (zookeeper.connection.timeout.ms)",
                    options.connection_timeout_ms, options.connect
                )));
            }
        };
        let client = match &parsed.chroot {
            None => client,
            Some(chroot) => enter_chroot(client, chroot).await?,
        };
        let in_flight =
            std::rc::Rc::new(glommio::sync::Semaphore::new(options.max_in_flight.max(1)));
        Ok(Self {
            client,
            options,
            in_flight,
            metrics: None,
        })
    }

    /// Record this session's (and every renewed one's) request latencies
    /// and session events into `stats` (Kafka's `ZooKeeperClientMetrics`
    /// and `SessionExpireListener`).
    pub fn with_metrics(mut self, stats: Rc<ZkClientStats>, clock: Rc<dyn Clock>) -> Self {
        follow_session(&self.client, stats.clone());
        self.metrics = Some((stats, clock));
        self
    }

    /// A slot among `zookeeper.max.in.flight.requests`, held for one request.
    async fn slot(&self) -> Result<Slot<'_>, StoreError> {
        let permit = self
            .in_flight
            .acquire_permit(1)
            .await
            .map_err(|e| StoreError::Io(format!("ZooKeeper request slots closed: {e}")))?;
        let timing = self
            .metrics
            .as_ref()
            .map(|(stats, clock)| (&**stats, &**clock, clock.mono_ns()));
        Ok(Slot {
            _permit: permit,
            timing,
        })
    }

    /// A new session with the same settings (after `Expired`).
    pub async fn reconnect(&self) -> Result<Self, StoreError> {
        let new = Self::connect_with(self.options.clone()).await?;
        Ok(match &self.metrics {
            Some((stats, clock)) => new.with_metrics(stats.clone(), clock.clone()),
            None => new,
        })
    }

    pub fn options(&self) -> &ZkOptions {
        &self.options
    }

    /// The timeout the server granted (it clamps the asked one to
    /// 2..20 ticks).
    pub fn negotiated_session_timeout(&self) -> Duration {
        self.client.session_timeout()
    }

    /// Closes the session now (its ephemeral nodes go) and waits until the
    /// server acknowledged it, or the session ended otherwise. Other clones
    /// keep a closed store.
    pub async fn close(self) {
        let mut states = self.client.state_watcher();
        drop(self.client);
        // The session task sends CloseSession once the last requester is
        // gone; other live clones keep it open, so do not wait forever.
        while !states.peek_state().is_terminated() {
            let changed = async { Some(states.changed().await) };
            let gave_up = async {
                glommio::timer::sleep(Duration::from_millis(self.options.session_timeout_ms)).await;
                None
            };
            if futures_lite::future::or(changed, gave_up).await.is_none() {
                return;
            }
        }
    }
}

/// Counts the session's state changes until it ends, as Kafka's
/// `SessionExpireListener` marks its meters per watcher event.
fn follow_session(client: &zk::Client, stats: Rc<ZkClientStats>) {
    let mut states = client.state_watcher();
    on_session_state(&stats, states.peek_state());
    glommio::spawn_local(async move {
        while !states.peek_state().is_terminated() {
            let state = states.changed().await;
            on_session_state(&stats, state);
        }
    })
    .detach();
}

fn on_session_state(stats: &ZkClientStats, state: zk::SessionState) {
    let now = match state {
        zk::SessionState::SyncConnected => {
            stats.on_session_event(|e| e.sync_connects += 1);
            ZkSessionState::Connected
        }
        zk::SessionState::ConnectedReadOnly => {
            stats.on_session_event(|e| e.read_only_connects += 1);
            ZkSessionState::ConnectedReadOnly
        }
        zk::SessionState::Disconnected => {
            stats.on_session_event(|e| e.disconnects += 1);
            ZkSessionState::Connecting
        }
        zk::SessionState::Expired => {
            stats.on_session_event(|e| e.expires += 1);
            ZkSessionState::Closed
        }
        zk::SessionState::AuthFailed => {
            stats.on_session_event(|e| e.auth_failures += 1);
            ZkSessionState::AuthFailed
        }
        zk::SessionState::Closed => ZkSessionState::Closed,
    };
    stats.on_state(now);
}

/// Creates `chroot` (and its ancestors) with the chroot-less session, then
/// moves that session below it. Kafka (`KafkaServer.initZkClient`) does
/// the same with a second, short-lived client; one session is enough.
async fn enter_chroot(client: zk::Client, chroot: &str) -> Result<zk::Client, StoreError> {
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client
        .mkdir(chroot, &options)
        .await
        .map_err(|e| map_error(e, &Target::Create(chroot)))?;
    client
        .chroot(chroot.to_string())
        .map_err(|_| StoreError::InvalidPath(chroot.to_string()))
}

/// Makes spawns-core's thread-local spawner the glommio executor's while
/// the inner future is polled (the scope ends with each poll, so it never
/// outlives the executor or leaks to other tasks).
struct WithGlommio<F>(Pin<Box<F>>);

impl<F: Future> Future for WithGlommio<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _scope = spawns_core::enter(&GlommioSpawner);
        self.0.as_mut().poll(cx)
    }
}

/// Runs spawns-core tasks as detached glommio tasks on the current executor.
struct GlommioSpawner;

impl spawns_core::Spawn for GlommioSpawner {
    fn spawn(&self, task: spawns_core::Task) {
        glommio::spawn_local(Box::into_pin(task.future)).detach();
    }
}

/// What failed, for the error's path and the create-specific NONODE.
enum Target<'a> {
    Create(&'a str),
    Node(&'a str),
}

impl Target<'_> {
    fn path(&self) -> &str {
        match self {
            Self::Create(p) | Self::Node(p) => p,
        }
    }
}

/// ZooKeeper's answer for `target` as the embedded store reports it.
fn map_error(e: zk::Error, target: &Target<'_>) -> StoreError {
    let path = target.path().to_string();
    match e {
        zk::Error::NoNode if matches!(target, Target::Create(_)) => StoreError::NoParent(path),
        zk::Error::NoNode => StoreError::NoNode(path),
        zk::Error::NodeExists => StoreError::NodeExists(path),
        zk::Error::BadVersion => StoreError::BadVersion(path),
        zk::Error::NotEmpty => StoreError::NotEmpty(path),
        zk::Error::NoChildrenForEphemerals => StoreError::NoChildrenForEphemerals(path),
        zk::Error::BadArguments(_) => StoreError::InvalidPath(path),
        zk::Error::SessionExpired => StoreError::SessionExpired,
        zk::Error::ConnectionLoss => StoreError::Io(format!(
            "ZooKeeper connection lost during the request on {path}"
        )),
        zk::Error::ClientClosed => StoreError::Io(format!("ZooKeeper session closed ({path})")),
        other => StoreError::Io(format!("ZooKeeper error on {path}: {other}")),
    }
}

fn to_stat(s: &zk::Stat) -> Stat {
    Stat {
        czxid: s.czxid,
        mzxid: s.mzxid,
        pzxid: s.pzxid,
        ctime: s.ctime,
        version: s.version,
        cversion: s.cversion,
        ephemeral_owner: s.ephemeral_owner,
        data_length: s.data_length,
        num_children: s.num_children,
    }
}

fn to_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
    }
}

/// The crate's one-shot watcher as a [`Watch`]. A session event on a
/// one-shot watcher is the session's end (the crate delivers only terminal
/// states to it: after a disconnect the server re-arms the watch).
fn to_watch(watcher: zk::OneshotWatcher, path: &str) -> Watch {
    let path = path.to_string();
    Box::pin(async move {
        let event = watcher.changed().await;
        let kind = match event.event_type {
            zk::EventType::NodeCreated => WatchKind::Created,
            zk::EventType::NodeDeleted => WatchKind::Deleted,
            zk::EventType::NodeDataChanged => WatchKind::DataChanged,
            zk::EventType::NodeChildrenChanged => WatchKind::ChildrenChanged,
            zk::EventType::Session => WatchKind::SessionClosed,
        };
        WatchEvent { kind, path }
    })
}

fn to_session_event(state: zk::SessionState) -> SessionEvent {
    match state {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            SessionEvent::Connected
        }
        zk::SessionState::Disconnected => SessionEvent::Disconnected,
        // AuthFailed is terminal too: the session is unusable, as expired.
        zk::SessionState::Expired | zk::SessionState::AuthFailed => SessionEvent::Expired,
        zk::SessionState::Closed => SessionEvent::Closed,
    }
}

/// Our paths are checked as the embedded store checks them, so both
/// stores reject the same paths with the same error.
fn checked(path: &str) -> Result<&str, StoreError> {
    validate_path(path).map(|()| path)
}

impl ZkStore {
    async fn create_node(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, StoreError> {
        let target = Target::Create(path);
        validate_path(if mode.is_sequential() {
            path.trim_end_matches('/')
        } else {
            path
        })?;
        if path == "/" {
            return Err(StoreError::NodeExists(path.to_string()));
        }
        let options = to_mode(mode).with_acls(zk::Acls::anyone_all());
        let (_, sequence) = self
            .client
            .create(path, data, &options)
            .await
            .map_err(|e| map_error(e, &target))?;
        // ZooKeeper appends the parent's cversion, 10 digits.
        Ok(if mode.is_sequential() {
            format!("{path}{sequence}")
        } else {
            path.to_string()
        })
    }

    fn add_op(writer: &mut zk::MultiWriter<'_>, op: &Op) -> Result<(), StoreError> {
        let options;
        let (added, target) = match op {
            Op::Check { path, version } => (
                writer.add_check_version(checked(path)?, *version),
                Target::Node(path),
            ),
            Op::Create { path, data, mode } => {
                options = to_mode(*mode).with_acls(zk::Acls::anyone_all());
                (
                    writer.add_create(path, data, &options),
                    Target::Create(path),
                )
            }
            Op::Set {
                path,
                data,
                expected_version,
            } => (
                writer.add_set_data(checked(path)?, data, *expected_version),
                Target::Node(path),
            ),
            Op::Delete {
                path,
                expected_version,
            } => (
                writer.add_delete(checked(path)?, *expected_version),
                Target::Node(path),
            ),
        };
        added.map_err(|e| map_error(e, &target))
    }

    fn op_target(op: &Op) -> Target<'_> {
        match op {
            Op::Create { path, .. } => Target::Create(path),
            Op::Check { path, .. } | Op::Set { path, .. } | Op::Delete { path, .. } => {
                Target::Node(path)
            }
        }
    }
}

impl MetadataStore for ZkStore {
    async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
    ) -> Result<String, StoreError> {
        let _slot = self.slot().await?;
        self.create_node(path, data, mode).await
    }

    async fn get(&self, path: &str) -> Result<(Vec<u8>, Stat), StoreError> {
        let _slot = self.slot().await?;
        let (data, stat) = self
            .client
            .get_data(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        Ok((data, to_stat(&stat)))
    }

    async fn set(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<Stat, StoreError> {
        let _slot = self.slot().await?;
        let stat = self
            .client
            .set_data(checked(path)?, data, expected_version)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        Ok(to_stat(&stat))
    }

    async fn delete(&self, path: &str, expected_version: Option<i32>) -> Result<(), StoreError> {
        let _slot = self.slot().await?;
        if checked(path)? == "/" {
            return Err(StoreError::InvalidPath(path.to_string()));
        }
        self.client
            .delete(path, expected_version)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))
    }

    async fn exists(&self, path: &str) -> Result<Option<Stat>, StoreError> {
        let _slot = self.slot().await?;
        let stat = self
            .client
            .check_stat(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        Ok(stat.as_ref().map(to_stat))
    }

    async fn children(&self, path: &str) -> Result<Vec<String>, StoreError> {
        let _slot = self.slot().await?;
        let mut kids = self
            .client
            .list_children(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        // ZooKeeper lists children unordered; the seam promises sorted.
        kids.sort();
        Ok(kids)
    }

    async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        let _slot = self.slot().await?;
        let mut writer = self.client.new_multi_writer();
        for op in &ops {
            Self::add_op(&mut writer, op)?;
        }
        let results = writer.commit().await.map_err(|e| match e {
            // ZooKeeper answers every op of a failed multi; the crate
            // reports the first that is not OK, i.e. the failing one.
            zk::MultiWriteError::OperationFailed { index, source } => match ops.get(index) {
                Some(op) => map_error(source, &Self::op_target(op)),
                None => StoreError::Io(format!("ZooKeeper multi: op {index} failed: {source}")),
            },
            zk::MultiWriteError::RequestFailed { source } => {
                map_error(source, &Target::Node("multi"))
            }
        })?;
        results
            .into_iter()
            .map(|r| match r {
                zk::MultiWriteResult::Check => Ok(OpResult::Check),
                zk::MultiWriteResult::Create { path, .. } => Ok(OpResult::Create(path)),
                zk::MultiWriteResult::SetData { stat } => Ok(OpResult::Set(to_stat(&stat))),
                zk::MultiWriteResult::Delete => Ok(OpResult::Delete),
                other => Err(StoreError::Io(format!(
                    "ZooKeeper multi: unexpected result {other:?}"
                ))),
            })
            .collect()
    }

    async fn get_watch(&self, path: &str) -> Result<(Vec<u8>, Stat, Watch), StoreError> {
        let _slot = self.slot().await?;
        let (data, stat, watcher) = self
            .client
            .get_and_watch_data(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        Ok((data, to_stat(&stat), to_watch(watcher, path)))
    }

    async fn exists_watch(&self, path: &str) -> Result<(Option<Stat>, Watch), StoreError> {
        let _slot = self.slot().await?;
        let (stat, watcher) = self
            .client
            .check_and_watch_stat(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        Ok((stat.as_ref().map(to_stat), to_watch(watcher, path)))
    }

    async fn children_watch(&self, path: &str) -> Result<(Vec<String>, Watch), StoreError> {
        let _slot = self.slot().await?;
        let (mut kids, watcher) = self
            .client
            .list_and_watch_children(checked(path)?)
            .await
            .map_err(|e| map_error(e, &Target::Node(path)))?;
        kids.sort();
        Ok((kids, to_watch(watcher, path)))
    }

    /// ZooKeeper's session id.
    fn current_session(&self) -> i64 {
        self.client.session_id().0
    }

    /// The next state change of the session. Once the session ended
    /// (`Expired`/`Closed`, no more changes) it resolves at once with that
    /// end, so an owner never waits on a dead store.
    fn session_event(&self) -> SessionWatch {
        let mut states = self.client.state_watcher();
        let now = states.peek_state();
        Box::pin(async move {
            if now.is_terminated() {
                return to_session_event(now);
            }
            to_session_event(states.changed().await)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_string_splits_hosts_and_chroot_like_kafka() {
        let table = [
            ("h1:2181", "h1:2181", None),
            ("h1:2181,h2:2181/kafka", "h1:2181,h2:2181", Some("/kafka")),
            ("h1:2181/a/b", "h1:2181", Some("/a/b")),
            ("h1:2181/", "h1:2181", None),
        ];
        for (input, hosts, chroot) in table {
            let parsed = ConnectString::parse(input).unwrap();
            assert_eq!(parsed.hosts, hosts, "{input}");
            assert_eq!(parsed.chroot.as_deref(), chroot, "{input}");
        }
        for bad in ["", "/kafka", "h1:2181,,h2:2181", "h1:2181/a/"] {
            assert!(ConnectString::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn zookeeper_errors_map_as_the_embedded_store_reports_them() {
        let create = Target::Create("/a/b");
        let node = Target::Node("/a/b");
        let p = || "/a/b".to_string();
        let table = [
            (zk::Error::NoNode, &create, StoreError::NoParent(p())),
            (zk::Error::NoNode, &node, StoreError::NoNode(p())),
            (zk::Error::NodeExists, &create, StoreError::NodeExists(p())),
            (zk::Error::BadVersion, &node, StoreError::BadVersion(p())),
            (zk::Error::NotEmpty, &node, StoreError::NotEmpty(p())),
            (
                zk::Error::NoChildrenForEphemerals,
                &create,
                StoreError::NoChildrenForEphemerals(p()),
            ),
            (zk::Error::SessionExpired, &node, StoreError::SessionExpired),
        ];
        for (e, target, want) in table {
            assert_eq!(map_error(e, target), want);
        }
        assert!(matches!(
            map_error(zk::Error::ConnectionLoss, &node),
            StoreError::Io(m) if m.contains("/a/b")
        ));
    }
}
