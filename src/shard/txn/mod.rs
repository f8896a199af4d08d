//! The transaction coordinator's subsystem driver: runs the pure
//! transaction coordinator (`crate::txn`) on the data shard owning each
//! `__transaction_state` partition — its appender, timer and worker tasks
//! (producer ids, markers to partition leaders), loading and unloading
//! partitions as leadership moves — sends a connection's transaction call
//! to its coordinator's shard, and verifies transactional appends with
//! their coordinator (KIP-890).
//!
//! - [`txn_host`] `[drv]`: a data shard's transaction coordinator and the
//!   messages it answers.
//! - [`txn_driver`] `[drv]`: runs it and sends a call to it.
//! - [`txn_verify`] `[drv]`: KIP-890 verification of transactional
//!   appends with their coordinator.

pub mod txn_driver;
pub mod txn_host;
pub mod txn_verify;
