//! The control shard's subsystem driver (ARCHITECTURE.md §7): the glue
//! between the pure controller (`crate::controller`) and the shard — the
//! control shard's own part and its mesh requests, the metadata store's
//! config paths it serves, the ZooKeeper-mode election's duties, and the
//! data shards' side of asking it.
//!
//! - [`control_shard`] `[drv]`: the control shard's part: the controller
//!   it owns and the [`control_shard::ControlRequest`]s it answers; the
//!   client quotas and dynamic broker configs it keeps in the metadata
//!   store ([`control_shard::client_quotas`],
//!   [`control_shard::broker_configs`]) and the ACLs
//!   ([`control_shard::acls`]).
//! - [`control_client`] `[drv]`: a data shard's side of those requests.
//! - [`alter_partition`] `[drv]`: a leader's ISR changes, through the
//!   control shard, to the controller (AlterPartition).
//! - [`controlled_shutdown`] `[drv]`: a stopping ZooKeeper-mode broker
//!   asks the controller to move its leaders first.
//! - [`config_changes`] `[drv]`: following `/config/changes`.
//! - [`acl_changes`] `[drv]`: following the ACL change notifications.
//! - [`ssl_listeners`] `[drv]`: the SSL listeners' TLS, reconfigured by
//!   dynamic keystore/truststore updates (KIP-226).
//! - [`zk_broker`] `[drv]`: the control shard's ZooKeeper-mode session:
//!   registration, the election, the controller queue, controlled
//!   shutdown before the stop.
//! - [`zk_duties`] `[drv]`: what the control shard does with the
//!   ZooKeeper-mode election (`controller::zk_mode`).

pub mod acl_changes;
pub mod alter_partition;
pub mod config_changes;
pub mod control_client;
pub mod control_shard;
pub mod controlled_shutdown;
pub mod ssl_listeners;
pub mod zk_broker;
pub mod zk_duties;
