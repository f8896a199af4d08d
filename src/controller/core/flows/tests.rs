use super::super::fixtures::{
    assign_online, ids, leadership, partition_in, registered, run_flow, tp,
};
use super::super::ControllerEvent;
use super::*;
use crate::controller::brokers::LiveBroker;
use crate::controller::leader_election::LeaderIsr;
use crate::controller::rebalance::ElectionType;
use crate::types::PartitionEpoch;

/// Brokers 1–3 registered (epoch 10), every replica Online; `t-0` led by
/// 1 (ISR [1, 2, 3]), `t-1` led by 2 (ISR [2, 1, 3]), `t-2` led by 1 with
/// one replica; all at leader epoch 4, partition epoch 6.
fn ctx() -> ControllerContext {
    let mut ctx = registered(&[1, 2, 3]);
    for (p, ar, leader, isr) in [
        (0, &[1, 2, 3][..], 1, &[1, 2, 3][..]),
        (1, &[2, 1, 3][..], 2, &[2, 1, 3][..]),
        (2, &[1][..], 1, &[1][..]),
    ] {
        assign_online(&mut ctx, &tp(p), ar);
        partition_in(&mut ctx, &tp(p), PartitionState::Online);
        ctx.leadership.insert(tp(p), leadership(leader, 4, isr, 6));
    }
    ctx
}

fn shutdown(
    core: &mut ControllerCore,
    c: Option<&mut ControllerContext>,
    broker: i32,
    epoch: i64,
) -> Vec<ControllerAction> {
    core.on_event(
        c,
        0,
        ControllerEvent::ControlledShutdown {
            token: 50,
            broker: BrokerId(broker),
            broker_epoch: epoch,
        },
    )
}

/// The one write in `actions`: its token and state.
fn write_in(actions: &[ControllerAction]) -> (u64, TopicPartition, LeaderIsr) {
    let found: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            ControllerAction::WriteLeaderships { token, writes } => Some((*token, writes.clone())),
            _ => None,
        })
        .collect();
    match &found[..] {
        [(token, writes)] if writes.len() == 1 => {
            (*token, writes[0].0.clone(), writes[0].1.clone())
        }
        other => panic!("{other:?} in {actions:?}"),
    }
}

fn written(token: u64, epoch: i32) -> ControllerEvent {
    ControllerEvent::LeadershipsWritten {
        token,
        results: vec![Ok(PartitionEpoch(epoch))],
    }
}

#[test]
fn a_shutting_down_leader_hands_its_partitions_over_step_by_step() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // Step 1: t-0 elects without broker 1 (t-2 has one replica: kept).
    let actions = shutdown(&mut core, Some(&mut c), 1, 10);
    let (election, part, new) = write_in(&actions);
    assert_eq!(part, tp(0));
    assert_eq!((new.leader, new.isr.clone()), (BrokerId(2), ids(&[2, 3])));
    assert!(c.shutting_down.contains(&BrokerId(1)));

    // Once written: t-0's replicas told (the shutting-down one too), and
    // the core stops until that batch is sent.
    let actions = core.on_event(Some(&mut c), 0, written(election, 7));
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[1, 2, 3]),
                partition: tp(0),
                is_new: false,
            },
            ControllerAction::SendBatch { token: 50 },
        ]
    );
    // Broker 1 stops following t-1; sent.
    let stop_t1 = ControllerAction::StopReplica {
        replica: BrokerId(1),
        partition: tp(1),
        delete: false,
    };
    let sent = ControllerEvent::Performed { token: 50 };
    let actions = core.on_event(Some(&mut c), 0, sent.clone());
    assert_eq!(
        actions,
        vec![stop_t1.clone(), ControllerAction::SendBatch { token: 50 }]
    );
    // It goes OfflineReplica there (stopped again, as Kafka's replica
    // state machine does) and leaves t-1's ISR.
    let actions = core.on_event(Some(&mut c), 0, sent.clone());
    let (removal, part, shrunk) = write_in(&actions);
    assert_eq!(actions[0], stop_t1);
    assert_eq!(part, tp(1));
    assert_eq!(
        (shrunk.leader, shrunk.isr.clone()),
        (BrokerId(2), ids(&[2, 3]))
    );

    // t-1's other replicas told, sent, and the answer: broker 1 still
    // leads t-2 only, which has no other replica (not counted).
    let actions = core.on_event(Some(&mut c), 0, written(removal, 8));
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[2, 3]),
                partition: tp(1),
                is_new: false,
            },
            ControllerAction::SendBatch { token: 50 },
        ]
    );
    let actions = core.on_event(Some(&mut c), 0, sent);
    assert_eq!(
        actions,
        vec![ControllerAction::AnswerControlledShutdown {
            token: 50,
            answer: Ok(vec![]),
        }]
    );
    assert_eq!(
        c.replica_states.get(&tp(1), BrokerId(1)),
        ReplicaState::Offline
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_leader_that_could_not_move_is_answered_so_the_broker_retries() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // Brokers 2 and 3 are shutting down too: no one can take t-0.
    c.shutting_down.extend(ids(&[2, 3]));
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::ControlledShutdown {
            token: 50,
            broker: BrokerId(1),
            broker_epoch: -1,
        },
    );
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::AnswerControlledShutdown {
            token: 50,
            answer: Ok(vec![tp(0)]),
        })
    );
    // Broker 1 still left t-1's ISR.
    assert_eq!(leader(&c, 1), (BrokerId(2), ids(&[2, 3])));
}

#[test]
fn refusals_name_kafkas_errors() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let refused = |r| {
        vec![ControllerAction::AnswerControlledShutdown {
            token: 50,
            answer: Err(r),
        }]
    };
    assert_eq!(
        shutdown(&mut core, Some(&mut c), 9, 10),
        refused(ShutdownRefusal::BrokerNotAvailable)
    );
    assert_eq!(
        shutdown(&mut core, Some(&mut c), 1, 9),
        refused(ShutdownRefusal::StaleBrokerEpoch)
    );
    assert_eq!(
        shutdown(&mut core, None, 1, 10),
        refused(ShutdownRefusal::NotController)
    );
    assert!(c.shutting_down.is_empty());
    assert_eq!(
        ShutdownRefusal::StaleBrokerEpoch.code(),
        ErrorCode::STALE_BROKER_EPOCH
    );
}

fn leader(c: &ControllerContext, p: i32) -> (BrokerId, Vec<BrokerId>) {
    let l = &c.leadership[&tp(p)].leader_isr;
    (l.leader, l.isr.clone())
}

#[test]
fn a_broker_that_dies_then_returns_is_failed_over_and_taken_back() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let registered = c.live_brokers.clone();
    let survivors: Vec<LiveBroker> = registered.iter().filter(|b| b.id.0 != 1).cloned().collect();
    // Broker 1 dies: t-0 moves to 2; t-2 (its only replica) has no leader;
    // broker 1 leaves t-1's ISR; its replicas go Offline.
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::BrokerChange {
            token: 60,
            live: survivors.clone(),
            default_unclean: false,
        },
    );
    assert_eq!(
        actions[0],
        ControllerAction::BrokersChanged { live: survivors }
    );
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 60 })
    );
    assert_eq!(leader(&c, 0), (BrokerId(2), ids(&[2, 3])));
    assert_eq!(leader(&c, 1), (BrokerId(2), ids(&[2, 3])));
    assert_eq!(leader(&c, 2), (BrokerId::NONE, ids(&[1])));
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::Online);
    assert_eq!(c.partition_states.get(&tp(2)), PartitionState::Offline);
    for p in 0..3 {
        assert_eq!(
            c.replica_states.get(&tp(p), BrokerId(1)),
            ReplicaState::Offline
        );
    }
    // The election went out before the replicas were stopped.
    let first_send = actions
        .iter()
        .position(|a| matches!(a, ControllerAction::SendBatch { .. }));
    let first_stop = actions
        .iter()
        .position(|a| matches!(a, ControllerAction::StopReplica { .. }));
    assert!(first_send < first_stop, "{actions:?}");
    assert_eq!(core.waiting(), 0);

    // It returns: everyone learns of it, its replicas go Online, t-2 is
    // led by it again, the moves waiting for it resume.
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::BrokerChange {
            token: 61,
            live: registered.clone(),
            default_unclean: false,
        },
    );
    assert_eq!(
        actions[..5],
        [
            ControllerAction::BrokersChanged { live: registered },
            ControllerAction::UpdateMetadataAll {
                brokers: ids(&[2, 3]),
            },
            ControllerAction::SendBatch { token: 61 },
            ControllerAction::UpdateMetadataAll { brokers: ids(&[1]) },
            ControllerAction::SendBatch { token: 61 },
        ]
    );
    assert_eq!(leader(&c, 2), (BrokerId(1), ids(&[1])));
    for p in 0..3 {
        assert_eq!(
            c.replica_states.get(&tp(p), BrokerId(1)),
            ReplicaState::Online
        );
    }
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 61 })
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_bounced_broker_fails_over_and_comes_back_in_one_change() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let mut bounced = c.live_brokers.clone();
    bounced[0].epoch = 11;
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::BrokerChange {
            token: 62,
            live: bounced.clone(),
            default_unclean: false,
        },
    );
    // Its single-replica partition was offline for a moment and is led
    // by it again; the context has its new registration.
    assert_eq!(leader(&c, 2).0, BrokerId(1));
    assert_eq!(c.live_brokers, bounced);
    assert_eq!(c.partition_states.get(&tp(2)), PartitionState::Online);
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 62 })
    );
    // Nothing changed: nothing happens but the hook.
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::BrokerChange {
            token: 63,
            live: bounced.clone(),
            default_unclean: false,
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::BrokersChanged { live: bounced },
            ControllerAction::FlowDone { token: 63 },
        ]
    );
}

#[test]
fn a_new_controller_tells_everyone_then_fails_over_dead_replicas_then_elects() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // A fresh controller's context: states not started; broker 3 gone;
    // t-3 assigned [2, 3] with no state znode yet.
    c.partition_states = Default::default();
    c.replica_states = Default::default();
    c.live_brokers.retain(|b| b.id.0 != 3);
    c.assignments.insert(tp(3), ids(&[2, 3]));
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::Failover {
            token: 70,
            default_unclean: false,
        },
    );
    assert_eq!(
        actions[..2],
        [
            ControllerAction::UpdateMetadataAll {
                brokers: ids(&[1, 2]),
            },
            ControllerAction::SendBatch { token: 70 },
        ]
    );
    // Broker 3 left every ISR; t-3 got its first leader among the live.
    assert_eq!(leader(&c, 0), (BrokerId(1), ids(&[1, 2])));
    assert_eq!(leader(&c, 1), (BrokerId(2), ids(&[2, 1])));
    assert_eq!(leader(&c, 3), (BrokerId(2), ids(&[2])));
    for p in [0, 1, 2, 3] {
        assert_eq!(
            c.partition_states.get(&tp(p)),
            PartitionState::Online,
            "t-{p}"
        );
    }
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(3)),
        ReplicaState::Offline
    );
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::Online
    );
    // The elections sent, deletions resume (none here), the flow ends.
    let n = actions.len();
    assert_eq!(
        actions[n - 2..],
        [
            ControllerAction::SendBatch { token: 70 },
            ControllerAction::FlowDone { token: 70 },
        ]
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn new_partitions_are_created_with_their_first_leaders_and_replicas_online() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    c.assignments.insert(tp(5), ids(&[3, 1]));
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::NewPartitions {
            token: 80,
            parts: vec![tp(5)],
            default_unclean: false,
        },
    );
    assert!(actions.contains(&ControllerAction::LeaderAndIsr {
        recipients: ids(&[3, 1]),
        partition: tp(5),
        is_new: true,
    }));
    assert_eq!(leader(&c, 5), (BrokerId(3), ids(&[3, 1])));
    assert_eq!(
        c.leadership[&tp(5)].leader_isr.partition_epoch,
        PartitionEpoch(0)
    );
    assert_eq!(c.partition_states.get(&tp(5)), PartitionState::Online);
    for r in [1, 3] {
        assert_eq!(
            c.replica_states.get(&tp(5), BrokerId(r)),
            ReplicaState::Online
        );
    }
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 80 })
    );
    // Nothing to create: done at once.
    let none = ControllerEvent::NewPartitions {
        token: 81,
        parts: vec![],
        default_unclean: false,
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, none),
        vec![ControllerAction::FlowDone { token: 81 }]
    );
}

fn elect_leaders(partitions: &[i32]) -> ControllerEvent {
    ControllerEvent::ElectLeaders {
        token: 90,
        kind: ElectionType::Preferred,
        partitions: Some(partitions.iter().map(|p| tp(*p)).collect()),
        default_unclean: false,
    }
}

/// The answer at the end of an ElectLeaders flow.
fn elect_answer(actions: &[ControllerAction]) -> ElectAnswer {
    match actions.last() {
        Some(ControllerAction::AnswerElectLeaders { answer, .. }) => answer.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_preferred_election_moves_leaders_back_and_answers_each_partition() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // t-0's preferred replica (1) is in its ISR but 2 leads; t-1 is led by
    // its preferred replica; t-9 does not exist.
    c.leadership.insert(tp(0), leadership(2, 5, &[2, 1, 3], 7));
    let actions = run_flow(&mut core, &mut c, elect_leaders(&[0, 1, 9]));
    let answer = elect_answer(&actions).expect("controller");
    assert_eq!(answer[&tp(0)], Ok(BrokerId(1)));
    assert_eq!(
        answer[&tp(1)].clone().unwrap_err().0,
        ErrorCode::ELECTION_NOT_NEEDED
    );
    assert_eq!(
        answer[&tp(9)].clone().unwrap_err().0,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(leader(&c, 0).0, BrokerId(1));
    // The LeaderAndIsr went out before the answer.
    let send = actions
        .iter()
        .position(|a| matches!(a, ControllerAction::SendBatch { .. }));
    assert!(send.is_some_and(|s| s < actions.len() - 1), "{actions:?}");
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_preferred_replica_out_of_the_isr_is_not_available_and_no_controller_refuses() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    c.leadership.insert(tp(0), leadership(2, 5, &[2, 3], 7));
    let answer = elect_answer(&run_flow(&mut core, &mut c, elect_leaders(&[0])));
    let refused = answer.expect("controller")[&tp(0)].clone().unwrap_err();
    assert_eq!(refused.0, ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE);
    assert_eq!(leader(&c, 0).0, BrokerId(2));
    let actions = core.on_event(None, 0, elect_leaders(&[0]));
    assert_eq!(elect_answer(&actions), Err(ErrorCode::NOT_CONTROLLER));
}

#[test]
fn the_auto_rebalance_elects_preferred_leaders_of_an_imbalanced_broker() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // Broker 1 is preferred for t-0 and t-2 and leads only t-2: 50% off.
    c.leadership.insert(tp(0), leadership(2, 5, &[2, 1, 3], 7));
    let check = |percent| ControllerEvent::AutoRebalance {
        token: 91,
        percent,
        default_unclean: false,
    };
    // Above the threshold asked: nothing moves.
    let actions = run_flow(&mut core, &mut c, check(60));
    assert_eq!(actions, vec![ControllerAction::FlowDone { token: 91 }]);
    assert_eq!(leader(&c, 0).0, BrokerId(2));
    let actions = run_flow(&mut core, &mut c, check(10));
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 91 })
    );
    assert_eq!(leader(&c, 0).0, BrokerId(1));
    assert_eq!(core.waiting(), 0);
}
