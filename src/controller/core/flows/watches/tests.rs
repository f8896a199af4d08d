use std::collections::BTreeMap;

use super::super::super::fixtures::{ids, leadership, run_flow, topic_t, tp};
use super::super::super::ControllerEvent;
use super::*;
use crate::controller::state_machine::PartitionState;
use uuid::Uuid;

/// Brokers 1–3 registered; topic `t` with `t-0` on [1, 2] led by 1.
fn ctx() -> ControllerContext {
    topic_t(&[1, 2, 3], &[(0, &[1, 2])])
}

fn znode(id: u128, partitions: &[(i32, &[i32])]) -> TopicZNode {
    let parts: BTreeMap<i32, Vec<BrokerId>> =
        partitions.iter().map(|(p, r)| (*p, ids(r))).collect();
    TopicZNode::new(Uuid::from_u128(id), parts)
}

#[test]
fn a_new_topic_is_read_then_created_and_a_gone_one_forgotten() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    c.topic_ids.insert("old".into(), Uuid::from_u128(8));
    c.assignments
        .insert(TopicPartition::new("old", 0), ids(&[3]));
    let listed = ControllerEvent::TopicsListed {
        token: 10,
        names: vec!["t".into(), "u".into()],
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, listed),
        vec![ControllerAction::ReadTopics {
            token: 10,
            topics: vec!["u".into()]
        }]
    );
    assert!(!c.topic_ids.contains_key("old"));
    assert!(!c.assignments.contains_key(&TopicPartition::new("old", 0)));
    let read = ControllerEvent::TopicsRead {
        token: 10,
        read: vec![("u".into(), znode(9, &[(0, &[2, 3]), (1, &[3, 1])]))],
        default_unclean: false,
    };
    let actions = run_flow(&mut core, &mut c, read);
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 10 })
    );
    let u0 = TopicPartition::new("u", 0);
    let u1 = TopicPartition::new("u", 1);
    assert_eq!(c.topic_ids["u"], Uuid::from_u128(9));
    assert_eq!(c.leadership[&u0].leader_isr.leader, BrokerId(2));
    assert_eq!(c.leadership[&u1].leader_isr.leader, BrokerId(3));
    assert_eq!(c.partition_states.get(&u1), PartitionState::Online);
    // Nothing new: nothing to read.
    let again = ControllerEvent::TopicsListed {
        token: 11,
        names: vec!["t".into(), "u".into()],
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, again),
        vec![ControllerAction::FlowDone { token: 11 }]
    );
}

#[test]
fn added_partitions_are_created_unless_the_topic_is_being_deleted() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let modified = |token| ControllerEvent::PartitionsModified {
        token,
        topic: "t".into(),
        znode: znode(7, &[(0, &[1, 2]), (1, &[2, 3])]),
        default_unclean: false,
    };
    c.topics_to_delete.insert("t".into());
    assert_eq!(
        run_flow(&mut core, &mut c, modified(10)),
        vec![ControllerAction::FlowDone { token: 10 }]
    );
    assert!(!c.assignments.contains_key(&tp(1)));
    c.topics_to_delete.clear();
    let actions = run_flow(&mut core, &mut c, modified(11));
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 11 })
    );
    assert_eq!(c.assignments[&tp(1)], ids(&[2, 3]));
    assert_eq!(c.leadership[&tp(1)].leader_isr.leader, BrokerId(2));
    // t-0 untouched.
    assert_eq!(c.leadership[&tp(0)], leadership(1, 4, &[1, 2], 6));
}

#[test]
fn isr_change_notifications_reread_and_announce_the_known_partitions() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let notified = ControllerEvent::IsrChangeNotified {
        token: 10,
        parts: vec![tp(0), tp(9), tp(0)],
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, notified),
        vec![ControllerAction::ReloadLeaderships {
            job: 10,
            parts: vec![tp(0)]
        }]
    );
    let reread = ControllerEvent::LeadershipsReloaded {
        job: 10,
        states: vec![(tp(0), leadership(1, 4, &[1], 7))],
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, reread),
        vec![
            ControllerAction::UpdateMetadata {
                brokers: ids(&[1, 2, 3]),
                partitions: vec![tp(0)],
            },
            ControllerAction::SendBatch { token: 10 },
        ]
    );
    assert_eq!(c.leadership[&tp(0)].leader_isr.isr, ids(&[1]));
    assert_eq!(
        core.on_event(Some(&mut c), 0, ControllerEvent::Performed { token: 10 }),
        vec![ControllerAction::FlowDone { token: 10 }]
    );
    // Only unknown partitions: nothing read, nothing sent.
    let unknown = ControllerEvent::IsrChangeNotified {
        token: 11,
        parts: vec![tp(9)],
    };
    assert_eq!(
        core.on_event(Some(&mut c), 0, unknown),
        vec![ControllerAction::FlowDone { token: 11 }]
    );
}

#[test]
fn a_failed_log_dir_is_asked_about_and_the_replicas_it_names_go_offline() {
    let mut core = ControllerCore::new();
    let mut c = ctx();
    let failure = ControllerEvent::LogDirFailure {
        token: 10,
        brokers: [BrokerId(2)].into(),
    };
    assert_eq!(
        run_flow(&mut core, &mut c, failure),
        vec![
            ControllerAction::LeaderAndIsr {
                recipients: ids(&[2]),
                partition: tp(0),
                is_new: false,
            },
            ControllerAction::SendBatch { token: 10 },
            ControllerAction::FlowDone { token: 10 },
        ]
    );
    let answer = |token, e| ControllerEvent::LeaderAndIsrAnswer {
        token,
        broker: BrokerId(2),
        answers: vec![(tp(0), e)],
        default_unclean: false,
    };
    let actions = run_flow(
        &mut core,
        &mut c,
        answer(11, ErrorCode::KAFKA_STORAGE_ERROR),
    );
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 11 })
    );
    assert!(c.replicas_on_offline_dirs[&BrokerId(2)].contains(&tp(0)));
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::Offline
    );
    assert_eq!(c.leadership[&tp(0)].leader_isr.isr, ids(&[1]));
    // The same answer again changes nothing; NONE clears the mark.
    assert_eq!(
        run_flow(
            &mut core,
            &mut c,
            answer(12, ErrorCode::KAFKA_STORAGE_ERROR)
        ),
        vec![ControllerAction::FlowDone { token: 12 }]
    );
    run_flow(&mut core, &mut c, answer(13, ErrorCode::NONE));
    assert!(!c.replicas_on_offline_dirs.contains_key(&BrokerId(2)));
    assert_eq!(core.waiting(), 0);
}
