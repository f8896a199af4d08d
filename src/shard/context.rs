//! `[io]` The state every shard has — identity, config, the current
//! metadata snapshot, the mesh, the clock, the shutdown trigger — and the
//! role's own part: a data shard's [`DataShard`] or the control shard's
//! [`ControlShard`], each given at construction.
//!
//! Mesh messages are one enum per subsystem, each defined beside the state
//! that answers it ([`DataRequest`] in `data_shard`, [`ControlRequest`] in
//! `control_shard`); [`ShardRequest`] only names which. Routing a received
//! message is `router`'s.
//!
//! One `ShardContext` per executor, shared by `Rc` (never crosses threads).

mod drivers;

use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;

use super::control::control_shard::{ControlRequest, ControlResponse, ControlShard};
use super::data_shard::{DataRequest, DataResponse, DataShard, ProduceAppends};
use super::mesh::{Mesh, MeshError, Posted};
use crate::config::ServerConfig;
use crate::histogram::LatencyHistogram;
use crate::io::broker_stream::BrokerTls;
use crate::io::clock::Clock;
use crate::io::local_sync::Trigger;
use crate::io::zerocopy::ZeroCopyStats;
use crate::metadata::Snapshot;
use crate::protocol::ApiRange;
use crate::types::ShardId;

/// Requests one shard sends another over the mesh.
#[derive(Debug)]
pub enum ShardRequest {
    /// Liveness probe; answered with `Pong`.
    Ping { payload: Bytes },
    /// To a data shard: a produce request's appends to its partitions
    /// (their places in the append order taken on receipt).
    Produce(ProduceAppends),
    /// To a data shard: partitions, purgatory notes, metadata publication.
    Data(DataRequest),
    /// To the control shard: topic admin, auto-creation.
    Control(ControlRequest),
    /// To a data shard: its part of a `/metrics` scrape.
    Metrics,
}

/// Answers to [`ShardRequest`]s.
#[derive(Debug, PartialEq)]
pub enum ShardResponse {
    Pong {
        shard: usize,
        payload: Bytes,
    },
    Data(DataResponse),
    Control(ControlResponse),
    Metrics(Box<crate::metrics::report::ShardReport>),
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

/// What a shard is besides the common part.
pub enum RolePart {
    Data(DataShard),
    Control(Box<ControlShard>),
    /// A shard with no subsystem of its own (mesh unit tests): it answers
    /// pings and takes metadata snapshots.
    Bare(Role),
}

impl RolePart {
    fn role(&self) -> Role {
        match self {
            RolePart::Data(d) => Role::Data(d.shard),
            RolePart::Control(_) => Role::Control,
            RolePart::Bare(role) => *role,
        }
    }
}

pub struct ShardContext {
    /// Number of data shards; the control shard is mesh peer `n_shards`.
    pub n_shards: usize,
    pub config: Arc<ServerConfig>,
    /// Supported API table (drives ApiVersions and dispatch).
    pub api_table: Vec<ApiRange>,
    /// The only source of time for this shard's drivers (tests pass a
    /// `ManualClock`).
    pub clock: Rc<dyn Clock>,
    snapshot: RefCell<Rc<Snapshot>>,
    /// Fired (and replaced) each time a newer snapshot is installed.
    snapshot_installed: RefCell<Rc<Trigger>>,
    /// Set once, right after the shard joined the mesh (the mesh's handler
    /// needs this context first).
    mesh: OnceCell<Rc<ShardMesh>>,
    /// Fired on SIGINT/SIGTERM: stop accepting, finish in-flight work.
    pub stopping: Trigger,
    /// Cached encoded ApiVersions bodies by version (identical every time).
    pub api_versions_cache: RefCell<Vec<Option<Bytes>>>,
    /// This shard's counters for the shutdown report.
    pub stats: ShardStats,
    /// TLS client configurations of this broker's connections to other
    /// brokers (`None` where the listener is PLAINTEXT), built at boot.
    pub broker_tls: BrokerTls,
    /// `authorizer.class.name`, `super.users`,
    /// `allow.everyone.if.no.acl.found`: how requests are authorized
    /// against the snapshot's ACLs (`acl::authorizer`).
    pub authorizer: crate::acl::authorizer::Policy,
    part: RolePart,
}

/// What a shard's connections count, summed over the data shards into the
/// shutdown report (`request latency: produce …`, `zerocopy: …`).
#[derive(Default)]
pub struct ShardStats {
    /// Produce requests' broker-side latency (`server::request_metrics`).
    pub produce_latency: RefCell<LatencyHistogram>,
    /// Bytes written per path (`io::zerocopy`).
    pub zerocopy: Cell<ZeroCopyStats>,
    /// Counters and request histograms for `/metrics` (`shard::metrics`).
    pub metrics: crate::metrics::shard::ShardMetrics,
    /// TLS handshakes on this shard (`server::tls_conn`).
    pub tls_handshakes: RefCell<crate::tls::handshake_stats::HandshakeStats>,
}

/// The common part of a shard, before its role's part is added.
pub struct ShardBase {
    pub n_shards: usize,
    pub config: Arc<ServerConfig>,
    pub api_table: Vec<ApiRange>,
    pub clock: Rc<dyn Clock>,
    pub snapshot: Snapshot,
    pub broker_tls: BrokerTls,
}

impl ShardContext {
    pub fn new(base: ShardBase, part: RolePart) -> Rc<Self> {
        let authorizer = base.config.authorizer_policy();
        Rc::new(Self {
            n_shards: base.n_shards,
            config: base.config,
            api_table: base.api_table,
            clock: base.clock,
            snapshot: RefCell::new(Rc::new(base.snapshot)),
            snapshot_installed: RefCell::new(Rc::new(Trigger::default())),
            mesh: OnceCell::new(),
            stopping: Trigger::default(),
            api_versions_cache: RefCell::new(Vec::new()),
            stats: ShardStats::default(),
            authorizer,
            broker_tls: base.broker_tls,
            part,
        })
    }

    /// What this executor is (from its part).
    pub fn role(&self) -> Role {
        self.part.role()
    }

    /// The data shard's part (`None` on the control shard).
    pub fn data(&self) -> Option<&DataShard> {
        match &self.part {
            RolePart::Data(d) => Some(d),
            _ => None,
        }
    }

    /// The control shard's part (`None` on data shards).
    pub fn control(&self) -> Option<&ControlShard> {
        match &self.part {
            RolePart::Control(c) => Some(c.as_ref()),
            _ => None,
        }
    }

    /// This executor's mesh peer id.
    pub fn peer_id(&self) -> usize {
        match self.role() {
            Role::Data(id) => id.index(),
            Role::Control => self.control_peer(),
        }
    }

    /// The mesh peer id of the data shard owning `(topic, partition)`
    /// (§2; data shard i is mesh peer i).
    pub fn owner_of(&self, topic: &str, partition: i32) -> usize {
        super::placement::shard_of(topic, partition, self.n_shards).index()
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
        {
            let mut current = self.snapshot.borrow_mut();
            if snapshot.version < current.version {
                return;
            }
            *current = snapshot;
        }
        let fired = self.snapshot_installed.replace(Rc::new(Trigger::default()));
        fired.fire();
    }

    /// Waits until `done` holds for the installed snapshot or `timeout`
    /// passes; whether it holds (Kafka's DelayedCreatePartitions /
    /// DelayedDeleteTopics wait on the metadata cache the same way).
    pub async fn wait_for_snapshot(
        &self,
        timeout: std::time::Duration,
        done: impl Fn(&Snapshot) -> bool,
    ) -> bool {
        let installed = async {
            loop {
                let next = self.snapshot_installed.borrow().clone();
                if done(&self.snapshot()) {
                    return true;
                }
                next.wait().await;
            }
        };
        let timer = async {
            glommio::timer::sleep(timeout).await;
            false
        };
        futures_lite::future::or(installed, timer).await || done(&self.snapshot())
    }

    pub fn set_mesh(&self, mesh: Rc<ShardMesh>) {
        let _ = self.mesh.set(mesh);
    }

    pub fn mesh(&self) -> Option<&Rc<ShardMesh>> {
        self.mesh.get()
    }

    /// Post a request to another shard (or ourselves) through the mesh
    /// (`Mesh::post`: done once it is in that shard's queue).
    pub async fn post(
        &self,
        target: usize,
        req: ShardRequest,
    ) -> Result<Posted<ShardResponse>, MeshError> {
        match self.mesh.get() {
            Some(mesh) => mesh.post(target, req).await,
            None => Err(MeshError::PeerGone(target)),
        }
    }

    /// Call another shard (or ourselves) through the mesh.
    pub async fn call(&self, target: usize, req: ShardRequest) -> Result<ShardResponse, MeshError> {
        match self.mesh.get() {
            Some(mesh) => mesh.call(target, req).await,
            None => Err(MeshError::PeerGone(target)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{context, snapshot};
    use super::*;
    use crate::types::ShardId;

    #[test]
    fn set_snapshot_ignores_an_older_snapshot() {
        let ctx = context(Role::Data(ShardId(0)));
        ctx.set_snapshot(Rc::new(snapshot(5, Some("new"))));
        ctx.set_snapshot(Rc::new(snapshot(4, None)));
        assert_eq!(ctx.snapshot().version, 5);
        assert!(ctx.snapshot().hosted_topic("new").is_some());
    }
}
