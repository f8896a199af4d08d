//! `ZkBroker` over one in-process tree: three brokers, one embedded
//! session each, in a glommio executor as on the control shard.

use super::*;
use crate::io::clock::ManualClock;
use crate::zk::embedded::EmbeddedStore;
use crate::zk::paths::PartitionStateZNode;

#[derive(Default)]
struct Seen {
    epochs: Vec<i64>,
    controller: Option<BrokerId>,
    failovers: Vec<(i32, Vec<BrokerId>)>,
    broker_changes: Vec<Vec<BrokerId>>,
    resignations: usize,
    /// Every controller request, in the order sent.
    sent: Vec<(BrokerId, ControllerRequest)>,
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
    async fn brokers_changed(&self, live: &[LiveBroker]) {
        let ids = live.iter().map(|b| b.id).collect();
        self.0.borrow_mut().broker_changes.push(ids);
    }
    fn resigned(&self) {
        self.0.borrow_mut().resignations += 1;
    }
    /// Recorded; every partition answered NONE (a broker that obeys).
    fn send(
        &self,
        broker: BrokerId,
        request: ControllerRequest,
    ) -> BoxedLocal<Result<PartitionErrors, String>> {
        let partitions = request
            .deleting()
            .into_iter()
            .map(|tp| (tp.topic.to_string(), tp.partition, ErrorCode::NONE))
            .collect();
        self.0.borrow_mut().sent.push((broker, request));
        Box::pin(async move {
            Ok(PartitionErrors {
                error: ErrorCode::NONE,
                partitions,
            })
        })
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
        Rc::new(ManualClock::new(1)),
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

/// What the state znode of `t`-`p` holds.
async fn state_of(store: &EmbeddedStore, t: &str, p: i32) -> Option<(PartitionStateZNode, i32)> {
    let (data, stat) = store.get(&paths::partition_state(t, p)).await.ok()?;
    Some((PartitionStateZNode::decode(&data).unwrap(), stat.version))
}

/// The LeaderAndIsr partitions `rec` sent to `to`, from the `from`-th
/// request on.
fn leader_and_isr_to(
    rec: &Record,
    to: i32,
    from: usize,
) -> Vec<crate::metadata::leader_and_isr::LeaderAndIsrPartition> {
    rec.0.borrow().sent[from..]
        .iter()
        .filter(|(b, _)| *b == BrokerId(to))
        .filter_map(|(_, r)| match r {
            ControllerRequest::LeaderAndIsr(l) => Some(l.partitions.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// Writes a topic as Kafka's AdminZkClient does (config + assignment, no
/// state znodes).
async fn write_topic(store: &EmbeddedStore, name: &str, assignment: &[(i32, Vec<i32>)]) {
    let partitions = assignment
        .iter()
        .map(|(p, rs)| (*p, rs.iter().copied().map(BrokerId).collect()))
        .collect();
    store
        .create(
            &paths::topic_config(name),
            &crate::zk::paths::ConfigZNode::new(Default::default()).encode(),
            crate::zk::store::CreateMode::Persistent,
        )
        .await
        .unwrap();
    store
        .create(
            &paths::topic(name),
            &crate::zk::paths::TopicZNode::new(uuid::Uuid::from_u128(77), partitions).encode(),
            crate::zk::store::CreateMode::Persistent,
        )
        .await
        .unwrap();
}

#[test]
fn a_new_topic_gets_leaders_and_isrs_and_every_replica_is_told() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..3).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..3).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        let (_, rec) = &brokers[0];
        let before = rec.0.borrow().sent.len();
        write_topic(
            &root,
            "t",
            &[(0, vec![1, 2, 0]), (1, vec![2, 0, 1]), (2, vec![0, 1, 2])],
        )
        .await;
        settle().await;
        for (p, leader) in [(0, 1), (1, 2), (2, 0)] {
            let (z, version) = state_of(&root, "t", p).await.expect("state znode created");
            assert_eq!(
                (z.leader, z.leader_epoch.0, version),
                (BrokerId(leader), 0, 0),
                "t-{p}"
            );
            assert_eq!(z.isr.len(), 3, "every replica is live: all in the ISR");
            assert_eq!(z.controller_epoch.0, 1);
        }
        // Each broker hosts all three partitions: one LeaderAndIsr naming
        // them, `isNew`, with the topic id.
        for b in 0..3 {
            let parts = leader_and_isr_to(rec, b, before);
            assert_eq!(parts.len(), 3, "broker {b}: {parts:?}");
            assert!(parts.iter().all(|p| p.is_new && p.replicas.len() == 3));
        }
        let um = rec.0.borrow().sent[before..]
            .iter()
            .filter(|(_, r)| matches!(r, ControllerRequest::UpdateMetadata(u) if u.partition_states.len() == 3))
            .count();
        assert_eq!(um, 3, "every broker learns the new partitions");
        let ctx = brokers[0].0.context().unwrap();
        assert_eq!(
            ctx.partition_states
                .in_state(crate::controller::state_machine::PartitionState::Online)
                .len(),
            3
        );
        for (b, _) in &brokers {
            b.enqueue(Event::Stop);
        }
        settle().await;
    });
}

#[test]
fn a_dead_leaders_partitions_move_to_the_next_isr_replica_and_a_dead_isr_leaves_them_offline() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..3).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..3).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(
            &root,
            "t",
            &[(0, vec![2, 1, 0]), (1, vec![2, 0]), (2, vec![1, 2])],
        )
        .await;
        settle().await;
        let (_, rec) = &brokers[0];
        let before = rec.0.borrow().sent.len();
        // Broker 2 dies (its session expires): it led t-0 and t-1.
        stores[2].close_session().unwrap();
        brokers[2].0.enqueue(Event::Stop);
        settle().await;
        let (z0, v0) = state_of(&root, "t", 0).await.unwrap();
        assert_eq!(
            (z0.leader, z0.leader_epoch.0),
            (BrokerId(1), 1),
            "next in AR order within the ISR"
        );
        assert_eq!(z0.isr, vec![BrokerId(1), BrokerId(0)]);
        assert!(v0 >= 1, "conditioned write bumped the partition epoch");
        let (z1, _) = state_of(&root, "t", 1).await.unwrap();
        assert_eq!((z1.leader, z1.leader_epoch.0), (BrokerId(0), 1));
        // t-2's follower died: it leaves the ISR, the leader stays.
        let (z2, _) = state_of(&root, "t", 2).await.unwrap();
        assert_eq!(
            (z2.leader, z2.isr.clone()),
            (BrokerId(1), vec![BrokerId(1)])
        );
        assert_eq!(z2.leader_epoch.0, 1);
        let to_1 = leader_and_isr_to(rec, 1, before);
        assert!(to_1
            .iter()
            .any(|p| p.partition == 0 && p.leader == BrokerId(1) && p.leader_epoch.0 == 1));
        assert!(
            leader_and_isr_to(rec, 2, before).is_empty(),
            "nothing is sent to a dead broker"
        );
        // Now broker 1 dies too: t-2's only ISR member. Unclean election
        // is off: t-2 stays offline (leader -1), ISR kept.
        stores[1].close_session().unwrap();
        brokers[1].0.enqueue(Event::Stop);
        settle().await;
        let (z2, _) = state_of(&root, "t", 2).await.unwrap();
        assert_eq!(z2.leader, BrokerId::NONE);
        assert_eq!(z2.isr, vec![BrokerId(1)], "Kafka never empties the ISR");
        let ctx = brokers[0].0.context().unwrap();
        let tp2 = TopicPartition::new("t", 2);
        assert_eq!(
            ctx.partition_states.get(&tp2),
            crate::controller::state_machine::PartitionState::Offline
        );
        brokers[0].0.enqueue(Event::Stop);
        settle().await;
    });
}

#[test]
fn unclean_election_brings_a_partition_back_with_a_non_isr_leader_when_the_topic_allows_it() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..2).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..2).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(&root, "u", &[(0, vec![1, 0])]).await;
        root.set(
            &paths::topic_config("u"),
            &crate::zk::paths::ConfigZNode::new(
                [(
                    "unclean.leader.election.enable".to_string(),
                    "true".to_string(),
                )]
                .into(),
            )
            .encode(),
            None,
        )
        .await
        .unwrap();
        settle().await;
        // The ISR shrinks to the leader (as an AlterPartition would).
        let (mut z, v) = state_of(&root, "u", 0).await.unwrap();
        z.isr = vec![BrokerId(1)];
        root.set(&paths::partition_state("u", 0), &z.encode(), Some(v))
            .await
            .unwrap();
        // The controller keeps its own view of the state; a failover
        // (broker 0, the controller, goes) makes the next one read it.
        stores[0].close_session().unwrap();
        brokers[0].0.enqueue(Event::Stop);
        settle().await;
        let again = root.new_session().unwrap();
        let (b0, _) = broker(0, &again);
        b0.start().await.unwrap();
        settle().await;
        assert!(brokers[1].0.election().is_controller());
        // Now the only ISR member dies.
        stores[1].close_session().unwrap();
        brokers[1].0.enqueue(Event::Stop);
        settle().await;
        assert!(b0.election().is_controller());
        let (z, _) = state_of(&root, "u", 0).await.unwrap();
        assert_eq!(z.leader, BrokerId(0), "unclean: first live replica in AR");
        assert_eq!(z.isr, vec![BrokerId(0)]);
        assert_eq!(
            z.leader_recovery_state, 1,
            "RECOVERING after an unclean election"
        );
        b0.enqueue(Event::Stop);
        settle().await;
    });
}

#[test]
fn a_deleted_topic_is_stopped_and_deleted_on_every_replica_then_its_znodes_go() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..2).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..2).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(&root, "d", &[(0, vec![0, 1]), (1, vec![1, 0])]).await;
        settle().await;
        let (_, rec) = &brokers[0];
        let before = rec.0.borrow().sent.len();
        root.create(
            &paths::delete_topic_marker("d"),
            &[],
            crate::zk::store::CreateMode::Persistent,
        )
        .await
        .unwrap();
        settle().await;
        for p in [
            &paths::topic("d"),
            &paths::topic_config("d"),
            &paths::delete_topic_marker("d"),
        ] {
            assert!(root.exists(p).await.unwrap().is_none(), "{p} removed");
        }
        let sent = rec.0.borrow().sent[before..].to_vec();
        for b in 0..2 {
            let deletes: Vec<_> = sent
                .iter()
                .filter(|(to, _)| *to == BrokerId(b))
                .filter_map(|(_, r)| match r {
                    ControllerRequest::StopReplica(s) => Some(s.partitions.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            assert!(
                deletes.iter().any(|p| !p.delete),
                "broker {b}: stopped first"
            );
            assert_eq!(
                deletes.iter().filter(|p| p.delete).count(),
                2,
                "broker {b}: both deleted"
            );
            assert!(
                deletes.iter().all(|p| p.leader_epoch.0 == -2),
                "deletion sentinel epoch"
            );
        }
        assert!(sent.iter().any(|(_, r)| matches!(r, ControllerRequest::UpdateMetadata(u)
            if u.partition_states.iter().any(|p| p.leader == crate::metadata::update_metadata::LEADER_DURING_DELETE))));
        assert!(brokers[0].0.context().unwrap().topic_ids.is_empty());
        for (b, _) in &brokers {
            b.enqueue(Event::Stop);
        }
        settle().await;
    });
}

#[test]
fn deletion_waits_for_a_dead_replica_and_completes_when_it_returns() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..2).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..2).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(&root, "d", &[(0, vec![0, 1])]).await;
        settle().await;
        stores[1].close_session().unwrap();
        brokers[1].0.enqueue(Event::Stop);
        settle().await;
        root.create(
            &paths::delete_topic_marker("d"),
            &[],
            crate::zk::store::CreateMode::Persistent,
        )
        .await
        .unwrap();
        settle().await;
        assert!(
            root.exists(&paths::topic("d")).await.unwrap().is_some(),
            "waits for broker 1"
        );
        let ctx = brokers[0].0.context().unwrap();
        assert!(ctx.ineligible_for_deletion.contains("d"));
        let (b1, _) = broker(1, &root.new_session().unwrap());
        b1.start().await.unwrap();
        settle().await;
        assert!(
            root.exists(&paths::topic("d")).await.unwrap().is_none(),
            "completed after broker 1 returned"
        );
        brokers[0].0.enqueue(Event::Stop);
        b1.enqueue(Event::Stop);
        settle().await;
    });
}

#[test]
fn a_new_controller_tells_every_live_broker_its_partitions() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..3).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..3).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(&root, "f", &[(0, vec![0, 1, 2]), (1, vec![1, 2, 0])]).await;
        settle().await;
        stores[0].close_session().unwrap();
        brokers[0].0.enqueue(Event::Stop);
        settle().await;
        let (new, rec) = brokers
            .iter()
            .skip(1)
            .find(|(b, _)| b.election().is_controller())
            .expect("a new controller");
        let _ = new;
        for b in 1..3 {
            let parts = leader_and_isr_to(rec, b, 0);
            assert!(
                parts.iter().any(|p| p.partition == 0) && parts.iter().any(|p| p.partition == 1),
                "broker {b}: {parts:?}"
            );
        }
        let (z0, _) = state_of(&root, "f", 0).await.unwrap();
        assert_eq!(
            z0.leader,
            BrokerId(1),
            "t-0 re-elected after its leader died"
        );
        assert_eq!(z0.controller_epoch.0, 2, "written by the new controller");
        // Kafka's ReplicaStateMachine.startup: replicas on dead brokers go
        // OfflineReplica, which takes them out of the ISRs, also where the
        // leader lives on (f-1 is led by broker 1).
        let (z1, _) = state_of(&root, "f", 1).await.unwrap();
        assert_eq!(z1.leader, BrokerId(1), "f-1 keeps its leader");
        for (p, z) in [(0, &z0), (1, &z1)] {
            assert!(
                !z.isr.contains(&BrokerId(0)),
                "f-{p}: the dead broker left the ISR: {:?}",
                z.isr
            );
        }
        for (b, _) in brokers.iter().skip(1) {
            b.enqueue(Event::Stop);
        }
        settle().await;
    });
}

#[test]
fn controlled_shutdown_moves_every_leader_off_the_broker_and_takes_it_out_of_the_isrs() {
    run(async {
        let root = EmbeddedStore::in_memory();
        let stores: Vec<EmbeddedStore> = (0..3).map(|_| root.new_session().unwrap()).collect();
        let brokers: Vec<_> = (0..3).map(|i| broker(i, &stores[i as usize])).collect();
        for (b, _) in &brokers {
            b.start().await.unwrap();
        }
        settle().await;
        write_topic(
            &root,
            "s",
            &[
                (0, vec![1, 2, 0]),
                (1, vec![2, 0, 1]),
                (2, vec![0, 1, 2]),
                (3, vec![1]),
            ],
        )
        .await;
        settle().await;
        let controller = &brokers[0].0;
        // A stale epoch and an unknown broker are refused.
        let stale = controller.request_controlled_shutdown(BrokerId(1), 1).await;
        assert_eq!(stale, Err(ShutdownRefusal::StaleBrokerEpoch));
        let unknown = controller
            .request_controlled_shutdown(BrokerId(9), -1)
            .await;
        assert_eq!(unknown, Err(ShutdownRefusal::BrokerNotAvailable));
        let not_controller = brokers[1]
            .0
            .request_controlled_shutdown(BrokerId(1), -1)
            .await;
        assert_eq!(not_controller, Err(ShutdownRefusal::NotController));
        let epoch = controller.context().unwrap().broker_epoch(BrokerId(1));
        let left = controller
            .request_controlled_shutdown(BrokerId(1), epoch)
            .await
            .unwrap();
        assert!(left.is_empty(), "every replicated leader moved: {left:?}");
        let (z0, _) = state_of(&root, "s", 0).await.unwrap();
        assert_eq!(
            z0.leader,
            BrokerId(2),
            "next in AR order, in the ISR, not shutting down"
        );
        assert_eq!(z0.isr, vec![BrokerId(2), BrokerId(0)]);
        for p in [1, 2] {
            let (z, _) = state_of(&root, "s", p).await.unwrap();
            assert!(
                !z.isr.contains(&BrokerId(1)),
                "s-{p}: the follower left the ISR: {z:?}"
            );
            assert_ne!(z.leader, BrokerId(1));
        }
        // A single-replica partition is not moved (nowhere to go).
        let (z3, _) = state_of(&root, "s", 3).await.unwrap();
        assert_eq!(z3.leader, BrokerId(1));
        assert!(controller
            .context()
            .unwrap()
            .shutting_down
            .contains(&BrokerId(1)));
        // The shutting-down broker was told to follow s-0 and to stop s-1.
        let rec = &brokers[0].1;
        let to_1 = leader_and_isr_to(rec, 1, 0);
        assert!(to_1
            .iter()
            .any(|p| p.partition == 0 && p.leader == BrokerId(2)));
        let stops: Vec<_> = rec
            .0
            .borrow()
            .sent
            .iter()
            .filter(|(b, _)| *b == BrokerId(1))
            .filter_map(|(_, r)| match r {
                ControllerRequest::StopReplica(s) => Some(s.partitions.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(
            stops.iter().any(|p| p.partition == 1 && !p.delete),
            "{stops:?}"
        );
        for (b, _) in &brokers {
            b.enqueue(Event::Stop);
        }
        settle().await;
    });
}
