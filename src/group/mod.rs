//! The group coordinator (ARCHITECTURE.md §2, §5; seed 000's consumer-group
//! chapter): JoinGroup / SyncGroup / Heartbeat / LeaveGroup / OffsetCommit /
//! OffsetFetch with Kafka's classic protocol, the five group states
//! (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) as a pure
//! state machine, and `__consumer_offsets` records in Kafka's formats.
//!
//! - [`records`] `[pure]`: the `__consumer_offsets` key and value formats
//!   (offset commits, group metadata), Kafka's bytes.
//!
//! The coordinator is not built yet. It will live on the shard owning the group's
//! `__consumer_offsets` partition (`shard::placement::coordinator_partition`),
//! as `state`, `member`, `offsets`, `records` `[pure]` and a `coordinator`
//! `[drv]` whose DelayedJoin / DelayedHeartbeat park in that shard's
//! purgatory.

pub mod records;
