//! Unit tests of `zk::embedded`.

use super::*;
use crate::io::clock::ManualClock;
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
        let s = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
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
        let s = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
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
        let s = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
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
        EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))),
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
    let version_ok =
        |m: &Model, p: &str, v: Option<i32>| v.is_none_or(|v| m.get(p).is_some_and(|n| n.1 == v));
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
            let s = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
            let mut model = Model::new();
            for op in &ops {
                let want = model_apply(&mut model, op);
                assert_eq!(store_apply(&s, op).await, want, "{op:?}");
            }
            assert_eq!(snapshot(&s).await, model);
            drop(s);
            let reopened = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
            assert_eq!(snapshot(&reopened).await, model);
        });
    }
}

/// The watch (if it fired) without waiting.
fn fired(w: &mut Watch) -> Option<WatchEvent> {
    block_on(futures_lite::future::poll_once(w))
}

#[test]
fn watches_fire_once_on_the_change_zookeeper_reports() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        s.create("/a", b"1", P).await.unwrap();
        let (_, _, mut data) = s.get_watch("/a").await.unwrap();
        let (none, mut exists) = s.exists_watch("/b").await.unwrap();
        assert!(none.is_none());
        let (_, mut kids) = s.children_watch("/a").await.unwrap();
        assert_eq!(fired(&mut data), None, "nothing changed yet");
        s.set("/a", b"2", None).await.unwrap();
        assert_eq!(fired(&mut data).unwrap().kind, WatchKind::DataChanged);
        assert_eq!(
            fired(&mut kids),
            None,
            "a data change is not a child change"
        );
        s.create("/b", b"", P).await.unwrap();
        let created = fired(&mut exists).unwrap();
        assert_eq!(
            (created.kind, created.path.as_str()),
            (WatchKind::Created, "/b")
        );
        s.create("/a/c", b"", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(fired(&mut kids).unwrap().kind, WatchKind::ChildrenChanged);
        // One-shot: a second change needs a new watch.
        let (_, _, mut again) = s.get_watch("/a/c").await.unwrap();
        let (_, mut kids2) = s.children_watch("/a").await.unwrap();
        s.close_session().unwrap();
        assert_eq!(fired(&mut again).unwrap().kind, WatchKind::SessionClosed);
        assert_eq!(fired(&mut kids2).unwrap().kind, WatchKind::SessionClosed);
    });
}

#[test]
fn delete_fires_node_and_parent_watches_and_multi_fires_after_commit() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        s.create("/p", b"", P).await.unwrap();
        s.create("/p/x", b"", P).await.unwrap();
        let (_, _, mut node) = s.get_watch("/p/x").await.unwrap();
        let (_, mut parent) = s.children_watch("/p").await.unwrap();
        // A failing multi changes nothing and fires nothing.
        let bad = s
            .multi(vec![
                Op::Delete {
                    path: "/p/x".into(),
                    expected_version: None,
                },
                Op::Check {
                    path: "/p".into(),
                    version: 7,
                },
            ])
            .await;
        assert!(bad.is_err());
        assert_eq!(fired(&mut node), None);
        s.delete("/p/x", None).await.unwrap();
        assert_eq!(fired(&mut node).unwrap().kind, WatchKind::Deleted);
        assert_eq!(fired(&mut parent).unwrap().kind, WatchKind::ChildrenChanged);
    });
}

#[test]
fn closing_the_session_is_an_expiry_to_session_waiters() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        let first = s.current_session();
        let mut ev = s.session_event();
        assert_eq!(block_on(futures_lite::future::poll_once(&mut ev)), None);
        s.close_session().unwrap();
        assert_eq!(ev.await, SessionEvent::Expired);
        assert_ne!(s.current_session(), first);
    });
}

#[test]
fn sessions_of_one_tree_own_their_ephemerals_and_see_each_others_changes() {
    block_on(async {
        let a = EmbeddedStore::in_memory();
        let b = a.new_session().unwrap();
        assert_ne!(a.current_session(), b.current_session());
        a.create("/c", b"a", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(
            b.create("/c", b"b", CreateMode::Ephemeral).await,
            Err(StoreError::NodeExists("/c".into()))
        );
        let (_, stat, mut w) = b.get_watch("/c").await.unwrap();
        assert_eq!(stat.ephemeral_owner, a.current_session());
        let mut b_session = b.session_event();
        a.close_session().unwrap();
        assert_eq!(
            fired(&mut w).unwrap().kind,
            WatchKind::Deleted,
            "b sees a's node go"
        );
        assert_eq!(
            block_on(futures_lite::future::poll_once(&mut b_session)),
            None,
            "b's session is untouched"
        );
        b.create("/c", b"b", CreateMode::Ephemeral).await.unwrap();
        assert_eq!(a.get("/c").await.unwrap().0, b"b");
    });
}

#[test]
fn a_client_cut_from_the_server_loses_its_session_there_and_learns_it_on_reconnecting() {
    block_on(async {
        let a = EmbeddedStore::in_memory();
        let b = a.new_session().unwrap();
        a.create("/controller", b"a", CreateMode::Ephemeral)
            .await
            .unwrap();
        let (_, _, mut b_watch) = b.get_watch("/controller").await.unwrap();
        let (_, _, mut a_watch) = a.get_watch("/controller").await.unwrap();
        let mut a_session = a.session_event();
        let owner = a.session_id();

        a.cut_from_server().unwrap();
        assert!(a.is_cut());
        // The server expired the session: its ephemeral node is gone and
        // the other client's watch fired; the cut client heard nothing.
        assert_eq!(b.exists("/controller").await.unwrap(), None);
        assert_eq!(fired(&mut b_watch).unwrap().kind, WatchKind::Deleted);
        assert!(fired(&mut a_watch).is_none());
        assert!(futures_lite::future::poll_once(&mut a_session)
            .await
            .is_none());
        // Its operations wait for the connection.
        let mut op = Box::pin(a.get("/controller"));
        assert!(futures_lite::future::poll_once(&mut op).await.is_none());
        b.create("/controller", b"b", CreateMode::Ephemeral)
            .await
            .unwrap();

        // Reconnected: the waiting operation fails with the expiry, the
        // watches and the session waiter learn it, a new session serves.
        a.close_session().unwrap();
        assert!(!a.is_cut());
        assert_eq!(op.await, Err(StoreError::SessionExpired));
        assert_eq!(fired(&mut a_watch).unwrap().kind, WatchKind::SessionClosed);
        assert_eq!(a_session.await, SessionEvent::Expired);
        assert_ne!(a.session_id(), owner);
        assert_eq!(a.get("/controller").await.unwrap().0, b"b".to_vec());
        // The other client's node survived the reconnection.
        assert!(b.exists("/controller").await.unwrap().is_some());
    });
}
