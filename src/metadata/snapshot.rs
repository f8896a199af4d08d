//! `[pure]` An immutable view of cluster metadata.
//!
//! Each data shard holds an `Rc<Snapshot>`; the control shard builds a new
//! snapshot on every change (broker join/leave, topic create/delete, leader
//! or ISR change) and ships a copy to every shard, which swaps it in
//! (`shard::ShardContext::set_snapshot`). Readers never lock: a request
//! keeps the `Rc` it started with.
//!
//! Two views of a topic, named so the wrong one is hard to pick:
//! - the **cluster view** (`cluster_*`): the whole topic as this broker's
//!   Metadata answers know it, Kafka 3.9's `MetadataCache`
//!   (`ZkMetadataCache` in ZooKeeper mode: every partition a controller's
//!   UpdateMetadata named, whichever this broker hosts). Anything a
//!   client may ask any broker about reads it: Metadata, FindCoordinator
//!   and the `__consumer_offsets` / `__transaction_state` partition counts
//!   (`GroupMetadataManager.partitionFor`, `TransactionStateManager.partitionFor`),
//!   "does this topic/partition exist" checks (`metadataCache.contains`,
//!   `getTopicPartitions`) before a request is refused or routed,
//!   DescribeConfigs, CreatePartitions / DeleteTopics / CreateTopics
//!   existence, partition leaders a request is sent to;
//! - the **hosted view** (`hosted_*`, [`Snapshot::hosts_partition`]): the
//!   partitions this broker has a replica (a log) of, Kafka's
//!   `ReplicaManager.allPartitions` / `getPartitionOrError`. Reading or
//!   writing a log reads it: Produce, Fetch, ListOffsets, DeleteRecords,
//!   OffsetForLeaderEpoch, WriteTxnMarkers, the coordinators' loading of
//!   the offsets / transaction partitions this broker leads.
//!
//! A partition known to the cluster but not hosted is
//! NOT_LEADER_OR_FOLLOWER, unknown to both UNKNOWN_TOPIC_OR_PARTITION
//! ([`Snapshot::not_hosted_error`]). In embedded mode the hosted view is
//! every stored topic, whole, and the cluster view is those plus any a
//! controller announced.

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

impl TopicState {
    /// How many partitions the topic has, as the coordinators map keys
    /// (`abs(hash) % count`) over it.
    pub fn partition_count(&self) -> i32 {
        i32::try_from(self.partitions.len()).unwrap_or(i32::MAX)
    }
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
    /// Every live broker's endpoint on the inter-broker listener
    /// (`inter.broker.listener.name`): what replica fetchers, the
    /// transaction-marker sender and AddPartitionsToTxn verification
    /// connect to. Client answers read [`Snapshot::brokers_on`] instead.
    pub brokers: Vec<BrokerEndpoint>,
    /// Per listener name, every live broker that has an endpoint of that
    /// name, at that endpoint (Kafka's `getAliveBrokerNodes(listenerName)`):
    /// Metadata, FindCoordinator and DescribeCluster answer a client from
    /// the view of the listener it connected to. Empty for a snapshot that
    /// does not tell listeners apart (then every listener sees `brokers`).
    pub listener_brokers: std::collections::BTreeMap<Arc<str>, Vec<BrokerEndpoint>>,
    /// The hosted view's topics, in order of creation; lookups by name are
    /// O(1). Embedded mode: every topic this broker's own controller
    /// stores, whole. Owner shards open logs for their partitions. Read
    /// through [`Snapshot::hosted_topic`] or the cluster view, never to
    /// answer what a topic is (see the module header).
    pub hosted_topics: IndexMap<Arc<str>, TopicState>,
    /// Topics known only from a controller's UpdateMetadata (ZooKeeper
    /// mode, `metadata::update_metadata`), by name: Metadata answers list
    /// them, but no shard opens a log for them (hosting comes from
    /// LeaderAndIsr, not from UpdateMetadata, as in Kafka). A name in
    /// `hosted_topics` shadows the same name here. Partitions are in index order
    /// but need not be contiguous (an UpdateMetadata may name any subset).
    pub announced: IndexMap<Arc<str>, TopicState>,
    /// ZooKeeper mode: `hosted_topics` holds exactly the partitions LeaderAndIsr
    /// made this broker host (any subset of a topic's partitions, with the
    /// controller's leader, epoch, replicas and ISR), and Metadata answers
    /// from `announced` alone (Kafka's `ZkMetadataCache`), which `hosted_topics`
    /// then shadows nowhere. False in embedded mode, where `hosted_topics` is
    /// every stored topic, whole.
    pub hosted_by_leader_and_isr: bool,
    /// The stored client quotas (`metadata::quotas`), which requests of
    /// which clients are measured against.
    pub client_quotas: Arc<super::quotas::QuotaConfigs>,
    /// The stored SCRAM credentials (`/config/users/<u>`,
    /// `metadata::scram_credentials`) SASL/SCRAM logins are checked against.
    pub scram_credentials: Arc<super::scram_credentials::ScramCredentials>,
    /// This broker's dynamic config (`/config/brokers/<id>` and
    /// `<default>`, `config::dynamic`): topic defaults and replication
    /// throttle rates every shard applies.
    pub broker_configs: Arc<crate::config::dynamic::DynamicBrokerConfigs>,
    /// The ACLs (`AclAuthorizer`'s cache): each shard authorizes its
    /// requests against this read-only copy (`acl::authorizer`).
    pub acls: Arc<crate::acl::authorizer::AclCache>,
    /// ZooKeeper mode: the hosted partitions being reassigned, as their
    /// last LeaderAndIsr names them (v3+ adding and removing replicas;
    /// Kafka's `Partition.assignmentState`). Empty otherwise.
    /// By topic, then partition.
    pub reassigning: Arc<ReassigningPartitions>,
}

/// [`Snapshot::reassigning`]: by topic, then partition.
pub type ReassigningPartitions =
    std::collections::BTreeMap<Arc<str>, std::collections::BTreeMap<i32, Reassigning>>;

/// A partition's replicas being added and removed by a reassignment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reassigning {
    pub adding: Vec<BrokerId>,
    pub removing: Vec<BrokerId>,
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
            listener_brokers: std::collections::BTreeMap::new(),
            hosted_topics: IndexMap::new(),
            announced: IndexMap::new(),
            hosted_by_leader_and_isr: false,
            client_quotas: Arc::default(),
            scram_credentials: Arc::default(),
            broker_configs: Arc::default(),
            acls: Arc::default(),
            reassigning: Arc::default(),
        }
    }

    /// The topics Metadata answers from before `announced`: the stored
    /// ones in embedded mode, none in ZooKeeper mode.
    fn shadowing(&self) -> Option<&IndexMap<Arc<str>, TopicState>> {
        (!self.hosted_by_leader_and_isr).then_some(&self.hosted_topics)
    }

    /// The cluster view of `name` (Kafka's `MetadataCache`, what Metadata
    /// answers): a stored topic, else one announced by UpdateMetadata
    /// (only the latter in ZooKeeper mode). Every partition of the topic,
    /// whichever this broker hosts.
    pub fn cluster_topic(&self, name: &str) -> Option<&TopicState> {
        self.shadowing()
            .and_then(|t| t.get(name))
            .or_else(|| self.announced.get(name))
    }

    /// [`Snapshot::cluster_topic`] by topic id.
    pub fn cluster_topic_by_id(&self, topic_id: Uuid) -> Option<&TopicState> {
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
    pub fn cluster_topics(&self) -> impl Iterator<Item = &TopicState> {
        let shadowing = self.shadowing();
        shadowing.into_iter().flat_map(|t| t.values()).chain(
            self.announced
                .values()
                .filter(move |t| !shadowing.is_some_and(|s| s.contains_key(&t.name))),
        )
    }

    /// `name`'s partition count in the cluster view (Kafka's
    /// `MetadataCache.numPartitions`): what group ids and transactional
    /// ids are mapped with (`GroupMetadataManager.partitionFor`,
    /// `TransactionStateManager.partitionFor`), on every broker alike.
    pub fn cluster_partition_count(&self, name: &str) -> Option<i32> {
        self.cluster_topic(name).map(TopicState::partition_count)
    }

    /// Every partition of [`Snapshot::cluster_topics`] (Kafka's
    /// `metadataCache.getAllTopics().flatMap(getTopicPartitions)`).
    pub fn cluster_partitions(&self) -> impl Iterator<Item = TopicPartition> + '_ {
        self.cluster_topics().flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| TopicPartition::new(&*t.name, p.partition))
        })
    }

    /// Whether Metadata knows `topic`-`partition` (Kafka's
    /// `metadataCache.contains`): a request for a partition this broker
    /// does not host is NOT_LEADER_OR_FOLLOWER then, else
    /// UNKNOWN_TOPIC_OR_PARTITION (`ReplicaManager.getPartitionOrError`).
    pub fn cluster_has_partition(&self, topic: &str, partition: i32) -> bool {
        self.cluster_topic(topic)
            .is_some_and(|t| t.partitions.iter().any(|p| p.partition == partition))
    }

    /// Whether this broker hosts `topic`-`partition` (its owner shard has
    /// the log).
    pub fn hosts_partition(&self, topic: &str, partition: i32) -> bool {
        self.hosted_topic(topic)
            .is_some_and(|t| t.partitions.iter().any(|p| p.partition == partition))
    }

    /// Whether a hosted partition is being reassigned (Kafka's
    /// `Partition.isReassigning`).
    pub fn is_reassigning(&self, topic: &str, partition: i32) -> bool {
        self.reassigning
            .get(topic)
            .is_some_and(|t| t.contains_key(&partition))
    }

    /// Whether `replica` is an adding replica of a hosted partition being
    /// reassigned (Kafka's `Partition.isAddingReplica`).
    pub fn is_adding_replica(&self, topic: &str, partition: i32, replica: BrokerId) -> bool {
        self.reassigning
            .get(topic)
            .and_then(|t| t.get(&partition))
            .is_some_and(|r| r.adding.contains(&replica))
    }

    /// The error for a partition this broker does not host (see
    /// [`Snapshot::cluster_has_partition`]).
    pub fn not_hosted_error(&self, topic: &str, partition: i32) -> ErrorCode {
        if self.cluster_has_partition(topic, partition) {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        }
    }

    /// The hosted view of `name`: the partitions this broker has a replica
    /// of (Kafka's `ReplicaManager.allPartitions`; in ZooKeeper mode any
    /// subset of the topic). Not what the topic is: that is
    /// [`Snapshot::cluster_topic`].
    pub fn hosted_topic(&self, name: &str) -> Option<&TopicState> {
        self.hosted_topics.get(name)
    }

    /// [`Snapshot::hosted_topic`] by topic id.
    pub fn hosted_topic_by_id(&self, topic_id: Uuid) -> Option<&TopicState> {
        self.hosted_topics.values().find(|t| t.topic_id == topic_id)
    }

    /// `broker_id`'s inter-broker endpoint, if it is live.
    pub fn broker(&self, broker_id: BrokerId) -> Option<&BrokerEndpoint> {
        self.brokers.iter().find(|b| b.broker_id == broker_id)
    }

    /// The live brokers as clients of listener `listener` see them: those
    /// with an endpoint of that name (Kafka's
    /// `MetadataCache.getAliveBrokerNodes(listenerName)`).
    pub fn brokers_on(&self, listener: &str) -> &[BrokerEndpoint] {
        if self.listener_brokers.is_empty() {
            return &self.brokers;
        }
        self.listener_brokers
            .get(listener)
            .map_or(&[], Vec::as_slice)
    }

    /// `broker_id`'s endpoint on listener `listener` (Kafka's
    /// `getAliveBrokerNode(brokerId, listenerName)`).
    pub fn broker_on(&self, listener: &str, broker_id: BrokerId) -> Option<&BrokerEndpoint> {
        self.brokers_on(listener)
            .iter()
            .find(|b| b.broker_id == broker_id)
    }

    /// Whether `broker_id` is live on any listener (Kafka's
    /// `aliveBrokers.contains`).
    pub fn broker_alive(&self, broker_id: BrokerId) -> bool {
        self.broker(broker_id).is_some()
            || self
                .listener_brokers
                .values()
                .any(|v| v.iter().any(|b| b.broker_id == broker_id))
    }

    /// Add or replace a topic (used by the control shard and tests).
    pub fn with_topic(mut self, topic: TopicState) -> Self {
        self.hosted_topics.insert(topic.name.clone(), topic);
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
        let hosted = self.hosted_by_leader_and_isr.then_some(&self.hosted_topics);
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
        assert!(s.hosted_topics.is_empty());
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
        assert_eq!(s.cluster_topic("t").unwrap().partitions.len(), 1);
        assert_eq!(s.cluster_topics().count(), 2);
        assert!(!s.cluster_has_partition("t", 2));
        assert_eq!(
            s.not_hosted_error("u", 0),
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        );
        assert_eq!(
            s.not_hosted_error("u", 1),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(s.cluster_partition_count("t"), Some(1));
        s.hosted_by_leader_and_isr = true;
        assert_eq!(s.cluster_topic("t").unwrap().partitions.len(), 3);
        // The whole topic's count, whichever part of it is hosted here.
        assert_eq!(s.cluster_partition_count("t"), Some(3));
        assert_eq!(s.hosted_topic("t").unwrap().partitions.len(), 1);
        assert_eq!(s.cluster_partition_count("nope"), None);
        assert_eq!(
            s.cluster_topic_by_id(Uuid::from_u128(u128::from(b't') * 100 + 3))
                .unwrap()
                .name
                .as_ref(),
            "t"
        );
        assert!(
            s.cluster_topic_by_id(Uuid::from_u128(u128::from(b't') * 100 + 1))
                .is_none(),
            "hosted one not served"
        );
        assert_eq!(s.cluster_topics().count(), 2);
        assert!(s.cluster_has_partition("t", 2) && !s.hosts_partition("t", 2));
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
        assert_eq!(s.hosted_topic_by_id(id).map(|t| &*t.name), Some("t"));
    }
}
