//! The group coordinator (ARCHITECTURE.md §2, §5; seed 000's consumer-group
//! chapter): JoinGroup / SyncGroup / Heartbeat / LeaveGroup / OffsetCommit /
//! OffsetFetch with Kafka's classic protocol, the five group states
//! (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) as a pure
//! state machine, and `__consumer_offsets` records in Kafka's formats.
//!
//! - [`records`] `[pure]`: the `__consumer_offsets` key and value formats
//!   (offset commits, group metadata), Kafka's bytes.
//! - [`state`] `[pure]`: a group's state — the five states and Kafka's
//!   transition table, members, static members, protocol choice by vote,
//!   generations.
//!
//! Not built yet: the JoinGroup / SyncGroup / Heartbeat flow over `state`,
//! the offsets cache, and the `coordinator` `[drv]` on the shard owning the
//! group's `__consumer_offsets` partition
//! (`shard::placement::coordinator_partition`), whose DelayedJoin /
//! DelayedHeartbeat park in that shard's purgatory.

pub mod records;
pub mod state;
