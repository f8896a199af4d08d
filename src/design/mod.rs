//! The design of shardlog, rendered by `cargo doc` from the Markdown files
//! beside this one (`src/design/*.md`, readable on their own too):
//!
//! - [`architecture`]: threads and shards, who owns what, storage and
//!   durability, the zero-copy read path, the purgatory, replication, the
//!   control plane, and the shape of the code.
//! - [`cluster`]: what shardlog speaks to interoperate with Apache Kafka 3.9
//!   in ZooKeeper mode (wire versions, znode JSON, `__consumer_offsets`
//!   records) and how a cluster is tested on one host.
//! - [`style`]: the module map, the layers, and the rules the code is held
//!   to (the checked ones fail a test).
//! - [`platform`]: what glommio, the kernel and Kafka's clients do on these
//!   machines, measured, and what shardlog does about each.
//!
//! This module holds text only; the crate map is on the [crate](crate) page.

#[doc = include_str!("architecture.md")]
pub mod architecture {}

#[doc = include_str!("cluster.md")]
pub mod cluster {}

#[doc = include_str!("style.md")]
pub mod style {}

#[doc = include_str!("platform.md")]
pub mod platform {}
