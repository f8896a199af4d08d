//! `[drv]` The control shard's state (ARCHITECTURE.md §7): the embedded
//! metadata store, the metadata snapshot built from it and published to
//! every data shard, and the topic admin operations data shards forward
//! here over the mesh ([`AdminRequest`]).
//!
//! Only this executor touches the store. Every change is followed by a
//! fresh snapshot (version + 1) sent to every data shard; the admin answer
//! goes back only after all of them applied it, as Kafka's CreateTopics
//! waits for metadata propagation, so a Produce right after CreateTopics
//! finds the topic.
//!
//! Cluster id: the store's `/cluster/id` is the source of truth, as in
//! Kafka's ZooKeeper mode. On first start it is seeded from
//! `meta.properties` (which boot creates before any executor runs); later a
//! mismatch refuses the start (Kafka's InconsistentClusterIdException).
//!
//! The state lives in a thread-local of the control executor so the shared
//! `ShardContext` needs no field for it; data shards never see it.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use glommio::sync::Semaphore;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uuid::Uuid;

use super::context::{ShardContext, ShardRequest, ShardResponse};
use crate::config::topic::BrokerTopicDefaults;
use crate::io::clock::{Clock, SystemClock};
use crate::metadata::{PartitionState, Snapshot, TopicState};
use crate::protocol::ErrorCode;
use crate::replication::producer_id::{generate_producer_id, ProducerIdManager};
use crate::types::{BrokerId, PartitionId, ProducerId};
use crate::zk::admin::{self, AdminError, AlterConfigOp, NewTopic, TopicInfo};
use crate::zk::embedded::EmbeddedStore;
use crate::zk::paths::{self, ClusterIdZNode};
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};

/// A topic named by DeleteTopics: by name, or by topic id (v6+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicRef {
    Name(String),
    Id(Uuid),
}

/// One CreatePartitions entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPartitions {
    pub topic: String,
    pub count: i32,
    pub assignments: Option<Vec<Vec<BrokerId>>>,
}

/// Topic admin operations data shards forward to the control shard.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminRequest {
    CreateTopics {
        topics: Vec<NewTopic>,
        validate_only: bool,
    },
    DeleteTopics {
        topics: Vec<TopicRef>,
    },
    CreatePartitions {
        topics: Vec<NewPartitions>,
        validate_only: bool,
    },
    IncrementalAlterTopicConfigs {
        topics: Vec<(String, Vec<AlterConfigOp>)>,
        validate_only: bool,
    },
    AlterTopicConfigs {
        topics: Vec<(String, BTreeMap<String, String>)>,
        validate_only: bool,
    },
    /// Non-transactional InitProducerId. Whatever id and epoch the request
    /// carries, the answer is a new id at epoch 0 (see `init_producer_id`),
    /// so they are not forwarded.
    InitProducerId,
}

/// Why one admin item failed: the Kafka error code and message to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminFailure {
    pub code: ErrorCode,
    pub message: String,
}

impl From<AdminError> for AdminFailure {
    fn from(e: AdminError) -> Self {
        Self {
            code: ErrorCode(e.error_code()),
            message: e.to_string(),
        }
    }
}

pub type AdminResult<T> = Result<T, AdminFailure>;

/// Answers to [`AdminRequest`]s, one result per requested item, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminResponse {
    CreatedTopics(Vec<AdminResult<TopicInfo>>),
    /// The deleted topic's name and id.
    DeletedTopics(Vec<AdminResult<(String, Uuid)>>),
    CreatedPartitions(Vec<AdminResult<()>>),
    AlteredConfigs(Vec<AdminResult<()>>),
    ProducerId(Result<(ProducerId, i16), ErrorCode>),
}

thread_local! {
    static CONTROL: RefCell<Option<Rc<Control>>> = const { RefCell::new(None) };
}

/// The control shard's metadata state.
pub struct Control {
    store: EmbeddedStore,
    broker_id: BrokerId,
    defaults: BrokerTopicDefaults,
    delete_topic_enable: bool,
    /// Brokers and cluster id; topics are rebuilt from the store.
    base: Snapshot,
    version: Cell<u64>,
    producer_ids: RefCell<ProducerIdManager>,
    rng: RefCell<StdRng>,
    /// One admin operation at a time: store updates and the publication
    /// that follows must not interleave (mesh requests run concurrently).
    serial: Semaphore,
}

/// Open the store under `log_dir`, register this broker, finish
/// interrupted deletions, and publish the first snapshot to every data
/// shard. Call on the control executor before it reports readiness.
pub async fn start(ctx: &Rc<ShardContext>, log_dir: &Path) -> Result<(), String> {
    let store = EmbeddedStore::open(log_dir).map_err(|e| e.to_string())?;
    let base = ctx.snapshot().as_ref().clone();
    let broker_id = ctx.config.broker_id;
    admin::create_top_level_paths(&store)
        .await
        .map_err(|e| e.to_string())?;
    check_cluster_id(&store, &base.cluster_id).await?;
    let me = base
        .broker(broker_id)
        .cloned()
        .ok_or_else(|| format!("broker {broker_id} missing from the boot snapshot"))?;
    let now_ms = SystemClock::new().wall_ms();
    admin::register_broker(&store, broker_id, &me.host, i32::from(me.port), now_ms)
        .await
        .map_err(|e| format!("registering broker {broker_id}: {e}"))?;
    let finished = admin::complete_pending_deletions(&store)
        .await
        .map_err(|e| e.to_string())?;
    if !finished.is_empty() {
        tracing::info!(topics = ?finished, "finished interrupted topic deletions");
    }
    let control = Rc::new(Control {
        store,
        broker_id,
        defaults: ctx.config.broker_topic_defaults(),
        delete_topic_enable: ctx.config.delete_topic_enable,
        base,
        version: Cell::new(0),
        producer_ids: RefCell::new(ProducerIdManager::new(broker_id)),
        rng: RefCell::new(StdRng::from_entropy()),
        serial: Semaphore::new(1),
    });
    control.publish(ctx).await.map_err(|e| e.to_string())?;
    CONTROL.with(|c| *c.borrow_mut() = Some(control));
    Ok(())
}

/// `/cluster/id` is the truth; seed it from meta.properties the first time.
async fn check_cluster_id(store: &EmbeddedStore, meta_id: &str) -> Result<(), String> {
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

/// The control state, on the control executor once started.
fn control() -> Option<Rc<Control>> {
    CONTROL.with(|c| c.borrow().clone())
}

/// Mesh entry point (control shard): run `req`.
pub async fn on_admin_request(ctx: &Rc<ShardContext>, req: AdminRequest) -> ShardResponse {
    let Some(control) = control() else {
        return ShardResponse::Unsupported;
    };
    let _turn = control.serial.acquire_permit(1).await;
    let resp = control.run(ctx, req).await;
    ShardResponse::Admin(Box::new(resp))
}

/// Mesh entry point (control shard): auto-create `topics` with the broker
/// defaults (`num.partitions`, `default.replication.factor`).
pub async fn on_auto_create(ctx: &Rc<ShardContext>, topics: Vec<String>) -> ShardResponse {
    let Some(control) = control() else {
        // Not started (unit tests of the mesh): as auto-create disabled.
        let results = topics
            .into_iter()
            .map(|t| (t, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
            .collect();
        return ShardResponse::AutoCreated { results };
    };
    let _turn = control.serial.acquire_permit(1).await;
    let new_topics = topics
        .iter()
        .map(|name| auto_created_topic(name, &ctx.config))
        .collect();
    let created = control.create_topics(ctx, new_topics, false).await;
    let results = topics
        .into_iter()
        .zip(created)
        .map(|(name, r)| match r {
            Ok(_) => (name, ErrorCode::NONE),
            // Created meanwhile by another request: it exists now.
            Err(e) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => (name, ErrorCode::NONE),
            Err(e) => (name, e.code),
        })
        .collect();
    ShardResponse::AutoCreated { results }
}

/// Kafka's `AutoTopicCreationManager.creatableTopic`: the internal topics
/// get their own partition count, replication factor and configs
/// (`offsets.topic.*`, `transaction.state.log.*`, as GroupCoordinator /
/// TransactionStateManager define them); any other topic the broker
/// defaults (`num.partitions`, `default.replication.factor`, KIP-464 -1).
pub fn auto_created_topic(name: &str, config: &crate::config::ServerConfig) -> NewTopic {
    let configs = |pairs: &[(&str, String)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    };
    match name {
        OFFSETS_TOPIC => NewTopic {
            name: name.to_owned(),
            num_partitions: config.offsets_topic_num_partitions,
            replication_factor: config.offsets_topic_replication_factor,
            configs: configs(&[
                ("cleanup.policy", "compact".into()),
                ("compression.type", "producer".into()),
                (
                    "segment.bytes",
                    config.offsets_topic_segment_bytes.to_string(),
                ),
            ]),
            ..Default::default()
        },
        TRANSACTION_STATE_TOPIC => NewTopic {
            name: name.to_owned(),
            num_partitions: config.transaction_state_log_num_partitions,
            replication_factor: config.transaction_state_log_replication_factor,
            configs: configs(&[
                ("cleanup.policy", "compact".into()),
                ("compression.type", "uncompressed".into()),
                (
                    "min.insync.replicas",
                    config.transaction_state_log_min_isr.to_string(),
                ),
                // `transaction.state.log.segment.bytes` default 104857600.
                ("segment.bytes", "104857600".into()),
                ("unclean.leader.election.enable", "false".into()),
            ]),
            ..Default::default()
        },
        _ => NewTopic {
            name: name.to_owned(),
            num_partitions: -1,
            replication_factor: -1,
            ..Default::default()
        },
    }
}

/// Kafka's internal topic names (`Topic.GROUP_METADATA_TOPIC_NAME`,
/// `Topic.TRANSACTION_STATE_TOPIC_NAME`).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

impl Control {
    async fn run(&self, ctx: &Rc<ShardContext>, req: AdminRequest) -> AdminResponse {
        match req {
            AdminRequest::CreateTopics {
                topics,
                validate_only,
            } => AdminResponse::CreatedTopics(self.create_topics(ctx, topics, validate_only).await),
            AdminRequest::DeleteTopics { topics } => {
                AdminResponse::DeletedTopics(self.delete_topics(ctx, topics).await)
            }
            AdminRequest::CreatePartitions {
                topics,
                validate_only,
            } => AdminResponse::CreatedPartitions(
                self.create_partitions(ctx, topics, validate_only).await,
            ),
            AdminRequest::IncrementalAlterTopicConfigs {
                topics,
                validate_only,
            } => {
                let mut results = Vec::with_capacity(topics.len());
                for (name, ops) in &topics {
                    let r = admin::incremental_alter_configs(
                        &self.store,
                        name,
                        ops,
                        &self.defaults,
                        validate_only,
                    )
                    .await;
                    results.push(r.map(|_| ()).map_err(AdminFailure::from));
                }
                self.publish_if_changed(ctx, !validate_only, &results).await;
                AdminResponse::AlteredConfigs(results)
            }
            AdminRequest::AlterTopicConfigs {
                topics,
                validate_only,
            } => {
                let mut results = Vec::with_capacity(topics.len());
                for (name, configs) in &topics {
                    let r = admin::alter_configs(
                        &self.store,
                        name,
                        configs,
                        &self.defaults,
                        validate_only,
                    )
                    .await;
                    results.push(r.map_err(AdminFailure::from));
                }
                self.publish_if_changed(ctx, !validate_only, &results).await;
                AdminResponse::AlteredConfigs(results)
            }
            AdminRequest::InitProducerId => {
                AdminResponse::ProducerId(self.init_producer_id().await)
            }
        }
    }

    async fn create_topics(
        &self,
        ctx: &Rc<ShardContext>,
        topics: Vec<NewTopic>,
        validate_only: bool,
    ) -> Vec<AdminResult<TopicInfo>> {
        let live = match admin::live_brokers(&self.store).await {
            Ok(live) => live,
            Err(e) => return topics.iter().map(|_| Err(e.clone().into())).collect(),
        };
        let mut results = Vec::with_capacity(topics.len());
        for topic in &topics {
            // A per-topic generator: no RefCell borrow lives across awaits.
            let seed: u64 = self.rng.borrow_mut().gen();
            let mut rng = StdRng::seed_from_u64(seed);
            let r = admin::create_topic(
                &self.store,
                topic,
                &live,
                &self.defaults,
                validate_only,
                &mut rng,
            )
            .await;
            results.push(r.map_err(AdminFailure::from));
        }
        self.publish_if_changed(ctx, !validate_only, &results).await;
        results
    }

    async fn delete_topics(
        &self,
        ctx: &Rc<ShardContext>,
        topics: Vec<TopicRef>,
    ) -> Vec<AdminResult<(String, Uuid)>> {
        let mut results = Vec::with_capacity(topics.len());
        for topic in topics {
            results.push(self.delete_topic(topic).await);
        }
        self.publish_if_changed(ctx, true, &results).await;
        results
    }

    async fn delete_topic(&self, topic: TopicRef) -> AdminResult<(String, Uuid)> {
        let name = match topic {
            TopicRef::Name(name) => name,
            TopicRef::Id(id) => admin::load_topics(&self.store)
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
        let info = admin::delete_topic(&self.store, &name).await?;
        Ok((info.name, info.topic_id))
    }

    async fn create_partitions(
        &self,
        ctx: &Rc<ShardContext>,
        topics: Vec<NewPartitions>,
        validate_only: bool,
    ) -> Vec<AdminResult<()>> {
        let live = match admin::live_brokers(&self.store).await {
            Ok(live) => live,
            Err(e) => return topics.iter().map(|_| Err(e.clone().into())).collect(),
        };
        let mut results = Vec::with_capacity(topics.len());
        for t in &topics {
            let r = admin::create_partitions(
                &self.store,
                &t.topic,
                t.count,
                t.assignments.as_deref(),
                &live,
                validate_only,
            )
            .await;
            results.push(r.map(|_| ()).map_err(AdminFailure::from));
        }
        self.publish_if_changed(ctx, !validate_only, &results).await;
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

    async fn publish_if_changed<T>(
        &self,
        ctx: &Rc<ShardContext>,
        writes: bool,
        results: &[AdminResult<T>],
    ) {
        if writes && results.iter().any(Result::is_ok) {
            if let Err(e) = self.publish(ctx).await {
                tracing::warn!(error = %e, "cannot rebuild the metadata snapshot");
            }
        }
    }

    /// Rebuild the snapshot from the store, bump its version, install it
    /// here and on every data shard; returns once all applied it.
    async fn publish(&self, ctx: &Rc<ShardContext>) -> Result<u64, AdminError> {
        let topics = admin::load_topics(&self.store).await?;
        let version = self.version.get() + 1;
        self.version.set(version);
        let snapshot = build_snapshot(&self.base, version, self.broker_id, &topics);
        debug_assert_eq!(snapshot.check_invariants(), Ok(()));
        // Two phases: every owner opens (or closes) its partitions, then every
        // shard shows the new snapshot. A client that sees a partition in
        // Metadata from any shard can then reach its log on the owner.
        send_to_data_shards(ctx, "partitions not synced", || {
            ShardRequest::SyncPartitions(Box::new(snapshot.clone()))
        })
        .await;
        ctx.set_snapshot(Rc::new(snapshot.clone()));
        send_to_data_shards(ctx, "snapshot not applied", || {
            ShardRequest::SetSnapshot(Box::new(snapshot.clone()))
        })
        .await;
        Ok(version)
    }
}

/// One phase of a publication: `request()` to every data shard in turn,
/// warning with `failure` for any that does not acknowledge it.
async fn send_to_data_shards(
    ctx: &ShardContext,
    failure: &str,
    request: impl Fn() -> ShardRequest,
) {
    for shard in 0..ctx.n_shards {
        match ctx.call(shard, request()).await {
            Ok(ShardResponse::SnapshotApplied { .. }) => {}
            other => tracing::warn!(shard, ?other, "{failure}"),
        }
    }
}

/// The snapshot for `topics` over `base`'s brokers and cluster id. A
/// partition whose state znode is missing gets this broker as leader when
/// it is a replica (a single broker is its own controller).
pub fn build_snapshot(
    base: &Snapshot,
    version: u64,
    broker_id: BrokerId,
    topics: &[TopicInfo],
) -> Snapshot {
    let mut snapshot = base.clone();
    snapshot.version = version;
    snapshot.topics = topics
        .iter()
        .map(|t| {
            let state = topic_state(t, broker_id);
            (state.name.clone(), state)
        })
        .collect();
    snapshot
}

fn topic_state(info: &TopicInfo, broker_id: BrokerId) -> TopicState {
    let partitions = info
        .partitions
        .iter()
        .map(|p| {
            let elected = p.leader >= 0 || !p.replicas.contains(&broker_id);
            let (leader, leader_epoch, isr) = if elected {
                (p.leader, p.leader_epoch, p.isr.clone())
            } else {
                (broker_id, 0, vec![broker_id])
            };
            PartitionState {
                partition: p.partition as PartitionId,
                leader,
                leader_epoch,
                replicas: p.replicas.clone(),
                isr,
                offline_replicas: Vec::new(),
            }
        })
        .collect();
    TopicState {
        name: Arc::from(info.name.as_str()),
        topic_id: info.topic_id,
        // Kafka's `Topic.isInternal`.
        is_internal: info.name == OFFSETS_TOPIC || info.name == TRANSACTION_STATE_TOPIC,
        partitions,
        configs: info.configs.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::BrokerEndpoint;
    use crate::zk::admin::PartitionState as ZkPartition;

    fn info(name: &str, leader: BrokerId) -> TopicInfo {
        TopicInfo {
            name: name.into(),
            topic_id: Uuid::from_u128(5),
            partitions: vec![ZkPartition {
                partition: 0,
                replicas: vec![1],
                leader,
                leader_epoch: if leader < 0 { -1 } else { 3 },
                isr: if leader < 0 { vec![] } else { vec![1] },
                controller_epoch: 1,
                zk_version: 0,
            }],
            configs: BTreeMap::from([("retention.ms".into(), "1000".into())]),
        }
    }

    /// Run `f` on a control-shard context with no data shards (publication
    /// then only installs the snapshot locally), on its own executor.
    fn on_control<T: Send + 'static>(
        dir: &Path,
        f: impl FnOnce(Rc<ShardContext>) -> futures_lite::future::BoxedLocal<T> + Send + 'static,
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
                        broker_id: 0,
                        host: "h".into(),
                        port: 9,
                        rack: None,
                    },
                );
                let ctx = ShardContext::new(
                    super::super::context::Role::Control,
                    0,
                    Arc::new(config),
                    vec![],
                    base,
                );
                start(&ctx, &dir).await.expect("start");
                f(ctx).await
            })
            .unwrap()
            .join()
            .unwrap()
    }

    async fn admin(ctx: &Rc<ShardContext>, req: AdminRequest) -> AdminResponse {
        match on_admin_request(ctx, req).await {
            ShardResponse::Admin(resp) => *resp,
            other => panic!("{other:?}"),
        }
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
        let (id, versions) = on_control(dir.path(), |ctx| {
            Box::pin(async move {
                let v0 = ctx.snapshot().version;
                let AdminResponse::CreatedTopics(created) = admin(
                    &ctx,
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
                let snap = ctx.snapshot();
                assert!(snap.version > v0);
                assert_eq!(snap.topic("a").unwrap().partitions.len(), 3);
                // -1 = the broker's num.partitions (KIP-464).
                assert_eq!(snap.topic("d").unwrap().partitions.len(), 2);
                let grow = AdminRequest::CreatePartitions {
                    topics: vec![NewPartitions {
                        topic: "a".into(),
                        count: 5,
                        assignments: None,
                    }],
                    validate_only: false,
                };
                admin(&ctx, grow).await;
                assert_eq!(ctx.snapshot().topic("a").unwrap().partitions.len(), 5);
                let alter = AdminRequest::AlterTopicConfigs {
                    topics: vec![(
                        "a".into(),
                        BTreeMap::from([("retention.ms".into(), "7".into())]),
                    )],
                    validate_only: false,
                };
                admin(&ctx, alter).await;
                let a = ctx.snapshot().topic("a").cloned().unwrap();
                assert_eq!(a.configs.get("retention.ms").map(String::as_str), Some("7"));
                let delete = AdminRequest::DeleteTopics {
                    topics: vec![TopicRef::Id(ctx.snapshot().topic("d").unwrap().topic_id)],
                };
                let AdminResponse::DeletedTopics(deleted) = admin(&ctx, delete).await else {
                    panic!("wrong answer")
                };
                assert_eq!(deleted[0].as_ref().map(|d| d.0.as_str()), Ok("d"));
                assert!(ctx.snapshot().topic("d").is_none());
                (a.topic_id, ctx.snapshot().version)
            })
        });
        assert!(versions >= 4);
        // A restart loads the same topics, partition counts, configs, ids.
        let after = on_control(dir.path(), |ctx| {
            Box::pin(async move { ctx.snapshot().topic("a").cloned() })
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
        let ids = on_control(dir.path(), |ctx| {
            Box::pin(async move {
                let mut out = Vec::new();
                for _ in 0..5 {
                    match admin(&ctx, AdminRequest::InitProducerId).await {
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
        let answer = on_control(dir.path(), |ctx| {
            Box::pin(async move {
                let topics = vec!["auto-a".to_string(), OFFSETS_TOPIC.to_string()];
                let answer = on_auto_create(&ctx, topics).await;
                let made = ctx.snapshot().topic("auto-a").map(|t| t.partitions.len());
                (answer, made)
            })
        });
        // offsets.topic.replication.factor defaults to 3: one broker is not enough.
        let expected = ShardResponse::AutoCreated {
            results: vec![
                ("auto-a".into(), ErrorCode::NONE),
                (OFFSETS_TOPIC.into(), ErrorCode::INVALID_REPLICATION_FACTOR),
            ],
        };
        assert_eq!(answer, (expected, Some(2)));
    }

    #[test]
    fn a_store_from_another_cluster_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStore::open(dir.path()).unwrap();
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
                broker_id: 1,
                host: "h".into(),
                port: 9,
                rack: None,
            },
        );
        let topics = [info("a", 1), info("__consumer_offsets", -1)];
        let s = build_snapshot(&base, 7, 1, &topics);
        assert_eq!(s.version, 7);
        s.check_invariants().unwrap();
        let a = s.topic("a").unwrap();
        assert_eq!(a.topic_id, Uuid::from_u128(5));
        assert_eq!(
            (a.partitions[0].leader, a.partitions[0].leader_epoch),
            (1, 3)
        );
        assert_eq!(
            a.configs.get("retention.ms").map(String::as_str),
            Some("1000")
        );
        assert!(!a.is_internal);
        // No state znode: this broker leads its own replica.
        let offsets = s.topic("__consumer_offsets").unwrap();
        assert!(offsets.is_internal);
        assert_eq!(offsets.partitions[0].leader, 1);
        assert_eq!(offsets.partitions[0].isr, vec![1]);
    }
}
