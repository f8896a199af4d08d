use super::super::super::fixtures::{ids, leadership, run_flow, topic_t, tp};
use super::super::super::{ControllerEvent, WriteFailure};
use super::*;
use crate::controller::context::Moving;
use crate::types::{LeaderEpoch, PartitionEpoch};

/// Brokers 1–3 registered; `t-0` on [1, 2] led by 1 (ISR [1, 2], leader
/// epoch 4, partition epoch 6), its replicas Online.
fn ctx() -> ControllerContext {
    topic_t(&[1, 2, 3], &[(0, &[1, 2])])
}

fn alter(token: u64, target: &[i32]) -> ControllerEvent {
    ControllerEvent::AlterReassignments {
        token,
        asked: [(tp(0), Some(ids(target)))].into(),
    }
}

fn answer_of(actions: &[ControllerAction]) -> ReassignAnswer {
    actions
        .iter()
        .find_map(|a| match a {
            ControllerAction::AnswerAlterReassignments { answer, .. } => Some(answer.clone()),
            _ => None,
        })
        .expect("an answer")
}

#[test]
fn a_move_starts_its_new_replicas_then_completes_once_the_isr_holds_the_target() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let actions = run_flow(&mut core, &mut c, alter(10, &[2, 3]));
    assert_eq!(answer_of(&actions), Ok([(tp(0), Ok(()))].into()));
    // RS = [2, 3, 1], AR = [3], RR = [1], written to the topic znode.
    let znode = actions
        .iter()
        .find_map(|a| match a {
            ControllerAction::WriteTopicAssignment { znode, .. } => Some(znode.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(znode.partitions[&0], ids(&[2, 3, 1]));
    assert_eq!(znode.adding_replicas[&0], ids(&[3]));
    assert_eq!(znode.removing_replicas[&0], ids(&[1]));
    // Phase A: the epoch bumped and every replica told, then 3 started.
    let l = &c.leadership[&tp(0)].leader_isr;
    assert_eq!((l.leader, l.leader_epoch), (BrokerId(1), LeaderEpoch(5)));
    assert!(actions.contains(&ControllerAction::LeaderAndIsr {
        recipients: ids(&[2, 3, 1]),
        partition: tp(0),
        is_new: false,
    }));
    assert!(actions.contains(&ControllerAction::LeaderAndIsr {
        recipients: ids(&[3]),
        partition: tp(0),
        is_new: true,
    }));
    assert_eq!(
        c.reassignments[&tp(0)],
        Moving {
            adding: ids(&[3]),
            removing: ids(&[1]),
        }
    );
    // The ISR not yet complete: the check changes nothing.
    let check = |token| ControllerEvent::ReassignmentIsrChange { token, tp: tp(0) };
    assert_eq!(
        run_flow(&mut core, &mut c, check(11)),
        vec![ControllerAction::FlowDone { token: 11 }]
    );
    // 3 caught up: phase B.
    c.leadership.get_mut(&tp(0)).unwrap().leader_isr.isr = ids(&[1, 2, 3]);
    let actions = run_flow(&mut core, &mut c, check(12));
    assert_eq!(c.assignments[&tp(0)], ids(&[2, 3]));
    assert!(c.reassignments.is_empty());
    let l = &c.leadership[&tp(0)].leader_isr;
    assert_eq!(l.leader, BrokerId(2), "the leader moved into the target");
    assert!(
        !l.isr.contains(&BrokerId(1)),
        "the removed replica left the ISR"
    );
    assert!(actions.contains(&ControllerAction::StopReplica {
        replica: BrokerId(1),
        partition: tp(0),
        delete: true,
    }));
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(1)),
        ReplicaState::NonExistent
    );
    // (in the sub-flow of the partition's move, with a token of its own)
    assert!(actions.iter().any(|a| matches!(
        a,
        ControllerAction::RemoveFromZkReassignment { remove, .. }
            if *remove == ZkRemoval::Completed(tp(0), ids(&[2, 3]))
    )));
    // The settled assignment written, then every broker told.
    let last_write = actions
        .iter()
        .rev()
        .find_map(|a| match a {
            ControllerAction::WriteTopicAssignment { znode, .. } => Some(znode.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_write.partitions[&0], ids(&[2, 3]));
    assert!(last_write.adding_replicas.is_empty() && last_write.removing_replicas.is_empty());
    let n = actions.len();
    let ControllerAction::SendBatch { token: sub } = actions[n - 2] else {
        panic!("{actions:?}");
    };
    assert_eq!(
        actions[n - 3..],
        [
            ControllerAction::UpdateMetadata {
                brokers: ids(&[1, 2, 3]),
                partitions: vec![tp(0)],
            },
            ControllerAction::SendBatch { token: sub },
            ControllerAction::FlowDone { token: 12 },
        ]
    );
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_failed_assignment_write_puts_the_assignment_back_and_answers_the_error() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let actions = core.on_event(Some(&mut c), 0, alter(10, &[2, 3]));
    assert_eq!(
        actions,
        vec![ControllerAction::RemoveFromZkReassignment {
            token: 10,
            remove: ZkRemoval::Partitions([tp(0)].into()),
        }]
    );
    let actions = core.on_event(Some(&mut c), 0, ControllerEvent::Performed { token: 10 });
    let [ControllerAction::WriteTopicAssignment { token, .. }] = actions[..] else {
        panic!("{actions:?}");
    };
    assert_eq!(c.assignments[&tp(0)], ids(&[2, 3, 1]));
    let failed = ControllerEvent::TopicAssignmentWritten {
        token,
        result: Err(WriteFailure::NotController("moved".into())),
    };
    let actions = core.on_event(Some(&mut c), 0, failed);
    assert_eq!(
        answer_of(&actions),
        Ok([(tp(0), Err((ErrorCode::NOT_CONTROLLER, "moved".into())))].into())
    );
    assert_eq!(c.assignments[&tp(0)], ids(&[1, 2]));
    assert!(c.reassignments.is_empty());
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_bump_whose_znode_moved_is_reread_and_tried_once_more() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    // Already moving to [2, 3]; resumed when 3 starts.
    c.assignments.insert(tp(0), ids(&[2, 3, 1]));
    c.reassignments.insert(
        tp(0),
        Moving {
            adding: ids(&[3]),
            removing: ids(&[1]),
        },
    );
    let resume = ControllerEvent::ResumeReassignments {
        token: 10,
        which: ResumeWhich::TargetOn([BrokerId(3)].into()),
    };
    let actions = core.on_event(Some(&mut c), 0, resume);
    let [ControllerAction::WriteLeaderships { token, ref writes }] = actions[..] else {
        panic!("{actions:?}");
    };
    assert_eq!(writes[0].1.partition_epoch, PartitionEpoch(6));
    let moved = ControllerEvent::LeadershipsWritten {
        token,
        results: vec![Err(WriteFailure::BadVersion("moved".into()))],
    };
    let actions = core.on_event(Some(&mut c), 0, moved);
    assert_eq!(
        actions,
        vec![ControllerAction::ReloadLeaderships {
            job: token,
            parts: vec![tp(0)],
        }]
    );
    let reread = ControllerEvent::LeadershipsReloaded {
        job: token,
        states: vec![(tp(0), leadership(1, 7, &[1, 2], 9))],
    };
    let actions = core.on_event(Some(&mut c), 0, reread);
    let [ControllerAction::WriteLeaderships { ref writes, .. }] = actions[..] else {
        panic!("{actions:?}");
    };
    assert_eq!(writes[0].1.partition_epoch, PartitionEpoch(9));
    assert_eq!(writes[0].1.leader_epoch, LeaderEpoch(8));
    // Moves not waiting for the brokers that started are left alone.
    let other = ControllerEvent::ResumeReassignments {
        token: 20,
        which: ResumeWhich::TargetOn([BrokerId(9)].into()),
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, other),
        vec![ControllerAction::FlowDone { token: 20 }]
    );
}

#[test]
fn a_zookeeper_request_starts_what_it_can_and_drops_the_refused_partitions() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let asked = vec![(tp(0), ids(&[2, 3])), (tp(9), ids(&[1]))];
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::ZkReassignment { token: 10, asked },
    );
    assert!(
        actions.contains(&ControllerAction::RemoveFromZkReassignment {
            token: 10,
            remove: ZkRemoval::Partitions([tp(9)].into()),
        })
    );
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::ZkReassigned {
            token: 10,
            started: [tp(0)].into(),
        })
    );
    assert!(c.reassignments.contains_key(&tp(0)));
}

#[test]
fn refused_requests_and_a_broker_that_is_not_controller() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let cancel = ControllerEvent::AlterReassignments {
        token: 10,
        asked: [(tp(0), None)].into(),
    };
    let actions = run_flow(&mut core, &mut c, cancel);
    let Ok(answers) = answer_of(&actions) else {
        panic!("{actions:?}");
    };
    assert_eq!(
        answers[&tp(0)].as_ref().unwrap_err().0,
        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS
    );
    assert_eq!(
        core.on_event(None, 0, alter(11, &[2, 3])),
        vec![ControllerAction::AnswerAlterReassignments {
            token: 11,
            answer: Err(ErrorCode::NOT_CONTROLLER),
        }]
    );
    assert!(ZkRemoval::Completed(tp(0), ids(&[2])).removes(&tp(0), &ids(&[2])));
    assert!(!ZkRemoval::Completed(tp(0), ids(&[2])).removes(&tp(0), &ids(&[3])));
}
