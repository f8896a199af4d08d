//! Shards (§1–2): one executor per core, each owning a disjoint set of
//! partitions, plus the control shard.
//!
//! - [`placement`] `[pure]`: `shard_of`, the coordinator partition.
//! - [`mesh`] `[io]`: the cross-shard queues.
//! - [`context`] `[io]`: what every shard has, and its role's part.
//! - [`data_shard`] `[drv]`: a data shard's partitions, purgatory, fetch
//!   sessions; the owner side of partition work.
//! - [`router`] `[drv]`: mesh messages to the part that answers them;
//!   metadata publication; purgatory notes; leaders' ISR changes sent.
//! - [`datapath`] `[drv]`: the connection side of partition work (fan
//!   out to owners, park in the purgatory).
//! - [`fetch_session`] `[pure]`: KIP-227 fetch sessions of a shard's
//!   connections.
//! - [`metrics`] `[drv]`: a shard's part of a `/metrics` scrape, and the
//!   scrape gathering every data shard's over the mesh.
//! - [`peer_conns`] `[io]`: the kept connections to other brokers
//!   (KIP-890 verification, transaction markers).
//!
//! Subsystem drivers, each running a pure core on the shards:
//!
//! - [`control`]: the control shard and the controller
//!   (`crate::controller`), and the data shards' side of asking it.
//! - [`group`]: the group coordinator (`crate::group`).
//! - [`txn`]: the transaction coordinator (`crate::txn`) and KIP-890
//!   verification.

pub mod context;
pub mod control;
pub mod data_shard;
pub mod datapath;
pub mod fetch_session;
pub mod group;
pub mod mesh;
pub mod metrics;
pub mod peer_conns;
pub mod placement;
pub mod router;
#[cfg(test)]
mod test_support;
pub mod txn;

pub use context::{ShardContext, ShardRequest, ShardResponse};
pub use placement::{coordinator_partition, shard_of};
