//! The group coordinator (ARCHITECTURE.md §2, §5; Kafka's classic
//! group protocol): JoinGroup / SyncGroup / Heartbeat / LeaveGroup / OffsetCommit /
//! OffsetFetch with Kafka's classic protocol, the five group states
//! (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) as a pure
//! state machine, and `__consumer_offsets` records in Kafka's formats.
//!
//! - [`records`] `[pure]`: the `__consumer_offsets` key and value formats
//!   (offset commits, group metadata), Kafka's bytes.
//! - [`state`] `[pure]`: a group's state — the five states and Kafka's
//!   transition table, members, static members, protocol choice by vote,
//!   generations.
//! - [`coordinator`] `[pure]`: one shard's coordinator — the JoinGroup /
//!   SyncGroup / Heartbeat / LeaveGroup flow over `state`, committed
//!   offsets, DescribeGroups / ListGroups / DeleteGroups / OffsetDelete, the
//!   rebalance timers, and loading a partition's records. Events in,
//!   actions (replies, appends) out.
//! - [`partition`] `[pure]`: the `__consumer_offsets` partition of a group.
//!
//! `shard::group::group_driver` runs a shard's coordinator: waiters, the one
//! timer, appends to `__consumer_offsets` with acks=all, loading and
//! unloading partitions as the shard gains or loses them.

pub mod coordinator;
pub mod partition;
pub mod records;
pub mod state;
