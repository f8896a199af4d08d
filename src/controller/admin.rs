//! `[drv]` The admin side every broker has (Kafka's `ZkAdminManager` with
//! the `AdminZkClient` / `KafkaZkClient` calls behind it), run on the
//! control shard: [`AdminManager`] owns this broker's metadata store — the
//! embedded store of a single node, or its ZooKeeper session — and runs
//! the admin operations data shards forward ([`AdminRequest`]: topic
//! creation and deletion, partition growth, topic configs, producer-id
//! blocks for InitProducerId) one at a time, handing back the metadata
//! snapshot to publish after every change. The control shard reads broker
//! configs and client quotas through its [`AdminManager::store`].
//!
//! This is not Kafka's controller: the controller's election, context and
//! duties are `controller::zk_mode`'s, and only on the broker elected
//! controller. In ZooKeeper mode the admin side writes what Kafka's
//! `AdminZkClient` writes and the controller (whichever broker it is) does
//! the rest; over the embedded store it does both, as a single node is its
//! own controller. Publication itself (the mesh) is the control shard's
//! (`shard::control::control_shard`): this module knows nothing of shards.
//!
//! Cluster id: the store's `/cluster/id` is the source of truth, as in
//! Kafka's ZooKeeper mode. On first start it is seeded from
//! `meta.properties` (which boot creates before any executor runs); later a
//! mismatch refuses the start (Kafka's InconsistentClusterIdException).

use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::admin_error::AdminError;
use super::admin_requests::{
    AdminFailure, AdminRequest, AdminResponse, AdminResult, NewPartitions, TopicRef,
};
use super::brokers;
use super::image::{auto_created_topic, build_snapshot};
use super::producer_id::store::generate_producer_id;
use super::producer_id::ProducerIdManager;
use super::topic_admin::{NewTopic, TopicInfo};
use super::{topic_admin, topic_configs};
use crate::config::topic::BrokerTopicDefaults;
use crate::config::ServerConfig;
use crate::io::clock::Clock;
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ProducerId};
use crate::zk::any::AnyStore;
use crate::zk::embedded::EmbeddedStore;
use crate::zk::paths::{self, ClusterIdZNode};
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};

/// An admin operation's answer and, when it changed the store, the
/// snapshot every shard must see before the answer goes back (Kafka's
/// CreateTopics waits for metadata propagation, so a Produce right after
/// CreateTopics finds the topic).
#[derive(Debug)]
pub struct Outcome<T> {
    pub answer: T,
    pub publish: Option<Snapshot>,
}

/// The admin side's state: the store and what it decides from it.
pub struct AdminManager<S: MetadataStore = AnyStore> {
    store: S,
    broker_id: BrokerId,
    defaults: BrokerTopicDefaults,
    delete_topic_enable: bool,
    config: Arc<ServerConfig>,
    /// Brokers and cluster id; topics are rebuilt from the store.
    base: Snapshot,
    version: Cell<u64>,
    producer_ids: RefCell<ProducerIdManager>,
    rng: RefCell<StdRng>,
    /// The czxid of our `/brokers/ids/<id>` (UpdateMetadata fencing).
    broker_epoch: Cell<Option<i64>>,
    /// ZooKeeper mode: admin operations write what Kafka's AdminZkClient
    /// writes, and the controller (whichever broker it is) does the rest.
    zookeeper_mode: bool,
}

impl AdminManager<AnyStore> {
    /// Open the embedded store under `log_dir`, register this broker (its
    /// endpoint from `base`), finish interrupted deletions. `clock` dates
    /// the registration and the znodes the store creates.
    pub async fn open_embedded(
        log_dir: &Path,
        config: Arc<ServerConfig>,
        base: Snapshot,
        clock: Rc<dyn Clock>,
    ) -> Result<Self, String> {
        let now_ms = clock.wall_ms();
        let store = EmbeddedStore::open(log_dir, clock).map_err(|e| e.to_string())?;
        Self::open(AnyStore::Embedded(store), config, base, now_ms).await
    }

    /// The admin side of a ZooKeeper-mode broker on `store` (its session):
    /// top-level paths and the cluster id checked; registration, the
    /// election and the controller's duties are `zk_mode`'s, so neither
    /// the registration nor pending deletions happen here.
    pub async fn open_zookeeper(
        store: AnyStore,
        config: Arc<ServerConfig>,
        base: Snapshot,
    ) -> Result<Self, String> {
        brokers::create_top_level_paths(&store)
            .await
            .map_err(|e| e.to_string())?;
        check_cluster_id(&store, &base.cluster_id).await?;
        let mut admin = Self::assemble(store, config, base, None);
        admin.zookeeper_mode = true;
        Ok(admin)
    }
}

impl<S: MetadataStore> AdminManager<S> {
    /// Take over `store`: Kafka's top-level znodes, the cluster id check,
    /// this broker's registration, interrupted deletions finished.
    pub async fn open(
        store: S,
        config: Arc<ServerConfig>,
        base: Snapshot,
        now_ms: i64,
    ) -> Result<Self, String> {
        let broker_id = BrokerId(config.broker_id);
        brokers::create_top_level_paths(&store)
            .await
            .map_err(|e| e.to_string())?;
        check_cluster_id(&store, &base.cluster_id).await?;
        let me = base
            .broker(broker_id)
            .cloned()
            .ok_or_else(|| format!("broker {broker_id} missing from the boot snapshot"))?;
        brokers::register_broker(&store, broker_id, &me.host, i32::from(me.port), now_ms)
            .await
            .map_err(|e| format!("registering broker {broker_id}: {e}"))?;
        let broker_epoch = brokers::broker_epoch(&store, broker_id)
            .await
            .map_err(|e| e.to_string())?;
        let finished = topic_admin::complete_pending_deletions(&store)
            .await
            .map_err(|e| e.to_string())?;
        if !finished.is_empty() {
            tracing::info!(topics = ?finished, "finished interrupted topic deletions");
        }
        Ok(Self::assemble(store, config, base, broker_epoch))
    }

    fn assemble(
        store: S,
        config: Arc<ServerConfig>,
        base: Snapshot,
        broker_epoch: Option<i64>,
    ) -> Self {
        let broker_id = BrokerId(config.broker_id);
        Self {
            store,
            broker_id,
            defaults: config.broker_topic_defaults(),
            delete_topic_enable: config.delete_topic_enable,
            config,
            base,
            version: Cell::new(0),
            producer_ids: RefCell::new(ProducerIdManager::new(broker_id)),
            rng: RefCell::new(StdRng::from_entropy()),
            broker_epoch: Cell::new(broker_epoch),
            zookeeper_mode: false,
        }
    }

    /// This broker's epoch (czxid of its registration), once registered.
    pub fn broker_epoch(&self) -> Option<i64> {
        self.broker_epoch.get()
    }

    /// A (re-)registration's epoch, in ZooKeeper mode.
    pub fn set_broker_epoch(&self, epoch: i64) {
        self.broker_epoch.set(Some(epoch));
    }

    /// Whether this is a ZooKeeper-mode broker's admin side.
    pub fn zookeeper_mode(&self) -> bool {
        self.zookeeper_mode
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Run `req`. The caller serialises calls (store updates and the
    /// publication that follows must not interleave).
    pub async fn run(&self, req: AdminRequest) -> Outcome<AdminResponse> {
        match req {
            AdminRequest::CreateTopics {
                topics,
                validate_only,
            } => {
                let results = self.create_topics(topics, validate_only).await;
                self.answer(!validate_only, results, AdminResponse::CreatedTopics)
                    .await
            }
            AdminRequest::DeleteTopics { topics } => {
                let mut results = Vec::with_capacity(topics.len());
                for topic in topics {
                    results.push(self.delete_topic(topic).await);
                }
                self.answer(true, results, AdminResponse::DeletedTopics)
                    .await
            }
            AdminRequest::CreatePartitions {
                topics,
                validate_only,
            } => {
                let results = self.create_partitions(topics, validate_only).await;
                self.answer(!validate_only, results, AdminResponse::CreatedPartitions)
                    .await
            }
            AdminRequest::IncrementalAlterTopicConfigs {
                topics,
                validate_only,
            } => {
                let mut results = Vec::with_capacity(topics.len());
                for (name, ops) in &topics {
                    let r = topic_configs::incremental_alter_configs(
                        &self.store,
                        name,
                        ops,
                        &self.defaults,
                        validate_only,
                    )
                    .await;
                    results.push(r.map(|_| ()).map_err(AdminFailure::from));
                }
                self.answer(!validate_only, results, AdminResponse::AlteredConfigs)
                    .await
            }
            AdminRequest::AlterTopicConfigs {
                topics,
                validate_only,
            } => {
                let mut results = Vec::with_capacity(topics.len());
                for (name, configs) in &topics {
                    let r = topic_configs::alter_configs(
                        &self.store,
                        name,
                        configs,
                        &self.defaults,
                        validate_only,
                    )
                    .await;
                    results.push(r.map_err(AdminFailure::from));
                }
                self.answer(!validate_only, results, AdminResponse::AlteredConfigs)
                    .await
            }
            AdminRequest::InitProducerId => Outcome {
                answer: AdminResponse::ProducerId(self.init_producer_id().await),
                publish: None,
            },
        }
    }

    /// Auto-create `topics` with the broker defaults (`num.partitions`,
    /// `default.replication.factor`; Kafka's internal topics their own):
    /// per topic NONE once it exists, or why not.
    pub async fn auto_create(&self, topics: Vec<String>) -> Outcome<Vec<(String, ErrorCode)>> {
        let new_topics = topics
            .iter()
            .map(|name| auto_created_topic(name, &self.config))
            .collect();
        let created = self.create_topics(new_topics, false).await;
        let publish = self.snapshot_if_changed(true, &created).await;
        let answer = topics
            .into_iter()
            .zip(created)
            .map(|(name, r)| match r {
                Ok(_) => (name, ErrorCode::NONE),
                // Created meanwhile by another request: it exists now.
                Err(e) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => (name, ErrorCode::NONE),
                Err(e) => (name, e.code),
            })
            .collect();
        Outcome { answer, publish }
    }

    async fn answer<T>(
        &self,
        writes: bool,
        results: Vec<AdminResult<T>>,
        wrap: impl FnOnce(Vec<AdminResult<T>>) -> AdminResponse,
    ) -> Outcome<AdminResponse> {
        let publish = self.snapshot_if_changed(writes, &results).await;
        Outcome {
            answer: wrap(results),
            publish,
        }
    }

    async fn create_topics(
        &self,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> Vec<AdminResult<TopicInfo>> {
        let live = match brokers::live_brokers_with_racks(&self.store).await {
            Ok(live) => live,
            Err(e) => return topics.iter().map(|_| Err(e.clone().into())).collect(),
        };
        let mut results = Vec::with_capacity(topics.len());
        for topic in &topics {
            // A per-topic generator: no RefCell borrow lives across awaits.
            let seed: u64 = self.rng.borrow_mut().gen();
            let mut rng = StdRng::seed_from_u64(seed);
            let r = topic_admin::create_topic(
                &self.store,
                topic,
                &live,
                &self.defaults,
                validate_only,
                !self.zookeeper_mode,
                &mut rng,
            )
            .await;
            results.push(r.map_err(AdminFailure::from));
        }
        results
    }

    async fn delete_topic(&self, topic: TopicRef) -> AdminResult<(String, uuid::Uuid)> {
        let name = match topic {
            TopicRef::Name(name) => name,
            TopicRef::Id(id) => topic_admin::load_topics(&self.store)
                .await?
                .into_iter()
                .find(|t| t.topic_id == id && !id.is_nil())
                .map(|t| t.name)
                .ok_or_else(|| AdminFailure {
                    code: ErrorCode::UNKNOWN_TOPIC_ID,
                    message: format!("Topic id {id} not found"),
                })?,
        };
        if !self.delete_topic_enable {
            // Kafka with `delete.topic.enable=false`.
            return Err(AdminFailure {
                code: ErrorCode::TOPIC_DELETION_DISABLED,
                message: "Topic deletion is disabled.".into(),
            });
        }
        let info = if self.zookeeper_mode {
            topic_admin::mark_for_deletion(&self.store, &name).await?
        } else {
            topic_admin::delete_topic(&self.store, &name).await?
        };
        Ok((info.name, info.topic_id))
    }

    async fn create_partitions(
        &self,
        topics: Vec<NewPartitions>,
        validate_only: bool,
    ) -> Vec<AdminResult<()>> {
        let live = match brokers::live_brokers_with_racks(&self.store).await {
            Ok(live) => live,
            Err(e) => return topics.iter().map(|_| Err(e.clone().into())).collect(),
        };
        let mut results = Vec::with_capacity(topics.len());
        for t in &topics {
            let r = topic_admin::create_partitions(
                &self.store,
                &t.topic,
                t.count,
                t.assignments.as_deref(),
                &live,
                validate_only,
                !self.zookeeper_mode,
            )
            .await;
            results.push(r.map(|_| ()).map_err(AdminFailure::from));
        }
        results
    }

    /// Kafka's `TransactionCoordinator.handleInitProducerId` without a
    /// transactional id "blindly accepts the request and returns a new
    /// producerId": a new id at epoch 0, even when the request names an
    /// existing id and epoch (v3+, KIP-360). KIP-360's epoch bump without
    /// a new id is the transactional path, and an idempotent producer bumps
    /// its epoch itself, which the partition's producer state accepts.
    async fn init_producer_id(&self) -> Result<(ProducerId, i16), ErrorCode> {
        let mut manager = self.producer_ids.borrow().clone();
        let id = generate_producer_id(&self.store, &mut manager).await;
        *self.producer_ids.borrow_mut() = manager;
        match id {
            Ok(id) => Ok((id, 0)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot allocate a producer id");
                Err(ErrorCode::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }

    async fn snapshot_if_changed<T>(
        &self,
        writes: bool,
        results: &[AdminResult<T>],
    ) -> Option<Snapshot> {
        if writes && results.iter().any(Result::is_ok) {
            match self.next_snapshot().await {
                Ok(s) => return Some(s),
                Err(e) => tracing::warn!(error = %e, "cannot rebuild the metadata snapshot"),
            }
        }
        None
    }

    /// The snapshot of the store as it is now, one version past the last.
    pub async fn next_snapshot(&self) -> Result<Snapshot, AdminError> {
        let topics = topic_admin::load_topics(&self.store).await?;
        let version = self.version.get() + 1;
        self.version.set(version);
        let snapshot = build_snapshot(&self.base, version, self.broker_id, &topics);
        debug_assert_eq!(snapshot.check_invariants(), Ok(()));
        Ok(snapshot)
    }
}

/// `/cluster/id` is the truth; seed it from meta.properties the first time.
async fn check_cluster_id<S: MetadataStore>(store: &S, meta_id: &str) -> Result<(), String> {
    let stored = match store.get(paths::CLUSTER_ID).await {
        Ok((data, _)) => ClusterIdZNode::decode(&data)
            .map(|z| z.id)
            .map_err(|e| format!("{}: {e}", paths::CLUSTER_ID))?,
        Err(StoreError::NoNode(_)) => {
            let data = ClusterIdZNode::new(meta_id).encode();
            create_recursive(store, paths::CLUSTER_ID, &data, CreateMode::Persistent)
                .await
                .map_err(|e| e.to_string())?;
            return Ok(());
        }
        Err(e) => return Err(e.to_string()),
    };
    if stored != meta_id {
        return Err(format!(
            "The Cluster ID {stored} doesn't match stored clusterId {meta_id} in meta.properties"
        ));
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ControllerEpoch, LeaderEpoch, PartitionEpoch};
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use uuid::Uuid;

    use crate::controller::image::{auto_created_topic, OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
    use crate::controller::topic_admin::PartitionState as ZkPartition;
    use crate::io::clock::ManualClock;
    use crate::metadata::BrokerEndpoint;

    fn info(name: &str, leader: BrokerId) -> TopicInfo {
        TopicInfo {
            name: name.into(),
            topic_id: Uuid::from_u128(5),
            partitions: vec![ZkPartition {
                partition: 0,
                replicas: vec![BrokerId(1)],
                leader,
                leader_epoch: LeaderEpoch(if leader.0 < 0 { -1 } else { 3 }),
                isr: if leader.0 < 0 {
                    vec![]
                } else {
                    vec![BrokerId(1)]
                },
                controller_epoch: ControllerEpoch(1),
                zk_version: PartitionEpoch(0),
                leader_recovery_state: 0,
            }],
            configs: BTreeMap::from([("retention.ms".into(), "1000".into())]),
            reassigning: Default::default(),
        }
    }

    /// The admin manager and the snapshot it last published (what the
    /// control shard would have installed everywhere).
    struct Harness {
        admin: AdminManager,
        published: RefCell<Snapshot>,
    }

    impl Harness {
        fn snapshot(&self) -> Snapshot {
            self.published.borrow().clone()
        }
    }

    /// Run `f` on an admin manager over a store in `dir`, on its own executor,
    /// after the first publication (as the control shard does at start).
    fn on_control<T: Send + 'static>(
        dir: &Path,
        f: impl FnOnce(Rc<Harness>) -> futures_lite::future::BoxedLocal<T> + Send + 'static,
    ) -> T {
        let dir = dir.to_path_buf();
        glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
            .io_memory(512 << 10)
            .spawn(move || async move {
                let config = crate::config::ServerConfig {
                    broker_id: 0,
                    num_partitions: 2,
                    ..Default::default()
                };
                let base = Snapshot::single_broker(
                    "cluster-a",
                    BrokerEndpoint {
                        broker_id: BrokerId(0),
                        host: "h".into(),
                        port: 9,
                        rack: None,
                    },
                );
                let admin = AdminManager::open_embedded(
                    &dir,
                    Arc::new(config),
                    base,
                    Rc::new(ManualClock::new(0)),
                )
                .await
                .expect("start");
                let first = admin.next_snapshot().await.expect("first snapshot");
                let h = Rc::new(Harness {
                    admin,
                    published: RefCell::new(first),
                });
                f(h).await
            })
            .unwrap()
            .join()
            .unwrap()
    }

    async fn admin(h: &Harness, req: AdminRequest) -> AdminResponse {
        let outcome = h.admin.run(req).await;
        if let Some(s) = outcome.publish {
            *h.published.borrow_mut() = s;
        }
        outcome.answer
    }

    async fn auto_create(h: &Harness, topics: Vec<String>) -> Vec<(String, ErrorCode)> {
        let outcome = h.admin.auto_create(topics).await;
        if let Some(s) = outcome.publish {
            *h.published.borrow_mut() = s;
        }
        outcome.answer
    }

    fn new_topic(name: &str, partitions: i32, rf: i16) -> NewTopic {
        NewTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            ..Default::default()
        }
    }

    fn codes<T>(results: &[AdminResult<T>]) -> Vec<ErrorCode> {
        results
            .iter()
            .map(|r| r.as_ref().map_or_else(|e| e.code, |_| ErrorCode::NONE))
            .collect()
    }

    #[test]
    fn admin_operations_change_the_published_snapshot_and_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (id, versions) = on_control(dir.path(), |h| {
            Box::pin(async move {
                let v0 = h.snapshot().version;
                let AdminResponse::CreatedTopics(created) = admin(
                    &h,
                    AdminRequest::CreateTopics {
                        topics: vec![
                            new_topic("a", 3, 1),
                            new_topic("a", 1, 1),
                            new_topic("b", 1, 2),
                            new_topic("c", 0, 1),
                            new_topic("d", -1, -1),
                        ],
                        validate_only: false,
                    },
                )
                .await
                else {
                    panic!("wrong answer")
                };
                assert_eq!(
                    codes(&created),
                    vec![
                        ErrorCode::NONE,
                        ErrorCode::TOPIC_ALREADY_EXISTS,
                        ErrorCode::INVALID_REPLICATION_FACTOR,
                        ErrorCode::INVALID_PARTITIONS,
                        ErrorCode::NONE,
                    ]
                );
                let snap = h.snapshot();
                assert!(snap.version > v0);
                assert_eq!(snap.hosted_topic("a").unwrap().partitions.len(), 3);
                // -1 = the broker's num.partitions (KIP-464).
                assert_eq!(snap.hosted_topic("d").unwrap().partitions.len(), 2);
                let grow = AdminRequest::CreatePartitions {
                    topics: vec![NewPartitions {
                        topic: "a".into(),
                        count: 5,
                        assignments: None,
                    }],
                    validate_only: false,
                };
                admin(&h, grow).await;
                assert_eq!(h.snapshot().hosted_topic("a").unwrap().partitions.len(), 5);
                let alter = AdminRequest::AlterTopicConfigs {
                    topics: vec![(
                        "a".into(),
                        BTreeMap::from([("retention.ms".into(), "7".into())]),
                    )],
                    validate_only: false,
                };
                admin(&h, alter).await;
                let a = h.snapshot().hosted_topic("a").cloned().unwrap();
                assert_eq!(a.configs.get("retention.ms").map(String::as_str), Some("7"));
                let delete = AdminRequest::DeleteTopics {
                    topics: vec![TopicRef::Id(
                        h.snapshot().hosted_topic("d").unwrap().topic_id,
                    )],
                };
                let AdminResponse::DeletedTopics(deleted) = admin(&h, delete).await else {
                    panic!("wrong answer")
                };
                assert_eq!(deleted[0].as_ref().map(|d| d.0.as_str()), Ok("d"));
                assert!(h.snapshot().hosted_topic("d").is_none());
                (a.topic_id, h.snapshot().version)
            })
        });
        assert!(versions >= 4);
        // A restart loads the same topics, partition counts, configs, ids.
        let after = on_control(dir.path(), |h| {
            Box::pin(async move { h.snapshot().hosted_topic("a").cloned() })
        })
        .unwrap();
        assert_eq!(after.topic_id, id);
        assert_eq!(after.partitions.len(), 5);
        assert_eq!(
            after.configs.get("retention.ms").map(String::as_str),
            Some("7")
        );
    }

    #[test]
    fn every_init_producer_id_gets_a_new_id_at_epoch_0() {
        let dir = tempfile::tempdir().unwrap();
        let ids = on_control(dir.path(), |h| {
            Box::pin(async move {
                let mut out = Vec::new();
                for _ in 0..5 {
                    match admin(&h, AdminRequest::InitProducerId).await {
                        AdminResponse::ProducerId(r) => out.push(r.unwrap()),
                        other => panic!("{other:?}"),
                    }
                }
                out
            })
        });
        // Each call is a new id from the reserved block. That a request
        // naming an existing id and epoch gets one too is the handler's
        // (which forwards neither): tests/admin_clients.rs.
        assert_eq!(ids, vec![(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)]);
    }

    #[test]
    fn internal_topics_are_auto_created_with_their_kafka_specs() {
        let config = crate::config::ServerConfig {
            offsets_topic_replication_factor: 1,
            ..Default::default()
        };
        let offsets = auto_created_topic(OFFSETS_TOPIC, &config);
        assert_eq!(
            (offsets.num_partitions, offsets.replication_factor),
            (50, 1)
        );
        assert_eq!(
            offsets.configs.get("cleanup.policy").map(String::as_str),
            Some("compact")
        );
        let txn = auto_created_topic(TRANSACTION_STATE_TOPIC, &config);
        assert_eq!((txn.num_partitions, txn.replication_factor), (50, 3));
        let plain = auto_created_topic("orders", &config);
        assert_eq!((plain.num_partitions, plain.replication_factor), (-1, -1));
        assert!(plain.configs.is_empty());
    }

    #[test]
    fn auto_create_reports_why_a_topic_could_not_be_created() {
        let dir = tempfile::tempdir().unwrap();
        let answer = on_control(dir.path(), |h| {
            Box::pin(async move {
                let topics = vec!["auto-a".to_string(), OFFSETS_TOPIC.to_string()];
                let answer = auto_create(&h, topics).await;
                let made = h
                    .snapshot()
                    .hosted_topic("auto-a")
                    .map(|t| t.partitions.len());
                (answer, made)
            })
        });
        // offsets.topic.replication.factor defaults to 3: one broker is not enough.
        let expected = vec![
            ("auto-a".into(), ErrorCode::NONE),
            (OFFSETS_TOPIC.into(), ErrorCode::INVALID_REPLICATION_FACTOR),
        ];
        assert_eq!(answer, (expected, Some(2)));
    }

    #[test]
    fn a_store_from_another_cluster_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path(), Rc::new(ManualClock::new(0))).unwrap();
        futures_lite::future::block_on(async {
            let data = ClusterIdZNode::new("other").encode();
            create_recursive(&store, paths::CLUSTER_ID, &data, CreateMode::Persistent)
                .await
                .unwrap();
            assert!(check_cluster_id(&store, "other").await.is_ok());
            let err = check_cluster_id(&store, "cluster-a").await.unwrap_err();
            assert!(err.contains("doesn't match"), "{err}");
        });
    }

    #[test]
    fn snapshot_carries_ids_state_and_configs_of_stored_topics() {
        let base = Snapshot::single_broker(
            "c",
            BrokerEndpoint {
                broker_id: BrokerId(1),
                host: "h".into(),
                port: 9,
                rack: None,
            },
        );
        let topics = [
            info("a", BrokerId(1)),
            info("__consumer_offsets", BrokerId::NONE),
        ];
        let s = build_snapshot(&base, 7, BrokerId(1), &topics);
        assert_eq!(s.version, 7);
        s.check_invariants().unwrap();
        let a = s.hosted_topic("a").unwrap();
        assert_eq!(a.topic_id, Uuid::from_u128(5));
        assert_eq!(
            (a.partitions[0].leader, a.partitions[0].leader_epoch),
            (BrokerId(1), LeaderEpoch(3))
        );
        assert_eq!(
            a.configs.get("retention.ms").map(String::as_str),
            Some("1000")
        );
        assert!(!a.is_internal);
        // No state znode: this broker leads its own replica.
        let offsets = s.hosted_topic("__consumer_offsets").unwrap();
        assert!(offsets.is_internal);
        assert_eq!(offsets.partitions[0].leader, 1);
        assert_eq!(offsets.partitions[0].isr, vec![1]);
    }
}
