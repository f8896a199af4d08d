use super::super::super::fixtures::{ids, registered, run_flow, topic_t, tp};
use super::super::super::ControllerEvent;
use super::*;
use crate::types::BrokerId;

/// Brokers `live` registered; topic `t` with `t-0` and `t-1` on brokers
/// 1 and 2 (led by 1, ISR [1, 2]), every replica Online.
fn ctx(live: &[i32]) -> ControllerContext {
    topic_t(live, &[(0, &[1, 2]), (1, &[1, 2])])
}

fn listed(token: u64, marked: &[&str], enabled: bool) -> ControllerEvent {
    ControllerEvent::DeleteTopicsListed {
        token,
        marked: marked.iter().map(|t| t.to_string()).collect(),
        enabled,
    }
}

fn stops(actions: &[ControllerAction], delete: bool) -> Vec<(BrokerId, TopicPartition)> {
    actions
        .iter()
        .filter_map(|a| match a {
            ControllerAction::StopReplica {
                replica,
                partition,
                delete: d,
            } if *d == delete => Some((*replica, partition.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_marked_topic_is_announced_gone_its_replicas_stopped_then_deleted_then_its_znodes_removed() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2]);
    let actions = run_flow(&mut core, &mut c, listed(10, &["t", "gone"], true));
    // The unknown topic's marker goes first.
    assert_eq!(
        actions[0],
        ControllerAction::RemoveDeleteMarkers {
            token: 10,
            topics: vec!["gone".into()]
        }
    );
    // Every broker told the partitions are going, in a batch of its own.
    let tell = actions
        .iter()
        .position(|a| {
            *a == ControllerAction::UpdateMetadata {
                brokers: ids(&[1, 2]),
                partitions: vec![tp(0), tp(1)],
            }
        })
        .expect("UpdateMetadata");
    assert!(matches!(
        actions[tell + 1],
        ControllerAction::SendBatch { .. }
    ));
    // Stopped (without delete) before deleted, in separate batches.
    let first_delete = actions
        .iter()
        .position(|a| matches!(a, ControllerAction::StopReplica { delete: true, .. }))
        .unwrap();
    let last_stop = actions
        .iter()
        .rposition(|a| matches!(a, ControllerAction::StopReplica { delete: false, .. }))
        .unwrap();
    assert!(last_stop < first_delete);
    assert!(actions[last_stop..first_delete]
        .iter()
        .any(|a| matches!(a, ControllerAction::SendBatch { .. })));
    let expected: Vec<(BrokerId, TopicPartition)> = vec![
        (BrokerId(1), tp(0)),
        (BrokerId(2), tp(0)),
        (BrokerId(1), tp(1)),
        (BrokerId(2), tp(1)),
    ];
    let mut deletes = stops(&actions, true);
    deletes.sort_by_key(|(b, p)| (p.partition, b.0));
    assert_eq!(deletes, expected);
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 10 })
    );
    for p in 0..2 {
        assert_eq!(c.partition_states.get(&tp(p)), PartitionState::NonExistent);
        assert_eq!(
            c.replica_states.get(&tp(p), BrokerId(2)),
            ReplicaState::DeletionStarted
        );
    }
    assert!(c.topic_ids.contains_key("t"));
    assert_eq!(core.waiting(), 0);

    // Broker 1 answers: not yet complete.
    let ok = |b: i32| ControllerEvent::DeletionAnswer {
        token: 20 + b as u64,
        broker: BrokerId(b),
        errors: vec![(tp(0), ErrorCode::NONE), (tp(1), ErrorCode::NONE)],
    };
    let actions = run_flow(&mut core, &mut c, ok(1));
    assert!(!actions
        .iter()
        .any(|a| matches!(a, ControllerAction::RemoveTopicZnodes { .. })));
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(1)),
        ReplicaState::DeletionSuccessful
    );
    // Broker 2 answers: every replica deleted, the znodes go, the topic
    // is forgotten.
    let actions = run_flow(&mut core, &mut c, ok(2));
    assert!(actions.contains(&ControllerAction::RemoveTopicZnodes {
        token: 22,
        topic: "t".into()
    }));
    assert!(!c.topic_ids.contains_key("t"));
    assert!(c.assignments.is_empty() && c.leadership.is_empty());
    assert!(c.topics_to_delete.is_empty());
    assert_eq!(core.waiting(), 0);
}

#[test]
fn a_replica_on_a_dead_broker_makes_the_topic_wait_and_its_return_resumes_it() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1]);
    // Broker 2 died: its replicas went Offline.
    for p in 0..2 {
        let _ = c
            .replica_states
            .transition(&tp(p), BrokerId(2), ReplicaState::Offline);
    }
    let actions = run_flow(&mut core, &mut c, listed(10, &["t"], true));
    // Only the live replicas are deleted.
    let deletes = stops(&actions, true);
    assert_eq!(deletes, vec![(BrokerId(1), tp(0)), (BrokerId(1), tp(1))]);
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::DeletionIneligible
    );
    assert!(c.ineligible_for_deletion.contains("t"));
    // Broker 1's deletions done: the topic still waits for broker 2.
    let answer = ControllerEvent::DeletionAnswer {
        token: 11,
        broker: BrokerId(1),
        errors: vec![(tp(0), ErrorCode::NONE), (tp(1), ErrorCode::NONE)],
    };
    let actions = run_flow(&mut core, &mut c, answer);
    assert!(stops(&actions, true).is_empty());
    assert!(c.topic_ids.contains_key("t"));
    // Broker 2 back: its replicas retried and deleted.
    c.ineligible_for_deletion.clear();
    let mut back = registered(&[1, 2]);
    c.live_brokers = std::mem::take(&mut back.live_brokers);
    let actions = run_flow(
        &mut core,
        &mut c,
        ControllerEvent::ResumeDeletions { token: 12 },
    );
    assert_eq!(
        stops(&actions, false),
        vec![(BrokerId(2), tp(0)), (BrokerId(2), tp(1))]
    );
    assert_eq!(
        stops(&actions, true),
        vec![(BrokerId(2), tp(0)), (BrokerId(2), tp(1))]
    );
    assert_eq!(
        actions.last(),
        Some(&ControllerAction::FlowDone { token: 12 })
    );
}

#[test]
fn a_failed_deletion_makes_the_topic_ineligible() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2]);
    run_flow(&mut core, &mut c, listed(10, &["t"], true));
    let answer = ControllerEvent::DeletionAnswer {
        token: 11,
        broker: BrokerId(2),
        errors: vec![
            (tp(0), ErrorCode::KAFKA_STORAGE_ERROR),
            (tp(1), ErrorCode::NONE),
        ],
    };
    run_flow(&mut core, &mut c, answer);
    assert_eq!(
        c.replica_states.get(&tp(0), BrokerId(2)),
        ReplicaState::DeletionIneligible
    );
    assert_eq!(
        c.replica_states.get(&tp(1), BrokerId(2)),
        ReplicaState::DeletionSuccessful
    );
    assert!(c.ineligible_for_deletion.contains("t"));
    // An answer for a replica not in deletion changes nothing.
    let stray = ControllerEvent::DeletionAnswer {
        token: 12,
        broker: BrokerId(2),
        errors: vec![(tp(0), ErrorCode::NONE)],
    };
    assert_eq!(
        run_flow(&mut core, &mut c, stray),
        vec![ControllerAction::FlowDone { token: 12 }]
    );
}

/// `delete.topic.enable=false` (the listing's `enabled`, from the
/// controller's settings): Kafka's `TopicDeletionManager` removes the
/// markers and deletes nothing.
#[test]
fn with_delete_topic_enable_false_the_markers_are_removed_and_nothing_is_deleted() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2]);
    let actions = run_flow(&mut core, &mut c, listed(10, &["t"], false));
    assert_eq!(
        actions,
        vec![
            ControllerAction::RemoveDeleteMarkers {
                token: 10,
                topics: vec!["t".into()]
            },
            ControllerAction::FlowDone { token: 10 },
        ]
    );
    assert!(c.topics_to_delete.is_empty());
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::Online);
}

#[test]
fn a_topic_being_reassigned_waits_for_the_move() {
    let mut core = ControllerCore::new();
    let mut c = ctx(&[1, 2]);
    c.reassignments.insert(tp(0), Default::default());
    let actions = run_flow(&mut core, &mut c, listed(10, &["t"], true));
    assert!(c.ineligible_for_deletion.contains("t"));
    assert!(stops(&actions, true).is_empty());
    assert_eq!(c.partition_states.get(&tp(0)), PartitionState::Online);
}

#[test]
fn not_controller_nothing_is_decided() {
    let mut core = ControllerCore::new();
    assert_eq!(
        core.on_event(None, 0, listed(10, &["t"], true)),
        vec![ControllerAction::FlowDone { token: 10 }]
    );
}
