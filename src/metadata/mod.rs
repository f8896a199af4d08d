//! `[pure]` Cluster metadata as each shard sees it (§2): an immutable
//! [`snapshot::Snapshot`] replaced wholesale by the control shard, and the
//! ApiVersions / Metadata answers built from it.

pub mod answers;
pub mod snapshot;

pub use snapshot::{BrokerEndpoint, PartitionState, Snapshot, TopicState};
