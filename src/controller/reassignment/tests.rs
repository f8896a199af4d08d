use super::*;
use crate::controller::brokers::LiveBroker;
use crate::zk::paths::BrokerIdZNode;
use uuid::Uuid;

fn ids(v: &[i32]) -> Vec<BrokerId> {
    v.iter().copied().map(BrokerId).collect()
}

fn ctx(live: &[i32]) -> ControllerContext {
    let mut ctx = ControllerContext {
        live_brokers: live
            .iter()
            .map(|&id| LiveBroker {
                id: BrokerId(id),
                epoch: 10,
                registration: BrokerIdZNode::plaintext("h", 9000 + id, 1),
            })
            .collect(),
        ..Default::default()
    };
    ctx.add_topic("t", Uuid::from_u128(7));
    for p in 0..2 {
        ctx.assignments
            .insert(TopicPartition::new("t", p), ids(&[0, 1, 2]));
    }
    ctx
}

#[test]
fn reassign_to_builds_kafkas_full_set_adding_and_removing() {
    let a = ReplicaAssignment::settled(ids(&[0, 1, 2]));
    let moved = a.reassign_to(&ids(&[1, 2, 3]));
    assert_eq!(moved.replicas, ids(&[1, 2, 3, 0]));
    assert_eq!(moved.adding, ids(&[3]));
    assert_eq!(moved.removing, ids(&[0]));
    assert_eq!(moved.origin(), ids(&[1, 2, 0]));
    assert_eq!(moved.target(), ids(&[1, 2, 3]));
    assert!(moved.is_being_reassigned());
    // A second reassignment while moving starts from the origin again.
    let again = moved.reassign_to(&ids(&[4, 5, 6]));
    assert_eq!(again.replicas, ids(&[4, 5, 6, 1, 2, 0]));
    assert_eq!(again.adding, ids(&[4, 5, 6]));
    assert_eq!(again.removing, ids(&[1, 2, 0]));
    // Back to the origin: settled (a cancellation).
    let cancelled = moved.reassign_to(&moved.origin());
    assert!(!cancelled.is_being_reassigned());
    assert_eq!(cancelled.replicas, ids(&[1, 2, 0]));
}

#[test]
fn completion_needs_every_target_replica_in_the_isr() {
    let moved = ReplicaAssignment::settled(ids(&[0, 1, 2])).reassign_to(&ids(&[1, 2, 3]));
    assert!(!is_complete(&moved, &ids(&[0, 1, 2])));
    assert!(!is_complete(&moved, &ids(&[1, 3])));
    assert!(is_complete(&moved, &ids(&[0, 3, 2, 1])));
    assert!(is_complete(&ReplicaAssignment::settled(ids(&[0])), &[]));
}

#[test]
fn targets_are_validated_as_kafka_does() {
    let live: BTreeSet<BrokerId> = ids(&[0, 1, 2, 3]).into_iter().collect();
    let cur = ReplicaAssignment::settled(ids(&[0, 1, 2]));
    let code = |t: &[i32]| validate_target(&cur, &ids(t), &live).map_err(|e| e.0);
    assert_eq!(code(&[1, 2, 3]), Ok(()));
    assert_eq!(code(&[]), Err(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
    assert_eq!(code(&[1, 1, 3]), Err(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
    assert_eq!(code(&[1, -1]), Err(ErrorCode::INVALID_REPLICA_ASSIGNMENT));
    let (c, m) = validate_target(&cur, &ids(&[1, 9]), &live).unwrap_err();
    assert_eq!(c, ErrorCode::INVALID_REPLICA_ASSIGNMENT);
    assert!(m.contains("not alive") && m.contains("[9]"), "{m}");
    // A dead broker already among the replicas may stay.
    let live2: BTreeSet<BrokerId> = ids(&[1, 2, 3]).into_iter().collect();
    assert_eq!(
        validate_target(&cur, &ids(&[0, 3]), &live2).map_err(|e| e.0),
        Ok(())
    );
}

#[test]
fn plan_refuses_unknown_deleting_and_idle_cancellations() {
    let mut c = ctx(&[0, 1, 2, 3]);
    let t0 = TopicPartition::new("t", 0);
    let t1 = TopicPartition::new("t", 1);
    let t9 = TopicPartition::new("t", 9);
    let asked = BTreeMap::from([
        (t0.clone(), Some(ids(&[1, 2, 3]))),
        (t1.clone(), None),
        (t9.clone(), Some(ids(&[1]))),
    ]);
    let p = plan(&c, &asked, true);
    assert_eq!(p.start[&t0].adding, ids(&[3]));
    assert_eq!(
        p.refused[&t1].0,
        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
        "{p:?}"
    );
    assert_eq!(p.refused[&t9].0, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    // Cancelling a moving partition goes back to its origin.
    let moved = full_assignment(&c, &t1).reassign_to(&ids(&[3]));
    set_full_assignment(&mut c, &t1, moved);
    let p = plan(&c, &BTreeMap::from([(t1.clone(), None)]), true);
    assert_eq!(p.start[&t1], ReplicaAssignment::settled(ids(&[0, 1, 2])));
    // A topic being deleted.
    c.topics_to_delete.insert("t".into());
    let p = plan(&c, &BTreeMap::from([(t0.clone(), Some(ids(&[3])))]), true);
    assert_eq!(p.refused[&t0].0, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    // The ZooKeeper path does not validate (a dead target is taken).
    c.topics_to_delete.clear();
    let p = plan(&c, &BTreeMap::from([(t0.clone(), Some(ids(&[8])))]), false);
    assert_eq!(p.start[&t0].adding, ids(&[8]));
}

#[test]
fn listing_and_the_topic_znode_show_the_moving_partitions() {
    let mut c = ctx(&[0, 1, 2, 3]);
    let t0 = TopicPartition::new("t", 0);
    let t1 = TopicPartition::new("t", 1);
    assert!(list_ongoing(&c, None).is_empty());
    let moved = full_assignment(&c, &t0).reassign_to(&ids(&[1, 2, 3]));
    set_full_assignment(&mut c, &t0, moved);
    let all = list_ongoing(&c, None);
    assert_eq!(all.len(), 1);
    assert_eq!(all[&t0].removing, ids(&[0]));
    let asked = BTreeSet::from([t1.clone()]);
    assert!(list_ongoing(&c, Some(&asked)).is_empty());
    let z = topic_znode(&c, "t").unwrap();
    assert_eq!(z.partitions[&0], ids(&[1, 2, 3, 0]));
    assert_eq!(z.partitions[&1], ids(&[0, 1, 2]));
    assert_eq!(z.adding_replicas, BTreeMap::from([(0, ids(&[3]))]));
    assert_eq!(z.removing_replicas, BTreeMap::from([(0, ids(&[0]))]));
    // Completed: settled again, nothing moving.
    set_full_assignment(&mut c, &t0, ReplicaAssignment::settled(ids(&[1, 2, 3])));
    assert!(c.reassignments.is_empty());
    let z = topic_znode(&c, "t").unwrap();
    assert!(z.adding_replicas.is_empty() && z.removing_replicas.is_empty());
    assert!(topic_znode(&c, "nope").is_none());
}
