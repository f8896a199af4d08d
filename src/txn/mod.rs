//! The transaction coordinator (KIP-98): it hands out producer ids and
//! epochs to transactional producers (InitProducerId), records which
//! partitions a transaction touched (AddPartitionsToTxn, AddOffsetsToTxn),
//! and drives a transaction to its end (EndTxn, then the commit or abort
//! markers written to every partition). What it knows of each
//! `transactional.id` lives in the compacted `__transaction_state` topic, so
//! a coordinator that takes over a partition of that topic rebuilds it by
//! reading the log.
//!
//! - [`records`] `[pure]`: the `__transaction_state` key and value formats,
//!   Kafka 3.9's bytes.
//! - [`state`] `[pure]`: Kafka's `TransactionState` (the eight states and
//!   their transition table) and `TransactionMetadata` as a state machine:
//!   `prepare_*` proposes the next metadata (what is appended to the log),
//!   `complete_transition` applies it once the append succeeded.
//!
//! The coordinator core and its driver (appends with acks=all, marker
//! requests, timeouts, loading partitions) build on these two.

pub mod coordinator;
pub mod records;
pub mod state;
pub mod status;
