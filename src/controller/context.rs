//! `[pure]` What the active controller knows (Kafka 3.9
//! `ControllerContext`): the live brokers, every partition's assignment and
//! leadership, the two state machines' states, the brokers shutting down
//! and the topics queued for deletion. Loaded on failover, then kept in
//! step by the controller's event queue (`zk_mode`); nothing here does I/O.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::brokers::LiveBroker;
use super::leader_election::LeaderIsr;
use super::state_machine::{PartitionStates, ReplicaState, ReplicaStates};
use crate::metrics::control::ControllerCounts;
use crate::types::{BrokerId, ControllerEpoch, TopicPartition};

/// A partition's leadership as its state znode holds it, with the epoch of
/// the controller that wrote it (Kafka's `LeaderIsrAndControllerEpoch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub leader_isr: LeaderIsr,
    pub controller_epoch: ControllerEpoch,
}

#[derive(Debug, Clone, Default)]
pub struct ControllerContext {
    /// The controller epoch this term won, and `/controller_epoch`'s
    /// zkVersion every write is conditioned on.
    pub epoch: i32,
    pub epoch_zk_version: i32,
    /// Registered brokers (shutting-down ones included), ascending by id.
    pub live_brokers: Vec<LiveBroker>,
    /// Brokers in controlled shutdown (Kafka's `shuttingDownBrokerIds`).
    pub shutting_down: BTreeSet<BrokerId>,
    pub topic_ids: BTreeMap<String, Uuid>,
    /// Every partition's replicas in assignment (AR) order.
    pub assignments: BTreeMap<TopicPartition, Vec<BrokerId>>,
    /// Partitions whose state znode exists.
    pub leadership: BTreeMap<TopicPartition, Leadership>,
    pub partition_states: PartitionStates,
    pub replica_states: ReplicaStates,
    /// `/admin/delete_topics` children being deleted, and those of them
    /// that wait for a dead replica's broker (`topicsIneligibleForDeletion`).
    pub topics_to_delete: BTreeSet<String>,
    pub ineligible_for_deletion: BTreeSet<String>,
    /// Partitions being reassigned (`partitionsBeingReassigned`): their
    /// adding and removing replicas; `assignments` holds the full set.
    pub reassignments: BTreeMap<TopicPartition, Moving>,
    /// Replicas a live broker answered KAFKA_STORAGE_ERROR for (their log
    /// dir failed; Kafka's `replicasOnOfflineDirs`): offline until that
    /// broker starts again.
    pub replicas_on_offline_dirs: BTreeMap<BrokerId, BTreeSet<TopicPartition>>,
}

/// The adding (AR) and removing (RR) replicas of a moving partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Moving {
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
}

impl ControllerContext {
    /// The counts `KafkaController.updateMetrics` takes of the context:
    /// partitions of topics not queued for deletion led by other than
    /// their preferred (first assigned) replica, or by none
    /// (`ControllerContext.preferredReplicaImbalanceCount`); the topics
    /// queued for deletion and their replicas not yet
    /// `ReplicaDeletionSuccessful`; the topics whose deletion waits and
    /// the deleting replicas in `ReplicaDeletionIneligible`.
    pub fn metric_counts(&self) -> ControllerCounts {
        let mut c = ControllerCounts::default();
        for (tp, replicas) in &self.assignments {
            if self.topics_to_delete.contains(&*tp.topic) {
                for r in replicas {
                    match self.replica_states.get(tp, *r) {
                        ReplicaState::DeletionSuccessful => {}
                        ReplicaState::DeletionIneligible => {
                            c.replicas_to_delete += 1;
                            c.replicas_ineligible_to_delete += 1;
                        }
                        _ => c.replicas_to_delete += 1,
                    }
                }
                continue;
            }
            let Some(l) = self.leadership.get(tp) else {
                continue;
            };
            if replicas.first() != Some(&l.leader_isr.leader) {
                c.preferred_replica_imbalance += 1;
            }
        }
        c.topics_to_delete = self.topics_to_delete.len() as u64;
        c.topics_ineligible_to_delete = self.ineligible_for_deletion.len() as u64;
        c
    }

    /// Registered brokers, shutting-down ones included
    /// (`liveOrShuttingDownBrokerIds`).
    pub fn live_or_shutting_down(&self) -> BTreeSet<BrokerId> {
        self.live_brokers.iter().map(|b| b.id).collect()
    }

    /// Brokers that may lead or be in an ISR: registered and not shutting
    /// down (`liveBrokerIds`, what `isReplicaOnline` uses by default).
    pub fn live(&self) -> BTreeSet<BrokerId> {
        self.live_brokers
            .iter()
            .map(|b| b.id)
            .filter(|id| !self.shutting_down.contains(id))
            .collect()
    }

    /// Kafka's `isReplicaOnline(broker, tp)`: the broker is live (not
    /// shutting down) and its replica of `tp` is not in a failed log dir.
    pub fn is_replica_online(&self, broker: BrokerId, tp: &TopicPartition) -> bool {
        self.live().contains(&broker) && !self.on_offline_dir(broker, tp)
    }

    fn on_offline_dir(&self, broker: BrokerId, tp: &TopicPartition) -> bool {
        self.replicas_on_offline_dirs
            .get(&broker)
            .is_some_and(|parts| parts.contains(tp))
    }

    /// [`Self::live`] for one partition: the live brokers whose replica
    /// of `tp` is online (what an election of `tp` may choose from).
    pub fn live_for(&self, tp: &TopicPartition) -> BTreeSet<BrokerId> {
        let mut live = self.live();
        live.retain(|b| !self.on_offline_dir(*b, tp));
        live
    }

    pub fn broker(&self, id: BrokerId) -> Option<&LiveBroker> {
        self.live_brokers.iter().find(|b| b.id == id)
    }

    /// The target's registration epoch, or -1 when it is not registered.
    pub fn broker_epoch(&self, id: BrokerId) -> i64 {
        self.broker(id).map_or(-1, |b| b.epoch)
    }

    pub fn replicas(&self, tp: &TopicPartition) -> &[BrokerId] {
        self.assignments.get(tp).map_or(&[], Vec::as_slice)
    }

    /// Replicas whose broker is not registered or whose log dir failed
    /// (UpdateMetadata's `offline_replicas`: Kafka's `isReplicaOnline`
    /// with shutting-down brokers counted online).
    pub fn offline_replicas(&self, tp: &TopicPartition) -> Vec<BrokerId> {
        let registered = self.live_or_shutting_down();
        self.replicas(tp)
            .iter()
            .copied()
            .filter(|r| !registered.contains(r) || self.on_offline_dir(*r, tp))
            .collect()
    }

    pub fn partitions_of(&self, topic: &str) -> Vec<TopicPartition> {
        self.assignments
            .keys()
            .filter(|tp| &*tp.topic == topic)
            .cloned()
            .collect()
    }

    pub fn topics(&self) -> BTreeSet<String> {
        self.topic_ids.keys().cloned().collect()
    }

    /// Every (partition, replica) with the replica on one of `brokers`
    /// (`replicasOnBrokers`).
    pub fn replicas_on(&self, brokers: &BTreeSet<BrokerId>) -> Vec<(TopicPartition, BrokerId)> {
        let mut out = Vec::new();
        for (tp, replicas) in &self.assignments {
            for r in replicas.iter().filter(|r| brokers.contains(r)) {
                out.push((tp.clone(), *r));
            }
        }
        out
    }

    /// Every replica of `partitions` (`replicasForPartition`).
    pub fn replicas_of(&self, partitions: &[TopicPartition]) -> Vec<(TopicPartition, BrokerId)> {
        partitions
            .iter()
            .flat_map(|tp| self.replicas(tp).iter().map(move |r| (tp.clone(), *r)))
            .collect()
    }

    /// Partitions led by `broker`.
    pub fn partitions_led_by(&self, broker: BrokerId) -> Vec<TopicPartition> {
        self.leadership
            .iter()
            .filter(|(_, l)| l.leader_isr.leader == broker)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Partitions with a state znode whose leader is not online, topics
    /// queued for deletion left out (`partitionsWithOfflineLeader`).
    pub fn partitions_with_offline_leader(&self) -> Vec<TopicPartition> {
        let live = self.live();
        self.leadership
            .iter()
            .filter(|(tp, l)| {
                let leader = l.leader_isr.leader;
                (!live.contains(&leader) || self.on_offline_dir(leader, tp))
                    && !self.topics_to_delete.contains(&*tp.topic)
            })
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// `tp`'s state as this controller just wrote it (its partition epoch
    /// the znode's new version), stamped with this controller's epoch
    /// (Kafka's `putPartitionLeadershipInfo` after a successful write).
    pub fn put_leadership(&mut self, tp: TopicPartition, leader_isr: LeaderIsr) {
        let controller_epoch = ControllerEpoch(self.epoch);
        self.leadership.insert(
            tp,
            Leadership {
                leader_isr,
                controller_epoch,
            },
        );
    }

    pub fn add_topic(&mut self, name: &str, id: Uuid) {
        self.topic_ids.insert(name.to_owned(), id);
    }

    /// Forget a deleted topic entirely (`removeTopic`).
    pub fn remove_topic(&mut self, name: &str) {
        self.topic_ids.remove(name);
        self.assignments.retain(|tp, _| &*tp.topic != name);
        self.leadership.retain(|tp, _| &*tp.topic != name);
        self.reassignments.retain(|tp, _| &*tp.topic != name);
        self.partition_states.remove_topic(name);
        self.replica_states.remove_topic(name);
        self.topics_to_delete.remove(name);
        self.ineligible_for_deletion.remove(name);
    }

    /// Number of partitions (the failover benchmark's check).
    pub fn partition_count(&self) -> usize {
        self.assignments.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::leader_election::LeaderRecoveryState;
    use crate::types::{LeaderEpoch, PartitionEpoch};
    use crate::zk::paths::BrokerIdZNode;

    fn broker(id: i32) -> LiveBroker {
        LiveBroker {
            id: BrokerId(id),
            epoch: 100 + i64::from(id),
            registration: BrokerIdZNode::plaintext("h", 9000 + id, 1),
        }
    }

    fn led(leader: i32, isr: &[i32]) -> Leadership {
        Leadership {
            leader_isr: LeaderIsr {
                leader: BrokerId(leader),
                leader_epoch: LeaderEpoch(0),
                isr: isr.iter().copied().map(BrokerId).collect(),
                leader_recovery_state: LeaderRecoveryState::Recovered,
                partition_epoch: PartitionEpoch(0),
            },
            controller_epoch: ControllerEpoch(1),
        }
    }

    #[test]
    fn shutting_down_brokers_are_registered_but_not_online() {
        let mut ctx = ControllerContext {
            live_brokers: vec![broker(1), broker(2), broker(3)],
            ..Default::default()
        };
        ctx.shutting_down.insert(BrokerId(2));
        let t0 = TopicPartition::new("t", 0);
        let t1 = TopicPartition::new("t", 1);
        ctx.add_topic("t", Uuid::from_u128(1));
        ctx.assignments
            .insert(t0.clone(), vec![BrokerId(2), BrokerId(4), BrokerId(1)]);
        ctx.assignments
            .insert(t1.clone(), vec![BrokerId(1), BrokerId(3), BrokerId(2)]);
        ctx.leadership.insert(t0.clone(), led(2, &[2, 1]));
        ctx.leadership.insert(t1.clone(), led(1, &[1, 3, 2]));
        assert_eq!(ctx.live(), BTreeSet::from([BrokerId(1), BrokerId(3)]));
        assert_eq!(ctx.live_or_shutting_down().len(), 3);
        assert_eq!(ctx.offline_replicas(&t0), vec![BrokerId(4)]);
        assert_eq!(ctx.partitions_with_offline_leader(), vec![t0.clone()]);
        assert_eq!(ctx.partitions_led_by(BrokerId(1)), vec![t1.clone()]);
        assert_eq!(ctx.broker_epoch(BrokerId(3)), 103);
        assert_eq!(ctx.broker_epoch(BrokerId(4)), -1);
        let on_2 = ctx.replicas_on(&BTreeSet::from([BrokerId(2)]));
        assert_eq!(on_2, vec![(t0.clone(), BrokerId(2)), (t1, BrokerId(2))]);
        ctx.topics_to_delete.insert("t".into());
        assert!(ctx.partitions_with_offline_leader().is_empty());
        ctx.remove_topic("t");
        assert_eq!(ctx.partition_count(), 0);
        assert!(ctx.leadership.is_empty() && ctx.topics_to_delete.is_empty());
    }

    #[test]
    fn the_metric_counts_follow_kafkas_update_metrics() {
        let mut ctx = ControllerContext {
            live_brokers: vec![broker(1), broker(2)],
            ..Default::default()
        };
        let (a0, a1, d0) = (
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 1),
            TopicPartition::new("d", 0),
        );
        for (topic, id) in [("a", 1), ("d", 2)] {
            ctx.add_topic(topic, Uuid::from_u128(id));
        }
        for tp in [&a0, &a1, &d0] {
            ctx.assignments
                .insert(tp.clone(), vec![BrokerId(1), BrokerId(2)]);
        }
        // a-0 led by its preferred replica, a-1 not; d's is deleting.
        ctx.leadership.insert(a0.clone(), led(1, &[1, 2]));
        ctx.leadership.insert(a1.clone(), led(2, &[2]));
        ctx.leadership.insert(d0.clone(), led(2, &[2]));
        ctx.topics_to_delete.insert("d".into());
        ctx.ineligible_for_deletion.insert("d".into());
        let path = |to: ReplicaState| {
            use ReplicaState::*;
            let mut p = vec![New, Online, Offline, DeletionStarted];
            p.push(to);
            p
        };
        for (replica, to) in [
            (1, ReplicaState::DeletionSuccessful),
            (2, ReplicaState::DeletionIneligible),
        ] {
            for state in path(to) {
                ctx.replica_states
                    .transition(&d0, BrokerId(replica), state)
                    .unwrap();
            }
        }
        let c = ctx.metric_counts();
        assert_eq!(c.preferred_replica_imbalance, 1);
        assert_eq!((c.topics_to_delete, c.replicas_to_delete), (1, 1));
        assert_eq!(
            (
                c.topics_ineligible_to_delete,
                c.replicas_ineligible_to_delete
            ),
            (1, 1)
        );
    }

    #[test]
    fn a_replica_in_a_failed_log_dir_is_offline_for_its_partition_only() {
        let mut ctx = ControllerContext {
            live_brokers: vec![broker(1), broker(2)],
            ..Default::default()
        };
        let t0 = TopicPartition::new("t", 0);
        let t1 = TopicPartition::new("t", 1);
        ctx.add_topic("t", Uuid::from_u128(1));
        ctx.assignments
            .insert(t0.clone(), vec![BrokerId(1), BrokerId(2)]);
        ctx.assignments
            .insert(t1.clone(), vec![BrokerId(1), BrokerId(2)]);
        ctx.leadership.insert(t0.clone(), led(1, &[1, 2]));
        ctx.leadership.insert(t1.clone(), led(1, &[1, 2]));
        assert!(ctx.partitions_with_offline_leader().is_empty());
        ctx.replicas_on_offline_dirs
            .insert(BrokerId(1), BTreeSet::from([t0.clone()]));
        assert!(!ctx.is_replica_online(BrokerId(1), &t0));
        assert!(ctx.is_replica_online(BrokerId(1), &t1));
        assert_eq!(ctx.live_for(&t0), BTreeSet::from([BrokerId(2)]));
        assert_eq!(
            ctx.live_for(&t1),
            BTreeSet::from([BrokerId(1), BrokerId(2)])
        );
        assert_eq!(ctx.partitions_with_offline_leader(), vec![t0.clone()]);
        assert_eq!(ctx.offline_replicas(&t0), vec![BrokerId(1)]);
        assert!(ctx.offline_replicas(&t1).is_empty());
    }
}
