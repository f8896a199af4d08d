use super::fixtures::{ids, leadership, registered, tp};
use super::*;
use crate::controller::context::Moving;
use crate::controller::leader_election::LeaderRecoveryState;
use crate::types::{ControllerEpoch, LeaderEpoch};

const TOPIC_ID: Uuid = Uuid::from_u128(7);

/// Brokers 1–3 live (epoch 10); `t-0` and `t-1` led by 1 at leader epoch
/// 4, ISR [1, 2], partition epoch 6; controller epoch 3.
fn ctx() -> ControllerContext {
    let mut ctx = registered(&[1, 2, 3]);
    ctx.add_topic("t", TOPIC_ID);
    for p in 0..2 {
        ctx.assignments.insert(tp(p), ids(&[1, 2, 3]));
        ctx.leadership.insert(tp(p), leadership(1, 4, &[1, 2], 6));
    }
    ctx
}

fn state(isr: &[i32], partition_epoch: i32) -> LeaderIsr {
    leadership(1, 4, isr, partition_epoch).leader_isr
}

/// Broker 1 asks for `isr` on each partition, at partition epoch 6.
fn ask(broker_epoch: i64, items: &[(i32, &[i32])]) -> AlterAsk {
    AlterAsk {
        broker: BrokerId(1),
        broker_epoch,
        items: items
            .iter()
            .map(|(p, isr)| AlterItem {
                topic_id: TOPIC_ID,
                partition: *p,
                proposal: Proposal {
                    leader: BrokerId(1),
                    leader_epoch: LeaderEpoch(4),
                    isr: isr.iter().map(|&b| BrokerId(b)).collect(),
                    leader_recovery_state: LeaderRecoveryState::Recovered,
                    partition_epoch: PartitionEpoch(6),
                },
            })
            .collect(),
    }
}

#[test]
fn an_expansion_is_written_then_taken_announced_and_answered() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let token = core.token();
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::AlterPartition {
            token,
            ask: ask(10, &[(0, &[1, 2, 3])]),
        },
    );
    // Nothing changes before the write is confirmed.
    assert_eq!(
        actions,
        vec![ControllerAction::WriteLeaderships {
            token,
            writes: vec![(tp(0), state(&[1, 2, 3], 6))],
        }]
    );
    assert_eq!(c.leadership[&tp(0)].leader_isr, state(&[1, 2], 6));
    assert_eq!(core.waiting(), 1);

    let actions = core.on_event(
        Some(&mut c),
        5,
        ControllerEvent::LeadershipsWritten {
            token,
            results: vec![Ok(PartitionEpoch(7))],
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::UpdateMetadata {
                brokers: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
                partitions: vec![tp(0)],
            },
            ControllerAction::AnswerAlterPartition {
                token,
                answer: Ok(vec![(TOPIC_ID, 0, Ok(state(&[1, 2, 3], 7)))]),
            },
        ]
    );
    let now = &c.leadership[&tp(0)];
    assert_eq!(now.leader_isr, state(&[1, 2, 3], 7));
    assert_eq!(now.controller_epoch, ControllerEpoch(3));
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_stale_broker_epoch_or_no_context_is_answered_at_once() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let stale = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::AlterPartition {
            token: 1,
            ask: ask(9, &[(0, &[1, 2, 3])]),
        },
    );
    assert_eq!(
        stale,
        vec![ControllerAction::AnswerAlterPartition {
            token: 1,
            answer: Err(ErrorCode::STALE_BROKER_EPOCH),
        }]
    );
    let not_controller = core.on_event(
        None,
        0,
        ControllerEvent::AlterPartition {
            token: 2,
            ask: ask(10, &[(0, &[1, 2, 3])]),
        },
    );
    assert_eq!(
        not_controller,
        vec![ControllerAction::AnswerAlterPartition {
            token: 2,
            answer: Err(ErrorCode::NOT_CONTROLLER),
        }]
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn refusals_and_unchanged_states_need_no_write() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let mut a = ask(10, &[(0, &[1, 2]), (1, &[1, 4])]);
    a.items.push(AlterItem {
        topic_id: Uuid::from_u128(99),
        ..a.items[0].clone()
    });
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::AlterPartition { token: 1, ask: a },
    );
    // Already in force; broker 4 is not live; an unknown topic id.
    assert_eq!(
        actions,
        vec![ControllerAction::AnswerAlterPartition {
            token: 1,
            answer: Ok(vec![
                (TOPIC_ID, 0, Ok(state(&[1, 2], 6))),
                (TOPIC_ID, 1, Err(ErrorCode::INELIGIBLE_REPLICA)),
                (Uuid::from_u128(99), 0, Err(ErrorCode::UNKNOWN_TOPIC_ID)),
            ]),
        }]
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn failed_writes_keep_the_old_state_and_map_to_kafka_errors() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    c.reassignments.insert(tp(1), Moving::default());
    core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::AlterPartition {
            token: 1,
            ask: ask(10, &[(0, &[1]), (1, &[1, 2, 3])]),
        },
    );
    // One lost the race, the other was written: only the written one is
    // taken, checked for its move and announced.
    let actions = core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::LeadershipsWritten {
            token: 1,
            results: vec![
                Err(WriteFailure::BadVersion("moved".into())),
                Ok(PartitionEpoch(7)),
            ],
        },
    );
    assert_eq!(
        actions,
        vec![
            ControllerAction::CheckReassignment(tp(1)),
            ControllerAction::UpdateMetadata {
                brokers: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
                partitions: vec![tp(1)],
            },
            ControllerAction::AnswerAlterPartition {
                token: 1,
                answer: Ok(vec![
                    (TOPIC_ID, 0, Err(ErrorCode::INVALID_UPDATE_VERSION)),
                    (TOPIC_ID, 1, Ok(state(&[1, 2, 3], 7))),
                ]),
            },
        ]
    );
    assert_eq!(c.leadership[&tp(0)].leader_isr, state(&[1, 2], 6));

    core.on_event(
        Some(&mut c),
        0,
        ControllerEvent::AlterPartition {
            token: 2,
            ask: ask(10, &[(0, &[1])]),
        },
    );
    let lost = core.on_event(
        None,
        0,
        ControllerEvent::LeadershipsWritten {
            token: 2,
            results: vec![Err(WriteFailure::NotController("resigned".into()))],
        },
    );
    assert_eq!(
        lost,
        vec![ControllerAction::AnswerAlterPartition {
            token: 2,
            answer: Ok(vec![(TOPIC_ID, 0, Err(ErrorCode::NOT_CONTROLLER))]),
        }]
    );
    // A result for nothing waiting does nothing.
    assert!(core
        .on_event(
            Some(&mut c),
            0,
            ControllerEvent::LeadershipsWritten {
                token: 2,
                results: vec![Ok(PartitionEpoch(9))],
            },
        )
        .is_empty());
    assert_eq!(c.leadership[&tp(0)].leader_isr, state(&[1, 2], 6));
}
