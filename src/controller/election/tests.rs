//! Unit tests of `controller::election`: several brokers over one
//! in-process tree (one embedded session each).

use super::*;
use crate::zk::embedded::EmbeddedStore;
use futures_lite::future::block_on;

const A: BrokerId = BrokerId(1);
const B: BrokerId = BrokerId(2);

#[test]
fn the_first_broker_wins_epoch_one_and_the_second_is_told_it_moved() {
    block_on(async {
        let a = EmbeddedStore::in_memory();
        let b = a.new_session().unwrap();
        let won = register_controller_and_increment_epoch(&a, A, 5)
            .await
            .unwrap();
        assert_eq!(won.epoch, ControllerEpoch(1));
        let (data, stat) = a.get(paths::CONTROLLER_EPOCH).await.unwrap();
        assert_eq!(data, b"1");
        assert_eq!(won.epoch_zk_version, stat.version);
        let (znode, stat) = b.get(paths::CONTROLLER).await.unwrap();
        assert_eq!(ControllerZNode::decode(&znode).unwrap().brokerid, A);
        assert_eq!(stat.ephemeral_owner, a.current_session());
        assert_eq!(
            register_controller_and_increment_epoch(&b, B, 6).await,
            Err(ElectionError::Moved)
        );
        assert_eq!(read_controller_id(&b).await.unwrap(), Some(A));
        // The loser's attempt left the epoch alone.
        assert_eq!(b.get(paths::CONTROLLER_EPOCH).await.unwrap().0, b"1");
    });
}

#[test]
fn a_new_controller_gets_the_next_epoch_and_fences_the_old_ones_writes() {
    block_on(async {
        let a = EmbeddedStore::in_memory();
        let b = a.new_session().unwrap();
        let old = register_controller_and_increment_epoch(&a, A, 1)
            .await
            .unwrap();
        // A's session ends (kill -9, expiry): /controller goes with it.
        a.close_session().unwrap();
        assert_eq!(read_controller_id(&b).await.unwrap(), None);
        let new = register_controller_and_increment_epoch(&b, B, 2)
            .await
            .unwrap();
        assert_eq!(new.epoch, ControllerEpoch(2));
        assert_ne!(new.epoch_zk_version, old.epoch_zk_version);
        // A, back on a new session, still believes in its old zkVersion:
        // every controller write carries the check, so none lands.
        let write = a
            .multi(vec![
                Op::Check {
                    path: paths::CONTROLLER_EPOCH.into(),
                    version: old.epoch_zk_version,
                },
                Op::Create {
                    path: "/stale-write".into(),
                    data: vec![],
                    mode: CreateMode::Persistent,
                },
            ])
            .await;
        assert!(matches!(write, Err(StoreError::BadVersion(_))), "{write:?}");
        assert!(b.exists("/stale-write").await.unwrap().is_none());
    });
}

#[test]
fn twenty_rounds_of_failover_each_bump_the_epoch_by_one() {
    block_on(async {
        let root = EmbeddedStore::in_memory();
        let brokers: Vec<(BrokerId, EmbeddedStore)> = (0..3)
            .map(|i| (BrokerId(i), root.new_session().unwrap()))
            .collect();
        let mut last = INITIAL_CONTROLLER_EPOCH;
        for round in 0..20 {
            // Everyone races; exactly one wins.
            let mut winners = Vec::new();
            for (id, store) in &brokers {
                if let Ok(w) = register_controller_and_increment_epoch(store, *id, round).await {
                    winners.push((*id, w));
                }
            }
            assert_eq!(winners.len(), 1, "round {round}: {winners:?}");
            let (id, won) = winners[0];
            assert_eq!(won.epoch, ControllerEpoch(last.0 + 1), "round {round}");
            last = won.epoch;
            // The winner "dies".
            let store = &brokers.iter().find(|(b, _)| *b == id).unwrap().1;
            store.close_session().unwrap();
        }
    });
}

#[test]
fn the_state_machine_resigns_before_anything_else_and_elects_only_on_absence() {
    let mut e = Election::new(A);
    assert_eq!(e.observe(Some(B)), Step::Nothing);
    assert_eq!(e.active_controller(), Some(B));
    assert_eq!(e.observe(None), Step::TryElect);
    assert_eq!(e.elected(Err(ElectionError::Moved)), Step::Nothing);
    assert!(!e.is_controller());
    let won = Won {
        epoch: ControllerEpoch(3),
        epoch_zk_version: 3,
    };
    assert_eq!(e.observe(None), Step::TryElect);
    assert_eq!(e.elected(Ok(won)), Step::Failover(won));
    assert!(e.is_controller());
    assert_eq!(e.active_controller(), Some(A));
    // Our own /controller seen again: nothing to do.
    assert_eq!(e.observe(Some(A)), Step::Nothing);
    // Someone else's: resign.
    assert_eq!(e.observe(Some(B)), Step::Resign);
    assert!(!e.is_controller());
    assert_eq!(e.elected(Ok(won)), Step::Failover(won));
    // The node vanished under us (session expiry seen via the watch).
    assert_eq!(e.observe(None), Step::Resign);
    assert_eq!(e.observe(None), Step::TryElect);
    assert_eq!(e.elected(Ok(won)), Step::Failover(won));
    assert_eq!(e.lost(), Step::Resign);
    assert_eq!(e.lost(), Step::Nothing);
    assert_eq!(e.active_controller(), None);
}

#[test]
fn a_malformed_controller_znode_is_reported_with_its_path() {
    block_on(async {
        let s = EmbeddedStore::in_memory();
        s.create(paths::CONTROLLER, b"{not json", CreateMode::Ephemeral)
            .await
            .unwrap();
        let err = read_controller_id(&s).await.unwrap_err();
        assert!(err.to_string().contains("/controller"), "{err}");
    });
}
