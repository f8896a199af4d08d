use super::*;
use crate::controller::brokers::LiveBroker;
use crate::controller::context::Leadership;
use crate::controller::leader_election::{LeaderIsr, LeaderRecoveryState};
use crate::types::{ControllerEpoch, LeaderEpoch, PartitionEpoch};
use crate::zk::paths::BrokerIdZNode;

/// Brokers 1–3 live; partitions of `t` given as (AR, leader, ISR).
fn ctx(parts: &[(&[i32], i32, &[i32])]) -> ControllerContext {
    let mut ctx = ControllerContext {
        live_brokers: [1, 2, 3]
            .iter()
            .map(|&id| LiveBroker {
                id: BrokerId(id),
                epoch: 10,
                registration: BrokerIdZNode::plaintext("127.0.0.1", 9090 + id, 1),
            })
            .collect(),
        ..Default::default()
    };
    ctx.add_topic("t", uuid::Uuid::from_u128(1));
    for (p, (ar, leader, isr)) in parts.iter().enumerate() {
        let tp = TopicPartition::new("t", p as i32);
        ctx.assignments
            .insert(tp.clone(), ar.iter().map(|&b| BrokerId(b)).collect());
        ctx.leadership.insert(
            tp,
            Leadership {
                leader_isr: LeaderIsr {
                    leader: BrokerId(*leader),
                    leader_epoch: LeaderEpoch(1),
                    isr: isr.iter().map(|&b| BrokerId(b)).collect(),
                    leader_recovery_state: LeaderRecoveryState::Recovered,
                    partition_epoch: PartitionEpoch(0),
                },
                controller_epoch: ControllerEpoch(1),
            },
        );
    }
    ctx
}

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn code(r: Option<&ElectionResult>) -> Option<ErrorCode> {
    r.map(|r| r.clone().err().map_or(ErrorCode::NONE, |e| e.0))
}

#[test]
fn preferred_elections_skip_partitions_their_first_replica_leads() {
    let c = ctx(&[(&[1, 2, 3], 1, &[1, 2, 3]), (&[2, 3, 1], 3, &[1, 2, 3])]);
    let asked: BTreeSet<_> = [tp(0), tp(1), tp(7), TopicPartition::new("nope", 0)].into();
    let (elect, answered) = plan_election(&c, &asked, ElectionType::Preferred);
    assert_eq!(elect, vec![tp(1)]);
    assert_eq!(
        code(answered.get(&tp(0))),
        Some(ErrorCode::ELECTION_NOT_NEEDED)
    );
    assert_eq!(
        code(answered.get(&tp(7))),
        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert_eq!(
        code(answered.get(&TopicPartition::new("nope", 0))),
        Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
    );
    assert!(!answered.contains_key(&tp(1)));
}

#[test]
fn unclean_elections_run_only_where_the_leader_is_gone_and_deleting_topics_are_refused() {
    let mut c = ctx(&[(&[1, 2], 1, &[1, 2]), (&[4, 2], 4, &[4])]);
    let asked: BTreeSet<_> = [tp(0), tp(1)].into();
    let (elect, answered) = plan_election(&c, &asked, ElectionType::Unclean);
    assert_eq!(elect, vec![tp(1)], "broker 4 is not registered");
    assert_eq!(
        code(answered.get(&tp(0))),
        Some(ErrorCode::ELECTION_NOT_NEEDED)
    );
    // A shutting-down leader counts as gone (not `liveBrokerIds`).
    c.shutting_down.insert(BrokerId(1));
    let (elect, _) = plan_election(&c, &asked, ElectionType::Unclean);
    assert_eq!(elect, vec![tp(0), tp(1)]);
    c.topics_to_delete.insert("t".into());
    let (elect, answered) = plan_election(&c, &asked, ElectionType::Preferred);
    assert!(elect.is_empty());
    assert_eq!(
        code(answered.get(&tp(0))),
        Some(ErrorCode::INVALID_TOPIC_EXCEPTION)
    );
    assert_eq!(ElectionType::from_wire(0), Some(ElectionType::Preferred));
    assert_eq!(ElectionType::from_wire(1), Some(ElectionType::Unclean));
    assert_eq!(ElectionType::from_wire(2), None);
}

/// The limit is `leader.imbalance.per.broker.percentage` (the controller's
/// settings take it from the broker config; Kafka's
/// `checkAndTriggerAutoLeaderRebalance` compares each broker's share of
/// preferred partitions led elsewhere against it).
fn imbalance_limit(properties: &str) -> u32 {
    let loaded = crate::config::ServerConfig::from_properties(properties, &[]).unwrap();
    u32::try_from(loaded.config.leader_imbalance_per_broker_percentage).unwrap()
}

#[test]
fn the_rebalance_moves_leaders_of_brokers_above_the_imbalance_ratio_only() {
    // Broker 1 prefers 0–3 and leads none of them: 100% > 10% (Kafka's
    // default leader.imbalance.per.broker.percentage). Broker 2 prefers
    // 4–13 and leads 9 of the 10: 10% is not above 10%.
    let mut parts: Vec<(&[i32], i32, &[i32])> = vec![
        (&[1, 2, 3], 2, &[1, 2, 3]),
        (&[1, 2, 3], 3, &[1, 2, 3]),
        // Preferred replica out of the ISR: not a candidate.
        (&[1, 2, 3], 2, &[2, 3]),
        (&[1, 3, 2], 3, &[3, 1, 2]),
    ];
    parts.extend(std::iter::repeat_n((&[2, 3, 1][..], 2, &[1, 2, 3][..]), 9));
    parts.push((&[2, 3, 1], 3, &[1, 2, 3]));
    let c = ctx(&parts);
    assert_eq!(
        imbalanced_partitions(&c, imbalance_limit("")),
        vec![tp(0), tp(1), tp(3)]
    );
    // Broker 2 at 10% is above a 9% limit: its partition moves too.
    assert_eq!(
        imbalanced_partitions(
            &c,
            imbalance_limit("leader.imbalance.per.broker.percentage=9")
        ),
        vec![tp(0), tp(1), tp(3), tp(13)]
    );
    // At 100% nothing is ever imbalanced enough.
    assert!(imbalanced_partitions(
        &c,
        imbalance_limit("leader.imbalance.per.broker.percentage=100")
    )
    .is_empty());
}

#[test]
fn the_rebalance_leaves_dead_preferred_brokers_and_deleting_topics_alone() {
    let mut c = ctx(&[(&[1, 2], 2, &[1, 2]), (&[3, 2], 2, &[3, 2])]);
    c.live_brokers.retain(|b| b.id != BrokerId(1));
    assert_eq!(imbalanced_partitions(&c, 10), vec![tp(1)]);
    c.shutting_down.insert(BrokerId(3));
    assert!(imbalanced_partitions(&c, 10).is_empty());
    c.shutting_down.clear();
    c.topics_to_delete.insert("t".into());
    assert!(imbalanced_partitions(&c, 10).is_empty());
}
