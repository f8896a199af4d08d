//! The `MetadataStore` contract, run against the embedded store (the
//! reference) and against `ZkStore` on a real ZooKeeper (Debian's 3.8,
//! started by the test), each on a glommio executor as the control shard
//! runs them; then what only a real ensemble does: connection timeout,
//! session expiry, leader loss.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::executor::run;
use common::zookeeper::{free_port, Ensemble, TcpProxy, ZkServer};
use shardlog::zk::client::ZkStore;
use shardlog::zk::embedded::EmbeddedStore;
use shardlog::zk::store::{
    CreateMode, MetadataStore, Op, OpResult, SessionEvent, StoreError, WatchEvent, WatchKind,
};

const P: CreateMode = CreateMode::Persistent;
const E: CreateMode = CreateMode::Ephemeral;
/// Short sessions through config (zookeeper.session.timeout.ms), as
/// CLUSTER.md §4 asks; the server (tickTime 500) allows 1–10 s.
const SESSION_MS: u64 = 3000;
const CONNECT_MS: u64 = 10_000;
/// Deadline for anything that should happen "soon" (a guard, not a bound).
const SOON: Duration = Duration::from_secs(15);

/// `fut`'s output, or None once `limit` passed.
async fn within<T>(limit: Duration, fut: impl Future<Output = T>) -> Option<T> {
    let fut = async { Some(fut.await) };
    let timer = async {
        glommio::timer::sleep(limit).await;
        None
    };
    futures_lite::future::or(fut, timer).await
}

async fn fired(watch: impl Future<Output = WatchEvent>) -> (WatchKind, String) {
    let event = within(SOON, watch).await.expect("watch fired");
    (event.kind, event.path)
}

/// Polls `check` until true (every 20 ms) or panics after SOON.
async fn eventually<Fut: Future<Output = bool>>(what: &str, mut check: impl FnMut() -> Fut) {
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < SOON, "not within {SOON:?}: {what}");
        glommio::timer::sleep(Duration::from_millis(20)).await;
    }
}

/// One store under test and a way to open more sessions on its tree.
#[allow(async_fn_in_trait)]
trait Fixture {
    type S: MetadataStore;
    /// A client with its own session (the embedded store has one session:
    /// every client is the same store).
    async fn client(&self) -> Self::S;
    /// Ends that client's session (close, ephemeral nodes go).
    async fn end_session(&self, s: Self::S);
}

struct Embedded(EmbeddedStore);

impl Fixture for Embedded {
    type S = EmbeddedStore;
    async fn client(&self) -> EmbeddedStore {
        self.0.clone()
    }
    async fn end_session(&self, s: EmbeddedStore) {
        s.close_session().unwrap();
    }
}

/// ZooKeeper, each case under its own chroot so cases see an empty tree.
struct Zk {
    connect: String,
}

impl Fixture for Zk {
    type S = ZkStore;
    async fn client(&self) -> ZkStore {
        ZkStore::connect(&self.connect, SESSION_MS, CONNECT_MS)
            .await
            .unwrap()
    }
    async fn end_session(&self, s: ZkStore) {
        s.close().await;
    }
}

async fn crud_with_versions<F: Fixture>(f: &F) {
    let s = f.client().await;
    assert_eq!(s.create("/a", b"1", P).await.unwrap(), "/a");
    let (data, stat) = s.get("/a").await.unwrap();
    assert_eq!(
        (data.as_slice(), stat.version, stat.data_length),
        (&b"1"[..], 0, 1)
    );
    assert_eq!(stat.ephemeral_owner, 0);
    assert_eq!(s.set("/a", b"22", Some(0)).await.unwrap().version, 1);
    let stat = s.set("/a", b"333", None).await.unwrap();
    assert_eq!((stat.version, stat.data_length), (2, 3));
    s.create("/a/k2", b"", P).await.unwrap();
    s.create("/a/k1", b"", P).await.unwrap();
    assert_eq!(s.children("/a").await.unwrap(), vec!["k1", "k2"]);
    let stat = s.exists("/a").await.unwrap().unwrap();
    assert_eq!((stat.num_children, stat.cversion, stat.version), (2, 2, 2));
    assert!(stat.pzxid > stat.czxid && stat.mzxid > stat.czxid);
    assert!(s.children("/").await.unwrap().contains(&"a".to_string()));
    s.delete("/a/k1", Some(0)).await.unwrap();
    s.delete("/a/k2", None).await.unwrap();
    s.delete("/a", Some(2)).await.unwrap();
    assert_eq!(s.exists("/a").await.unwrap(), None);
}

async fn each_misuse_has_its_error<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/a", b"x", P).await.unwrap();
    s.create("/a/b", b"", P).await.unwrap();
    s.create("/e", b"", E).await.unwrap();
    fn err<T: std::fmt::Debug>(result: Result<T, StoreError>) -> StoreError {
        result.unwrap_err()
    }
    let table: Vec<(&str, StoreError, StoreError)> = vec![
        (
            "create existing",
            err(s.create("/a", b"", P).await),
            StoreError::NodeExists("/a".into()),
        ),
        (
            "create without parent",
            err(s.create("/x/y", b"", P).await),
            StoreError::NoParent("/x/y".into()),
        ),
        (
            "create under ephemeral",
            err(s.create("/e/c", b"", P).await),
            StoreError::NoChildrenForEphemerals("/e/c".into()),
        ),
        (
            "set wrong version",
            err(s.set("/a", b"", Some(3)).await),
            StoreError::BadVersion("/a".into()),
        ),
        (
            "set missing",
            err(s.set("/nope", b"", None).await),
            StoreError::NoNode("/nope".into()),
        ),
        (
            "get missing",
            err(s.get("/nope").await),
            StoreError::NoNode("/nope".into()),
        ),
        (
            "children missing",
            err(s.children("/nope").await),
            StoreError::NoNode("/nope".into()),
        ),
        (
            "delete non-empty",
            err(s.delete("/a", None).await),
            StoreError::NotEmpty("/a".into()),
        ),
        (
            "delete wrong version",
            err(s.delete("/a/b", Some(1)).await),
            StoreError::BadVersion("/a/b".into()),
        ),
        (
            "delete missing",
            err(s.delete("/nope", None).await),
            StoreError::NoNode("/nope".into()),
        ),
        (
            "invalid path",
            err(s.create("a", b"", P).await),
            StoreError::InvalidPath("a".into()),
        ),
        (
            "trailing slash",
            err(s.get("/a/").await),
            StoreError::InvalidPath("/a/".into()),
        ),
    ];
    for (name, got, want) in table {
        assert_eq!(got, want, "{name}");
    }
}

/// The same misuses inside a multi report the same error.
async fn each_misuse_in_a_multi_has_its_error<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/a", b"x", P).await.unwrap();
    s.create("/a/b", b"", P).await.unwrap();
    let in_multi: Vec<(Op, StoreError)> = vec![
        (
            Op::Create {
                path: "/x/y".into(),
                data: vec![],
                mode: P,
            },
            StoreError::NoParent("/x/y".into()),
        ),
        (
            Op::Create {
                path: "/a".into(),
                data: vec![],
                mode: P,
            },
            StoreError::NodeExists("/a".into()),
        ),
        (
            Op::Check {
                path: "/a".into(),
                version: 1,
            },
            StoreError::BadVersion("/a".into()),
        ),
        (
            Op::Check {
                path: "/zz".into(),
                version: 0,
            },
            StoreError::NoNode("/zz".into()),
        ),
        (
            Op::Delete {
                path: "/a".into(),
                expected_version: None,
            },
            StoreError::NotEmpty("/a".into()),
        ),
        (
            Op::Set {
                path: "/nope".into(),
                data: vec![],
                expected_version: None,
            },
            StoreError::NoNode("/nope".into()),
        ),
    ];
    for (op, want) in in_multi {
        assert_eq!(s.multi(vec![op.clone()]).await, Err(want), "{op:?}");
    }
}

async fn sequential_names_have_ten_digits<F: Fixture>(f: &F) {
    let s = f.client().await;
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
    let eph = CreateMode::EphemeralSequential;
    assert_eq!(
        s.create("/c/n_", b"", eph).await.unwrap(),
        "/c/n_0000000003"
    );
    assert_eq!(
        s.children("/c").await.unwrap(),
        vec!["n_0000000000", "n_0000000002", "n_0000000003", "plain"]
    );
    let ops = vec![Op::Create {
        path: "/c/m_".into(),
        data: vec![],
        mode: seq,
    }];
    assert_eq!(
        s.multi(ops).await.unwrap(),
        vec![OpResult::Create("/c/m_0000000004".into())]
    );
}

async fn multi_is_all_or_nothing<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/a", b"v0", P).await.unwrap();
    let failing = vec![
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
        // Fails: the set above made the version 1.
        Op::Check {
            path: "/a".into(),
            version: 0,
        },
    ];
    assert_eq!(
        s.multi(failing).await,
        Err(StoreError::BadVersion("/a".into()))
    );
    assert_eq!(s.exists("/b").await.unwrap(), None);
    let (data, stat) = s.get("/a").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"v0"[..], 0));
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
            Op::Set {
                path: "/a".into(),
                data: b"v2".to_vec(),
                expected_version: Some(0),
            },
            Op::Delete {
                path: "/b".into(),
                expected_version: Some(0),
            },
        ])
        .await
        .unwrap();
    assert_eq!(ok.len(), 4);
    assert_eq!(ok[0], OpResult::Check);
    assert_eq!(ok[1], OpResult::Create("/b".into()));
    assert!(matches!(ok[2], OpResult::Set(stat) if stat.version == 1 && stat.data_length == 2));
    assert_eq!(ok[3], OpResult::Delete);
    assert_eq!(s.get("/a").await.unwrap().0, b"v2");
}

async fn ephemerals_go_with_their_session<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/p", b"", P).await.unwrap();
    s.create("/p/e", b"me", E).await.unwrap();
    let stat = s.exists("/p/e").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, s.current_session());
    assert_ne!(stat.ephemeral_owner, 0);
    let observer = f.client().await;
    assert!(observer.exists("/p/e").await.unwrap().is_some());
    f.end_session(s).await;
    eventually("ephemeral gone after its session closed", || async {
        observer.exists("/p/e").await.unwrap().is_none()
    })
    .await;
    assert!(observer.exists("/p").await.unwrap().is_some());
}

async fn watches_fire_once_with_kind_and_path<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/a", b"1", P).await.unwrap();
    let (_, _, data) = s.get_watch("/a").await.unwrap();
    let (none, exists) = s.exists_watch("/b").await.unwrap();
    assert!(none.is_none());
    let (kids_now, kids) = s.children_watch("/a").await.unwrap();
    assert!(kids_now.is_empty());
    s.set("/a", b"2", None).await.unwrap();
    assert_eq!(fired(data).await, (WatchKind::DataChanged, "/a".into()));
    s.create("/b", b"", P).await.unwrap();
    assert_eq!(fired(exists).await, (WatchKind::Created, "/b".into()));
    // The data change above did not fire the child watch: a child does.
    s.create("/a/c", b"", E).await.unwrap();
    assert_eq!(fired(kids).await, (WatchKind::ChildrenChanged, "/a".into()));
    // One-shot: the next change needs new watches.
    let (_, _, node) = s.get_watch("/a/c").await.unwrap();
    let (_, parent) = s.children_watch("/a").await.unwrap();
    let (_, on_b) = s.children_watch("/b").await.unwrap();
    let (_, exists_a) = s.exists_watch("/a").await.unwrap();
    s.delete("/a/c", None).await.unwrap();
    assert_eq!(fired(node).await, (WatchKind::Deleted, "/a/c".into()));
    assert_eq!(
        fired(parent).await,
        (WatchKind::ChildrenChanged, "/a".into())
    );
    s.delete("/b", None).await.unwrap();
    assert_eq!(fired(on_b).await, (WatchKind::Deleted, "/b".into()));
    s.set("/a", b"3", Some(1)).await.unwrap();
    assert_eq!(fired(exists_a).await, (WatchKind::DataChanged, "/a".into()));
}

async fn session_end_ends_its_watches<F: Fixture>(f: &F) {
    let s = f.client().await;
    s.create("/w", b"", P).await.unwrap();
    let (_, _, data) = s.get_watch("/w").await.unwrap();
    let (_, absent) = s.exists_watch("/none").await.unwrap();
    f.end_session(s).await;
    assert_eq!(fired(data).await, (WatchKind::SessionClosed, "/w".into()));
    assert_eq!(
        fired(absent).await,
        (WatchKind::SessionClosed, "/none".into())
    );
}

/// Runs every contract case on a fresh fixture from `make(case name)`.
macro_rules! contract {
    ($make:expr) => {{
        contract!($make; crud_with_versions, each_misuse_has_its_error,
            each_misuse_in_a_multi_has_its_error,
            sequential_names_have_ten_digits, multi_is_all_or_nothing,
            ephemerals_go_with_their_session, watches_fire_once_with_kind_and_path,
            session_end_ends_its_watches)
    }};
    ($make:expr; $($case:ident),*) => {{
        let make = $make;
        $( {
            let fixture = make(stringify!($case));
            $case(&fixture).await;
        } )*
    }};
}

#[test]
fn contract_holds_on_the_embedded_store() {
    run(|| async {
        contract!(|_case: &str| Embedded(EmbeddedStore::in_memory()));
    });
}

#[test]
fn contract_holds_on_zookeeper() {
    let server = ZkServer::standalone();
    let address = server.address();
    run(move || async move {
        contract!(|case: &str| Zk {
            connect: format!("{address}/{case}")
        });
    });
    drop(server);
}

/// What ZooKeeper 3.8 really does on a child delete: the parent's stat
/// `cversion` grows, but the next sequential suffix does not (it counts
/// child creates only). The embedded store takes the suffix from
/// `cversion` (`Tree::create`), so after a delete it skips a number; the
/// contract above avoids deletes before a sequential create, and this
/// pins the real behaviour for when the embedded store follows it.
#[test]
fn zookeeper_sequence_numbers_do_not_advance_on_a_child_delete() {
    let server = ZkServer::standalone();
    let address = server.address();
    run(move || async move {
        let s = ZkStore::connect(&format!("{address}/seq"), SESSION_MS, CONNECT_MS)
            .await
            .unwrap();
        s.create("/c", b"", P).await.unwrap();
        let seq = CreateMode::PersistentSequential;
        assert_eq!(
            s.create("/c/n_", b"", seq).await.unwrap(),
            "/c/n_0000000000"
        );
        let before = s.exists("/c").await.unwrap().unwrap();
        s.delete("/c/n_0000000000", None).await.unwrap();
        let after = s.exists("/c").await.unwrap().unwrap();
        // The delete counts as a child change in the stat...
        assert_eq!(after.cversion, before.cversion + 1);
        assert!(after.pzxid > before.pzxid);
        // ...but not for the sequence: the suffix counts child creates.
        assert_eq!(
            s.create("/c/n_", b"", seq).await.unwrap(),
            "/c/n_0000000001"
        );
        assert_eq!(
            s.create("/c/n_", b"", seq).await.unwrap(),
            "/c/n_0000000002"
        );
    });
}

#[test]
fn a_chroot_is_created_and_hides_its_prefix() {
    let server = ZkServer::standalone();
    let address = server.address();
    run(move || async move {
        let rooted = ZkStore::connect(&format!("{address}/kafka/one"), SESSION_MS, CONNECT_MS)
            .await
            .unwrap();
        let plain = ZkStore::connect(&address, SESSION_MS, CONNECT_MS)
            .await
            .unwrap();
        // Kafka creates the chroot when missing.
        assert!(plain.exists("/kafka/one").await.unwrap().is_some());
        rooted.create("/brokers", b"", P).await.unwrap();
        let seq = rooted
            .create("/brokers/n_", b"x", CreateMode::EphemeralSequential)
            .await
            .unwrap();
        assert_eq!(seq, "/brokers/n_0000000000");
        assert_eq!(
            plain
                .get("/kafka/one/brokers/n_0000000000")
                .await
                .unwrap()
                .0,
            b"x"
        );
        assert_eq!(rooted.children("/").await.unwrap(), vec!["brokers"]);
        let (_, watch) = rooted.children_watch("/brokers").await.unwrap();
        plain.create("/kafka/one/brokers/m", b"", P).await.unwrap();
        assert_eq!(
            fired(watch).await,
            (WatchKind::ChildrenChanged, "/brokers".into())
        );
        let created = rooted
            .multi(vec![Op::Create {
                path: "/brokers/s_".into(),
                data: vec![],
                mode: CreateMode::PersistentSequential,
            }])
            .await
            .unwrap();
        assert_eq!(
            created,
            vec![OpResult::Create("/brokers/s_0000000002".into())]
        );
        // A second store on the same chroot finds it there already.
        let again = ZkStore::connect(&format!("{address}/kafka/one"), SESSION_MS, CONNECT_MS)
            .await
            .unwrap();
        assert!(again.exists("/brokers/m").await.unwrap().is_some());
    });
}

#[test]
fn connecting_to_nothing_fails_after_the_connection_timeout_naming_the_address() {
    let address = format!("127.0.0.1:{}", free_port());
    run(move || async move {
        let start = Instant::now();
        let timeout_ms = 1500;
        let result = ZkStore::connect(&address, SESSION_MS, timeout_ms).await;
        let elapsed = start.elapsed();
        let Err(StoreError::Io(message)) = result else {
            panic!("connected to nothing?");
        };
        assert!(message.contains(&address), "{message}");
        assert!(
            message.contains("zookeeper.connection.timeout.ms"),
            "{message}"
        );
        // Fails at the configured timeout, not at the session timeout or
        // never (margin for a loaded 2-core host).
        assert!(elapsed >= Duration::from_millis(timeout_ms), "{elapsed:?}");
        assert!(
            elapsed < Duration::from_millis(timeout_ms + 5000),
            "{elapsed:?}"
        );
    });
}

/// Expiry as it really happens: the client is cut off (a proxy between it
/// and the server drops every connection) while the server's clock runs,
/// so the server expires the session after its timeout and deletes its
/// ephemeral nodes; once the network heals the client learns it.
#[test]
fn an_expired_session_reports_expired_and_loses_its_ephemerals() {
    let server = ZkServer::standalone();
    let address = server.address();
    let proxy = TcpProxy::start(address.clone());
    run(move || async move {
        let store = ZkStore::connect(&proxy.address(), 2000, CONNECT_MS)
            .await
            .unwrap();
        let observer = ZkStore::connect(&address, SESSION_MS, CONNECT_MS)
            .await
            .unwrap();
        store.create("/e", b"", E).await.unwrap();
        let (_, _, watch) = store.get_watch("/e").await.unwrap();
        let first = store.current_session();
        let event = store.session_event();
        proxy.block();
        assert_eq!(within(SOON, event).await, Some(SessionEvent::Disconnected));
        let expired = store.session_event();
        eventually("server expired the session", || async {
            observer.exists("/e").await.unwrap().is_none()
        })
        .await;
        proxy.unblock();
        assert_eq!(within(SOON, expired).await, Some(SessionEvent::Expired));
        assert_eq!(fired(watch).await, (WatchKind::SessionClosed, "/e".into()));
        // Dead for good: every call fails, and asking again answers at once.
        assert_eq!(store.get("/e").await, Err(StoreError::SessionExpired));
        assert_eq!(store.session_event().await, SessionEvent::Expired);
        let renewed = store.reconnect().await.unwrap();
        assert_ne!(renewed.current_session(), first);
        renewed.create("/e", b"", E).await.unwrap();
    });
}

/// ZooKeeper leader loss: every server drops its clients until a new
/// leader is elected; the client reconnects with the same session.
#[test]
fn a_session_survives_the_loss_of_the_ensemble_leader() {
    let mut ensemble = Ensemble::start(3);
    let connect = ensemble.connect_string();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (killed_tx, killed_rx) = std::sync::mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        rx.recv().unwrap();
        ensemble.kill_leader();
        killed_tx.send(()).unwrap();
        ensemble
    });
    run(move || async move {
        let store = ZkStore::connect(&connect, 6000, CONNECT_MS).await.unwrap();
        store.create("/broker", b"", E).await.unwrap();
        let before = store.exists("/broker").await.unwrap().unwrap();
        let session = store.current_session();
        let event = store.session_event();
        tx.send(()).unwrap();
        assert_eq!(within(SOON, event).await, Some(SessionEvent::Disconnected));
        let back = store.session_event();
        assert_eq!(within(SOON, back).await, Some(SessionEvent::Connected));
        assert!(killed_rx.try_recv().is_ok(), "the leader was killed");
        assert_eq!(store.current_session(), session);
        let after = store.exists("/broker").await.unwrap().unwrap();
        assert_eq!(
            (after.czxid, after.ephemeral_owner),
            (before.czxid, session)
        );
        store.create("/after", b"", P).await.unwrap();
    });
    drop(killer.join().unwrap());
}
