//! `[io]` Per-shard state every handler sees: identity, config, the current
//! metadata snapshot, the mesh, and the shutdown trigger.
//!
//! One `ShardContext` per executor, shared by `Rc` (never crosses threads).

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::local_sync::Trigger;
use super::mesh::{Handler, Mesh, MeshError};
use crate::config::ServerConfig;
use crate::metadata::Snapshot;
use crate::protocol::{ApiRange, ErrorCode};
use crate::purgatory::driver::PurgatoryDriver;
use crate::purgatory::notes::{AdvanceCoalescer, AdvanceNotes, RemoteWatchRegistry};
use crate::purgatory::view::PartitionSnapshot;
use crate::server::fetch_session::FetchSessionCache;
use crate::types::{ShardId, TopicPartition};

use super::datapath::ReadSpec;
use super::partitions::{OffsetAnswer, PartitionRegistry, ProduceResult, ReadBound};

/// Requests one shard sends another over the mesh. The data path adds
/// variants here (e.g. `Produce { tp, batches: Bytes }`) with a matching
/// arm in [`ShardContext::on_mesh_request`].
#[derive(Debug)]
pub enum ShardRequest {
    /// Liveness probe; answered with `Pong`.
    Ping { payload: Bytes },
    /// Control shard → data shards, first phase of a publication: owners
    /// open/close their partitions for this snapshot without showing it to
    /// clients yet.
    SyncPartitions(Box<Snapshot>),
    /// Control shard → data shards: replace the metadata snapshot (syncing
    /// owned partitions first, if the first phase did not).
    SetSnapshot(Box<Snapshot>),
    /// Data shard → control shard: Metadata named topics that do not exist
    /// and may be auto-created (`auto.create.topics.enable`).
    AutoCreateTopics { topics: Vec<String> },
    // --- data path (shard/datapath.rs) ---
    /// Append each partition's records on its owner.
    Produce {
        parts: Vec<(TopicPartition, Bytes)>,
        now_ms: i64,
    },
    /// Read owned partitions in order within one byte budget.
    Read {
        specs: Vec<ReadSpec>,
        bound: ReadBound,
        max_bytes: usize,
        min_one_batch: bool,
    },
    /// ListOffsets lookups (partition, timestamp or -1/-2/-3).
    ListOffsets {
        parts: Vec<(TopicPartition, i64)>,
        bound: ReadBound,
    },
    /// The sender's purgatory started (true) / stopped (false) watching.
    Watch {
        changes: Vec<(TopicPartition, bool)>,
    },
    /// Coalesced "partition advanced" notes for the receiver's purgatory.
    Advance(AdvanceNotes),
    // --- topic admin (shard::control) ---
    /// Data shard → control shard: a topic admin operation or
    /// InitProducerId; answered with `Admin` after the resulting snapshot
    /// reached every data shard.
    Admin(Box<super::control::AdminRequest>),
    // --- end topic admin ---
}

/// Answers to [`ShardRequest`]s.
#[derive(Debug, PartialEq)]
pub enum ShardResponse {
    Pong {
        shard: usize,
        payload: Bytes,
    },
    SnapshotApplied {
        version: u64,
    },
    /// Per topic: NONE once created, or why not.
    AutoCreated {
        results: Vec<(String, ErrorCode)>,
    },
    // --- data path ---
    Produced(Vec<ProduceResult>),
    Read(Vec<super::partitions::ReadAnswer>),
    Offsets(Vec<OffsetAnswer>),
    Snapshots(Vec<(TopicPartition, PartitionSnapshot)>),
    Ack,
    // --- topic admin (shard::control) ---
    /// Per-item results of an `Admin` request.
    Admin(Box<super::control::AdminResponse>),
    // --- end topic admin ---
    /// The receiving shard does not serve this request.
    Unsupported,
}

pub type ShardMesh = Mesh<ShardRequest, ShardResponse>;

/// Role of an executor in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Data(ShardId),
    Control,
}

pub struct ShardContext {
    pub role: Role,
    /// Number of data shards; the control shard is mesh peer `n_shards`.
    pub n_shards: usize,
    pub config: Arc<ServerConfig>,
    /// Supported API table (drives ApiVersions and dispatch).
    pub api_table: Vec<ApiRange>,
    snapshot: RefCell<Rc<Snapshot>>,
    mesh: OnceCell<Rc<ShardMesh>>,
    /// Fired on SIGINT/SIGTERM: stop accepting, finish in-flight work.
    pub stopping: Trigger,
    /// Cached encoded ApiVersions bodies by version (identical every time).
    pub api_versions_cache: RefCell<Vec<Option<Bytes>>>,
    // --- data path (data shards only) ---
    partitions: OnceCell<Rc<PartitionRegistry>>,
    purgatory: OnceCell<Rc<PurgatoryDriver>>,
    /// KIP-227 sessions of connections on this shard.
    pub fetch_sessions: RefCell<FetchSessionCache>,
    /// Which remote shards watch which of our partitions.
    pub(crate) remote_watchers: RefCell<RemoteWatchRegistry>,
    pub(crate) coalescer: RefCell<AdvanceCoalescer>,
    pub(crate) notes_scheduled: Cell<bool>,
}

impl ShardContext {
    pub fn new(
        role: Role,
        n_shards: usize,
        config: Arc<ServerConfig>,
        api_table: Vec<ApiRange>,
        snapshot: Snapshot,
    ) -> Rc<Self> {
        Rc::new(Self {
            role,
            n_shards,
            config,
            api_table,
            snapshot: RefCell::new(Rc::new(snapshot)),
            mesh: OnceCell::new(),
            stopping: Trigger::default(),
            api_versions_cache: RefCell::new(Vec::new()),
            partitions: OnceCell::new(),
            purgatory: OnceCell::new(),
            fetch_sessions: RefCell::new(FetchSessionCache::new(
                match role {
                    Role::Data(id) => id.0,
                    Role::Control => u16::MAX,
                },
                crate::server::fetch_session::DEFAULT_CACHE_SLOTS,
            )),
            remote_watchers: RefCell::new(RemoteWatchRegistry::new()),
            coalescer: RefCell::new(AdvanceCoalescer::new()),
            notes_scheduled: Cell::new(false),
        })
    }

    /// Data shards: install the partition registry and purgatory (once).
    pub fn set_data_path(&self, partitions: Rc<PartitionRegistry>, purgatory: Rc<PurgatoryDriver>) {
        let _ = self.partitions.set(partitions);
        let _ = self.purgatory.set(purgatory);
    }

    pub fn partitions(&self) -> Option<&Rc<PartitionRegistry>> {
        self.partitions.get()
    }

    pub fn purgatory(&self) -> Option<&Rc<PurgatoryDriver>> {
        self.purgatory.get()
    }

    /// This executor's mesh peer id (alias used by the data path).
    pub fn my_peer(&self) -> usize {
        self.peer_id()
    }

    /// The mesh peer id of the data shard owning `(topic, partition)`
    /// (§2; data shard i is mesh peer i).
    pub fn owner_of(&self, topic: &str, partition: i32) -> usize {
        super::placement::shard_of(topic, partition, self.n_shards).index()
    }

    /// This executor's mesh peer id.
    pub fn peer_id(&self) -> usize {
        match self.role {
            Role::Data(id) => id.index(),
            Role::Control => self.control_peer(),
        }
    }

    /// The mesh peer id of the control shard.
    pub fn control_peer(&self) -> usize {
        self.n_shards
    }

    /// The snapshot current at the time of the call; requests keep it.
    pub fn snapshot(&self) -> Rc<Snapshot> {
        self.snapshot.borrow().clone()
    }

    /// Replace the snapshot unless `snapshot` is older than ours.
    pub fn set_snapshot(&self, snapshot: Rc<Snapshot>) {
        let mut current = self.snapshot.borrow_mut();
        if snapshot.version >= current.version {
            *current = snapshot;
        }
    }

    pub fn set_mesh(&self, mesh: Rc<ShardMesh>) {
        let _ = self.mesh.set(mesh);
    }

    pub fn mesh(&self) -> Option<&Rc<ShardMesh>> {
        self.mesh.get()
    }

    /// Call another shard (or ourselves) through the mesh.
    pub async fn call(&self, target: usize, req: ShardRequest) -> Result<ShardResponse, MeshError> {
        match self.mesh.get() {
            Some(mesh) => mesh.call(target, req).await,
            None => Err(MeshError::PeerGone(target)),
        }
    }

    /// The mesh handler for this shard.
    pub fn mesh_handler(self: &Rc<Self>) -> Handler<ShardRequest, ShardResponse> {
        let weak = Rc::downgrade(self);
        Rc::new(move |from, req| {
            let ctx = weak.upgrade();
            Box::pin(async move {
                match ctx {
                    Some(ctx) => ctx.on_mesh_request(from, req).await,
                    None => ShardResponse::Unsupported,
                }
            })
        })
    }

    async fn on_mesh_request(self: Rc<Self>, from: usize, req: ShardRequest) -> ShardResponse {
        match (req, self.role) {
            (ShardRequest::Ping { payload }, _) => ShardResponse::Pong {
                shard: self.peer_id(),
                payload,
            },
            (ShardRequest::SyncPartitions(snapshot), _) => {
                let version = snapshot.version;
                if let Some(registry) = self.partitions() {
                    registry.sync(&snapshot).await;
                }
                ShardResponse::SnapshotApplied { version }
            }
            (ShardRequest::SetSnapshot(snapshot), _) => {
                let version = snapshot.version;
                let snapshot = Rc::new(*snapshot);
                // Owners open their partitions before clients can see them
                // in Metadata, so a ListOffsets/Produce right after a topic
                // appears finds its log (no UNKNOWN_TOPIC_OR_PARTITION
                // window while the log files are being opened).
                if let Some(registry) = self.partitions() {
                    registry.sync(&snapshot).await;
                }
                self.set_snapshot(snapshot);
                ShardResponse::SnapshotApplied { version }
            }
            (ShardRequest::AutoCreateTopics { topics }, Role::Control) => {
                super::control::on_auto_create(&self, topics).await
            }
            (ShardRequest::AutoCreateTopics { .. }, Role::Data(_)) => ShardResponse::Unsupported,
            // --- topic admin (shard::control) ---
            (ShardRequest::Admin(req), Role::Control) => {
                super::control::on_admin_request(&self, *req).await
            }
            (ShardRequest::Admin(_), Role::Data(_)) => ShardResponse::Unsupported,
            // --- end topic admin ---
            (req, Role::Data(_)) => self.on_data_request(from, req).await,
            (_, Role::Control) => ShardResponse::Unsupported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{BrokerEndpoint, PartitionState, TopicState};
    use crate::shard::mesh;
    use glommio::{LocalExecutorBuilder, Placement};

    fn snapshot(version: u64, topic: Option<&str>) -> Snapshot {
        let mut s = Snapshot::single_broker(
            "c",
            BrokerEndpoint {
                broker_id: 0,
                host: "h".into(),
                port: 1,
                rack: None,
            },
        );
        s.version = version;
        if let Some(name) = topic {
            s = s.with_topic(TopicState {
                configs: Default::default(),
                name: name.into(),
                topic_id: uuid::Uuid::from_u128(9),
                is_internal: false,
                partitions: vec![PartitionState {
                    partition: 0,
                    leader: 0,
                    leader_epoch: 0,
                    replicas: vec![0],
                    isr: vec![0],
                    offline_replicas: vec![],
                }],
            });
        }
        s
    }

    fn context(role: Role) -> Rc<ShardContext> {
        ShardContext::new(
            role,
            1,
            Arc::new(ServerConfig::default()),
            vec![],
            snapshot(1, None),
        )
    }

    #[test]
    fn set_snapshot_ignores_an_older_snapshot() {
        let ctx = context(Role::Data(ShardId(0)));
        ctx.set_snapshot(Rc::new(snapshot(5, Some("new"))));
        ctx.set_snapshot(Rc::new(snapshot(4, None)));
        assert_eq!(ctx.snapshot().version, 5);
        assert!(ctx.snapshot().topic("new").is_some());
    }

    #[test]
    fn the_control_shard_publishes_snapshots_to_a_data_shard_over_the_mesh() {
        let builder = mesh::builder::<ShardRequest, ShardResponse>(2, 8);
        // Peer 0 = data shard, peer 1 = control shard (creation order).
        let spawn = |role: Role| {
            let builder = builder.clone();
            LocalExecutorBuilder::new(Placement::Unbound)
                .io_memory(512 << 10)
                .spawn(move || async move {
                    let ctx = context(role);
                    ctx.set_mesh(Mesh::join(builder, ctx.mesh_handler()).await.unwrap());
                    let at_least = |v: u64| {
                        let ctx = ctx.clone();
                        async move {
                            while ctx.snapshot().version < v {
                                glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
                            }
                        }
                    };
                    // Each side exits only after its last call was answered
                    // and the other side has nothing left to ask it.
                    if role == Role::Control {
                        let publish =
                            ShardRequest::SetSnapshot(Box::new(snapshot(2, Some("orders"))));
                        let applied = ctx.call(0, publish).await.unwrap();
                        assert_eq!(applied, ShardResponse::SnapshotApplied { version: 2 });
                        let ping = ShardRequest::Ping {
                            payload: Bytes::from_static(b"x"),
                        };
                        let seen = ctx.call(0, ping).await.unwrap();
                        // The data shard's version 3 says it is done with us.
                        at_least(3).await;
                        seen
                    } else {
                        at_least(2).await;
                        assert!(ctx.snapshot().topic("orders").is_some());
                        let create = ShardRequest::AutoCreateTopics {
                            topics: vec!["t".into()],
                        };
                        let seen = ctx.call(1, create).await.unwrap();
                        let done = ShardRequest::SetSnapshot(Box::new(snapshot(3, None)));
                        ctx.call(1, done).await.unwrap();
                        seen
                    }
                })
                .unwrap()
        };
        let data = spawn(Role::Data(ShardId(0)));
        let control = spawn(Role::Control);
        let from_control = control.join().unwrap();
        let from_data = data.join().unwrap();
        assert_eq!(
            from_control,
            ShardResponse::Pong {
                shard: 0,
                payload: Bytes::from_static(b"x")
            }
        );
        assert_eq!(
            from_data,
            ShardResponse::AutoCreated {
                results: vec![("t".into(), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)]
            }
        );
    }
}
