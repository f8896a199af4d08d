//! Replication (ARCHITECTURE.md §6): the pure rules a partition leader and
//! its followers follow, and the producer-id allocation idempotent
//! producers depend on.
//!
//! - [`isr`] `[pure]`: HW advance (`maybeIncrementLeaderHW`), ISR shrink after
//!   `replica.lag.time.max.ms`, ISR expand when a follower's LEO ≥ HW.
//! - [`producer_state`] `[pure]`: per-partition idempotence state
//!   (producer epoch, last sequences, duplicate detection, snapshots).
//! - [`producer_id`] `[pure]`: producer-id blocks from
//!   `/latest_producer_id_block` (Kafka's `ZkProducerIdManager`).
//!
//! Future files (not written yet):
//! - `truncation` `[pure]`: follower truncation by leader epoch (KIP-101,
//!   OffsetsForLeaderEpoch).
//! - `fetcher` `[drv]`: replica fetcher tasks.

pub mod isr;
pub mod producer_id;
pub mod producer_state;
