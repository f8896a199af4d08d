//! `ZkBroker` over one in-process tree: three brokers, one embedded
//! session each, in a glommio executor as on the control shard.

use super::*;
use crate::zk::embedded::EmbeddedStore;

#[derive(Default)]
struct Seen {
    epochs: Vec<i64>,
    controller: Option<BrokerId>,
    failovers: Vec<(i32, Vec<BrokerId>)>,
    broker_changes: Vec<Vec<BrokerId>>,
    resignations: usize,
}

#[derive(Clone, Default)]
struct Record(Rc<RefCell<Seen>>);

impl Duties for Record {
    fn registered(&self, broker_epoch: i64) {
        self.0.borrow_mut().epochs.push(broker_epoch);
    }
    fn controller_seen(&self, controller: Option<BrokerId>) {
        self.0.borrow_mut().controller = controller;
    }
    async fn failover(&self, ctx: &ControllerContext) {
        let ids = ctx.live_brokers.iter().map(|b| b.id).collect();
        self.0.borrow_mut().failovers.push((ctx.epoch, ids));
    }
    async fn brokers_changed(&self, ctx: &ControllerContext) {
        let ids = ctx.live_brokers.iter().map(|b| b.id).collect();
        self.0.borrow_mut().broker_changes.push(ids);
    }
    fn resigned(&self) {
        self.0.borrow_mut().resignations += 1;
    }
}

fn broker(id: i32, store: &EmbeddedStore) -> (Rc<ZkBroker<EmbeddedStore, Record>>, Record) {
    let record = Record::default();
    let again = store.clone();
    let reconnect: Reconnect<EmbeddedStore> = Box::new(move || {
        let s = again.clone();
        Box::pin(async move { Ok(s) })
    });
    let reg = BrokerIdZNode::plaintext("127.0.0.1", 9092 + id, 1);
    let b = ZkBroker::new(
        BrokerId(id),
        reg,
        store.clone(),
        reconnect,
        record.clone(),
        Box::new(|| 1),
    );
    (b, record)
}

/// Let queued events and watch tasks run.
async fn settle() {
    for _ in 0..20 {
        glommio::yield_if_needed().await;
        glommio::timer::sleep(Duration::from_millis(2)).await;
    }
}

fn run(f: impl std::future::Future<Output = ()>) {
    glommio::LocalExecutorBuilder::default()
        .make()
        .unwrap()
        .run(f);
}

#[test]
fn one_controller_among_three_and_every_failover_bumps_the_epoch() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..3).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..3).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        let controllers: Vec<BrokerId> = brokers
            .iter()
            .filter(|(b, _)| b.election().is_controller())
            .map(|(b, _)| b.me)
            .collect();
        assert_eq!(controllers, vec![BrokerId(0)], "the first to start wins");
        for (_, r) in &brokers {
            assert_eq!(r.0.borrow().controller, Some(BrokerId(0)));
        }
        // The controller saw the others register after its failover.
        {
            let first = brokers[0].1 .0.borrow();
            assert_eq!(first.failovers[0].0, 1);
            assert_eq!(
                first.broker_changes.last().unwrap(),
                &vec![BrokerId(0), BrokerId(1), BrokerId(2)]
            );
        }
        let mut epoch = 1;
        for round in 0..6 {
            let current = brokers
                .iter()
                .position(|(b, _)| b.election().is_controller())
                .unwrap();
            // The controller's session expires.
            stores[current].close_session().unwrap();
            settle().await;
            let now: Vec<usize> = (0..3)
                .filter(|&i| brokers[i].0.election().is_controller())
                .collect();
            assert_eq!(now.len(), 1, "round {round}: exactly one controller");
            // (The expired broker may win again, as in Kafka: it
            // re-registers and rejoins the election at once.)
            let (won, rec) = &brokers[now[0]];
            epoch += 1;
            assert_eq!(
                won.election().won().unwrap().epoch.0,
                epoch,
                "round {round}"
            );
            assert_eq!(rec.0.borrow().failovers.last().unwrap().0, epoch);
            // The old one resigned, registered again with a new epoch and
            // follows the (possibly its own) new controller.
            let old = brokers[current].1 .0.borrow();
            assert!(old.resignations >= 1);
            assert!(old.epochs.len() >= 2 && old.epochs[old.epochs.len() - 1] > old.epochs[0]);
            assert_eq!(old.controller, Some(won.me));
        }
        let (_, stat) = root.get(paths::CONTROLLER_EPOCH).await.unwrap();
        assert_eq!(
            root.get(paths::CONTROLLER_EPOCH).await.unwrap().0,
            epoch.to_string().into_bytes()
        );
        assert!(stat.version >= epoch);
        for (b, _) in &brokers {
            b.enqueue(Event::Stop);
        }
        settle().await;
    });
}

#[test]
fn a_duplicate_broker_id_fails_to_start_with_kafkas_message() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let (a, _) = broker(5, &root.new_session().unwrap());
        a.start().await.unwrap();
        let (b, _) = broker(5, &root.new_session().unwrap());
        let err = b.start().await.unwrap_err();
        assert!(err.contains("/brokers/ids/5, node already exists"), "{err}");
        a.enqueue(Event::Stop);
        settle().await;
    });
}

#[test]
fn a_malformed_registration_is_ignored_and_the_controller_keeps_working() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let (a, rec) = broker(0, &root.new_session().unwrap());
        a.start().await.unwrap();
        let other = root.new_session().unwrap();
        other
            .create(
                "/brokers/ids/7",
                b"{not json",
                crate::zk::store::CreateMode::Ephemeral,
            )
            .await
            .unwrap();
        settle().await;
        let (b, _) = broker(1, &root.new_session().unwrap());
        b.start().await.unwrap();
        settle().await;
        assert!(a.election().is_controller());
        assert_eq!(
            rec.0.borrow().broker_changes.last().unwrap(),
            &vec![BrokerId(0), BrokerId(1)],
            "broker 7's malformed registration left out, broker 1 seen"
        );
        a.enqueue(Event::Stop);
        b.enqueue(Event::Stop);
        settle().await;
    });
}

#[test]
fn a_controller_write_after_the_epoch_moved_is_refused_and_the_controller_resigns() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let (a, rec) = broker(0, &root.new_session().unwrap());
        a.start().await.unwrap();
        settle().await;
        assert!(a.election().is_controller());
        let create = |path: &str| Op::Create {
            path: path.into(),
            data: vec![],
            mode: crate::zk::store::CreateMode::Persistent,
        };
        a.write_as_controller(vec![create("/w1")]).await.unwrap();
        assert!(root.exists("/w1").await.unwrap().is_some());
        // Another controller's election bumped the epoch meanwhile.
        root.set(paths::CONTROLLER_EPOCH, b"9", None).await.unwrap();
        assert_eq!(
            a.write_as_controller(vec![create("/w2")]).await,
            Err(WriteError::Moved)
        );
        assert!(
            root.exists("/w2").await.unwrap().is_none(),
            "nothing landed"
        );
        assert!(!a.election().is_controller());
        assert_eq!(rec.0.borrow().resignations, 1);
        assert_eq!(
            a.write_as_controller(vec![create("/w3")]).await,
            Err(WriteError::NotController)
        );
        a.enqueue(Event::Stop);
        settle().await;
    });
}
