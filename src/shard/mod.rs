//! Shards (§1–2): placement (`shard_of`, coordinator partition) is pure;
//! the cross-shard mesh and executor boot `[io]`; the per-shard context.

pub mod boot;
pub mod context;
pub mod control;
pub mod local_sync;
pub mod mesh;
pub mod placement;

pub use context::{ShardContext, ShardRequest, ShardResponse};
pub use placement::{coordinator_partition, shard_of};
pub mod datapath;
pub mod partitions;
