//! `[pure]` Broker metrics for Prometheus (Kafka's MBeans as Strimzi's
//! JMX-exporter rules name them).
//!
//! - [`shard`]: one shard's live counters and request histograms, plain
//!   `Cell`s owned by its context; no atomics, no locks.
//! - [`buckets`]: the cumulative fixed-bucket histograms behind
//!   shardlog's own Prometheus histograms.
//! - [`recent`]: the windowed HdrHistogram behind Kafka's request
//!   percentiles.
//! - [`report`]: what a scrape gathers from the shards, merged.
//! - [`control`]: the control shard's controller and ZooKeeper client
//!   figures.
//! - [`exposition`]: the report as OpenMetrics or text 0.0.4.
//!
//! The I/O around it: the shards answer a scrape over the mesh
//! (`shard::metrics`), `/proc/self` is read by `io::process`, and the
//! HTTP listener is `server::metrics_http`.

pub mod buckets;
pub mod control;
pub mod exposition;
pub mod recent;
pub mod report;
pub mod shard;
