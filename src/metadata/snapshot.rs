//! `[pure]` An immutable view of cluster metadata.
//!
//! Each data shard holds an `Rc<Snapshot>`; the control shard builds a new
//! snapshot on every change (broker join/leave, topic create/delete, leader
//! or ISR change) and ships a copy to every shard, which swaps it in
//! (`shard::ShardContext::set_snapshot`). Readers never lock: a request
//! keeps the `Rc` it started with.

use indexmap::IndexMap;
use std::sync::Arc;
use uuid::Uuid;

use crate::protocol::ErrorCode;
use crate::types::{BrokerId, LeaderEpoch, PartitionId, TopicPartition};

/// A broker's advertised endpoint (`advertised.listeners`, `broker.rack`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub broker_id: BrokerId,
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
}

/// One partition's leadership state (Kafka's LeaderAndIsr plus assignment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub partition: PartitionId,
    /// `-1` when no leader is available.
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
    pub offline_replicas: Vec<BrokerId>,
}

/// A topic and its partitions, ordered by partition index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicState {
    pub name: Arc<str>,
    pub topic_id: Uuid,
    /// `__consumer_offsets`, `__transaction_state`.
    pub is_internal: bool,
    pub partitions: Vec<PartitionState>,
    /// Topic-level config overrides (`/config/topics/<t>`), Kafka key names;
    /// owner shards resolve them against broker defaults for their logs.
    pub configs: std::collections::BTreeMap<String, String>,
}

/// Everything ApiVersions/Metadata/FindCoordinator answers from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Bumped by the control shard on every change; lets shards ignore a
    /// stale snapshot that arrives after a newer one.
    pub version: u64,
    pub cluster_id: String,
    /// `-1` when no controller is known.
    pub controller_id: BrokerId,
    pub brokers: Vec<BrokerEndpoint>,
    /// Topics in name order of creation; lookups by name are O(1). These
    /// are the topics this broker's own controller stores: owner shards
    /// open logs for their partitions.
    pub topics: IndexMap<Arc<str>, TopicState>,
    /// Topics known only from a controller's UpdateMetadata (ZooKeeper
    /// mode, `metadata::update_metadata`), by name: Metadata answers list
    /// them, but no shard opens a log for them (hosting comes from
    /// LeaderAndIsr, not from UpdateMetadata, as in Kafka). A name in
    /// `topics` shadows the same name here. Partitions are in index order
    /// but need not be contiguous (an UpdateMetadata may name any subset).
    pub announced: IndexMap<Arc<str>, TopicState>,
    /// ZooKeeper mode: `topics` holds exactly the partitions LeaderAndIsr
    /// made this broker host (any subset of a topic's partitions, with the
    /// controller's leader, epoch, replicas and ISR), and Metadata answers
    /// from `announced` alone (Kafka's `ZkMetadataCache`), which `topics`
    /// then shadows nowhere. False in embedded mode, where `topics` is
    /// every stored topic, whole.
    pub hosted_by_leader_and_isr: bool,
    /// The stored client quotas (`metadata::quotas`), which requests of
    /// which clients are measured against.
    pub client_quotas: Arc<super::quotas::QuotaConfigs>,
    /// This broker's dynamic config (`/config/brokers/<id>` and
    /// `<default>`, `config::dynamic`): topic defaults and replication
    /// throttle rates every shard applies.
    pub broker_configs: Arc<crate::config::dynamic::DynamicBrokerConfigs>,
}

impl Snapshot {
    /// A snapshot with one broker (itself as controller) and no topics: what
    /// a single broker knows before the control plane publishes anything.
    pub fn single_broker(cluster_id: &str, broker: BrokerEndpoint) -> Self {
        Self {
            version: 0,
            cluster_id: cluster_id.to_owned(),
            controller_id: broker.broker_id,
            brokers: vec![broker],
            topics: IndexMap::new(),
            announced: IndexMap::new(),
            hosted_by_leader_and_isr: false,
            client_quotas: Arc::default(),
            broker_configs: Arc::default(),
        }
    }

    /// The topics Metadata answers from before `announced`: the stored
    /// ones in embedded mode, none in ZooKeeper mode.
    fn shadowing(&self) -> Option<&IndexMap<Arc<str>, TopicState>> {
        (!self.hosted_by_leader_and_isr).then_some(&self.topics)
    }

    /// The topic Metadata answers for `name`: a stored one, else one
    /// announced by UpdateMetadata (only the latter in ZooKeeper mode).
    pub fn served_topic(&self, name: &str) -> Option<&TopicState> {
        self.shadowing()
            .and_then(|t| t.get(name))
            .or_else(|| self.announced.get(name))
    }

    /// [`Snapshot::served_topic`] by topic id.
    pub fn served_topic_by_id(&self, topic_id: Uuid) -> Option<&TopicState> {
        let shadowing = self.shadowing();
        shadowing
            .and_then(|t| t.values().find(|t| t.topic_id == topic_id))
            .or_else(|| {
                self.announced.values().find(|t| {
                    t.topic_id == topic_id && !shadowing.is_some_and(|s| s.contains_key(&t.name))
                })
            })
    }

    /// Every topic Metadata lists: stored ones, then announced ones they do
    /// not shadow (announced ones alone in ZooKeeper mode).
    pub fn served_topics(&self) -> impl Iterator<Item = &TopicState> {
        let shadowing = self.shadowing();
        shadowing.into_iter().flat_map(|t| t.values()).chain(
            self.announced
                .values()
                .filter(move |t| !shadowing.is_some_and(|s| s.contains_key(&t.name))),
        )
    }

    /// Every partition of [`Snapshot::served_topics`] (Kafka's
    /// `metadataCache.getAllTopics().flatMap(getTopicPartitions)`).
    pub fn served_partitions(&self) -> impl Iterator<Item = TopicPartition> + '_ {
        self.served_topics().flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| TopicPartition::new(&*t.name, p.partition))
        })
    }

    /// Whether Metadata knows `topic`-`partition` (Kafka's
    /// `metadataCache.contains`): a request for a partition this broker
    /// does not host is NOT_LEADER_OR_FOLLOWER then, else
    /// UNKNOWN_TOPIC_OR_PARTITION (`ReplicaManager.getPartitionOrError`).
    pub fn serves_partition(&self, topic: &str, partition: i32) -> bool {
        self.served_topic(topic)
            .is_some_and(|t| t.partitions.iter().any(|p| p.partition == partition))
    }

    /// Whether this broker hosts `topic`-`partition` (its owner shard has
    /// the log).
    pub fn hosts_partition(&self, topic: &str, partition: i32) -> bool {
        self.topic(topic)
            .is_some_and(|t| t.partitions.iter().any(|p| p.partition == partition))
    }

    /// The error for a partition this broker does not host (see
    /// [`Snapshot::serves_partition`]).
    pub fn not_hosted_error(&self, topic: &str, partition: i32) -> ErrorCode {
        if self.serves_partition(topic, partition) {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        }
    }

    pub fn topic(&self, name: &str) -> Option<&TopicState> {
        self.topics.get(name)
    }

    pub fn topic_by_id(&self, topic_id: Uuid) -> Option<&TopicState> {
        self.topics.values().find(|t| t.topic_id == topic_id)
    }

    pub fn broker(&self, broker_id: BrokerId) -> Option<&BrokerEndpoint> {
        self.brokers.iter().find(|b| b.broker_id == broker_id)
    }

    /// Add or replace a topic (used by the control shard and tests).
    pub fn with_topic(mut self, topic: TopicState) -> Self {
        self.topics.insert(topic.name.clone(), topic);
        self
    }

    /// Invariants every published snapshot satisfies: partitions are
    /// numbered 0..n in order, a leader is one of the replicas, the ISR is a
    /// subset of the replicas. Hosted partitions in ZooKeeper mode are what
    /// a controller said (any subset); only their order is ours.
    pub fn check_invariants(&self) -> Result<(), String> {
        let whole = self.shadowing().into_iter().flat_map(|t| t.values());
        for t in whole {
            for (i, p) in t.partitions.iter().enumerate() {
                if p.partition as usize != i {
                    return Err(format!(
                        "{}: partition {} at index {i}",
                        t.name, p.partition
                    ));
                }
                if p.leader != BrokerId::NONE && !p.replicas.contains(&p.leader) {
                    return Err(format!("{}-{}: leader not a replica", t.name, p.partition));
                }
                if p.isr.iter().any(|r| !p.replicas.contains(r)) {
                    return Err(format!(
                        "{}-{}: isr not within replicas",
                        t.name, p.partition
                    ));
                }
            }
        }
        // Announced partitions are what a controller said; only their
        // order is ours.
        let hosted = self.hosted_by_leader_and_isr.then_some(&self.topics);
        for t in self
            .announced
            .values()
            .chain(hosted.into_iter().flat_map(|t| t.values()))
        {
            if t.partitions
                .windows(2)
                .any(|w| w[0].partition >= w[1].partition)
            {
                return Err(format!("{}: announced partitions out of order", t.name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> BrokerEndpoint {
        BrokerEndpoint {
            broker_id: BrokerId(1),
            host: "localhost".into(),
            port: 9092,
            rack: None,
        }
    }

    #[test]
    fn single_broker_snapshot_names_itself_controller() {
        let s = Snapshot::single_broker("abc", endpoint());
        assert_eq!(s.controller_id, 1);
        assert_eq!(s.broker(BrokerId(1)).unwrap().port, 9092);
        assert!(s.topics.is_empty());
        s.check_invariants().unwrap();
    }

    fn topic(name: &str, partitions: &[i32]) -> TopicState {
        TopicState {
            configs: Default::default(),
            name: name.into(),
            topic_id: Uuid::from_u128(
                u128::from(name.as_bytes()[0]) * 100 + partitions.len() as u128,
            ),
            is_internal: false,
            partitions: partitions
                .iter()
                .map(|&p| PartitionState {
                    partition: p,
                    leader: BrokerId(1),
                    leader_epoch: LeaderEpoch(0),
                    replicas: vec![BrokerId(1)],
                    isr: vec![BrokerId(1)],
                    offline_replicas: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn hosted_topics_shadow_announced_ones_only_in_embedded_mode() {
        let mut s = Snapshot::single_broker("abc", endpoint()).with_topic(topic("t", &[0]));
        s.announced.insert("t".into(), topic("t", &[0, 1, 2]));
        s.announced.insert("u".into(), topic("u", &[0]));
        assert_eq!(s.served_topic("t").unwrap().partitions.len(), 1);
        assert_eq!(s.served_topics().count(), 2);
        assert!(!s.serves_partition("t", 2));
        assert_eq!(
            s.not_hosted_error("u", 0),
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        );
        assert_eq!(
            s.not_hosted_error("u", 1),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        s.hosted_by_leader_and_isr = true;
        assert_eq!(s.served_topic("t").unwrap().partitions.len(), 3);
        assert_eq!(
            s.served_topic_by_id(Uuid::from_u128(u128::from(b't') * 100 + 3))
                .unwrap()
                .name
                .as_ref(),
            "t"
        );
        assert!(
            s.served_topic_by_id(Uuid::from_u128(u128::from(b't') * 100 + 1))
                .is_none(),
            "hosted one not served"
        );
        assert_eq!(s.served_topics().count(), 2);
        assert!(s.serves_partition("t", 2) && !s.hosts_partition("t", 2));
        assert!(s.hosts_partition("t", 0));
        assert_eq!(
            s.not_hosted_error("t", 2),
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        );
    }

    #[test]
    fn hosted_partitions_may_be_any_ascending_subset() {
        let mut s = Snapshot::single_broker("abc", endpoint()).with_topic(topic("t", &[1, 4]));
        assert!(s.check_invariants().is_err(), "embedded topics are whole");
        s.hosted_by_leader_and_isr = true;
        s.check_invariants().unwrap();
        s = s.with_topic(topic("t", &[4, 1]));
        assert!(s.check_invariants().is_err());
    }

    #[test]
    fn invariants_reject_a_leader_outside_the_replicas() {
        let id = Uuid::from_u128(7);
        let s = Snapshot::single_broker("abc", endpoint()).with_topic(TopicState {
            configs: Default::default(),
            name: "t".into(),
            topic_id: id,
            is_internal: false,
            partitions: vec![PartitionState {
                partition: 0,
                leader: BrokerId(2),
                leader_epoch: LeaderEpoch(0),
                replicas: vec![BrokerId(1)],
                isr: vec![BrokerId(1)],
                offline_replicas: vec![],
            }],
        });
        assert!(s.check_invariants().is_err());
        assert_eq!(s.topic_by_id(id).map(|t| &*t.name), Some("t"));
    }
}
