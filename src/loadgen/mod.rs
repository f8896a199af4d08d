//! `[io]` The load generator (`shardlog loadgen`).
pub mod accumulator;
pub mod args;
pub mod histogram;
pub mod omb;
pub mod partitioner;
pub mod report;
pub mod sweep;
pub mod client;
pub mod producer;
pub mod consumer;
