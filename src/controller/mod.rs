//! The controller (ARCHITECTURE.md §7): Kafka's ZooKeeper-mode
//! controller, run on the control shard: the admin side every broker has
//! (over the embedded store, or its ZooKeeper session), and — on the
//! broker elected controller — the controller's duties.
//!
//! - [`admin`] `[drv]`: the [`AdminManager`] (Kafka's `ZkAdminManager`),
//!   every broker's admin side — owns the store, runs admin operations
//!   (topics, configs, producer-id blocks) one at a time, hands back the
//!   snapshot to publish. Not the controller.
//! - [`admin_requests`] `[pure]`: the admin operations data shards forward
//!   to the control shard, and their answers.
//! - [`producer_id`] `[pure]`: producer-id blocks of
//!   `/latest_producer_id_block` (Kafka's `ZkProducerIdManager`), the
//!   core; its [`producer_id::store`] `[drv]` drives it over the store.
//! - [`image`] `[pure]`: the metadata snapshot built from stored topics;
//!   the specs of auto-created (internal) topics.
//! - [`topic_admin`], [`topic_configs`], [`brokers`]: Kafka's topic admin,
//!   topic config and broker registration operations over any
//!   `zk::store::MetadataStore` (`AdminZkClient`, `KafkaZkClient`).
//! - [`channel`] `[drv]`: the controller → broker request channel (Kafka's
//!   ControllerChannelManager), one queue and connection per live broker.
//! - [`election`]: controller election over the store and the pure
//!   [`election::Election`] view each broker keeps.
//! - [`identity`]: a ZooKeeper-mode broker's cluster id and broker id at
//!   start-up (`/cluster/id`, `/brokers/seqid`, the `meta.properties` rules).
//! - [`zk_mode`] `[drv]`: a ZooKeeper-mode broker — registration, the
//!   election, the controller's context and watches, one event queue, and
//!   the controller's duties (topics, brokers up and down, deletions,
//!   controlled shutdown) in `zk_mode::partitions`.
//! - [`context`] `[pure]`: what the active controller knows.
//! - [`request_batch`] `[pure]`: the LeaderAndIsr / UpdateMetadata /
//!   StopReplica gathered during one event, built per broker.
//! - [`admin_error`] `[pure]`: why an admin operation failed, as a Kafka
//!   error code.
//! - [`assignment`] `[pure]`: Kafka's replica assignment, rack-unaware and
//!   rack-aware.
//! - [`state_machine`] `[pure]`: the partition and replica state machines'
//!   legal transitions and the state of every partition and replica.
//! - [`alter_partition`] `[pure]`: the controller's verdict on one
//!   partition of an AlterPartition (ISR changes from partition leaders).
//! - [`reassignment`] `[pure]`: partition reassignment's RS/AR/RR
//!   bookkeeping, request checks and completion rule.
//! - [`leader_election`] `[pure]`: Kafka's four partition leader election
//!   strategies and the new leader and ISR each produces.

pub mod admin;
pub mod admin_error;
pub mod admin_requests;
pub mod alter_partition;
pub mod assignment;
pub mod brokers;
pub mod channel;
pub mod context;
pub mod core;
pub mod election;
pub mod identity;
pub mod image;
pub mod leader_election;
pub mod producer_id;
pub mod reassignment;
pub mod rebalance;
pub mod request_batch;
pub mod state_machine;
pub mod topic_admin;
pub mod topic_configs;
pub mod zk_mode;

pub use admin::{AdminManager, Outcome};
