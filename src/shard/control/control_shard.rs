//! `[drv]` The control shard's own part (ARCHITECTURE.md §7): the
//! [`AdminManager`] it owns, and the requests data shards send it:
//! [`ControlRequest`]. Every change the admin manager makes is followed by a
//! fresh snapshot published to every data shard (`router::publish`) before
//! the answer goes back. The client quotas and dynamic broker configs it
//! keeps in the metadata store are [`client_quotas`] and [`broker_configs`];
//! the ACLs (`AclAuthorizer`'s znodes) are [`acls`].

pub mod acls;
pub mod broker_configs;
pub mod client_quotas;
pub mod scram_credentials;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

use futures_lite::future::BoxedLocal;
use glommio::sync::Semaphore;

use std::rc::Rc;

use crate::config::dynamic::DynamicBrokerConfigs;
use crate::controller::admin_requests::{
    AdminFailure, AdminRequest, AdminResponse, BrokerConfigCall,
};
use crate::controller::channel::ControllerChannel;
use crate::controller::rebalance::ElectionType;
use crate::controller::zk_mode::{
    AllocateAnswer, AlterAnswer, AlterAsk, ElectAnswer, ListAnswer, ReassignAnswer, ReassignAsk,
    Reply, ShutdownAnswer, ShutdownRefusal,
};
use crate::controller::AdminManager;
use crate::metadata::hosted::HostedPartitions;
use crate::metadata::leader_and_isr::{LeaderAndIsr, PartitionErrors, StopReplica};
use crate::metadata::quotas::{QuotaCall, QuotaReply};
use crate::metadata::quotas::{QuotaConfigs, Sensors};
use crate::metadata::update_metadata::{MetadataCache, UpdateMetadata};
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::replication::isr_change::{IsrChange, IsrChangeAnswer};
use crate::storage::log_dir::LogDirs;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::paths::{self, ConfigZNode};
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};
use std::sync::Arc;

/// The Kafka error a failed store operation answers a client with
/// (`Errors.forException` of a ZooKeeper exception): an invalid path (a
/// group or topic name no znode can hold) is the client's INVALID_REQUEST,
/// anything else UNKNOWN_SERVER_ERROR.
fn store_error_code(e: &StoreError) -> ErrorCode {
    match e {
        StoreError::InvalidPath(_) => ErrorCode::INVALID_REQUEST,
        _ => ErrorCode::UNKNOWN_SERVER_ERROR,
    }
}

/// Requests to the control shard.
#[derive(Debug)]
pub enum ControlRequest {
    /// Metadata named topics that do not exist and may be auto-created
    /// (`auto.create.topics.enable`).
    AutoCreateTopics { topics: Vec<String> },
    /// A topic admin operation or InitProducerId; answered after the
    /// resulting snapshot reached every data shard.
    Admin(Box<AdminRequest>),
    /// A controller's UpdateMetadata, received on a data shard: applied to
    /// the [`MetadataCache`] and published; answered once every data shard
    /// shows it.
    UpdateMetadata(Box<UpdateMetadata>),
    /// A controller's LeaderAndIsr: applied to the [`HostedPartitions`]
    /// and, in ZooKeeper mode, published as the hosted topics; answered
    /// once every owner opened or changed its partitions.
    LeaderAndIsr(Box<LeaderAndIsr>),
    /// A broker's ControlledShutdown, for this broker's controller (the
    /// ZooKeeper-mode event queue answers it; NOT_CONTROLLER elsewhere).
    ControlledShutdown { broker: BrokerId, broker_epoch: i64 },
    /// An admin client's ElectLeaders, for this broker's controller
    /// (`None`: every partition).
    ElectLeaders {
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    },
    /// An admin client's AlterPartitionReassignments or
    /// ListPartitionReassignments, for this broker's controller.
    Reassignments(ReassignmentCall),
    /// Another broker's AllocateProducerIds, for this broker's controller.
    AllocateProducerIds { broker: BrokerId, broker_epoch: i64 },
    /// Client quotas: AlterClientQuotas, DescribeClientQuotas, and the
    /// bytes of a request a quota applies to.
    ClientQuotas(QuotaCall),
    /// Describe/AlterUserScramCredentials (KIP-554).
    ScramCredentials(scram_credentials::ScramCall),
    /// AlterConfigs / IncrementalAlterConfigs of a BROKER resource (this
    /// broker's entity or the cluster default).
    BrokerConfigs(BrokerConfigCall),
    /// A controller's StopReplica: partitions stop being hosted (owners
    /// close them) and those with delete lose their logs before the answer.
    StopReplica(Box<StopReplica>),
    /// A partition leader's ISR change, from its owner shard, for the
    /// active controller as AlterPartition; answered with the controller's
    /// answer.
    AlterPartition(Box<IsrChange>),
    /// Another broker's AlterPartition, for this broker's controller.
    AlterPartitionReceived(Box<AlterAsk>),
    /// OffsetCommit v0: `(topic, partition, offset)`s of `group` written to
    /// the metadata store, where Kafka 3.9 in ZooKeeper mode keeps them.
    CommitOffsetsToStore {
        group: String,
        offsets: Vec<(String, i32, i64)>,
    },
    /// OffsetFetch v0: those offsets read back.
    FetchOffsetsFromStore {
        group: String,
        partitions: Vec<(String, i32)>,
    },
    /// DescribeConfigs of a topic in ZooKeeper mode: its stored overrides
    /// (`/config/topics/<t>`), whether or not this broker hosts it.
    TopicConfigs { topic: String },
    /// A coordinator about to load `__consumer_offsets` or
    /// `__transaction_state` partition `tp` as its leader in
    /// `leader_epoch`: checked against the partition-state znode.
    ConfirmLeadership {
        tp: TopicPartition,
        leader_epoch: i32,
    },
    /// CreateAcls / DeleteAcls: written to the store, then republished.
    Acls(acls::AclCall),
}

/// Answers to [`ControlRequest`]s.
#[derive(Debug, PartialEq)]
pub enum ControlResponse {
    /// Per topic: NONE once created, or why not.
    AutoCreated {
        results: Vec<(String, ErrorCode)>,
    },
    /// Per-item results of an `Admin` request.
    Admin(Box<AdminResponse>),
    /// NONE, STALE_BROKER_EPOCH or STALE_CONTROLLER_EPOCH.
    UpdateMetadata(ErrorCode),
    LeaderAndIsr(PartitionErrors),
    StopReplica(PartitionErrors),
    ControlledShutdown(ShutdownAnswer),
    ElectLeaders(ElectAnswer),
    Reassignments(ReassignmentReply),
    ClientQuotas(QuotaReply),
    ScramCredentials(scram_credentials::ScramReply),
    AllocateProducerIds(AllocateAnswer),
    BrokerConfigs(Result<(), AdminFailure>),
    AlterPartition(IsrChangeAnswer),
    AlterPartitionReceived(AlterAnswer),
    /// Per offset, in request order: NONE or why it was not stored.
    OffsetsCommittedToStore(Vec<ErrorCode>),
    /// Per partition, in request order: the stored offset, `None` when
    /// there is none, or the store's error.
    OffsetsFromStore(Vec<Result<Option<i64>, ErrorCode>>),
    /// A topic's stored overrides; `None` when the store could not be read.
    TopicConfigs(Option<std::collections::BTreeMap<String, String>>),
    /// `Err` says why the store does not name this broker leader in that
    /// epoch, or why it could not be read.
    LeadershipConfirmed(Result<(), String>),
    Acls(acls::AclReply),
}

/// The control shard's part of its context.
pub struct ControlShard {
    pub admin: AdminManager,
    /// One admin operation at a time: store updates and the publication
    /// that follows must not interleave (mesh requests run concurrently).
    pub serial: Semaphore,
    /// What UpdateMetadata said (Kafka's ZkMetadataCache), folded into
    /// every snapshot published from here.
    pub metadata_cache: RefCell<MetadataCache>,
    /// The admin manager's snapshot last published, before the overlay: an
    /// UpdateMetadata republishes it with the new overlay.
    last_base: RefCell<Option<Snapshot>>,
    /// Version of the last snapshot published: publications are numbered
    /// here, since the admin manager and UpdateMetadata both publish.
    published_version: Cell<u64>,
    /// What LeaderAndIsr / StopReplica made this broker host (Kafka's
    /// ReplicaManager partition table).
    pub hosted: RefCell<HostedPartitions>,
    /// ZooKeeper mode (`zookeeper.connect` set): every publication's
    /// `Snapshot::topics` is [`Self::hosted`], whatever the controller's
    /// snapshot held, so only LeaderAndIsr decides which logs this broker
    /// opens, as in Kafka. In embedded mode the stored topics stay hosted.
    zookeeper_mode: bool,
    me: BrokerId,
    /// ZooKeeper mode, once started: hands a ControlledShutdown to the
    /// registration / election queue, which runs the controller's duties
    /// while this broker is controller.
    pub controller_queue: RefCell<Option<Rc<dyn ControllerQueue>>>,
    /// This broker's ISR changes waiting for the next AlterPartition, and
    /// whether one is in flight (Kafka's `AlterPartitionManager`: one
    /// request at a time, carrying everything queued meanwhile).
    pub isr_changes: RefCell<Vec<(IsrChange, Reply<IsrChangeAnswer>)>>,
    pub isr_sending: Cell<bool>,
    /// The connection AlterPartition takes to the active controller.
    pub controller_link: RefCell<Option<(BrokerId, ControllerChannel)>>,
    /// The stored client quotas, folded into every publication.
    pub client_quotas: RefCell<Arc<QuotaConfigs>>,
    /// The stored SCRAM credentials, folded into every publication.
    pub scram_credentials: RefCell<Arc<crate::metadata::scram_credentials::ScramCredentials>>,
    /// The broker's account of every quota entity's bytes.
    pub quota_sensors: RefCell<Sensors>,
    /// This broker's dynamic configs, folded into every publication.
    pub broker_configs: RefCell<Arc<DynamicBrokerConfigs>>,
    /// The ACLs (`AclAuthorizer.aclCache`), folded into every publication.
    acls: RefCell<Arc<crate::acl::authorizer::AclCache>>,
    /// The controller's and ZooKeeper client's metrics (`/metrics`),
    /// given at boot.
    pub metrics: Rc<crate::metrics::control::ControlMetrics>,
    /// What reconfigures the SSL listeners' stores (KIP-226; set by
    /// `set_ssl_listeners`, else none).
    ssl_listeners: RefCell<Rc<dyn crate::config::dynamic::security::ListenerSslReconfigurable>>,
    /// The broker's log dirs (which are offline: LeaderAndIsr answers).
    log_dirs: Arc<LogDirs>,
}

/// What other brokers ask this broker's controller, queued on the
/// ZooKeeper-mode event queue (`ZkBroker::request_*`) and answered there
/// (NOT_CONTROLLER while this broker is not the controller).
pub trait ControllerQueue {
    fn controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> BoxedLocal<ShutdownAnswer>;
    fn alter_partition(&self, ask: AlterAsk) -> BoxedLocal<AlterAnswer>;
    fn elect_leaders(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> BoxedLocal<ElectAnswer>;
    fn reassignments(&self, call: ReassignmentCall) -> BoxedLocal<ReassignmentReply>;
    fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> BoxedLocal<AllocateAnswer>;
}

/// A reassignment call for the controller.
#[derive(Debug)]
pub enum ReassignmentCall {
    Alter(ReassignAsk),
    /// `None`: every moving partition.
    List(Option<BTreeSet<TopicPartition>>),
}

/// The controller's answer to a [`ReassignmentCall`].
#[derive(Debug, PartialEq)]
pub enum ReassignmentReply {
    Altered(ReassignAnswer),
    Listed(ListAnswer),
}

impl ReassignmentCall {
    /// The answer of a broker that is not the controller.
    pub fn not_controller(&self) -> ReassignmentReply {
        match self {
            Self::Alter(_) => ReassignmentReply::Altered(Err(ErrorCode::NOT_CONTROLLER)),
            Self::List(_) => ReassignmentReply::Listed(Err(ErrorCode::NOT_CONTROLLER)),
        }
    }
}

impl ControlShard {
    /// A broker's ControlledShutdown, queued on this broker's ZooKeeper
    /// event queue (NOT_CONTROLLER when it is not the controller).
    pub async fn controlled_shutdown(&self, broker: BrokerId, broker_epoch: i64) -> ShutdownAnswer {
        let queue = self.controller_queue.borrow().clone();
        match queue {
            Some(queue) => queue.controlled_shutdown(broker, broker_epoch).await,
            None => Err(ShutdownRefusal::NotController),
        }
    }

    /// Another broker's AllocateProducerIds: the controller's queue
    /// answers (NOT_CONTROLLER when this broker is not the controller, or
    /// in embedded mode, where there are no other brokers).
    pub async fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> AllocateAnswer {
        let queue = self.controller_queue.borrow().clone();
        match queue {
            Some(queue) => queue.allocate_producer_ids(broker, broker_epoch).await,
            None => Err(ErrorCode::NOT_CONTROLLER),
        }
    }

    /// An admin client's ElectLeaders, queued on this broker's ZooKeeper
    /// event queue (NOT_CONTROLLER when it is not the controller). Without
    /// ZooKeeper the one broker leads every partition it has, so each is
    /// ELECTION_NOT_NEEDED (or UNKNOWN_TOPIC_OR_PARTITION), as a Kafka
    /// controller of a one-broker cluster answers.
    pub async fn elect_leaders(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
        snapshot: &crate::metadata::Snapshot,
    ) -> ElectAnswer {
        if !self.zookeeper_mode {
            let asked: BTreeSet<TopicPartition> =
                partitions.unwrap_or_else(|| snapshot.cluster_partitions().collect());
            return Ok(asked
                .into_iter()
                .map(|tp| {
                    let r = if snapshot.cluster_has_partition(&tp.topic, tp.partition) {
                        (ErrorCode::ELECTION_NOT_NEEDED, "Leader election not needed")
                    } else {
                        (
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            "The partition does not exist.",
                        )
                    };
                    (tp, Err((r.0, r.1.to_owned())))
                })
                .collect());
        }
        let queue = self.controller_queue.borrow().clone();
        match queue {
            Some(queue) => queue.elect_leaders(kind, partitions).await,
            None => Err(ErrorCode::NOT_CONTROLLER),
        }
    }

    /// A reassignment call, queued on this broker's ZooKeeper event queue
    /// (NOT_CONTROLLER when it is not the controller). Without ZooKeeper
    /// the one broker is every partition's only possible replica, as for a
    /// Kafka controller of a one-broker cluster: nothing is ever moving; a
    /// target of exactly this broker is accepted (already in place), any
    /// other broker is not alive (INVALID_REPLICA_ASSIGNMENT), a
    /// cancellation finds no reassignment in progress.
    pub async fn reassignments(
        &self,
        call: ReassignmentCall,
        snapshot: &crate::metadata::Snapshot,
    ) -> ReassignmentReply {
        if self.zookeeper_mode {
            let queue = self.controller_queue.borrow().clone();
            return match queue {
                Some(queue) => queue.reassignments(call).await,
                None => call.not_controller(),
            };
        }
        let asked = match call {
            ReassignmentCall::List(_) => return ReassignmentReply::Listed(Ok(BTreeMap::new())),
            ReassignmentCall::Alter(asked) => asked,
        };
        let live = BTreeSet::from([self.me]);
        let answers = asked
            .into_iter()
            .map(|(tp, target)| {
                let known = snapshot
                    .cluster_topic(&tp.topic)
                    .is_some_and(|t| t.partitions.iter().any(|p| p.partition == tp.partition));
                let current =
                    crate::controller::reassignment::ReplicaAssignment::settled(vec![self.me]);
                let r = match target {
                    _ if !known => Err((
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        "The partition does not exist.".to_owned(),
                    )),
                    None => Err((
                        ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                        "No reassignment in progress".to_owned(),
                    )),
                    Some(t) => {
                        crate::controller::reassignment::validate_target(&current, &t, &live)
                    }
                };
                (tp, r)
            })
            .collect();
        ReassignmentReply::Altered(Ok(answers))
    }

    /// A partition leader's AlterPartition, queued on this broker's
    /// ZooKeeper event queue (NOT_CONTROLLER when it is not the controller).
    pub async fn alter_partition(&self, ask: AlterAsk) -> AlterAnswer {
        let queue = self.controller_queue.borrow().clone();
        match queue {
            Some(queue) => queue.alter_partition(ask).await,
            None => Err(ErrorCode::NOT_CONTROLLER),
        }
    }

    /// The control part of broker `me`; `zookeeper_mode` when
    /// `zookeeper.connect` is set.
    pub fn new(
        admin: AdminManager,
        me: BrokerId,
        zookeeper_mode: bool,
        log_dirs: Arc<LogDirs>,
    ) -> Self {
        Self {
            admin,
            serial: Semaphore::new(1),
            metadata_cache: RefCell::new(MetadataCache::new()),
            last_base: RefCell::new(None),
            published_version: Cell::new(0),
            hosted: RefCell::new(HostedPartitions::new()),
            zookeeper_mode,
            me,
            controller_queue: RefCell::new(None),
            isr_changes: RefCell::new(Vec::new()),
            isr_sending: Cell::new(false),
            controller_link: RefCell::new(None),
            client_quotas: RefCell::new(Arc::new(QuotaConfigs::default())),
            scram_credentials: RefCell::new(Arc::default()),
            quota_sensors: RefCell::new(Sensors::default()),
            broker_configs: RefCell::new(Arc::default()),
            acls: RefCell::new(Arc::default()),
            ssl_listeners: RefCell::new(Rc::new(crate::config::dynamic::security::NoSslListeners)),
            log_dirs,
            metrics: Rc::default(),
        }
    }

    /// The snapshot to publish for the controller's `base`: the
    /// UpdateMetadata overlay (`brokers` on the inter-broker listener
    /// `inter_broker_listener`, every listener's view), numbered past
    /// every earlier publication. `base` is kept for the next
    /// [`Self::apply_update_metadata`].
    pub fn prepare_publication(&self, base: Snapshot, inter_broker_listener: &str) -> Snapshot {
        let mut snapshot = self
            .metadata_cache
            .borrow()
            .overlay(base.clone(), inter_broker_listener);
        if self.zookeeper_mode {
            snapshot.hosted_topics = self.hosted.borrow().topic_states();
            snapshot.reassigning = Arc::new(self.hosted.borrow().reassigning());
            snapshot.hosted_by_leader_and_isr = true;
        }
        snapshot.client_quotas = self.client_quotas();
        snapshot.scram_credentials = self.scram_credentials();
        snapshot.broker_configs = self.broker_configs();
        snapshot.acls = self.acls();
        let version = snapshot.version.max(self.published_version.get() + 1);
        self.published_version.set(version);
        snapshot.version = version;
        *self.last_base.borrow_mut() = Some(base);
        snapshot
    }

    /// Apply `req` (the broker epoch fence uses the controller's
    /// registration); `Some(base)` to republish when it was accepted.
    /// `current` is the snapshot shown now, used when nothing was
    /// published from here yet.
    pub fn apply_update_metadata(
        &self,
        req: UpdateMetadata,
        current: &Snapshot,
    ) -> (ErrorCode, Option<Snapshot>) {
        let error = self
            .metadata_cache
            .borrow_mut()
            .on_update_metadata(req, self.admin.broker_epoch());
        if error != ErrorCode::NONE {
            return (error, None);
        }
        let epoch = self.metadata_cache.borrow().controller_epoch();
        self.hosted.borrow_mut().observe_controller_epoch(epoch);
        (error, Some(self.base(current)))
    }

    /// The snapshot to republish after a change folded in at
    /// publication (client quotas, dynamic broker configs).
    pub fn republish_base(&self, current: &Snapshot) -> Snapshot {
        self.base(current)
    }

    /// The controller's snapshot last published (or `current`), to
    /// republish with a new overlay or hosted set.
    fn base(&self, current: &Snapshot) -> Snapshot {
        self.last_base
            .borrow()
            .clone()
            .unwrap_or_else(|| current.clone())
    }

    /// Apply a LeaderAndIsr (fenced with this broker's registration epoch);
    /// `Some(base)` to republish when it changed what this broker hosts in
    /// ZooKeeper mode. Configs of newly hosted topics are read first
    /// (`/config/topics/<t>`, none when absent), once per topic.
    pub async fn apply_leader_and_isr(
        &self,
        req: LeaderAndIsr,
        current: &Snapshot,
    ) -> (PartitionErrors, Option<Snapshot>) {
        let (errors, before) = {
            let mut hosted = self.hosted.borrow_mut();
            let before = hosted.clone();
            let errors = hosted.on_leader_and_isr(&req, self.me, self.admin.broker_epoch());
            (errors, before)
        };
        if errors.error != ErrorCode::NONE {
            return (errors, None);
        }
        let errors = self.storage_errors(errors);
        self.metadata_cache
            .borrow_mut()
            .observe_controller_epoch(req.controller_epoch);
        self.read_missing_topic_configs().await;
        let changed = *self.hosted.borrow() != before;
        (
            errors,
            (changed && self.zookeeper_mode).then(|| self.base(current)),
        )
    }

    /// A partition whose log is in an offline log dir answers
    /// KAFKA_STORAGE_ERROR (Kafka's `HostedPartition.Offline` in
    /// `becomeLeaderOrFollower`): the controller takes that replica
    /// offline and elects elsewhere.
    fn storage_errors(&self, mut errors: PartitionErrors) -> PartitionErrors {
        let dirs = &self.log_dirs;
        if dirs.online().iter().all(|up| *up) {
            return errors;
        }
        for (topic, partition, e) in &mut errors.partitions {
            let tp = TopicPartition::new(topic.as_str(), *partition);
            // Before the leader epoch's check, as Kafka's (an unchanged
            // epoch would answer STALE_CONTROLLER_EPOCH).
            if dirs.holding(&tp).is_some_and(|d| !dirs.is_online(d)) {
                *e = ErrorCode::KAFKA_STORAGE_ERROR;
            }
        }
        errors
    }

    /// Apply a StopReplica; `Some(base)` to republish (ZooKeeper mode)
    /// and the partitions whose logs must go.
    pub fn apply_stop_replica(
        &self,
        req: StopReplica,
        current: &Snapshot,
    ) -> (PartitionErrors, Option<Snapshot>, Vec<(String, i32)>) {
        let (errors, delete) = self
            .hosted
            .borrow_mut()
            .on_stop_replica(&req, self.admin.broker_epoch());
        if errors.error != ErrorCode::NONE {
            return (errors, None, Vec::new());
        }
        self.metadata_cache
            .borrow_mut()
            .observe_controller_epoch(req.controller_epoch);
        // In embedded mode the stored topics are hosted whatever this
        // says: nothing to republish or delete.
        if !self.zookeeper_mode {
            return (errors, None, Vec::new());
        }
        (errors, Some(self.base(current)), delete)
    }

    /// OffsetCommit v0's write: each offset set, or created with its
    /// missing parents (Kafka's `KafkaZkClient.setOrCreateConsumerOffset`).
    pub async fn commit_offsets_to_store(
        &self,
        group: &str,
        offsets: Vec<(String, i32, i64)>,
    ) -> Vec<ErrorCode> {
        let store = self.admin.store();
        let mut out = Vec::with_capacity(offsets.len());
        for (topic, partition, offset) in offsets {
            let path = paths::consumer_offset(group, &topic, partition);
            let data = paths::encode_consumer_offset(offset);
            let mut result = store.set(&path, &data, None).await.map(|_| ());
            if matches!(&result, Err(e) if e.is_no_node()) {
                result = match create_recursive(store, &path, &data, CreateMode::Persistent).await {
                    Ok(_) => Ok(()),
                    // Created meanwhile by another commit: set it.
                    Err(StoreError::NodeExists(_)) => {
                        store.set(&path, &data, None).await.map(|_| ())
                    }
                    Err(e) => Err(e),
                };
            }
            out.push(match result {
                Ok(()) => ErrorCode::NONE,
                Err(e) => {
                    tracing::warn!(%path, error = %e, "cannot store a v0 offset commit");
                    store_error_code(&e)
                }
            });
        }
        out
    }

    /// OffsetFetch v0's read (Kafka's `KafkaZkClient.getConsumerOffset`).
    pub async fn fetch_offsets_from_store(
        &self,
        group: &str,
        partitions: Vec<(String, i32)>,
    ) -> Vec<Result<Option<i64>, ErrorCode>> {
        let store = self.admin.store();
        let mut out = Vec::with_capacity(partitions.len());
        for (topic, partition) in partitions {
            let path = paths::consumer_offset(group, &topic, partition);
            out.push(match store.get(&path).await {
                Ok((data, _)) => match paths::decode_consumer_offset(&data) {
                    Some(offset) => Ok(Some(offset)),
                    None => {
                        tracing::warn!(%path, "consumer offset znode is not a number");
                        Err(ErrorCode::UNKNOWN_SERVER_ERROR)
                    }
                },
                Err(e) if e.is_no_node() => Ok(None),
                Err(e) => {
                    tracing::warn!(%path, error = %e, "cannot read a v0 offset");
                    Err(store_error_code(&e))
                }
            });
        }
        out
    }

    /// Kafka's broker reads a topic's config overrides when it first hosts
    /// it (`LogManager` / `ConfigRepository`); later changes arrive through
    /// `/config/changes` ([`Self::reload_topic_configs`]).
    async fn read_missing_topic_configs(&self) {
        let missing = self.hosted.borrow().topics_missing_configs();
        for topic in missing {
            // Not recorded on a failed read: the next LeaderAndIsr tries again.
            if let Some(configs) = self.read_topic_configs(&topic).await {
                self.hosted.borrow_mut().set_topic_configs(&topic, configs);
            }
        }
    }

    /// `/config/changes` named `topics`: each hosted one's overrides are
    /// read again (Kafka's `TopicConfigHandler.processConfigChanges`);
    /// `Some(base)` to republish when any changed, so the owner shards
    /// apply the new config to those open logs.
    pub async fn reload_topic_configs(
        &self,
        topics: &BTreeSet<String>,
        current: &Snapshot,
    ) -> Option<Snapshot> {
        let before = self.hosted.borrow().clone();
        for topic in topics {
            if let Some(configs) = self.read_topic_configs(topic).await {
                self.hosted.borrow_mut().set_topic_configs(topic, configs);
            }
        }
        let changed = *self.hosted.borrow() != before;
        (changed && self.zookeeper_mode).then(|| self.base(current))
    }

    /// `/config/topics/<topic>`'s overrides (none when absent; defaults
    /// for a malformed znode); `None` when the store could not be read.
    pub async fn read_topic_configs(
        &self,
        topic: &str,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        match self.admin.store().get(&paths::topic_config(topic)).await {
            Ok((data, _)) => match ConfigZNode::decode(&data) {
                Ok(z) => Some(z.config),
                Err(e) => {
                    tracing::warn!(%topic, error = %e, "bad topic config znode; using defaults");
                    Some(Default::default())
                }
            },
            Err(StoreError::NoNode(_)) => Some(Default::default()),
            Err(e) => {
                tracing::warn!(%topic, error = %e, "cannot read topic configs; using defaults");
                None
            }
        }
    }

    /// Whether the partition-state znode
    /// (`/brokers/topics/<t>/partitions/<p>/state`) names this broker
    /// leader of `tp` in `leader_epoch`. Kafka 3.9's coordinators load on
    /// LeaderAndIsr alone (`TransactionStateManager.loadTransactionsForTxnTopicPartition`,
    /// `GroupMetadataManager.scheduleLoadGroupAndOffsets`), but a
    /// LeaderAndIsr can arrive late, over a link that was cut, after the
    /// controller (`PartitionStateMachine`, which writes this znode before
    /// it sends anything) elected a newer leader elsewhere: that stale
    /// leader's HW already covers its epoch's start, so it would load an
    /// old state and re-send markers of transactions completed since. The
    /// znode is the controller's word. Embedded mode has no other broker.
    pub async fn confirm_leadership(
        &self,
        tp: &TopicPartition,
        leader_epoch: i32,
    ) -> Result<(), String> {
        if !self.zookeeper_mode {
            return Ok(());
        }
        let path = paths::partition_state(&tp.topic, tp.partition);
        let (data, _) = self
            .admin
            .store()
            .get(&path)
            .await
            .map_err(|e| format!("{path}: {e}"))?;
        let state =
            paths::PartitionStateZNode::decode(&data).map_err(|e| format!("{path}: {e}"))?;
        if state.leader == self.me && state.leader_epoch.0 == leader_epoch {
            Ok(())
        } else {
            Err(format!(
                "the controller has leader {} in epoch {}, not this broker in {leader_epoch}",
                state.leader.0, state.leader_epoch.0
            ))
        }
    }
}
