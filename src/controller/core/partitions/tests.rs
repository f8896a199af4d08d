use super::super::fixtures::{ids, leadership, partition_in, registered, tp};
use super::super::{ControllerEvent, WriteFailure};
use super::*;
use crate::types::ControllerEpoch;

/// Brokers `live` registered; `t-0` and `t-1` assigned [1, 2, 3]; `t-0`
/// New, `t-1` Offline (led by 3 at leader epoch 4 with ISR [3, 2]).
fn ctx(live: &[i32]) -> ControllerContext {
    let mut ctx = registered(live);
    for p in 0..2 {
        ctx.assignments.insert(tp(p), ids(&[1, 2, 3]));
    }
    partition_in(&mut ctx, &tp(0), PartitionState::New);
    partition_in(&mut ctx, &tp(1), PartitionState::Offline);
    ctx.leadership.insert(tp(1), leadership(3, 4, &[3, 2], 6));
    ctx
}

fn to_online(
    core: &mut ControllerCore,
    c: &mut ControllerContext,
    parts: &[i32],
) -> Vec<ControllerAction> {
    core.on_event(
        Some(c),
        0,
        ControllerEvent::PartitionsTo {
            job: 100,
            parts: parts.iter().map(|p| tp(*p)).collect(),
            target: PartitionState::Online,
            kind: ElectionKind::Offline,
            default_unclean: false,
        },
    )
}

#[test]
fn a_new_partition_gets_its_first_leader_created_and_its_live_replicas_told() {
    let mut core = ControllerCore::new();
    // Broker 1 is down: broker 2 leads, ISR [2, 3].
    let mut c = ctx(&[2, 3]);
    let actions = to_online(&mut core, &mut c, &[0]);
    let first = LeaderIsr {
        leader: BrokerId(2),
        leader_epoch: LeaderEpoch(0),
        isr: ids(&[2, 3]),
        leader_recovery_state: LeaderRecoveryState::Recovered,
        partition_epoch: PartitionEpoch(0),
    };
    assert_eq!(
        actions,
        vec![ControllerAction::CreateStates {
            token: 100,
            states: vec![(tp(0), first.clone())],
        }]
    );
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::New);
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::StatesCreated {
            token: 100,
            results: vec![Ok(())],
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[2, 3]),
                partition: tp(0),
                is_new: true,
            },
            ControllerAction::PartitionsDone {
                job: 100,
                online: vec![tp(0)],
            },
        ]
    );
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::Online);
    assert_eq!(c.leadership[&tp(0)].leader_isr, first);
    assert_eq!(c.leadership[&tp(0)].controller_epoch, ControllerEpoch(3));
    assert_eq!(core.waiting(), 0);
}

#[test]
fn an_existing_state_znode_keeps_a_partition_new_while_an_offline_one_is_elected() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2]);
    let actions = to_online(&mut core, &mut c, &[0, 1]);
    assert!(matches!(
        actions[..],
        [ControllerAction::CreateStates { .. }]
    ));
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::StatesCreated {
            token: 100,
            results: vec![Err(CreateFailure::Exists)],
        },
    );
    // t-1's election (broker 3 died): broker 2 from the ISR.
    let (token, new) = match &actions[..] {
        [ControllerAction::WriteLeaderships { token, writes }] => (*token, writes[0].1.clone()),
        other => panic!("{other:?}"),
    };
    assert_ne!(token, 100, "the election runs under a token of its own");
    assert_eq!((new.leader, new.isr.clone()), (BrokerId(2), ids(&[2])));
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token,
            results: vec![Ok(PartitionEpoch(7))],
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[1, 2]),
                partition: tp(1),
                is_new: false,
            },
            ControllerAction::PartitionsDone {
                job: 100,
                online: vec![tp(1)],
            },
        ]
    );
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::New);
    assert_eq!(c.partition_states.get(&tp(1)), PartitionState::Online);
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_failed_election_leaves_the_partition_offline_and_illegal_moves_are_refused() {
    let mut core = ControllerCore::new();
    // Only broker 1, outside t-1's ISR, is up: no clean leader.
    let mut c = ctx(&[1]);
    let actions = to_online(&mut core, &mut c, &[1]);
    let job = match &actions[..] {
        [ControllerAction::ReadUncleanSettings { job, .. }] => *job,
        other => panic!("{other:?}"),
    };
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::UncleanRead {
            job,
            settings: [("t".to_string(), false)].into(),
        },
    );
    assert_eq!(
        actions,
        vec![ControllerAction::PartitionsDone {
            job: 100,
            online: vec![],
        }]
    );
    assert_eq!(c.partition_states.get(&tp(1)), PartitionState::Offline);

    // New → Offline is legal and needs nothing written; NonExistent →
    // Offline is not.
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::PartitionsTo {
            job: 101,
            parts: vec![tp(0), tp(5)],
            target: PartitionState::Offline,
            kind: ElectionKind::Offline,
            default_unclean: false,
        },
    );
    assert_eq!(
        actions,
        vec![ControllerAction::PartitionsDone {
            job: 101,
            online: vec![],
        }]
    );
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::Offline);
    assert_eq!(c.partition_states.get(&tp(5)), PartitionState::NonExistent);
    // A write result for an election that is over does nothing.
    assert!(core
        .on_event(
            Some(&mut c),
            0,
            ControllerEvent::LeadershipsWritten {
                token: job,
                results: vec![Err(WriteFailure::Other("late".into()))],
            },
        )
        .is_empty());
}
