use super::*;
use crate::metadata::leader_and_isr::StopReplicaPartition;
use crate::types::PartitionEpoch;

const ME: BrokerId = BrokerId(1);
const OWN_EPOCH: Option<i64> = Some(100);

fn b(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn part(topic: &str, partition: i32, leader: i32, leader_epoch: i32) -> LeaderAndIsrPartition {
    LeaderAndIsrPartition {
        topic: topic.into(),
        partition,
        controller_epoch: ControllerEpoch(1),
        leader: BrokerId(leader),
        leader_epoch: LeaderEpoch(leader_epoch),
        isr: b(&[1, 2]),
        partition_epoch: PartitionEpoch(0),
        replicas: b(&[1, 2]),
        adding_replicas: vec![],
        removing_replicas: vec![],
        is_new: false,
        leader_recovery_state: 0,
    }
}

fn lai(controller_epoch: i32, partitions: Vec<LeaderAndIsrPartition>) -> LeaderAndIsr {
    LeaderAndIsr {
        controller_id: BrokerId(2),
        controller_epoch: ControllerEpoch(controller_epoch),
        broker_epoch: 100,
        partitions,
        topic_ids: vec![("t".into(), Uuid::from_u128(7))],
        live_leaders: vec![],
    }
}

fn stop(controller_epoch: i32, parts: &[(i32, i32, bool)]) -> StopReplica {
    StopReplica {
        controller_id: BrokerId(2),
        controller_epoch: ControllerEpoch(controller_epoch),
        broker_epoch: 100,
        partitions: parts
            .iter()
            .map(|&(partition, epoch, delete)| StopReplicaPartition {
                topic: "t".into(),
                partition,
                leader_epoch: LeaderEpoch(epoch),
                delete,
            })
            .collect(),
    }
}

/// Hosting t-0 (leader, epoch 5) and t-1 (follower of 2, epoch 3) at
/// controller epoch 2.
fn hosting() -> HostedPartitions {
    let mut h = HostedPartitions::new();
    let r = h.on_leader_and_isr(
        &lai(2, vec![part("t", 0, 1, 5), part("t", 1, 2, 3)]),
        ME,
        OWN_EPOCH,
    );
    assert_eq!(r.error, ErrorCode::NONE);
    assert!(r.partitions.iter().all(|(_, _, e)| *e == ErrorCode::NONE));
    h
}

#[test]
fn an_accepted_request_hosts_leaders_and_followers_with_the_topic_id() {
    let h = hosting();
    assert_eq!(h.controller_epoch(), ControllerEpoch(2));
    let p0 = h.partition("t", 0).unwrap();
    assert_eq!(
        (p0.state.leader, p0.state.leader_epoch),
        (ME, LeaderEpoch(5))
    );
    assert_eq!(p0.topic_id, Some(Uuid::from_u128(7)));
    assert_eq!(h.partition("t", 1).unwrap().state.leader, BrokerId(2));
    let topics = h.topic_states();
    let t = &topics["t"];
    assert_eq!(t.topic_id, Uuid::from_u128(7));
    let ps: Vec<(i32, i32, i32)> = t
        .partitions
        .iter()
        .map(|p| (p.partition, p.leader.0, p.leader_epoch.0))
        .collect();
    assert_eq!(ps, [(0, 1, 5), (1, 2, 3)]);
    assert_eq!(t.partitions[0].isr, b(&[1, 2]));
    assert!(t.configs.is_empty());
}

#[test]
fn broker_epoch_fencing_follows_kafka() {
    // (request broker epoch, own epoch) → error
    let rows = [
        (100, Some(100), ErrorCode::NONE),
        (-1, Some(100), ErrorCode::NONE),
        (101, Some(100), ErrorCode::NONE),
        (99, Some(100), ErrorCode::STALE_BROKER_EPOCH),
        (99, None, ErrorCode::NONE),
    ];
    for (req_epoch, own, want) in rows {
        let mut h = HostedPartitions::new();
        let mut req = lai(1, vec![part("t", 0, 1, 0)]);
        req.broker_epoch = req_epoch;
        let r = h.on_leader_and_isr(&req, ME, own);
        assert_eq!(r.error, want, "{req_epoch} vs {own:?}");
        assert_eq!(h.is_empty(), want != ErrorCode::NONE);
        if want != ErrorCode::NONE {
            assert_eq!(
                r.partitions,
                [("t".into(), 0, want)],
                "every partition named"
            );
        }
        let mut s = stop(1, &[(0, -1, false)]);
        s.broker_epoch = req_epoch;
        let (r, _) = h.on_stop_replica(&s, own);
        assert_eq!(r.error, want);
    }
}

#[test]
fn an_older_controller_epoch_is_refused_whole_and_changes_nothing() {
    let mut h = hosting();
    let before = h.clone();
    let r = h.on_leader_and_isr(
        &lai(1, vec![part("t", 0, 2, 9), part("t", 5, 1, 0)]),
        ME,
        OWN_EPOCH,
    );
    assert_eq!(r.error, ErrorCode::STALE_CONTROLLER_EPOCH);
    assert_eq!(
        r.partitions,
        [
            ("t".into(), 0, ErrorCode::STALE_CONTROLLER_EPOCH),
            ("t".into(), 5, ErrorCode::STALE_CONTROLLER_EPOCH)
        ]
    );
    assert_eq!(h, before);
    let (r, delete) = h.on_stop_replica(&stop(1, &[(0, -2, true)]), OWN_EPOCH);
    assert_eq!(
        r,
        PartitionErrors::top_level(ErrorCode::STALE_CONTROLLER_EPOCH)
    );
    assert!(delete.is_empty());
    assert_eq!(h, before);
    // The same epoch is not stale; a newer one becomes the fence.
    let r = h.on_leader_and_isr(&lai(3, vec![]), ME, OWN_EPOCH);
    assert_eq!(r.error, ErrorCode::NONE);
    assert_eq!(h.controller_epoch(), ControllerEpoch(3));
    // UpdateMetadata shares the fence.
    h.observe_controller_epoch(ControllerEpoch(6));
    h.observe_controller_epoch(ControllerEpoch(4));
    assert_eq!(
        h.on_leader_and_isr(&lai(5, vec![]), ME, OWN_EPOCH).error,
        ErrorCode::STALE_CONTROLLER_EPOCH
    );
}

#[test]
fn leader_epoch_rules_follow_become_leader_or_follower() {
    // (leader, request leader epoch for t-0 hosted at 5 as leader) → error, hosted epoch after
    let rows = [
        (1, 6, ErrorCode::NONE, 6),
        (2, 6, ErrorCode::NONE, 6),
        (1, 4, ErrorCode::STALE_CONTROLLER_EPOCH, 5),
        // Same epoch, same topic id known: nothing to do.
        (1, 5, ErrorCode::STALE_CONTROLLER_EPOCH, 5),
        (2, 5, ErrorCode::STALE_CONTROLLER_EPOCH, 5),
    ];
    for (leader, epoch, want, after) in rows {
        let mut h = hosting();
        let r = h.on_leader_and_isr(&lai(2, vec![part("t", 0, leader, epoch)]), ME, OWN_EPOCH);
        assert_eq!(r.error, ErrorCode::NONE);
        assert_eq!(
            r.partitions,
            [("t".into(), 0, want)],
            "leader {leader} epoch {epoch}"
        );
        let p = h.partition("t", 0).unwrap();
        assert_eq!(p.state.leader_epoch, LeaderEpoch(after));
        if want == ErrorCode::NONE {
            assert_eq!(p.state.leader, BrokerId(leader));
        }
    }
}

#[test]
fn a_new_partition_needs_an_epoch_above_minus_one() {
    let mut h = HostedPartitions::new();
    let r = h.on_leader_and_isr(
        &lai(1, vec![part("t", 0, 1, 0), part("t", 1, 1, -1)]),
        ME,
        OWN_EPOCH,
    );
    assert_eq!(r.partitions[0].2, ErrorCode::NONE);
    assert_eq!(r.partitions[1].2, ErrorCode::STALE_CONTROLLER_EPOCH);
    assert_eq!(h.len(), 1);
}

#[test]
fn a_broker_outside_the_replicas_is_unknown_topic_or_partition() {
    let mut h = HostedPartitions::new();
    let mut p = part("t", 0, 2, 1);
    p.replicas = b(&[2, 3]);
    let r = h.on_leader_and_isr(&lai(1, vec![p]), ME, OWN_EPOCH);
    assert_eq!(
        r.partitions,
        [("t".into(), 0, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)]
    );
    assert!(h.is_empty());
}

#[test]
fn a_different_topic_id_is_inconsistent() {
    let mut h = hosting();
    let mut req = lai(2, vec![part("t", 0, 1, 9)]);
    req.topic_ids = vec![("t".into(), Uuid::from_u128(8))];
    let r = h.on_leader_and_isr(&req, ME, OWN_EPOCH);
    assert_eq!(
        r.partitions,
        [("t".into(), 0, ErrorCode::INCONSISTENT_TOPIC_ID)]
    );
    assert_eq!(
        h.partition("t", 0).unwrap().state.leader_epoch,
        LeaderEpoch(5)
    );
    // No id in the request (v0–4) is consistent with any.
    req.topic_ids.clear();
    let r = h.on_leader_and_isr(&req, ME, OWN_EPOCH);
    assert_eq!(r.partitions[0].2, ErrorCode::NONE);
    assert_eq!(
        h.partition("t", 0).unwrap().topic_id,
        Some(Uuid::from_u128(7))
    );
}

#[test]
fn the_same_epoch_assigns_a_missing_topic_id_or_downgrades_a_follower() {
    let mut h = HostedPartitions::new();
    let mut req = lai(1, vec![part("t", 0, 1, 2), part("t", 1, 2, 2)]);
    req.topic_ids.clear();
    h.on_leader_and_isr(&req, ME, OWN_EPOCH);
    assert_eq!(h.partition("t", 0).unwrap().topic_id, None);
    assert_eq!(h.topic_states()["t"].topic_id, Uuid::nil());
    req.topic_ids = vec![("t".into(), Uuid::from_u128(7))];
    let r = h.on_leader_and_isr(&req, ME, OWN_EPOCH);
    assert!(r.partitions.iter().all(|(_, _, e)| *e == ErrorCode::NONE));
    assert_eq!(
        h.partition("t", 1).unwrap().topic_id,
        Some(Uuid::from_u128(7))
    );
    // Back without ids at the same epoch: a follower answers NONE, a leader
    // has nothing to change.
    req.topic_ids.clear();
    let r = h.on_leader_and_isr(&req, ME, OWN_EPOCH);
    assert_eq!(r.partitions[0].2, ErrorCode::STALE_CONTROLLER_EPOCH);
    assert_eq!(r.partitions[1].2, ErrorCode::NONE);
    assert_eq!(
        h.partition("t", 1).unwrap().topic_id,
        Some(Uuid::from_u128(7))
    );
}

#[test]
fn stop_replica_leader_epoch_rules() {
    // (request epoch against t-0 hosted at 5, delete) → error, still hosted, deleted
    let rows = [
        (-2, true, ErrorCode::NONE, false, true),
        (-1, false, ErrorCode::NONE, false, false),
        (5, false, ErrorCode::NONE, false, false),
        (6, true, ErrorCode::NONE, false, true),
        (4, true, ErrorCode::FENCED_LEADER_EPOCH, true, false),
    ];
    for (epoch, delete, want, hosted, deleted) in rows {
        let mut h = hosting();
        let (r, to_delete) = h.on_stop_replica(&stop(2, &[(0, epoch, delete)]), OWN_EPOCH);
        assert_eq!(r.error, ErrorCode::NONE);
        assert_eq!(r.partitions, [("t".into(), 0, want)], "epoch {epoch}");
        assert_eq!(h.partition("t", 0).is_some(), hosted);
        assert_eq!(to_delete == [("t".to_string(), 0)], deleted);
        assert!(h.partition("t", 1).is_some(), "others stay");
    }
}

#[test]
fn stopping_a_partition_not_hosted_succeeds_and_deletes_leftovers_when_asked() {
    let mut h = HostedPartitions::new();
    let (r, delete) = h.on_stop_replica(&stop(1, &[(4, 3, true), (5, 3, false)]), OWN_EPOCH);
    assert!(r.partitions.iter().all(|(_, _, e)| *e == ErrorCode::NONE));
    assert_eq!(delete, [("t".to_string(), 4)]);
    assert_eq!(h.controller_epoch(), ControllerEpoch(1));
}

#[test]
fn configs_are_kept_for_hosted_topics_only() {
    let mut h = hosting();
    assert_eq!(h.topics_missing_configs(), ["t"]);
    h.set_topic_configs("t", [("retention.ms".to_string(), "5".to_string())].into());
    h.set_topic_configs("other", BTreeMap::new());
    assert!(h.topics_missing_configs().is_empty());
    assert_eq!(h.topic_states()["t"].configs["retention.ms"], "5");
    h.on_stop_replica(&stop(2, &[(0, -1, false), (1, -1, false)]), OWN_EPOCH);
    assert!(h.is_empty());
    h.on_leader_and_isr(&lai(2, vec![part("t", 0, 1, 9)]), ME, OWN_EPOCH);
    assert_eq!(h.topics_missing_configs(), ["t"], "read again");
}

#[test]
fn a_committed_isr_change_replaces_the_hosted_isr_only_at_the_same_leader_epoch() {
    let mut h = hosting();
    assert!(h.isr_committed("t", 0, LeaderEpoch(5), &b(&[1]), PartitionEpoch(4), 0));
    let p = &h.partition("t", 0).unwrap().state;
    assert_eq!(p.isr, b(&[1]));
    assert_eq!(p.partition_epoch, PartitionEpoch(4));
    // A newer LeaderAndIsr won meanwhile: the answer is stale.
    assert!(!h.isr_committed("t", 0, LeaderEpoch(4), &b(&[1, 2]), PartitionEpoch(5), 0));
    assert_eq!(h.partition("t", 0).unwrap().state.isr, b(&[1]));
    assert!(!h.isr_committed("t", 9, LeaderEpoch(5), &b(&[1]), PartitionEpoch(5), 0));
    h.check_invariants();
}

#[test]
fn a_committed_isr_change_records_the_answers_recovery_state() {
    let mut h = HostedPartitions::new();
    let mut unclean = part("t", 0, 1, 6);
    unclean.leader_recovery_state = 1;
    unclean.isr = b(&[1]);
    h.on_leader_and_isr(&lai(2, vec![unclean]), ME, OWN_EPOCH);
    assert_eq!(h.partition("t", 0).unwrap().state.leader_recovery_state, 1);
    assert!(h.isr_committed("t", 0, LeaderEpoch(6), &b(&[1, 2]), PartitionEpoch(1), 0));
    assert_eq!(h.partition("t", 0).unwrap().state.leader_recovery_state, 0);
}
