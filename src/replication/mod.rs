//! Replication (ARCHITECTURE.md §6): a shard's partitions, their replica
//! state, and the pure rules a partition leader and its followers follow.
//!
//! - [`replica_manager`] `[drv]`: the partitions one data shard owns
//!   (Kafka's `ReplicaManager`, per shard).
//! - [`partition`] `[drv]`: one partition — log, role, leader epoch, ISR
//!   view, producer state; append / read / ListOffsets.
//! - [`isr`] `[pure]`: HW advance (`maybeIncrementLeaderHW`), ISR shrink after
//!   `replica.lag.time.max.ms`, ISR expand when a follower's LEO ≥ HW.
//! - [`isr_change`] `[pure]`: an ISR change a leader asks the controller
//!   for (AlterPartition) and its answer.
//! - [`leader_epoch`] `[pure]`: leader-epoch lookups (OffsetForLeaderEpoch,
//!   a follower fetch's diverging epoch; `LeaderEpochFileCache.endOffsetFor`).
//! - [`producer_state`] `[pure]`: per-partition idempotence state
//!   (producer epoch, last sequences, duplicate detection, snapshots).
//! - [`timestamps`] `[pure]`: record timestamp checks on append
//!   (`LogValidator.validateTimestamp`, KIP-937).
//! - [`truncation`] `[pure]`: follower truncation by leader epoch
//!   (KIP-101/279, `getOffsetTruncationState`) and the out-of-range rule.
//! - [`quota`] `[core]`: the broker's replication quotas (leader and
//!   follower `*.replication.throttled.rate`, Kafka's
//!   `ReplicationQuotaManager`), shared by its shards.
//! - [`log_dir_move`] `[pure]`: moving a replica between log dirs
//!   (KIP-113): the copy's rounds, the swap's order, what a start finds.
//! - [`alter_log_dirs`] `[drv]`: the tasks of those moves.
//! - [`fetcher`] `[drv]`: replica fetcher tasks (one per leader broker on
//!   each data shard) and their pure request/response parts.

pub mod alter_log_dirs;
pub mod fetcher;
pub mod isr;
pub mod isr_change;
pub mod leader_epoch;
pub mod legacy_validator;
pub mod log_dir_move;
pub mod partition;
pub mod producer_state;
pub mod quota;
pub mod recompress;
pub mod replica_manager;
pub mod timestamps;
pub mod truncation;
