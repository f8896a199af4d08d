//! The group coordinator's subsystem driver: runs the pure group
//! coordinator (`crate::group`) on the data shard owning each
//! `__consumer_offsets` partition — its waiters, timer and appender
//! tasks, loading and unloading partitions as leadership moves — and
//! sends a connection's group call to its coordinator's shard.
//!
//! - [`group_host`] `[drv]`: a data shard's group coordinator and the
//!   messages it answers.
//! - [`group_driver`] `[drv]`: runs it and sends a group's requests to it.
//! - [`internal_log`] `[drv]`: the coordinators' own logs
//!   (`__consumer_offsets`, `__transaction_state`): acks=all appends and
//!   replay on load (the transaction coordinator uses it too).

pub mod group_driver;
pub mod group_host;
pub mod internal_log;
