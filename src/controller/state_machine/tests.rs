use super::*;

use PartitionState as P;
use ReplicaState as R;

const ALL_PARTITION: [PartitionState; 4] = [P::NonExistent, P::New, P::Online, P::Offline];
const ALL_REPLICA: [ReplicaState; 7] = [
    R::New,
    R::Online,
    R::Offline,
    R::DeletionStarted,
    R::DeletionSuccessful,
    R::DeletionIneligible,
    R::NonExistent,
];

/// Every (from, to) pair of partition states and whether Kafka 3.9's
/// `PartitionStateMachine.scala` allows it, written out by hand.
const PARTITION_TABLE: [(PartitionState, PartitionState, bool); 16] = [
    (P::NonExistent, P::NonExistent, false),
    (P::NonExistent, P::New, true),
    (P::NonExistent, P::Online, false),
    (P::NonExistent, P::Offline, false),
    (P::New, P::NonExistent, false),
    (P::New, P::New, false),
    (P::New, P::Online, true),
    (P::New, P::Offline, true),
    (P::Online, P::NonExistent, false),
    (P::Online, P::New, false),
    (P::Online, P::Online, true),
    (P::Online, P::Offline, true),
    (P::Offline, P::NonExistent, true),
    (P::Offline, P::New, false),
    (P::Offline, P::Online, true),
    (P::Offline, P::Offline, true),
];

/// Every (from, to) pair of replica states, from Kafka 3.9's
/// `ReplicaStateMachine.scala`, written out by hand.
const REPLICA_TABLE: [(ReplicaState, ReplicaState, bool); 49] = [
    (R::New, R::New, false),
    (R::New, R::Online, true),
    (R::New, R::Offline, true),
    (R::New, R::DeletionStarted, false),
    (R::New, R::DeletionSuccessful, false),
    (R::New, R::DeletionIneligible, false),
    (R::New, R::NonExistent, false),
    (R::Online, R::New, false),
    (R::Online, R::Online, true),
    (R::Online, R::Offline, true),
    (R::Online, R::DeletionStarted, false),
    (R::Online, R::DeletionSuccessful, false),
    (R::Online, R::DeletionIneligible, false),
    (R::Online, R::NonExistent, false),
    (R::Offline, R::New, false),
    (R::Offline, R::Online, true),
    (R::Offline, R::Offline, true),
    (R::Offline, R::DeletionStarted, true),
    (R::Offline, R::DeletionSuccessful, false),
    (R::Offline, R::DeletionIneligible, true),
    (R::Offline, R::NonExistent, false),
    (R::DeletionStarted, R::New, false),
    (R::DeletionStarted, R::Online, false),
    (R::DeletionStarted, R::Offline, false),
    (R::DeletionStarted, R::DeletionStarted, false),
    (R::DeletionStarted, R::DeletionSuccessful, true),
    (R::DeletionStarted, R::DeletionIneligible, true),
    (R::DeletionStarted, R::NonExistent, false),
    (R::DeletionSuccessful, R::New, false),
    (R::DeletionSuccessful, R::Online, false),
    (R::DeletionSuccessful, R::Offline, false),
    (R::DeletionSuccessful, R::DeletionStarted, false),
    (R::DeletionSuccessful, R::DeletionSuccessful, false),
    (R::DeletionSuccessful, R::DeletionIneligible, false),
    (R::DeletionSuccessful, R::NonExistent, true),
    (R::DeletionIneligible, R::New, false),
    (R::DeletionIneligible, R::Online, true),
    (R::DeletionIneligible, R::Offline, true),
    (R::DeletionIneligible, R::DeletionStarted, false),
    (R::DeletionIneligible, R::DeletionSuccessful, false),
    (R::DeletionIneligible, R::DeletionIneligible, false),
    (R::DeletionIneligible, R::NonExistent, false),
    (R::NonExistent, R::New, true),
    (R::NonExistent, R::Online, false),
    (R::NonExistent, R::Offline, false),
    (R::NonExistent, R::DeletionStarted, false),
    (R::NonExistent, R::DeletionSuccessful, false),
    (R::NonExistent, R::DeletionIneligible, false),
    (R::NonExistent, R::NonExistent, false),
];

fn tp(topic: &str, p: i32) -> TopicPartition {
    TopicPartition::new(topic, p)
}

/// Drives a fresh partition to `s` along legal moves.
fn partition_in(states: &mut PartitionStates, t: &TopicPartition, s: PartitionState) {
    let path: &[PartitionState] = match s {
        P::NonExistent => &[],
        P::New => &[P::New],
        P::Online => &[P::New, P::Online],
        P::Offline => &[P::New, P::Offline],
    };
    for step in path {
        states.transition(t, *step).unwrap();
    }
    assert_eq!(states.get(t), s);
}

/// Drives a fresh replica to `s` along legal moves.
fn replica_in(states: &mut ReplicaStates, t: &TopicPartition, b: BrokerId, s: ReplicaState) {
    let path: &[ReplicaState] = match s {
        R::NonExistent => &[],
        R::New => &[R::New],
        R::Online => &[R::New, R::Online],
        R::Offline => &[R::New, R::Offline],
        R::DeletionStarted => &[R::New, R::Offline, R::DeletionStarted],
        R::DeletionSuccessful => &[
            R::New,
            R::Offline,
            R::DeletionStarted,
            R::DeletionSuccessful,
        ],
        R::DeletionIneligible => &[R::New, R::Offline, R::DeletionIneligible],
    };
    for step in path {
        states.transition(t, b, *step).unwrap();
    }
    assert_eq!(states.get(t, b), s);
}

#[test]
fn partition_table_covers_every_pair_once() {
    for from in ALL_PARTITION {
        for to in ALL_PARTITION {
            let rows = PARTITION_TABLE
                .iter()
                .filter(|(f, t, _)| *f == from && *t == to)
                .count();
            assert_eq!(rows, 1, "{from} -> {to}");
        }
    }
}

#[test]
fn replica_table_covers_every_pair_once() {
    for from in ALL_REPLICA {
        for to in ALL_REPLICA {
            let rows = REPLICA_TABLE
                .iter()
                .filter(|(f, t, _)| *f == from && *t == to)
                .count();
            assert_eq!(rows, 1, "{from} -> {to}");
        }
    }
}

#[test]
fn partition_transitions_follow_kafka_table_and_illegal_ones_change_nothing() {
    for (from, to, legal) in PARTITION_TABLE {
        assert_eq!(to.can_follow(from), legal, "can_follow {from} -> {to}");
        let mut states = PartitionStates::new();
        let t = tp("t", 0);
        partition_in(&mut states, &t, from);
        let before = states.len();
        let got = states.transition(&t, to);
        if legal {
            assert_eq!(got, Ok(()), "{from} -> {to}");
            assert_eq!(states.get(&t), to);
        } else {
            let err = got.unwrap_err();
            assert_eq!(err.what, "partition t-0");
            assert_eq!(err.from, from.to_string());
            assert_eq!(err.to, to.to_string());
            assert_eq!(states.get(&t), from, "{from} -> {to} changed the state");
            assert_eq!(states.len(), before);
        }
    }
}

#[test]
fn replica_transitions_follow_kafka_table_and_illegal_ones_change_nothing() {
    for (from, to, legal) in REPLICA_TABLE {
        assert_eq!(to.can_follow(from), legal, "can_follow {from} -> {to}");
        let mut states = ReplicaStates::new();
        let t = tp("t", 0);
        replica_in(&mut states, &t, BrokerId(3), from);
        let got = states.transition(&t, BrokerId(3), to);
        if legal {
            assert_eq!(got, Ok(()), "{from} -> {to}");
            assert_eq!(states.get(&t, BrokerId(3)), to);
        } else {
            let err = got.unwrap_err();
            assert_eq!(err.what, "replica 3 of t-0");
            assert_eq!(err.from, from.to_string());
            assert_eq!(err.to, to.to_string());
            assert_eq!(
                states.get(&t, BrokerId(3)),
                from,
                "{from} -> {to} changed it"
            );
        }
    }
}

#[test]
fn illegal_transition_message_uses_kafka_state_names() {
    let mut states = PartitionStates::new();
    let err = states.transition(&tp("foo", 2), P::Online).unwrap_err();
    assert_eq!(
        err.to_string(),
        "illegal state change of partition foo-2 from NonExistentPartition to OnlinePartition"
    );
    let mut replicas = ReplicaStates::new();
    let err = replicas
        .transition(&tp("foo", 2), BrokerId(1), R::DeletionStarted)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "illegal state change of replica 1 of foo-2 from NonExistentReplica to ReplicaDeletionStarted"
    );
}

#[test]
fn moving_to_non_existent_forgets_the_entry() {
    let mut states = PartitionStates::new();
    let t = tp("t", 0);
    partition_in(&mut states, &t, P::Offline);
    assert_eq!(states.len(), 1);
    states.transition(&t, P::NonExistent).unwrap();
    assert!(states.is_empty());
    assert_eq!(states.get(&t), P::NonExistent);
    // And it can be created again.
    states.transition(&t, P::New).unwrap();

    let mut replicas = ReplicaStates::new();
    replica_in(&mut replicas, &t, BrokerId(1), R::DeletionSuccessful);
    replicas
        .transition(&t, BrokerId(1), R::NonExistent)
        .unwrap();
    assert!(!replicas.any_in_state("t", R::DeletionSuccessful));
    assert!(replicas.replicas_in_state("t", R::NonExistent).is_empty());
}

#[test]
fn partitions_in_state_are_sorted_and_remove_topic_drops_only_that_topic() {
    let mut states = PartitionStates::new();
    for (topic, p) in [("b", 1), ("a", 10), ("a", 2), ("b", 0), ("ab", 0)] {
        partition_in(&mut states, &tp(topic, p), P::Online);
    }
    partition_in(&mut states, &tp("a", 3), P::Offline);
    assert_eq!(
        states.in_state(P::Online),
        vec![tp("a", 2), tp("a", 10), tp("ab", 0), tp("b", 0), tp("b", 1)]
    );
    assert_eq!(states.in_state(P::Offline), vec![tp("a", 3)]);
    assert!(states.in_state(P::NonExistent).is_empty());
    states.remove_topic("a");
    assert_eq!(states.len(), 3);
    assert_eq!(states.get(&tp("a", 3)), P::NonExistent);
    assert_eq!(states.get(&tp("ab", 0)), P::Online);
}

#[test]
fn replica_queries_are_per_topic_and_sorted() {
    let mut r = ReplicaStates::new();
    replica_in(&mut r, &tp("t", 1), BrokerId(2), R::Online);
    replica_in(&mut r, &tp("t", 0), BrokerId(5), R::Online);
    replica_in(&mut r, &tp("t", 0), BrokerId(-1), R::Online);
    replica_in(&mut r, &tp("t", 1), BrokerId(1), R::DeletionStarted);
    // Neighbouring topic names sort next to "t" but are not part of it.
    replica_in(&mut r, &tp("s", 0), BrokerId(1), R::DeletionStarted);
    replica_in(&mut r, &tp("tt", 0), BrokerId(1), R::DeletionSuccessful);

    assert_eq!(
        r.replicas_in_state("t", R::Online),
        vec![
            (tp("t", 0), BrokerId(-1)),
            (tp("t", 0), BrokerId(5)),
            (tp("t", 1), BrokerId(2)),
        ]
    );
    assert_eq!(
        r.replicas_in_state("t", R::DeletionStarted),
        vec![(tp("t", 1), BrokerId(1))]
    );
    assert!(r.any_in_state("t", R::DeletionStarted));
    assert!(!r.any_in_state("t", R::DeletionSuccessful));
    assert!(!r.all_in_state("t", R::Online));
    assert!(r.all_in_state("tt", R::DeletionSuccessful));
    assert!(r.all_in_state("s", R::DeletionStarted));
}

#[test]
fn all_in_state_is_false_for_a_topic_without_replicas() {
    let mut r = ReplicaStates::new();
    assert!(!r.all_in_state("t", R::DeletionSuccessful));
    assert!(!r.any_in_state("t", R::DeletionSuccessful));
    replica_in(&mut r, &tp("t", 0), BrokerId(1), R::DeletionSuccessful);
    replica_in(&mut r, &tp("t", 0), BrokerId(2), R::DeletionSuccessful);
    assert!(r.all_in_state("t", R::DeletionSuccessful));
    r.remove_topic("t");
    assert!(!r.all_in_state("t", R::DeletionSuccessful));
    assert_eq!(r.get(&tp("t", 0), BrokerId(1)), R::NonExistent);
}

#[test]
fn topic_deletion_walk_matches_kafka_order() {
    // TopicDeletionManager's path for a replica on a live broker, and the
    // retry after a failed StopReplica.
    let t = tp("del", 0);
    let b = BrokerId(1);
    let mut r = ReplicaStates::new();
    replica_in(&mut r, &t, b, R::Online);
    for step in [
        R::Offline,
        R::DeletionStarted,
        R::DeletionIneligible,
        R::Offline,
        R::DeletionStarted,
        R::DeletionSuccessful,
        R::NonExistent,
    ] {
        r.transition(&t, b, step).unwrap();
    }
    assert_eq!(r.get(&t, b), R::NonExistent);
}
