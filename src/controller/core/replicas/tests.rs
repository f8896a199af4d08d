use super::super::fixtures::{assign_online, ids, leadership, registered, tp};
use super::super::ControllerEvent;
use super::*;

/// Brokers 1–3 registered; `t-p` assigned [1, 2, 3] for each of `isrs`
/// (led by 1 at leader epoch 4, partition epoch 6), every replica Online;
/// `t-9` assigned [1, 2, 3] with no state znode. Controller epoch 3.
fn ctx(isrs: &[&[i32]]) -> ControllerContext {
    let mut ctx = registered(&[1, 2, 3]);
    let mut parts: Vec<i32> = (0..isrs.len() as i32).collect();
    parts.push(9);
    for p in parts {
        assign_online(&mut ctx, &tp(p), &[1, 2, 3]);
    }
    for (p, isr) in isrs.iter().enumerate() {
        ctx.leadership
            .insert(tp(p as i32), leadership(1, 4, isr, 6));
    }
    ctx
}

fn offline(
    core: &mut ControllerCore,
    c: &mut ControllerContext,
    replicas: &[(i32, i32)],
) -> Vec<ControllerAction> {
    core.on_event(
        Some(c),
        0,
        ControllerEvent::ReplicasTo {
            job: 1,
            replicas: replicas
                .iter()
                .map(|(p, r)| (tp(*p), BrokerId(*r)))
                .collect(),
            target: ReplicaState::Offline,
        },
    )
}

fn written(token: u64, epochs: &[i32]) -> ControllerEvent {
    ControllerEvent::LeadershipsWritten {
        token,
        results: epochs.iter().map(|e| Ok(PartitionEpoch(*e))).collect(),
    }
}

#[test]
fn an_offline_replica_is_stopped_taken_out_of_its_isrs_and_the_others_told() {
    let mut core = ControllerCore::new();
    // Broker 2 is in t-0's ISR, not in t-1's; t-9 has no state znode.
    let mut c = ctx(&[&[1, 2], &[1, 3]]);
    let actions = offline(&mut core, &mut c, &[(0, 2), (1, 2), (9, 2)]);
    let stop = |p| ControllerAction::StopReplica {
        replica: BrokerId(2),
        partition: tp(p),
        delete: false,
    };
    let mut shrunk = c.leadership[&tp(0)].leader_isr.clone();
    shrunk.isr = ids(&[1]);
    shrunk.leader_epoch = LeaderEpoch(5);
    assert_eq!(
        actions,
        vec![
            stop(0),
            stop(1),
            stop(9),
            ControllerAction::WriteLeaderships {
                token: 1,
                writes: vec![(tp(0), shrunk)],
            },
        ]
    );
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::Online
    );

    let actions = core.on_event(Some(&mut c), 0, written(1, &[7]));
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[1, 3]),
                partition: tp(0),
                is_new: false,
            },
            ControllerAction::UpdateMetadata {
                brokers: ids(&[1, 2, 3]),
                partitions: vec![tp(9)],
            },
            ControllerAction::ReplicasDone { job: 1 },
        ]
    );
    let l = &c.leadership[&tp(0)].leader_isr;
    assert_eq!(
        (l.isr.clone(), l.partition_epoch),
        (ids(&[1]), PartitionEpoch(7))
    );
    for p in [0, 1, 9] {
        assert_eq!(
            c.replica_states.get(&tp(p), BrokerId(2)),
            ReplicaState::Offline
        );
    }
    assert_eq!(core.waiting(), 0);
}

#[test]
fn replicas_leave_one_after_another_a_leader_leaves_the_partition_leaderless() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[&[1, 2, 3]]);
    let actions = offline(&mut core, &mut c, &[(0, 1), (0, 2)]);
    // Broker 1 (the leader) first: leader -1, ISR [2, 3].
    let first = match actions.last() {
        Some(ControllerAction::WriteLeaderships { writes, .. }) => writes[0].1.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (first.leader, first.isr.clone()),
        (BrokerId::NONE, ids(&[2, 3]))
    );
    // Then broker 2, from the state broker 1's write left.
    let actions = core.on_event(Some(&mut c), 0, written(1, &[7]));
    let second = match actions.last() {
        Some(ControllerAction::WriteLeaderships { writes, .. }) => writes[0].1.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(second.isr, ids(&[3]));
    assert_eq!(second.leader_epoch, LeaderEpoch(6));
    assert_eq!(second.partition_epoch, PartitionEpoch(7));
    // A failed write leaves the state and the replica as they were.
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![Err(WriteFailure::BadVersion("moved".into()))],
        },
    );
    assert_eq!(actions, vec![ControllerAction::ReplicasDone { job: 1 }]);
    assert_eq!(c.leadership[&tp(0)].leader_isr.isr, ids(&[2, 3]));
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(1)),
        ReplicaState::Offline
    );
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::Online
    );
}

#[test]
fn online_replicas_are_told_new_ones_join_the_assignment_illegal_moves_are_refused() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[&[1, 2, 3]]);
    // Broker 4's replica of t-0, new then online: it joins the assignment.
    let to = |c: &mut ControllerContext, core: &mut ControllerCore, r, target| {
        core.on_event(
            Some(c),
            0,
            ControllerEvent::ReplicasTo {
                job: 2,
                replicas: vec![(tp(0), BrokerId(r))],
                target,
            },
        )
    };
    let actions = to(&mut c, &mut core, 4, ReplicaState::New);
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[4]),
                partition: tp(0),
                is_new: true,
            },
            ControllerAction::ReplicasDone { job: 2 },
        ]
    );
    to(&mut c, &mut core, 4, ReplicaState::Online);
    assert_eq!(c.assignments[&tp(0)], ids(&[1, 2, 3, 4]));
    // An online replica going online again is re-told its partition.
    let actions = to(&mut c, &mut core, 2, ReplicaState::Online);
    assert_eq!(
        actions[0],
        ControllerAction::LeaderAndIsr {
            recipients: ids(&[2]),
            partition: tp(0),
            is_new: false,
        }
    );
    // Online → DeletionSuccessful is not a legal move: nothing happens.
    let actions = to(&mut c, &mut core, 3, ReplicaState::DeletionSuccessful);
    assert_eq!(actions, vec![ControllerAction::ReplicasDone { job: 2 }]);
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(3)),
        ReplicaState::Online
    );
}
