//! `[pure]` The broker side of UpdateMetadata (API key 6): what a
//! ZooKeeper-mode controller tells every broker about the cluster, kept as
//! Kafka 3.9's `ZkMetadataCache` keeps it, and folded into the snapshot
//! every shard answers Metadata / DescribeCluster from.
//!
//! Rules (Kafka 3.9 `KafkaApis.handleUpdateMetadataRequest`,
//! `ReplicaManager.maybeUpdateMetadataCache`, `ZkMetadataCache.updateMetadata`):
//! - a broker epoch other than -1 below this broker's own epoch (the czxid
//!   of its `/brokers/ids/<id>` znode) is STALE_BROKER_EPOCH: the request
//!   was meant for an earlier incarnation of this broker;
//! - a controller epoch below the newest one seen is STALE_CONTROLLER_EPOCH
//!   (Kafka's ControllerMovedException); nothing changes in either case;
//! - otherwise the live brokers and the controller id are replaced, and the
//!   partition states are applied one by one onto the ones known (an
//!   UpdateMetadata with no partition states keeps them all); a leader of
//!   -2 (`LeaderAndIsr.LeaderDuringDelete`) removes the partition, and a
//!   topic left without partitions loses its topic id; topic ids come from
//!   v7+ topic states, a zero id removing the known one.
//!
//! How it meets the embedded controller (single-node mode): the control
//! shard passes every snapshot it publishes through [`MetadataCache::overlay`].
//! Before the first accepted UpdateMetadata the overlay is the identity.
//! After it, the newest UpdateMetadata owns the broker list, the controller
//! id and the announced partitions (`Snapshot::announced`); the embedded
//! controller keeps owning the topics it stores (`Snapshot::topics`, whose
//! logs this broker hosts), which shadow an announced topic of the same
//! name. So a CreateTopics after an UpdateMetadata adds a topic but does not
//! bring back the one-broker view, and an UpdateMetadata never makes a shard
//! open or delete a log. In ZooKeeper mode there are no stored topics on a
//! plain broker and the view is UpdateMetadata's alone, as in Kafka.

use std::collections::BTreeMap;
use std::sync::Arc;

use indexmap::IndexMap;
use kafka_protocol_39::messages::update_metadata_request::{
    UpdateMetadataBroker, UpdateMetadataEndpoint, UpdateMetadataPartitionState,
    UpdateMetadataRequest, UpdateMetadataTopicState,
};
use kafka_protocol_39::messages::{BrokerId as BrokerId39, TopicName as TopicName39};
use kafka_protocol_39::protocol::StrBytes as StrBytes39;
use uuid::Uuid;

use super::snapshot::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch, LeaderEpoch, PartitionEpoch};

/// `LeaderAndIsr.LeaderDuringDelete`: the partition's topic is being deleted.
pub const LEADER_DURING_DELETE: BrokerId = BrokerId(-2);
/// `AbstractControlRequest.UNKNOWN_BROKER_EPOCH`: a controller older than
/// KIP-380, or a request that does not name one.
pub const UNKNOWN_BROKER_EPOCH: i64 = -1;
/// `SecurityProtocol.PLAINTEXT.id`.
pub const PLAINTEXT: i16 = 0;

/// One listener of a live broker (`UpdateMetadataEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerListener {
    /// The listener name (`PLAINTEXT`, `INTERNAL`, ...).
    pub listener: String,
    pub host: String,
    pub port: i32,
    /// `SecurityProtocol` id (0 = PLAINTEXT).
    pub security_protocol: i16,
}

/// A live broker as the controller announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub id: BrokerId,
    pub endpoints: Vec<BrokerListener>,
    pub rack: Option<String>,
}

/// One partition's state as the controller announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnouncedPartition {
    pub topic: String,
    pub partition: i32,
    pub controller_epoch: ControllerEpoch,
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub isr: Vec<BrokerId>,
    /// The partition epoch (zkVersion of its `state` znode).
    pub zk_version: PartitionEpoch,
    pub replicas: Vec<BrokerId>,
    pub offline_replicas: Vec<BrokerId>,
}

/// An UpdateMetadata request, independent of its wire version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateMetadata {
    pub controller_id: BrokerId,
    pub is_kraft_controller: bool,
    pub controller_epoch: ControllerEpoch,
    /// The target broker's epoch, or [`UNKNOWN_BROKER_EPOCH`] (v0–4).
    pub broker_epoch: i64,
    pub partition_states: Vec<AnnouncedPartition>,
    /// Topic ids of the topic states (v7+; older versions carry none).
    pub topic_ids: Vec<(String, Uuid)>,
    pub live_brokers: Vec<LiveBroker>,
}

impl UpdateMetadata {
    /// From the Kafka 3.9 codec's request at `version`: v0 brokers have one
    /// PLAINTEXT host/port, v1–2 endpoints are named after their security
    /// protocol (`ListenerName.forSecurityProtocol`), v0–4 partition states
    /// are ungrouped.
    pub fn from_request(req: &UpdateMetadataRequest, version: i16) -> Self {
        let mut partition_states: Vec<AnnouncedPartition> = req
            .ungrouped_partition_states
            .iter()
            .map(|p| announced(p.topic_name.0.as_str(), p))
            .collect();
        let mut topic_ids = Vec::new();
        for t in &req.topic_states {
            let name = t.topic_name.0.as_str();
            partition_states.extend(t.partition_states.iter().map(|p| announced(name, p)));
            if version >= 7 {
                topic_ids.push((name.to_owned(), t.topic_id));
            }
        }
        let live_brokers = req
            .live_brokers
            .iter()
            .map(|b| LiveBroker {
                id: BrokerId(b.id.0),
                endpoints: if version == 0 {
                    vec![BrokerListener {
                        listener: "PLAINTEXT".into(),
                        host: b.v0_host.as_str().to_owned(),
                        port: b.v0_port,
                        security_protocol: PLAINTEXT,
                    }]
                } else {
                    b.endpoints.iter().map(|e| listener(e, version)).collect()
                },
                // No rack before v2 (the codec's default there is "").
                rack: b
                    .rack
                    .as_ref()
                    .filter(|_| version >= 2)
                    .map(|r| r.as_str().to_owned()),
            })
            .collect();
        Self {
            controller_id: BrokerId(req.controller_id.0),
            is_kraft_controller: req.is_k_raft_controller,
            controller_epoch: ControllerEpoch(req.controller_epoch),
            broker_epoch: if version >= 5 {
                req.broker_epoch
            } else {
                UNKNOWN_BROKER_EPOCH
            },
            partition_states,
            topic_ids,
            live_brokers,
        }
    }

    /// The Kafka 3.9 codec's request for the newest version (v8, what a 3.9
    /// controller sends, `ControllerChannelManager`): partition states
    /// grouped by topic in first-seen order, with the ids in `topic_ids`
    /// (zero when unknown). `Type` stays 0 (UNKNOWN) in plain ZK mode.
    pub fn to_request(&self) -> UpdateMetadataRequest {
        let ids: BTreeMap<&str, Uuid> = self
            .topic_ids
            .iter()
            .map(|(t, id)| (t.as_str(), *id))
            .collect();
        let mut topics: IndexMap<&str, Vec<UpdateMetadataPartitionState>> = IndexMap::new();
        for p in &self.partition_states {
            topics
                .entry(p.topic.as_str())
                .or_default()
                .push(partition_state(p));
        }
        let topic_states = topics
            .into_iter()
            .map(|(name, states)| {
                UpdateMetadataTopicState::default()
                    .with_topic_name(TopicName39(StrBytes39::from_string(name.to_owned())))
                    .with_topic_id(ids.get(name).copied().unwrap_or(Uuid::nil()))
                    .with_partition_states(states)
            })
            .collect();
        let live_brokers = self
            .live_brokers
            .iter()
            .map(|b| {
                UpdateMetadataBroker::default()
                    .with_id(BrokerId39(b.id.0))
                    .with_endpoints(
                        b.endpoints
                            .iter()
                            .map(|e| {
                                UpdateMetadataEndpoint::default()
                                    .with_port(e.port)
                                    .with_host(StrBytes39::from_string(e.host.clone()))
                                    .with_listener(StrBytes39::from_string(e.listener.clone()))
                                    .with_security_protocol(e.security_protocol)
                            })
                            .collect(),
                    )
                    .with_rack(b.rack.clone().map(StrBytes39::from_string))
            })
            .collect();
        UpdateMetadataRequest::default()
            .with_controller_id(BrokerId39(self.controller_id.0))
            .with_is_k_raft_controller(self.is_kraft_controller)
            .with_controller_epoch(self.controller_epoch.0)
            .with_broker_epoch(self.broker_epoch)
            .with_topic_states(topic_states)
            .with_live_brokers(live_brokers)
    }
}

fn ids(v: &[BrokerId39]) -> Vec<BrokerId> {
    v.iter().map(|b| BrokerId(b.0)).collect()
}

fn ids39(v: &[BrokerId]) -> Vec<BrokerId39> {
    v.iter().map(|b| BrokerId39(b.0)).collect()
}

fn announced(topic: &str, p: &UpdateMetadataPartitionState) -> AnnouncedPartition {
    AnnouncedPartition {
        topic: topic.to_owned(),
        partition: p.partition_index,
        controller_epoch: ControllerEpoch(p.controller_epoch),
        leader: BrokerId(p.leader.0),
        leader_epoch: LeaderEpoch(p.leader_epoch),
        isr: ids(&p.isr),
        zk_version: PartitionEpoch(p.zk_version),
        replicas: ids(&p.replicas),
        offline_replicas: ids(&p.offline_replicas),
    }
}

fn partition_state(p: &AnnouncedPartition) -> UpdateMetadataPartitionState {
    UpdateMetadataPartitionState::default()
        .with_partition_index(p.partition)
        .with_controller_epoch(p.controller_epoch.0)
        .with_leader(BrokerId39(p.leader.0))
        .with_leader_epoch(p.leader_epoch.0)
        .with_isr(ids39(&p.isr))
        .with_zk_version(p.zk_version.0)
        .with_replicas(ids39(&p.replicas))
        .with_offline_replicas(ids39(&p.offline_replicas))
}

fn listener(e: &UpdateMetadataEndpoint, version: i16) -> BrokerListener {
    let name = if version >= 3 {
        e.listener.as_str().to_owned()
    } else {
        security_protocol_name(e.security_protocol).to_owned()
    };
    BrokerListener {
        listener: name,
        host: e.host.as_str().to_owned(),
        port: e.port,
        security_protocol: e.security_protocol,
    }
}

/// `SecurityProtocol.name` by id.
fn security_protocol_name(id: i16) -> &'static str {
    match id {
        0 => "PLAINTEXT",
        1 => "SSL",
        2 => "SASL_PLAINTEXT",
        3 => "SASL_SSL",
        _ => "UNKNOWN",
    }
}

/// Kafka's `KafkaController.InitialControllerEpoch`.
const INITIAL_CONTROLLER_EPOCH: ControllerEpoch = ControllerEpoch(0);

/// What this broker knows from UpdateMetadata (Kafka's `ZkMetadataCache`
/// plus `ReplicaManager.controllerEpoch`). Owned by the control shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataCache {
    /// The newest controller epoch an accepted request carried.
    controller_epoch: ControllerEpoch,
    /// Whether any UpdateMetadata was accepted (else [`Self::overlay`] is
    /// the identity).
    applied: bool,
    controller_id: BrokerId,
    /// By id, ascending.
    live_brokers: Vec<LiveBroker>,
    partitions: BTreeMap<(String, i32), AnnouncedPartition>,
    topic_ids: BTreeMap<String, Uuid>,
}

impl Default for MetadataCache {
    fn default() -> Self {
        Self::new()
    }
}

impl MetadataCache {
    pub fn new() -> Self {
        Self {
            controller_epoch: INITIAL_CONTROLLER_EPOCH,
            applied: false,
            controller_id: BrokerId::NONE,
            live_brokers: Vec::new(),
            partitions: BTreeMap::new(),
            topic_ids: BTreeMap::new(),
        }
    }

    /// Apply `req` for a broker whose own epoch is `own_broker_epoch`
    /// (`None` while it is not registered: no request is stale then).
    /// NONE when applied; STALE_BROKER_EPOCH or STALE_CONTROLLER_EPOCH,
    /// with nothing changed, when fenced.
    pub fn on_update_metadata(
        &mut self,
        req: UpdateMetadata,
        own_broker_epoch: Option<i64>,
    ) -> ErrorCode {
        let stale_broker = own_broker_epoch
            .is_some_and(|own| req.broker_epoch != UNKNOWN_BROKER_EPOCH && req.broker_epoch < own);
        if stale_broker {
            return ErrorCode::STALE_BROKER_EPOCH;
        }
        if req.controller_epoch < self.controller_epoch {
            return ErrorCode::STALE_CONTROLLER_EPOCH;
        }
        self.controller_epoch = req.controller_epoch;
        self.applied = true;
        self.controller_id = if req.controller_id.0 < 0 {
            BrokerId::NONE
        } else {
            req.controller_id
        };
        let mut brokers = req.live_brokers;
        brokers.sort_by_key(|b| b.id);
        brokers.dedup_by_key(|b| b.id);
        self.live_brokers = brokers;
        for (topic, id) in req.topic_ids {
            if id.is_nil() {
                self.topic_ids.remove(&topic);
            } else {
                self.topic_ids.insert(topic, id);
            }
        }
        for p in req.partition_states {
            let key = (p.topic.clone(), p.partition);
            if p.leader == LEADER_DURING_DELETE {
                self.partitions.remove(&key);
                let topic_left = self.partitions.keys().any(|(t, _)| *t == key.0);
                if !topic_left {
                    self.topic_ids.remove(&key.0);
                }
            } else {
                self.partitions.insert(key, p);
            }
        }
        self.check_invariants();
        ErrorCode::NONE
    }

    /// LeaderAndIsr or StopReplica was accepted at `epoch`: Kafka fences
    /// all three requests with one `ReplicaManager.controllerEpoch`.
    pub fn observe_controller_epoch(&mut self, epoch: ControllerEpoch) {
        self.controller_epoch = self.controller_epoch.max(epoch);
    }

    /// The newest controller epoch accepted so far.
    pub fn controller_epoch(&self) -> ControllerEpoch {
        self.controller_epoch
    }

    pub fn controller_id(&self) -> BrokerId {
        self.controller_id
    }

    pub fn live_brokers(&self) -> &[LiveBroker] {
        &self.live_brokers
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&AnnouncedPartition> {
        self.partitions.get(&(topic.to_owned(), partition))
    }

    pub fn topic_id(&self, topic: &str) -> Option<Uuid> {
        self.topic_ids.get(topic).copied()
    }

    /// `snapshot` as this broker must see it (see the module header for
    /// who owns which part): `brokers` on the inter-broker listener
    /// `inter_broker_listener`, and every listener name's own view in
    /// `listener_brokers`. A broker without an endpoint of a name is left
    /// out of that name's view (Kafka's `getAliveBrokerNodes(listenerName)`).
    pub fn overlay(&self, mut snapshot: Snapshot, inter_broker_listener: &str) -> Snapshot {
        if !self.applied {
            return snapshot;
        }
        snapshot.controller_id = self.controller_id;
        let mut views: BTreeMap<Arc<str>, Vec<BrokerEndpoint>> = BTreeMap::new();
        for b in &self.live_brokers {
            for e in &b.endpoints {
                let Ok(port) = u16::try_from(e.port) else {
                    continue;
                };
                let view = views.entry(Arc::from(e.listener.as_str())).or_default();
                // One endpoint per name and broker (the first, as Kafka's
                // map from listener name keeps one).
                if view.last().is_some_and(|last| last.broker_id == b.id) {
                    continue;
                }
                view.push(BrokerEndpoint {
                    broker_id: b.id,
                    host: e.host.clone(),
                    port,
                    rack: b.rack.clone(),
                });
            }
        }
        snapshot.brokers = views
            .get(inter_broker_listener)
            .cloned()
            .unwrap_or_default();
        snapshot.listener_brokers = views;
        let mut announced: IndexMap<Arc<str>, TopicState> = IndexMap::new();
        // BTreeMap order: topics by name, partitions ascending.
        for ((topic, _), p) in &self.partitions {
            let name: Arc<str> = Arc::from(topic.as_str());
            let entry = announced.entry(name.clone()).or_insert_with(|| TopicState {
                name,
                topic_id: self.topic_id(topic).unwrap_or(Uuid::nil()),
                is_internal: topic == "__consumer_offsets" || topic == "__transaction_state",
                partitions: Vec::new(),
                configs: BTreeMap::new(),
            });
            entry.partitions.push(PartitionState {
                partition: p.partition,
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
                offline_replicas: p.offline_replicas.clone(),
            });
        }
        snapshot.announced = announced;
        snapshot
    }

    /// Brokers are unique and ascending; a removed partition is gone.
    pub fn check_invariants(&self) {
        debug_assert!(self.live_brokers.windows(2).all(|w| w[0].id < w[1].id));
        debug_assert!(self
            .partitions
            .values()
            .all(|p| p.leader != LEADER_DURING_DELETE));
    }
}

#[cfg(test)]
mod tests;
