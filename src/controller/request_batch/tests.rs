use super::*;
use crate::controller::brokers::LiveBroker;
use crate::controller::context::Leadership;
use crate::controller::leader_election::{LeaderIsr, LeaderRecoveryState};
use crate::types::PartitionEpoch;
use crate::zk::paths::BrokerIdZNode;

fn ctx() -> ControllerContext {
    let mut ctx = ControllerContext {
        epoch: 4,
        live_brokers: [1, 2]
            .iter()
            .map(|&id| LiveBroker {
                id: BrokerId(id),
                epoch: 50 + i64::from(id),
                registration: BrokerIdZNode::plaintext("10.0.0.1", 9090 + id, 1),
            })
            .collect(),
        ..Default::default()
    };
    ctx.add_topic("t", uuid::Uuid::from_u128(9));
    for (p, leader) in [(0, 1), (1, 2)] {
        let tp = TopicPartition::new("t", p);
        ctx.assignments
            .insert(tp.clone(), vec![BrokerId(1), BrokerId(2), BrokerId(3)]);
        ctx.leadership.insert(
            tp,
            Leadership {
                leader_isr: LeaderIsr {
                    leader: BrokerId(leader),
                    leader_epoch: LeaderEpoch(7),
                    isr: vec![BrokerId(1), BrokerId(2)],
                    leader_recovery_state: LeaderRecoveryState::Recovered,
                    partition_epoch: PartitionEpoch(3),
                },
                controller_epoch: ControllerEpoch(4),
            },
        );
    }
    ctx
}

#[test]
fn leader_and_isr_goes_to_the_named_replicas_and_every_broker_learns_the_partition() {
    let ctx = ctx();
    let t0 = TopicPartition::new("t", 0);
    let mut batch = RequestBatch::new();
    batch.add_leader_and_isr(&ctx, [BrokerId(1), BrokerId(3)], &t0, true);
    batch.add_leader_and_isr(&ctx, [BrokerId(1)], &t0, false);
    let out = batch.build(&ctx, BrokerId(1), "PLAINTEXT");
    // Broker 3 is not registered: nothing for it.
    let targets: Vec<BrokerId> = out.iter().map(|(b, _)| *b).collect();
    assert_eq!(targets, vec![BrokerId(1), BrokerId(1), BrokerId(2)]);
    let ControllerRequest::LeaderAndIsr(l) = &out[0].1 else {
        panic!("{:?}", out[0])
    };
    assert_eq!((l.controller_epoch.0, l.broker_epoch), (4, 51));
    assert_eq!(l.partitions.len(), 1);
    let p = &l.partitions[0];
    assert!(p.is_new, "isNew stays once asked in the batch");
    assert_eq!(
        (p.leader, p.leader_epoch.0, p.partition_epoch.0),
        (BrokerId(1), 7, 3)
    );
    assert_eq!(
        l.topic_ids,
        vec![("t".to_string(), uuid::Uuid::from_u128(9))]
    );
    assert_eq!(
        l.live_leaders,
        vec![(BrokerId(1), "10.0.0.1".to_string(), 9091)]
    );
    for (b, r) in &out[1..] {
        let ControllerRequest::UpdateMetadata(u) = r else {
            panic!("{r:?}")
        };
        assert_eq!(u.broker_epoch, 50 + i64::from(b.0));
        assert_eq!(u.partition_states.len(), 1);
        assert_eq!(u.partition_states[0].offline_replicas, vec![BrokerId(3)]);
        assert_eq!(u.live_brokers.len(), 2);
    }
}

#[test]
fn update_metadata_for_all_carries_every_partition_and_deleted_topics_lead_with_minus_two() {
    let mut ctx = ctx();
    ctx.topics_to_delete.insert("t".into());
    let mut batch = RequestBatch::new();
    batch.add_update_metadata_all([BrokerId(2)]);
    batch.add_stop_replica([BrokerId(2)], &TopicPartition::new("t", 1), false);
    batch.add_stop_replica([BrokerId(2)], &TopicPartition::new("t", 1), true);
    let out = batch.build(&ctx, BrokerId(1), "PLAINTEXT");
    assert_eq!(out.len(), 2);
    let ControllerRequest::UpdateMetadata(u) = &out[0].1 else {
        panic!()
    };
    assert_eq!(u.partition_states.len(), 2);
    assert!(u
        .partition_states
        .iter()
        .all(|p| p.leader == LEADER_DURING_DELETE));
    let ControllerRequest::StopReplica(s) = &out[1].1 else {
        panic!()
    };
    assert_eq!(s.partitions.len(), 1);
    assert!(s.partitions[0].delete, "a delete asked once stays asked");
    assert_eq!(s.partitions[0].leader_epoch.0, -2);
    assert_eq!(out[1].1.deleting(), vec![TopicPartition::new("t", 1)]);
    assert!(RequestBatch::new()
        .build(&ctx, BrokerId(1), "PLAINTEXT")
        .is_empty());
}
