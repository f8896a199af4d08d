//! `[io]` Per-shard state every handler sees: identity, config, the current
//! metadata snapshot, the mesh, and the shutdown trigger.
//!
//! One `ShardContext` per executor, shared by `Rc` (never crosses threads).

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::local_sync::Trigger;
use super::mesh::{Handler, Mesh, MeshError};
use crate::config::ServerConfig;
use crate::metadata::Snapshot;
use crate::protocol::{ApiRange, ErrorCode};
use crate::types::ShardId;

/// Requests one shard sends another over the mesh. The data path adds
/// variants here (e.g. `Produce { tp, batches: Bytes }`) with a matching
/// arm in [`ShardContext::on_mesh_request`].
#[derive(Debug)]
pub enum ShardRequest {
    /// Liveness probe; answered with `Pong`.
    Ping { payload: Bytes },
    /// Control shard → data shards: replace the metadata snapshot.
    SetSnapshot(Box<Snapshot>),
    /// Data shard → control shard: Metadata named topics that do not exist
    /// and may be auto-created (`auto.create.topics.enable`).
    AutoCreateTopics { topics: Vec<String> },
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
        })
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

    async fn on_mesh_request(self: Rc<Self>, _from: usize, req: ShardRequest) -> ShardResponse {
        match (req, self.role) {
            (ShardRequest::Ping { payload }, role) => ShardResponse::Pong {
                shard: match role {
                    Role::Data(id) => id.index(),
                    Role::Control => self.control_peer(),
                },
                payload,
            },
            (ShardRequest::SetSnapshot(snapshot), _) => {
                let version = snapshot.version;
                self.set_snapshot(Rc::new(*snapshot));
                ShardResponse::SnapshotApplied { version }
            }
            (ShardRequest::AutoCreateTopics { topics }, Role::Control) => {
                // Hook for the controller (§7): topic creation is not wired
                // yet, so every candidate stays unknown, as Kafka answers
                // with auto.create.topics.enable=false.
                let results = topics
                    .into_iter()
                    .map(|t| (t, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
                    .collect();
                ShardResponse::AutoCreated { results }
            }
            (ShardRequest::AutoCreateTopics { .. }, Role::Data(_)) => ShardResponse::Unsupported,
        }
    }
}
