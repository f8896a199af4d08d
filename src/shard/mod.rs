//! Shards (§1–2): one executor per core, each owning a disjoint set of
//! partitions, plus the control shard.
//!
//! - [`placement`] `[pure]`: `shard_of`, the coordinator partition.
//! - [`mesh`] `[io]`: the cross-shard queues.
//! - [`context`] `[io]`: what every shard has, and its role's part.
//! - [`data_shard`] `[drv]`: a data shard's partitions, purgatory, fetch
//!   sessions; the owner side of partition work.
//! - [`control_shard`] `[drv]`: the control shard's controller.
//! - [`router`] `[drv]`: mesh messages to the part that answers them;
//!   metadata publication; purgatory notes; leaders' ISR changes sent.
//! - [`datapath`], [`control_client`] `[drv]`: the connection side (fan
//!   out to owners, park in the purgatory; ask the control shard).
//! - [`alter_partition`] `[drv]`: a leader's ISR changes, through the
//!   control shard, to the controller (AlterPartition).
//! - [`controlled_shutdown`] `[drv]`: a stopping ZooKeeper-mode broker
//!   asks the controller to move its leaders first.
//! - [`group_host`] `[drv]`: a data shard's group coordinator and its
//!   messages; [`group_driver`] `[drv]` runs it (waiters, timer, appends to
//!   and loads of `__consumer_offsets`) and sends a group's requests to it.
//! - [`client_quotas`], [`broker_configs`] `[drv]`: client quotas and
//!   dynamic broker configs in the metadata store, on the control shard.
//! - [`fetch_session`] `[pure]`: KIP-227 fetch sessions of a shard's
//!   connections.
//! - [`txn_verify`] `[drv]`: KIP-890 verification of transactional
//!   appends with their coordinator; [`peer_conns`] `[io]`: the kept
//!   connections to other brokers it and the marker sends use.

pub mod alter_partition;
pub mod broker_configs;
pub mod client_quotas;
pub mod config_changes;
pub mod context;
pub mod control_client;
pub mod control_shard;
pub mod controlled_shutdown;
pub mod data_shard;
pub mod datapath;
pub mod fetch_session;
pub mod group_driver;
pub mod group_host;
pub mod internal_log;
pub mod mesh;
pub mod peer_conns;
pub mod placement;
pub mod router;
#[cfg(test)]
mod test_support;
pub mod txn_driver;
pub mod txn_host;
pub mod txn_verify;
pub mod zk_duties;

pub use context::{ShardContext, ShardRequest, ShardResponse};
pub use placement::{coordinator_partition, shard_of};
