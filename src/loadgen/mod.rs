//! `[io]` The load generator (`shardlog loadgen`).
pub mod accumulator;
pub mod partitioner;
